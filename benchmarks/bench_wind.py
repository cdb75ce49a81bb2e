"""Wind and thermal erosion speed (issue 5).

Rows: 250 wind particles on 128², 256², 512² (ms, particle steps, ns per step), 100
batches of 250 at 256² (ms per batch), growth with side length, and thermal passes per
second at 1024². Terrains: ``fractal_terrain`` (relief = side / 8) with 2 cells of
sediment everywhere. Everything is compiled (warmed up on a small grid) before timing.
The wind kernel runs on one thread; thermal passes use numba's threads.

Reference, the article's C++ built -O3 on one core of a machine like ours: 17, 47 and
99 ms for 250 particles on 128², 256², 512², and 43 ms per batch over 100 batches at
256². When g++ is on PATH, ``reference/wind_ref.cpp`` (a port of the article's loop) is
built and run on the same terrain for a side-by-side figure.
"""

from __future__ import annotations

import time

import numpy as np

from simcore import thermal, wind
from simcore.noise import fractal_terrain
from simcore.terrain import Terrain

REFERENCE_MS = {128: 17.0, 256: 47.0, 512: 99.0}
REFERENCE_BATCH_MS = 43.0


def _terrain(side: int, seed: int = 1) -> Terrain:
    heights = fractal_terrain(side, seed=seed, relief=side / 8)
    return Terrain.from_heights(heights, world_units=False,
                                sediment=np.full((side, side), 2.0))


def _warm_up() -> None:
    t = _terrain(32)
    wind.run_batch(t, wind.WindParams(), 0, 0, 4)
    thermal.run_batch(t, thermal.ThermalParams(), 0, 0, 1)


def _reference(side: int, particles: int, batches: int = 1) -> dict | None:
    try:
        from reference.wind_reference import reference_available, run_reference
    except ImportError:
        return None
    if not reference_available():
        return None
    t = _terrain(side)
    return run_reference(t.bedrock, t.sediment, particles, batches)


def run(quick: bool) -> list[dict]:
    _warm_up()
    rows: list[dict] = []
    p = wind.WindParams()
    sides = (128, 256) if quick else (128, 256, 512)
    per_side = {}
    for side in sides:
        t = _terrain(side)
        height = t.height()
        t0 = time.perf_counter()
        steps = wind.run_batch(t, p, 1, 0, 250, height)
        ms = (time.perf_counter() - t0) * 1e3
        per_side[side] = ms
        row = {"name": f"wind 250 particles {side}^2", "ms": ms, "steps": steps,
               "ns_per_step": ms * 1e6 / steps, "ref_cpp_ms_brief": REFERENCE_MS[side],
               "x_vs_ref": REFERENCE_MS[side] / ms}
        ref = _reference(side, 250)
        if ref is not None:
            row["ref_port_ms"] = ref["ms"]
            row["ref_port_steps"] = ref["steps"]
            row["x_vs_port"] = ref["ms"] / ms
        rows.append(row)
    base = sides[0]
    for side in sides[1:]:
        rows.append({"name": f"wind growth {base}->{side}",
                     "side_ratio": side / base, "time_ratio": per_side[side] / per_side[base]})
    batches = 20 if quick else 100
    t = _terrain(256)
    height = t.height()
    steps = 0
    t0 = time.perf_counter()
    for b in range(batches):
        steps += wind.run_batch(t, p, 1, b * 250, 250, height)
    ms = (time.perf_counter() - t0) * 1e3 / batches
    row = {"name": f"wind {batches} batches of 250 at 256^2", "ms_per_batch": ms,
           "steps_per_batch": steps // batches, "ref_cpp_ms_brief": REFERENCE_BATCH_MS,
           "x_vs_ref": REFERENCE_BATCH_MS / ms}
    ref = _reference(256, 250, batches)
    if ref is not None:
        row["ref_port_ms_per_batch"] = ref["ms"] / batches
        row["x_vs_port"] = ref["ms"] / batches / ms
    rows.append(row)
    side = 512 if quick else 1024
    t = _terrain(side)
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
