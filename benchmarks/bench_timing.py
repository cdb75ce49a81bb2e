"""The constants of the time model (simcore/engine/timing.py) and how well it guesses.

Constants: each process alone, its default parameters (batch as given), on drained
uplands of 30 m cells at two sizes (128² and 256²; --quick: 64² and 128²), a few
rounds after one that compiles. Rows: ``s_per_unit`` measured at each size (seconds /
the units of work the model counts for those rounds), ``declared`` (the process's
``seconds_per_unit``), ``ratio`` (measured / declared) and ``mean`` (of the sizes: the
value to declare). The first row is a round's own cost per cell and process.

Checks (``CASES``): whole runs of presets (their rain per area) on the same uplands,
after a small run that compiles: the estimate before the run against the time it took.
"""

from __future__ import annotations

import time

from simcore.engine import timing
from simcore.engine.simulation import Simulation, process_params
from simcore.generators.uplands import drained_uplands
from simcore.kernels import parallel
from simcore.processes import PROCESSES
from simcore.terrain import Terrain

CELL = 30.0
#: seconds of work to time at least, per process and size
SPAN = 1.5


def _terrain(n: int) -> Terrain:
    return Terrain.from_heights(drained_uplands(n, seed=3, cell_size=CELL), CELL)


def measure(name: str, n: int) -> float:
    """Seconds per unit of process ``name`` on an ``n x n`` grid."""
    params = process_params(name)
    sim = Simulation(_terrain(n), {name: params}, particles=10**12)
    sim.run_round()  # compiles (or loads the cache), fills the scratch
    done, seconds, units = sim.rounds_done, 0.0, 0.0
    while seconds < SPAN and timing.items(name, params, sim.rounds_done,
                                          sim.rounds_done + 1):
        t0 = time.perf_counter()
        sim.run_round()
        seconds += time.perf_counter() - t0
    count = timing.items(name, params, done, sim.rounds_done)
    units = timing.units(name, params, sim.terrain.shape, count)
    return seconds / units if units else 0.0


def overhead(n: int) -> float:
    """Seconds per cell of a round beyond its processes' work: a process whose fixed
    work is done (one pass of the landscape, then rounds that do nothing)."""
    params = process_params("landscape").replace(age=1.0, time_step=1.0, batch=1)
    sim = Simulation(_terrain(n), {"landscape": params}, particles=10**12)
    sim.run_round()
    rounds = 100
    t0 = time.perf_counter()
    for _ in range(rounds):
        sim.run_round()
    return (time.perf_counter() - t0) / (rounds * n * n)


#: whole runs to check: (label, preset, grid side, --set overrides)
CASES = (
    ("default", "default", 256, {}),
    ("droplets_only", "droplets_only", 512, {}),
    ("alpine", "alpine", 256, {}),
    ("young_range", "young_range", 512, {}),
    ("ice and snow", "default", 128, {
        "droplets.enabled": False, "hydrology.enabled": False, "thermal.enabled": False,
        "trees.enabled": False, "ice.enabled": True, "ice.age": 20000.0,
        "ice.time_step": 100.0, "ice.ela_fraction": 0.3, "snow.enabled": True,
        "snow.years": 200.0, "snow.time_step": 1.0}),
)


def check(label: str, preset_name: str, n: int, sets: dict) -> dict:
    """The estimate of a whole run of ``preset_name`` on ``n x n`` cells and its time."""
    from simcore.formats.presets import find_preset
    preset = find_preset(preset_name).with_overrides(sets)

    def sim_of(t: Terrain) -> Simulation:
        return Simulation(t, preset.enabled_params(), seed=preset.seed,
                          particles=preset.work(t))
    small = sim_of(_terrain(32))
    small.run_round()  # compiles
    sim = sim_of(_terrain(n))
    estimate = timing.simulation_seconds(sim)
    t0 = time.perf_counter()
    sim.run()
    seconds = time.perf_counter() - t0
    return {"name": f"{label} at {n}², {parallel.threads()} threads",
            "estimate_s": round(estimate, 1), "measured_s": round(seconds, 1),
            "measured/estimate": round(seconds / estimate, 2)}


def run(quick: bool) -> list[dict]:
    sizes = (64, 128) if quick else (128, 256)
    measured_overhead = [overhead(n) for n in sizes]
    rows = [{"name": "a round, per cell and process",
             "declared": f"{timing.ROUND_SECONDS_PER_CELL:.3g}",
             **{f"s_per_unit {n}": f"{m:.3g}"
                for n, m in zip(sizes, measured_overhead, strict=True)},
             "mean": f"{sum(measured_overhead) / len(sizes):.3g}"}]
    for name, proc in PROCESSES.items():
        measured = [measure(name, n) for n in sizes]
        declared = proc.seconds_per_unit
        row = {"name": f"{name} ({parallel.threads()} threads)",
               "declared": f"{declared:.3g}"}
        for n, m in zip(sizes, measured, strict=True):
            row[f"s_per_unit {n}"] = f"{m:.3g}"
            row[f"ratio {n}"] = f"{m / declared:.2f}" if declared else "-"
        row["mean"] = f"{sum(measured) / len(measured):.3g}"
        rows.append(row)
    for case in CASES[:2] if quick else CASES:
        rows.append(check(*case))
    return rows


if __name__ == "__main__":
    import sys
    if "--cases" in sys.argv:  # the checks alone
        for case in CASES:
            print(check(*case), flush=True)
    else:
        for r in run("--quick" in sys.argv):
            print(r, flush=True)
