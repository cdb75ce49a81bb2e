"""The Erosion tab in the 3D View sidebar (N-panel)."""

from __future__ import annotations

import dataclasses

import bpy

from ..data import warmup
from ..data.grid import CHANGE_PREFIX, COLOR_LAYERS, FLOAT_LAYERS, grid_extent, grid_status
from ..simcore.engine.simulation import PROCESSES
from ..simcore.errors import UserError
from ..simcore.params import hidden, is_legacy
from ..ui.process_ui import draw_extras
from ..ui.widgets import ErosionSubPanel, ErosionTab, wrap_label


class TERRAIN_PT_main(ErosionTab, bpy.types.Panel):
    """Terrain Erosion: status, presets, run controls"""

    bl_idname = "TERRAIN_PT_main"
    bl_label = "Terrain Erosion"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        rt = context.window_manager.terrain_erosion
        # while a run goes on (a redraw every tick) the grid's last status is shown
        # without reading its positions again: the run checks them itself
        ok, text = grid_status(obj, quick=rt.running)
        wrap_label(layout.box(), text, icon='CHECKMARK' if ok else 'ERROR')
        if obj is None or obj.type != 'MESH':
            return
        s = obj.terrain_erosion
        row = layout.row(align=True)
        row.menu("TERRAIN_MT_presets", text=s.preset or "Presets", icon='PRESET')
        row.operator("terrain.preset_save", text="", icon='ADD')
        col = layout.column(align=True)
        col.prop(s, "seed")
        col.prop(s, "seed_text")  # seeds above 2147483647 (64-bit, as in the CLI)
        col = layout.column(align=True)
        col.prop(s, "particles_per_area")
        per_area = s.particles_per_area > 0
        row = col.row(align=True)
        row.active = not per_area  # typing a count switches rain per area off
        row.prop(s, "particles")
        extent = grid_extent(obj, quick=True)  # grid_status just read it
        if per_area and extent is not None and ok:
            try:
                col.label(text=f"\u2248 {s.work(*extent):,} particles for this grid",
                          icon='INFO')
            except UserError as exc:  # e.g. a rain per area that would run for weeks
                wrap_label(col, str(exc), icon='ERROR')
        col = layout.column(align=True)  # the world the run sees (addon/data/scale.py)
        col.prop(s, "real_size")
        col.prop(s, "vertical_exaggeration")
        if rt.running:
            layout.progress(factor=rt.progress, type='BAR', text=rt.status)
            row = layout.row(align=True)
            row.operator("terrain.stop", icon='PAUSE')
            layout.label(text="Esc cancels and restores the mesh", icon='INFO')
        elif not warmup.status().ready_for(warmup.enabled_processes(obj)):
            core = warmup.status()
            layout.progress(factor=core.fraction, type='BAR', text=core.text())
            layout.label(text="Erode is offered as soon as it is ready", icon='INFO')
        else:
            if warmup.status().busy:  # the processes this object uses are ready
                core = warmup.status()
                layout.progress(factor=core.fraction, type='BAR', text=core.text())
            if warmup.status().state == warmup.FAILED:
                wrap_label(layout, warmup.status().text(), icon='ERROR')
            row = layout.row(align=True)
            row.scale_y = 1.4
            row.operator("terrain.erode", icon='PLAY')
            row.operator("terrain.step", icon='FRAME_NEXT')
            row = layout.row(align=True)
            row.operator("terrain.reset", icon='LOOP_BACK')
            row.operator("terrain.apply", icon='CHECKMARK')
            if rt.status:
                layout.label(text=rt.status)
        layout.operator("terrain.apply_material", icon='MATERIAL')
        if s.provenance:
            wrap_label(layout, f"Last run: {s.provenance}", icon='TIME')


class TERRAIN_PT_output(ErosionSubPanel, bpy.types.Panel):
    bl_idname = "TERRAIN_PT_output"
    bl_label = "Output"

    def draw(self, context):
        s = context.active_object.terrain_erosion
        col = self.layout.column()
        col.prop(s, "write_colors")
        col.prop(s, "live_update")
        # every te_* layer a run may write (simcore/fields.py and the processes' fields)
        wrap_label(col, "Color layers: " + ", ".join(COLOR_LAYERS.values()))
        wrap_label(col, "Float layers: " + ", ".join(FLOAT_LAYERS.values()))
        wrap_label(col, f"{CHANGE_PREFIX}<process>: how much <process> moved the ground "
                   "(local units; one layer per process, together the whole change)")


def _with_unit(group, field: dataclasses.Field) -> str:
    """The setting's label with its unit, e.g. "Age (yr)" (none for plain numbers,
    counts and switches: "-", "" or an int/bool parameter)."""
    label = group.bl_rna.properties[field.name].name
    unit = field.metadata.get("unit") or "-"
    if unit == "-" or not isinstance(field.default, float):
        return label
    return f"{label} ({unit})"


def shown_fields(group, fields) -> list[dataclasses.Field]:
    """The parameters a process panel shows: all but the legacy ones at their default
    (a legacy value an old file set still counts, so it is shown, marked legacy)."""
    return [f for f in fields if not hidden(f, getattr(group, f.name))]


def _process_panel(name: str) -> type[bpy.types.Panel]:
    proc = PROCESSES[name]
    fields = dataclasses.fields(proc.params_type)

    def draw_header(self, context):
        self.layout.prop(getattr(context.active_object.terrain_erosion, name), "enabled",
                         text="")

    def draw(self, context):
        group = getattr(context.active_object.terrain_erosion, name)
        layout = self.layout
        layout.use_property_split = True
        layout.active = group.enabled
        col = layout.column(align=True)
        for field in shown_fields(group, fields):
            label = _with_unit(group, field)
            col.prop(group, field.name, text=f"{label} (legacy)" if is_legacy(field) else label)
        # its extras (process_ui.py): the trees' object, the water surface, ...
        draw_extras(name, layout, context.active_object.terrain_erosion, group)

    return type(f"TERRAIN_PT_{name}", (bpy.types.Panel,), {
        "bl_idname": f"TERRAIN_PT_{name}", "bl_label": proc.label,
        "bl_space_type": 'VIEW_3D', "bl_region_type": 'UI', "bl_category": "Erosion",
        "bl_parent_id": "TERRAIN_PT_main", "bl_options": {'DEFAULT_CLOSED'},
        "poll": classmethod(lambda cls, context: context.active_object is not None
                            and context.active_object.type == 'MESH'),
        "draw_header": draw_header, "draw": draw, "__doc__": proc.doc})


classes = (TERRAIN_PT_main, *(_process_panel(n) for n in PROCESSES), TERRAIN_PT_output)


register, unregister = bpy.utils.register_classes_factory(classes)
