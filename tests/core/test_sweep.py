"""Preset sweeps on dask.distributed: every combination a task, each
result with its preview, one table; a bad input is a row, not the end of the sweep."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from simcore.distributed.sweep import SweepError, expand_inputs, parse_seeds

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def test_seeds_and_inputs(tmp_path):
    assert parse_seeds("1..4") == [1, 2, 3, 4]
    assert parse_seeds("1..3,9,2") == [1, 2, 3, 9]
    for bad in ("4..1", "x", "-1", "1..2..3"):
        with pytest.raises(SweepError):
            parse_seeds(bad)
    for name in ("b.npy", "a.npy"):
        (tmp_path / name).write_bytes(b"")
    assert expand_inputs([str(tmp_path / "*.npy")]) == [str(tmp_path / "a.npy"),
                                                        str(tmp_path / "b.npy")]
    assert expand_inputs(["missing.npy"]) == ["missing.npy"]  # reported by its run


def test_sweep_of_two_presets_by_four_seeds_with_a_bad_input(tmp_path):
    pytest.importorskip("distributed")
    from simcore.generators.noise import fractal_terrain
    good = tmp_path / "hills.npy"
    np.save(good, fractal_terrain(40, seed=2) * 10.0)
    bad = tmp_path / "broken.npy"
    bad.write_bytes(b"not an array")
    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "simcore", "sweep", "--preset", "droplets_only,quick_preview",
           "--seed", "1..4", "--input", str(good), str(bad), "--cell-size", "10",
           "--particles", "400", "--output", str(out), "--workers", "2"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr  # some runs failed: exit 1, the rest ran
    assert "dashboard http" in done.stderr
    with open(out / "sweep.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 16
    ok = [r for r in rows if r["status"] == "ok"]
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(ok) == 8 and len(failed) == 8
    assert {(r["preset"], r["seed"]) for r in ok} == {
        (p, str(s)) for p in ("droplets_only", "quick_preview") for s in range(1, 5)}
    assert all("broken.npy" in r["input"] and "not a valid .npy" in r["error"]
               for r in failed)
    for r in ok:
        assert (out / r["state"]).is_file() and (out / r["preview"]).is_file()
        assert float(r["seconds"]) > 0 and float(r["relief"]) > 0
        assert np.isfinite(float(r["slope_p50"]))
        assert "droplets" in json.loads(r["params"])
    # different seeds give different results
    states = sorted({(out / r["state"]).read_bytes() for r in ok})
    assert len(states) == 8
    table = json.loads((out / "sweep.json").read_text())
    assert len(table["runs"]) == 16 and "theta" in table["columns"]


def test_an_output_folder_that_cannot_be_made_is_one_line_before_a_cluster(tmp_path,
                                                                          capsys):
    pytest.importorskip("distributed")
    from simcore.cli.main import main
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    code = main(["sweep", "--preset", "default", "--seed", "1", "--input", "x.npy",
                 "--output", str(blocker / "out"), "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot create the folder" in err and "dask" not in err, err


def test_the_extension_never_imports_dask_or_zarr():
    """Dask and zarr are the command line's: importing simcore -- every module the
    add-on uses, and the CLI's tile and sweep modules themselves -- loads neither, and
    the add-on names none of them."""
    code = ("import sys, pkgutil, importlib, simcore\n"
            "for m in pkgutil.walk_packages(simcore.__path__, 'simcore.'):\n"
            "    if m.name != 'simcore.__main__':\n"
            "        importlib.import_module(m.name)\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('dask', 'distributed', 'zarr', 'numcodecs', 'bokeh')]\n"
            "print(bad)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    for path in (ROOT / "addon").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for name in ("dask", "distributed", "zarr", "simcore.distributed", ".distributed",
                     ".simcore.distributed"):
            assert f"import {name}" not in text and f"from {name}" not in text, (path, name)
    manifest = (ROOT / "blender_manifest.toml").read_text(encoding="utf-8")
    assert "dask" not in manifest and "zarr" not in manifest


# -- a sweep's results are one set: replaced whole, or left as they were ---------------

def _hashes(folder):
    import hashlib
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _serial_tasks(stop_after=None):
    """run_tasks without dask: the tasks in order in this process; Ctrl+C (a
    KeyboardInterrupt) once ``stop_after`` of them have ended."""
    def run_tasks(c, fn, items, label, quiet=False, on_result=None, **kw):
        results = []
        for i, item in enumerate(items):
            if i == stop_after:
                raise KeyboardInterrupt
            results.append(fn(*item))
            if on_result is not None:
                on_result(i, results[-1])
        return results
    return run_tasks


@pytest.fixture
def earlier(tmp_path, monkeypatch):
    """A folder holding an earlier sweep's set (2 runs on a 20x20 map), and a second map."""
    from simcore.distributed import cluster
    from simcore.distributed.sweep import sweep
    from simcore.generators.noise import fractal_terrain
    maps = []
    for k in (1, 2):
        maps.append(tmp_path / f"m{k}.npy")
        np.save(maps[-1], fractal_terrain(20, seed=k) * 10.0)
    out = tmp_path / "sweep"
    monkeypatch.setattr(cluster, "run_tasks", _serial_tasks())
    rows = sweep([str(maps[0])], ["droplets_only"], [1, 2], out, None, cell_size=10.0,
                 particles=60, quiet=True)
    assert [r["status"] for r in rows] == ["ok", "ok"]
    return out, maps


def test_a_sweep_where_every_run_fails_leaves_the_earlier_set(earlier, tmp_path):
    from simcore.distributed.sweep import sweep
    out, _ = earlier
    before = _hashes(out)
    assert len(before) == 6  # 2 states, 2 previews, sweep.csv, sweep.json
    bad = tmp_path / "broken.npy"
    bad.write_bytes(b"not an array")
    rows = sweep([str(bad)], ["droplets_only"], [1, 2, 3], out, None, cell_size=10.0,
                 particles=60, quiet=True)
    assert all(r["status"] == "failed" for r in rows)
    assert _hashes(out) == before and sorted(os.listdir(out)) == sorted(before)


def test_a_sweep_replaces_the_earlier_set_whole(earlier):
    from simcore.distributed.sweep import sweep
    out, maps = earlier
    sweep([str(maps[1])], ["droplets_only"], [5], out, None, cell_size=10.0,
          particles=60, quiet=True)
    table = json.loads((out / "sweep.json").read_text())
    files = {r[k] for r in table["runs"] for k in ("state", "preview")}
    assert files == {"0000_m2_droplets_only_s5.npz", "0000_m2_droplets_only_s5.png"}
    assert sorted(os.listdir(out)) == sorted(files | {"sweep.csv", "sweep.json"})


def test_an_interrupted_sweep_leaves_the_earlier_set_and_keeps_its_finished_runs_apart(
        earlier, monkeypatch, capsys):
    from simcore.cli.main import main
    from simcore.distributed import cluster
    out, maps = earlier
    before = _hashes(out)
    monkeypatch.setattr(cluster, "run_tasks", _serial_tasks(stop_after=2))
    monkeypatch.setattr(cluster, "client", lambda **kw: __import__("contextlib").nullcontext())
    code = main(["sweep", "--preset", "droplets_only", "--seed", "7..9", "--input",
                 str(maps[1]), "--cell-size", "10", "--particles", "60", "--output",
                 str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 130, err
    assert _hashes(out) == before and sorted(os.listdir(out)) == sorted(before)
    partial = [p for p in out.parent.iterdir() if p.name.startswith("sweep.interrupted-")]
    assert len(partial) == 1 and str(partial[0]) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    kept = json.loads((partial[0] / "sweep-partial.json").read_text())["runs"]
    assert [(r["seed"], r["status"]) for r in kept] == [(7, "ok"), (8, "ok")]
    assert sorted(os.listdir(partial[0])) == sorted(
        [r[k] for r in kept for k in ("state", "preview")]
        + ["sweep-partial.csv", "sweep-partial.json"])
    assert not (partial[0] / "sweep.json").exists()  # never taken for a whole sweep


# -- arguments checked before a cluster starts: one line, exit 2 ----------------------

_BAD_ARGS = [
    (["--preset", "defualt"], "no preset named 'defualt'"),
    (["--particles", "-5"], "--particles must be"),
    (["--seed", "99999999999999999999"], "seeds must be at most"),
    (["--scheduler", "tcp://10.0.0.5"], "no port"),
    (["--scheduler", "tcp://:8786"], "empty host"),
    (["--scheduler", "foo://h:1"], "unknown transport 'foo://'"),
    (["--scheduler", "h:99999"], "port must be"),
    (["--threads", "1000000"], "this machine's cores"),
    (["--threads", "0"], "--threads must be 1.."),
    (["--workers", "0"], "--workers must be"),
]


def _one_line(capsys):
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "dask" not in err, err  # no cluster started
    return err


@pytest.mark.parametrize("extra,said", _BAD_ARGS)
def test_sweep_refuses_bad_arguments_before_a_cluster(earlier, capsys, extra, said):
    from simcore.cli.main import main
    out, maps = earlier
    before = _hashes(out)
    args = {"--preset": "droplets_only", "--seed": "1", "--particles": "60"}
    args.update(dict(zip(extra[::2], extra[1::2], strict=True)))
    argv = ["sweep", "--input", str(maps[1]), "--output", str(out), "--cell-size", "10",
            *[x for kv in args.items() for x in kv]]
    assert main(argv) == 2
    assert said in _one_line(capsys)
    assert _hashes(out) == before


@pytest.mark.parametrize("extra,said", [a for a in _BAD_ARGS if a[0][0] != "--seed"]
                         + [(["--seed", "-3"], "--seed must be")])
def test_tile_refuses_bad_arguments_before_a_cluster(tmp_path, capsys, extra, said):
    from simcore.cli.main import main
    np.save(tmp_path / "w.npy", np.zeros((32, 32)))
    args = {"--preset": "droplets_only"}
    args.update(dict(zip(extra[::2], extra[1::2], strict=True)))
    argv = ["tile", "--input", str(tmp_path / "w.npy"), "--output",
            str(tmp_path / "w.zarr"), *[x for kv in args.items() for x in kv]]
    assert main(argv) == 2
    assert said in _one_line(capsys)
    assert sorted(os.listdir(tmp_path)) == ["w.npy"]  # no store, no lock left


def _deny_writes_in(monkeypatch, folder):
    """A read-only folder, also for root (who writes anywhere): creating a file in it
    fails with EACCES."""
    import errno
    real = os.open

    def fake(path, flags, *a, **kw):
        if flags & os.O_CREAT and os.path.dirname(os.path.abspath(path)) == str(folder):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, flags, *a, **kw)
    monkeypatch.setattr(os, "open", fake)


@pytest.mark.parametrize("command", ["sweep", "tile"])
def test_a_read_only_output_folder_is_refused_before_a_cluster(tmp_path, monkeypatch,
                                                               capsys, command):
    from simcore.cli.main import main
    np.save(tmp_path / "w.npy", np.zeros((32, 32)))
    ro = tmp_path / "ro"
    ro.mkdir()
    _deny_writes_in(monkeypatch, ro)
    out = ro / ("out" if command == "sweep" else "w.zarr")
    if command == "sweep":
        out.mkdir()
        _deny_writes_in(monkeypatch, out)
        argv = ["sweep", "--preset", "default", "--seed", "1"]
    else:
        argv = ["tile"]
    assert main([*argv, "--input", str(tmp_path / "w.npy"), "--output", str(out)]) == 2
    err = _one_line(capsys)
    assert "Permission denied" in err and "choose a folder you can write to" in err, err


# -- one tile run per --output at a time ----------------------------------------------

def test_a_second_tile_run_to_the_same_output_is_refused_naming_the_first(tmp_path,
                                                                          capsys):
    from simcore.cli.main import main
    np.save(tmp_path / "w.npy", np.zeros((32, 32)))
    lock = tmp_path / "w.zarr.lock"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock.write_text(f"{other.pid}\n")  # a run that still runs (host not written)
        code = main(["tile", "--input", str(tmp_path / "w.npy"), "--output",
                     str(tmp_path / "w.zarr")])
        err = _one_line(capsys)
        assert code == 2 and f"another run (pid {other.pid}" in err and str(lock) in err
        assert lock.read_text() == f"{other.pid}\n"  # its lock is left alone
    finally:
        other.kill()
        other.wait()


def test_a_stale_tile_lock_is_taken_over_and_removed_at_the_end(tmp_path):
    from simcore.fileio import output_lock
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    lock = tmp_path / "w.zarr.lock"
    lock.write_text(f"{gone.pid}\n")  # a killed run's
    with output_lock(tmp_path / "w.zarr") as held:
        assert held == lock and lock.read_text().split()[0] == str(os.getpid())
        with pytest.raises(Exception, match="another run"):
            with output_lock(tmp_path / "w.zarr"):
                pass
    assert sorted(os.listdir(tmp_path)) == []


# -- tile --heightmap-tiles: the store and the tile set replaced together -------------

def _tile_argv(tmp_path, seed):
    return ["tile", "--input", str(tmp_path / "w.npy"), "--cell-size", "10", "--tiles",
            "2", "--preset", "droplets_only", "--particles", "400", "--seed", str(seed),
            "--output", str(tmp_path / "w.zarr"), "--heightmap-tiles",
            str(tmp_path / "ht"), "--quiet"]


@pytest.fixture
def tiled(tmp_path, monkeypatch):
    """A 64x64 world run in 2x2 tiles in this process (no dask), its store and
    heightmap tiles written; their hashes."""
    pytest.importorskip("zarr")
    from simcore.cli.main import main
    from simcore.distributed import cluster
    from simcore.generators.noise import fractal_terrain
    np.save(tmp_path / "w.npy", fractal_terrain(64, seed=3) * 40.0)
    monkeypatch.setattr(cluster, "run_tasks", _serial_tasks())
    monkeypatch.setattr(cluster, "client", lambda *a, **kw:
                        __import__("contextlib").nullcontext())
    assert main(_tile_argv(tmp_path, 1)) == 0
    before = {k: _hashes(tmp_path / k) for k in ("w.zarr", "ht")}
    assert len(before["ht"]) == 5  # 4 tiles and tiles.json
    return before


def test_a_full_disk_at_a_heightmap_tile_leaves_the_store_and_the_tiles_as_they_were(
        tiled, tmp_path, monkeypatch, capsys):
    import errno

    from simcore import fileio
    from simcore.cli.main import main
    real = fileio._file_for
    opened = []

    class Full:  # the third tile's file: the disk fills while it is written
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.f, name)

    def file_for(fd):
        opened.append(fd)
        f = real(fd)
        return Full(f) if len(opened) == 3 else f

    monkeypatch.setattr(fileio, "_file_for", file_for)
    capsys.readouterr()
    code = main(_tile_argv(tmp_path, 2))
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "No space left" in err, err
    assert {k: _hashes(tmp_path / k) for k in ("w.zarr", "ht")} == tiled
    assert sorted(os.listdir(tmp_path)) == ["ht", "w.npy", "w.zarr"]  # nothing beside
    assert sorted(os.listdir(tmp_path / "ht")) == sorted(tiled["ht"])


def test_a_tile_run_replaces_the_store_and_the_tiles_together(tiled, tmp_path):
    from simcore.cli.main import main
    assert main(_tile_argv(tmp_path, 2)) == 0
    after = {k: _hashes(tmp_path / k) for k in ("w.zarr", "ht")}
    assert after["ht"] != tiled["ht"] and after["w.zarr"] != tiled["w.zarr"]
    assert sorted(after["ht"]) == sorted(tiled["ht"])
    import zarr
    whole = zarr.open_group(str(tmp_path / "w.zarr"), mode="r")["height"][...]
    np.testing.assert_array_equal(np.load(tmp_path / "ht" / "tile_r1_c0.npy"),
                                  whole[32:, :32])


# -- free space for the estimate, checked before a cluster ----------------------------

def _disk_with(monkeypatch, free):
    import shutil
    from types import SimpleNamespace
    monkeypatch.setattr(shutil, "disk_usage", lambda p: SimpleNamespace(
        total=10**12, used=10**12 - free, free=free))


@pytest.mark.parametrize("command", ["sweep", "tile"])
def test_a_disk_without_room_for_the_estimate_is_refused_before_a_cluster(
        earlier, tmp_path, monkeypatch, capsys, command):
    from simcore.cli.main import main
    from simcore.fileio import SPACE_MARGIN
    out, maps = earlier
    before = _hashes(out)
    listed = sorted(os.listdir(tmp_path))
    # the margin alone fits: the estimate of this small run does not fit beside it
    _disk_with(monkeypatch, SPACE_MARGIN + 1000)
    if command == "sweep":
        argv = ["sweep", "--preset", "droplets_only", "--seed", "1..2", "--input",
                str(maps[1]), "--cell-size", "10", "--output", str(out)]
    else:
        pytest.importorskip("zarr")
        np.save(tmp_path / "w.npy", np.zeros((64, 64)))
        listed = sorted(os.listdir(tmp_path))
        argv = ["tile", "--input", str(tmp_path / "w.npy"), "--tiles", "2", "--output",
                str(tmp_path / "w.zarr"), "--heightmap-tiles", str(tmp_path / "ht")]
    assert main(argv) == 2
    err = _one_line(capsys)
    assert "it needs about" in err and "to spare but only" in err and "free" in err, err
    assert _hashes(out) == before
    assert sorted(os.listdir(tmp_path)) == sorted(listed + (["ht"] if command == "tile"
                                                            else []))  # no store, no lock


# -- a task whose worker dies on every try ends the run, naming it --------------------

@pytest.fixture
def fragile():
    """Dask gives up on a task the first time its worker dies while running it
    (allowed-failures 0: the scheduler runs in this process), so a task that kills its
    worker ends the run at once, as one that kills it on every try ends it later."""
    pytest.importorskip("distributed")
    import dask
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        yield


def test_a_tile_whose_worker_dies_on_every_try_ends_the_run_naming_it(
        tiled, fragile, tmp_path, monkeypatch, capsys):
    from simcore.cli.main import main
    from simcore.distributed import tiles
    monkeypatch.undo()  # the real dask from here: a local cluster of one worker process

    def die(*args):  # the worker process ends as a killed or out-of-memory one does
        os._exit(3)

    monkeypatch.setattr(tiles, "run_blend", die)  # sent to the worker by value
    listed = sorted(os.listdir(tmp_path))
    capsys.readouterr()
    code = main([*_tile_argv(tmp_path, 2), "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "the blend of tile (row " in err and "worker process died" in err, err
    assert {k: _hashes(tmp_path / k) for k in ("w.zarr", "ht")} == tiled
    assert sorted(os.listdir(tmp_path)) == listed  # no .partial, no lock


def test_a_sweep_run_whose_worker_dies_on_every_try_ends_the_sweep_naming_it(
        earlier, fragile, monkeypatch, capsys):
    from simcore.cli.main import main
    from simcore.distributed import sweep as sweeps
    out, maps = earlier
    before = _hashes(out)
    monkeypatch.undo()

    def die_in_second(index, *args):
        if index == 1:
            os._exit(3)
        from simcore.distributed.sweep import run_one
        return run_one(index, *args)

    monkeypatch.setattr(sweeps, "run_one", die_in_second)
    code = main(["sweep", "--preset", "droplets_only", "--seed", "7..8", "--input",
                 str(maps[1]), "--cell-size", "10", "--particles", "60", "--output",
                 str(out), "--workers", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "run 1 (" in err and "seed 8)" in err and "worker process died" in err, err
    assert f"{out} is as it was" in err
    assert _hashes(out) == before and sorted(os.listdir(out)) == sorted(before)


# -- one sweep per --output at a time -------------------------------------------------

def test_a_second_sweep_to_the_same_output_is_refused_naming_the_first(earlier, capsys):
    from simcore.cli.main import main
    out, maps = earlier
    before = _hashes(out)
    lock = out / "sweep.lock"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock.write_text(f"{other.pid} {__import__('socket').gethostname()}\n")
        code = main(["sweep", "--preset", "droplets_only", "--seed", "3", "--input",
                     str(maps[1]), "--cell-size", "10", "--particles", "60", "--output",
                     str(out)])
        err = _one_line(capsys)
        assert code == 2 and f"another run (pid {other.pid} on " in err, err
        assert str(lock) in err, err
        lock.unlink()  # its lock was left alone
        assert _hashes(out) == before
    finally:
        other.kill()
        other.wait()


def test_a_tile_set_replaces_only_the_tiles_its_index_lists(tmp_path):
    from simcore.distributed.tiles import earlier_tiles
    (tmp_path / "tiles.json").write_text(json.dumps({"tiles": [
        {"file": "tile_r0_c0.npy"}, {"file": "../w.npy"}, {"file": "notes.txt"},
        {"file": "tile_r1_c0.png"}, "junk"]}))
    assert earlier_tiles(tmp_path) == ["tiles.json", "tile_r0_c0.npy", "tile_r1_c0.png"]
    (tmp_path / "tiles.json").write_text("{not json")
    assert earlier_tiles(tmp_path) == ["tiles.json"]
