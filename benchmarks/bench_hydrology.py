"""Hydrology on equal work against the article's C++, and flood cost vs grid size.

Equal work: the same terrain (fractal noise, 256², relief 64 cells, the scale of the
article's Perlin map; for us cells of 30 m, where our per-step rates are the
article's) and the same rain: 100 000 particles in batches of 250, each with the
article's water (volumeFactor 100 on heights normalised to the relief, i.e.
``rain_volume = relief / 100 x cell area``). The comparator is our C++ port of the article's loop
(``reference/hydrology_ref.cpp``, built with g++ -O3 at benchmark time; the rows say
so when no compiler is found). Beside the times: the outcome, pool cells and lakes
of at least 20 cells formed by each.

Flood share: our kernel has no timing code. The benchmark replays the same particles
through the same kernels (``hydrology._descend`` / ``_flood``) in a driver that reads
the CPU's cycle counter around each call, checks that the replay left bit-identical
arrays, and reports the share of cycles spent flooding. The article's share comes
from clocks around ``Drop::flood`` in the port.

The flood-cost rows pour into a lake of fixed size (a crater of radius 20 on a cone,
about 1250 cells whatever the grid) on 256², 1024² and 2048²: ``fill`` pours into a
half-full lake, ``drain`` into a full one (finds the outlet and lowers the lake).
Both must stay flat as the grid grows.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from simcore.generators.noise import fractal_terrain  # noqa: E402
from simcore.kernels.primitives import rain_cdf, start_position, stream_state  # noqa: E402
from simcore.processes import hydrology  # noqa: E402
from simcore.processes.hydrology import HydrologyParams, article_rain_volume, run_batch  # noqa: E402
from simcore.terrain import Terrain  # noqa: E402

REFERENCE = Path(__file__).resolve().parent / "reference" / "hydrology_ref.cpp"


# ---------------------------------------------------------------------------- ours

#: our cell size for the comparison: the per-step rates are the article's on 30 m cells
CELL = hydrology.REFERENCE_CELL


def _terrain(n: int, relief: float, seed: int = 1) -> tuple[np.ndarray, Terrain]:
    """Heights in cell units (the article's grid), cells of ``CELL`` m."""
    heights = fractal_terrain(n, seed=seed, relief=relief)
    return heights, Terrain.from_heights(heights, CELL, world_units=False)


def _lake_stats(pool: np.ndarray) -> dict:
    t = Terrain.from_heights(np.zeros(pool.shape), world_units=False)
    t.pool[:] = pool
    sizes = hydrology.lakes(t)
    return {"pool_cells": int((pool > 0).sum()),
            "lakes_20": sum(1 for s in sizes if s >= 20),
            "largest_lake": sizes[0] if sizes else 0}


def _run_ours(terrain: Terrain, params: HydrologyParams,
              particles: int) -> tuple[float, np.ndarray]:
    height = terrain.height()
    stats = np.zeros(len(hydrology.STATS))
    t0 = time.perf_counter()
    for first in range(0, particles, params.batch):
        run_batch(terrain, params, 1, first, min(params.batch, particles - first),
                  height=height, stats=stats)
    return time.perf_counter() - t0, stats


@intrinsic
def _cycles(typingctx):
    """The CPU's cycle counter (llvm.readcyclecounter)."""
    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])
    return types.uint64(), codegen


@njit(cache=True, error_model="numpy")
def _timed_batch(seed, first, count, k, cdf, height, bedrock, sediment, eroded, deposited,
                 erodibility, pool, stream, vegetation, track, ocean, scratch, cycles):
    """``hydrology._run_batch`` / ``_particle`` with cycle counts around descend and
    flood (cycles[0], cycles[1]); returns the sediment carried off the map."""
    rows, cols = height.shape
    flat = hydrology._flat(height, bedrock, sediment, eroded, deposited, erodibility, pool,
                           stream, vegetation)
    ft = track.reshape(rows * cols)
    lost = 0.0
    for p in range(count):
        st = stream_state(np.uint64(seed), np.uint64(hydrology.STREAM_ID),
                          np.uint64(first + p))
        st, x, y = start_position(st, cdf, rows, cols)
        volume = 1.0
        sed = 0.0
        vx = 0.0
        vy = 0.0
        alive = True
        for _ in range(k.spill):
            c0 = _cycles()
            outcome, x, y, vx, vy, volume, sed, _ = hydrology._descend(
                x, y, vx, vy, volume, sed, k, rows, cols, flat, ft)
            cycles[0] += _cycles() - c0
            r = min(max(int(y), 0), rows - 1)
            c = min(max(int(x), 0), cols - 1)
            if outcome == hydrology._OUT:
                lost += volume * sed
                alive = False
                break
            if outcome == hydrology._EVAPORATED:
                hydrology._settle(r, c, volume * sed, height, bedrock, sediment, deposited,
                                  pool)
                alive = False
                break
            c0 = _cycles()
            outcome, volume, sed, dr, dc, _ = hydrology._flood(
                int(y), int(x), volume, sed, k, height, bedrock, sediment, deposited, pool,
                ocean, scratch)
            cycles[1] += _cycles() - c0
            if outcome == hydrology._EDGE:
                lost += volume * sed
            if outcome != hydrology._DRAINED:
                alive = False
                break
            x = dc + 0.5
            y = dr + 0.5
        if alive:
            hydrology._settle(int(y), int(x), volume * sed, height, bedrock, sediment,
                              deposited, pool)
    return lost


def _flood_share(heights: np.ndarray, params: HydrologyParams, particles: int,
                 expected: Terrain) -> tuple[float, bool]:
    t = Terrain.from_heights(heights, CELL, world_units=False)
    height = t.height()
    cdf = rain_cdf(t.rain)
    cycles = np.zeros(2, dtype=np.uint64)
    k = params.kernel(t.cell_size)
    for first in range(0, particles, params.batch):
        ocean, scratch = hydrology._prepare(t, params, height)
        track = np.zeros(t.shape, dtype=np.uint8)
        t.outflow += _timed_batch(np.uint64(1), first, min(params.batch, particles - first),
                                  k, cdf, height, t.bedrock, t.sediment, t.eroded,
                                  t.deposited, t.erodibility, t.pool, t.stream,
                                  t.vegetation, track, ocean, scratch, cycles)
        hydrology._drain_lakes(params.open_edges, height, t.pool, ocean, scratch,
                               hydrology._wet_list(scratch))
        hydrology._adapt_stream(t.stream, track, params.stream_rate)
    same = all(np.array_equal(a, expected.arrays()[n]) for n, a in t.arrays().items())
    return float(cycles[1]) / float(cycles[0] + cycles[1]), bool(same)


# ---------------------------------------------------------------------------- the article

def reference_available() -> bool:
    return shutil.which("g++") is not None


def run_reference(heights: np.ndarray, scale: float, particles: int, batch: int = 250,
                  seed: int = 1) -> dict:
    """Build (into a temp folder, once per source change) and run the C++ port on
    ``heights`` (cell units, square). Returns its JSON report plus the pool map."""
    from benchmarks.reference.compile import compile_cached
    binary = compile_cached(REFERENCE, "g++", ["-O3", "-march=native", "-std=c++17",
                                               "-pthread"])
    n = heights.shape[0]
    with tempfile.TemporaryDirectory(prefix="hydrology_ref_") as tmp:
        src, out = Path(tmp) / "h.f64", Path(tmp) / "pool.f64"
        np.ascontiguousarray(heights, dtype="<f8").tofile(src)
        result = subprocess.run([str(binary), str(src), str(n), repr(float(scale)),
                                 str(particles), str(batch), str(seed), str(out)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"hydrology_ref failed: {result.stderr}")
        info = json.loads(result.stdout.strip().splitlines()[-1])
        info["pool"] = np.fromfile(out, dtype="<f8").reshape(n, n)
    return info


def _equal_work(n: int, particles: int) -> dict:
    relief = n / 4.0
    heights, terrain = _terrain(n, relief)
    # the article's five descend-flood cycles (our default is 20: finer grids)
    params = HydrologyParams(rain_volume=article_rain_volume(relief * CELL, CELL), spill=5)
    _run_ours(Terrain.from_heights(heights[:32, :32], CELL, world_units=False), params, 500)
    seconds, stats = _run_ours(terrain, params, particles)
    share, same = _flood_share(heights, params, particles, terrain)
    row = {"name": f"hydrology {n}x{n} equal rain", "particles": particles,
           "rain_volume_m3": params.rain_volume, "seconds": seconds,
           "particles_per_s": particles / seconds, "flood_share": share,
           "timed_replay_identical": same,
           "steps_per_particle": stats[0] / particles, "floods": int(stats[1]),
           "cells_per_flood": stats[2] / max(stats[1], 1), **_lake_stats(terrain.pool)}
    if not reference_available():
        row["article"] = "g++ not found: comparator not run"
        return row
    ref = run_reference(heights, relief, particles)
    lakes = _lake_stats(ref.pop("pool"))
    row.update({"article_seconds": ref["seconds"],
                "article_flood_share": ref["flood_seconds"] / ref["seconds"],
                "article_steps_per_particle": ref["steps"] / particles,
                "article_floods": ref["floods"],
                **{f"article_{k}": v for k, v in lakes.items()},
                "speedup_vs_article": ref["seconds"] / seconds})
    return row


# ---------------------------------------------------------------------------- flood cost

@njit(cache=True)
def _pour_loop(m, r, c, volume, k, height, bedrock, sediment, deposited, pool, ocean,
               scratch):
    visited = 0
    outcome = 0
    for _ in range(m):
        outcome, _, _, _, _, v = hydrology._flood(r, c, volume, 0.0, k, height, bedrock,
                                                  sediment, deposited, pool, ocean, scratch)
        visited += v
    return visited, outcome


def _crater(n: int, radius: float = 20.0) -> np.ndarray:
    yy, xx = np.mgrid[0:n, 0:n]
    r = np.hypot(yy - n // 2, xx - n // 2)
    rim = 100.0 - 0.2 * radius
    return np.where(r < radius, rim - 5.0 * (1.0 - (r / radius) ** 2), 100.0 - 0.2 * r)


def _flood_cost(n: int, m: int) -> dict:
    params = HydrologyParams(deposition=0.0, rain_volume=1.0)  # 1 m³ a particle, cell 1
    terrain = Terrain.from_heights(_crater(n), world_units=False)
    k = params.kernel(terrain.cell_size)
    height = terrain.height()
    ocean, scratch = hydrology._prepare(terrain, params, height)
    c = n // 2
    args = (k, height, terrain.bedrock, terrain.sediment, terrain.deposited, terrain.pool,
            ocean, scratch)
    capacity = np.pi * 20.0 ** 2 * 5.0 / 2  # m³
    while hydrology.pool_volume(terrain) < capacity / 2:
        _pour_loop(1, c, c, 50.0, *args)
    half_cells = int((terrain.pool > 0).sum())
    half = terrain.pool.copy()
    pour = 0.1  # m³: raises the half-full lake by about 0.1 mm
    _pour_loop(10, c, c, pour, *args)  # compile / warm
    fill = 0.0
    fill_visited = 0
    for _ in range(m // 500):  # chunks, each from the same half-full lake
        terrain.pool[:] = half
        t0 = time.perf_counter()
        fill_visited += _pour_loop(500, c, c, pour, *args)[0]
        fill += time.perf_counter() - t0
    fill /= m
    for _ in range(1000):  # pour until the lake overflows
        _, outcome = _pour_loop(1, c, c, 50.0, *args)
        if outcome == hydrology._DRAINED:
            break
    full_cells = int((terrain.pool > 0).sum())
    t0 = time.perf_counter()
    drain_visited, outcome = _pour_loop(m, c, c, pour, *args)
    drain = (time.perf_counter() - t0) / m
    return {"name": f"flood fixed lake {n}x{n}", "lake_cells_half": half_cells,
            "fill_us": fill * 1e6, "fill_cells_visited": fill_visited / m,
            "lake_cells_full": full_cells, "drain_us": drain * 1e6,
            "drain_cells_visited": drain_visited / m,
            "drained": bool(outcome == hydrology._DRAINED)}


def run(quick: bool) -> list[dict]:
    rows = [_equal_work(256, 20_000 if quick else 100_000)]
    for n in (256, 1024) if quick else (256, 1024, 2048):
        rows.append(_flood_cost(n, 2000 if quick else 20000))
    return rows


if __name__ == "__main__":
    for row in run(quick="--full" not in sys.argv):
        print(row)
