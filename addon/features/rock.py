"""The Rock Layers sub-panel: the object's rock column (ui/rock_props.py) as a list of
layers with add / remove / move, the frame they lie in, and **Preview Layers**, which
writes the layer exposed at every vertex (``te_rock_layer``) before any erosion."""

from __future__ import annotations

import dataclasses

import bpy
import numpy as np

from ..data import grid as gridio
from ..simcore.algorithms.strata import Strata
from ..simcore.rock import Frame, RockError
from ..simcore.terrain import TerrainError
from ..ui.boundary import reports_user_errors
from ..ui.rock_props import changed
from ..ui.widgets import ErosionSubPanel, wrap_label

#: the attribute Preview Layers and a run on a column write (simcore/fields.py)
ROCK_LAYER = gridio.FLOAT_LAYERS["rock_layer"]

#: the frame settings in the panel, in groups (every Frame field, once)
FRAME_GROUPS = (
    ("Layers", ("top", "repeat")),
    ("Tilt", ("dip", "dip_direction")),
    ("Fold", ("fold_amplitude", "fold_wavelength", "fold_axis")),
    ("Fault", ("fault_throw", "fault_strike", "fault_dip", "fault_x", "fault_y")),
    ("Wobble", ("noise_amplitude", "noise_wavelength", "seed")),
)
_shown = [name for _, names in FRAME_GROUPS for name in names]
if sorted(_shown) != sorted(f.name for f in dataclasses.fields(Frame)):
    raise ValueError("addon/features/rock.py: FRAME_GROUPS must list every Frame field once")


def _rock(context):
    return context.active_object.terrain_erosion.rock


class TERRAIN_UL_rock_layers(bpy.types.UIList):
    """The rock layers, top down: colour, name, thickness and erodibility"""

    bl_idname = "TERRAIN_UL_rock_layers"

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname,
                  index=0, flt_flag=0):
        if self.layout_type in {'DEFAULT', 'COMPACT'}:
            row = layout.row(align=True)
            split = row.split(factor=0.12, align=True)
            split.prop(item, "color", text="")
            split.prop(item, "name", text="", emboss=False)
            row.prop(item, "thickness", text="")
            row.prop(item, "erodibility", text="")
        else:  # GRID
            layout.alignment = 'CENTER'
            layout.prop(item, "color", text="")


class _RockOperator:
    """poll(): an active mesh object (its column is edited)."""

    @classmethod
    def poll(cls, context):
        obj = getattr(context, "active_object", None)
        if obj is None or obj.type != 'MESH':
            cls.poll_message_set("Select a mesh object")
            return False
        return True


class TERRAIN_OT_rock_layer_add(_RockOperator, bpy.types.Operator):
    """Add a rock layer below the active one"""

    bl_idname = "terrain.rock_layer_add"
    bl_label = "Add Rock Layer"
    bl_options = {'REGISTER', 'UNDO', 'INTERNAL'}

    @reports_user_errors
    def execute(self, context):
        rock = _rock(context)
        index = rock.active_layer if len(rock.layers) else None
        rock.add_layer(index)
        return {'FINISHED'}


class TERRAIN_OT_rock_layer_remove(_RockOperator, bpy.types.Operator):
    """Remove the active rock layer"""

    bl_idname = "terrain.rock_layer_remove"
    bl_label = "Remove Rock Layer"
    bl_options = {'REGISTER', 'UNDO', 'INTERNAL'}

    @classmethod
    def poll(cls, context):
        if not super().poll(context):
            return False
        if len(_rock(context).layers) == 0:
            cls.poll_message_set("The column has no layer to remove")
            return False
        return True

    def execute(self, context):
        rock = _rock(context)
        index = min(rock.active_layer, len(rock.layers) - 1)
        rock.layers.remove(index)
        rock.active_layer = max(0, min(index, len(rock.layers) - 1))
        changed(context.active_object)
        return {'FINISHED'}


class TERRAIN_OT_rock_layer_move(_RockOperator, bpy.types.Operator):
    """Move the active rock layer up or down the column"""

    bl_idname = "terrain.rock_layer_move"
    bl_label = "Move Rock Layer"
    bl_options = {'REGISTER', 'UNDO', 'INTERNAL'}

    direction: bpy.props.EnumProperty(
        name="Direction", items=(('UP', "Up", "Towards the top of the column"),
                                 ('DOWN', "Down", "Towards the bottom of the column")))

    def execute(self, context):
        rock = _rock(context)
        index = rock.active_layer
        to = index - 1 if self.direction == 'UP' else index + 1
        if not (0 <= index < len(rock.layers) and 0 <= to < len(rock.layers)):
            return {'CANCELLED'}
        rock.layers.move(index, to)
        rock.active_layer = to
        changed(context.active_object)
        return {'FINISHED'}


def preview_layers(obj: bpy.types.Object) -> np.ndarray:
    """Write ``te_rock_layer`` on ``obj``'s grid: the layer of its rock column at every
    vertex's bedrock (its heights less any sediment a run left, and less the rock uplift
    raised, which carried its layers up), as a run would at its start. Returns the
    raster; a UserError (nothing written) when the object is no grid, Rock Layers is off
    or a layer is malformed."""
    problem = gridio.object_problem(obj)
    if problem:
        raise gridio.GridError(problem)
    settings = obj.terrain_erosion
    if not settings.rock.enabled:
        raise RockError(f"Rock Layers is off for '{obj.name}': switch it on to preview "
                        "the layers")
    column = settings.rock.to_column()
    me = obj.data
    foreign = [a for a in gridio.foreign_namesakes(me) if f"'{ROCK_LAYER}'" in a]
    if foreign:
        raise TerrainError(f"'{obj.name}' has an attribute {foreign[0]} that is not the "
                           "add-on's: rename it (Preview Layers would replace it)")
    positions = gridio.read_positions(me)
    g = gridio.detect_grid(me, positions)
    z = positions[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    if not np.isfinite(z).all():
        raise TerrainError(f"'{obj.name}' has NaN/inf vertex heights: fix the mesh "
                           "(e.g. Mesh > Clean Up) first")
    sediment = gridio.read_float_layer(me, gridio.FLOAT_LAYERS["sediment"], g)
    if sediment is not None and np.isfinite(sediment).all():
        z = z - np.maximum(sediment, 0.0)
    # the layers rose with the rock uplift raised (a landscape run): as a run reads them
    uplifted = gridio.read_float_layer(me, gridio.FLOAT_LAYERS["uplifted"], g)
    if uplifted is not None and np.isfinite(uplifted).all():
        z = z - np.maximum(uplifted, 0.0)
    scale = settings.real_scale(g.rows, g.cols, g.cell_size)
    bedrock = np.ascontiguousarray(z / scale.height_unit)  # cell units, as in a run
    ones = np.ones_like(bedrock)
    scaled, layer = np.empty_like(bedrock), np.empty_like(bedrock)
    Strata(column, bedrock.shape, scale.world_cell).evaluate(bedrock, ones, scaled, layer)
    gridio.write_float_layer(me, ROCK_LAYER, g, layer)
    me.update()
    changed(obj)
    return layer


class TERRAIN_OT_rock_preview(_RockOperator, bpy.types.Operator):
    """Show the rock layer at every vertex before eroding: writes te_rock_layer (the
    layer's number plus how deep inside it), which the terrain material colours"""

    bl_idname = "terrain.rock_preview"
    bl_label = "Preview Layers"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        if not gridio.poll_grid(cls, context):
            return False
        if context.window_manager.terrain_erosion.running:
            cls.poll_message_set("An erosion run is going on")
            return False
        return True

    @reports_user_errors
    def execute(self, context):
        obj = context.active_object
        layer = preview_layers(obj)
        shown = sorted({int(v) for v in np.unique(np.floor(layer))})
        names = [obj.terrain_erosion.rock.layers[i].name or f"layer {i + 1}" for i in shown]
        self.report({'INFO'}, f"'{obj.name}': {len(shown)} of "
                              f"{len(obj.terrain_erosion.rock.layers)} layers exposed "
                              f"({', '.join(names[:6])}{', ...' if len(names) > 6 else ''})")
        return {'FINISHED'}


class TERRAIN_PT_rock(ErosionSubPanel, bpy.types.Panel):
    """The rock column: layers of different hardness below the surface"""

    bl_idname = "TERRAIN_PT_rock"
    bl_label = "Rock Layers"

    def draw_header(self, context):
        self.layout.prop(_rock(context), "enabled", text="")

    def draw(self, context):
        rock = _rock(context)
        layout = self.layout
        layout.active = rock.enabled
        row = layout.row()
        row.template_list("TERRAIN_UL_rock_layers", "", rock, "layers", rock,
                          "active_layer", rows=4)
        col = row.column(align=True)
        col.operator("terrain.rock_layer_add", text="", icon='ADD')
        col.operator("terrain.rock_layer_remove", text="", icon='REMOVE')
        col.separator()
        col.operator("terrain.rock_layer_move", text="", icon='TRIA_UP').direction = 'UP'
        col.operator("terrain.rock_layer_move", text="", icon='TRIA_DOWN').direction = 'DOWN'
        if 0 <= rock.active_layer < len(rock.layers):
            item = rock.layers[rock.active_layer]
            box = layout.box()
            box.use_property_split = True
            col = box.column(align=True)
            for name in ("name", "color", "thickness", "erodibility", "rock_angle"):
                col.prop(item, name)
        elif rock.enabled:
            wrap_label(layout, "Add a layer (+): thickness in metres, erodibility 1 = "
                       "as soft as sediment", icon='INFO')
        layout.use_property_split = True
        for title, names in FRAME_GROUPS:
            col = layout.column(align=True, heading=title)
            for name in names:
                col.prop(rock, name)
        wrap_label(layout, "Lengths are metres of the real world (Real Size)", icon='INFO')
        layout.operator("terrain.rock_preview", icon='HIDE_OFF')


classes = (TERRAIN_UL_rock_layers, TERRAIN_OT_rock_layer_add, TERRAIN_OT_rock_layer_remove,
           TERRAIN_OT_rock_layer_move, TERRAIN_OT_rock_preview, TERRAIN_PT_rock)


register, unregister = bpy.utils.register_classes_factory(classes)
