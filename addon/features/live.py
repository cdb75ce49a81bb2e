"""Live Painting: the landscape runs on the worker thread while the Uplift, Rain or
Erodibility mask is painted with Blender's own Weight Paint or Vertex Paint tools;
the terrain, its rivers and lakes answer in the viewport. Leaving the paint mode (or
Enter) keeps the result as one undo step and one history entry; Esc puts the terrain
back. Without a window, the operator takes the mask states from a .npz file
(``states``) and runs the same session to the end. The session itself is
addon/data/live.py."""

from __future__ import annotations

import bpy
import numpy as np

from ..data import grid as gridio
from ..data import live, warmup
from ..data.job import JobEnded
from ..simcore.algorithms.masks import MaskError
from ..simcore.formats import live_states
from ..ui.boundary import reports_user_errors
from ..ui.widgets import ErosionSubPanel, wrap_label
from .operators import run_keys, tick

MASK_ITEMS = [("UPLIFT", "Uplift", "Paint where the land rises (weight 1: the full "
               "uplift rate, 0: none)"),
              ("RAIN", "Rain", "Paint where rain falls, so where rivers gather"),
              ("ERODIBILITY", "Erodibility", "Paint soft (1) and hard (0) rock")]
#: seconds between the modal's ticks (each reads the mask and writes a slice)
TICK_INTERVAL = 0.03
#: the shortest time between two states shown (seconds): a state after every round,
#: once Blender has drawn the last one (LiveJob.redraw_factor)
UPDATE_INTERVAL = 0.05


def _runtime(context):
    return context.window_manager.terrain_erosion


class TERRAIN_OT_live_paint(bpy.types.Operator):
    """Paint a mask while the landscape evolves: the terrain, rivers and lakes answer
    as you paint. Leave the paint mode (or Enter) to keep the result, Esc to put the
    terrain back"""

    bl_idname = "terrain.live_paint"
    bl_label = "Live Painting"
    bl_options = {'UNDO'}

    mask: bpy.props.EnumProperty(name="Mask", items=MASK_ITEMS, default="UPLIFT",
                                 description="The mask to paint")
    states: bpy.props.StringProperty(
        name="Mask States", subtype='FILE_PATH', options={'SKIP_SAVE'},
        description="Scripts: a .npz of mask states ('rounds' and one (states, "
                    "vertices) array per mask) to run without painting")
    rounds: bpy.props.IntProperty(
        name="Rounds", default=0, min=0, options={'SKIP_SAVE'},
        description="Scripts: rounds of the session; 0: one past the last state")

    @classmethod
    def poll(cls, context):
        if not gridio.poll_grid(cls, context):
            return False
        if _runtime(context).running:
            cls.poll_message_set("An erosion run is going on: stop or cancel it first")
            return False
        return warmup.poll_ready(cls, context.active_object)

    @reports_user_errors
    def execute(self, context):
        obj = context.active_object
        if not self.states and not self.rounds:
            raise MaskError("without a window, live painting needs the mask states: give "
                            "'states' (a .npz file) and/or 'rounds'")
        states, rounds = (live_states.load_states(bpy.path.abspath(self.states), self.rounds)
                          if self.states else ([], self.rounds))
        job = live.run_states(obj, states, rounds)
        self.report({'INFO'}, f"Live painting of '{job.obj_name}': {rounds} rounds, "
                              f"{len(job.sim.states)} mask states kept")
        return {'FINISHED'}

    @reports_user_errors
    def invoke(self, context, event):
        if bpy.app.background or self.states:
            return self.execute(context)
        obj = context.active_object
        name = self.mask.lower()
        self._job = None
        live.live_processes(obj.terrain_erosion.enabled_params(), len(obj.data.vertices))
        self._reader = live.MaskReader(obj, name)  # may add the mask's vertex group
        try:
            self._job = live.LiveJob(obj)
            self._job.live_update = min(self._job.live_update, UPDATE_INTERVAL)
            active = obj.data.color_attributes.active_color_name
            self._job.prepare_live()  # our color layers must not take the user's brush
            if active:
                obj.data.color_attributes.active_color_name = active
            if obj.mode != self._reader.mode:
                bpy.ops.object.mode_set(mode=self._reader.mode)
        except BaseException:
            if self._job is not None:
                if obj.mode != 'OBJECT':
                    bpy.ops.object.mode_set(mode='OBJECT')
                self._job.cancel()
            self._reader.close(obj)
            raise
        self._last = None
        # strokes push no undo steps of their own: the session is one step
        edit = context.preferences.edit
        _GLOBAL_UNDO.append(edit.use_global_undo)
        edit.use_global_undo = False
        rt = _runtime(context)
        rt.running, rt.progress, rt.stop_requested = True, 0.0, False
        rt.status = f"Live painting: paint the {self.mask.title()} mask"
        wm = context.window_manager
        self._timer = wm.event_timer_add(TICK_INTERVAL, window=context.window)
        wm.modal_handler_add(self)
        return {'RUNNING_MODAL'}

    def modal(self, context, event):
        ended = run_keys(self, context, event)
        if ended is not None:
            return ended
        if event.type != 'TIMER' or event.timer is not self._timer:
            return {'PASS_THROUGH'}  # the brushes paint
        obj = self._job.find_object()
        if obj is None or obj.mode != self._reader.mode:  # left the paint mode: keep
            return self._end(context, keep=obj is not None)
        rt = _runtime(context)
        problem = None
        try:
            values = self._reader.read(obj, context)
            if self._last is None or not np.array_equal(values, self._last):
                self._job.paint({self._reader.name: values}, "the painted mask")
                self._last = values
        except MaskError as exc:  # e.g. no rain anywhere: wait for more paint
            problem = str(exc)
        state = tick(self._job, rt, on_worker=True)
        if state in ("ended", "stop"):
            return self._end(context, keep=state == "stop", failed=state == "ended")
        sim = self._job.sim
        years = (sim.rounds_done - sim.start_rounds) * sim.processes["landscape"].batch \
            * sim.processes["landscape"].time_step
        rt.status = problem or (f"Live: {years:,.0f} years, {self._job.frames_written} "
                                f"updates, {len(sim.states)} mask states")
        if context.workspace is not None:
            context.workspace.status_text_set(
                f"{rt.status}   leave {self._reader.mode.replace('_', ' ').title()} or "
                "Enter: keep, Esc: put back")
        for area in context.screen.areas if context.screen else ():
            if area.type in {'VIEW_3D', 'PROPERTIES'}:
                area.tag_redraw()
        return {'RUNNING_MODAL'}

    def _end(self, context, keep: bool, failed: bool = False):
        context.window_manager.event_timer_remove(self._timer)
        _restore_undo()
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        rt = _runtime(context)
        rt.running, rt.stop_requested, rt.progress = False, False, 0.0
        obj = self._job.find_object()
        self._reader.close(obj)
        if failed:
            self.report({'WARNING'}, rt.status)
            return {'CANCELLED'}
        if not keep:
            if obj is not None and obj.mode != 'OBJECT':  # the mesh is put back there
                bpy.ops.object.mode_set(mode='OBJECT')
            problem = self._job.cancel()
            rt.status = problem or "Live painting cancelled: the terrain is as it was"
            self.report({'WARNING' if problem else 'INFO'}, rt.status)
            return {'CANCELLED'}
        mode = obj.mode if obj is not None else 'OBJECT'
        if mode not in live.LiveJob.MODES:  # e.g. Tab to Edit Mode: write in Object Mode
            bpy.ops.object.mode_set(mode='OBJECT')
        try:
            self._job.finish()
        except (JobEnded, MaskError) as exc:
            rt.status = str(exc)
            self.report({'WARNING'}, rt.status)
            return {'CANCELLED'}
        finally:
            if mode not in live.LiveJob.MODES:
                bpy.ops.object.mode_set(mode=mode)
        rt.status = f"Live painting kept: {len(self._job.sim.states)} mask states"
        return {'FINISHED'}


class TERRAIN_PT_live(ErosionSubPanel, bpy.types.Panel):
    """Paint a mask while the landscape evolves"""

    bl_idname = "TERRAIN_PT_live"
    bl_label = "Live Painting"

    def draw(self, context):
        layout = self.layout
        wrap_label(layout, "Paint a mask with Blender's brushes while Landscape "
                   "evolution runs; leave the paint mode to keep it", icon='INFO')
        row = layout.row(align=True)
        for key, label, _ in MASK_ITEMS:
            row.operator(TERRAIN_OT_live_paint.bl_idname, text=label,
                         icon='BRUSH_DATA').mask = key


#: the Global Undo preference as it was before the session that runs (one at a time)
_GLOBAL_UNDO: list[bool] = []


def _restore_undo() -> None:
    """Put the Global Undo preference back as the session found it."""
    if _GLOBAL_UNDO:
        bpy.context.preferences.edit.use_global_undo = _GLOBAL_UNDO[0]
        _GLOBAL_UNDO.clear()


@bpy.app.handlers.persistent
def _restore_undo_on_load(*_args) -> None:
    """Loading a file ends a session (Blender drops its modal handler)."""
    _restore_undo()


classes = (TERRAIN_OT_live_paint, TERRAIN_PT_live)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    bpy.app.handlers.load_pre.append(_restore_undo_on_load)


def unregister() -> None:
    _restore_undo()
    while _restore_undo_on_load in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.remove(_restore_undo_on_load)
    _unregister_classes()
