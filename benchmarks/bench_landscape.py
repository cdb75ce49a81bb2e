"""Landscape evolution against fastscapelib 0.3.0, the reference of the field.

Equal work: one start (fractal noise of 1 m relief, edges at 0 as base level), the
same parameters (uplift, K, m, n = 1, diffusivity) and the same number of time steps;
ours runs with ``deposition = 0`` (pure stream power, as fastscapelib's SPLEroder).
Rows:

* agreement (256², or 128² with --quick): Pearson r of the height change, and the
  relief of both after the run (steady state: within 2% asked);
* speed (1024², 512² with --quick): seconds per time step of each, measured in one
  run, on the same uplifted start, and their ratio;
* drainage and landforms of our landscape presets on the generated uplands (256² x
  30 m): share of the map in closed basins deeper than 1 m, the concavity theta of
  the slope-area fit and slope percentiles, before and after.

fastscapelib is installed for the benchmark only (``pip install fastscapelib==0.3.0``,
done here if missing); the extension never needs it.
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

from benchmarks.reference.fastscape import fastscape_available, run_fastscape
from simcore.analysis import landforms
from simcore.analysis.landforms import correlation
from simcore.engine.simulation import Simulation
from simcore.formats.presets import load_preset, preset_files
from simcore.generators.noise import fractal_terrain, upland_terrain
from simcore.kernels import parallel
from simcore.processes import landscape
from simcore.terrain import Terrain

PARAMS = {"uplift": 1e-3, "k": 2e-5, "m": 0.45, "n": 1.0, "diffusivity": 0.01}
CELL = 30.0
DT = 1e4


def _ensure_fastscape() -> bool:
    if not fastscape_available():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "fastscapelib==0.3.0"],
                       check=False)
    return fastscape_available()


def _start(size: int, seed: int = 1) -> np.ndarray:
    """A low pyramid (0.3 m a cell towards the nearest edge) with 0.1 m of fractal
    noise, edges at 0: every cell has a lower neighbour, so both codes start from one
    drained grid and neither one's way of routing pits decides the network."""
    rows = np.arange(size)
    to_edge = np.minimum.outer(np.minimum(rows, size - 1 - rows),
                               np.minimum(rows, size - 1 - rows))
    h = 0.01 * CELL * to_edge + 0.1 * fractal_terrain(size, seed=seed, relief=1.0)
    h[0, :] = h[-1, :] = h[:, 0] = h[:, -1] = 0.0
    return h


def ours(h0: np.ndarray, steps: int, params: dict = PARAMS) -> tuple[np.ndarray, float]:
    """Heights (world) after ``steps`` of our landscape process; seconds per step."""
    t = Terrain.from_heights(h0, CELL)
    p = landscape.LandscapeParams(**params, deposition=0.0, time_step=DT, head_area=0.0)
    height = t.height()
    t0 = time.perf_counter()
    for k in range(steps):
        landscape.evolve(t, p, DT, height, rows_first=k % 2 == 0)
    return t.world_height(), (time.perf_counter() - t0) / max(steps, 1)


def _agreement(size: int, steps: int) -> dict:
    h0 = _start(size)
    mine, _ = ours(h0, steps)
    ref, _ = run_fastscape(h0, CELL, dt=DT, steps=steps, **PARAMS)
    relief_ours, relief_ref = float(np.ptp(mine)), float(np.ptp(ref))
    return {"name": f"agreement {size}^2, {steps} steps of {DT:g} yr",
            "dh_r": correlation(mine - h0, ref - h0),
            "relief_ours_m": relief_ours, "relief_fastscape_m": relief_ref,
            "relief_ratio": relief_ours / relief_ref}


def _speed(size: int, steps: int) -> dict:
    """Seconds per step of ours (2 threads, then 1) and of fastscapelib, alternating
    twice in this run; the best of the two of each."""
    # a start with relief and valleys already (5 steps from the pyramid), like a run
    h0, _ = ours(_start(size, seed=2), 5, {**PARAMS, "uplift": 2e-2})
    ours(h0[:16, :16], 1)  # compile outside the timing
    times: dict[str, list[float]] = {"ours": [], "ref": [], "one": []}
    old = parallel.threads()
    try:
        for _ in range(2):
            parallel.set_threads(old)
            times["ours"].append(ours(h0, steps)[1])
            times["ref"].append(run_fastscape(h0, CELL, dt=DT, steps=steps, **PARAMS)[1])
            parallel.set_threads(1)
            times["one"].append(ours(h0, steps)[1])
    finally:
        parallel.set_threads(old)
    t_ours, t_ref, t_one = (min(times[k]) for k in ("ours", "ref", "one"))
    return {"name": f"speed {size}^2 per step ({steps} steps, best of 2)", "ours_s": t_ours,
            "fastscapelib_s": t_ref, "speedup": t_ref / t_ours, "ours_1_thread_s": t_one,
            "speedup_1_thread": t_ref / t_one, "threads_speedup": t_one / t_ours}


def _preset_row(name: str, size: int) -> dict:
    preset = load_preset(preset_files()[name])
    h = upland_terrain(size, seed=4)
    t = Terrain.from_heights(h, CELL)
    before = t.height().copy()
    sim = Simulation(t, preset.enabled_params(), seed=preset.seed,
                     particles=preset.work(t))
    t0 = time.perf_counter()
    sim.run()
    after = t.height()
    row = {"name": f"preset {name} {size}^2 x {CELL:g} m", "seconds": time.perf_counter() - t0}
    for label, hh in (("before", before), ("after", after)):
        s = landforms.slope_stats(hh)
        sa = landforms.slope_area(hh, CELL)
        row[f"closed_{label}"] = landforms.closed_basin_share(hh, CELL)
        row[f"theta_{label}"] = sa["theta"]
        row[f"r2_{label}"] = sa["r2"]
        row[f"p50_{label}"] = s["p50"]
        row[f"p99_{label}"] = s["p99"]
        row[f"pct45_{label}"] = s["pct45"]
    row["lakes_pct"] = 100.0 * float((t.pool > 0).mean())
    return row


def run(quick: bool) -> list[dict]:
    rows = []
    if _ensure_fastscape():
        rows.append(_agreement(128 if quick else 256, 100 if quick else 300))
        rows.append(_speed(512 if quick else 1024, 5 if quick else 10))
    else:
        rows.append({"name": "fastscapelib 0.3.0 not installable here: no comparison"})
    for name in ("young_range", "old_worn", "landscape_detail", "default"):
        if name in preset_files():
            rows.append(_preset_row(name, 128 if quick else 256))
    return rows
