"""Droplet erosion: speed per droplet and per step, 1 thread vs all, vs the C port.

Same terrain for both (fractal noise, relief = side/4), 100 000 droplets. The C port
(benchmarks/reference/droplet_ref.c) is the article's loop built with gcc -O3; it
wraps at the edges and uses float32, so step counts differ a little.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from reference.reference import reference_available, run_reference  # noqa: E402

from simcore.noise import fractal_terrain  # noqa: E402
from simcore.processes.hydraulic import DropletParams, run_batch  # noqa: E402
from simcore.terrain import Terrain  # noqa: E402


def _erode(heights: np.ndarray, droplets: int, threads: int) -> tuple[float, int, Terrain]:
    params = DropletParams()
    terrain = Terrain.from_heights(heights, world_units=False)
    height = terrain.height()
    old = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        t0 = time.perf_counter()
        steps = 0
        for first in range(0, droplets, params.batch):
            steps += run_batch(terrain, params, 1, first, min(params.batch, droplets - first),
                               height=height)
        return time.perf_counter() - t0, steps, terrain
    finally:
        numba.set_num_threads(old)


_STARTUP = """
import time; t0 = time.perf_counter()
import numpy as np
from simcore.processes.hydraulic import DropletParams, run_batch
from simcore.terrain import Terrain
t = Terrain.from_heights(np.random.default_rng(0).random((64, 64)) * 8)
run_batch(t, DropletParams(), 1, 0, 100)
print(time.perf_counter() - t0)
"""


def _startup(cache_dir: str) -> float:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _STARTUP], env=env, capture_output=True,
                         text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def run(quick: bool) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        cold = _startup(cache)
        warm = _startup(cache)
    rows.append({"name": "kernel start-up, new process", "compile_s": round(cold, 2),
                 "cached_s": round(warm, 2)})
    _erode(fractal_terrain(64, seed=1), 100, 1)  # compile in this process
    droplets = 20_000 if quick else 100_000
    for size in (256, 512, 1024):
        heights = fractal_terrain(size, seed=3)
        row: dict = {"name": f"droplets {size}x{size}", "droplets": droplets}
        t1, steps, one = _erode(heights, droplets, 1)
        tn, steps_n, many = _erode(heights, droplets, numba.config.NUMBA_NUM_THREADS)
        assert np.array_equal(one.bedrock, many.bedrock), "thread count changed the result"
        row.update({
            "steps_per_droplet": round(steps / droplets, 1),
            "1thr_ns_per_step": round(t1 / steps * 1e9, 1),
            "1thr_droplets_per_s": round(droplets / t1),
            f"{numba.config.NUMBA_NUM_THREADS}thr_ns_per_step": round(tn / steps_n * 1e9, 1),
            f"{numba.config.NUMBA_NUM_THREADS}thr_droplets_per_s": round(droplets / tn),
            "speedup": round(t1 / tn, 2),
        })
        if reference_available():
            ref = run_reference(heights, droplets, seed=1)
            row.update({"C_ns_per_step": round(ref["ns_per_step"], 1),
                        "C_steps_per_droplet": round(ref["steps"] / droplets, 1),
                        "C_droplets_per_s": round(droplets / ref["seconds"])})
        rows.append(row)
    return rows
