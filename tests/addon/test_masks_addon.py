"""Painted masks in real Blender (bpy module): vertex groups and color attributes become
the terrain's input maps in grid order and steer the run; Selection Only erodes a patch
with a soft falloff and leaves the rest bit-identical."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from blender_helpers import (
    add_grid,
    positions,
    staged_addon,
)

te = staged_addon()


def grid_xy(obj):
    """(grid, x raster, y raster, z raster) of a grid object, local units."""
    g = te.data.grid.detect_grid(obj.data)
    co = positions(obj.data).astype(np.float64)
    rasters = [co[:, i][g.order].reshape(g.rows, g.cols) for i in range(3)]
    return (g, *rasters)


def paint_group(obj, name, weights):
    """A vertex group holding every vertex with ``weights`` (per vertex, 0 = left out)."""
    group = obj.vertex_groups.new(name=name)
    for i, w in enumerate(weights):
        if w > 0:
            group.add([i], float(w), 'REPLACE')
    return group


def paint_color(me, name, gray, domain='POINT', data_type='FLOAT_COLOR'):
    """A color attribute whose displayed (sRGB) gray is ``gray`` per vertex."""
    attr = me.color_attributes.new(name, data_type, domain)
    if domain == 'CORNER':
        vi = np.empty(len(me.loops), np.int32)
        me.loops.foreach_get("vertex_index", vi)
        gray = np.asarray(gray)[vi]
    rgba = np.repeat(np.asarray(gray, np.float32)[:, None], 4, axis=1)
    rgba[:, 3] = 1.0
    key = "color_srgb" if hasattr(attr.data[0], "color_srgb") else "color"
    attr.data.foreach_set(key, rgba.ravel())
    return attr


def test_masks_panel_and_settings_are_registered(blender):
    assert hasattr(bpy.types, "TERRAIN_PT_masks")
    assert bpy.types.TERRAIN_PT_masks.bl_parent_id == "TERRAIN_PT_main"
    # one mask per input map of the terrain, the processes' own (landscape: uplift) too
    inputs = {f.name for f in te.simcore.processes.FIELDS.values() if f.input}
    assert set(te.data.masks.MASKS) == inputs == {"rain", "erodibility", "protect",
                                             "tree_seeding", "uplift"}
    obj = add_grid(bpy, n=8)
    s = obj.terrain_erosion
    for name in inputs:
        assert getattr(s, f"mask_{name}_source") == 'NONE'
        setattr(s, f"mask_{name}_source", 'VERTEX_GROUP')
        setattr(s, f"mask_{name}_name", "g")
    assert s.selection_only is False and s.selection_falloff > 0


def test_masks_reach_the_terrain_in_grid_order(blender):
    """Vertex order shuffled: each map must still land on the right raster cell."""
    obj = add_grid(bpy, n=16, size=2.0)
    me = obj.data
    perm = np.random.default_rng(3).permutation(len(me.vertices))
    co = positions(me)[perm]
    me.attributes["position"].data.foreach_set("vector", co.ravel())
    me.update()
    co = positions(me)
    rain = (co[:, 0] > 0).astype(float)           # east half
    erod = np.where(co[:, 1] > 0, 1.0, 0.25)       # north soft, south hard
    seeding = np.clip(co[:, 0] + 0.5, 0, 1)        # a ramp
    paint_group(obj, "rain", rain)
    paint_color(me, "rock", erod, domain='CORNER', data_type='BYTE_COLOR')
    paint_color(me, "seed", seeding)
    s = obj.terrain_erosion
    s.mask_rain_source, s.mask_rain_name = 'VERTEX_GROUP', "rain"
    s.mask_erodibility_source, s.mask_erodibility_name = 'COLOR_ATTRIBUTE', "rock"
    s.mask_tree_seeding_source, s.mask_tree_seeding_name = 'COLOR_ATTRIBUTE', "seed"
    job = te.data.job.ErosionJob(obj, particles=1)
    assert job.masks_used == ["rain", "erodibility", "tree_seeding"]
    t = job.sim.terrain
    g, x, y, _ = grid_xy(obj)
    assert np.array_equal(t.rain, (x > 0).astype(float))
    # byte colors hold 8 bits: the gray comes back within 1/255
    assert np.allclose(t.erodibility, np.where(y > 0, 1.0, 0.25), atol=1 / 255)
    # float colors go through the sRGB transfer function: equal within 1e-4
    assert np.allclose(t.tree_seeding, np.clip(x + 0.5, 0, 1), atol=1e-4)
    assert np.all(t.protect == 0)


def _run(obj, particles=3000, seed=4):
    obj.terrain_erosion.seed = seed
    obj.terrain_erosion.particles = particles
    assert bpy.ops.terrain.erode() == {'FINISHED'}


def test_protect_group_leaves_painted_vertices_bit_identical(blender):
    obj = add_grid(bpy, n=40, size=4.0, relief=1.0)
    before = positions(obj.data).copy()
    keep = (before[:, 0] < -0.3).astype(float)   # west part fully protected
    paint_group(obj, "keep", keep)
    s = obj.terrain_erosion
    s.mask_protect_source, s.mask_protect_name = 'VERTEX_GROUP', "keep"
    s.thermal.enabled = True
    _run(obj)
    after = positions(obj.data)
    held = keep >= 1.0
    assert np.array_equal(after[held], before[held]), "protected vertices are bit-identical"
    assert np.abs(after[~held, 2] - before[~held, 2]).max() > 1e-3, "the rest eroded"


def test_selection_only_erodes_a_patch_with_a_soft_border(blender):
    obj = add_grid(bpy, n=48, size=4.0, relief=1.0)
    me = obj.data
    co0 = positions(me).copy()
    patch = (np.abs(co0[:, 0]) < 0.8) & (np.abs(co0[:, 1]) < 0.8)
    me.vertices.foreach_set("select", patch)
    s = obj.terrain_erosion
    s.selection_only = True
    s.selection_falloff = 0.6  # world units (the object is unscaled)
    _run(obj, particles=8000)
    g, x, y, z = grid_xy(obj)
    z0 = co0[:, 2][g.order].reshape(g.rows, g.cols)
    sel = patch[g.order].reshape(g.rows, g.cols)
    dist, _, _ = te.simcore.algorithms.shore.distance_to_sites(sel, g.cell_x, g.cell_y)
    outside = dist >= 0.6
    assert np.array_equal(z[outside], z0[outside]), "beyond the falloff: bit-identical"
    change = z - z0
    assert np.abs(change[sel]).max() > 1e-3, "the selection eroded"
    # no step: at the falloff's outer edge the change jumps no more than between
    # ordinary neighbours inside the selection
    jumps_inside, border = [], []
    for a, b, sa, sb, oa, ob in ((change[:, 1:], change[:, :-1], sel[:, 1:], sel[:, :-1],
                                  outside[:, 1:], outside[:, :-1]),
                                 (change[1:], change[:-1], sel[1:], sel[:-1],
                                  outside[1:], outside[:-1])):
        jumps_inside.append(np.abs(a - b)[sa & sb])
        border.append(np.abs(a - b)[oa != ob])
    assert np.concatenate(border).max() <= np.percentile(np.concatenate(jumps_inside), 99)


def test_selection_by_vertex_group_and_object_scale(blender):
    """A vertex group instead of the selection; the falloff is in world units, so
    scaling the object up 2x halves the falloff in local cells."""
    obj = add_grid(bpy, n=32, size=2.0, relief=0.4)
    co = positions(obj.data)
    paint_group(obj, "zone", ((co[:, 0] > 0.5) & (co[:, 1] > 0.5)).astype(float))
    s = obj.terrain_erosion
    s.selection_only, s.selection_group, s.selection_falloff = True, "zone", 0.4
    g = te.data.grid.detect_grid(obj.data)
    p1 = te.data.masks.selection_map(obj, g)
    obj.scale = (2.0, 2.0, 2.0)
    bpy.context.view_layer.update()
    p2 = te.data.masks.selection_map(obj, g)
    assert np.all(p1[p1 < 1] <= 1) and (p2 < 1).sum() < (p1 < 1).sum()
    assert p1.min() == 0.0 and p1.max() == 1.0


def test_low_erodibility_group_erodes_measurably_less(blender):
    eroded = {}
    for hard in (1.0, 0.1):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        te.unregister()
        te.register()
        # real-world scale (30 m cells, 300 m relief), where the presets and defaults
        # are tuned: on a 4 m toy grid the droplets cut every cell to their per-step
        # cap and erodibility stops mattering
        obj = add_grid(bpy, n=40, size=39 * 30.0, relief=300.0)
        co = positions(obj.data)
        paint_group(obj, "soft", np.where(co[:, 0] < 0, hard, 1.0))
        s = obj.terrain_erosion
        s.mask_erodibility_source, s.mask_erodibility_name = 'VERTEX_GROUP', "soft"
        _run(obj)
        e = np.empty(len(obj.data.vertices), np.float32)
        obj.data.attributes["te_eroded"].data.foreach_get("value", e)
        eroded[hard] = e[co[:, 0] < 0].sum()
    assert eroded[0.1] < 0.5 * eroded[1.0]


def test_rain_mask_keeps_the_run_upstream_free(blender):
    """Rain painted on one spot: only cells downhill of it change."""
    k = 39 * 30.0 / 4.0  # the 4 x 4 layout at real-world scale: 30 m cells
    obj = add_grid(bpy, n=40, size=4.0 * k, relief=0.0)
    me = obj.data
    co = positions(me)
    co[:, 2] = -0.3 * co[:, 0]  # falls toward +x (17 degrees)
    me.attributes["position"].data.foreach_set("vector", co.ravel())
    me.update()
    spot = (np.abs(co[:, 0] + 1.0 * k) < 0.3 * k) & (np.abs(co[:, 1]) < 0.3 * k)
    paint_color(me, "rain", spot.astype(float))
    s = obj.terrain_erosion
    s.mask_rain_source, s.mask_rain_name = 'COLOR_ATTRIBUTE', "rain"
    _run(obj, particles=2000)
    after = positions(me)
    changed = after[:, 2] != co[:, 2]
    assert changed.any()
    assert after[changed, 0].min() >= (-1.3 - 0.2) * k, "nothing upstream of the rain changed"


def test_mask_problems_give_a_clear_message(blender):
    obj = add_grid(bpy, n=12)
    s = obj.terrain_erosion
    s.mask_protect_source, s.mask_protect_name = 'VERTEX_GROUP', "missing"
    with pytest.raises(te.simcore.errors.UserError, match="no vertex group 'missing'"):
        te.data.job.ErosionJob(obj)
    with pytest.raises(RuntimeError, match="no vertex group 'missing'"):
        bpy.ops.terrain.erode()
    s.mask_protect_source = 'NONE'
    s.mask_rain_source, s.mask_rain_name = 'COLOR_ATTRIBUTE', ""
    with pytest.raises(te.simcore.errors.UserError, match="no color attribute picked"):
        te.data.job.ErosionJob(obj)
    paint_color(obj.data, "dry", np.zeros(len(obj.data.vertices)))
    s.mask_rain_name = "dry"
    with pytest.raises(te.simcore.errors.UserError, match="zero everywhere"):
        te.data.job.ErosionJob(obj)
    s.mask_rain_source = 'NONE'
    s.selection_only = True
    obj.data.vertices.foreach_set("select", np.zeros(len(obj.data.vertices), bool))
    with pytest.raises(te.simcore.errors.UserError, match="empty"):
        te.data.job.ErosionJob(obj)
