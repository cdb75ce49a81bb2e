"""Process parameters keyed on the timeline drive a bake, in real Blender (bpy module):
each frame equals a run by hand with the value Blender shows at that frame, the manifest
lists the values, nothing keyed bakes as before, bad keys are refused up front."""

from __future__ import annotations

import json
import types

import bpy
import numpy as np
import pytest
from blender_helpers import PanelRecorder, add_grid, mesh_state, positions, same_state, staged_addon

te = staged_addon()

#: (process, field, value at the first frame, value at the last, batch, particles per
#: frame); the batch is small so that every frame gets two rounds of its own
CASES = {"droplet rate": ("droplets", "Kr", 0.1, 0.9, 200, 400),
         "uplift": ("landscape", "uplift", 0.0, 2.0e-5, 2, 4)}
PER_FRAME = 400
#: the landscape's age: the passes of frames 2..4 (4 a frame, 1e4 years each), no more
LANDSCAPE_AGE = 12 * 1.0e4


def terrain(name, process, batch, n=16):
    obj = add_grid(bpy, n=n, size=4.0, relief=1.0, name=name)
    s = obj.terrain_erosion
    s.seed = 7
    s.real_size = 4.0  # 1:1: the frames are compared with simcore on the local numbers
    for other in te.simcore.engine.simulation.PROCESSES:
        getattr(s, other).enabled = other == process
    getattr(s, process).batch = batch
    s.landscape.age = LANDSCAPE_AGE
    return obj


def key(obj, process, field, frames_values):
    group = getattr(obj.terrain_erosion, process)
    for frame, value in frames_values:
        setattr(group, field, value)
        obj.keyframe_insert(f"terrain_erosion.{process}.{field}", frame=frame)


def grid_heights(obj, z):
    g = te.data.grid.detect_grid(obj.data)
    return z[g.order].reshape(g.rows, g.cols)


@pytest.mark.parametrize("case", CASES)
def test_a_keyed_parameter_drives_each_frame_as_a_run_by_hand(blender, tmp_path, capsys,
                                                              case):
    process, field, lo, hi, batch, per_frame = CASES[case]
    obj = terrain("Keyed", process, batch)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    obj = bpy.data.objects["Keyed"]
    key(obj, process, field, [(1, lo), (4, hi)])
    scene = bpy.context.scene
    scene.frame_set(1)
    g = te.data.grid.detect_grid(obj.data)
    z0 = grid_heights(obj, positions(obj.data)[:, 2]).astype(np.float64)
    b = obj.terrain_bake
    b.frame_start, b.frame_end, b.particles_per_frame = 1, 4, per_frame
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.bake() == {'FINISHED'}
    assert scene.frame_current == 1, "the bake left the scene's frame alone"
    path = f"{process}.{field}"
    assert f"keyed: {te.features.keyed.title(path)}" in capsys.readouterr().out
    folder = tmp_path / "terrain_cache" / "Keyed"
    manifest = json.loads((folder / "cache.json").read_text())
    baked = {f: np.load(folder / f"frame_{f:06d}.npz")["z"] for f in range(1, 5)}
    # by hand: at each frame, the params Blender shows there, a run of per_frame more
    shown = {}
    for f in range(1, 5):
        scene.frame_set(f)
        shown[f] = obj.terrain_erosion.enabled_params()
    assert getattr(shown[1][process], field) == pytest.approx(lo)
    assert getattr(shown[4][process], field) == pytest.approx(hi)
    sim_mod = te.simcore.engine.simulation
    t = te.simcore.terrain.Terrain.from_heights(z0, g.cell_size)
    fixed = te.simcore.terrain.Terrain.from_heights(z0, g.cell_size)
    for f in range(2, 5):
        for land, params in ((t, shown[f]), (fixed, shown[1])):
            sim = sim_mod.Simulation(land, params, seed=7, particles=per_frame,
                                     rounds_done=(f - 2) * per_frame // batch)
            for _ in range(per_frame // batch):
                sim.run_round()
        want = (t.height() * g.cell_size).astype(np.float32)
        assert np.array_equal(grid_heights(obj, baked[f]), want), f"frame {f}"
    assert not np.array_equal(grid_heights(obj, baked[4]),
                              (fixed.height() * g.cell_size).astype(np.float32)), \
        "the keyed values made a difference"
    assert manifest["keyed"] == {
        "parameters": [path],
        "values": {path: {str(f): getattr(shown[f][process], field) for f in range(1, 5)}}}
    assert te.simcore.formats.bake_cache.read_manifest(folder / "cache.json") == manifest
    # the panel names what is keyed (the field itself shows Blender's keyed colours)
    log = []
    te.features.bake.TERRAIN_PT_bake.draw(types.SimpleNamespace(layout=PanelRecorder(log)),
                                          types.SimpleNamespace(active_object=obj))
    assert ("label", te.features.keyed.title(path), None) in log


def test_nothing_keyed_bakes_as_before_and_a_constant_key_changes_nothing(blender, tmp_path):
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    plain = terrain("Plain", "droplets", 200)
    steady = terrain("Steady", "droplets", 200)
    key(steady, "droplets", "Kr", [(1, plain.terrain_erosion.droplets.Kr)])
    first = te.features.bake.bake(plain, 1, 3, PER_FRAME)
    second = te.features.bake.bake(steady, 1, 3, PER_FRAME)
    assert "keyed" not in first, "nothing keyed: the manifest is as it was"
    assert set(first) == te.simcore.formats.bake_cache.OLD_KEYS | {"format", "generator"}
    assert second["keyed"] == {"parameters": ["droplets.Kr"], "values": {}}
    for f in range(1, 4):
        name = f"frame_{f:06d}.npz"
        a = np.load(tmp_path / "terrain_cache" / "Plain" / name)
        b = np.load(tmp_path / "terrain_cache" / "Steady" / name)
        assert sorted(a.files) == sorted(b.files)
        for entry in a.files:
            assert np.array_equal(a[entry], b[entry]), (f, entry)
    assert not np.array_equal(np.load(tmp_path / "terrain_cache" / "Plain" /
                                      "frame_000001.npz")["z"],
                              np.load(tmp_path / "terrain_cache" / "Plain" /
                                      "frame_000003.npz")["z"]), "the frames eroded"


def _refused(obj, match, tmp_path):
    """The bake is refused with ``match`` before anything changes."""
    before = mesh_state(obj.data)
    settings = {k: getattr(obj.terrain_erosion, k) for k in ("rounds_done", "provenance")}
    frame = bpy.context.scene.frame_current
    with pytest.raises(te.simcore.errors.UserError, match=match):
        te.features.bake.bake(obj, 1, 4, PER_FRAME)
    bpy.context.view_layer.objects.active = obj
    obj.terrain_bake.frame_start, obj.terrain_bake.frame_end = 1, 4
    with pytest.raises(RuntimeError, match=match):
        bpy.ops.terrain.bake()
    assert same_state(before, mesh_state(obj.data)), "the mesh is untouched"
    assert settings == {k: getattr(obj.terrain_erosion, k) for k in settings}
    assert bpy.context.scene.frame_current == frame
    assert not (tmp_path / "terrain_cache").exists(), "no cache folder made"
    assert not obj.terrain_bake.baked


def test_a_keyed_value_out_of_range_or_a_key_a_bake_cannot_follow_is_refused(
        blender, tmp_path):
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    obj = terrain("Bad", "droplets", 200)
    key(obj, "droplets", "Kr", [(1, 0.5), (4, 0.9)])
    fcurve = te.data.compat.action_fcurves(obj)[0]
    fcurve.keyframe_points[1].co[1] = 1.5  # dragged past 1 in the Graph Editor
    fcurve.update()
    # frame 3 is the first past the range
    _refused(obj, r"'Kr' = 1\.\d+ is out of range: allowed 0 <= Kr <= 1 .*as keyed at "
                  "frame 3: move its keyframes \\(Graph Editor\\)", tmp_path)
    fcurve.keyframe_points[1].co[1] = 0.9
    fcurve.update()
    key(obj, "droplets", "batch", [(1, 200), (3, 100)])
    _refused(obj, r"'batch' cannot change during a run \(200 -> 150\).*frame 2", tmp_path)
    obj.animation_data_clear()
    obj.terrain_erosion.droplets.batch = 200
    key(obj, "hydrology", "enabled", [(1, False), (3, True)])
    _refused(obj, r"'Rivers and lakes on/off' is keyed to change", tmp_path)
    obj.animation_data_clear()
    driver = obj.driver_add("terrain_erosion.droplets.Kr").driver
    driver.expression = "0.5"
    _refused(obj, r"Droplet.*Kr is set by a driver", tmp_path)
    obj.animation_data_clear()
    key(obj, "droplets", "Kr", [(1, 0.2), (4, 0.4)])
    ad = obj.animation_data
    ad.nla_tracks.new().strips.new("pushed down", 1, ad.action)
    ad.action = None
    _refused(obj, r"'droplets.Kr' is keyed in an NLA strip", tmp_path)


def test_old_caches_still_load(blender, tmp_path):
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    obj = terrain("Old", "droplets", 200)
    te.features.bake.bake(obj, 1, 3, PER_FRAME)
    scene = bpy.context.scene
    scene.frame_set(2)
    shown = mesh_state(obj.data)
    bpy.ops.wm.save_mainfile()
    # the manifest as the first versions wrote it (no format, no keyed values)
    path = tmp_path / "terrain_cache" / "Old" / "cache.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({k: data[k] for k in te.simcore.formats.bake_cache.OLD_KEYS}))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "scene.blend"))
    obj = bpy.data.objects["Old"]
    bpy.context.scene.frame_set(3)
    bpy.context.scene.frame_set(2)
    assert te.features.bake.message(obj) == ""
    assert same_state(shown, mesh_state(obj.data))
    assert te.features.bake.cache_files(path.parent)[0] == "cache.json", "still ours"


def test_every_process_parameter_can_be_keyed(blender):
    """The fields are RNA properties: the I key, the Graph Editor and the keyed colours
    work on each of them, the uplift rate, the ice's line and the wind's direction too."""
    obj = add_grid(bpy, n=4)
    s = obj.terrain_erosion
    for name in te.simcore.engine.simulation.PROCESSES:
        group = getattr(s, name)
        fields = te.features.keyed._fields(name)
        for field in fields:
            assert group.bl_rna.properties[field].is_animatable, (name, field)
    for path in ("landscape.uplift", "ice.ela", "ice.ela_fraction", "wind.direction"):
        assert obj.keyframe_insert(f"terrain_erosion.{path}", frame=1), path
    assert set(te.features.keyed.keyed_parameters(obj)) == {
        "landscape.uplift", "ice.ela", "ice.ela_fraction", "wind.direction"}


def test_the_values_read_for_a_bake_are_those_blender_shows_at_each_frame(blender):
    """Whole numbers, switches and single-precision floats come out of the keyframes as
    the animation system writes them into the fields."""
    obj = add_grid(bpy, n=4)
    s = obj.terrain_erosion
    s.droplets.enabled, s.hydrology.enabled = True, True
    key(obj, "hydrology", "spill", [(1, 3), (6, 17)])
    key(obj, "hydrology", "sea", [(1, False), (4, True)])
    key(obj, "hydrology", "drainage", [(1, 0.001), (6, 0.0123457)])
    key(obj, "droplets", "Kd", [(2, 0.3), (5, 0.05)])
    keyed = te.features.keyed.keyed_frames(obj, 1, 6)
    assert keyed.keyed == ["droplets.Kd", "hydrology.drainage", "hydrology.sea",
                           "hydrology.spill"]
    for f in range(1, 7):
        bpy.context.scene.frame_set(f)
        assert keyed.frames[f - 1] == s.enabled_params(), f"frame {f}"
    assert set(keyed.values) == set(keyed.keyed)
    assert keyed.values["hydrology.sea"] == {"1": False, "2": False, "3": False,
                                             "4": True, "5": True, "6": True}
