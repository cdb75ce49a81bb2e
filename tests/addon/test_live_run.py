"""A live run in real Blender (bpy module) owns the mesh's heights only: edits made
under it end it cleanly, keeping the result so far and its progress; Cancel and Reset
restore every object exactly; user errors are messages; seeds are 64-bit everywhere."""

from __future__ import annotations

import types
from pathlib import Path

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
    job = te.data.job.ErosionJob(obj)
    job.live_update = 0.0
    rt = _rt()
    for _ in range(ticks):
        assert te.features.operators.tick(job, rt, budget=0.0) == "running"
    return job, rt


def _resumes_from_kept(obj, job):
    """The kept progress matches the mesh: a new run continues the sequence."""
    s = obj.terrain_erosion
    assert s.rounds_done == job.rounds_written > 0
    again = te.data.job.ErosionJob(obj)
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
    assert te.features.operators.tick(job, rt, budget=0.0) == "ended"
    assert "were moved" in rt.status and "kept the result so far" in rt.status
    assert np.array_equal(positions(obj.data), edited), "the user's edit is not reverted"
    assert obj.terrain_erosion.rounds_done == job.rounds_written > 0


def test_renaming_mid_run_stops_and_keeps_progress(blender):
    obj = add_grid(bpy, n=24, name="Hills")
    job, rt = _started(obj)
    eroded = mesh_state(obj.data)
    obj.name = "Valley"
    assert te.features.operators.tick(job, rt, budget=0.0) == "ended"
    assert "renamed to 'Valley'" in rt.status
    assert same_state(eroded, mesh_state(obj.data)), "the result so far stays"
    _resumes_from_kept(obj, job)


def test_edit_mode_mid_run_stops_and_keeps_progress(blender):
    obj = add_grid(bpy, n=24)
    job, rt = _started(obj)
    eroded = mesh_state(obj.data)
    bpy.ops.object.mode_set(mode='EDIT')
    assert te.features.operators.tick(job, rt, budget=0.0) == "ended"
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
    assert te.features.operators.tick(job, rt, budget=0.0) == "ended"
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
    te.ui.presets_ui.TERRAIN_MT_presets.draw(types.SimpleNamespace(layout=_Layout(log)),
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
    from terrain_erosion.simcore.cli.main import main as cli_main
    a = add_grid(bpy, n=24, name="A")
    b = add_grid(bpy, n=24, name="B")
    a.terrain_erosion.real_size = 2.0  # 1:1, as the CLI's --cell-size below
    g = te.data.grid.detect_grid(a.data)
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

    assert te.features.batch.main(["--object", "B", "--preset", "droplets_only", "--seed",
                          str(BIG_SEED), "--particles", "4096", "--real-size", "2"]) == 0
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
    assert te.features.batch.main(["--object", "C", "--preset", "droplets_only", "--seed",
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
    assert te.features.batch.main(["--object", "Terrain", "--particles", "0"]) == 0
    assert "nothing to erode" in capsys.readouterr().out
    assert same_state(before, mesh_state(obj.data)), "0 particles erodes nothing"
    assert obj.terrain_erosion.particles == 5000
    missing = tmp_path / "missing" / "out.blend"
    assert te.features.batch.main(["--object", "Terrain", "--particles", "3000", "--save-as",
                          str(missing)]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and str(missing) in err
    assert same_state(before, mesh_state(obj.data)), "refused before the run"
    assert te.features.batch.main(["--object", "Terrain", "--seed", str(2**63)]) == 2
    assert "out of range" in capsys.readouterr().err
    assert te.features.batch.main(["--object", "Terrain", "--particles", "-4"]) == 2


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
        code = te.features.batch.main(argv)
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
    return [t for t in threading.enumerate() if t.name == te.data.job.RUNNER_THREAD]


def _background_until(job, rt, stop=lambda: False, limit=20000):
    """Tick like the modal operator (rounds on the worker) until not running or
    ``stop()``; returns the last state and how many ticks saw the worker alive."""
    import time
    seen = 0
    for _ in range(limit):
        state = te.features.operators.tick(job, rt, budget=0.0, on_worker=True)
        seen += bool(_runner_threads())
        if state != "running" or stop():
            return state, seen
        time.sleep(0.002)
    raise AssertionError("the background run did not finish")


def test_a_background_run_gives_the_same_terrain_as_a_synchronous_one(blender):
    objs = [add_grid(bpy, n=32, size=4.0, relief=1.0, name=n) for n in ("Sync", "Live")]
    for o in objs:
        o.terrain_erosion.particles = 20000
    te.data.job.ErosionJob(objs[0]).run()
    job, rt = te.data.job.ErosionJob(objs[1]), _rt()
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
    job, rt = te.data.job.ErosionJob(obj), _rt()
    job.live_update = 0.0
    state, _ = _background_until(job, rt, stop=lambda: job.rounds_written >= 2)
    assert state == "running" and _runner_threads()
    assert not same_state(before, mesh_state(obj.data)), "written between rounds"
    assert job.cancel() is None  # does not wait for the worker's round
    assert same_state(before, mesh_state(obj.data)), "Esc puts the mesh back exactly"
    job._runner.thread.join()
    assert not _runner_threads(), "the worker stopped after its round"
    assert same_state(before, mesh_state(obj.data)), "and never touched the mesh"

    job, rt = te.data.job.ErosionJob(obj), _rt()
    job.live_update = 0.0
    state, _ = _background_until(job, rt, stop=lambda: job.rounds_written >= 2)
    obj.name = "Renamed"
    assert te.features.operators.tick(job, rt, budget=0.0, on_worker=True) == "ended"
    assert "renamed" in rt.status
    job._runner.thread.join()
    assert not _runner_threads(), "the worker stopped after its round"
    _resumes_from_kept(obj, job)


def test_a_run_names_what_its_grid_cannot_show(blender):
    obj = add_grid(bpy, n=32, size=2.0)
    s = obj.terrain_erosion
    s.apply_preset(te.simcore.formats.presets.find_preset("young_range"))
    s.real_size = 2.0  # really 2 m across: 6.5 cm cells (automatic: 5 km, 161 m cells)
    job = te.data.job.ErosionJob(obj)
    assert [t for t in job.advice if t.startswith("landscape: uplift")], job.advice
    s.landscape.enabled = False
    assert te.data.job.ErosionJob(obj).advice == []


# -- large grids: a tick writes a bounded slice of a frame -----------------------------
def _live_ticks(job, rt, until, limit_s=300.0, sleep=0.002):
    """Tick like the modal operator until ``until()``; per tick that wrote: (values
    written, item kinds, seconds); and the progress fraction after every tick."""
    import time
    writes, fractions = [], []
    end = time.perf_counter() + limit_s
    while not until():
        assert time.perf_counter() < end, "the live run made no progress"
        t0 = time.perf_counter()
        state = te.features.operators.tick(job, rt, budget=0.0, on_worker=True)
        took = time.perf_counter() - t0
        assert state in ("running", "done"), rt.status
        if job.writer.tick_items and job._wrote:
            writes.append((job.writer.tick_values, [i.kind for i in job.writer.tick_items],
                           took))
        fractions.append(rt.progress)
        if state == "done":
            break
        time.sleep(sleep)
    return writes, fractions


def test_a_live_frame_is_written_in_capped_slices_and_ends_as_a_synchronous_run(blender):
    """With a cap of one color layer per tick a frame takes several ticks; no tick
    writes more than the cap unless it writes a single item; the progress only grows;
    the finished mesh, trees and water are bit-identical to a synchronous run."""
    objs = [add_grid(bpy, n=48, size=4.0, relief=1.0, name=n) for n in ("Sync", "Live")]
    for obj in objs:
        _rivers(obj).particles = 6000
    te.data.job.ErosionJob(objs[0]).run()
    job, rt = te.data.job.ErosionJob(objs[1]), _rt()
    job.live_update = 0.0
    cap = job.tick_values = 4 * 48 * 48  # one color layer's values
    job.tick_seconds = None  # the cap alone
    writes, fractions = _live_ticks(job, rt, lambda: False)
    assert fractions[-1] == 1.0 and fractions == sorted(fractions), "progress only grows"
    assert job.frames_written >= 2 and len(writes) > 2 * job.frames_written, "sliced"
    for values, kinds, _ in writes:
        assert values <= cap or len(kinds) == 1, (values, kinds)
    assert job.finish() == job.sim.target_particles
    for a, b in ((objs[0], objs[1]), *[(getattr(objs[0].terrain_erosion, k),
                                         getattr(objs[1].terrain_erosion, k))
                                        for k in ("trees_object", "water_object")]):
        assert same_state(mesh_state(a.data), mesh_state(b.data)), a.name
    assert not _runner_threads()


def test_an_unchanged_layer_is_not_written_again(blender):
    obj = add_grid(bpy, n=24)
    obj.terrain_erosion.particles = 4000
    job = te.data.job.ErosionJob(obj)
    job.sim.run_round()
    job.write(job.object(vertices=True))
    frame = job.writer.prepare(job.sim.terrain, job.sim.rounds_done)  # nothing ran since
    assert {i.kind for i in frame.items if i.changed} == {"check", "positions"}
    job._write_frame(frame, obj)
    assert [i.kind for i in job.writer.tick_items] == ["check", "positions"]
    obj.data.attributes.remove(obj.data.attributes["te_eroded"])  # the user removed it
    frame = job.writer.prepare(job.sim.terrain, job.sim.rounds_done)
    job._write_frame(frame, obj)
    assert [i.name for i in job.writer.tick_items if i.kind == "float"] == ["eroded"]
    assert "te_eroded" in obj.data.attributes


def test_a_live_run_ended_before_its_first_frame_leaves_the_mesh_as_it_was(blender):
    """prepare_live makes the layers and the water object when Erode starts and writes
    the original heights; Stop, or an edit, before any frame reached the mesh removes
    them again: nothing else was written."""
    obj = add_grid(bpy, n=24, size=4.0, relief=1.0, name="Terrain")
    _rivers(obj).particles = 10**8
    before, objects = mesh_state(obj.data), sorted(bpy.data.objects.keys())
    for end in ("stop", "rename"):
        job, rt = te.data.job.ErosionJob(obj), _rt()
        job.prepare_live()
        job.live_update = 1e6  # no frame is due while rounds remain
        assert te.data.grid.ORIGINAL_Z in obj.data.attributes
        assert obj.terrain_erosion.water_object is not None
        assert te.features.operators.tick(job, rt, budget=0.0, on_worker=True) == "running"
        if end == "stop":
            assert job.finish(wait=False) == 0
        else:
            obj.name = "Renamed"
            assert te.features.operators.tick(job, rt, budget=0.0, on_worker=True) == "ended"
            assert "nothing was changed" in rt.status
            obj.name = "Terrain"
        job._runner.thread.join()
        assert same_state(before, mesh_state(obj.data)), end
        assert obj.terrain_erosion.water_object is None, end
        assert sorted(bpy.data.objects.keys()) == objects, end


def test_frames_wait_for_blender_to_redraw_the_last_one(blender):
    """The gap after a tick that wrote, beyond the quietest gap between ticks, is
    Blender's time (normals, redraw); the next frame waits REDRAW_FACTOR times it."""
    obj = add_grid(bpy, n=16)
    obj.terrain_erosion.particles = 10**6
    job = te.data.job.ErosionJob(obj)
    job.live_update = 0.1
    job._tick_end, job._wrote = 10.0, False
    job._note_gap(10.02)  # a quiet tick: the timer's period
    job._tick_end, job._wrote = 11.0, True
    job._note_gap(11.52)  # after a write: 0.5 s of redraw
    assert job.redraw_seconds == pytest.approx(0.5)
    job.sim.run_round()
    job.last_write = 12.0
    assert not job._frame_due(12.5) and job.frame_interval == pytest.approx(
        te.data.job.REDRAW_FACTOR * 0.5)
    assert job._frame_due(12.0 + job.frame_interval)
    assert job.redraw_seconds == 0.0, "measured again for the next frame"


def test_the_live_run_at_1024_squared_writes_bounded_slices(blender):
    """A million vertices, the default preset's layers, trees and water (thermal off:
    its rounds take half a minute at 1024² on 2 cores): every tick writes at most
    TICK_VALUES float32 values or a single item, frames complete one after another and
    the progress grows; with no time to spare a tick writes exactly one item. The
    longest tick is printed; its speed is measured in benchmarks/bench_addon.py."""
    from blender_helpers import numpy_grid
    obj = numpy_grid(bpy, 1024, cell=30.0)
    s = obj.terrain_erosion
    s.apply_preset(te.simcore.formats.presets.find_preset("default"))
    s.thermal.enabled = False
    s.particles = 10**8
    before = mesh_state(obj.data)
    job, rt = te.data.job.ErosionJob(obj), _rt()
    job.prepare_live()
    job.live_update = 0.0
    writes, fractions = _live_ticks(job, rt, lambda: job.frames_written >= 3)
    for values, kinds, _ in writes:
        assert values <= te.data.writeback.TICK_VALUES or len(kinds) == 1, (values, kinds)
    assert fractions[-1] > fractions[0] and fractions == sorted(fractions)
    longest = max(took for _, _, took in writes)
    print(f"\n1024x1024 live run: {len(writes)} write ticks for {job.frames_written} frames, "
          f"longest tick {longest * 1e3:.0f} ms (target 100 ms; speed is measured in "
          "benchmarks/bench_addon.py)")
    job.tick_seconds = 0.0  # no time to spare: one item a tick
    frames = job.frames_written
    writes, _ = _live_ticks(job, rt, lambda: job.frames_written >= frames + 2)
    assert all(len(kinds) == 1 for _, kinds, _ in writes)
    assert {k for _, kinds, _ in writes for k in kinds} >= {
        "check", "float", "trees", "positions", "color", "water"}
    assert job.rounds_written > 0 and job.rounds_kept >= job.rounds_written
    assert job.cancel() is None
    assert same_state(before, mesh_state(obj.data)), "Esc puts a million vertices back"


def test_the_panel_drawn_during_a_run_shows_the_last_status_without_reading_the_mesh(
        blender):
    """The Erosion panel redraws every tick of a live run; then its status line is the
    last one computed for the mesh (reading 4M positions twice a draw cost 30 ms at
    2048²); otherwise every draw checks the mesh again."""
    obj = add_grid(bpy, n=16)
    status, extent = te.data.grid.grid_status(obj), te.data.grid.grid_extent(obj)
    assert status[0] and "16 x 16 grid" in status[1]
    co = positions(obj.data)
    co[:, 0] *= 2.0  # a new spacing along x: not square any more
    obj.data.attributes["position"].data.foreach_set("vector", co.ravel())
    assert te.data.grid.grid_status(obj, quick=True) == status
    assert te.data.grid.grid_extent(obj, quick=True) == extent
    fresh = te.data.grid.grid_status(obj)
    assert fresh != status and "not square" in fresh[1]
    assert te.data.grid.grid_status(obj, quick=True) == fresh


def test_a_run_that_would_not_fit_in_memory_is_refused_and_changes_nothing(
        blender, monkeypatch, capsys):
    obj = add_grid(bpy, n=32, name="Terrain")
    s = obj.terrain_erosion
    s.particles = 3000
    before = mesh_state(obj.data)
    objects = sorted(bpy.data.objects.keys())
    monkeypatch.setenv("TERRAIN_EROSION_AVAILABLE_MEMORY", "100K")
    message = (r"eroding 'Terrain' \(1,024 vertices\) with droplets needs about "
               r".* MB of memory but only 0.1 MB is available; use a smaller grid \(a grid "
               r"of about \d+x\d+ would fit\) or close other programs")
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.terrain.erode()
    with pytest.raises(RuntimeError, match="of memory but only 0.1 MB"):
        bpy.ops.terrain.step()
    with pytest.raises(RuntimeError, match="of memory but only 0.1 MB"):
        bpy.ops.terrain.bake()
    assert obj.terrain_bake.cache_dir == "", "the bake settings are as they were"
    assert te.features.batch.main(["--object", "Terrain", "--particles", "3000"]) == 2
    assert "of memory but only 0.1 MB" in capsys.readouterr().err
    assert same_state(before, mesh_state(obj.data)) and s.rounds_done == 0
    assert sorted(bpy.data.objects.keys()) == objects, "no trees or water object made"
    monkeypatch.setenv("TERRAIN_EROSION_AVAILABLE_MEMORY", "1G")
    assert bpy.ops.terrain.erode() == {'FINISHED'}


@pytest.mark.parametrize("background", [False, True])
def test_undo_during_a_live_run_ends_it_with_the_bookkeeping_of_the_mesh(blender,
                                                                        background):
    """Worst case 4: Edit > Undo from the menu (Ctrl+Z is swallowed by the
    modal Erode) put the mesh back but the run went on, then kept its round count."""
    obj = add_grid(bpy, n=24, name="Hills")
    bpy.ops.ed.undo_push(message="grid")
    before = mesh_state(obj.data)
    bpy.ops.ed.undo_push(message="before erosion")
    obj.terrain_erosion.particles = 60000
    job, rt = te.data.job.ErosionJob(obj), _rt()
    job.live_update = 0.0
    if background:
        _background_until(job, rt, stop=lambda: job.rounds_written > 0)
    else:
        for _ in range(2):
            assert te.features.operators.tick(job, rt, budget=0.0) == "running"
    assert job.rounds_written > 0 and not same_state(before, mesh_state(obj.data))
    bpy.ops.ed.undo()  # what Edit > Undo runs: undo_pre / undo_post handlers fire
    obj = bpy.data.objects["Hills"]
    undone = mesh_state(obj.data)
    assert same_state(before, undone)
    assert te.features.operators.tick(job, rt, budget=0.0, on_worker=background) == "ended"
    assert "Undo" in rt.status
    assert same_state(undone, mesh_state(obj.data)), "the run writes nothing more"
    s = obj.terrain_erosion
    assert (s.rounds_done, s.stored_state_seed()) == (0, -1), "no progress the mesh lacks"
    assert te.data.job.ErosionJob(obj).sim.rounds_done == 0
    assert job.cancel() is None and same_state(undone, mesh_state(obj.data)), \
        "Esc after Undo does not write the pre-run snapshot over Undo's result"
    assert not _runner_threads()



def _eroded(preset: str, runs: list[int], seed: int = 2, between=None) -> tuple:
    """(heights before, mesh state after, rounds) of a 32² grid 1 km across eroded by
    ``runs`` Erode calls of so many particles each (each call resumes); ``between(obj)``
    runs between two calls."""
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    obj = add_grid(bpy, n=32, size=4.0, relief=1.0, seed=seed, name="T")
    obj.scale = (250.0, 250.0, 250.0)
    bpy.ops.object.transform_apply(scale=True)
    s = obj.terrain_erosion
    s.apply_preset(te.simcore.formats.presets.find_preset(preset))
    s.seed = seed
    bpy.context.view_layer.objects.active = obj
    before = positions(obj.data)[:, 2].astype(np.float64)
    for i, particles in enumerate(runs):
        if i and between is not None:
            between(bpy.data.objects["T"])
        obj = bpy.data.objects["T"]
        bpy.context.view_layer.objects.active = obj
        obj.terrain_erosion.particles = particles
        assert bpy.ops.terrain.erode() == {'FINISHED'}
    obj = bpy.data.objects["T"]
    return before, mesh_state(obj.data), obj.terrain_erosion.rounds_done


def _whole_rounds(preset: str, rounds: int) -> int:
    obj = add_grid(bpy, n=32, name="Probe")
    obj.terrain_erosion.apply_preset(te.simcore.formats.presets.find_preset(preset))
    job = te.data.job.ErosionJob(obj, 1)
    job.cancel()
    bpy.data.objects.remove(obj)
    return rounds * job.sim.per_round  # whole rounds: no count is rounded differently


@pytest.mark.parametrize("preset", ["droplets_only", "rivers_and_lakes"])
def test_erode_after_erode_equals_one_uninterrupted_run_bit_for_bit(blender, preset):
    """A run resumed from the float32 layers differed (by up to 8% of the
    relief at single vertices: rounding changes where later droplets go). The next run
    now continues from the last run's full-precision state while the mesh holds exactly
    what that run wrote."""
    half = _whole_rounds(preset, 4)
    _, one, rounds_one = _eroded(preset, [2 * half])
    _, two, rounds_two = _eroded(preset, [half, half])
    assert rounds_one == rounds_two == 8
    assert same_state(one, two), "every attribute bit-identical"



def test_a_mask_switched_off_after_a_run_is_off_in_the_resumed_run(blender):
    """The resumed full-precision state carries the last run's input maps; a Protect
    mask over the whole grid, switched off before the next Erode, must not protect it
    still (it did: the masks were only written where one was in use)."""
    preset = "droplets_only"
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    obj = add_grid(bpy, n=32, size=4.0, relief=1.0, seed=2, name="T")
    obj.scale = (250.0, 250.0, 250.0)
    bpy.ops.object.transform_apply(scale=True)
    s = obj.terrain_erosion
    s.apply_preset(te.simcore.formats.presets.find_preset(preset))
    group = obj.vertex_groups.new(name="keep")
    group.add(range(len(obj.data.vertices)), 1.0, 'REPLACE')
    s.mask_protect_source, s.mask_protect_name = 'VERTEX_GROUP', "keep"
    s.particles = _whole_rounds(preset, 1)  # (a probe object comes and goes)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    kept = positions(obj.data)[:, 2].copy()
    s.mask_protect_source = 'NONE'
    job = te.data.job.ErosionJob(obj, 1)
    assert job.exact_resume, "the case at hand: the remembered state is used"
    job.cancel()
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    assert np.abs(positions(obj.data)[:, 2] - kept).max() > 0, "still protected"


def test_a_user_attribute_named_like_a_layer_is_kept_and_named(blender):
    """A user's FLOAT_VECTOR 'te_deposited' made Erode end in a traceback (the snapshot
    read it as floats); a run would also have replaced it. Erode refuses with a message
    naming it, and the mesh and the attribute stay as they were."""
    obj = add_grid(bpy, n=16, name="Mine")
    vec = obj.data.attributes.new("te_deposited", 'FLOAT_VECTOR', 'POINT')
    mark = np.arange(3 * len(obj.data.vertices), dtype=np.float32)
    vec.data.foreach_set("vector", mark)
    before = mesh_state(obj.data)
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError) as err:
        bpy.ops.terrain.erode()
    assert "te_deposited" in str(err.value) and "rename" in str(err.value)
    assert same_state(before, mesh_state(obj.data))
    back = np.empty_like(mark)
    obj.data.attributes["te_deposited"].data.foreach_get("vector", back)
    assert np.array_equal(back, mark)

def test_a_resume_from_the_layers_alone_is_not_exact_and_the_readme_says_so(blender,
                                                                            tmp_path):
    """What the README states: a reopened .blend (or a mesh whose layers were edited)
    resumes from the float32 layers: same rounds and random sequence, not the same
    bits."""
    preset = "droplets_only"
    half = _whole_rounds(preset, 4)
    _, one, _ = _eroded(preset, [2 * half])

    def reopen(obj):
        bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "t.blend"))
        bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "t.blend"))
        job = te.data.job.ErosionJob(bpy.data.objects["T"], 1)
        assert not job.exact_resume and job.sim.rounds_done == 4
        job.cancel()
    _, reopened, rounds = _eroded(preset, [half, half], between=reopen)
    assert rounds == 8
    assert not same_state(one, reopened)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "reopened .blend" in readme and "not bit-identical" in readme


def test_an_edited_layer_is_read_not_the_remembered_state(blender):
    preset = "droplets_only"
    half = _whole_rounds(preset, 1)

    def edit(obj):
        g = te.data.grid.detect_grid(obj.data)
        layer = te.data.grid.read_float_layer(obj.data, "te_sediment_depth", g)
        layer[3, 3] += 0.5
        te.data.grid.write_float_layer(obj.data, "te_sediment_depth", g, layer)
        job = te.data.job.ErosionJob(obj, 1)
        assert not job.exact_resume
        job.cancel()
        obj.data.update()

    def untouched(obj):
        job = te.data.job.ErosionJob(obj, 1)
        assert job.exact_resume
        job.cancel()
    _eroded(preset, [half, half], between=edit)
    _eroded(preset, [half, half], between=untouched)
