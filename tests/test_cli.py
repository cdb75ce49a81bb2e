import json
import subprocess
import sys

import numpy as np
import pytest

from simcore.cli import main

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


def test_generate_erode_resume_and_shade(tmp_path, capsys):
    h = tmp_path / "h.npy"
    assert main(["generate", "--size", "40", "--seed", "2", "--cell-size", "2",
                 "--output", str(h)]) == 0
    heights = np.load(h)
    assert heights.shape == (40, 40)
    out = tmp_path / "e.npz"
    assert main(["erode", "--preset", "droplets_only", "--input", str(h), "--output", str(out),
                 "--cell-size", "2",
                 "--particles", "3000", "--set", "droplets.batch=1000",
                 "--set", "droplets.Kq=12"]) == 0
    assert "100.0%" in capsys.readouterr().err, "progress goes to stderr"
    with np.load(out) as data:
        meta = json.loads(str(data["metadata"]))
        for name in ("bedrock", "sediment", "eroded", "deposited", "stream", "pool",
                     "wind", "vegetation", "erodibility", "rain", "height"):
            assert data[name].shape == (40, 40), name
        assert np.allclose(data["height"], (data["bedrock"] + data["sediment"]) * 2.0)
        assert not np.array_equal(data["height"], heights)
    assert meta["seed"] == 1 and meta["rounds_done"] == 3 and meta["cell_size"] == 2.0
    assert meta["processes"]["droplets"]["Kq"] == 12.0
    # resuming from the state continues the same random sequence
    more = tmp_path / "more.npz"
    assert main(["erode", "--preset", "droplets_only", "--input", str(out), "--output",
                 str(more), "--particles", "2000",
                 "--set", "droplets.batch=1000", "--set", "droplets.Kq=12", "--quiet"]) == 0
    whole = tmp_path / "whole.npy"
    assert main(["erode", "--preset", "droplets_only", "--input", str(h), "--output",
                 str(whole), "--cell-size", "2",
                 "--particles", "5000", "--set", "droplets.batch=1000",
                 "--set", "droplets.Kq=12", "--quiet"]) == 0
    with np.load(more) as data:
        assert np.array_equal(data["height"], np.load(whole))
    png = tmp_path / "e.png"
    assert main(["shade", "--input", str(out), "--output", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, message", [
    (["--preset", "nope"], "no preset named 'nope'"),
    (["--set", "droplets.Kq=-3"], "out of range"),
    (["--set", "Kq"], "expected KEY=VALUE"),
    (["--cell-size", "0"], "--cell-size must be a positive number"),
    (["--input", "{missing}"], "cannot read heightmap"),
    (["--input", "{nan}"], "NaN/inf"),
    (["--output", "{tmp}/out.txt"], "use one of .npy, .npz"),
])
def test_bad_input_exits_2_with_a_message_and_writes_nothing(tmp_path, capsys, args, message):
    good = tmp_path / "good.npy"
    np.save(good, np.random.default_rng(0).random((20, 20)))
    nan = tmp_path / "nan.npy"
    bad = np.zeros((20, 20))
    bad[3, 4] = np.nan
    np.save(nan, bad)
    defaults = {"--input": str(good), "--output": str(tmp_path / "out.npz")}
    given = dict(zip(args[::2], args[1::2]))
    merged = {**defaults, **given}
    argv = ["erode"]
    for k, v in merged.items():
        argv += [k, v.format(missing=tmp_path / "missing.npy", nan=nan, tmp=tmp_path)]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.npy", "nan.npy"]


def test_help_runs_as_a_module():
    res = subprocess.run([sys.executable, "-m", "simcore", "erode", "--help"], cwd=ROOT,
                         capture_output=True, text=True)
    assert res.returncode == 0
    assert "--preset" in res.stdout and "--set KEY=VALUE" in res.stdout
