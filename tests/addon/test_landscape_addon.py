"""Landscape evolution in real Blender (bpy module): its panel shows the physical units,
the young_range preset raises a generated grid's relief and records the uplift
(``te_uplifted``) and the lakes, an uplift mask holds a painted block down, one undo
step takes it all back, and the batch command runs the preset."""

from __future__ import annotations

import dataclasses
import types

import bpy
import numpy as np
import pytest
from blender_helpers import (
    PanelRecorder,
    add_grid,
    mesh_state,
    positions,
    same_state,
    staged_addon,
)

te = staged_addon()

N = 48  # vertices a side
CELL = 60.0  # local units (metres): a 2.8 km grid
AGE, UPLIFT = 2.0e6, 1.0e-3  # young_range: 2 My at 1 mm/yr -> 2000 m of rock raised


def young_range(name="Range"):
    """A 48 x 48 grid of fractal hills (200 m relief) with the young_range preset, applied
    as the Presets menu does, at its literal size."""
    obj = add_grid(bpy, n=N, size=(N - 1) * CELL, relief=200.0, name=name)
    presets = {path.stem: path for _, path, _ in te.ui.presets_ui.all_presets()}
    assert bpy.ops.terrain.preset_apply(filepath=str(presets["young_range"])) == {'FINISHED'}
    s = obj.terrain_erosion
    s.real_size = (N - 1) * CELL  # 1 unit = 1 m: uplift and time in the object's metres
    assert s.preset == "Young range" and s.landscape.enabled and s.thermal.enabled
    assert not s.droplets.enabled
    assert s.landscape.age == AGE and s.landscape.uplift == pytest.approx(UPLIFT)
    return obj


def raster(obj, values):
    g = te.data.grid.detect_grid(obj.data)
    return np.asarray(values)[g.order].reshape(g.rows, g.cols)


def edges(a):
    return np.concatenate([a[0], a[-1], a[:, 0], a[:, -1]])


def _draw(cls, obj):
    log = []
    panel = types.SimpleNamespace(layout=PanelRecorder(log))
    context = types.SimpleNamespace(active_object=obj)
    if hasattr(cls, "draw_header"):
        cls.draw_header(panel, context)
    cls.draw(panel, context)
    return log


def test_panel_shows_the_landscape_parameters_with_units(blender):
    obj = add_grid(bpy, n=8)
    cls = bpy.types.TERRAIN_PT_landscape
    assert cls.bl_label == "Landscape evolution" and cls.bl_parent_id == "TERRAIN_PT_main"
    shown = {name: text for kind, name, text in _draw(cls, obj) if kind == "prop"}
    params = te.simcore.processes.landscape.LandscapeParams
    assert set(shown) == {"enabled"} | {f.name for f in dataclasses.fields(params)}
    assert shown["age"] == "Age (yr)" and shown["time_step"] == "Time step (yr)"
    assert shown["uplift"] == "Uplift (m/yr)"
    assert shown["diffusivity"] == "Diffusivity (m^2/yr)"
    assert shown["head_area"] == "Head area (m^2)"
    assert shown["k"].startswith("k (m^(1-2m)/yr")
    assert shown["m"] == "m" and shown["batch"] == "Batch", "no unit on plain numbers/counts"
    group = obj.terrain_erosion.landscape
    age = group.bl_rna.properties["age"]
    assert "[yr]" in age.description and age.hard_max == pytest.approx(1e9)
    # the other panels and the masks show the new map and layer too
    masks = _draw(bpy.types.TERRAIN_PT_masks, obj)
    assert ("prop", "mask_uplift_source", "Uplift") in masks
    out = " ".join(text for kind, text, _ in _draw(bpy.types.TERRAIN_PT_output, obj)
                   if kind == "label")
    assert "te_uplifted" in out and "te_pool_depth" in out and "te_sediment" in out


def test_young_range_raises_the_relief_records_uplift_one_undo_step(blender, capfd):
    obj = young_range()
    original = mesh_state(obj.data)
    z0 = raster(obj, positions(obj.data)[:, 2].copy())
    bpy.ops.ed.undo_push(message="before erosion")
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    assert "Traceback" not in capfd.readouterr().err
    me = obj.data
    z = raster(obj, positions(me)[:, 2])
    assert np.ptp(z) > 2.0 * np.ptp(z0), "the range rose against its fixed edges"
    # the edges are the landscape's base level: they do not rise (thermal's hillslope
    # debris lands on them: tens of metres, against 2000 m of uplift inside)
    assert np.abs(edges(z) - edges(z0)).max() < 0.1 * AGE * UPLIFT
    state = mesh_state(me)
    for name in ("te_uplifted", "te_pool_depth", "te_pools", "te_stream", "te_bedrock",
                 "te_eroded", "te_deposited", "te_sediment_depth"):
        assert name in state, name
    up = raster(obj, state["te_uplifted"])
    assert np.all(edges(up) == 0.0)
    # 2 My x 1 mm/yr everywhere inside (the uplift map is 1): 2000 local units
    assert np.allclose(up[1:-1, 1:-1], AGE * UPLIFT, rtol=1e-5)
    assert state["te_pool_depth"].min() >= 0.0
    assert state["te_stream"].max() > 0.0, "the trunk rivers are marked"
    assert np.allclose(state["te_bedrock"] + state["te_sediment_depth"], positions(me)[:, 2],
                       atol=1e-3)
    s = obj.terrain_erosion
    assert s.rounds_done == 10, "age / time_step / batch = 100 passes / 10"
    assert "Young range" in s.provenance
    eroded = mesh_state(me)
    bpy.ops.ed.undo_push(message="Erode")  # the GUI pushes it when an 'UNDO' op ends
    bpy.ops.ed.undo()
    assert same_state(original, mesh_state(bpy.data.objects["Range"].data))
    bpy.ops.ed.redo()
    assert same_state(eroded, mesh_state(bpy.data.objects["Range"].data))


def _paint(obj, name, weights):
    """Vertex group ``name`` with every vertex at its weight (0 included)."""
    group = obj.vertex_groups.new(name=name)
    for i, w in enumerate(weights):
        group.add([i], float(w), 'REPLACE')
    return group


def test_uplift_group_of_weight_zero_keeps_a_half_down(blender):
    obj = young_range()
    x = positions(obj.data)[:, 0].copy()
    _paint(obj, "rises", (x > 0).astype(float))  # the west half painted 0
    s = obj.terrain_erosion
    s.mask_uplift_source, s.mask_uplift_name = 'VERTEX_GROUP', "rises"
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    state = mesh_state(obj.data)
    up, xr = raster(obj, state["te_uplifted"]), raster(obj, x)
    z = raster(obj, positions(obj.data)[:, 2])
    assert np.all(up[xr < 0] == 0.0), "the block painted 0 never rose"
    inner = np.zeros_like(xr, bool)
    inner[1:-1, 1:-1] = True
    assert np.allclose(up[inner & (xr > 0)], AGE * UPLIFT, rtol=1e-5)
    assert z[xr > 0].mean() > z[xr < 0].mean() + 100.0, "the east half stands higher"


def test_uplift_from_a_color_attribute_and_a_lake_behind_a_rising_rim(blender):
    """A block that does not rise inside the rising range holds a lake (te_pool_depth,
    a water surface) after the first batch; the color attribute's gray is the map."""
    obj = young_range()
    me = obj.data
    co = positions(me)
    rim = (np.hypot(co[:, 0], co[:, 1]) > 600.0).astype(np.float32)
    attr = me.color_attributes.new("uplift", 'FLOAT_COLOR', 'POINT')
    rgba = np.repeat(rim[:, None], 4, axis=1)
    rgba[:, 3] = 1.0
    attr.data.foreach_set("color_srgb", rgba.ravel())
    s = obj.terrain_erosion
    s.mask_uplift_source, s.mask_uplift_name = 'COLOR_ATTRIBUTE', "uplift"
    job = te.data.job.ErosionJob(obj)
    assert job.masks_used == ["uplift"]
    assert np.allclose(job.sim.terrain.uplift, raster(obj, rim), atol=1e-4)
    job.live_update = 0.0
    rt = types.SimpleNamespace(stop_requested=False, progress=0.0, status="")
    assert te.features.operators.tick(job, rt, budget=0.0) == "running"  # one batch, written
    job.finish(wait=False)
    pool = mesh_state(me)["te_pool_depth"]
    assert pool.max() > 0.0, "the sunken block holds a lake"
    wet = pool > 0
    # the lake lies in the block that did not rise (its shore may lap onto the rim)
    assert (wet & (rim == 0)).sum() >= 0.8 * wet.sum()
    assert s.water_object is not None


def test_batch_command_runs_the_young_range_preset(blender, capsys):
    obj = add_grid(bpy, n=N, size=(N - 1) * CELL, relief=200.0, name="Terrain")
    z0 = positions(obj.data)[:, 2].copy()
    assert te.features.batch.main(["--object", "Terrain", "--preset", "young_range",
                                   "--real-size", str((N - 1) * CELL)]) == 0  # 1 unit = 1 m
    out = capsys.readouterr()
    assert "done" in out.out and "Traceback" not in out.err
    assert obj.terrain_erosion.preset == "Young range"
    assert np.ptp(positions(obj.data)[:, 2]) > 2.0 * np.ptp(z0)
    up = mesh_state(obj.data)["te_uplifted"]
    assert up.max() == pytest.approx(AGE * UPLIFT, rel=1e-5) and up.min() == 0.0
