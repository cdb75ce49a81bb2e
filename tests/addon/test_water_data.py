"""Rivers curve, lakes mesh, shore attributes and the shore-waves material in real
Blender (bpy module), rendered headless with Cycles and EEVEE."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from blender_helpers import (
    add_grid,
    positions,
    render_pixels,
    staged_addon,
)

te = staged_addon()


def valley_and_lake(n=40, size=8.0):
    """A valley draining south into a round lake; stream along the valley floor."""
    obj = add_grid(bpy, n=n, size=size, name="Valley")
    g = te.data.grid.detect_grid(obj.data)
    r, c = np.mgrid[0:g.rows, 0:g.cols].astype(float)
    cell = g.cell_x
    z = (0.06 * r + 0.05 * np.abs(c - 20)) * cell * 4
    lake = (r - 8) ** 2 + (c - 20) ** 2 <= 36
    ground = np.where(lake, z.min() - 0.2 * cell, z)
    level = z[lake].max() * 0 + (0.06 * 14) * cell * 4  # surface at the lake's rim
    pool = np.where(lake, level - ground, 0.0)
    stream = np.where((np.abs(c - 20) < 0.5) & (r > 14), 0.8, 0.0)
    te.data.grid.write_heights(obj.data, g, positions(obj.data), ground)
    te.data.grid.write_float_layer(obj.data, "te_stream", g, stream)
    te.data.grid.write_float_layer(obj.data, "te_pool_depth", g, pool)
    obj.data.update()
    return obj, g, ground, stream, pool


def curve_points(curve_obj):
    out = []
    for spline in curve_obj.data.splines:
        co = np.empty(len(spline.points) * 4, np.float32)
        spline.points.foreach_get("co", co)
        rad = np.empty(len(spline.points), np.float32)
        spline.points.foreach_get("radius", rad)
        out.append((co.reshape(-1, 4)[:, :3], rad))
    return out


def test_rivers_curve_follows_high_stream_cells_with_flow_as_radius(blender):
    obj, g, ground, stream, _ = valley_and_lake()
    assert bpy.ops.terrain.water_data() == {'FINISHED'}
    river = obj.terrain_water.rivers_object
    assert river is not None and river.type == 'CURVE' and river.parent == obj
    (co, radius), = curve_points(river)
    col = np.rint((co[:, 0] - g.x0) / g.cell_x).astype(int)
    row = np.rint((co[:, 1] - g.y0) / g.cell_y).astype(int)
    assert np.allclose(co[:, 0], g.x0 + col * g.cell_x, atol=1e-5)
    assert (stream[row[:-1], col[:-1]] >= 0.25).all()  # the mouth may be in the lake
    assert ((stream >= 0.25) == np.isin(np.arange(stream.size),
                                        row * g.cols + col).reshape(stream.shape)
            )[stream >= 0.25].all(), "every channel cell is on the curve"
    assert np.allclose(radius, 0.8)
    assert np.all(np.diff(co[:, 2]) < 0), "flows downhill"


def test_real_hydrology_run_curve_sits_on_high_stream_cells(blender):
    obj = add_grid(bpy, n=48, size=9.6, relief=1.2, seed=4, name="Hydro")
    s = obj.terrain_erosion
    s.droplets.enabled = False
    s.hydrology.enabled = True
    s.particles = 6000
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    g = te.data.grid.detect_grid(obj.data)
    stream = te.data.grid.read_float_layer(obj.data, "te_stream", g)
    threshold = float(np.quantile(stream, 0.9))
    obj.terrain_water.stream_threshold = max(threshold, 0.02)
    te.features.water_data.update_rivers(obj, obj.terrain_water.stream_threshold, 4)
    pts = curve_points(obj.terrain_water.rivers_object)
    assert pts, "some rivers"
    vals = []
    for co, _ in pts:
        col = np.rint((co[:, 0] - g.x0) / g.cell_x).astype(int)
        row = np.rint((co[:, 1] - g.y0) / g.cell_y).astype(int)
        vals.append(stream[row[:-1], col[:-1]])
    vals = np.concatenate(vals)
    # every point but the mouths is among the top 10% stream cells
    assert vals.min() >= threshold - 1e-6 and vals.mean() > stream.mean()


def test_lakes_mesh_and_shore_attributes(blender):
    obj, g, ground, _, pool = valley_and_lake()
    lakes = te.features.water_data.update_lakes(obj)
    me = lakes.data
    assert lakes.parent == obj and len(me.polygons) > 0
    ids = np.empty(len(me.polygons), np.int32)
    me.attributes["lake_id"].data.foreach_get("value", ids)
    assert set(ids) == {1}
    z = positions(me)[:, 2]
    wet_level = (ground + pool)[pool > 0][0]
    assert np.allclose(z, wet_level, atol=1e-5), "flat at the lake surface"
    dist = te.data.grid.read_float_layer(obj.data, "te_shore_distance", g)
    line = te.simcore.algorithms.shore.waterline(pool > 0)
    assert (dist[line] == 0).all() and (dist[~line] > 0).all()
    # equals a brute-force search over the waterline cells (local units)
    pts = np.argwhere(line)
    r, c = np.mgrid[0:g.rows, 0:g.cols]
    brute = np.sqrt(((r[..., None] - pts[:, 0]) * g.cell_y) ** 2
                    + ((c[..., None] - pts[:, 1]) * g.cell_x) ** 2).min(-1)
    assert np.allclose(dist, brute, rtol=1e-6)
    assert me.materials[0].name == te.features.water_data.WAVES
    assert "te_shore_direction" in obj.data.attributes
    before = positions(obj.data).copy()
    bpy.context.scene.frame_set(10)
    assert np.array_equal(before, positions(obj.data)), "waves never move the terrain"


def _camera_over(obj):
    bpy.ops.object.camera_add(location=(0, 0, 12), rotation=(0, 0, 0))
    cam = bpy.context.active_object
    cam.data.type = 'ORTHO'
    cam.data.ortho_scale = 8.5
    bpy.context.scene.camera = cam
    bpy.ops.object.light_add(type='SUN', location=(0, 0, 10))
    bpy.context.active_object.data.energy = 3.0


@pytest.mark.parametrize("engine", ["CYCLES", "BLENDER_EEVEE"])
def test_wave_material_renders_and_moves_with_the_frame(blender, tmp_path, engine):
    obj, *_ = valley_and_lake()
    te.features.water_data.update_lakes(obj)
    obj.hide_render = True  # only the water
    _camera_over(obj)
    a = render_pixels(bpy, te, engine, tmp_path / "a.png", 48, frame=1)
    b = render_pixels(bpy, te, engine, tmp_path / "b.png", 48, frame=13)
    assert np.isfinite(a).all() and a[..., :3].max() > 0.05, "the water is visible"
    assert np.abs(a - b)[..., :3].mean() > 1e-3, "the waves moved between frames"


def test_water_surface_object_gets_the_shore_attributes_too(blender, tmp_path):
    obj = add_grid(bpy, n=20, size=4.0, name="Pond")
    s = obj.terrain_erosion
    s.droplets.enabled, s.hydrology.enabled, s.particles = False, True, 3000
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    g = te.data.grid.detect_grid(obj.data)
    pool = te.data.grid.read_float_layer(obj.data, "te_pool_depth", g)
    if not (pool > 1e-6).any():  # make sure there is water to have a shore
        pool[5:9, 5:9] = 0.1
        te.data.grid.write_float_layer(obj.data, "te_pool_depth", g, pool)
    te.features.water_data.update_lakes(obj)
    water = s.water_object
    assert water is not None
    d_terrain = te.data.grid.read_float_layer(obj.data, "te_shore_distance", g)
    d_water = te.data.grid.read_float_layer(water.data, "te_shore_distance", g)
    assert np.array_equal(d_terrain, d_water)


@pytest.mark.parametrize("layer", ["te_pool_depth", "te_stream"])
@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_layers_are_refused_not_made_into_infinite_meshes(blender, layer, bad):
    """An infinite pool depth made a Lakes mesh with infinite vertices."""
    obj, g, *_ = valley_and_lake()
    values = te.data.grid.read_float_layer(obj.data, layer, g)
    values[8, 20] = bad  # in the lake
    values[20, 20] = bad  # on the river
    te.data.grid.write_float_layer(obj.data, layer, g, values)
    objects = set(bpy.data.objects.keys())
    for make in (te.features.water_data.update_lakes, te.features.water_data.update_rivers):
        with pytest.raises(te.simcore.errors.UserError, match=f"{layer}.*not a finite"):
            make(obj)
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match="not a finite"):  # an ERROR report
        bpy.ops.terrain.water_data()
    assert set(bpy.data.objects.keys()) == objects, "nothing made"


def test_a_kind_with_nothing_to_make_is_a_warning_and_the_other_is_made(blender, capfd):
    """No pools: the rivers are made, the lakes a warning (FINISHED); neither stream nor
    pool: two warnings and CANCELLED, nothing made. Not errors: Blender raises none."""
    obj, g, *_ = valley_and_lake()
    obj.data.attributes.remove(obj.data.attributes["te_pool_depth"])
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.water_data() == {'FINISHED'}
    assert obj.terrain_water.rivers_object is not None
    assert obj.terrain_water.lakes_object is None
    assert "no pools (te_pool_depth)" in capfd.readouterr().out
    bare = add_grid(bpy, n=12, name="Bare")
    objects = set(bpy.data.objects.keys())
    bpy.context.view_layer.objects.active = bare
    assert bpy.ops.terrain.water_data() == {'CANCELLED'}
    out = capfd.readouterr().out
    assert "no stream layer (te_stream)" in out and "no pools (te_pool_depth)" in out
    assert set(bpy.data.objects.keys()) == objects, "nothing made"
