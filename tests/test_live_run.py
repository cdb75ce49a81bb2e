"""A live run in real Blender (bpy module) owns the mesh's heights only: edits made
under it end it cleanly, keeping the result so far and its progress; Cancel and Reset
restore every object exactly; user errors are messages; seeds are 64-bit everywhere."""

from __future__ import annotations

import types

import bpy
import numpy as np
import pytest
from blender_helpers import (
    add_grid,
    mesh_state,
    positions,
    registered_addon,
    same_state,
    staged_addon,
)

te = staged_addon()


@pytest.fixture
def blender(tmp_path, monkeypatch):
    monkeypatch.setenv("TERRAIN_EROSION_USER_DIR", str(tmp_path / "user"))
    with registered_addon() as bpy_:
        yield bpy_


def _rt():
    return types.SimpleNamespace(stop_requested=False, progress=0.0, status="")


def _started(obj, ticks: int = 2, particles: int = 60000):
    """A job that has written the mesh ``ticks`` times."""
    obj.terrain_erosion.particles = particles
    job = te.job.ErosionJob(obj)
    job.live_update = 0.0
    rt = _rt()
    for _ in range(ticks):
        assert te.operators.tick(job, rt, budget=0.0) == "running"
    return job, rt


def _resumes_from_kept(obj, job):
    """The kept progress matches the mesh: a new run continues the sequence."""
    s = obj.terrain_erosion
    assert s.rounds_done == job.rounds_written > 0
    again = te.job.ErosionJob(obj)
    assert again.sim.rounds_done == s.rounds_done


def _apply(**transform):
    obj = bpy.context.active_object
    for key, value in transform.items():
        setattr(obj, key, value)
    bpy.ops.object.transform_apply(location=False, rotation="rotation_euler" in transform,
                                   scale="scale" in transform)


@pytest.mark.parametrize("transform", [{"scale": (2.0, 2.0, 2.0)},
                                       {"scale": (1.0, 1.0, 3.0)},
                                       {"rotation_euler": (0.0, 0.0, 0.7)},
                                       {"rotation_euler": (0.4, 0.0, 0.0)}])
def test_applying_a_transform_mid_run_stops_it_and_keeps_the_edit(blender, transform):
    obj = add_grid(bpy, n=24)
    job, rt = _started(obj)
    _apply(**transform)
    edited = positions(obj.data).copy()
    assert te.operators.tick(job, rt, budget=0.0) == "ended"
    assert "were moved" in rt.status and "kept the result so far" in rt.status
    assert np.array_equal(positions(obj.data), edited), "the user's edit is not reverted"
    assert obj.terrain_erosion.rounds_done == job.rounds_written > 0


def test_renaming_mid_run_stops_and_keeps_progress(blender):
    obj = add_grid(bpy, n=24, name="Hills")
    job, rt = _started(obj)
    eroded = mesh_state(obj.data)
    obj.name = "Valley"
    assert te.operators.tick(job, rt, budget=0.0) == "ended"
    assert "renamed to 'Valley'" in rt.status
    assert same_state(eroded, mesh_state(obj.data)), "the result so far stays"
    _resumes_from_kept(obj, job)


def test_edit_mode_mid_run_stops_and_keeps_progress(blender):
    obj = add_grid(bpy, n=24)
    job, rt = _started(obj)
    eroded = mesh_state(obj.data)
    bpy.ops.object.mode_set(mode='EDIT')
    assert te.operators.tick(job, rt, budget=0.0) == "ended"
    assert "left Object Mode" in rt.status
    assert job.cancel() is not None, "Esc in Edit Mode says it cannot restore"
    bpy.ops.object.mode_set(mode='OBJECT')
    assert same_state(eroded, mesh_state(obj.data))
    _resumes_from_kept(obj, job)


def _rivers(obj):
    s = obj.terrain_erosion
    s.apply_preset(te.simcore.formats.presets.find_preset("rivers_and_lakes"))
    s.hydrology.sea = True
    s.hydrology.sea_level = 4.0
    s.trees.spawn_tries = 20
    # the preset's creep is tuned for 30 m cells; on this 4 m grid it flattens the
    # land above the sea in a few passes (and sub-steps for minutes)
    s.thermal.creep = 0.0
    return s


@pytest.mark.parametrize("helper", ["trees_object", "water_object"])
def test_deleting_a_helper_object_mid_run_stops_it(blender, helper):
    obj = add_grid(bpy, n=32, size=4.0, relief=1.0)
    s = _rivers(obj)
    job, rt = _started(obj, ticks=1, particles=20000)
    assert getattr(s, helper) is not None
    bpy.data.objects.remove(getattr(s, helper))
    assert te.operators.tick(job, rt, budget=0.0) == "ended"
    assert f"the {helper.split('_')[0]} object" in rt.status and "deleted" in rt.status
    assert getattr(s, helper) is None, "not silently re-created"
    assert s.rounds_done == job.rounds_written > 0


def test_cancel_restores_terrain_trees_and_water_exactly(blender):
    obj = add_grid(bpy, n=32, size=4.0, relief=1.0)
    s = _rivers(obj)
    s.particles = 3000
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    trees, water = s.trees_object, s.water_object
    assert trees is not None and water is not None
    assert "te_wet" in water.data.attributes
    before = [mesh_state(o.data) for o in (obj, trees, water)]
    rounds = s.rounds_done
    job, rt = _started(obj, ticks=2, particles=60000)
    during = [mesh_state(o.data) for o in (obj, trees, water)]
    assert not same_state(before[0], during[0]) and not same_state(before[2], during[2])
    assert job.cancel() is None
    after = [mesh_state(o.data) for o in (s.trees_object, s.water_object)]
    assert same_state(before[0], mesh_state(obj.data))
    assert same_state(before[1], after[0]), "trees exactly as before"
    assert same_state(before[2], after[1]), "water surface and its wet layer as before"
    assert s.rounds_done == rounds

    original = mesh_state(obj.data)["te_original_z"]
    assert bpy.ops.terrain.reset() == {'FINISHED'}
    assert np.array_equal(positions(obj.data)[:, 2], original)
    assert s.trees_object is None and s.water_object is None
    assert not [a for a in obj.data.attributes if a.name.startswith("te_")]


def test_reset_refuses_damaged_original_heights(blender):
    obj = add_grid(bpy, n=16)
    obj.terrain_erosion.particles = 2000
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    attr = obj.data.attributes["te_original_z"]
    values = np.empty(len(obj.data.vertices), np.float32)
    attr.data.foreach_get("value", values)
    values[7] = np.nan
    attr.data.foreach_set("value", values)
    before = mesh_state(obj.data)
    with pytest.raises(RuntimeError, match="stored original heights .* are damaged"):
        bpy.ops.terrain.reset()
    assert same_state(before, mesh_state(obj.data)), "nothing written"


def _write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


class _Layout:
    def __init__(self, log):
        self.log = log

    def row(self, **_kw):
        return self

    def operator(self, idname, text="", icon='NONE'):
        self.log.append((idname, text, icon))
        return types.SimpleNamespace()

    def separator(self):
        pass


def test_broken_user_presets_are_listed_not_fatal(blender, tmp_path):
    user = tmp_path / "user" / "presets"
    presets = te.simcore.formats.presets
    good = presets.dump_preset(presets.find_preset("quick_preview"))
    _write(user / "mine.toml", good.replace("Quick preview", "Mine").encode())
    _write(user / "hand_edited.toml", b"[droplets]\nKd = 5000.0\n")
    _write(user / "latin1.toml", b"[preset]\nname = \"Caf\xe9\"\n[droplets]\n")
    _write(user / "garbage.toml", b"\x00\xff[[[")
    obj = add_grid(bpy, n=12)
    log = []
    te.presets_ui.TERRAIN_MT_presets.draw(types.SimpleNamespace(layout=_Layout(log)),
                                          bpy.context)
    labels = {text: icon for op, text, icon in log if op == "terrain.preset_apply"}
    assert labels["Mine"] == 'USER' and labels["Default"] == 'PRESET'
    for stem in ("hand_edited", "latin1", "garbage"):
        assert labels[f"{stem} (broken)"] == 'ERROR'
    s = obj.terrain_erosion
    s.droplets.Kq = 12.0
    for stem, message in (("hand_edited", "'Kd' = 5000.0 is out of range"),
                          ("latin1", "is not UTF-8 text"), ("garbage", "UTF-8")):
        with pytest.raises(RuntimeError, match=message):
            bpy.ops.terrain.preset_apply(filepath=str(user / f"{stem}.toml"))
        assert s.droplets.Kq == 12.0, "a refused preset changes nothing"


def test_preset_save_and_delete_failures_are_messages(blender, tmp_path, monkeypatch):
    add_grid(bpy, n=12)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the folder should be")
    monkeypatch.setenv("TERRAIN_EROSION_USER_DIR", str(blocker))
    with pytest.raises(RuntimeError, match=str(blocker)):
        bpy.ops.terrain.preset_save(name="Nope")
    monkeypatch.setenv("TERRAIN_EROSION_USER_DIR", str(tmp_path / "user"))
    folder = tmp_path / "user" / "presets" / "stuck.toml"
    folder.mkdir(parents=True)
    with pytest.raises(RuntimeError, match="cannot delete preset"):
        bpy.ops.terrain.preset_delete(filepath=str(folder))


BIG_SEED = 2**40 + 12345


def test_a_seed_above_2_31_gives_the_same_terrain_everywhere(blender, tmp_path, capsys):
    from terrain_erosion.simcore.cli import main as cli_main
    a = add_grid(bpy, n=24, name="A")
    b = add_grid(bpy, n=24, name="B")
    g = te.grid.detect_grid(a.data)
    z0 = positions(a.data)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    heights = tmp_path / "z0.npy"
    np.save(heights, z0)

    preset = te.simcore.formats.presets.find_preset("droplets_only").with_overrides(
        {"seed": BIG_SEED, "particles": 4096})
    a.terrain_erosion.apply_preset(preset)
    s = a.terrain_erosion
    assert s.full_seed() == BIG_SEED and s.seed_text == str(BIG_SEED)
    bpy.context.view_layer.objects.active = a
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    assert s.stored_state_seed() == BIG_SEED

    assert te.batch.main(["--object", "B", "--preset", "droplets_only", "--seed",
                          str(BIG_SEED), "--particles", "4096"]) == 0
    out = tmp_path / "cli.npy"
    assert cli_main(["erode", "--preset", "droplets_only", "--input", str(heights),
                     "--cell-size", str(g.cell_size), "--seed", str(BIG_SEED),
                     "--particles", "4096", "--output", str(out), "--quiet"]) == 0
    cli = np.load(out).astype(np.float32)
    za = positions(a.data)[:, 2][g.order].reshape(g.rows, g.cols)
    zb = positions(b.data)[:, 2][g.order].reshape(g.rows, g.cols)
    assert np.array_equal(za, zb), "add-on and batch command agree"
    assert np.array_equal(za, cli), "and the CLI"
    other = np.load(heights)
    assert not np.array_equal(za, other.astype(np.float32)), "the run did erode"
    # a different big seed gives another terrain (no clamping to one value)
    c = add_grid(bpy, n=24, name="C")
    assert te.batch.main(["--object", "C", "--preset", "droplets_only", "--seed",
                          str(BIG_SEED + 1), "--particles", "4096"]) == 0
    assert not np.array_equal(positions(c.data)[:, 2][g.order].reshape(g.rows, g.cols), za)


def test_64_bit_seed_survives_save_and_reload_and_old_int_seeds_work(blender, tmp_path):
    obj = add_grid(bpy, n=12, name="Hills")
    s = obj.terrain_erosion
    s.set_full_seed(BIG_SEED)
    path = str(tmp_path / "t.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    s = bpy.data.objects["Hills"].terrain_erosion
    assert s.full_seed() == BIG_SEED
    s.seed = 77  # typing a small seed in the 32-bit field takes over
    assert s.full_seed() == 77 and s.seed_text == ""
    s.seed_text = "123"  # a small seed typed as text moves to the int field
    assert s.seed == 123 and s.seed_text == "" and s.full_seed() == 123
    s.seed_text = "12x"
    with pytest.raises(te.simcore.params.ParameterError, match="whole number"):
        s.full_seed()
    obj = bpy.data.objects["Hills"]
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match="Seed '12x'"):
        bpy.ops.terrain.erode()


def test_batch_particles_zero_and_bad_save_path(blender, tmp_path, capsys):
    obj = add_grid(bpy, n=16, name="Terrain")
    before = mesh_state(obj.data)
    obj.terrain_erosion.particles = 5000
    assert te.batch.main(["--object", "Terrain", "--particles", "0"]) == 0
    assert "nothing to erode" in capsys.readouterr().out
    assert same_state(before, mesh_state(obj.data)), "0 particles erodes nothing"
    assert obj.terrain_erosion.particles == 5000
    missing = tmp_path / "missing" / "out.blend"
    assert te.batch.main(["--object", "Terrain", "--particles", "3000", "--save-as",
                          str(missing)]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and str(missing) in err
    assert same_state(before, mesh_state(obj.data)), "refused before the run"
    assert te.batch.main(["--object", "Terrain", "--seed", str(2**63)]) == 2
    assert "out of range" in capsys.readouterr().err
    assert te.batch.main(["--object", "Terrain", "--particles", "-4"]) == 2


def test_batch_arguments_fuzzed(blender, capsys):
    """Whatever the arguments, the batch command exits 0 (finite heights) or 2 (one
    message, the mesh untouched)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    obj = add_grid(bpy, n=12, name="Terrain")
    value = st.one_of(st.integers(-3, 3000).map(str), st.sampled_from(
        ["0", "nan", "1e400", "x", "", str(2**63), str(2**63 - 1), str(2**31)]))
    work = st.one_of(st.integers(-3, 3000).map(str), st.sampled_from(
        ["0", "x", str(10**11), str(2**63)]))  # never billions of particles: too slow
    flag = st.sampled_from(["--seed", "--particles", "--set", "--preset", "--object"])
    sets = st.sampled_from(["droplets.Kq=5", "droplets.Kq=-1", "lava.x=1", "Kq",
                            "snowball.enabled=true", "droplets.Kr=nan", "seed=3"])
    presets = st.sampled_from(["default", "quick_preview", "nope", "/no/such.toml"])
    outcomes = {0: 0, 2: 0}

    @settings(max_examples=40, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.tuples(flag, value, sets, presets, work), max_size=4))
    def run(items):
        argv = ["--object", "Terrain"]
        for name, v, s, p, w in items:
            argv += [name, {"--set": s, "--preset": p, "--object": "Terrain",
                            "--particles": w}.get(name, v)]
        if "--particles" not in argv:
            argv += ["--particles", "2000"]
        before = mesh_state(obj.data)
        code = te.batch.main(argv)
        assert code in (0, 2)
        outcomes[code] += 1
        err = capsys.readouterr().err
        if code == 2:
            assert "error" in err or "usage" in err
            assert same_state(before, mesh_state(obj.data))
        assert np.isfinite(positions(obj.data)).all()
    run()
    print(f"\nbatch fuzz outcomes: {outcomes[0]} valid, {outcomes[2]} user error")
    assert outcomes[0] and outcomes[2]


# -- rounds on a worker thread (the modal Erode) ------------------------------------------
def _runner_threads():
    import threading
    return [t for t in threading.enumerate() if t.name == te.job.RUNNER_THREAD]


def _background_until(job, rt, stop=lambda: False, limit=20000):
    """Tick like the modal operator (rounds on the worker) until not running or
    ``stop()``; returns the last state and how many ticks saw the worker alive."""
    import time
    seen = 0
    for _ in range(limit):
        state = te.operators.tick(job, rt, budget=0.0, background=True)
        seen += bool(_runner_threads())
        if state != "running" or stop():
            return state, seen
        time.sleep(0.002)
    raise AssertionError("the background run did not finish")


def test_a_background_run_gives_the_same_terrain_as_a_synchronous_one(blender):
    objs = [add_grid(bpy, n=32, size=4.0, relief=1.0, name=n) for n in ("Sync", "Live")]
    for o in objs:
        o.terrain_erosion.particles = 20000
    te.job.ErosionJob(objs[0]).run()
    job, rt = te.job.ErosionJob(objs[1]), _rt()
    job.live_update = 0.0
    state, seen = _background_until(job, rt)
    assert state == "done" and seen > 0, "the rounds ran on the worker thread"
    job.finish()
    assert not _runner_threads(), "the worker ended with the run"
    assert np.array_equal(positions(objs[0].data), positions(objs[1].data))
    assert objs[0].terrain_erosion.rounds_done == objs[1].terrain_erosion.rounds_done > 0


def test_cancel_and_edits_stop_the_worker_and_restore_or_keep(blender):
    obj = add_grid(bpy, n=32, size=4.0, relief=1.0)
    before = mesh_state(obj.data)
    obj.terrain_erosion.particles = 400000
    job, rt = te.job.ErosionJob(obj), _rt()
    job.live_update = 0.0
    state, _ = _background_until(job, rt, stop=lambda: job.rounds_written >= 2)
    assert state == "running" and _runner_threads()
    assert not same_state(before, mesh_state(obj.data)), "written between rounds"
    assert job.cancel() is None  # does not wait for the worker's round
    assert same_state(before, mesh_state(obj.data)), "Esc puts the mesh back exactly"
    job._runner.thread.join()
    assert not _runner_threads(), "the worker stopped after its round"
    assert same_state(before, mesh_state(obj.data)), "and never touched the mesh"

    job, rt = te.job.ErosionJob(obj), _rt()
    job.live_update = 0.0
    state, _ = _background_until(job, rt, stop=lambda: job.rounds_written >= 2)
    obj.name = "Renamed"
    assert te.operators.tick(job, rt, budget=0.0, background=True) == "ended"
    assert "renamed" in rt.status
    job._runner.thread.join()
    assert not _runner_threads(), "the worker stopped after its round"
    _resumes_from_kept(obj, job)


def test_a_run_names_what_its_grid_cannot_show(blender):
    obj = add_grid(bpy, n=32, size=2.0)  # 6.5 cm cells
    s = obj.terrain_erosion
    s.apply_preset(te.simcore.formats.presets.find_preset("young_range"))
    job = te.job.ErosionJob(obj)
    assert [t for t in job.advice if t.startswith("landscape: uplift")], job.advice
    s.landscape.enabled = False
    assert te.job.ErosionJob(obj).advice == []
