"""Rivers, lakes and shores as data artists can shade.

- ``<terrain> Rivers``: a Curve object (poly splines) following the main channels of
  the ``te_stream`` layer, point radius = stream flow (0..1); the curve's Bevel Depth
  sets the width of a full river.
- ``<terrain> Lakes``: a mesh of every water body (``te_pool_depth`` > 0) flat at its
  surface, face attribute ``lake_id``, with the shore waves material.
- Point attributes on the terrain, its water surface object and the lakes:
  ``te_shore_distance`` (local units to the nearest waterline cell, 0 on it) and
  ``te_shore_direction`` (unit XY vector toward it).
- Material ``TE Shore Waves`` using the shader node group ``TE Shore Waves``: waves
  roll toward every shore, animated by the frame (a driver on a Value node). It only
  renders; the terrain is never changed.

Both objects are children of the terrain (identity parent inverse), found through
pointers in ``Object.terrain_water``. Layers are read from the mesh in local units,
so the unit simcore keeps its pool depth in does not matter here.
"""

from __future__ import annotations

import math

import bpy
import numpy as np

from ..data import compat
from ..data import grid as gridio
from ..data.meshes import quad_mesh
from ..data.objects import child_object, remove_object
from ..simcore.algorithms.shore import shore_field
from ..simcore.analysis.channels import lake_mesh, stream_polylines
from ..simcore.errors import UserError
from ..ui.boundary import reports_user_errors
from ..ui.widgets import ErosionSubPanel
from . import ice_surface

WAVES = "TE Shore Waves"
RIVER_MATERIAL = "TE River"
SHORE_DISTANCE = "te_shore_distance"
SHORE_DIRECTION = "te_shore_direction"
WET_DEPTH = 1e-6  # local units of pool depth that count as water


class WaterDataError(UserError):
    """No rivers or lakes to make; the message says what to run first."""


def _rasters(obj: bpy.types.Object):
    """(grid, ground z, stream or None, pool depth) in local units."""
    problem = gridio.object_problem(obj)
    if problem:
        raise gridio.GridError(problem)
    me = obj.data
    g = gridio.detect_grid(me)
    z = gridio.read_positions(me)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    stream = gridio.read_float_layer(me, gridio.FLOAT_LAYERS["stream"], g)
    pool = gridio.read_float_layer(me, gridio.FLOAT_LAYERS["pool"], g)
    for what, values in (("a height", z), (f"a {gridio.FLOAT_LAYERS['stream']} value", stream),
                         (f"a {gridio.FLOAT_LAYERS['pool']} value", pool)):
        bad = 0 if values is None else int((~np.isfinite(values)).sum())
        if bad:  # an infinite depth would make a mesh with infinite vertices
            raise UserError(f"'{obj.name}': {bad:,} vertices have {what} that is not a "
                            "finite number (inf or NaN), so no rivers or lakes are made; "
                            "Reset the terrain or run Erode again to rewrite its layers")
    return g, z, stream, (np.zeros_like(z) if pool is None else np.maximum(pool, 0.0))


# ------------------------------------------------------------------ shore

def write_shore(obj: bpy.types.Object) -> tuple[np.ndarray, np.ndarray]:
    """Distance and direction to the shore on the terrain mesh; returns the rasters
    (distance in local units; no shore at all: the grid's diagonal everywhere)."""
    g, _, _, pool = _rasters(obj)
    dist, direction = shore_field(pool > WET_DEPTH, g.cell_x, g.cell_y)
    diagonal = math.hypot(g.cols * g.cell_x, g.rows * g.cell_y)
    dist = np.where(np.isfinite(dist), dist, diagonal)
    vec = np.zeros((g.rows * g.cols, 3), np.float32)
    vec[g.order, 0] = direction[..., 0].ravel()
    vec[g.order, 1] = direction[..., 1].ravel()
    # the terrain, and the water surface object (a copy of its topology) if there is one
    water = obj.terrain_erosion.water_object
    meshes = [obj.data]
    if water is not None and water.type == 'MESH' and len(water.data.vertices) == len(vec):
        meshes.append(water.data)
    for me in meshes:
        gridio.write_float_layer(me, SHORE_DISTANCE, g, dist)
        gridio.ensure_attribute(me, SHORE_DIRECTION, 'FLOAT_VECTOR').data.foreach_set(
            "vector", vec.ravel())
        me.update()
    return dist, direction


# ------------------------------------------------------------------ rivers

def _river_material() -> bpy.types.Material:
    mat = bpy.data.materials.get(RIVER_MATERIAL)
    if mat is None:
        mat = compat.new_node_material(RIVER_MATERIAL)
        bsdf = mat.node_tree.nodes.get("Principled BSDF")
        if bsdf is not None:
            bsdf.inputs["Base Color"].default_value = (0.03, 0.25, 0.6, 1)
            bsdf.inputs["Roughness"].default_value = 0.1
    return mat


def update_rivers(obj: bpy.types.Object, threshold: float = 0.5, min_points: int = 4,
                  width: float = 0.0) -> bpy.types.Object:
    """Create or replace the rivers curve; ``width`` is the bevel depth of a river of
    flow 1 in local units (0: one cell)."""
    g, z, stream, pool = _rasters(obj)
    if stream is None:
        raise WaterDataError(f"'{obj.name}' has no stream layer (te_stream): enable "
                             "'Rivers and lakes' and erode first")
    surface = z + pool
    lines = stream_polylines(stream, surface, threshold, min_points, g.cell_x, g.cell_y)
    settings = obj.terrain_water
    old = settings.rivers_object
    curve = bpy.data.curves.new(f"{obj.name} Rivers", 'CURVE')
    curve.dimensions = '3D'
    curve.bevel_depth = width if width > 0 else g.cell_size
    curve.use_fill_caps = True
    curve.materials.append(_river_material())
    lift = 0.05 * g.cell_size  # just above the ground / lake surface
    for cells, flow in lines:
        spline = curve.splines.new('POLY')
        spline.points.add(len(cells) - 1)
        r, c = cells[:, 0], cells[:, 1]
        co = np.stack([g.x0 + c * g.cell_x, g.y0 + r * g.cell_y, surface[r, c] + lift,
                       np.ones(len(cells))], axis=1).astype(np.float32)
        spline.points.foreach_set("co", co.ravel())
        spline.points.foreach_set("radius", flow.astype(np.float32))
    curve["te_threshold"] = float(threshold)
    river = child_object(obj, curve.name, curve)
    settings.rivers_object = river
    remove_object(old)
    return river


# ------------------------------------------------------------------ lakes + waves

def update_lakes(obj: bpy.types.Object) -> bpy.types.Object:
    """Create or replace the lakes mesh (with shore attributes and the waves)."""
    g, z, _, pool = _rasters(obj)
    if not (pool > WET_DEPTH).any():
        raise WaterDataError(f"'{obj.name}' has no pools (te_pool_depth): enable "
                             "'Rivers and lakes' (and its sea, for a coast) and erode "
                             "first")
    dist, direction = write_shore(obj)
    cells, level, quads, lake = lake_mesh(z, pool, WET_DEPTH)
    r, c = cells[:, 0], cells[:, 1]
    co = np.stack([g.x0 + c * g.cell_x, g.y0 + r * g.cell_y, level], axis=1)
    settings = obj.terrain_water
    old = settings.lakes_object
    me = quad_mesh(bpy.data.meshes.new(f"{obj.name} Lakes"), co, quads)
    gridio.ensure_attribute(me, "lake_id", 'INT', 'FACE').data.foreach_set(
        "value", lake.astype(np.int32))
    gridio.ensure_attribute(me, SHORE_DISTANCE, 'FLOAT').data.foreach_set(
        "value", dist[r, c].astype(np.float32))
    vec = np.zeros((len(cells), 3), np.float32)
    vec[:, :2] = direction[r, c]
    gridio.ensure_attribute(me, SHORE_DIRECTION, 'FLOAT_VECTOR').data.foreach_set(
        "vector", vec.ravel())
    me.materials.append(waves_material(g.cell_size))
    me.update()
    lakes = child_object(obj, me.name, me)
    settings.lakes_object = lakes
    remove_object(old)
    return lakes


def _link(tree, a, b):
    tree.links.new(a, b)


def waves_group() -> bpy.types.NodeTree:
    """Shader node group: Distance (to shore), Time (frames), Wavelength, Period
    (frames), Reach -> Foam (0..1) and Height (for Bump). Crests are where
    ``distance / wavelength + time / period`` (plus a little noise) is whole, so they
    move toward the shore as time grows and fade out beyond Reach."""
    tree = bpy.data.node_groups.get(WAVES)
    if tree is not None:
        return tree
    tree = bpy.data.node_groups.new(WAVES, 'ShaderNodeTree')
    iface = tree.interface
    for name, default in (("Distance", 0.0), ("Time", 0.0), ("Wavelength", 4.0),
                          ("Period", 48.0), ("Reach", 16.0), ("Breakup", 0.6)):
        sock = iface.new_socket(name, in_out='INPUT', socket_type='NodeSocketFloat')
        sock.default_value = default
    iface.new_socket("Foam", in_out='OUTPUT', socket_type='NodeSocketFloat')
    iface.new_socket("Height", in_out='OUTPUT', socket_type='NodeSocketFloat')
    n = tree.nodes
    gi, go = n.new("NodeGroupInput"), n.new("NodeGroupOutput")

    def math_node(op, a=None, b=None, clamp=False):
        node = n.new("ShaderNodeMath")
        node.operation = op
        node.use_clamp = clamp
        for i, v in enumerate((a, b)):
            if v is None:
                continue
            if isinstance(v, (int, float)):
                node.inputs[i].default_value = v
            else:
                _link(tree, v, node.inputs[i])
        return node.outputs[0]

    noise = n.new("ShaderNodeTexNoise")  # breaks crests into separate waves
    noise.inputs["Scale"].default_value = 0.35  # features of ~3 wavelengths
    texco = n.new("ShaderNodeTexCoord")
    per_wave = n.new("ShaderNodeVectorMath")
    per_wave.operation = 'DIVIDE'
    _link(tree, texco.outputs["Object"], per_wave.inputs[0])
    combine = n.new("ShaderNodeCombineXYZ")
    for axis in ("X", "Y", "Z"):
        _link(tree, gi.outputs["Wavelength"], combine.inputs[axis])
    _link(tree, combine.outputs["Vector"], per_wave.inputs[1])
    _link(tree, per_wave.outputs["Vector"], noise.inputs["Vector"])
    jitter = math_node('MULTIPLY', math_node('SUBTRACT', noise.outputs["Fac"], 0.5),
                       gi.outputs["Breakup"])
    phase = math_node('ADD', math_node('DIVIDE', gi.outputs["Distance"],
                                       gi.outputs["Wavelength"]),
                      math_node('DIVIDE', gi.outputs["Time"], gi.outputs["Period"]))
    phase = math_node('ADD', phase, jitter)
    wave = math_node('MULTIPLY_ADD', math_node('SINE', math_node('MULTIPLY', phase,
                                                                 2 * math.pi)), 0.5)
    tree.nodes[-1].inputs[2].default_value = 0.5  # 0.5 * sin + 0.5
    crest = math_node('POWER', wave, 8.0)
    fade = math_node('SUBTRACT', 1.0, math_node('DIVIDE', gi.outputs["Distance"],
                                                gi.outputs["Reach"]), clamp=True)
    height = math_node('MULTIPLY', crest, fade)
    near = math_node('SUBTRACT', 1.0, math_node('DIVIDE', gi.outputs["Distance"],
                                                math_node('MULTIPLY', gi.outputs["Wavelength"],
                                                          0.5)), clamp=True)
    foam = math_node('ADD', math_node('MULTIPLY', height, 1.2),
                     math_node('MULTIPLY', near, 0.8), clamp=True)
    _link(tree, foam, go.inputs["Foam"])
    _link(tree, height, go.inputs["Height"])
    return tree


def waves_material(cell_size: float = 1.0) -> bpy.types.Material:
    """Water with foam crests rolling toward every shore, driven by the frame."""
    mat = bpy.data.materials.get(WAVES)
    if mat is not None:
        return mat
    mat = compat.new_node_material(WAVES)
    tree = mat.node_tree
    n = tree.nodes
    for node in list(n):
        n.remove(node)
    out = n.new("ShaderNodeOutputMaterial")
    bsdf = n.new("ShaderNodeBsdfPrincipled")
    dist = n.new("ShaderNodeAttribute")
    dist.attribute_type, dist.attribute_name = 'GEOMETRY', SHORE_DISTANCE
    frame = n.new("ShaderNodeValue")
    frame.label = "Frame"
    fc = frame.outputs[0].driver_add("default_value")
    fc.driver.type = 'SCRIPTED'
    fc.driver.expression = "frame"  # a simple expression: no Python, runs headless
    group = n.new("ShaderNodeGroup")
    group.node_tree = waves_group()
    group.inputs["Wavelength"].default_value = 4.0 * cell_size
    group.inputs["Reach"].default_value = 16.0 * cell_size
    _link(tree, dist.outputs["Fac"], group.inputs["Distance"])
    _link(tree, frame.outputs[0], group.inputs["Time"])
    mix = n.new("ShaderNodeMix")
    mix.data_type = 'RGBA'
    mix.inputs["A"].default_value = (0.01, 0.08, 0.16, 1)
    mix.inputs["B"].default_value = (0.9, 0.95, 1.0, 1)
    _link(tree, group.outputs["Foam"], mix.inputs["Factor"])
    _link(tree, mix.outputs["Result"], bsdf.inputs["Base Color"])
    rough = n.new("ShaderNodeMapRange")
    rough.inputs["To Min"].default_value = 0.05
    rough.inputs["To Max"].default_value = 0.6
    _link(tree, group.outputs["Foam"], rough.inputs["Value"])
    _link(tree, rough.outputs["Result"], bsdf.inputs["Roughness"])
    bump = n.new("ShaderNodeBump")
    bump.inputs["Strength"].default_value = 0.4
    _link(tree, group.outputs["Height"], bump.inputs["Height"])
    _link(tree, bump.outputs["Normal"], bsdf.inputs["Normal"])
    _link(tree, bsdf.outputs["BSDF"], out.inputs["Surface"])
    for i, node in enumerate((dist, frame, group, mix, rough, bump, bsdf, out)):
        node.location = (i * 220 - 800, 0)
    return mat


# ------------------------------------------------------------------ UI

class TERRAIN_PG_water(bpy.types.PropertyGroup):
    """Rivers and lakes made from the terrain's layers."""

    rivers_object: bpy.props.PointerProperty(
        name="Rivers", type=bpy.types.Object, description="Rivers curve (made by the add-on)")
    lakes_object: bpy.props.PointerProperty(
        name="Lakes", type=bpy.types.Object, description="Lakes mesh (made by the add-on)")
    stream_threshold: bpy.props.FloatProperty(
        name="Stream Threshold", default=0.5, min=0.01, max=1.0,
        description="Stream value (0..1) from which a cell counts as a river channel")
    min_points: bpy.props.IntProperty(
        name="Min Length", default=4, min=2, max=10000,
        description="Rivers shorter than this many cells are left out")
    river_width: bpy.props.FloatProperty(
        name="River Width", default=0.0, min=0.0, soft_max=100.0, subtype='DISTANCE',
        description="Bevel depth of a river with flow 1, local units (0: one cell)")


class TERRAIN_OT_water_data(bpy.types.Operator):
    """Make the rivers curve, the lakes mesh (with animated shore waves) and the
    distance/direction-to-shore attributes from the terrain's stream and pool layers"""

    bl_idname = "terrain.water_data"
    bl_label = "Rivers and Lakes as Data"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return gridio.poll_grid(cls, context)

    @reports_user_errors
    def execute(self, context):
        """Rivers, then lakes. A kind with nothing to make (WaterDataError: no stream
        layer, no pools) is a warning and the other is still made; cancelled when
        neither is. Any other user error goes to the boundary (after the warnings)."""
        obj = context.active_object
        s = obj.terrain_water
        made, missing = [], []
        try:
            for make in (lambda: update_rivers(obj, s.stream_threshold, s.min_points,
                                               s.river_width),
                         lambda: update_lakes(obj)):
                try:
                    made.append(make().name)
                except WaterDataError as exc:  # nothing of this kind: not an error
                    missing.append(str(exc))
        finally:
            for note in missing:
                self.report({'WARNING'}, note)
        if not made:
            return {'CANCELLED'}
        self.report({'INFO'}, "Made " + ", ".join(made))
        return {'FINISHED'}


class TERRAIN_PT_water_data(ErosionSubPanel, bpy.types.Panel):
    """Rivers and lakes as curves and meshes, shore waves, the ice surface"""

    bl_idname = "TERRAIN_PT_water_data"
    bl_label = "Rivers and Lakes as Data"

    def draw(self, context):
        s = context.active_object.terrain_water
        layout = self.layout
        layout.use_property_split = True
        col = layout.column(align=True)
        col.prop(s, "stream_threshold")
        col.prop(s, "min_points")
        col.prop(s, "river_width")
        layout.operator(TERRAIN_OT_water_data.bl_idname, icon='MOD_FLUIDSIM')
        for key in ("rivers_object", "lakes_object"):
            if getattr(s, key) is not None:
                layout.label(text=getattr(s, key).name, icon='CHECKMARK')
        layout.label(text=f"Waves: material '{WAVES}' (renders only)", icon='INFO')
        ice_surface.draw(layout.box(), context.active_object)


classes = (TERRAIN_PG_water, TERRAIN_OT_water_data, TERRAIN_PT_water_data)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    bpy.types.Object.terrain_water = bpy.props.PointerProperty(type=TERRAIN_PG_water)


def unregister() -> None:
    del bpy.types.Object.terrain_water
    _unregister_classes()
