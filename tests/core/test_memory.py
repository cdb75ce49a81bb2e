"""Memory is checked before a run: the estimate (simcore.engine.memory) grows with the grid and
the enabled processes, a run that would not fit stops with a message saying what it
needs, what is free and what to do, and nothing is written. The available figure comes
from the system, a parameter, or TERRAIN_EROSION_AVAILABLE_MEMORY (tests, and anyone who
wants to see what a smaller machine would be told)."""

from __future__ import annotations

import numpy as np
import pytest

from simcore import fileio
from simcore.cli.main import main
from simcore.engine import memory
from simcore.errors import ResourceError
from simcore.formats.presets import find_preset
from simcore.generators.noise import fractal_terrain
from simcore.terrain import BYTES_PER_CELL, Terrain


def test_the_estimate_grows_with_the_grid_and_the_processes():
    cells = 1000 * 700
    base = memory.run_bytes(cells, ["droplets"])
    assert base == cells * (memory.BASE_BYTES_PER_CELL + memory.CHANGE_BYTES_PER_CELL)
    assert memory.run_bytes(2 * cells, ["droplets"]) == 2 * base
    default = list(find_preset("default").enabled_params())
    extra = sum(memory.PROCESS_BYTES_PER_CELL[p] + memory.CHANGE_BYTES_PER_CELL
                for p in default)
    assert memory.run_bytes(cells, default) == cells * (memory.BASE_BYTES_PER_CELL + extra)
    assert memory.run_bytes(cells, reversed(default)) == memory.run_bytes(cells, default)
    assert memory.run_bytes(cells, default, extra_per_cell=10) == (
        memory.run_bytes(cells, default) + 10 * cells)
    # the measured figures of memory.py's table, now declared by each descriptor
    assert memory.PROCESS_BYTES_PER_CELL == {
        "landscape": 92, "droplets": 0, "snowball": 48, "wind": 2, "hydrology": 32,
        "thermal": 63, "trees": 0, "ice": 113, "snow": 42}
    assert memory.bytes_per_cell(default) == 309, "the default preset, as documented"


def test_a_run_that_does_not_fit_says_what_it_needs_what_is_free_and_what_to_do():
    processes = ["droplets", "thermal"]
    need = memory.run_bytes(1800 * 1800, processes)  # under a GB: said in MB
    with pytest.raises(ResourceError) as err:
        memory.check_run(1800 * 1800, processes, "eroding a 1800x1800 grid",
                         available=need // 4)
    text = str(err.value)
    assert text.startswith("eroding a 1800x1800 grid with droplets, thermal needs about ")
    assert f"{need / 2**20:,.1f} MB of memory but only {need / 4 / 2**20:,.1f} MB" in text
    side = int(text.split("a grid of about ")[1].split("x")[0])
    assert memory.run_bytes(side * side, processes) <= need // 4 < memory.run_bytes(
        (side + 1) ** 2, processes), "the grid it suggests fits, one cell more does not"
    assert "close other programs" in text
    memory.check_run(1800 * 1800, processes, "eroding", available=need)  # just fits


def test_the_available_memory_can_be_overridden_and_unknown_skips_the_check(monkeypatch):
    monkeypatch.delenv(fileio.MEMORY_ENV, raising=False)
    system = fileio.available_memory()
    assert system is None or system > 0
    for text, value in (("123456", 123456), ("512M", 512 * 2**20), ("1.5G", 3 * 2**29),
                        ("64kb", 64 * 2**10), ("2GiB", 2 * 2**30)):
        monkeypatch.setenv(fileio.MEMORY_ENV, text)
        assert fileio.available_memory() == value, text
    monkeypatch.setenv(fileio.MEMORY_ENV, "1M")
    with pytest.raises(ResourceError, match="needs about .* but only 1.0 MB is available"):
        memory.check_run(512 * 512, ["droplets"], "eroding")
    monkeypatch.setenv(fileio.MEMORY_ENV, "lots")  # not a number: the system's figure
    assert (fileio.available_memory() is None) == (system is None)
    monkeypatch.setattr(fileio, "available_memory", lambda: None)
    memory.check_run(16384 * 16384, ["landscape"], "eroding")  # unknown: no check


def test_the_cli_refuses_a_run_that_would_not_fit_and_writes_nothing(tmp_path, monkeypatch,
                                                                     capsys):
    n = 128
    src = tmp_path / "h.npy"
    np.save(src, fractal_terrain(n, seed=1))
    processes = list(find_preset("default").enabled_params())
    need = memory.run_bytes(n * n, processes)
    assert need > BYTES_PER_CELL * n * n, "the heightmap itself loads"
    monkeypatch.setenv(fileio.MEMORY_ENV, str(need - 1))
    out = tmp_path / "e.npz"
    assert main(["erode", "--input", str(src), "--output", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"eroding a {n}x{n} grid with {', '.join(processes)} needs about" in err
    assert "of memory but only" in err and "use a smaller grid" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.npy"]
    # refused before the input is loaded: a loaded terrain would count twice, in what
    # the run needs and in what is no longer available (an 8192² run that fits in 22 GB
    # was refused so, at 17 GB needed against 15.7 GB left after loading)
    from simcore.formats import states

    def not_now(*a, **k):
        raise AssertionError("the input was loaded before the memory check")

    state = tmp_path / "s.npz"
    states.save_state(state, Terrain.from_heights(fractal_terrain(n, seed=1), 1.0),
                      {"cell_size": 1.0})
    with monkeypatch.context() as m:
        m.setattr(states, "load_heights", not_now)
        m.setattr(states, "load_state", not_now)
        for path in (src, state):
            assert main(["erode", "--input", str(path), "--output", str(out),
                         "--quiet"]) == 2
            assert "needs about" in capsys.readouterr().err
        # a flag that cannot apply is still said first
        assert main(["erode", "--input", str(state), "--cell-size", "30", "--output",
                     str(out), "--quiet"]) == 2
        assert "--cell-size cannot change the scale" in capsys.readouterr().err
    assert states.grid_shape(src) == (n, n) and states.grid_shape(state) == (n, n)
    assert states.grid_shape(tmp_path / "missing.npy") is None
    monkeypatch.setenv(fileio.MEMORY_ENV, str(need))
    assert main(["erode", "--input", str(src), "--output", str(out), "--quiet",
                 "--particles", "100"]) == 0


def test_a_sweep_run_is_refused_before_its_input_is_loaded(tmp_path, monkeypatch):
    """sweep's runs share erode's check (pipeline.start.check_input_run): from the headers,
    before the input is loaded, and a grid past the core's limit is said so."""
    from simcore.distributed import sweep
    from simcore.formats import states

    n = 64
    src = tmp_path / "h.npy"
    np.save(src, fractal_terrain(n, seed=1))
    processes = list(find_preset("default").enabled_params())
    monkeypatch.setenv(fileio.MEMORY_ENV, str(memory.run_bytes(n * n, processes) - 1))

    def not_now(*a, **k):
        raise AssertionError("the input was loaded before the memory check")

    monkeypatch.setattr(states, "load_heights", not_now)
    with pytest.raises(ResourceError, match=f"eroding a {n}x{n} grid with .* needs about"):
        sweep._run(str(src), "default", 1, tmp_path, 30.0, 100, {}, 0)
    with pytest.raises(ResourceError, match="larger than 16384x16384; downsample it first"):
        memory.check_grid_run((16385, 16384), processes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.npy"]
