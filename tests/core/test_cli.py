import json
import subprocess
import sys

import numpy as np
import pytest

from simcore.cli.main import main

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


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
    (["--extent", "0"], "--extent must be a positive number of world units"),
    (["--extent", "nan"], "--extent must be a positive number of world units"),
    (["--extent", "1e9"], "--extent must be a positive number of world units"),
    (["--vertical-exaggeration", "0"], "--vertical-exaggeration must be a number"),
    # a rain per area that would run for weeks (here 3.6e13 particles) is refused
    (["--cell-size", "300", "--set", "particles_per_area=1e6"], "more than 1e+12"),
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


def _err(capsys) -> str:
    return capsys.readouterr().err


def test_no_silent_nonsense(tmp_path, capsys):
    """Values that used to give NaN/inf output with exit 0 are refused with the range."""
    good = tmp_path / "good.npy"
    np.save(good, np.random.default_rng(0).random((20, 20)))
    out = tmp_path / "o.npy"
    for relief in ("nan", "inf", "-1"):
        assert main(["generate", "--size", "16", "--relief", relief, "--output",
                     str(out)]) == 2
        assert "--relief must be a number from 0 to" in _err(capsys)
    assert main(["generate", "--size", "16", "--seed", "-1", "--output", str(out)]) == 2
    assert "--seed must be a whole number from 0 to 9223372036854775807" in _err(capsys)
    assert main(["generate", "--size", "16", "--cell-size", "1e308", "--output",
                 str(out)]) == 2
    assert "--cell-size must be a positive number from 1e-09 to 1e+09" in _err(capsys)
    assert not out.exists()

    state = tmp_path / "s.npz"
    assert main(["erode", "--input", str(good), "--output", str(state), "--particles",
                 "0"]) == 0
    with np.load(state) as data:
        meta = json.loads(str(data["metadata"]))
        meta["cell_size"] = 1e308
        arrays = {k: data[k] for k in data.files if k != "metadata"}
    np.savez(tmp_path / "huge_cell.npz", metadata=np.array(json.dumps(meta)), **arrays)
    assert main(["erode", "--input", str(tmp_path / "huge_cell.npz"), "--output",
                 str(tmp_path / "x.npz")]) == 2
    err = _err(capsys)
    assert "this file is not a Terrain Erosion state" in err and "1e+09" in err
    assert not (tmp_path / "x.npz").exists()

    huge = tmp_path / "huge.npy"
    np.save(huge, np.full((8, 8), 1e300))
    assert main(["erode", "--input", str(huge), "--output", str(tmp_path / "y.npz")]) == 2
    assert "allowed range is -1e+09..1e+09 cells" in _err(capsys)

    nan = tmp_path / "nan.npy"
    bad = np.zeros((10, 10))
    bad[1, 2] = np.nan
    np.save(nan, bad)
    png = tmp_path / "n.png"
    assert main(["shade", "--input", str(nan), "--output", str(png)]) == 2
    assert "NaN/inf" in _err(capsys) and not png.exists()


def test_particles_zero_does_no_work_and_64_bit_seeds_work(tmp_path, capsys):
    good = tmp_path / "good.npy"
    np.save(good, np.random.default_rng(0).random((20, 20)) * 5)
    out = tmp_path / "zero.npz"
    assert main(["erode", "--input", str(good), "--output", str(out), "--particles", "0",
                 "--quiet"]) == 0
    with np.load(out) as data:
        assert np.array_equal(data["height"], np.load(good)), "0 particles: no erosion"
        assert json.loads(str(data["metadata"]))["rounds_done"] == 0
    big = 2**63 - 1
    runs = []
    for seed in (big, big, 2**31 + 5):
        path = tmp_path / f"s{len(runs)}.npy"
        assert main(["erode", "--input", str(good), "--output", str(path), "--particles",
                     "2000", "--seed", str(seed), "--quiet",
                     "--preset", "droplets_only"]) == 0
        runs.append(np.load(path))
    assert np.array_equal(runs[0], runs[1]) and not np.array_equal(runs[0], runs[2])
    assert main(["erode", "--input", str(good), "--output", str(out), "--seed",
                 str(2**63)]) == 2
    assert "out of range" in _err(capsys)


def test_user_errors_share_one_type():
    from simcore.cli.main import CliError
    from simcore.errors import UserError
    from simcore.formats.presets import PresetError
    from simcore.params import ParameterError
    from simcore.terrain import StateFileError, TerrainError
    for cls in (CliError, ParameterError, PresetError, TerrainError, StateFileError):
        assert issubclass(cls, UserError) and issubclass(cls, ValueError)


def test_interrupt_exits_130_and_writes_nothing(tmp_path, capsys, monkeypatch):
    from simcore.engine import simulation
    good = tmp_path / "good.npy"
    np.save(good, np.random.default_rng(0).random((20, 20)))

    def interrupted(self, *a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(simulation.Simulation, "run", interrupted)
    assert main(["erode", "--input", str(good), "--output", str(tmp_path / "o.npz")]) == 130
    assert "nothing written" in _err(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.npy"]


def test_extent_erodes_a_map_in_other_units_as_the_world_it_stands_for(tmp_path):
    """A heightmap in Blender-sized units (1.14 units across, heights in the same
    units) with --extent 1170 (metres) erodes as the same map in metres does (the
    Default preset flattens the small one when its units are taken as metres), and the
    .npy comes back in the input's units. The units are 1/1024 m, so scaling them is
    exact: a last-bit difference at the start would grow into other droplet paths."""
    metres = tmp_path / "m.npy"
    assert main(["generate", "--size", "40", "--seed", "2", "--cell-size", "30",
                 "--output", str(metres)]) == 0
    small = tmp_path / "small.npy"
    np.save(small, np.load(metres) / 1024.0)
    common = ["--preset", "default", "--particles", "3000", "--quiet"]
    assert main(["erode", "--input", str(metres), "--cell-size", "30", "--output",
                 str(tmp_path / "m_out.npy"), *common]) == 0
    assert main(["erode", "--input", str(small), "--cell-size", str(30 / 1024), "--extent", "1170",
                 "--output", str(tmp_path / "s_out.npy"), *common]) == 0
    assert main(["erode", "--input", str(small), "--cell-size", str(30 / 1024), "--output",
                 str(tmp_path / "literal.npy"), *common]) == 0
    before = np.load(metres)
    in_metres = np.load(tmp_path / "m_out.npy")
    scaled_back = np.load(tmp_path / "s_out.npy") * 1024.0
    assert np.corrcoef((in_metres - before).ravel(), (scaled_back - before).ravel())[0, 1] >= 0.99
    assert np.ptp(scaled_back) == pytest.approx(np.ptp(in_metres), rel=0.01)
    literal = np.load(tmp_path / "literal.npy") * 1024.0
    assert np.ptp(literal) < 0.5 * np.ptp(before), "taken literally, the map flattens"
    # exaggerated heights: the simulation sees the true ones, the output is exaggerated
    assert main(["erode", "--input", str(metres), "--cell-size", "30",
                 "--vertical-exaggeration", "2", "--output", str(tmp_path / "x2.npy"),
                 *common]) == 0
    np.save(tmp_path / "half.npy", before / 2.0)
    assert main(["erode", "--input", str(tmp_path / "half.npy"), "--cell-size", "30",
                 "--output", str(tmp_path / "half_out.npy"), *common]) == 0
    assert np.allclose(np.load(tmp_path / "x2.npy"), 2.0 * np.load(tmp_path / "half_out.npy"),
                       rtol=0, atol=1e-9 * np.ptp(before))


def test_a_presets_real_size_is_the_extent_of_a_npy_map(tmp_path):
    """A preset that sets real_size (as saved from Blender) erodes a .npy map at that
    size, exactly as --extent does; --extent wins over it."""
    small = tmp_path / "small.npy"
    assert main(["generate", "--size", "24", "--seed", "3", "--cell-size", "0.05",
                 "--output", str(small)]) == 0
    common = ["--input", str(small), "--cell-size", "0.05", "--particles", "2000",
              "--quiet"]
    assert main(["erode", "--set", "real_size=2000", "--output",
                 str(tmp_path / "preset.npy"), *common]) == 0
    assert main(["erode", "--extent", "2000", "--output", str(tmp_path / "flag.npy"),
                 *common]) == 0
    assert main(["erode", "--set", "real_size=9000", "--extent", "2000", "--output",
                 str(tmp_path / "both.npy"), *common]) == 0
    flag = np.load(tmp_path / "flag.npy")
    assert np.array_equal(np.load(tmp_path / "preset.npy"), flag)
    assert np.array_equal(np.load(tmp_path / "both.npy"), flag)
    assert not np.array_equal(flag, np.load(small))


def test_extent_cannot_rescale_a_saved_state(tmp_path, capsys):
    h = tmp_path / "h.npy"
    assert main(["generate", "--size", "16", "--output", str(h)]) == 0
    state = tmp_path / "s.npz"
    assert main(["erode", "--input", str(h), "--cell-size", "30", "--particles", "0",
                 "--output", str(state), "--quiet"]) == 0
    for flag in (["--extent", "5000"], ["--vertical-exaggeration", "2"]):
        assert main(["erode", "--input", str(state), "--output", str(tmp_path / "o.npz"),
                     *flag]) == 2
        assert f"{flag[0]} cannot change the scale of a saved state" in _err(capsys)
