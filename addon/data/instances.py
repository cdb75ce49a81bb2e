"""Renderable extras next to the terrain: a point object carrying the trees (positions and
sizes, instanced by a Geometry Nodes modifier) and a water surface object for pools.

Both are children of the terrain object with an identity parent inverse, so their
local coordinates are the terrain's local coordinates. They are found through pointers
in the terrain's settings, never by name alone.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..simcore.analysis.layers import tree_points
from .compat import new_node_material, set_modifier_input
from .grid import Grid, read_positions
from .objects import child_object, remove_object
from .scale import RealScale

TREE_GROUP = "Terrain Erosion Trees"
DEFAULT_TREE = "TE Default Tree"
WATER_MATERIAL = "TE Water"


def _set_vertices(me: bpy.types.Mesh, co: np.ndarray) -> None:
    """Replace ``me``'s geometry by loose vertices at ``co`` (n, 3)."""
    me.clear_geometry()
    me.vertices.add(len(co))
    me.attributes["position"].data.foreach_set(
        "vector", np.ascontiguousarray(co, np.float32).ravel())


def default_tree() -> bpy.types.Object:
    """A simple low-poly tree (trunk + crown, 1 unit tall), hidden, made once."""
    obj = bpy.data.objects.get(DEFAULT_TREE)
    if obj is not None and obj.type == 'MESH':
        return obj
    sides = 8
    a = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    ring = np.stack([np.cos(a), np.sin(a)], 1)
    verts = [(0.0, 0.0, 1.0)]                                       # crown tip
    verts += [(0.35 * x, 0.35 * y, 0.3) for x, y in ring]           # crown base
    verts += [(0.06 * x, 0.06 * y, 0.0) for x, y in ring]           # trunk bottom
    verts += [(0.06 * x, 0.06 * y, 0.3) for x, y in ring]           # trunk top
    faces = [(0, 1 + i, 1 + (i + 1) % sides) for i in range(sides)]
    faces += [tuple(1 + i for i in reversed(range(sides)))]
    faces += [(1 + sides + i, 1 + sides + (i + 1) % sides, 1 + 2 * sides + (i + 1) % sides,
               1 + 2 * sides + i) for i in range(sides)]
    me = bpy.data.meshes.new(DEFAULT_TREE)
    me.from_pydata(verts, [], faces)
    me.update()
    mat = new_node_material("TE Tree")
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (0.025, 0.075, 0.02, 1)  # conifer green
    bsdf.inputs["Roughness"].default_value = 0.8
    me.materials.append(mat)
    obj = bpy.data.objects.new(DEFAULT_TREE, me)
    obj.hide_viewport = obj.hide_render = True
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _tree_node_group() -> bpy.types.NodeTree:
    """Instance the object or collection from the modifier inputs on every point,
    scaled by the point's 'size' attribute times 'Scale'."""
    group = bpy.data.node_groups.get(TREE_GROUP)
    if group is not None:
        return group
    group = bpy.data.node_groups.new(TREE_GROUP, 'GeometryNodeTree')
    iface = group.interface
    iface.new_socket("Geometry", in_out='INPUT', socket_type='NodeSocketGeometry')
    iface.new_socket("Tree", in_out='INPUT', socket_type='NodeSocketObject')
    iface.new_socket("Trees Collection", in_out='INPUT', socket_type='NodeSocketCollection')
    iface.new_socket("Use Collection", in_out='INPUT', socket_type='NodeSocketBool')
    scale = iface.new_socket("Scale", in_out='INPUT', socket_type='NodeSocketFloat')
    scale.default_value, scale.min_value = 1.0, 0.0
    iface.new_socket("Geometry", in_out='OUTPUT', socket_type='NodeSocketGeometry')
    n, link = group.nodes, group.links.new
    gin, gout = n.new("NodeGroupInput"), n.new("NodeGroupOutput")
    obj_info = n.new("GeometryNodeObjectInfo")
    coll_info = n.new("GeometryNodeCollectionInfo")
    coll_info.inputs["Separate Children"].default_value = True
    coll_info.inputs["Reset Children"].default_value = True
    switch = n.new("GeometryNodeSwitch")
    switch.input_type = 'GEOMETRY'
    size = n.new("GeometryNodeInputNamedAttribute")
    size.data_type = 'FLOAT'
    size.inputs["Name"].default_value = "size"
    mult = n.new("ShaderNodeMath")
    mult.operation = 'MULTIPLY'
    rand = n.new("FunctionNodeRandomValue")
    rand.data_type = 'INT'
    rand.inputs["Max"].default_value = 1000
    rot = n.new("FunctionNodeRandomValue")
    rot.data_type = 'FLOAT_VECTOR'
    rot.inputs["Max"].default_value = (0, 0, 6.2831853)
    inst = n.new("GeometryNodeInstanceOnPoints")
    link(gin.outputs["Tree"], obj_info.inputs["Object"])
    link(gin.outputs["Trees Collection"], coll_info.inputs["Collection"])
    link(gin.outputs["Use Collection"], switch.inputs["Switch"])
    link(obj_info.outputs["Geometry"], switch.inputs["False"])
    link(coll_info.outputs["Instances"], switch.inputs["True"])
    link(gin.outputs["Geometry"], inst.inputs["Points"])
    link(switch.outputs["Output"], inst.inputs["Instance"])
    link(gin.outputs["Use Collection"], inst.inputs["Pick Instance"])
    link(rand.outputs["Value"], inst.inputs["Instance Index"])
    link(rot.outputs["Value"], inst.inputs["Rotation"])
    link(size.outputs["Attribute"], mult.inputs[0])
    link(gin.outputs["Scale"], mult.inputs[1])
    link(mult.outputs["Value"], inst.inputs["Scale"])
    link(inst.outputs["Instances"], gout.inputs["Geometry"])
    return group


def update_trees(terrain: bpy.types.Object, grid: Grid, trees: np.ndarray,
                 height: np.ndarray) -> bpy.types.Object:
    """Create or update the tree point object: one vertex per tree on the surface
    (``height`` in cell units), a 'size' attribute, and the instancing modifier."""
    scale = terrain.terrain_erosion.real_scale(grid.rows, grid.cols, grid.cell_size)
    co, size = tree_points(trees, height, grid.x0, grid.y0, grid.cell_x, grid.cell_y,
                           scale.height_unit)
    return set_trees(terrain, co, size, scale)


def set_trees(terrain: bpy.types.Object, co: np.ndarray, size: np.ndarray,
              scale: RealScale) -> bpy.types.Object:
    """:func:`update_trees` from prepared points: (k, 3) float32 local positions and
    (k,) float32 sizes (simcore.analysis.layers.tree_points), on a grid of real size
    ``scale``."""
    s = terrain.terrain_erosion
    obj = s.trees_object
    if obj is None or obj.type != 'MESH':
        obj = child_object(terrain, f"{terrain.name} Trees")
        s.trees_object = obj
    me = obj.data
    _set_vertices(me, co)
    me.attributes.new("size", 'FLOAT', 'POINT').data.foreach_set(
        "value", np.ascontiguousarray(size, np.float32))
    me.update()
    mod = obj.modifiers.get("Trees")
    if mod is None or mod.type != 'NODES':
        mod = obj.modifiers.new("Trees", 'NODES')
        mod.node_group = _tree_node_group()
    ids = {item.name: item.identifier for item in mod.node_group.interface.items_tree
           if item.item_type == 'SOCKET' and item.in_out == 'INPUT'}
    set_modifier_input(mod, ids["Tree"], s.tree_object or default_tree())
    set_modifier_input(mod, ids["Trees Collection"], s.tree_collection)
    set_modifier_input(mod, ids["Use Collection"], s.tree_collection is not None)
    set_modifier_input(mod, ids["Scale"], tree_height(s, scale))
    obj.update_tag()
    return obj


def tree_height(settings, scale: RealScale) -> float:
    """Height of a full-grown tree in local units: the Tree Scale override when set,
    else the Trees process' ``tree_height`` (metres, the same at any cell size) at the
    grid's real size: trees keep their proportions, so the vertical exaggeration does
    not stretch them."""
    if settings.tree_scale > 0:
        return float(settings.tree_scale)
    return scale.local_length(float(settings.trees.tree_height))


def read_trees(terrain: bpy.types.Object, grid: Grid) -> np.ndarray:
    """Trees stored on the tree object, as simcore rows (column, row, size)."""
    obj = terrain.terrain_erosion.trees_object
    if obj is None or obj.type != 'MESH' or len(obj.data.vertices) == 0:
        return np.zeros((0, 3))
    me = obj.data
    co = read_positions(me)
    size = np.ones(len(co), np.float32)
    attr = me.attributes.get("size")
    if attr is not None and attr.data_type == 'FLOAT' and attr.domain == 'POINT':
        attr.data.foreach_get("value", size)
    out = np.empty((len(co), 3))
    out[:, 0] = (co[:, 0] - grid.x0) / grid.cell_x
    out[:, 1] = (co[:, 1] - grid.y0) / grid.cell_y
    out[:, 2] = size
    # points moved or a re-gridded mesh: keep only trees that stand on the grid
    inside = ((out[:, 0] >= 0) & (out[:, 0] <= grid.cols - 1) & (out[:, 1] >= 0)
              & (out[:, 1] <= grid.rows - 1) & np.isfinite(out).all(1))
    return out[inside]


def _water_material() -> bpy.types.Material:
    """Clear blue water where the 'te_wet' attribute is 1, fully transparent where dry."""
    mat = bpy.data.materials.get(WATER_MATERIAL)
    if mat is None:
        mat = new_node_material(WATER_MATERIAL)
        nodes, links = mat.node_tree.nodes, mat.node_tree.links
        bsdf = nodes["Principled BSDF"]
        bsdf.inputs["Base Color"].default_value = (0.02, 0.09, 0.14, 1)
        bsdf.inputs["Roughness"].default_value = 0.05
        bsdf.inputs["Transmission Weight"].default_value = 0.6
        wet = nodes.new("ShaderNodeAttribute")
        wet.attribute_type, wet.attribute_name = 'GEOMETRY', "te_wet"
        clear = nodes.new("ShaderNodeBsdfTransparent")
        mix = nodes.new("ShaderNodeMixShader")
        links.new(wet.outputs["Fac"], mix.inputs["Fac"])
        links.new(clear.outputs["BSDF"], mix.inputs[1])
        links.new(bsdf.outputs["BSDF"], mix.inputs[2])
        links.new(mix.outputs["Shader"], nodes["Material Output"].inputs["Surface"])
    return mat


def ensure_water(terrain: bpy.types.Object, grid: Grid) -> bpy.types.Object:
    """The water surface object of ``terrain``, made if missing: the terrain's
    topology (a copy of its mesh without our layers; about 0.3 s at 2048², so a live
    run makes it before its first tick) with the water material."""
    s = terrain.terrain_erosion
    obj = s.water_object
    if obj is None or obj.type != 'MESH' or len(obj.data.vertices) != grid.rows * grid.cols:
        if obj is not None:
            remove_object(obj)
        me = terrain.data.copy()
        for name in [a.name for a in me.attributes if a.name.startswith("te_")]:
            me.attributes.remove(me.attributes[name])
        # the copy shares the terrain's positions until one of them is accessed, which
        # then copies them (0.1 s at 2048²): let the water take its own now, not a tick
        read_positions(me)
        me.materials.clear()
        me.materials.append(_water_material())
        me.name = f"{terrain.name} Water"
        obj = bpy.data.objects.new(me.name, me)
        for coll in terrain.users_collection:
            coll.objects.link(obj)
        obj.parent = terrain
        obj.matrix_parent_inverse.identity()
        s.water_object = obj
    return obj


def set_water(obj: bpy.types.Object, co: np.ndarray, wet: np.ndarray) -> None:
    """Write prepared water vertices: flat (n * 3) float32 positions and the (n,)
    float32 ``te_wet`` layer (simcore.analysis.layers.water_vertices)."""
    from .grid import ensure_attribute
    me = obj.data
    me.attributes["position"].data.foreach_set("vector", co)
    ensure_attribute(me, "te_wet", 'FLOAT').data.foreach_set("value", wet)
    me.update()


