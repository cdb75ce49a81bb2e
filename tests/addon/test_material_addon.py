"""The terrain material (addon/features/material.py) in real Blender (bpy module): the operator
puts it on a terrain, and it renders headless in Cycles and EEVEE with snow above the
snow line and rock below."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from blender_helpers import add_grid, positions, render_pixels, set_z, staged_addon, top_view

te = staged_addon()

SLOPE = 36.0  # degrees: steeper than Rock Slope (32), gentler than Snow Max Slope (50)


def cone(n=48, size=2.0):
    """A grid shaped as a cone of slope SLOPE around the origin, apex at 0.73 * size/2
    (no te_* layers at all: they must read as 0)."""
    obj = add_grid(bpy, n=n, size=size, name="Terrain")
    xy = positions(obj.data)[:, :2]
    r = np.hypot(xy[:, 0], xy[:, 1])
    set_z(obj.data, math.tan(math.radians(SLOPE)) * np.maximum(size / 2 - r, 0.0))
    bpy.ops.object.shade_smooth()
    return obj




def test_apply_material_adds_then_reuses_it(blender):
    obj = cone()
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    mat = obj.data.materials[0]
    node = te.features.material.group_node(mat)
    assert node is not None and node.node_tree.name == te.features.material.GROUP
    low, high, width = te.features.material.extent(obj)
    assert width == pytest.approx(2.0)
    assert node.inputs["Detail Size"].default_value == pytest.approx(2.0 / 40)
    assert low == pytest.approx(0.0, abs=1e-6) and high > 0.5
    assert node.inputs["Snow Line"].default_value == pytest.approx(low + 0.75 * (high - low))
    node.inputs["Snow Line"].default_value = 0.123  # the artist's tweak is kept
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    assert obj.data.materials[0] == mat and len(obj.data.materials) == 1
    assert node.inputs["Snow Line"].default_value == pytest.approx(0.123)
    # a second terrain gets its own material (its own snow line), the same group
    other = add_grid(bpy, n=8, name="Other")
    bpy.context.view_layer.objects.active = other
    assert bpy.ops.terrain.apply_material(snow_line=0.5) == {'FINISHED'}
    assert other.data.materials[0] != mat
    assert te.features.material.group_node(other.data.materials[0]).node_tree == node.node_tree
    bpy.ops.object.light_add(type='SUN')
    assert "mesh" in str(pytest.raises(RuntimeError, bpy.ops.terrain.apply_material).value)



def test_the_material_it_replaces_is_not_lost(blender):
    """The artist's own material in the first slot keeps a (fake) user, so a save
    keeps it; it was left with no user and dropped."""
    obj = cone()
    own = bpy.data.materials.new("Artist's rock")
    obj.data.materials.append(own)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    assert te.features.material.group_node(obj.data.materials[0]) is not None
    assert own.users >= 1 and own.use_fake_user

@pytest.mark.compat
def test_a_group_or_material_of_the_artists_named_like_ours_is_left_alone(blender):
    """The artist's own shader group called like ours keeps its nodes and inputs (ours
    takes the next free name), a geometry group or a plain material of that name is no
    obstacle, and the object shows the terrain material."""
    theirs = bpy.data.node_groups.new(te.features.material.GROUP, 'ShaderNodeTree')
    theirs.interface.new_socket("Mine", in_out='INPUT', socket_type='NodeSocketFloat')
    theirs.nodes.new("ShaderNodeMath")
    bpy.data.node_groups.new(te.features.material.GROUP + " geo", 'GeometryNodeTree')
    bpy.data.materials.new(te.features.material.MATERIAL)
    obj = cone(n=8)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    assert len(theirs.nodes) == 1 and [i.name for i in theirs.interface.items_tree] == ["Mine"]
    node = te.features.material.group_node(obj.material_slots[0].material)
    assert node is not None and node.node_tree != theirs
    assert te.features.material.surface_group() == node.node_tree, "found again, not remade"


@pytest.mark.compat
def test_a_slot_linked_to_the_object_gets_the_material_where_it_shows(blender):
    """With the first slot linked to the object, the object shows the object's material:
    that is where the terrain material goes (on the mesh it would change nothing)."""
    obj = cone(n=8)
    own = bpy.data.materials.new("Artist's")
    obj.data.materials.append(own)
    obj.material_slots[0].link = 'OBJECT'
    obj.material_slots[0].material = own
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    assert te.features.material.group_node(obj.material_slots[0].material) is not None
    assert own.users >= 1


@pytest.mark.parametrize("engine", ["CYCLES", "BLENDER_EEVEE"])
def test_material_renders_snow_above_the_line_and_rock_below(blender, tmp_path, engine):
    obj = cone()
    # a pool on the cone's west foot (te_pools, as a run writes it): water-dark there
    x = positions(obj.data)[:, 0]
    pools = obj.data.color_attributes.new(te.features.material.POOLS, 'FLOAT_COLOR', 'POINT')
    wet = (x < -0.4).astype(np.float32)
    pools.data.foreach_set("color", np.repeat(wet, 4))
    bpy.context.view_layer.objects.active = obj
    bpy.ops.terrain.apply_material()  # snow above 3/4 of the height: the middle of the view
    top_view(bpy)
    px = render_pixels(bpy, te, engine, tmp_path / f"{engine}.png", 32, plain_srgb=True)[..., :3]
    assert np.isfinite(px).all()
    luma = px.mean(-1)
    assert luma.std() > 0.02, "not a uniform image"
    h, w = luma.shape
    y, x = np.mgrid[0:h, 0:w]
    r = np.hypot(x + 0.5 - w / 2, y + 0.5 - h / 2) / (w / 2)  # 1 = the cone's foot
    snow = luma[r < 0.15].mean()    # height above 0.85 of the apex
    foot = (r > 0.45) & (r < 0.8)   # 0.2 .. 0.55 of the apex
    rock = np.median(luma[foot & (x > 0.6 * w)])
    water = np.median(luma[foot & (x < 0.2 * w)])  # median: EEVEE 4.2's glossy speckles
    # snow (albedo 0.85) clips near 1 in the PNG; rock (0.2) renders at 0.35-0.45
    assert snow > 0.8 and snow > 1.6 * rock, (snow, rock)
    assert water < 0.8 * rock, (water, rock)  # Cycles: 0.5x (a third in linear light)


# ------------------------------------------------------------------ simulated snow, ice

def _links_into(tree, node):
    """socket name of ``node`` -> the node linked into it."""
    return {link.to_socket.identifier: link.from_node for link in tree.links
            if link.to_node == node}


def _snow_wiring(tree):
    """The group's Snow Source mix and what feeds it: (mix, factor node, A node,
    B node); the B side is traced back through the smoothstep to its Attribute node."""
    m = te.features.material
    mix = tree.nodes[m.SNOW_SOURCE]
    into = _links_into(tree, mix)
    return mix, into["Factor_Float"], into["A_Float"], into["B_Float"]


def test_snow_comes_from_te_snow_when_the_mesh_has_it_else_from_the_snow_line(blender):
    """Node tree, no render: te_snow -> smoothstep 0..Snow Depth -> the Snow Source
    mix's B, the snow line's snow its A, Snow Depth Mix its factor, the mix into the
    Snow output; Snow Depth Mix is 0 on a mesh without te_snow and 1 with it."""
    m = te.features.material
    obj = cone(n=16)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    node = m.group_node(obj.data.materials[0])
    tree = node.node_tree
    mix, factor, line, depth = _snow_wiring(tree)
    assert mix.data_type == 'FLOAT'
    assert factor.bl_idname == 'NodeGroupInput'
    assert next(link.from_socket.name for link in tree.links
                if link.to_socket.identifier == "Factor_Float" and link.to_node == mix) \
        == "Snow Depth Mix"
    assert depth.bl_idname == 'ShaderNodeMapRange' and depth.interpolation_type == 'SMOOTHSTEP'
    assert depth.clamp and depth.inputs["From Min"].default_value == 0.0
    attr = _links_into(tree, depth)["Value"]
    assert attr.bl_idname == 'ShaderNodeAttribute' and attr.attribute_name == "te_snow"
    assert attr.attribute_type == 'GEOMETRY'
    assert _links_into(tree, _links_into(tree, depth)["From Max"])  # max(Snow Depth, tiny)
    assert line.bl_idname == 'ShaderNodeMath'  # the snow line's snow, masked
    out = next(n for n in tree.nodes if n.bl_idname == 'NodeGroupOutput')
    assert any(link.from_node == mix and link.to_node == out and link.to_socket.name == "Snow"
               for link in tree.links)
    # the ice: te_ice -> smoothstep -> a colour mix into Ice Color
    ice = next(n for n in tree.nodes if n.bl_idname == 'ShaderNodeAttribute'
               and n.attribute_name == "te_ice")
    assert any(link.from_node == ice for link in tree.links)
    # no te_snow: the snow line; Snow Depth and Ice Depth set from the real size
    assert node.inputs["Snow Depth Mix"].default_value == 0.0
    g = te.data.grid.detect_grid(obj.data)
    scale = obj.terrain_erosion.real_scale(g.rows, g.cols, g.cell_size)
    assert node.inputs["Snow Depth"].default_value == pytest.approx(scale.local_height(0.3))
    assert node.inputs["Ice Depth"].default_value == pytest.approx(scale.local_height(0.5))
    # te_snow on the mesh: the simulated snow (applying again, or any run or Reset)
    te.data.grid.write_float_layer(obj.data, "te_snow", g, np.full((16, 16), 0.01))
    node.inputs["Snow Depth"].default_value = 0.25  # the artist's value is kept
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    assert node.inputs["Snow Depth Mix"].default_value == 1.0
    assert node.inputs["Snow Depth"].default_value == pytest.approx(0.25)
    obj.data.attributes.remove(obj.data.attributes["te_snow"])
    te.data.job.layers_changed(obj)
    assert node.inputs["Snow Depth Mix"].default_value == 0.0


def test_a_run_and_reset_keep_the_snow_source_in_step(blender):
    """After Erode (the mesh keeps a te_snow layer) the material shows the simulated
    snow; Reset removes the layers and the material goes back to the snow line."""
    m = te.features.material
    obj = add_grid(bpy, n=16, name="Run")
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    node = m.group_node(obj.data.materials[0])
    g = te.data.grid.detect_grid(obj.data)
    te.data.grid.write_float_layer(obj.data, "te_snow", g, np.zeros((16, 16)))
    obj.terrain_erosion.particles = 200
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    assert node.inputs["Snow Depth Mix"].default_value == 1.0
    assert bpy.ops.terrain.reset() == {'FINISHED'}
    assert "te_snow" not in obj.data.attributes
    assert node.inputs["Snow Depth Mix"].default_value == 0.0


@pytest.mark.parametrize("how", ["version 1", "unmarked, before rock layers"])
def test_a_group_of_an_older_version_is_brought_up_to_date(blender, how):
    """A group saved by an earlier version (marked 1, or unmarked and named like ours
    with the inputs of then) is made again with the snow and ice inputs, the artist's
    input values kept; the artist's own group of the same inputs but another name is
    not ours."""
    m = te.features.material
    obj = cone(n=8)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    tree = m.surface_group()
    drop = {"Snow Depth Mix", "Snow Depth", "Ice Color", "Ice Depth"}
    if how != "version 1":
        drop |= {"Layer Color", "Layer Mix"}
        del tree[m.MARK]
    else:
        tree[m.MARK] = 1
    for item in list(tree.interface.items_tree):
        if item.item_type == 'SOCKET' and item.name in drop:
            tree.interface.remove(item)
    tree.nodes.remove(tree.nodes[m.SNOW_SOURCE])
    node = m.group_node(obj.data.materials[0])
    assert node is not None and "Snow Depth" not in node.inputs
    node.inputs["Snow Line"].default_value = 0.321
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    assert m.surface_group() == tree and tree[m.MARK] == m.VERSION
    assert m.SNOW_SOURCE in tree.nodes
    assert node.inputs["Snow Line"].default_value == pytest.approx(0.321)
    assert node.inputs["Snow Depth"].default_value > 0
    # a group of a newer version with every input is left alone
    tree[m.MARK] = m.VERSION + 1
    marker = tree.nodes.new("ShaderNodeValue")
    m.up_to_date(tree)
    assert marker.name in tree.nodes and tree[m.MARK] == m.VERSION + 1


def test_material_renders_simulated_snow_and_ice(blender, tmp_path):
    """Cycles, 32 px, a flat grid: snow (te_snow 0.5 m) on the west half shows white, ice
    (te_ice) on the east half's north shows bluish, bare ground dark -- whatever the
    snow line says."""
    m = te.features.material
    obj = add_grid(bpy, n=16, relief=0.0, name="Flat")
    bpy.context.view_layer.objects.active = obj
    g = te.data.grid.detect_grid(obj.data)
    scale = obj.terrain_erosion.real_scale(g.rows, g.cols, g.cell_size)
    r, c = np.mgrid[0:g.rows, 0:g.cols]
    snow = np.where(c < g.cols // 2 - 1, scale.local_height(0.5), 0.0)
    ice = np.where((c > g.cols // 2) & (r > g.rows // 2), scale.local_height(5.0), 0.0)
    te.data.grid.write_float_layer(obj.data, "te_snow", g, snow)
    te.data.grid.write_float_layer(obj.data, "te_ice", g, ice)
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    node = m.group_node(obj.data.materials[0])
    node.inputs["Snow Line"].default_value = 1e6  # the line would give no snow anywhere
    node.inputs["Variation"].default_value = 0.0
    top_view(bpy)
    bpy.context.active_object.data.energy = 1.0  # the sun: ice's blue does not clip
    px = render_pixels(bpy, te, "CYCLES", tmp_path / "snow.png", 32, plain_srgb=True)[..., :3]
    h, w = px.shape[:2]
    west = px[:, : w // 2 - 4].mean((0, 1))
    ice_px = px[h // 2 + 4:, w // 2 + 4:].mean((0, 1))  # Blender's pixel row 0: -Y (south)
    bare = px[: h // 2 - 4, w // 2 + 4:].mean((0, 1))
    assert west.mean() > 0.75 and west.mean() > 2 * bare.mean(), (west, bare)
    assert ice_px[2] > ice_px[0] + 0.05 and ice_px.mean() > 1.5 * bare.mean(), (ice_px, bare)
