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
