"""Glacier ice as an object artists can shade: ``<terrain> Ice``.

A mesh whose vertices sit at the ground plus the terrain's ice thickness (the float
layer of simcore's ``ice`` array, ``te_ice``, in local units), with faces only where
some corner's ice is thicker than Min Ice Thickness; at the ice's edge the surface
thins out to the ground and its rim vertices tuck just under it, so the terrain hides
the seam. Point attribute ``ice_thickness`` (local units) on it, material ``TE Ice``
(pale blue-white, a little subsurface scattering).

The object is a child of the terrain (identity parent inverse), found through a
pointer in ``Object.terrain_ice``. Making it again replaces its mesh and keeps the
object: its transform, name, modifiers and materials stay as the artist left them.
The ice array is looked up by name in simcore's field descriptions; nothing here
knows which process writes it.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..data import compat
from ..data import grid as gridio
from ..data.meshes import quad_mesh
from ..data.objects import child_object
from ..simcore.analysis.cover import cover_mesh
from ..simcore.errors import UserError
from ..simcore.processes import PROCESSES
from ..ui.boundary import reports_user_errors

#: the terrain array of the ice thickness (simcore/fields.py or a process's fields)
ICE = "ice"
ICE_MATERIAL = "TE Ice"
#: point attribute of the ice mesh: the ice thickness at each vertex, local units
THICKNESS = "ice_thickness"
#: rim vertices (ice no thicker than the minimum) sit this fraction of a cell under
#: ground + ice, so the terrain covers the ice's edge
TUCK = 0.02


class IceDataError(UserError):
    """No ice to make a surface of; the message says what to run first."""


def ice_layer() -> str | None:
    """The float attribute holding the ice thickness (``te_ice``), None when no field
    of that name is declared."""
    return gridio.FLOAT_LAYERS.get(ICE)


def _makers() -> str:
    """How the UI names what writes the ice array: "'Glaciers'" or "a process that
    writes ice" when none is installed."""
    labels = [p.label for p in PROCESSES.values() if ICE in p.writes]
    return " or ".join(f"'{label}'" for label in labels) or "a process that writes ice"


def _rasters(obj: bpy.types.Object):
    """(grid, ground z, ice thickness) in local units, or a UserError saying why not."""
    problem = gridio.object_problem(obj)
    if problem:
        raise gridio.GridError(problem)
    me = obj.data
    g = gridio.detect_grid(me)
    layer = ice_layer()
    ice = None if layer is None else gridio.read_float_layer(me, layer, g)
    if ice is None:
        raise IceDataError(f"'{obj.name}' has no ice layer ({layer or 'te_ice'}): enable "
                           f"{_makers()} and erode first")
    z = gridio.read_positions(me)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    for what, values in (("a height", z), (f"a {layer} value", ice)):
        bad = int((~np.isfinite(values)).sum())
        if bad:  # an infinite thickness would make a mesh with infinite vertices
            raise UserError(f"'{obj.name}': {bad:,} vertices have {what} that is not a "
                            "finite number (inf or NaN), so no ice surface is made; "
                            "Reset the terrain or run Erode again to rewrite its layers")
    return g, z, np.maximum(ice, 0.0)


def min_thickness_local(obj: bpy.types.Object, g: gridio.Grid, metres: float) -> float:
    """``metres`` of ice (a world thickness) in ``obj``'s local units, by its real scale
    (Real Size, Vertical Exaggeration)."""
    scale = obj.terrain_erosion.real_scale(g.rows, g.cols, g.cell_size)
    return float(scale.local_height(metres))


def ice_material() -> bpy.types.Material:
    """Pale blue-white glacier ice: fairly glossy, with light scattering under the
    surface and a thin clear coat; nodes only, made once."""
    mat = bpy.data.materials.get(ICE_MATERIAL)
    if mat is not None:
        return mat
    mat = compat.new_node_material(ICE_MATERIAL)
    bsdf = next(n for n in mat.node_tree.nodes if n.bl_idname == 'ShaderNodeBsdfPrincipled')
    for name, value in (("Base Color", (0.7, 0.84, 0.93, 1)), ("Roughness", 0.3),
                        ("Subsurface Weight", 0.3), ("Subsurface Radius", (0.3, 0.6, 1.0)),
                        ("Coat Weight", 0.3)):
        bsdf.inputs[name].default_value = value
    return mat


def update_ice(obj: bpy.types.Object, min_thickness: float = 0.5) -> bpy.types.Object:
    """Create the ice object of ``obj`` or replace its mesh: quads where some corner's
    ice is thicker than ``min_thickness`` metres (world), vertices at ground + ice.
    IceDataError (nothing made or changed) without an ice layer or any ice that
    thick."""
    g, z, ice = _rasters(obj)
    limit = min_thickness_local(obj, g, min_thickness)
    cells, top, quads, covered = cover_mesh(z, ice, limit)
    if len(quads) == 0:
        raise IceDataError(f"'{obj.name}' has no ice thicker than {min_thickness:g} m "
                           f"(Min Ice Thickness): enable {_makers()} and erode longer, "
                           "or lower the minimum")
    r, c = cells[:, 0], cells[:, 1]
    top = np.where(covered, top, top - TUCK * g.cell_size)
    co = np.stack([g.x0 + c * g.cell_x, g.y0 + r * g.cell_y, top], axis=1)
    settings = obj.terrain_ice
    old = settings.ice_object
    if old is not None and old.type != 'MESH':
        old = None  # not ours any more (the pointer was set to something else)
    name = old.data.name if old is not None else f"{obj.name} Ice"
    me = quad_mesh(bpy.data.meshes.new(name), co, quads)
    gridio.ensure_attribute(me, THICKNESS, 'FLOAT').data.foreach_set(
        "value", ice[r, c].astype(np.float32))
    if old is None:
        me.materials.append(ice_material())
        ice_obj = child_object(obj, me.name, me)
        settings.ice_object = ice_obj
    else:
        ice_obj = old
        previous = old.data
        for mat in previous.materials:  # the artist's materials, in their slots
            me.materials.append(mat)
        ice_obj.data = me
        if previous.users == 0:
            bpy.data.meshes.remove(previous)
        me.name = name
    me.update()
    return ice_obj


# ------------------------------------------------------------------ UI

class TERRAIN_PG_ice(bpy.types.PropertyGroup):
    """The ice surface made from the terrain's ice layer."""

    ice_object: bpy.props.PointerProperty(
        name="Ice", type=bpy.types.Object, description="Ice surface mesh (made by the add-on)")
    min_thickness: bpy.props.FloatProperty(
        name="Min Ice Thickness", default=0.5, min=0.0, soft_max=50.0,
        description="Metres of ice (world, at the terrain's Real Size) from which a "
                    "place is covered by the ice surface")


class TERRAIN_OT_ice_surface(bpy.types.Operator):
    """Make the ice surface object: a mesh at the ground plus the terrain's ice
    thickness (te_ice) wherever the ice is thicker than Min Ice Thickness, with a
    glacier ice material (made again from the layer when run again)"""

    bl_idname = "terrain.ice_surface"
    bl_label = "Ice Surface"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return gridio.poll_grid(cls, context)

    @reports_user_errors
    def execute(self, context):
        obj = context.active_object
        ice = update_ice(obj, obj.terrain_ice.min_thickness)
        self.report({'INFO'}, f"Made {ice.name} ({len(ice.data.polygons):,} faces)")
        return {'FINISHED'}


def draw(layout, obj: bpy.types.Object) -> None:
    """The ice part of the Rivers and Lakes as Data panel."""
    s = obj.terrain_ice
    layout.prop(s, "min_thickness")
    layout.operator(TERRAIN_OT_ice_surface.bl_idname, icon='FREEZE')
    if s.ice_object is not None:
        layout.label(text=s.ice_object.name, icon='CHECKMARK')


classes = (TERRAIN_PG_ice, TERRAIN_OT_ice_surface)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    bpy.types.Object.terrain_ice = bpy.props.PointerProperty(type=TERRAIN_PG_ice)


def unregister() -> None:
    del bpy.types.Object.terrain_ice
    _unregister_classes()
