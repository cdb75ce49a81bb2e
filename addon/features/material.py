"""A terrain material that reads the layers a run writes: the shader node group
``Terrain Erosion Surface`` and the **Apply Terrain Material** operator.

What it paints, from the bottom up:

- grass, varied by noise, and forest floor where ``te_trees`` (vegetation) is high;
- sediment (``te_sediment``: alluvial flats, fans, colluvium at the foot of slopes);
- bare rock where the surface is steeper than Rock Slope (from the geometry normal's
  world Z, so any mesh works, eroded or not); with Rock Layers on, in the colour of the
  layer exposed there (``te_rock_layer``, through a constant colour ramp of the column's
  colours in the material, fed to the group's Layer Color with Layer Mix 1), so the
  bands in the render are the bands in the geometry;
- wet, dark, glossier ground along streams (``te_streams``) and around pools
  (``te_pools``), water-coloured channels where the stream is strong;
- glacier ice in Ice Color where the mesh has ice (``te_ice``: none at 0, full at Ice
  Depth);
- snow where it was simulated: on a mesh with a snow depth layer (``te_snow``) the
  cover is a smoothstep of that depth, none at 0 and full at Snow Depth (Snow Depth
  Mix 1, set by the add-on when the mesh has the layer). Without it, snow lies above
  Snow Line (the object's **local** Z, like the mesh's vertex coordinates), faded over
  Snow Blend and sliding off slopes above Snow Max Slope;
- water-coloured, glossy lake beds where ``te_pools`` is high (the lakes mesh or the
  water surface object, when present, puts the water surface on top).

A missing attribute reads 0 in both render engines, so the material also works on a
mesh that was never eroded (grass, rock and snow by slope and height). No image files:
all variation is procedural noise in the object's local coordinates, its size set
from the object's width when the material is made.

The layers are found by the names simcore's field descriptions give them; the add-on
keeps Snow Depth Mix in step with the mesh when the material is applied and after
every run or Reset (``data.job.LAYERS_CHANGED``). The group carries a version number
(:data:`VERSION`): an older group of ours is made again when a file is used, the
artist's values of its inputs kept.
"""

from __future__ import annotations

import bpy

from ..data.compat import new_node_material
from ..data.grid import COLOR_LAYERS, FLOAT_LAYERS, detect_grid, read_positions
from ..data.job import LAYERS_CHANGED
from ..simcore.errors import UserError
from ..ui.boundary import reports_user_errors
from ..ui.rock_props import ROCK_CHANGED

GROUP = "Terrain Erosion Surface"
MATERIAL = "Terrain Erosion Surface"
#: The 0..1 color layers the group reads (names from simcore's field descriptions).
SEDIMENT, STREAMS, POOLS, TREES = (COLOR_LAYERS[k] for k in ("sediment", "stream", "pool",
                                                              "vegetation"))
#: The float layers of lying snow and glacier ice (local units), by the names of their
#: terrain arrays ("te_snow", "te_ice" when no field of that name is declared: no mesh
#: has them then, and they read 0)
SNOW, ICE = (FLOAT_LAYERS.get(k, f"te_{k}") for k in ("snow", "ice"))
#: World thicknesses (metres) at which simulated snow covers the ground fully and ice
#: shows fully in Ice Color: the group's Snow Depth and Ice Depth in local units, set
#: from the terrain's real scale when they are 0
SNOW_FULL_DEPTH = 0.3
ICE_FULL_DEPTH = 0.5
#: the group's float mix choosing between the snow line and the simulated snow
SNOW_SOURCE = "Snow Source"

#: Group inputs: name -> (socket type, default). Lengths are the object's local units;
#: angles are degrees from horizontal.
INPUTS = {
    "Snow Line": ('NodeSocketFloat', 1.0),
    "Snow Blend": ('NodeSocketFloat', 0.1),
    "Snow Max Slope": ('NodeSocketFloat', 50.0),
    "Rock Slope": ('NodeSocketFloat', 32.0),
    "Variation": ('NodeSocketFloat', 1.0),
    "Detail Size": ('NodeSocketFloat', 0.05),
    "Grass Color": ('NodeSocketColor', (0.045, 0.1, 0.02, 1)),
    "Dry Grass Color": ('NodeSocketColor', (0.2, 0.155, 0.06, 1)),
    "Forest Color": ('NodeSocketColor', (0.02, 0.05, 0.015, 1)),
    "Sediment Color": ('NodeSocketColor', (0.26, 0.2, 0.12, 1)),
    "Rock Color": ('NodeSocketColor', (0.2, 0.16, 0.12, 1)),
    "Wet Color": ('NodeSocketColor', (0.035, 0.04, 0.03, 1)),
    "Snow Color": ('NodeSocketColor', (0.85, 0.88, 0.92, 1)),
    "Water Color": ('NodeSocketColor', (0.01, 0.045, 0.06, 1)),
    "Layer Color": ('NodeSocketColor', (0.2, 0.16, 0.12, 1)),
    "Layer Mix": ('NodeSocketFloat', 0.0),
    "Snow Depth Mix": ('NodeSocketFloat', 0.0),
    "Snow Depth": ('NodeSocketFloat', 0.0),
    "Ice Color": ('NodeSocketColor', (0.55, 0.7, 0.82, 1)),
    "Ice Depth": ('NodeSocketFloat', 0.0),
}
DOC = {
    "Snow Line": "Height of the snow line, in the object's local units (its vertex Z)",
    "Snow Blend": "Height band over which snow fades in, local units",
    "Snow Max Slope": "Degrees: snow slides off slopes steeper than this",
    "Rock Slope": "Degrees: slopes steeper than this show bare rock",
    "Variation": "Strength of the noise that breaks up every boundary (0: none)",
    "Detail Size": "Size of the noise's features, local units (apply sets 1/40 of the "
                   "object's width)",
    "Layer Color": "Colour of the rock layer exposed here (the material links the rock "
                   "column's colours by te_rock_layer)",
    "Layer Mix": "1: bare rock takes Layer Color instead of Rock Color (set by the add-on "
                 "when Rock Layers is on)",
    "Snow Depth Mix": "1: snow lies where it was simulated (the te_snow depth), 0: above "
                      "Snow Line (set by the add-on: 1 when the mesh has te_snow)",
    "Snow Depth": "Snow depth that covers the ground fully, local units (0: set from the "
                  "terrain's real size, 0.3 m)",
    "Ice Depth": "Ice thickness shown fully in Ice Color, local units (0: set from the "
                 "terrain's real size, 0.5 m)",
}
#: the rock column's nodes in a material (made again by sync_rock_colors): name prefix
ROCK_NODES = "TE Rock Layers"
#: layers one colour ramp holds (Blender's limit of ramp elements)
RAMP_SIZE = 32
#: the float attribute with the exposed rock layer (index + depth fraction)
ROCK_LAYER = FLOAT_LAYERS["rock_layer"]


class _Builder:
    """Small helpers to wire a shader node tree readably."""

    def __init__(self, tree: bpy.types.NodeTree):
        self.tree, self.nodes = tree, tree.nodes

    def _set(self, socket, value) -> None:
        if value is None:
            return
        if isinstance(value, (int, float, tuple)):
            socket.default_value = value
        else:
            self.tree.links.new(value, socket)

    def math(self, op: str, a, b=None, c=None, clamp: bool = False):
        node = self.nodes.new("ShaderNodeMath")
        node.operation, node.use_clamp = op, clamp
        for i, v in enumerate((a, b, c)):
            self._set(node.inputs[i], v)
        return node.outputs[0]

    def ramp(self, value, lo, hi, to_lo=0.0, to_hi=1.0):
        """Smoothstep of ``value`` from ``lo`` to ``hi`` (numbers or sockets), clamped."""
        node = self.nodes.new("ShaderNodeMapRange")
        node.interpolation_type = 'SMOOTHSTEP'
        node.clamp = True
        for name, v in (("Value", value), ("From Min", lo), ("From Max", hi),
                        ("To Min", to_lo), ("To Max", to_hi)):
            self._set(node.inputs[name], v)
        return node.outputs["Result"]

    def mix_float(self, factor, a, b, name: str = ""):
        """Float mix (ShaderNodeMix, 3.4+) of ``a`` and ``b`` by ``factor``."""
        node = self.nodes.new("ShaderNodeMix")
        node.data_type, node.clamp_factor = 'FLOAT', True
        if name:
            node.name = node.label = name
        ins = {s.identifier: s for s in node.inputs}
        self._set(ins["Factor_Float"], factor)
        self._set(ins["A_Float"], a)
        self._set(ins["B_Float"], b)
        return next(s for s in node.outputs if s.identifier == "Result_Float")

    def mix(self, factor, a, b, blend: str = 'MIX'):
        """Colour mix (ShaderNodeMix, 3.4+) of ``a`` and ``b`` by ``factor``."""
        node = self.nodes.new("ShaderNodeMix")
        node.data_type, node.blend_type, node.clamp_factor = 'RGBA', blend, True
        # several sockets share the names A, B and Result (one per data type)
        ins = {s.identifier: s for s in node.inputs}
        self._set(ins["Factor_Float"], factor)
        self._set(ins["A_Color"], a)
        self._set(ins["B_Color"], b)
        return next(s for s in node.outputs if s.identifier == "Result_Color")

    def attribute(self, name: str):
        node = self.nodes.new("ShaderNodeAttribute")
        node.attribute_type, node.attribute_name = 'GEOMETRY', name
        node.label = name
        return node.outputs["Fac"]

    def noise(self, vector, scale, detail: float = 4.0):
        node = self.nodes.new("ShaderNodeTexNoise")
        self._set(node.inputs["Vector"], vector)
        self._set(node.inputs["Scale"], scale)
        node.inputs["Detail"].default_value = detail
        return node.outputs["Fac"]


#: custom property that marks the add-on's node group (a group the artist made and named
#: like ours is theirs: never rebuilt); its value is the group's version
MARK = "terrain_erosion_surface"
#: the group's version: 1 the rock layers' inputs, 2 the simulated snow and ice. Raise
#: it with every change of the group's nodes, so files made before are brought up to date
VERSION = 2
#: the inputs of the group before the rock layers' (an unmarked group with all of them is
#: ours from an older version)
OLD_INPUTS = frozenset(INPUTS) - {"Layer Color", "Layer Mix", "Snow Depth Mix", "Snow Depth",
                                  "Ice Color", "Ice Depth"}


def is_ours(tree: bpy.types.NodeTree | None) -> bool:
    """Whether ``tree`` is the add-on's surface group (marked, or an older version of it:
    named like it, with all of its inputs of then)."""
    if tree is None or tree.bl_idname != 'ShaderNodeTree':
        return False
    if tree.get(MARK) is not None:
        return True
    have = {item.name for item in tree.interface.items_tree
            if item.item_type == 'SOCKET' and item.in_out == 'INPUT'}
    return tree.name.startswith(GROUP) and OLD_INPUTS <= have


def group_version(tree: bpy.types.NodeTree) -> int:
    """The version of a group of ours (0: unmarked, from before versions)."""
    value = tree.get(MARK)
    return value if isinstance(value, int) else 0


def surface_group() -> bpy.types.NodeTree:
    """The shader node group (made once per file): inputs of :data:`INPUTS`, outputs
    BSDF, Color, Roughness, Snow and Rock (the last two 0..1 masks). A group of the
    artist's named like it stays as it is: ours gets the next free name."""
    for tree in bpy.data.node_groups:
        if is_ours(tree) and (tree.name == GROUP or tree.get(MARK) is not None):
            up_to_date(tree)
            return tree
    tree = bpy.data.node_groups.new(GROUP, 'ShaderNodeTree')
    tree[MARK] = VERSION
    _interface(tree)
    _build(tree)
    return tree


def up_to_date(tree: bpy.types.NodeTree) -> None:
    """A group from an older version (:data:`VERSION`, or without inputs of now) gets
    the inputs it lacks and its nodes made again; the inputs it has keep the artist's
    values. A group of a newer version with every input is left as it is."""
    have = {item.name for item in tree.interface.items_tree
            if item.item_type == 'SOCKET' and item.in_out == 'INPUT'}
    version = group_version(tree)
    if version >= VERSION and set(INPUTS) <= have:
        return
    tree[MARK] = max(version, VERSION)
    tree.nodes.clear()
    _interface(tree)
    _build(tree)


def _interface(tree: bpy.types.NodeTree) -> None:
    """The group's sockets (those it lacks)."""
    iface = tree.interface
    have = {(item.name, item.in_out) for item in iface.items_tree
            if item.item_type == 'SOCKET'}
    for name, (kind, default) in INPUTS.items():
        if (name, 'INPUT') in have:
            continue
        sock = iface.new_socket(name, in_out='INPUT', socket_type=kind)
        sock.default_value = default
        sock.description = DOC.get(name, "")
        if kind == 'NodeSocketFloat':
            sock.min_value = -1e9 if name == "Snow Line" else 0.0
            if name.endswith(" Mix"):
                sock.max_value = 1.0
    outputs = {"BSDF": 'NodeSocketShader', "Color": 'NodeSocketColor',
               "Roughness": 'NodeSocketFloat', "Snow": 'NodeSocketFloat',
               "Rock": 'NodeSocketFloat'}
    for name, kind in outputs.items():
        if (name, 'OUTPUT') not in have:
            iface.new_socket(name, in_out='OUTPUT', socket_type=kind)


def _build(tree: bpy.types.NodeTree) -> None:
    """The group's nodes and links."""
    b, link = _Builder(tree), tree.links.new
    gi, go = b.nodes.new("NodeGroupInput"), b.nodes.new("NodeGroupOutput")
    i = gi.outputs

    # where: local height, slope in degrees, noise in local coordinates / Detail Size
    # (not Generated coordinates: the texture space of a mesh whose heights a script
    # wrote can stay that of the flat grid until reloaded, and the noise then turns into
    # contour stripes)
    texco = b.nodes.new("ShaderNodeTexCoord")
    local = b.nodes.new("ShaderNodeSeparateXYZ")
    link(texco.outputs["Object"], local.inputs["Vector"])
    scaled = b.nodes.new("ShaderNodeVectorMath")
    scaled.operation = 'SCALE'
    link(texco.outputs["Object"], scaled.inputs[0])
    link(b.math('DIVIDE', 1.0, b.math('MAXIMUM', i["Detail Size"], 1e-9)), scaled.inputs["Scale"])
    normal = b.nodes.new("ShaderNodeSeparateXYZ")
    link(b.nodes.new("ShaderNodeNewGeometry").outputs["Normal"], normal.inputs["Vector"])
    slope = b.math('DEGREES', b.math('ARCCOSINE', b.math('MINIMUM', normal.outputs["Z"], 1.0)))
    coarse = b.noise(scaled.outputs["Vector"], 1.0, 3.0)
    fine = b.noise(scaled.outputs["Vector"], 7.0, 2.0)
    jitter = b.math('MULTIPLY', b.math('SUBTRACT', coarse, 0.5), i["Variation"])  # ~ +-0.2
    fine_jitter = b.math('MULTIPLY', b.math('SUBTRACT', fine, 0.5), i["Variation"])

    # layers (0 where missing)
    sediment = b.ramp(b.math('ADD', b.attribute(SEDIMENT), b.math('MULTIPLY', jitter, 0.3)),
                      0.08, 0.45)
    forest = b.ramp(b.math('ADD', b.attribute(TREES), b.math('MULTIPLY', fine_jitter, 0.4)),
                    0.05, 0.5)
    streams = b.attribute(STREAMS)
    pools = b.attribute(POOLS)
    banks = b.math('MAXIMUM', b.ramp(streams, 0.18, 0.4), b.ramp(pools, 0.0, 1e-4),
                   clamp=True)
    banks = b.math('MULTIPLY', banks, b.ramp(fine_jitter, -0.45, 0.1))  # patchy
    channel = b.ramp(streams, 0.42, 0.6)
    lake = b.ramp(pools, 1e-4, 1e-3)  # any standing water (gray = depth / (depth + cell))

    # ground: grass (dry and green patches) -> sediment -> forest floor
    dry = b.ramp(b.math('ADD', jitter, b.math('MULTIPLY', slope, 0.01)), -0.05, 0.25)
    color = b.mix(dry, i["Grass Color"], i["Dry Grass Color"])
    color = b.mix(sediment, color, i["Sediment Color"])
    color = b.mix(b.math('MULTIPLY', forest, 0.85), color, i["Forest Color"])
    # rock where steep, with light/dark strata from the fine noise
    rock = b.ramp(b.math('ADD', slope, b.math('MULTIPLY', jitter, 18.0)),
                  b.math('SUBTRACT', i["Rock Slope"], 4.0), b.math('ADD', i["Rock Slope"], 4.0))
    shade = b.ramp(fine, 0.3, 0.7, 0.6, 1.25)
    base = b.mix(i["Layer Mix"], i["Rock Color"], i["Layer Color"])  # the exposed layer's
    rock_color = b.mix(1.0, base, shade, blend='MULTIPLY')  # shade as gray
    color = b.mix(rock, color, rock_color)
    color = b.mix(b.math('MULTIPLY', banks, 0.8), color, i["Wet Color"])
    color = b.mix(channel, color, i["Water Color"])
    # glacier ice where the mesh has it
    ice = b.ramp(b.attribute(ICE), 0.0, b.math('MAXIMUM', i["Ice Depth"], 1e-9))
    color = b.mix(ice, color, i["Ice Color"])
    # snow above the line, thinner where steep, none in channels and lakes
    height = b.math('ADD', local.outputs["Z"],
                    b.math('MULTIPLY', jitter, b.math('MULTIPLY', i["Snow Blend"], 2.0)))
    half = b.math('MULTIPLY', i["Snow Blend"], 0.5)
    snow = b.ramp(height, b.math('SUBTRACT', i["Snow Line"], half),
                  b.math('ADD', i["Snow Line"], half))
    steep = b.ramp(slope, b.math('SUBTRACT', i["Snow Max Slope"], 10.0),
                   b.math('ADD', i["Snow Max Slope"], 5.0))
    snow = b.math('MULTIPLY', snow, b.math('SUBTRACT', 1.0, steep))
    snow = b.math('MULTIPLY', snow, b.math('SUBTRACT', 1.0, b.math('MAXIMUM', channel, lake)),
                  clamp=True)
    # or where it was simulated: a smoothstep of its depth (Snow Depth Mix 1)
    lying = b.ramp(b.attribute(SNOW), 0.0, b.math('MAXIMUM', i["Snow Depth"], 1e-9))
    snow = b.mix_float(i["Snow Depth Mix"], snow, lying, name=SNOW_SOURCE)
    color = b.mix(snow, color, i["Snow Color"])
    color = b.mix(lake, color, i["Water Color"])
    rough = b.math('MULTIPLY_ADD', rock, -0.15, 0.9)                 # rock 0.75, ground 0.9
    rough = b.math('MULTIPLY_ADD', banks, -0.3, rough, clamp=True)  # wet ground 0.6
    rough = b.ramp(ice, 0.0, 1.0, rough, 0.3)
    rough = b.ramp(snow, 0.0, 1.0, rough, 0.55)
    rough = b.ramp(channel, 0.0, 1.0, rough, 0.25)
    rough = b.ramp(lake, 0.0, 1.0, rough, 0.08)

    bump = b.nodes.new("ShaderNodeBump")  # rough rock faces; flat snow, ground and water
    bare = b.math('SUBTRACT', 1.0, b.math('MAXIMUM', b.math('MAXIMUM', snow, ice),
                                          b.math('MAXIMUM', channel, lake)))
    link(b.math('MULTIPLY', b.math('MULTIPLY', rock, bare), 0.25), bump.inputs["Strength"])
    link(fine, bump.inputs["Height"])
    bsdf = b.nodes.new("ShaderNodeBsdfPrincipled")
    link(color, bsdf.inputs["Base Color"])
    link(rough, bsdf.inputs["Roughness"])
    link(bump.outputs["Normal"], bsdf.inputs["Normal"])
    link(bsdf.outputs["BSDF"], go.inputs["BSDF"])
    link(color, go.inputs["Color"])
    link(rough, go.inputs["Roughness"])
    link(snow, go.inputs["Snow"])
    link(rock, go.inputs["Rock"])
    _arrange(tree)


def _arrange(tree: bpy.types.NodeTree) -> None:
    """Lay the nodes out left to right by how many links they are from the group input
    (one column per step, stacked in each), so the group reads when opened."""
    depth: dict[str, int] = {}

    def depth_of(node) -> int:
        if node.name not in depth:
            depth[node.name] = 0  # cycles cannot happen in a shader tree; guards anyway
            ups = [link.from_node for link in tree.links if link.to_node == node]
            depth[node.name] = 1 + max((depth_of(up) for up in ups), default=-1)
        return depth[node.name]

    rows: dict[int, int] = {}
    for node in tree.nodes:
        column = depth_of(node)
        node.location = (column * 220.0, -rows.get(column, 0) * 200.0)
        rows[column] = rows.get(column, 0) + 1


def group_node(mat: bpy.types.Material | None) -> bpy.types.ShaderNodeGroup | None:
    """The ``Terrain Erosion Surface`` group node of ``mat``, if it has one."""
    if mat is None or mat.node_tree is None:
        return None
    for node in mat.node_tree.nodes:
        if node.bl_idname == 'ShaderNodeGroup' and is_ours(node.node_tree):
            return node
    return None


def extent(obj: bpy.types.Object) -> tuple[float, float, float]:
    """Lowest and highest local Z of ``obj``'s vertices and its width (the larger of
    its X and Y spans); (0, 1, 1) for an empty mesh."""
    if len(obj.data.vertices) == 0:
        return 0.0, 1.0, 1.0
    co = read_positions(obj.data)
    span = co[:, :2].max(axis=0) - co[:, :2].min(axis=0)
    return float(co[:, 2].min()), float(co[:, 2].max()), float(max(span.max(), 1e-6))


def snow_settings(low: float, high: float, fraction: float) -> tuple[float, float]:
    """(Snow Line, Snow Blend) in local units: ``fraction`` of the way up from ``low``
    to ``high``, fading in over 8% of the range."""
    span = max(high - low, 1e-6)
    return low + fraction * span, 0.08 * span


def new_material(obj: bpy.types.Object, snow_fraction: float = 0.75) -> bpy.types.Material:
    """A new material ``Terrain Erosion Surface`` (Blender adds .001, ... for more):
    the group node into the Material Output, its snow line set from ``obj``'s height
    range and its noise size from its width."""
    mat = new_node_material(MATERIAL)
    nodes = mat.node_tree.nodes
    for node in list(nodes):
        nodes.remove(node)
    group = nodes.new("ShaderNodeGroup")
    group.node_tree = surface_group()
    group.label = GROUP
    out = nodes.new("ShaderNodeOutputMaterial")
    out.location = (300, 0)
    mat.node_tree.links.new(group.outputs["BSDF"], out.inputs["Surface"])
    low, high, width = extent(obj)
    line, blend = snow_settings(low, high, snow_fraction)
    group.inputs["Snow Line"].default_value = line
    group.inputs["Snow Blend"].default_value = blend
    group.inputs["Detail Size"].default_value = width / 40.0
    return mat


def apply_material(obj: bpy.types.Object, snow_fraction: float = 0.75) -> bpy.types.Material:
    """Put the terrain material on ``obj``'s first slot (added if it has none; on the
    object when the slot is linked to the object, else on the mesh): its own if a slot
    already holds one (kept as the artist tuned it), else a new one. A
    material it takes the first slot from that nothing else uses gets a fake user, so
    it is not lost when the file is saved."""
    me = obj.data
    for mat in shown_materials(obj):
        if group_node(mat) is not None:
            break
    else:
        mat = new_material(obj, snow_fraction)
    if len(me.materials) == 0:
        me.materials.append(mat)
    slot = obj.material_slots[0]
    # the slot shows the object's own material when it is linked to the object: that
    # is where the material must go for the object to show it
    replaced = slot.material
    if slot.link == 'OBJECT':
        slot.material = mat
    else:
        me.materials[0] = mat
    if replaced is not None and replaced != mat and replaced.users == 0:
        replaced.use_fake_user = True  # the artist's material survives a save
    sync_rock_colors(obj)
    sync_layers(obj)
    return mat


def shown_materials(obj: bpy.types.Object) -> list[bpy.types.Material]:
    """The materials ``obj`` shows: each slot's (the object's own where the slot is
    linked to the object, else the mesh's)."""
    return [slot.material for slot in obj.material_slots if slot.material is not None]


def has_layer(me: bpy.types.Mesh, name: str) -> bool:
    """Whether ``me`` has the float layer ``name`` (FLOAT per POINT, as the add-on
    writes it)."""
    attr = me.attributes.get(name)
    return attr is not None and attr.data_type == 'FLOAT' and attr.domain == 'POINT'


def _local_depths(obj: bpy.types.Object) -> tuple[float, float] | None:
    """:data:`SNOW_FULL_DEPTH` and :data:`ICE_FULL_DEPTH` in ``obj``'s local units (by
    its Real Size and Vertical Exaggeration); None for a mesh that is no grid."""
    settings = getattr(obj, "terrain_erosion", None)  # None: the add-on is not registered
    if settings is None:
        return None
    try:
        g = detect_grid(obj.data)
        scale = settings.real_scale(g.rows, g.cols, g.cell_size)
    except UserError:
        return None
    return (float(scale.local_height(SNOW_FULL_DEPTH)),
            float(scale.local_height(ICE_FULL_DEPTH)))


def sync_layers(obj: bpy.types.Object) -> None:
    """Keep the terrain materials of ``obj`` in step with its layers: snow where it
    was simulated when the mesh has a snow depth layer (Snow Depth Mix 1), else above
    the snow line (0); Snow Depth and Ice Depth, when 0, set from the terrain's real
    size (:data:`SNOW_FULL_DEPTH`, :data:`ICE_FULL_DEPTH`)."""
    if obj is None or obj.type != 'MESH':
        return
    simulated = has_layer(obj.data, SNOW)
    depths = None
    for mat in shown_materials(obj):
        node = group_node(mat)
        if node is None or mat.library is not None or node.node_tree.library is not None:
            continue  # linked from a library: not ours to change
        up_to_date(node.node_tree)
        node.inputs["Snow Depth Mix"].default_value = 1.0 if simulated else 0.0
        for k, name in enumerate(("Snow Depth", "Ice Depth")):
            if node.inputs[name].default_value <= 0.0:
                depths = depths or _local_depths(obj)
                if depths is not None:
                    node.inputs[name].default_value = depths[k]


def _rock_colors(obj: bpy.types.Object) -> list[tuple[float, float, float]]:
    """The colours of ``obj``'s rock layers, top down; [] when Rock Layers is off."""
    settings = getattr(obj, "terrain_erosion", None)  # None: the add-on is not registered
    rock = settings.rock if settings is not None else None
    return rock.colors() if rock is not None and rock.enabled else []


def sync_rock_colors(obj: bpy.types.Object) -> None:
    """Make the terrain materials of ``obj`` colour bare rock by its rock layers: the
    ``te_rock_layer`` attribute's whole part picks a colour of constant colour ramps
    (32 layers each) made from the column's colours, into the group's Layer Color,
    Layer Mix 1. Rock Layers off: those nodes go and Layer Mix is 0 (the material as
    before)."""
    if obj is None or obj.type != 'MESH':
        return
    colors = _rock_colors(obj)
    for mat in shown_materials(obj):
        node = group_node(mat)
        if node is None:
            continue
        up_to_date(node.node_tree)
        nodes = mat.node_tree.nodes
        for old in [n for n in nodes if n.name.startswith(ROCK_NODES)]:
            nodes.remove(old)
        node.inputs["Layer Mix"].default_value = 1.0 if colors else 0.0
        if colors:
            _layer_color_nodes(mat.node_tree, node, colors)


def _layer_color_nodes(tree, node, colors) -> None:
    """attribute -> floor -> ramp(s) -> the group node's Layer Color."""
    made = []

    def new(kind: str):
        n = tree.nodes.new(kind)
        n.name = n.label = f"{ROCK_NODES} {len(made)}"
        n.location = (node.location.x - 900 + 200 * (len(made) % 4),
                      node.location.y - 500 - 200 * (len(made) // 4))
        made.append(n)
        return n

    def math(op: str, a, b):
        n = new("ShaderNodeMath")
        n.operation = op
        for k, v in enumerate((a, b)):
            if isinstance(v, (int, float)):
                n.inputs[k].default_value = v
            else:
                tree.links.new(v, n.inputs[k])
        return n.outputs[0]

    attr = new("ShaderNodeAttribute")
    attr.attribute_type, attr.attribute_name = 'GEOMETRY', ROCK_LAYER
    index = math('FLOOR', attr.outputs["Fac"], 0.0)  # the layer's number
    result = None
    for first in range(0, len(colors), RAMP_SIZE):
        part = colors[first:first + RAMP_SIZE]
        m = len(part)
        ramp = new("ShaderNodeValToRGB")
        cr = ramp.color_ramp
        cr.interpolation = 'CONSTANT'
        while len(cr.elements) > 1:
            cr.elements.remove(cr.elements[-1])
        cr.elements[0].position = 0.0
        for k in range(1, m):
            cr.elements.new(k / m)
        for element, rgb in zip(cr.elements, part, strict=True):
            element.color = (*rgb, 1.0)
        # (index - first + 0.5) / m: the middle of its colour's stretch of the ramp
        t = math('DIVIDE', math('ADD', index, 0.5 - first), float(m))
        tree.links.new(t, ramp.inputs["Fac"])
        if result is None:
            result = ramp.outputs["Color"]
            continue
        mix = new("ShaderNodeMix")
        mix.data_type = 'RGBA'
        ins = {s.identifier: s for s in mix.inputs}
        tree.links.new(math('GREATER_THAN', index, first - 0.5), ins["Factor_Float"])
        tree.links.new(result, ins["A_Color"])
        tree.links.new(ramp.outputs["Color"], ins["B_Color"])
        result = next(s for s in mix.outputs if s.identifier == "Result_Color")
    tree.links.new(result, node.inputs["Layer Color"])


class TERRAIN_OT_apply_material(bpy.types.Operator):
    """Shade the active mesh with the Terrain Erosion Surface material: rock on steep
    slopes, sediment, grass and forest, wet banks, snow above a height, water in lakes,
    read from the layers a run writes (tweak it in the material's group node)"""

    bl_idname = "terrain.apply_material"
    bl_label = "Apply Terrain Material"
    bl_options = {'REGISTER', 'UNDO'}

    snow_line: bpy.props.FloatProperty(
        name="Snow Line", default=0.75, min=0.0, max=1.0, subtype='FACTOR',
        description="Where snow starts on a new material, as a fraction of the object's "
                    "height range (the group's Snow Line input holds it in local units)")

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != 'MESH':
            cls.poll_message_set("Select a mesh object (the terrain)")
            return False
        if obj.library is not None or obj.data.library is not None:
            cls.poll_message_set(f"'{obj.name}' is linked from a library: make it local")
            return False
        return True

    @reports_user_errors
    def execute(self, context):
        obj = context.active_object
        before = obj.data.materials[0] if len(obj.data.materials) else None
        mat = apply_material(obj, self.snow_line)
        inputs = group_node(mat).inputs
        snow = (f"snow where simulated ({SNOW})" if inputs["Snow Depth Mix"].default_value
                else f"snow line at {inputs['Snow Line'].default_value:.4g} local units")
        kept = (f"; '{before.name}' is kept with a fake user" if before is not None
                and before != mat and before.use_fake_user and before.users == 1 else "")
        self.report({'INFO'}, f"'{obj.name}' uses material '{mat.name}' ({snow}; tweak "
                              "its group node's inputs)" + kept)
        return {'FINISHED'}


classes = (TERRAIN_OT_apply_material,)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    ROCK_CHANGED.append(sync_rock_colors)
    LAYERS_CHANGED.append(sync_layers)


def unregister() -> None:
    while sync_layers in LAYERS_CHANGED:
        LAYERS_CHANGED.remove(sync_layers)
    while sync_rock_colors in ROCK_CHANGED:
        ROCK_CHANGED.remove(sync_rock_colors)
    _unregister_classes()

