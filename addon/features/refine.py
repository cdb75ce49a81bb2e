"""Refine ×2: the active terrain's grid made twice as fine, in place (docs/refine.md).

The object keeps its name, settings, Real Size, modifiers, vertex groups and materials;
its mesh is replaced by one of ``2n - 1`` vertices a side over the same extent. The
terrain's own layers go through simcore's refine (each as its descriptor says: lakes
at their levels, volumes kept); every other point attribute (colors, the heights kept
for Reset, a user's floats) and every vertex group is interpolated the same monotone
way, face attributes (material, smooth shading) come from the coarse face each new one
lies in, and a UV map from its vertices. Undo brings the coarse mesh back. Anything
that cannot be carried (an edge attribute, a non-float point attribute) stops the
refine before any change, naming it.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..data import grid as gridio
from ..data import history, job
from ..data.masks import vertex_group_weights
from ..data.meshes import quad_mesh
from ..simcore.engine.refine import refine
from ..simcore.errors import UserError
from ..simcore.formats import history as entries
from ..simcore.formats import lattice
from ..simcore.processes import FIELDS
from ..ui.boundary import reports_user_errors
from ..ui.widgets import ErosionSubPanel

#: point attribute types carried by interpolation: the foreach property, the channels
POINT_TYPES = {'FLOAT': ("value", 1), 'FLOAT_COLOR': ("color", 4),
               'BYTE_COLOR': ("color", 4), 'FLOAT_VECTOR': ("vector", 3),
               'FLOAT2': ("vector", 2)}
#: face attribute types carried from the coarse face: the foreach property, channels
FACE_TYPES = {'FLOAT': ("value", 1), 'INT': ("value", 1), 'BOOLEAN': ("value", 1),
              'FLOAT_COLOR': ("color", 4), 'BYTE_COLOR': ("color", 4),
              'FLOAT_VECTOR': ("vector", 3), 'FLOAT2': ("vector", 2), 'INT8': ("value", 1)}
_DTYPES = {'INT': np.int32, 'BOOLEAN': bool, 'INT8': np.int32}


def _read(attr, prop: str, channels: int, count: int, dtype=np.float32) -> np.ndarray:
    values = np.empty(count * channels, dtype)
    attr.data.foreach_get(prop, values)
    return values.reshape(count, channels)


def _user_attributes(me: bpy.types.Mesh) -> list:
    """The mesh's attributes that are not Blender's own (those start with '.', and
    position and the UV maps' helpers are handled apart)."""
    return [a for a in me.attributes if not a.name.startswith(".") and a.name != "position"]


def _check(me: bpy.types.Mesh) -> None:
    """GridError naming an attribute the refine cannot carry."""
    uv = {layer.name for layer in me.uv_layers}
    for a in _user_attributes(me):
        ok = ((a.domain == 'POINT' and a.data_type in POINT_TYPES)
              or (a.domain == 'FACE' and a.data_type in FACE_TYPES)
              or (a.domain == 'CORNER' and a.name in uv))
        if not ok:
            raise gridio.GridError(
                f"'{me.name}' has the {a.domain.lower()} attribute '{a.name}' "
                f"({a.data_type}), which Refine ×2 cannot carry; remove it (Object Data "
                "properties > Attributes) or apply it first")


def _face_cells(me: bpy.types.Mesh, grid: gridio.Grid) -> np.ndarray:
    """For every lattice cell, the index of a coarse face on it (lattice.face_cells)."""
    starts = np.empty(len(me.polygons), np.int64)
    me.polygons.foreach_get("loop_start", starts)
    corner_vertex = np.empty(len(me.loops), np.int64)
    me.loops.foreach_get("vertex_index", corner_vertex)
    return lattice.face_cells(lattice.raster_of(grid.order)[corner_vertex], starts,
                              grid.rows, grid.cols)


def refine_object(obj: bpy.types.Object) -> bpy.types.Mesh:
    """Make ``obj``'s grid twice as fine in place (module doc); returns the new mesh.
    A UserError, with nothing changed, when it cannot."""
    problem = gridio.object_problem(obj)
    if problem:
        raise gridio.GridError(problem)
    if job.running_on(obj):
        raise UserError(f"'{obj.name}' is being eroded; stop the run first")
    me = obj.data
    positions = gridio.read_positions(me)
    g = gridio.detect_grid(me, positions)
    rows, cols = 2 * g.rows - 1, 2 * g.cols - 1
    if rows * cols > gridio.MAX_VERTICES:
        raise gridio.GridError(f"'{obj.name}' would have {rows}x{cols} vertices, more than "
                               f"{gridio.MAX_VERTICES:,}; refine a smaller grid")
    _check(me)
    settings = obj.terrain_erosion
    scale = settings.real_scale(g.rows, g.cols, g.cell_size)
    unit = scale.height_unit
    z = positions[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    terrain, _ = job.read_state(me, g, z, scale)
    ours = {attr: name for name, attr in gridio.FLOAT_LAYERS.items()}
    job.read_changes(me, g, unit, terrain)
    changes = {attr: name for name, attr in gridio.CHANGE_LAYERS.items()}
    fine = refine(terrain)  # the memory check first
    fine_unit = unit / 2.0
    n = len(me.vertices)
    normals = np.empty(len(me.polygons) * 3, np.float32)
    me.polygons.foreach_get("normal", normals)
    co, quads = lattice.grid_lattice(rows, cols, g.x0, g.y0, g.cell_x / 2, g.cell_y / 2,
                                     fine.height() * fine_unit,
                                     flip=lattice.faces_look_down(normals))
    # what the new mesh gets, read from the old one before anything changes
    points, faces, corners = {}, {}, {}
    cells = _face_cells(me, g) if len(me.polygons) else None
    uv = {layer.name for layer in me.uv_layers}
    corner_vertex = np.empty(len(me.loops), np.int64)
    me.loops.foreach_get("vertex_index", corner_vertex)
    for a in _user_attributes(me):
        if a.domain == 'POINT':
            if a.data_type == 'FLOAT' and a.name in ours:
                f = FIELDS[ours[a.name]]
                values = getattr(fine, f.name) * (fine_unit if f.is_length else 1.0)
            elif a.data_type == 'FLOAT' and a.name in changes and changes[a.name] in fine.changes:
                values = fine.changes[changes[a.name]] * fine_unit
            else:
                prop, k = POINT_TYPES[a.data_type]
                values = lattice.fine_points(_read(a, prop, k, n), g.order, g.rows, g.cols)
            points[a.name] = (a.data_type, values.reshape(rows * cols, -1))
        elif a.domain == 'FACE' and cells is not None:
            prop, k = FACE_TYPES[a.data_type]
            raw = _read(a, prop, k, len(me.polygons), _DTYPES.get(a.data_type, np.float32))
            faces[a.name] = (a.data_type, lattice.fine_faces(raw, cells, g.rows, g.cols))
        elif a.domain == 'CORNER' and a.name in uv:
            corners[a.name] = lattice.fine_corners(_read(a, "vector", 2, len(me.loops)),
                                                   corner_vertex, g.order, g.rows, g.cols,
                                                   quads.ravel())
    groups = {vg.name: lattice.fine_points(vertex_group_weights(obj, vg.name), g.order,
                                           g.rows, g.cols)[:, 0]
              for vg in obj.vertex_groups}
    active_uv = me.uv_layers.active.name if me.uv_layers.active is not None else None
    active_group = obj.vertex_groups.active_index
    # the new mesh: everything above, then swapped in
    new = bpy.data.meshes.new(me.name)
    try:
        quad_mesh(new, co, quads)
        for m in me.materials:
            new.materials.append(m)
        for name in corners:
            new.uv_layers.new(name=name)
        if active_uv is not None:
            new.uv_layers.active = new.uv_layers[active_uv]
        for name, values in corners.items():
            new.attributes[name].data.foreach_set(
                "vector", np.ascontiguousarray(values, np.float32).ravel())
        for name, (kind, values) in points.items():
            prop, _ = POINT_TYPES[kind]
            attr = gridio.ensure_attribute(new, name, kind)
            attr.data.foreach_set(prop, np.ascontiguousarray(values, np.float32).ravel())
        for name, (kind, values) in faces.items():
            prop, _ = FACE_TYPES[kind]
            attr = gridio.ensure_attribute(new, name, kind, 'FACE')
            attr.data.foreach_set(prop, np.ascontiguousarray(
                values, _DTYPES.get(kind, np.float32)).ravel())
    except BaseException:
        bpy.data.meshes.remove(new)
        raise
    old_name = me.name
    obj.data = new
    if settings.history:  # its entries ran on the coarse grid: Rebuild cannot replay them
        settings.history_from_original = False
        history.record(settings, entries.note_entry(
            "Refine x2 (the entries above ran on the coarse grid: Apply to start a "
            "history on the fine one)", *settings.size_settings()))
    for name, weights in groups.items():  # the names live on the mesh in Blender 3+
        group = obj.vertex_groups.get(name) or obj.vertex_groups.new(name=name)
        for value, indices in lattice.weight_runs(weights):
            group.add(indices, value, 'REPLACE')
    if groups:
        obj.vertex_groups.active_index = active_group
    if me.users == 0:
        bpy.data.meshes.remove(me)
    new.name = old_name
    new.update()
    return new


class TERRAIN_OT_refine(bpy.types.Operator):
    """Make the terrain's grid twice as fine (2n-1 vertices a side, the same size): its
    layers, lakes, masks, materials and settings carried; undo brings the coarse grid back"""

    bl_idname = "terrain.refine"
    bl_label = "Refine ×2"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return gridio.poll_grid(cls, context)

    @reports_user_errors
    def execute(self, context):
        obj = context.active_object
        before = len(obj.data.vertices)
        me = refine_object(obj)
        self.report({'INFO'}, f"'{obj.name}': {before:,} -> {len(me.vertices):,} vertices")
        return {'FINISHED'}


class TERRAIN_PT_refine(ErosionSubPanel, bpy.types.Panel):
    """The grid twice as fine, its whole state carried"""

    bl_idname = "TERRAIN_PT_refine"
    bl_label = "Refine"

    def draw(self, context):
        self.layout.operator(TERRAIN_OT_refine.bl_idname, icon='MOD_SUBSURF')


classes = (TERRAIN_OT_refine, TERRAIN_PT_refine)
register, unregister = bpy.utils.register_classes_factory(classes)
