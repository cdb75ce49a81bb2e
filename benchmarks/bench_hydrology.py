"""Hydrology: particles per second (descend vs flood) and flood cost vs grid size.

Reference (issue 4): the article's C++ (-O3, one core) takes 16.2 s for 100 000
particles on 256² (86 % of it in flood, about 61 µs per flood call) and 11.4 s on 512².
We run the same count on the same kind of terrain (fractal noise, relief = side/4, as the
article's Perlin map x 80 on 256²), from a fresh map, batches of 250. The work is not
identical: how many particles flood and how big the lakes are depends on the terrain
history, so the per-step and per-flood figures are the fairer comparison.

The flood-cost rows pour into a lake of fixed size (a crater of radius 20 on a cone, so
the lake is about 1250 cells whatever the grid) on 256², 1024² and 2048²: ``fill`` pours
into a half-full lake (the plane search), ``drain`` into a full one (finds the outlet
and lowers the lake). Both must stay flat as the grid grows.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from simcore import hydrology
from simcore.hydrology import HydrologyParams, run_batch
from simcore.noise import fractal_terrain
from simcore.terrain import Terrain

REFERENCE_S = {256: 16.2, 512: 11.4}  # article's C++, 100 000 particles


def _particles(n: int, particles: int, timing: bool) -> tuple[float, np.ndarray, Terrain]:
    params = HydrologyParams()
    terrain = Terrain.from_heights(fractal_terrain(n, seed=1), world_units=False)
    height = terrain.height()
    stats = np.zeros(5)
    t0 = time.perf_counter()
    for first in range(0, particles, params.batch):
        run_batch(terrain, params, 1, first, min(params.batch, particles - first),
                  height=height, stats=stats, timing=timing)
    return time.perf_counter() - t0, stats, terrain


@njit(cache=True)
def _pour_loop(m, r, c, volume, p, height, bedrock, sediment, deposited, pool, ocean, stamp,
               gen, stack, members, reset):
    """``m`` floods at (r, c); with ``reset`` the pool map is restored after each."""
    tries = 0
    keep = pool.copy() if reset else pool[:1, :1].copy()
    outcome = 0
    for _ in range(m):
        outcome, _, _, _, _, t = hydrology._flood(r, c, volume, 0.0, p, height, bedrock,
                                                  sediment, deposited, pool, ocean, stamp,
                                                  gen, stack, members)
        tries += t
    if reset:
        pool[:, :] = keep
    return tries, outcome


def _crater(n: int, radius: float = 20.0) -> np.ndarray:
    yy, xx = np.mgrid[0:n, 0:n]
    r = np.hypot(yy - n // 2, xx - n // 2)
    rim = 100.0 - 0.2 * radius
    return np.where(r < radius, rim - 5.0 * (1.0 - (r / radius) ** 2), 100.0 - 0.2 * r)


def _flood_cost(n: int, m: int) -> dict:
    params = HydrologyParams(deposition=0.0)
    p = params.as_array()
    terrain = Terrain.from_heights(_crater(n), world_units=False)
    height = terrain.height()
    ocean, stamp, gen, stack, members = hydrology._prepare(terrain, params, height)
    c = n // 2
    args = (height, terrain.bedrock, terrain.sediment, terrain.deposited, terrain.pool, ocean,
            stamp, gen, stack, members)
    # half full (by volume), then time small pours that raise it a little each
    capacity = params.volume_factor * np.pi * 20.0 ** 2 * 5.0 / 2
    while hydrology.pool_volume(terrain, params) < capacity / 2:
        _pour_loop(1, c, c, 1000.0, p, *args, False)
    half_cells = int((terrain.pool > 0).sum())
    _pour_loop(10, c, c, 1.0, p, *args, True)  # compile / warm
    t0 = time.perf_counter()
    fill_tries, _ = _pour_loop(m, c, c, 1.0, p, *args, False)
    fill = (time.perf_counter() - t0) / m
    # full: pour until the lake drains, then time pours that find the outlet
    for _ in range(1000):
        _, outcome = _pour_loop(1, c, c, 1000.0, p, *args, False)
        if outcome == 1:
            break
    full_cells = int((terrain.pool > 0).sum())
    t0 = time.perf_counter()
    drain_tries, outcome = _pour_loop(m, c, c, 1.0, p, *args, False)
    drain = (time.perf_counter() - t0) / m
    return {"name": f"flood fixed lake {n}x{n}", "lake_cells_half": half_cells,
            "fill_us": fill * 1e6, "fill_tries": fill_tries / m, "lake_cells_full": full_cells,
            "drain_us": drain * 1e6, "drain_tries": drain_tries / m,
            "drained": bool(outcome == 1)}


def run(quick: bool) -> list[dict]:
    rows = []
    particles = 20_000 if quick else 100_000
    for n in (256, 512):
        _particles(32, 500, True)  # compile
        wall, stats, terrain = _particles(n, particles, False)
        _, tstats, _ = _particles(n, particles, True)  # same work, timed inside
        ref = REFERENCE_S[n] * particles / 100_000
        rows.append({
            "name": f"hydrology {n}x{n}", "particles": particles, "seconds": wall,
            "particles_per_s": particles / wall,
            "descend_s": tstats[3], "flood_s": tstats[4],
            "steps_per_particle": stats[0] / particles,
            "ns_per_step": 1e9 * tstats[3] / max(stats[0], 1),
            "flood_calls": int(stats[1]), "us_per_flood": 1e6 * tstats[4] / max(stats[1], 1),
            "tries_per_flood": stats[2] / max(stats[1], 1),
            "pool_cells": int((terrain.pool > 0).sum()),
            "reference_s": ref, "speedup_vs_article": ref / wall,
        })
    for n in (256, 1024) if quick else (256, 1024, 2048):
        rows.append(_flood_cost(n, 2000 if quick else 20000))
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
