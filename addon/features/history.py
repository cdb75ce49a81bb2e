"""The erosion history in the Erosion tab: the list of what ran on the object (select,
switch on and off, remove, move up and down) and Rebuild, which replays the switched-on
entries from the original heights as one undo step. The records themselves are
addon/data/history.py; Erode, Step and Generate Ridges add them."""

from __future__ import annotations

import json

import bpy
import numpy as np

from ..data import grid as gridio
from ..data import history, live, warmup
from ..data.job import ErosionJob, forget_exact, layers_changed, reset_to_original
from ..data.objects import remove_object
from ..data.scale import RealScale
from ..simcore.engine.simulation import particles_per_round, planned_rounds
from ..simcore.formats import history as entries
from ..simcore.formats.presets import Preset
from ..simcore.params import ParameterError
from ..ui.boundary import reports_user_errors
from ..ui.widgets import ErosionSubPanel, wrap_label
from . import ridges


def _history_poll(cls, context, need_grid: bool) -> bool:
    """An active mesh in Object Mode (a grid for Rebuild) and no run going on."""
    obj = getattr(context, "active_object", None)
    if need_grid:
        ok, text = gridio.grid_status(obj)
        if not ok:
            cls.poll_message_set(text)
            return False
    elif obj is None or obj.type != 'MESH':
        cls.poll_message_set("Select the grid mesh whose history to change")
        return False
    if obj.mode != 'OBJECT':
        cls.poll_message_set(f"'{obj.name}' is in {obj.mode.title()} mode: press Tab to "
                             "go back to Object Mode")
        return False
    if context.window_manager.terrain_erosion.running:
        cls.poll_message_set("An erosion run is going on: stop or cancel it first")
        return False
    return True


class TERRAIN_UL_history(bpy.types.UIList):
    """The object's erosion history, oldest first"""

    bl_idname = "TERRAIN_UL_history"

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname,
                  index=0, flt_flag=0):
        row = layout.row(align=True)
        row.prop(item, "enabled", text="")
        sub = row.row()
        sub.active = item.enabled
        sub.label(text=f"{index + 1}. {item.label}")


class _EntryOperator:
    """An entry of the active object's history: ``index`` (-1: the selected one)."""

    index: bpy.props.IntProperty(name="Entry", default=-1, min=-1,
                                 description="Entry number from 0; -1: the selected entry",
                                 options={'SKIP_SAVE'})

    @classmethod
    def poll(cls, context):
        if not _history_poll(cls, context, need_grid=False):
            return False
        if not context.active_object.terrain_erosion.history:
            cls.poll_message_set("The history is empty: Erode, Step or Generate Ridges "
                                 "add to it")
            return False
        return True

    def entry(self, context) -> int | None:
        s = context.active_object.terrain_erosion
        i = s.history_index if self.index < 0 else self.index
        if not 0 <= i < len(s.history):
            self.report({'ERROR'}, f"There is no history entry {i} (the history has "
                                   f"{len(s.history)}); pick one in the list")
            return None
        return i


class TERRAIN_OT_history_remove(_EntryOperator, bpy.types.Operator):
    """Remove the selected entry from the erosion history (the mesh is not changed
    until Rebuild)"""

    bl_idname = "terrain.history_remove"
    bl_label = "Remove History Entry"
    bl_options = {'REGISTER', 'UNDO'}

    def execute(self, context):
        i = self.entry(context)
        if i is None:
            return {'CANCELLED'}
        s = context.active_object.terrain_erosion
        s.history.remove(i)
        s.history_index = min(s.history_index, max(len(s.history) - 1, 0))
        return {'FINISHED'}


class TERRAIN_OT_history_move(_EntryOperator, bpy.types.Operator):
    """Move the selected entry up or down in the erosion history (Rebuild replays the
    entries from the top)"""

    bl_idname = "terrain.history_move"
    bl_label = "Move History Entry"
    bl_options = {'REGISTER', 'UNDO'}

    direction: bpy.props.EnumProperty(
        name="Direction", items=[('UP', "Up", "Earlier"), ('DOWN', "Down", "Later")],
        default='UP')

    def execute(self, context):
        i = self.entry(context)
        if i is None:
            return {'CANCELLED'}
        s = context.active_object.terrain_erosion
        j = i - 1 if self.direction == 'UP' else i + 1
        if not 0 <= j < len(s.history):
            return {'CANCELLED'}  # already at the top (bottom): nothing to do
        s.history.move(i, j)
        s.history_index = j
        return {'FINISHED'}


class TERRAIN_OT_history_load(_EntryOperator, bpy.types.Operator):
    """Put the selected Erode or Step entry's settings (processes and parameters, seed,
    amount of work, rock layers, real size) into the object's erosion settings, to
    change them there and write them back with Store in Entry"""

    bl_idname = "terrain.history_load"
    bl_label = "Load Entry Settings"
    bl_options = {'REGISTER', 'UNDO'}

    @reports_user_errors
    def execute(self, context):
        i = self.entry(context)
        if i is None:
            return {'CANCELLED'}
        s = context.active_object.terrain_erosion
        recipe = _run_recipe(self, s, i)
        if recipe is None:
            return {'CANCELLED'}
        s.apply_preset(Preset(  # the amount of work as Particles: rain per area off
            name=recipe.preset, seed=recipe.seed,
            particles=recipe.rounds * particles_per_round(recipe.params),
            params=recipe.params, enabled=dict.fromkeys(recipe.params, True),
            real_size=recipe.real_size, rock=recipe.rock))
        s.vertical_exaggeration = recipe.exaggeration
        if recipe.rock is None:
            s.rock.enabled = False
        s.write_colors, s.water_surface = recipe.write_colors, recipe.water_surface
        self.report({'INFO'}, f"The settings of {history.entry_name(s, i)} are the "
                              "object's now: change them, then Store in Entry and Rebuild")
        return {'FINISHED'}


class TERRAIN_OT_history_store(_EntryOperator, bpy.types.Operator):
    """Write the object's erosion settings (processes and parameters, seed, amount of
    work, rock layers, real size) into the selected Erode or Step entry; its masks and
    where it starts stay as recorded. Rebuild then replays it with them"""

    bl_idname = "terrain.history_store"
    bl_label = "Store in Entry"
    bl_options = {'REGISTER', 'UNDO'}

    @reports_user_errors
    def execute(self, context):
        i = self.entry(context)
        if i is None:
            return {'CANCELLED'}
        obj = context.active_object
        s = obj.terrain_erosion
        old = _run_recipe(self, s, i)
        if old is None:
            return {'CANCELLED'}
        params = s.enabled_params()
        rounds = old.rounds  # a Step is one round of whatever runs
        if old.kind == "erode":  # the rounds an Erode with these settings runs
            g = gridio.detect_grid(obj.data)
            rounds = planned_rounds(params, s.work(g.rows, g.cols, g.cell_size),
                                    g.rows * g.cols, old.start_round) - old.start_round
        entry = entries.run_entry(old.kind, s.preset, params, s.full_seed(),
                                  old.start_round, rounds, *s.size_settings(),
                                  s.rock.to_column(), s.write_colors, s.water_surface,
                                  old.exact_resume, {})
        entry["masks"] = json.loads(s.history[i].data)["masks"]  # as recorded
        item = s.history[i]
        item.data, item.label = entries.dumps(entry), entries.label(entry)
        self.report({'INFO'}, f"Stored the settings in {history.entry_name(s, i)}: "
                              "Rebuild to replay the history with them")
        return {'FINISHED'}


def _run_recipe(op, settings, i: int) -> entries.Recipe | None:
    """Entry ``i``'s recipe when it is a run (Erode, Step); else None, reported."""
    recipe = entries.parse(settings.history[i].data, history.entry_name(settings, i))
    if recipe.kind not in entries.RUN_KINDS:
        op.report({'ERROR'}, f"{history.entry_name(settings, i)} is no Erode or Step: "
                             "only runs have erosion settings to load and store")
        return None
    return recipe


class TERRAIN_OT_rebuild(bpy.types.Operator):
    """Replay the switched-on history entries in order from the original heights (the
    stored original, or the mesh as it is after Reset). One undo step"""

    bl_idname = "terrain.rebuild"
    bl_label = "Rebuild"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        if not _history_poll(cls, context, need_grid=True):
            return False
        if not context.active_object.terrain_erosion.history:
            cls.poll_message_set("The history is empty: Erode, Step or Generate Ridges "
                                 "add to it")
            return False
        return warmup.poll_ready(cls, context.active_object)

    @reports_user_errors
    def execute(self, context):
        obj = context.active_object
        replayed, notes = rebuild(obj)
        for note in notes:
            self.report({'WARNING'}, note)
        self.report({'INFO'}, f"Rebuilt '{obj.name}' from its original heights: "
                              f"{replayed} entries replayed")
        return {'FINISHED'}


def rebuild(obj: bpy.types.Object) -> tuple[int, list[str]]:
    """Replay ``obj``'s switched-on entries from its original heights; returns how many
    ran and notes on entries that did not start as recorded. Every entry is read first:
    one this version cannot replay is a HistoryError naming it, before anything
    changes."""
    s = obj.terrain_erosion
    if not s.history_from_original:
        raise entries.HistoryError(
            f"the history of '{obj.name}' does not hold all of its erosion (runs from "
            "before the add-on kept a history, an Animation Bake or a Refine x2 are not "
            "in it): Apply to start a history from the current heights, or Reset to "
            "Original")
    recipes = history.enabled_recipes(s)
    names = [history.entry_name(s, i) for i, e in enumerate(s.history) if e.enabled]
    me = obj.data
    _check_fits(obj, gridio.detect_grid(me), names, recipes)
    # what a replay that fails part-way puts back: the mesh's heights and layers, the
    # run bookkeeping, the trees and water objects (set aside, not removed, meanwhile)
    snapshot = gridio.MeshSnapshot.take(me)
    bookkeeping = (s.rounds_done, s.stored_state_seed())
    extras = {key: getattr(s, key) for key in _EXTRAS}
    for key in _EXTRAS:
        setattr(s, key, None)
    try:
        notes = _replay(obj, names, recipes)
    except BaseException:
        for key, old in extras.items():
            new = getattr(s, key)
            setattr(s, key, old)
            if new is not None and new != old:
                remove_object(new)
        snapshot.restore(me)
        s.rounds_done = bookkeeping[0]
        s.set_state_seed(bookkeeping[1])
        forget_exact()
        layers_changed(obj)
        raise
    for key, old in extras.items():  # the replay's own take their names
        if old is None:
            continue
        name, new = old.name, getattr(s, key)
        remove_object(old)
        if new is not None:
            new.name = new.data.name = name
    return len(recipes), notes


#: the helper objects a run makes: the trees' points, the water surface
_EXTRAS = ("trees_object", "water_object")


def _replay(obj: bpy.types.Object, names: list[str],
            recipes: list[entries.Recipe]) -> list[str]:
    """Original heights, then every recipe in order; notes on entries that did not
    start as recorded."""
    me = obj.data
    if me.attributes.get(gridio.ORIGINAL_Z) is None:  # after Reset: the mesh is the base
        z = gridio.read_positions(me)[:, 2]
        if not np.isfinite(z).all():
            raise gridio.GridError(f"'{obj.name}' has NaN/inf vertex heights: fix the mesh "
                                   "before a Rebuild")
        gridio.ensure_attribute(me, gridio.ORIGINAL_Z, 'FLOAT').data.foreach_set(
            "value", np.ascontiguousarray(z))
    reset_to_original(obj)
    forget_exact()
    notes = []
    for name, recipe in zip(names, recipes, strict=True):
        if not recipe.replays:  # a note
            continue
        if recipe.kind == "ridges":
            assert recipe.ridges is not None
            ridges.raise_ridges(obj, recipe.ridges, recipe.mode, recipe.start,
                                (recipe.real_size, recipe.exaggeration))
            continue
        if recipe.kind == "live":
            live.replay_entry(obj, recipe)
            continue
        if not recipe.exact_resume:  # it continued from the mesh's layers
            forget_exact()
        job = ErosionJob(obj, recipe=recipe)
        if job.start_rounds != recipe.start_round or job.exact_resume != recipe.exact_resume:
            notes.append(f"{name} started from another state than when it was recorded "
                         "(the mesh was edited between runs): its result may differ")
        job.run()
    return notes


def _check_fits(obj: bpy.types.Object, grid: gridio.Grid, names: list[str],
                recipes: list[entries.Recipe]) -> None:
    """Refuse, before anything changes, an entry that cannot run on this grid: masks of
    another size (the mesh was re-made at another resolution), a real size or a ridge
    spacing the grid cannot take."""
    shape = (grid.rows, grid.cols)
    for name, recipe in zip(names, recipes, strict=True):
        if not recipe.replays:
            continue
        arrays = dict(recipe.maps)
        if recipe.start is not None:
            arrays["ridge start"] = recipe.start
        for i, (_, maps) in enumerate(recipe.states):
            arrays.update({f"live state {i + 1} '{m}'": v for m, v in maps.items()})
        for what, values in arrays.items():
            if values.shape != shape:
                raise entries.HistoryError(
                    f"{name} has a {what} mask of {values.shape[0]}x{values.shape[1]} "
                    f"cells, but '{obj.name}' is a {shape[0]}x{shape[1]} grid: switch the "
                    "entry off or remove it to rebuild the rest")
        try:
            scale = RealScale.of(grid.rows, grid.cols, grid.cell_size, recipe.real_size,
                                 recipe.exaggeration)
            if recipe.ridges is not None:
                ridges.check_spacing(recipe.ridges, scale.real_size)
        except ParameterError as exc:
            raise entries.HistoryError(f"{name}: {exc}") from None


class TERRAIN_PT_history(ErosionSubPanel, bpy.types.Panel):
    """What ran on this object, in order; Rebuild replays the ticked entries"""

    bl_idname = "TERRAIN_PT_history"
    bl_label = "History"

    def draw(self, context):
        s = context.active_object.terrain_erosion
        layout = self.layout
        row = layout.row()
        row.template_list(TERRAIN_UL_history.bl_idname, "", s, "history", s,
                          "history_index", rows=4)
        col = row.column(align=True)
        col.operator(TERRAIN_OT_history_remove.bl_idname, text="", icon='REMOVE')
        col.separator()
        col.operator(TERRAIN_OT_history_move.bl_idname, text="", icon='TRIA_UP') \
            .direction = 'UP'
        col.operator(TERRAIN_OT_history_move.bl_idname, text="", icon='TRIA_DOWN') \
            .direction = 'DOWN'
        row = layout.row(align=True)
        row.operator(TERRAIN_OT_history_load.bl_idname, text="Load Settings",
                     icon='IMPORT')
        row.operator(TERRAIN_OT_history_store.bl_idname, text="Store in Entry",
                     icon='EXPORT')
        layout.operator(TERRAIN_OT_rebuild.bl_idname, icon='FILE_REFRESH')
        if s.history and not s.history_from_original:
            wrap_label(layout, "Erosion outside this history (earlier runs, a bake, a "
                       "refine): Apply to start one from the current heights", icon='INFO')


classes = (TERRAIN_UL_history, TERRAIN_OT_history_remove, TERRAIN_OT_history_move,
           TERRAIN_OT_history_load, TERRAIN_OT_history_store, TERRAIN_OT_rebuild,
           TERRAIN_PT_history)
register, unregister = bpy.utils.register_classes_factory(classes)
