"""Realism report in the Erosion tab: the figures of ``simcore.analysis.report`` for
the active grid, before (the heights kept from before the first run) and now. Computed
on demand by the Report button (a 1024² grid takes a second or two) and shown until
the object's mesh, its round count or its heights change (a sample of them: reading
every height at each panel draw would cost 0.1 s on a 2048² grid after each update)."""

from __future__ import annotations

import bpy
import numpy as np

from ..data import grid as gridio
from ..simcore.analysis.report import ROWS, landform_figures
from ..simcore.errors import UserError
from ..ui.boundary import reports_user_errors
from ..ui.widgets import ErosionSubPanel

#: object session id -> (mesh key, {"before": figures, "after": figures})
_reports: dict[int, tuple[tuple, dict]] = {}


#: vertices whose heights the report's key samples (spread evenly over the mesh)
KEY_SAMPLES = 512


def _mesh_key(obj: bpy.types.Object) -> tuple:
    """What identifies the state a report was made from: the mesh, the rounds run and
    the heights of :data:`KEY_SAMPLES` vertices spread over it (so heights a script,
    a sculpt or a modifier applied changed make the report stale; about a millisecond,
    where reading every height at each draw would cost 0.1 s at 2048²)."""
    me = obj.data
    n = len(me.vertices)
    step = max(1, n // KEY_SAMPLES)
    verts = me.vertices
    sample = tuple(verts[i].co.z for i in range(0, n, step))
    return (me.as_pointer(), n, obj.terrain_erosion.rounds_done, hash(sample))


def object_report(obj: bpy.types.Object) -> dict[str, dict]:
    """{"before": figures, "after": figures} of a grid object, in world units (its real
    size): "before" from the heights kept before the first run (the same as "after"
    when it was never eroded), "after" from its heights and lake depths now."""
    me = obj.data
    g = gridio.detect_grid(me)
    scale = obj.terrain_erosion.real_scale(g.rows, g.cols, g.cell_size)
    z = gridio.read_positions(me)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    if not np.isfinite(z).all():
        raise UserError(f"'{obj.name}' has NaN/inf vertex heights: fix the mesh first")
    original = gridio.read_float_layer(me, gridio.ORIGINAL_Z, g)
    pool = gridio.read_float_layer(me, gridio.FLOAT_LAYERS["pool"], g)
    unit = scale.height_unit  # local units per cell unit
    before = z if original is None else original
    figures = {"before": landform_figures(before / unit, scale.world_cell),
               "after": landform_figures(z / unit, scale.world_cell,
                                         None if pool is None else np.maximum(pool, 0) / unit)}
    _reports[obj.session_uid] = (_mesh_key(obj), figures)
    return figures


def shown_report(obj: bpy.types.Object) -> dict[str, dict] | None:
    """The last report of ``obj`` if neither its mesh nor its rounds changed since."""
    entry = _reports.get(obj.session_uid)
    return entry[1] if entry is not None and entry[0] == _mesh_key(obj) else None


class TERRAIN_OT_report(bpy.types.Operator):
    """Measure the active grid's landforms: slopes, closed basins, lakes and their spill
    levels, channel concavity, relief; before the first run and now"""

    bl_idname = "terrain.report"
    bl_label = "Realism Report"

    @classmethod
    def poll(cls, context):
        ok, text = gridio.grid_status(getattr(context, "active_object", None))
        if not ok:
            cls.poll_message_set(text)
        return ok

    @reports_user_errors
    def execute(self, context):
        figures = object_report(context.active_object)
        after = figures["after"]
        self.report({'INFO'}, f"Slope median {after['slope_p50']:.1f}°, "
                              f"closed basins {after['closed_basins']:.2f}% of the map, "
                              f"{after['lakes']} lakes")
        return {'FINISHED'}


class TERRAIN_PT_report(ErosionSubPanel, bpy.types.Panel):
    bl_idname = "TERRAIN_PT_report"
    bl_label = "Realism Report"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        layout.operator("terrain.report", icon='INFO')
        figures = None if context.window_manager.terrain_erosion.running else \
            shown_report(obj)
        if figures is None:
            layout.label(text="Slopes, closed basins, lakes, rivers: before and now")
            return
        box = layout.box()
        col = box.column(align=True)
        row = col.row()
        row.label(text="")
        row.label(text="Before")
        row.label(text="Now")
        for key, label, fmt in ROWS:
            row = col.row()
            row.label(text=label.strip())
            for side in ("before", "after"):
                value = figures[side][key]
                row.label(text="-" if isinstance(value, float) and not np.isfinite(value)
                          else fmt.format(value))


classes = (TERRAIN_OT_report, TERRAIN_PT_report)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()


def unregister() -> None:
    _unregister_classes()
    _reports.clear()
