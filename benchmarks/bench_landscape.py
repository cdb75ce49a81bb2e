"""Landscape evolution against fastscapelib 0.3.0, the reference of the field.

Equal work: one start (fractal noise of 1 m relief, edges at 0 as base level), the
same parameters (uplift, K, m, n = 1, diffusivity) and the same number of time steps;
ours runs with ``deposition = 0`` (pure stream power, as fastscapelib's SPLEroder).
Rows:

* agreement (256², or 128² with --quick): Pearson r of the height change, and the
  relief of both after the run (steady state: within 2% asked);
* agreement at the steps of the presets with a landscape section (256² at 10, 30 and
  50 m cells, 128² with --quick): their uplift, K, m, n, D, time step and age (ours
  with ``deposition = 0``, ``head_area = 0``), from two starts at that cell size: the
  pyramid and ``generate``'s drained uplands (edges at 0); ``alpha`` = D dt / dx², the
  concavity theta of the slope-area fit (and its r²) of each, r of the height change,
  the relief ratio and the roughness of each (mean |h - the mean of its 4 neighbours|:
  fastscapelib's ADI rings, a checkerboard, once alpha is well above 1); where
  alpha > 1 (not with --quick) also both against ours at a tenth of the step (the
  converged run: ADI at alpha <= 1, which fastscapelib's matches to r = 1.000);
* speed (1024² and 2048², 512² and 1024² with --quick): seconds per time step of
  each, measured in one run, on the same uplifted start, and their ratio;
* a summary: per start and cell size, the largest |theta ours - theta fastscapelib|
  and the smallest height-change r over the presets, and the speed ratios;
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
from simcore.generators.uplands import drained_uplands
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


def _start(size: int, seed: int = 1, cell: float = CELL) -> np.ndarray:
    """A low pyramid (slope 1% towards the nearest edge: 0.3 m a 30 m cell) with 0.1 m
    of fractal noise, edges at 0: every cell has a lower neighbour, so both codes start
    from one drained grid and neither one's way of routing pits decides the network."""
    rows = np.arange(size)
    to_edge = np.minimum.outer(np.minimum(rows, size - 1 - rows),
                               np.minimum(rows, size - 1 - rows))
    h = 0.01 * cell * to_edge + 0.1 * fractal_terrain(size, seed=seed, relief=1.0)
    h[0, :] = h[-1, :] = h[:, 0] = h[:, -1] = 0.0
    return h


def _uplands(size: int, cell: float) -> np.ndarray:
    """``generate``'s drained uplands at ``cell`` (seed 4), the edges lowered to 0 as
    base level: a start whose network is already drained and concave."""
    h = drained_uplands(size, seed=4, cell_size=cell)
    h[0, :] = h[-1, :] = h[:, 0] = h[:, -1] = 0.0
    return h


def ours(h0: np.ndarray, steps: int, params: dict = PARAMS, cell: float = CELL,
         dt: float = DT) -> tuple[np.ndarray, float]:
    """Heights (world) after ``steps`` of our landscape process; seconds per step."""
    t = Terrain.from_heights(h0, cell)
    p = landscape.LandscapeParams(**params, deposition=0.0, time_step=dt, head_area=0.0)
    height = t.height()
    work: dict = {}  # the steps' arrays, kept as a batch keeps them
    t0 = time.perf_counter()
    for k in range(steps):
        landscape.evolve(t, p, dt, height, rows_first=k % 2 == 0, work=work)
    return t.world_height(), (time.perf_counter() - t0) / max(steps, 1)


def _roughness(h: np.ndarray) -> float:
    """Mean |h - the mean of its 4 neighbours| over the interior (world units)."""
    around = 0.25 * (h[:-2, 1:-1] + h[2:, 1:-1] + h[1:-1, :-2] + h[1:-1, 2:])
    return float(np.abs(h[1:-1, 1:-1] - around).mean())


def _preset_agreement(name: str, size: int, cell: float, fine: bool,
                      start: str = "pyramid") -> dict:
    """Ours against fastscapelib with a preset's landscape parameters and step, from
    the ``start`` (pyramid or uplands); with ``fine``, where alpha > 1, both against
    ours at a tenth of the step (the converged run: ADI, alpha <= 1)."""
    pr = load_preset(preset_files()[name]).params["landscape"]
    params = {key: getattr(pr, key) for key in PARAMS}
    steps = landscape.steps(pr)
    h0 = _start(size, cell=cell) if start == "pyramid" else _uplands(size, cell)
    mine, _ = ours(h0, steps, params, cell, pr.time_step)
    ref, _ = run_fastscape(h0, cell, dt=pr.time_step, steps=steps, **params)
    row = {"name": f"{name} from the {start} {size}^2 x {cell:g} m, {steps} steps of "
                   f"{pr.time_step:g} yr",
           "start": start, "cell": cell,
           "alpha": pr.diffusivity * pr.time_step / cell ** 2}
    fits = {who: landforms.slope_area(hh / cell, cell) for who, hh in
            (("ours", mine), ("fastscape", ref))}
    row.update({"theta_ours": fits["ours"]["theta"],
                "theta_fastscape": fits["fastscape"]["theta"],
                "r2_ours": fits["ours"]["r2"], "r2_fastscape": fits["fastscape"]["r2"],
                "dh_r": correlation(mine - h0, ref - h0),
                "relief_ratio": float(np.ptp(mine) / np.ptp(ref)),
                "rough_ours_m": _roughness(mine), "rough_fastscape_m": _roughness(ref)})
    if fine and row["alpha"] > landscape.ADI_MOST:
        conv, _ = ours(h0, 10 * steps, params, cell, pr.time_step / 10)
        row.update({"theta_fine": landforms.slope_area(conv / cell, cell)["theta"],
                    "dh_r_fine_ours": correlation(mine - h0, conv - h0),
                    "dh_r_fine_fastscape": correlation(ref - h0, conv - h0),
                    "rough_fine_m": _roughness(conv)})
    return row


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


def _summary(agree: list[dict], speed: list[dict]) -> list[dict]:
    """One row per start: per cell size the largest |theta ours - theta fastscapelib|
    and the smallest height-change r over the presets (the targets: 0.05 and 0.97),
    then the speed ratios of the run."""
    rows = []
    for start in dict.fromkeys(r["start"] for r in agree):
        row: dict = {"name": f"summary, {start} start"}
        for cell in dict.fromkeys(r["cell"] for r in agree):
            these = [r for r in agree if r["start"] == start and r["cell"] == cell]
            row[f"dtheta_max_{cell:g}m"] = max(
                abs(r["theta_ours"] - r["theta_fastscape"]) for r in these)
            row[f"dh_r_min_{cell:g}m"] = min(r["dh_r"] for r in these)
        rows.append(row)
    rows.append({"name": "summary, speed: fastscapelib's step / ours",
                 **{f"speedup_{r['name'].split()[1]}": r["speedup"] for r in speed},
                 **{f"speedup_1_thread_{r['name'].split()[1]}": r["speedup_1_thread"]
                    for r in speed}})
    return rows


def run(quick: bool) -> list[dict]:
    rows = []
    if _ensure_fastscape():
        rows.append(_agreement(128 if quick else 256, 100 if quick else 300))
        agree = []
        for start in ("pyramid", "uplands"):
            for name in ("young_range", "landscape_detail", "old_worn"):
                if name in preset_files():
                    for cell in (10.0, 30.0, 50.0):
                        agree.append(_preset_agreement(name, 128 if quick else 256, cell,
                                                       not quick, start))
        speed = [_speed(size, 3 if quick or size > 1024 else 10)
                 for size in ((512, 1024) if quick else (1024, 2048))]
        rows += agree + speed + _summary(agree, speed)
    else:
        rows.append({"name": "fastscapelib 0.3.0 not installable here: no comparison"})
    for name in ("young_range", "old_worn", "landscape_detail", "default"):
        if name in preset_files():
            rows.append(_preset_row(name, 128 if quick else 256))
    return rows
