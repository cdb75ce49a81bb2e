"""addon/data/compat.py on the running Blender line (every line runs these: marker blender)."""

from __future__ import annotations

import bpy
import pytest
from blender_helpers import staged_addon

te = staged_addon()


@pytest.fixture
def empty():
    bpy.ops.wm.read_factory_settings(use_empty=True)
    yield bpy


def test_new_material_has_the_default_node_tree(empty):
    mat = te.data.compat.new_node_material("probe")
    assert mat.node_tree is not None
    names = {n.bl_idname for n in mat.node_tree.nodes}
    assert {"ShaderNodeBsdfPrincipled", "ShaderNodeOutputMaterial"} <= names


def test_modifier_inputs_set_read_back_and_drive_the_evaluation(empty):
    bpy.ops.mesh.primitive_plane_add()
    target = bpy.context.active_object
    bpy.ops.mesh.primitive_cube_add(location=(5, 0, 0))
    cube = bpy.context.active_object
    group = bpy.data.node_groups.new("probe", 'GeometryNodeTree')
    iface = group.interface
    iface.new_socket("Geometry", in_out='INPUT', socket_type='NodeSocketGeometry')
    obj_in = iface.new_socket("Object", in_out='INPUT', socket_type='NodeSocketObject')
    use_in = iface.new_socket("Use", in_out='INPUT', socket_type='NodeSocketBool')
    iface.new_socket("Geometry", in_out='OUTPUT', socket_type='NodeSocketGeometry')
    gin, gout = group.nodes.new("NodeGroupInput"), group.nodes.new("NodeGroupOutput")
    info = group.nodes.new("GeometryNodeObjectInfo")
    switch = group.nodes.new("GeometryNodeSwitch")
    switch.input_type = 'GEOMETRY'
    group.links.new(gin.outputs["Object"], info.inputs["Object"])
    group.links.new(gin.outputs["Use"], switch.inputs["Switch"])
    group.links.new(gin.outputs["Geometry"], switch.inputs["False"])
    group.links.new(info.outputs["Geometry"], switch.inputs["True"])
    group.links.new(switch.outputs["Output"], gout.inputs["Geometry"])
    mod = target.modifiers.new("probe", 'NODES')
    mod.node_group = group
    te.data.compat.set_modifier_input(mod, obj_in.identifier, cube)
    te.data.compat.set_modifier_input(mod, use_in.identifier, True)
    assert te.data.compat.modifier_input(mod, obj_in.identifier) == cube
    assert bool(te.data.compat.modifier_input(mod, use_in.identifier)) is True
    evaluated = target.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    assert len(evaluated.vertices) == 8, "the plane now shows the cube it was pointed at"
    te.data.compat.set_modifier_input(mod, use_in.identifier, False)
    te.data.compat.set_modifier_input(mod, obj_in.identifier, None)
    assert te.data.compat.modifier_input(mod, obj_in.identifier) is None
    evaluated = target.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    assert len(evaluated.vertices) == 4
