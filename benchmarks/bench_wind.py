"""Wind (dunes) and thermal speed: equal work against the 2023 code.

Rows:

- ``dunes 128^2``: our wind, desert settings (``wrap``), on an all-sand world (flat
  bedrock under 0-12 m of uniformly random sand, cell 1 m), 300k particles (100k with
  ``--quick``), and the seed author's 2023 SimpleWindErosion loop (built here from a
  fetched copy, see ``reference/wind_2023.py``) on the same grid and sand with the same
  particle count. Beside the times: the dune figures of both results (spectral share of
  along-wind profiles at 5-40 cells, dominant wavelength, lee/stoss slope ratio, median
  slip-face angle, crest angle to the wind) and the material each run kept.
- ``2023 start``: the same comparison on the 2023 code's own start (its Gaussian sand
  hill), where its dunes grow.
- ``two resolutions``: the same world at 256² x 1 m and 128² x 2 m (non-quick only).
- ``thermal passes``: thermal relaxation passes per second (the thermal kernel).

The 2023 code's wind blows towards +row of its arrays, our direction 90°. Our kernel
runs on one thread; so does theirs.
"""

from __future__ import annotations

import time

import numpy as np

from simcore.generators.noise import fractal_terrain
from simcore.processes import thermal, wind
from simcore.terrain import Terrain

DESERT = dict(wrap=True, batch=1000)


def sand_sea(n: int, cell: float = 1.0, seed: int = 2) -> Terrain:
    """Flat bedrock under 0-12 m of uniformly random sand (the same world at any cell
    size: coarser grids get the block mean of the 1 m grid)."""
    fine = np.random.default_rng(seed).uniform(0.0, 12.0, (int(n * cell),) * 2)
    f = int(cell)
    sed = fine.reshape(n, f, n, f).mean(axis=(1, 3))
    return Terrain.from_heights(np.zeros((n, n)), cell, world_units=True, sediment=sed / cell)


def _dunes(height: np.ndarray, direction: float, cell: float = 1.0) -> dict:
    m = wind.measure_dunes(height, direction, cell)
    return {"share": m["spectral_share"], "wavelength_m": m["wavelength_m"],
            "lee_stoss": m["lee_stoss"], "lee_p50_deg": m["lee_p50_deg"],
            "crest_deg": m["crest_angle_deg"]}


def ours(t: Terrain, particles: int, direction: float) -> dict:
    p = wind.WindParams(direction=direction, **DESERT)
    height = t.height()
    total0 = t.total_material()
    steps = 0
    t0 = time.perf_counter()
    for b in range(particles // p.batch):
        steps += wind.run_batch(t, p, 1, b * p.batch, p.batch, height)
    sec = time.perf_counter() - t0
    return {"s": sec, "particles_per_s": particles / sec, "ns_per_step": sec * 1e9 / steps,
            "kept": t.total_material() / total0, **_dunes(t.height(), direction, t.cell_size)}


def theirs(heights: np.ndarray, particles: int) -> dict | None:
    try:
        from benchmarks.reference.wind_2023 import available, run_2023
    except ImportError:
        return None
    if not available():
        return None
    info = run_2023(heights, particles)
    h = info["heights"].astype(np.float64)
    sec = info["ms"] / 1e3
    return {"s": sec, "particles_per_s": info["particles"] / sec,
            "kept": float(h.sum() / heights.sum()), **_dunes(h, 90.0)}


def _compare(name: str, t: Terrain, particles: int) -> dict:
    start = t.height().copy()
    row = {"name": name, "particles": particles}
    row.update({f"ours_{k}": v for k, v in ours(t, particles, 90.0).items()})
    ref = theirs(start, particles)
    if ref is not None:
        row.update({f"2023_{k}": v for k, v in ref.items()})
        row["x_particles_per_s"] = row["ours_particles_per_s"] / ref["particles_per_s"]
    return row


def _warm_up() -> None:
    t = sand_sea(32)
    wind.run_batch(t, wind.WindParams(**DESERT), 0, 0, 4)
    thermal.run_batch(t, thermal.ThermalParams(), 0, 0, 1)


def run(quick: bool) -> list[dict]:
    _warm_up()
    from benchmarks.reference.wind_2023 import gaussian_hill

    particles = 100_000 if quick else 300_000
    rows = [_compare("dunes 128^2 all-sand", sand_sea(128), particles)]
    hill = gaussian_hill(128)
    t = Terrain.from_heights(np.zeros_like(hill), world_units=False, sediment=hill)
    rows.append(_compare("2023 start (its sand hill) 128^2", t, particles // 4))
    if not quick:
        for n, cell, count in ((256, 1.0, 1_200_000), (128, 2.0, 1_200_000)):
            r = ours(sand_sea(n, cell), count, 0.0)
            rows.append({"name": f"same 256 m world at {n}^2 x {cell:g} m", **r})
    side = 512 if quick else 1024
    heights = fractal_terrain(side, seed=1, relief=side / 8)
    t = Terrain.from_heights(heights, world_units=False, sediment=np.full((side, side), 2.0))
    height = t.height()
    tp = thermal.ThermalParams()
    thermal.run_batch(t, tp, 0, 0, 1, height)
    passes = 5 if quick else 20
    t0 = time.perf_counter()
    thermal.run_batch(t, tp, 0, 0, passes, height)
    sec = time.perf_counter() - t0
    rows.append({"name": f"thermal passes at {side}^2", "passes_per_s": passes / sec,
                 "ms_per_pass": sec * 1e3 / passes})
    return rows
