"""Preset sweeps on dask.distributed: every combination a task, each
result with its preview, one table; a bad input is a row, not the end of the sweep."""

from __future__ import annotations

import csv
import json
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
