"""The ice surface object (addon/features/ice_surface.py) in real Blender (bpy module):
a mesh at ground + ice where the terrain's te_ice layer says there is ice, none
elsewhere, made again in place, and a clear error (nothing changed) without the
layer."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from blender_helpers import PanelLayout, add_grid, positions, staged_addon

te = staged_addon()


def glacier(n=24, size=4.0, name="Glacier"):
    """A terrain with a tongue of ice in its upper rows: te_ice in local units, up to
    ~0.3 local units thick, none in the lower half (0.5 m of ice on this auto-scaled
    object is far less than a local unit)."""
    obj = add_grid(bpy, n=n, size=size, name=name)
    g = te.data.grid.detect_grid(obj.data)
    r, c = np.mgrid[0:g.rows, 0:g.cols].astype(float)
    ice = np.where((r >= g.rows // 2) & (np.abs(c - g.cols / 2) < g.cols / 4),
                   0.3 * (r - g.rows // 2 + 1) / g.rows, 0.0)
    te.data.grid.write_float_layer(obj.data, te.data.grid.FLOAT_LAYERS["ice"], g, ice)
    obj.data.update()
    bpy.context.view_layer.objects.active = obj
    z = positions(obj.data)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    return obj, g, z, ice


def cells_of(g, co):
    col = np.rint((co[:, 0] - g.x0) / g.cell_x).astype(int)
    row = np.rint((co[:, 1] - g.y0) / g.cell_y).astype(int)
    return row, col


def test_ice_surface_sits_on_the_ground_plus_the_ice_and_nowhere_else(blender):
    obj, g, z, ice = glacier()
    assert bpy.ops.terrain.ice_surface() == {'FINISHED'}
    ice_obj = obj.terrain_ice.ice_object
    assert ice_obj is not None and ice_obj.type == 'MESH' and ice_obj.parent == obj
    assert ice_obj.name == "Glacier Ice"
    assert np.allclose(np.array(ice_obj.matrix_parent_inverse), np.eye(4))
    me = ice_obj.data
    co = positions(me)
    row, col = cells_of(g, co)
    assert np.allclose(co[:, 0], g.x0 + col * g.cell_x, atol=1e-5)
    thick = ice[row, col] > te.features.ice_surface.min_thickness_local(obj, g, 0.5)
    assert thick.sum() == (ice > 0).sum(), "every ice vertex is on the mesh"
    assert np.allclose(co[thick, 2], (z + ice)[row, col][thick], atol=1e-5)
    assert (co[~thick, 2] < (z + ice)[row, col][~thick]).all(), "rim tucked under"
    # faces only over ice: every face has an iced corner, no face in the bare half
    corners = np.empty(len(me.loops), np.int32)
    me.loops.foreach_get("vertex_index", corners)
    per_face = thick[corners.reshape(-1, 4)]
    assert len(me.polygons) > 0 and per_face.any(axis=1).all()
    assert (row[corners] >= g.rows // 2 - 1).all()
    normals = np.empty(3 * len(me.polygons), np.float32)
    me.polygons.foreach_get("normal", normals)
    assert (normals.reshape(-1, 3)[:, 2] > 0).all(), "faces up"
    thickness = np.empty(len(co), np.float32)
    me.attributes["ice_thickness"].data.foreach_get("value", thickness)
    assert np.allclose(thickness, ice[row, col], atol=1e-6)
    assert me.materials[0].name == te.features.ice_surface.ICE_MATERIAL


def test_rerun_replaces_the_mesh_and_keeps_the_artists_object(blender):
    obj, g, z, ice = glacier()
    assert bpy.ops.terrain.ice_surface() == {'FINISHED'}
    ice_obj = obj.terrain_ice.ice_object
    ice_obj.location.z = 0.5  # the artist's changes
    ice_obj.name = "My Glacier"
    mine = bpy.data.materials.new("Artist's ice")
    ice_obj.data.materials[0] = mine
    objects, meshes = len(bpy.data.objects), len(bpy.data.meshes)
    # less ice: the new mesh is smaller
    ice2 = np.where(ice > 0.08, ice, 0.0)
    te.data.grid.write_float_layer(obj.data, "te_ice", g, ice2)
    assert bpy.ops.terrain.ice_surface() == {'FINISHED'}
    assert obj.terrain_ice.ice_object == ice_obj and ice_obj.name == "My Glacier"
    assert len(bpy.data.objects) == objects and len(bpy.data.meshes) == meshes
    assert ice_obj.location.z == pytest.approx(0.5)
    assert list(ice_obj.data.materials) == [mine]
    assert ice_obj.data.name == "Glacier Ice"
    co = positions(ice_obj.data)
    row, col = cells_of(g, co)
    assert (ice2[row, col] > 0).sum() == (ice2 > 0).sum()
    assert (ice[row, col] > 0).sum() < (ice > 0).sum(), "the thin ice is gone"
    # deleted by the artist: made again
    te.data.objects.remove_object(ice_obj)
    assert bpy.ops.terrain.ice_surface() == {'FINISHED'}
    assert obj.terrain_ice.ice_object.name == "Glacier Ice"


def test_without_ice_layer_or_ice_it_is_an_error_and_nothing_changes(blender):
    obj = add_grid(bpy, n=16, name="Bare")
    bpy.context.view_layer.objects.active = obj
    before = (set(bpy.data.objects.keys()), set(bpy.data.meshes.keys()),
              set(bpy.data.materials.keys()))
    with pytest.raises(RuntimeError, match=r"no ice layer \(te_ice\).*erode first"):
        bpy.ops.terrain.ice_surface()
    te.data.grid.write_float_layer(obj.data, "te_ice", te.data.grid.detect_grid(obj.data),
                                   np.zeros((16, 16)))
    with pytest.raises(RuntimeError, match="no ice thicker than 0.5 m"):
        bpy.ops.terrain.ice_surface()
    assert obj.terrain_ice.ice_object is None
    assert (set(bpy.data.objects.keys()), set(bpy.data.meshes.keys()),
            set(bpy.data.materials.keys())) == before
    # a rerun that fails leaves the ice object made before as it was
    obj, g, z, ice = glacier(n=16, name="Glacier")
    assert bpy.ops.terrain.ice_surface() == {'FINISHED'}
    ice_obj = obj.terrain_ice.ice_object
    co = positions(ice_obj.data)
    obj.data.attributes.remove(obj.data.attributes["te_ice"])
    with pytest.raises(RuntimeError, match="no ice layer"):
        bpy.ops.terrain.ice_surface()
    assert obj.terrain_ice.ice_object == ice_obj
    assert np.array_equal(positions(ice_obj.data), co)


def test_the_water_panel_offers_the_ice_surface(blender):
    import types
    obj, *_ = glacier(n=16)
    assert bpy.ops.terrain.ice_surface() == {'FINISHED'}
    log = []
    panel = types.SimpleNamespace(layout=PanelLayout(log))
    te.features.water_data.TERRAIN_PT_water_data.draw(
        panel, types.SimpleNamespace(active_object=obj))
    assert ("operator", "terrain.ice_surface") in log and ("prop", "min_thickness") in log
    assert ("label", "Glacier Ice") in log
