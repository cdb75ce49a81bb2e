"""Live painting in real Blender (bpy module): a scripted session (mask states from a
.npz) and a session on the worker thread with the mask repainted between ticks each
equal a Rebuild of their history entry, bit for bit; uplift painted along a line
raises a ridge drained on both sides; the session is one undo step; the vertex group
is read through the session's modifier, which goes away after; bad states are clear
messages and change nothing."""

from __future__ import annotations

import json
import time
import types

import bpy
import numpy as np
import pytest
from blender_helpers import add_grid, mesh_state, positions, same_state, staged_addon

te = staged_addon()

N = 33
CELL = 60.0


def _range(name="Range"):
    """A 33 x 33 grid of low hills, 60 m cells, with the young_range preset."""
    obj = add_grid(bpy, n=N, size=(N - 1) * CELL, relief=30.0, name=name)
    presets = {path.stem: path for _, path, _ in te.ui.presets_ui.all_presets()}
    assert bpy.ops.terrain.preset_apply(filepath=str(presets["young_range"])) == {'FINISHED'}
    s = obj.terrain_erosion
    s.real_size = (N - 1) * CELL
    s.landscape.uplift = 3e-3
    return obj


def _band(obj, width: float) -> np.ndarray:
    """Weights per vertex: 1 along the line x = 0, falling off over ``width`` metres."""
    x = positions(obj.data)[:, 0].astype(np.float64)
    return np.exp(-(x / width) ** 2)


def _save_states(path, rounds, uplift):
    np.savez(path, rounds=np.asarray(rounds), uplift=np.asarray(uplift))
    return str(path)


def _entry(obj) -> dict:
    return json.loads(obj.terrain_erosion.history[-1].data)


def test_a_scripted_session_equals_the_rebuild_of_its_entry(blender, tmp_path):
    obj = _range()
    narrow, wide = _band(obj, 200.0), 0.5 * _band(obj, 500.0)
    path = _save_states(tmp_path / "states.npz", [0, 2, 3], [narrow, wide, wide])
    assert bpy.ops.terrain.live_paint(states=path, rounds=5) == {'FINISHED'}
    entry = _entry(obj)
    assert entry["kind"] == "live" and entry["rounds"] == 5
    # the third state repeats the second: only the two the rounds used are kept
    assert [s["round"] for s in entry["states"]] == [0, 2]
    assert "Live painting uplift" in obj.terrain_erosion.history[-1].label
    live = mesh_state(obj.data)
    assert "te_stream" in live and "te_pool_depth" in live
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert same_state(live, mesh_state(obj.data))


def test_a_session_on_the_worker_with_the_mask_repainted_equals_its_rebuild(blender):
    obj = _range()
    reader = te.data.live.MaskReader(obj, "uplift")  # a new group 'Uplift', weight 0
    group = obj.vertex_groups["Uplift"]
    assert obj.modifiers.get(te.data.live.MODIFIER) is not None
    job = te.data.live.LiveJob(obj)
    job.live_update = 0.0
    rt = types.SimpleNamespace(stop_requested=False, progress=0.0, status="")
    weights = _band(obj, 300.0)
    strokes = [range(0, N * N // 3), range(N * N // 3, 2 * N * N // 3),
               range(2 * N * N // 3, N * N)]
    for stroke in strokes:  # paint a third of the band, let the land answer
        for i in stroke:
            group.add([i], float(weights[i]), 'REPLACE')
        obj.data.update()
        values = reader.read(obj, bpy.context)
        assert np.allclose(values[list(stroke)], weights[list(stroke)], atol=1e-6)
        job.paint({"uplift": values}, "the painted mask")
        rounds = job.sim.rounds_done
        deadline = time.perf_counter() + 60.0
        while job.sim.rounds_done < rounds + 2 and time.perf_counter() < deadline:
            assert te.features.operators.tick(job, rt, on_worker=True) == "running"
            time.sleep(0.01)
    job.finish()
    reader.close(obj)
    assert obj.modifiers.get(te.data.live.MODIFIER) is None
    assert te.data.live.MODIFIER not in bpy.data.node_groups
    entry = _entry(obj)
    assert entry["kind"] == "live" and len(entry["states"]) == 3
    live = mesh_state(obj.data)
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert same_state(live, mesh_state(obj.data))


def test_uplift_painted_along_a_line_raises_a_ridge_drained_on_both_sides(blender,
                                                                          tmp_path):
    from terrain_erosion.simcore.algorithms.drainage import route
    obj = _range()
    band = _band(obj, 400.0)
    path = _save_states(tmp_path / "ridge.npz", [0], [band])
    assert bpy.ops.terrain.live_paint(states=path, rounds=20) == {'FINISHED'}
    g = te.data.grid.detect_grid(obj.data)
    z = positions(obj.data)[:, 2][g.order].reshape(N, N).astype(np.float64)
    x = positions(obj.data)[:, 0][g.order].reshape(N, N)
    crest, flank = np.abs(x) < 150.0, np.abs(x) > 600.0
    inner = np.zeros((N, N), bool)
    inner[2:-2, 2:-2] = True
    assert z[crest & inner].mean() > z[flank & inner].mean() + 100.0, "a ridge stands"
    flow = route(z, CELL)
    area = flow.area.reshape(N, N) / CELL ** 2  # cells drained
    receiver = flow.receiver.reshape(N, N)
    rx = x.ravel()[receiver.ravel()].reshape(N, N)
    channel = inner & (area >= 8.0) & ~crest
    for side in (x < 0, x > 0):
        here = channel & side
        assert here.sum() >= 5, "channels gather on this side"
        away = np.sign(x[here]) * (rx[here] - x[here]) >= 0.0  # not towards the crest
        assert away.mean() > 0.9


def test_a_session_is_one_undo_step(blender, tmp_path):
    obj = _range()
    bpy.ops.ed.undo_push(message="before")
    before = mesh_state(obj.data)
    path = _save_states(tmp_path / "s.npz", [0], [_band(obj, 300.0)])
    assert bpy.ops.terrain.live_paint(states=path, rounds=3) == {'FINISHED'}
    assert not same_state(before, mesh_state(obj.data))
    bpy.ops.ed.undo_push(message="Live Painting")  # the GUI pushes it when it ends
    bpy.ops.ed.undo()
    obj = bpy.data.objects["Range"]
    assert same_state(before, mesh_state(obj.data))
    assert len(obj.terrain_erosion.history) == 0


@pytest.mark.parametrize("make, message", [
    (lambda w: {"rounds": [0], "uplift": [w[:-3]]}, "values, the mesh has"),
    (lambda w: {"rounds": [0], "uplift": [np.where(w > 0.5, np.nan, w)]}, "NaN"),
    (lambda w: {"rounds": [0], "uplift": [w * 3.0]}, "outside 0..1"),
    (lambda w: {"rounds": [0], "protect": [w]}, "one .* array per painted mask"),
    (lambda w: {"rounds": [0, 9], "uplift": [w, w]}, "outside the session"),
])
def test_bad_mask_states_are_clear_messages_and_change_nothing(blender, tmp_path, make,
                                                               message):
    obj = _range()
    before = mesh_state(obj.data)
    path = tmp_path / "bad.npz"
    np.savez(path, **{k: np.asarray(v) for k, v in make(_band(obj, 300.0)).items()})
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.terrain.live_paint(states=str(path), rounds=4)
    assert same_state(before, mesh_state(obj.data))
    assert len(obj.terrain_erosion.history) == 0
    with pytest.raises(RuntimeError, match="needs the mask states"):
        bpy.ops.terrain.live_paint()


def test_a_color_attribute_mask_is_read_directly_without_a_modifier(blender):
    obj = _range()
    me = obj.data
    gray = np.linspace(0.0, 1.0, len(me.vertices), dtype=np.float32)
    attr = me.color_attributes.new("rain paint", 'FLOAT_COLOR', 'POINT')
    rgba = np.repeat(gray[:, None], 4, axis=1)
    attr.data.foreach_set("color_srgb", rgba.ravel())
    s = obj.terrain_erosion
    s.mask_rain_source, s.mask_rain_name = 'COLOR_ATTRIBUTE', "rain paint"
    reader = te.data.live.MaskReader(obj, "rain")
    assert reader.mode == 'VERTEX_PAINT' and len(obj.modifiers) == 0
    assert np.allclose(reader.read(obj, bpy.context), gray, atol=2e-3)  # via sRGB
    reader.close(obj)
    with pytest.raises(te.simcore.algorithms.masks.MaskError, match="not 'protect'"):
        te.data.live.MaskReader(obj, "protect")
