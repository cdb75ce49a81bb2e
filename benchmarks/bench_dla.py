"""Diffusion-limited aggregation speed.

Rows:

- ``coarse-to-fine N``: a cluster of about N particles grown the way the ridge terrain
  grows it (a 12-cell coarse lattice refined until the finest lattice is filled to 15%,
  walkers start anywhere): particles per second over the whole growth.
- ``classic N``: one seed, walkers launched on a ring just outside the cluster (Witten &
  Sander) and put back on it when they wander off, on a lattice about 3 cluster radii
  wide: particles per second.
- ``ridges 1024``: time to make a 1024x1024 ridge terrain with the default settings over
  a 20 km square (lattice cell 90 m), split into growth and the rest; and the same at
  60 m ridge spacing (lattice cell 9 m, ~800k particles).

Everything is compiled (warmed up on a small grid) before timing; one thread.
"""

from __future__ import annotations

import math
import time

from simcore.generators import ridges as dla


def _warm_up() -> None:
    dla.grow_cluster((40, 40), 200, launch="ring", seed=0)
    dla.grow_multiscale((12, 12), 1, 0.15, seed=0)
    dla.ridge_terrain((33, 33), 100.0, dla.RidgeParams())


def _coarse_to_fine(particles: int) -> dict:
    side = math.sqrt(particles / 0.15)
    levels = max(0, int(math.log2(side / 12)))
    base = math.ceil(side / 2 ** levels)
    t0 = time.perf_counter()
    clusters = dla.grow_multiscale((base, base), levels, 0.15, seed=1)
    seconds = time.perf_counter() - t0
    n = clusters[-1].size
    return {"name": f"coarse-to-fine {particles:,}", "particles": n,
            "lattice": f"{clusters[-1].occ.shape[0]}^2", "seconds": seconds,
            "particles_per_s": n / seconds}


def _classic(particles: int) -> dict:
    side = int(2.4 * particles ** (1 / 1.65)) | 1  # measured radius ~0.8 N^(1/1.65)
    t0 = time.perf_counter()
    c = dla.grow_cluster((side, side), particles, launch="ring", seed=1)
    seconds = time.perf_counter() - t0
    return {"name": f"classic {particles:,}", "particles": c.size, "lattice": f"{side}^2",
            "seconds": seconds, "particles_per_s": c.size / seconds,
            "walkers_lost": c.lost}


def _ridges(side: int, spacing: float = 600.0) -> dict:
    params = dla.RidgeParams(seed=1, ridge_spacing=spacing)
    cell = 20000.0 / (side - 1)
    t0 = time.perf_counter()
    extent = ((side - 1) * cell,) * 2
    coarse, levels = dla.plan_lattice(extent, params.ridge_spacing * params.density)
    dla.grow_multiscale(coarse, levels, params.density, seed=1)
    grow_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    r = dla.ridge_terrain((side, side), cell, params)
    total = time.perf_counter() - t0
    return {"name": f"ridges {side} spacing {spacing:g} m", "particles": r.clusters[-1].size,
            "lattice": f"{r.clusters[-1].occ.shape[0]}^2", "seconds": total,
            "growth_s": grow_s, "field_and_sampling_s": total - grow_s}


def run(quick: bool) -> list[dict]:
    _warm_up()
    sizes = (10_000, 100_000) if quick else (10_000, 100_000, 1_000_000)
    rows = [_coarse_to_fine(n) for n in sizes]
    rows += [_classic(n) for n in ((10_000,) if quick else (10_000, 100_000))]
    rows.append(_ridges(256 if quick else 1024))
    if not quick:
        rows.append(_ridges(1024, spacing=60.0))
    return rows


if __name__ == "__main__":
    import sys

    for row in run("--quick" in sys.argv):
        print(row)
