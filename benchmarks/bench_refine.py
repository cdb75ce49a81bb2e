"""Refine x2 (simcore/engine/refine.py): a whole state made twice as fine, 2048² ->
4095² (--quick: 512² -> 1023²), on a fractal terrain with the arrays a default run
leaves (sediment, eroded, deposited, streams, vegetation, full lakes; the other maps
one value throughout), the change records of four processes and 100,000 trees. Rows:
the wall time (best of three, and the first, which pays for the process's new memory
pages), per fine cell, the memory the refinement is checked against and the peak
resident memory of the process."""

from __future__ import annotations

import resource
import time

import numpy as np

from simcore.algorithms.drainage import depression_depth
from simcore.engine.memory import refine_bytes
from simcore.engine.refine import refine
from simcore.generators.noise import fractal_terrain
from simcore.kernels import parallel
from simcore.terrain import Terrain

CELL = 3.75  # 7.68 km at 2048²
PROCESSES = ("droplets", "hydrology", "thermal", "trees")


def state(n: int) -> Terrain:
    rng = np.random.default_rng(5)
    h = fractal_terrain(n, seed=5) * (n / 64)  # relief ~ a quarter of the extent
    sediment = np.maximum(rng.normal(0.0, 0.5, h.shape), 0.0)
    t = Terrain.from_heights(h, CELL, world_units=False, sediment=sediment,
                             pool=depression_depth(h + sediment),
                             eroded=np.maximum(rng.normal(0.0, 0.5, h.shape), 0.0),
                             deposited=np.maximum(rng.normal(0.0, 0.5, h.shape), 0.0),
                             stream=rng.uniform(0.0, 1.0, h.shape),
                             vegetation=rng.uniform(0.0, 1.0, h.shape))
    for name in PROCESSES:
        t.changes[name] = rng.normal(0.0, 0.2, h.shape)
    t.trees = np.column_stack([rng.uniform(0, n - 1, 100_000), rng.uniform(0, n - 1, 100_000),
                               rng.uniform(0.1, 1.0, 100_000)])
    return t


def run(quick: bool) -> list[dict]:
    n = 512 if quick else 2048
    refine(state(64))  # compile
    t = state(n)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fine = refine(t)
        times.append(time.perf_counter() - t0)
        del fine
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    cells = (2 * n - 1) ** 2
    return [{"name": f"refine x2 {n}² -> {2 * n - 1}², {len(PROCESSES)} change records",
             "threads": parallel.threads(), "s": min(times), "first s": times[0],
             "ns per fine cell": 1e9 * min(times) / cells,
             "estimate GB": refine_bytes((n, n), len(PROCESSES)) / 2**30,
             "peak RSS GB": peak / 2**30}]
