"""The time model (simcore/engine/timing.py): every process declares its cost, the
estimate follows the work (grid size, age, particles), and ``erode`` prints it before
a long run starts and not before a short one."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simcore.cli.main import main
from simcore.engine import timing
from simcore.engine.simulation import Simulation, process_params
from simcore.formats.presets import find_preset
from simcore.generators.noise import fractal_terrain
from simcore.processes import PROCESSES
from simcore.terrain import Terrain

ROOT = Path(__file__).resolve().parents[2]


def _sim(n: int, processes: dict, particles: int = 1) -> Simulation:
    t = Terrain.from_heights(fractal_terrain(n, seed=2) * 30.0, 30.0)
    return Simulation(t, processes, particles=particles)


def test_every_process_declares_a_measured_cost():
    for name, proc in PROCESSES.items():
        assert proc.seconds_per_unit > 0.0, f"{name}: no seconds_per_unit"
        params = process_params(name)
        assert timing.units(name, params, (64, 64), 1) > 0.0, name


@pytest.mark.parametrize("name, key", [("landscape", "age"), ("ice", "age"),
                                       ("snow", "years")])
def test_the_estimate_grows_with_grid_size_and_age_as_the_work_does(name, key):
    step = {"landscape": 1e4, "ice": 100.0, "snow": 1.0}[name]
    def params(age):
        return process_params(name, {key: age, "time_step": step})
    small = timing.simulation_seconds(_sim(32, {name: params(100 * step)}))
    big = timing.simulation_seconds(_sim(64, {name: params(100 * step)}))
    older = timing.simulation_seconds(_sim(32, {name: params(300 * step)}))
    assert small > 0.0
    assert big == pytest.approx(4.0 * small, rel=1e-6), "4x the cells, 4x the time"
    assert older == pytest.approx(3.0 * small, rel=1e-6), "3x the passes, 3x the time"


def test_the_estimate_grows_with_particles_and_counts_only_the_work_left():
    droplets = {"droplets": process_params("droplets")}
    few = timing.simulation_seconds(_sim(32, droplets, particles=10_000))
    many = timing.simulation_seconds(_sim(32, droplets, particles=100_000))
    assert many > 5.0 * few > 0.0
    # a droplet's cost follows its step limit: the map's side
    wide = timing.simulation_seconds(_sim(64, droplets, particles=10_000))
    assert wide > 1.5 * few
    # a landscape whose passes earlier runs did has nothing left but the rounds
    land = {"landscape": process_params("landscape", {"age": 1e5, "time_step": 1e4})}
    t = Terrain.from_heights(fractal_terrain(32, seed=2) * 30.0, 30.0)
    fresh = timing.simulation_seconds(Simulation(t, land, particles=1))
    resumed = timing.simulation_seconds(Simulation(t, land, particles=1, rounds_done=1))
    assert resumed < 0.2 * fresh


def test_duration_reads_as_a_person_says_it():
    assert timing.duration(45) == "45 s"
    assert timing.duration(6 * 60) == "6 min"
    assert timing.duration(2.5 * 3600) == "2.5 h"
    assert timing.duration(3 * 86400) == "3.0 days"


def test_a_short_run_prints_no_estimate(tmp_path, capsys):
    src = tmp_path / "h.npy"
    np.save(src, fractal_terrain(24, seed=1))
    out = tmp_path / "out.npy"
    assert main(["erode", "--input", str(src), "--output", str(out),
                 "--particles", "200"]) == 0
    assert out.exists()
    assert "estimate:" not in capsys.readouterr().err


def test_a_long_run_prints_its_estimate_before_any_work(tmp_path):
    """A landscape of 200 million years in 100-year steps on 64² cells (8e9 cell passes):
    hours of work. The estimate is on stderr after the run's header and before any
    progress; the run is then interrupted in its first rounds (nothing written)."""
    src = tmp_path / "h.npy"
    np.save(src, fractal_terrain(64, seed=1) * 30.0)
    out = tmp_path / "out.npz"
    sets = {"droplets.enabled": False, "landscape.enabled": True, "landscape.age": 2e8,
            "landscape.time_step": 100.0, "particles": 1}
    flags = [f for k, v in sets.items()
             for f in ("--set", f"{k}={str(v).lower() if isinstance(v, bool) else v}")]
    # the same run, short, first: the Ctrl-C below lands in the run, not in a cold
    # numba cache's compiles (minutes on a fresh machine)
    short = [f.replace("landscape.age=200000000.0", "landscape.age=200.0") for f in flags]
    subprocess.run([sys.executable, "-m", "simcore", "erode", "--input", str(src),
                    "--output", str(tmp_path / "warm.npz"), "--cell-size", "30", *short],
                   cwd=ROOT, check=True, capture_output=True, timeout=1800)
    child = subprocess.Popen(
        [sys.executable, "-m", "simcore", "erode", "--input", str(src), "--output",
         str(out), "--cell-size", "30", *flags],
        cwd=ROOT, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        assert child.stderr is not None
        # Ctrl-C once the run is in its rounds (its first progress line), as a user
        # would after reading the estimate
        for line in child.stderr:
            lines.append(line)
            if "%" in line:
                break
        child.send_signal(signal.SIGINT)
        rest, _ = child.communicate(timeout=600)
    finally:
        if child.poll() is None:
            child.kill()
    assert len(lines) >= 3 and "%" in lines[-1], lines
    lines.pop()  # the first progress line: the estimate came before it
    assert lines[-1].startswith("estimate: about "), lines
    # the model's figure for this run, as the command works it out
    preset = find_preset("default").with_overrides(sets)
    terrain = Terrain.from_heights(np.load(src), 30.0)
    sim = Simulation(terrain, preset.enabled_params(), particles=preset.work(terrain))
    assert timing.simulation_seconds(sim) > 600.0
    assert lines[-1].rstrip("\n") == timing.long_run_note(sim)
    assert lines[0].startswith("eroding 64x64"), "after the header, before any progress"
    assert child.returncode == 130, rest
    assert not out.exists()


@pytest.mark.parametrize("processes, particles, done", [
    ({"droplets": {}, "thermal": {}}, 50_000, 0),
    ({"landscape": {"age": 3e5, "time_step": 1e4}, "droplets": {}}, 5_000, 1),
    ({"ice": {"age": 500.0, "time_step": 100.0}, "snow": {"years": 7.0}}, 1, 0),
])
def test_a_plan_is_estimated_as_the_simulation_it_becomes(processes, particles, done):
    params = {n: process_params(n, v) for n, v in processes.items()}
    sim = _sim(40, params, particles=particles)
    sim = Simulation(sim.terrain, params, particles=particles, rounds_done=done)
    assert timing.plan_seconds(params, (40, 40), particles, done) == pytest.approx(
        timing.simulation_seconds(sim), rel=1e-12)


def _sweep(tmp_path, monkeypatch, capsys, sets):
    """``sweep`` of two seeds on a 64² map, interrupted (Ctrl+C) before its first result,
    with no cluster: (exit code, stderr)."""
    from simcore.distributed import cluster

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(cluster, "run_tasks", interrupted)
    monkeypatch.setattr(cluster, "client", lambda **kw: __import__("contextlib").nullcontext())
    src = tmp_path / "m.npy"
    np.save(src, fractal_terrain(64, seed=1) * 30.0)
    flags = [f for k, v in sets.items() for f in ("--set", f"{k}={v}")]
    code = main(["sweep", "--preset", "default", "--seed", "1,2", "--input", str(src),
                 "--cell-size", "30", "--output", str(tmp_path / "sw"), *flags])
    return code, capsys.readouterr().err


def test_a_long_sweep_prints_the_estimate_of_all_its_runs_before_they_start(
        tmp_path, monkeypatch, capsys):
    sets = {"droplets.enabled": "false", "landscape.enabled": "true",
            "landscape.age": "2e8", "landscape.time_step": "100", "particles": "1"}
    code, err = _sweep(tmp_path, monkeypatch, capsys, sets)
    assert code == 130, err
    lines = err.splitlines()
    assert lines[0].startswith("estimate: about ") and "of work in 2 runs" in lines[0], err
    # two runs of what erode would estimate for one
    preset = find_preset("default").with_overrides(
        {"droplets.enabled": False, "landscape.enabled": True, "landscape.age": 2e8,
         "landscape.time_step": 100.0, "particles": 1})
    terrain = Terrain.from_heights(np.load(tmp_path / "m.npy"), 30.0)
    one = timing.simulation_seconds(Simulation(terrain, preset.enabled_params(),
                                               particles=preset.work(terrain)))
    assert lines[0] == timing.note(2 * one, what=" in 2 runs")


def test_a_short_sweep_prints_no_estimate(tmp_path, monkeypatch, capsys):
    code, err = _sweep(tmp_path, monkeypatch, capsys, {"particles": "60"})
    assert code == 130 and "estimate" not in err, err


@pytest.mark.parametrize("sets, long", [
    ({"droplets.enabled": "false", "landscape.enabled": "true", "landscape.age": "2e8",
      "landscape.time_step": "100", "particles": "1"}, True),
    ({"particles": "60"}, False)])
def test_tile_prints_the_worlds_estimate_before_its_cluster_starts(
        tmp_path, monkeypatch, capsys, sets, long):
    """The cluster's start interrupted (Ctrl+C): the estimate came before it, for a
    long run only."""
    from simcore.distributed import cluster

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(cluster, "client", interrupted)
    src = tmp_path / "m.npy"
    np.save(src, fractal_terrain(64, seed=1) * 30.0)
    flags = [f for k, v in sets.items() for f in ("--set", f"{k}={v}")]
    code = main(["tile", "--input", str(src), "--cell-size", "30", "--tiles", "2",
                 "--output", str(tmp_path / "w.zarr"), *flags])
    err = capsys.readouterr().err
    assert code == 130, err
    if long:
        assert err.startswith("estimate: about ") and "the world as one run" in err, err
    else:
        assert "estimate" not in err, err
    assert not (tmp_path / "w.zarr").exists()
