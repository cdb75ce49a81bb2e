"""Refine ×2 in real Blender (bpy module): the object keeps its name, settings, Real Size,
materials, masks and UVs on a grid twice as fine over the same extent; its terrain layers
are carried; a non-grid is refused untouched; undo brings the coarse grid back."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from blender_helpers import add_grid, mesh_state, positions, same_state, staged_addon

te = staged_addon()


def eroded_grid(n=9):
    """A grid with a sediment layer, a painted mask, a material and a Real Size."""
    obj = add_grid(bpy, n=n, size=2.0, relief=0.3)
    me = obj.data
    gridio = te.data.grid
    g = gridio.detect_grid(me)
    z = positions(me)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    sediment = np.zeros_like(z)
    sediment[2:6, 3:7] = 0.02
    gridio.write_float_layer(me, "te_bedrock", g, z - sediment)
    gridio.write_float_layer(me, "te_sediment_depth", g, sediment)
    gridio.write_float_layer(me, gridio.ORIGINAL_Z, g, z)
    group = obj.vertex_groups.new(name="protect_me")
    group.add([int(i) for i in g.order.reshape(g.rows, g.cols)[:, : n // 2].ravel()], 1.0,
              'REPLACE')
    mat = bpy.data.materials.new("Ground")
    me.materials.append(mat)
    obj.terrain_erosion.real_size = 900.0
    return obj, z, sediment


def test_registered_under_the_erosion_panel(blender):
    assert bpy.types.TERRAIN_PT_refine.bl_parent_id == "TERRAIN_PT_main"
    assert 'UNDO' in bpy.types.TERRAIN_OT_refine.bl_options


def test_refine_keeps_the_object_its_size_settings_masks_and_layers(blender):
    obj, z, sediment = eroded_grid()
    name, dims = obj.name, tuple(obj.dimensions)
    assert bpy.ops.terrain.refine() == {'FINISHED'}
    obj = bpy.data.objects[name]
    me = obj.data
    assert len(me.vertices) == 17 * 17 and len(me.polygons) == 16 * 16
    assert np.allclose(tuple(obj.dimensions)[:2], dims[:2], atol=1e-6)
    assert obj.terrain_erosion.real_size == 900.0
    assert [m.name for m in me.materials] == ["Ground"]
    assert me.uv_layers.active is not None
    g = te.data.grid.detect_grid(me)
    assert (g.rows, g.cols) == (17, 17)
    fz = positions(me)[:, 2][g.order].reshape(17, 17)
    # the old vertices where they were (the volume-keeping shift is far below a float's
    # last digit here or small), the new ones between their neighbours
    assert np.allclose(fz[::2, ::2], z, atol=2e-3)
    sed = te.data.grid.read_float_layer(me, "te_sediment_depth", g)
    assert sed.min() >= 0.0 and sed[4:12, 6:14].max() == pytest.approx(0.02, rel=1e-3)
    # the sediment's volume is kept (each vertex stands for its share of the extent)
    vol = te.simcore.kernels.refine.volume
    assert vol(sed) * (g.cell_x * g.cell_y) == pytest.approx(
        vol(sediment) * 4 * (g.cell_x * g.cell_y), rel=1e-5)
    assert np.allclose(te.data.grid.read_float_layer(me, "te_bedrock", g) + sed, fz, atol=1e-5)
    original = te.data.grid.read_float_layer(me, te.data.grid.ORIGINAL_Z, g)
    assert np.allclose(original[::2, ::2], z, atol=1e-6)
    weights = te.data.masks.vertex_group_weights(obj, "protect_me")[g.order].reshape(17, 17)
    assert weights[:, :7].min() == 1.0 and weights[:, 9:].max() == 0.0


def test_faces_that_look_down_still_do(blender):
    obj, _, _ = eroded_grid()
    bpy.ops.object.mode_set(mode='EDIT')
    bpy.ops.mesh.select_all(action='SELECT')
    bpy.ops.mesh.flip_normals()
    bpy.ops.object.mode_set(mode='OBJECT')
    assert bpy.ops.terrain.refine() == {'FINISHED'}
    normals = np.empty(len(obj.data.polygons) * 3, np.float32)
    obj.data.polygons.foreach_get("normal", normals)
    assert (normals[2::3] < 0).all()


def test_a_non_grid_is_refused_and_left_as_it_was(blender):
    bpy.ops.mesh.primitive_uv_sphere_add()
    sphere = bpy.context.active_object
    before = mesh_state(sphere.data)
    with pytest.raises(RuntimeError, match="do not form a rectangular grid"):
        bpy.ops.terrain.refine()
    assert same_state(before, mesh_state(sphere.data))


def test_an_attribute_it_cannot_carry_stops_it_before_any_change(blender):
    obj, _, _ = eroded_grid()
    obj.data.attributes.new("crease_me", 'FLOAT', 'EDGE')
    before = mesh_state(obj.data)
    with pytest.raises(RuntimeError, match="edge attribute 'crease_me'"):
        bpy.ops.terrain.refine()
    assert same_state(before, mesh_state(obj.data)) and len(obj.data.vertices) == 81


def test_undo_brings_the_coarse_grid_back(blender):
    obj, _, _ = eroded_grid()
    name = obj.name
    bpy.ops.ed.undo_push(message="before refine")
    before = mesh_state(obj.data)
    assert bpy.ops.terrain.refine() == {'FINISHED'}
    assert len(bpy.data.objects[name].data.vertices) == 289
    # in the GUI Blender pushes this step itself when an 'UNDO' operator finishes
    bpy.ops.ed.undo_push(message="Refine ×2")
    bpy.ops.ed.undo()
    obj = bpy.data.objects[name]
    assert len(obj.data.vertices) == 81 and same_state(before, mesh_state(obj.data))
    assert [m.name for m in obj.data.materials] == ["Ground"]


def test_a_change_layer_with_a_nan_refines_as_the_runs_read_it(blender):
    """A NaN in a process's change layer reads as 0, as a run reads it, instead of
    spreading through the refined layer."""
    obj, z, _ = eroded_grid()
    gridio = te.data.grid
    me = obj.data
    g = gridio.detect_grid(me)
    attr = next(iter(gridio.CHANGE_LAYERS.values()))
    change = np.full(z.shape, -0.01)
    change[4, 4] = np.nan
    gridio.write_float_layer(me, attr, g, change)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.refine() == {'FINISHED'}
    fine = gridio.read_float_layer(obj.data, attr, gridio.detect_grid(obj.data))
    assert fine is not None and np.isfinite(fine).all()
    assert np.count_nonzero(fine) > 0.5 * fine.size
