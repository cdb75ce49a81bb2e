"""Operators: Erode (modal in the UI, synchronous in scripts and background), Step,
Stop, Reset to original, Apply, and preset apply / save / delete."""

from __future__ import annotations

import time
from pathlib import Path

import bpy

from ..data import grid as gridio
from ..data.job import (  # noqa: F401 (JobEnded: API)
    ErosionJob,
    JobEnded,
    end_runs_on_undo,
    forget_exact,
    halt_all_runs,
    layers_changed,
    reset_to_original,
)
from ..simcore.formats.presets import delete_preset, load_preset, save_preset
from ..ui import presets_ui
from ..ui.boundary import USER_ERRORS, reports_user_errors  # the operators' error boundary

TICK_BUDGET = 0.04  # seconds of simulation per timer tick: keeps the viewport responsive


def _active_problem(context) -> str | None:
    ok, text = gridio.grid_status(getattr(context, "active_object", None))
    return None if ok else text


def _runtime(context):
    return context.window_manager.terrain_erosion


class _TerrainOperator:
    """poll(): an active grid-able mesh in Object Mode and no run going on."""

    @classmethod
    def poll(cls, context):
        problem = _active_problem(context)
        if problem:
            cls.poll_message_set(problem)
            return False
        if _runtime(context).running:
            cls.poll_message_set("An erosion run is going on: press Esc to cancel it or "
                                 "Stop to keep its result")
            return False
        from ..data import warmup  # the core is compiled on another thread: wait for it
        return warmup.poll_ready(cls, context.active_object)


class TERRAIN_OT_erode(_TerrainOperator, bpy.types.Operator):
    """Erode the active grid mesh with the settings in the Erosion panel.
    Esc cancels and restores the mesh, Enter or Stop keeps the result so far"""

    bl_idname = "terrain.erode"
    bl_label = "Erode"
    bl_options = {'UNDO'}

    particles: bpy.props.IntProperty(
        name="Particles", default=0, min=0,
        description="Amount of work for this run; 0 uses the object's setting",
        options={'SKIP_SAVE'})

    def _make_job(self, context) -> ErosionJob:
        job = ErosionJob(context.active_object, self.particles or None, record="erode")
        for text in job.advice:  # the run goes ahead; the user learns why it may look off
            self.report({'WARNING'}, text[:1].upper() + text[1:])
        if job.estimate:  # a long run: the user learns how long before it starts
            self.report({'INFO'}, f"Erosion of {job.obj_name}: {job.estimate}")
            if bpy.app.background:
                print(f"terrain_erosion: {job.estimate}", flush=True)
        return job

    @reports_user_errors
    def execute(self, context):
        job = self._make_job(context)
        background = bpy.app.background

        def report(p):
            if background:
                print(f"terrain_erosion: {100 * p.fraction:5.1f}%  {p.particles} particles  "
                      f"{p.seconds:6.1f}s", flush=True)

        try:
            progress = job.run(report, every=1.0)
        except USER_ERRORS:
            job.cancel()  # the mesh as it was; the boundary reports why
            raise
        self.report({'INFO'}, f"Eroded {job.obj_name}: {progress.particles} particles in "
                              f"{progress.seconds:.1f} s")
        return {'FINISHED'}

    @reports_user_errors
    def invoke(self, context, event):
        if bpy.app.background:
            return self.execute(context)
        self._job = self._make_job(context)
        self._job.prepare_live()
        rt = _runtime(context)
        rt.running, rt.progress, rt.stop_requested = True, 0.0, False
        rt.status = f"Starting ({self._job.estimate})" if self._job.estimate else "Starting"
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.02, window=context.window)
        wm.modal_handler_add(self)
        return {'RUNNING_MODAL'}

    def modal(self, context, event):
        ended = run_keys(self, context, event)
        if ended is not None:
            return ended
        if event.type != 'TIMER' or event.timer is not self._timer:
            return {'PASS_THROUGH'}
        return self._end_or_continue(context, tick(self._job, _runtime(context),
                                                   on_worker=True))

    def _end_or_continue(self, context, state: str):
        if state == "running":
            for area in context.screen.areas if context.screen else ():
                if area.type in {'VIEW_3D', 'PROPERTIES'}:
                    area.tag_redraw()
            text = _runtime(context).status
            if context.workspace is not None:
                context.workspace.status_text_set(f"Erosion: {text}   Esc cancel, Enter keep")
            return {'RUNNING_MODAL'}
        return self._end(context, keep=(state in ("done", "stop")),
                         failed=(state == "ended"))

    def _end(self, context, keep: bool, failed: bool = False):
        context.window_manager.event_timer_remove(self._timer)
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        for area in context.screen.areas if context.screen else ():
            area.tag_redraw()
        rt = _runtime(context)
        message = rt.status
        rt.running, rt.stop_requested, rt.progress = False, False, 0.0
        if failed:
            self.report({'WARNING'}, message)
            return {'CANCELLED'}
        if not keep:
            problem = self._job.cancel()
            if problem:
                rt.status = problem
                self.report({'WARNING'}, problem)
                return {'CANCELLED'}
            rt.status = "Cancelled: mesh restored"
            self.report({'INFO'}, "Erosion cancelled; the mesh is as it was")
            return {'CANCELLED'}
        return _keep(self, context)


@reports_user_errors(level='WARNING')  # the run is over: a warning says what went wrong
def _keep(op: TERRAIN_OT_erode, context):
    """Stop / Enter keep what the viewport shows, without waiting for a round."""
    kept = op._job.finish(wait=False)
    _runtime(context).status = f"Done: {kept} particles"
    return {'FINISHED'}


def run_keys(op, context, event) -> set[str] | None:
    """The keys of a modal run (``op`` has ``_end(context, keep=...)``): Esc ends it and
    puts the terrain back, Enter ends it and keeps it, Ctrl+Z is ignored until it ends
    (no undo in the middle of a run). None for any other event."""
    if event.type == 'ESC' and event.value == 'PRESS':
        return op._end(context, keep=False)
    if event.type in {'RET', 'NUMPAD_ENTER'} and event.value == 'PRESS':
        return op._end(context, keep=True)
    if event.type == 'Z' and (event.ctrl or event.oskey):
        return {'RUNNING_MODAL'}
    return None


def tick(job: ErosionJob, rt, budget: float = TICK_BUDGET, on_worker: bool = False) -> str:
    """One timer tick: 'running', 'done', 'stop' (Stop pressed) or 'ended' (the object
    went away; rt.status says why). Plain code so tests can drive it. ``on_worker``:
    the rounds run on a worker thread (the modal Erode), the tick returns at once."""
    if rt.stop_requested:
        return "stop"
    try:
        progress = job.tick(budget, on_worker)
    except JobEnded as exc:
        rt.status = str(exc)
        return "ended"
    rt.progress = progress.fraction
    rt.status = (f"{100 * progress.fraction:.0f}%  {progress.particles:,} / "
                 f"{progress.target_particles:,} particles  "
                 f"{time.perf_counter() - job.started:.1f} s"
                 + (f"  ({job.estimate})" if job.estimate else ""))
    # a live run is done once the mesh shows its last round (written a slice a tick)
    return "done" if progress.done and job.up_to_date else "running"


class TERRAIN_OT_stop(bpy.types.Operator):
    """Stop the running erosion and keep the result so far"""

    bl_idname = "terrain.stop"
    bl_label = "Stop"
    bl_options = {'INTERNAL'}

    @classmethod
    def poll(cls, context):
        if not _runtime(context).running:
            cls.poll_message_set("No erosion run is going on")
            return False
        return True

    def execute(self, context):
        _runtime(context).stop_requested = True
        return {'FINISHED'}


class TERRAIN_OT_step(_TerrainOperator, bpy.types.Operator):
    """Run one batch of every enabled process and keep it (one undo step)"""

    bl_idname = "terrain.step"
    bl_label = "Step"
    bl_options = {'REGISTER', 'UNDO'}

    @reports_user_errors
    def execute(self, context):
        job = ErosionJob(context.active_object, particles=1, record="step")
        job.sim.run_round()
        job.finish()
        return {'FINISHED'}


class TERRAIN_OT_reset(_TerrainOperator, bpy.types.Operator):
    """Put back the heights from before the first erosion run and remove the erosion
    layers"""

    bl_idname = "terrain.reset"
    bl_label = "Reset to Original"
    bl_options = {'REGISTER', 'UNDO'}

    @reports_user_errors
    def execute(self, context):
        obj = context.active_object
        if not reset_to_original(obj):
            self.report({'WARNING'}, f"'{obj.name}' has no stored original heights")
            return {'CANCELLED'}
        # the history stays, switched off: ticking entries and Rebuild brings them back
        s = obj.terrain_erosion
        for entry in s.history:
            entry.enabled = False
        s.history_from_original = True
        return {'FINISHED'}


class TERRAIN_OT_apply(_TerrainOperator, bpy.types.Operator):
    """Keep the eroded heights as the new original: forget the stored pre-erosion
    heights, the erosion state layers and the erosion history (Reset and Rebuild will
    no longer go back past this point; the next run starts from the heights alone)"""

    bl_idname = "terrain.apply"
    bl_label = "Apply"
    bl_options = {'REGISTER', 'UNDO'}

    def execute(self, context):
        obj = context.active_object
        gridio.forget_original(obj.data)
        # the entries ran on the old original: a history starts from these heights, and
        # the next run too (round 0, no state carried over), so Rebuild replays it
        s = obj.terrain_erosion
        s.history.clear()
        s.history_index = 0
        s.history_from_original = True
        s.rounds_done = 0
        s.set_state_seed(-1)
        forget_exact()
        layers_changed(obj)
        return {'FINISHED'}


class _MeshSettingsOperator:
    """poll(): an active mesh object (its settings are read or written), else
    ``poll_hint``."""

    poll_hint = "Select a mesh object"

    @classmethod
    def poll(cls, context):
        obj = getattr(context, "active_object", None)
        if obj is None or obj.type != 'MESH':
            cls.poll_message_set(cls.poll_hint)
            return False
        return True


class TERRAIN_OT_preset_apply(_MeshSettingsOperator, bpy.types.Operator):
    """Load erosion settings from a preset"""

    bl_idname = "terrain.preset_apply"
    bl_label = "Apply Erosion Preset"
    bl_options = {'REGISTER', 'UNDO', 'INTERNAL'}

    filepath: bpy.props.StringProperty(subtype='FILE_PATH', options={'SKIP_SAVE'})
    menu_idname: bpy.props.StringProperty(options={'SKIP_SAVE', 'HIDDEN'})

    poll_hint = "Select a grid mesh object to apply a preset to"

    @reports_user_errors
    def execute(self, context):
        preset = load_preset(self.filepath)
        context.active_object.terrain_erosion.apply_preset(preset)
        return {'FINISHED'}


class TERRAIN_OT_preset_save(_MeshSettingsOperator, bpy.types.Operator):
    """Save the current erosion settings as a user preset"""

    bl_idname = "terrain.preset_save"
    bl_label = "Save Erosion Preset"
    bl_options = {'REGISTER', 'INTERNAL'}

    name: bpy.props.StringProperty(name="Name", default="My Preset",
                                   description="Name of the new preset")

    poll_hint = "Select the object whose settings to save"

    def invoke(self, context, event):
        return context.window_manager.invoke_props_dialog(self)

    @reports_user_errors
    def execute(self, context):
        stem = presets_ui.file_stem(self.name)
        if not stem:
            self.report({'ERROR'}, "Give the preset a name with letters or digits")
            return {'CANCELLED'}
        preset = context.active_object.terrain_erosion.to_preset(self.name.strip())
        path = save_preset(preset, presets_ui.user_dir() / f"{stem}.toml")
        self.report({'INFO'}, f"Saved preset to {path}")
        return {'FINISHED'}


class TERRAIN_OT_preset_delete(bpy.types.Operator):
    """Delete a user preset (shipped presets cannot be deleted)"""

    bl_idname = "terrain.preset_delete"
    bl_label = "Delete Erosion Preset"
    bl_options = {'REGISTER', 'INTERNAL'}

    filepath: bpy.props.StringProperty(subtype='FILE_PATH', options={'SKIP_SAVE'})

    @reports_user_errors
    def execute(self, context):
        path = Path(self.filepath)
        if (path.parent.resolve() != presets_ui.user_dir().resolve()
                or path.suffix != ".toml"):
            self.report({'ERROR'}, "Only user presets can be deleted")
            return {'CANCELLED'}
        delete_preset(path)
        return {'FINISHED'}


classes = (TERRAIN_OT_erode, TERRAIN_OT_stop, TERRAIN_OT_step, TERRAIN_OT_reset,
           TERRAIN_OT_apply, TERRAIN_OT_preset_apply, TERRAIN_OT_preset_save,
           TERRAIN_OT_preset_delete)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


@bpy.app.handlers.persistent
def _forget_run_on_load(*_args) -> None:
    """Loading a file ends a live run (Blender drops its modal handler and timer): make
    sure the UI does not stay in the 'running' state and no worker runs on; the
    remembered full-precision state of the last run goes too."""
    halt_all_runs()
    forget_exact()
    wm = bpy.context.window_manager
    rt = getattr(wm, "terrain_erosion", None) if wm is not None else None
    if rt is not None and rt.running:
        rt.running, rt.stop_requested, rt.progress = False, False, 0.0
        rt.status = "The run ended because another file was loaded"


@bpy.app.handlers.persistent
def _end_run_on_undo(*_args) -> None:
    """Undo or Redo from anywhere (Edit menu, a script; the modal Erode swallows
    Ctrl+Z only) ends a live run at its next tick, keeping nothing: the restored undo
    step holds the mesh and its round count together."""
    end_runs_on_undo()


_HANDLERS = (("load_pre", _forget_run_on_load), ("load_post", _forget_run_on_load),
             ("undo_pre", _end_run_on_undo), ("redo_pre", _end_run_on_undo))


def register() -> None:
    _register_classes()
    for kind, fn in _HANDLERS:
        getattr(bpy.app.handlers, kind).append(fn)


def unregister() -> None:
    halt_all_runs()
    forget_exact()
    for kind, fn in _HANDLERS:
        handlers = getattr(bpy.app.handlers, kind)
        while fn in handlers:
            handlers.remove(fn)
    _unregister_classes()
