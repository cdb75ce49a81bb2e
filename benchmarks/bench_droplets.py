"""Droplet erosion: ns per droplet step on one thread against a plain C loop of the
same algorithm, and 1 thread against all.

Terrain: ``upland_terrain(size, seed=3)`` at 30 m cells (the generator's default world)
with the ``default`` preset's droplet parameters, so droplets behave as in a real run.
The C comparator (benchmarks/reference/droplet_port.c, gcc -O3 -march=native
-ffp-contract=off) is our algorithm written as a plain loop and called on the same
arrays; its result is checked to be bit-identical to ours, so the work is equal to the
step. Ours and C are run alternately in this one process (several rounds, fresh
terrain copies); ``ours_over_C`` is the median of the per-round time ratios.

For continuity with older figures, ``article_C_*`` is the seed article's own loop in C
(benchmarks/reference/droplet_ref.c: float32, wraps at the edges, stops in pits, a
fixed 4x4 brush): a different algorithm, so not equal work.

Set ``BENCH_CALLGRIND=1`` to add instruction counts per step (valgrind callgrind,
both built for haswell because valgrind has no AVX-512; slow: minutes).

Resolution rows (the droplets' share of the growth per doubling): the 7.68 km
world of bench_resolution at 15, 7.5 (and, without ``--quick``, 3.75) m cells with the
``default`` preset's droplets, one thread, CPU time: steps per droplet, the brush and
tent radii in cells, and ns per step twice, once with the six grids a step touches
(bedrock, sediment, eroded, deposited, erodibility, height) all starting at one place
in a 4 KiB page and once spread over the page (9 cache lines apart). Large arrays come
from the system as whole pages (numpy: 16 bytes into a page), so at 2048² every grid
sits at one offset and cell k of each shares its address's low 12 bits; smaller grids
land wherever the heap has room. The two placements give bit-identical results
(``same``); ``one_page_offset_over_spread`` is what the collision costs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from benchmarks.reference.port import library, port_available, port_batch  # noqa: E402
from benchmarks.reference.reference import run_reference  # noqa: E402
from simcore.formats.presets import find_preset  # noqa: E402
from simcore.generators.noise import upland_terrain  # noqa: E402
from simcore.kernels import parallel  # noqa: E402
from simcore.processes.droplets import run_batch  # noqa: E402
from simcore.terrain import Terrain  # noqa: E402

CELL = 30.0


def _params():
    return find_preset("default").params["droplets"]


def _batches(terrain: Terrain, height: np.ndarray, droplets: int, fn=run_batch,
             clock=time.perf_counter) -> tuple[float, int]:
    """Seconds (by ``clock``) and steps of ``droplets`` droplets of the default preset in
    its batches, seed 1."""
    params = _params()
    t0 = clock()
    steps = 0
    for first in range(0, droplets, params.batch):
        steps += fn(terrain, params, 1, first, min(params.batch, droplets - first),
                    height=height)
    return clock() - t0, steps


def _erode(base: np.ndarray, droplets: int, fn=run_batch) -> tuple[float, int, Terrain]:
    terrain = Terrain.from_heights(base, CELL)
    return *_batches(terrain, terrain.height(), droplets, fn), terrain


def _with_threads(threads: int, *args):
    old = parallel.threads()
    parallel.set_threads(threads)
    try:
        return _erode(*args)
    finally:
        parallel.set_threads(old)


def _identical(a: Terrain, b: Terrain) -> bool:
    return a.outflow == b.outflow and all(
        np.array_equal(x, y) for x, y in zip(a.arrays().values(), b.arrays().values()))


_STARTUP = """
import time; t0 = time.perf_counter()
import numpy as np
from simcore.processes.droplets import DropletParams, run_batch
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


def _versus_c(base: np.ndarray, droplets: int, rounds: int) -> dict:
    """Ours (1 thread) and the C port alternately; ns per step and the time ratio."""
    ours, ref, ratios = [], [], []
    for r in range(rounds):
        a = _with_threads(1, base, droplets)
        b = _erode(base, droplets, port_batch)
        if r == 0 and (a[1] != b[1] or not _identical(a[2], b[2])):
            raise AssertionError("the C port no longer does our algorithm (results differ)")
        ours.append(a[0] / a[1] * 1e9)
        ref.append(b[0] / b[1] * 1e9)
        ratios.append(a[0] / b[0])
    return {"ours_1thr_ns_per_step": round(float(np.median(ours)), 1),
            "C_ns_per_step": round(float(np.median(ref)), 1),
            "ours_over_C": round(float(np.median(ratios)), 3),
            "ratio_range": f"{min(ratios):.3f}-{max(ratios):.3f}",
            "C_same_result": True}


def _callgrind(size: int, droplets: int) -> dict:
    """Instructions per step from valgrind: ours = (run - run with 0 droplets) / steps,
    C = the C batch function alone (--toggle-collect)."""
    script = Path(__file__).resolve().with_name("reference") / "callgrind_droplets.py"
    out = subprocess.run([sys.executable, str(script), str(size), str(droplets)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _placed(arrays: list[np.ndarray], spread: bool) -> list[np.ndarray]:
    """Copies of ``arrays`` whose first cells sit at one offset in a 4 KiB page, or (with
    ``spread``) 9 cache lines apart from one array to the next."""
    out = []
    for slot, a in enumerate(arrays):
        buf = np.empty(a.size + 520)
        want = (slot * 576 if spread else 16) % 4096
        skip = ((want - buf.ctypes.data) % 4096) // 8
        copy = buf[skip:skip + a.size].reshape(a.shape)
        copy[...] = a
        out.append(copy)
    return out


def _per_step(base: np.ndarray, cell: float, droplets: int,
              spread: bool) -> tuple[float, int, Terrain]:
    """CPU seconds and steps of ``droplets`` droplets on one thread, the grids placed as
    :func:`_placed` says."""
    terrain = Terrain.from_heights(base, cell)
    names = ["bedrock", "sediment", "eroded", "deposited", "erodibility"]
    *grids, height = _placed([getattr(terrain, n) for n in names] + [terrain.height()], spread)
    for name, grid in zip(names, grids):
        setattr(terrain, name, grid)
    old = parallel.threads()
    parallel.set_threads(1)
    try:
        return *_batches(terrain, height, droplets, clock=time.process_time), terrain
    finally:
        parallel.set_threads(old)


def _resolution(sizes: tuple[int, ...], droplets: int) -> list[dict]:
    """Steps per droplet and CPU ns per step on the 7.68 km world at each size, the grids
    at one page offset and spread (see the module docstring)."""
    from benchmarks.bench_resolution import cell_size, world
    params = _params()
    rows: list[dict] = []
    for size in sizes:
        cell = cell_size(size)
        base = np.load(world(size))
        kernel = params.kernel(base.shape, cell)
        one = _per_step(base, cell, droplets, spread=False)
        spread = _per_step(base, cell, droplets, spread=True)
        row = {"name": f"droplets 7.68 km world {size}x{size} ({cell:g} m, default preset)",
               "droplets": droplets, "brush_cells": kernel.radius,
               "tent_cells": kernel.deposit_reach,
               "steps_per_droplet": round(spread[1] / droplets, 1),
               "ns_per_step_one_page_offset": round(one[0] / one[1] * 1e9, 1),
               "ns_per_step_spread": round(spread[0] / spread[1] * 1e9, 1),
               "one_page_offset_over_spread": round(one[0] / spread[0], 2),
               "same": one[1] == spread[1] and _identical(one[2], spread[2])}
        if rows:
            prev = rows[-1]
            row["steps_growth"] = round(row["steps_per_droplet"] / prev["steps_per_droplet"], 2)
            row["step_cost_growth_spread"] = round(
                row["ns_per_step_spread"] / prev["ns_per_step_spread"], 2)
            row["droplet_cpu_growth_spread"] = round(
                row["steps_growth"] * row["step_cost_growth_spread"], 2)
        rows.append(row)
    return rows


def run(quick: bool) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        cold = _startup(cache)
        warm = _startup(cache)
    rows.append({"name": "kernel start-up, new process", "compile_s": round(cold, 2),
                 "cached_s": round(warm, 2)})
    _erode(upland_terrain(64, seed=1), 100)  # compile in this process
    if port_available():
        library()
    droplets = 4096 if quick else 20_480
    rounds = 3 if quick else 5
    threads = parallel.most_threads()
    for size in (256,) if quick else (256, 1024):
        base = upland_terrain(size, seed=3)
        row: dict = {"name": f"droplets {size}x{size} ({CELL:g} m, default preset)",
                     "droplets": droplets}
        if port_available():
            row.update(_versus_c(base, droplets, rounds))
        t1, steps, one = _with_threads(1, base, droplets)
        tn, steps_n, many = _with_threads(threads, base, droplets)
        assert _identical(one, many), "thread count changed the result"
        row.update({
            "steps_per_droplet": round(steps / droplets, 1),
            "1thr_droplets_per_s": round(droplets / t1),
            f"{threads}thr_ns_per_step": round(tn / steps_n * 1e9, 1),
            f"{threads}thr_droplets_per_s": round(droplets / tn),
            "speedup": round(t1 / tn, 2),
        })
        if port_available():
            art = run_reference(base / CELL, droplets, seed=1)  # heights in cell units
            row.update({"article_C_ns_per_step": round(art["ns_per_step"], 1),
                        "article_C_steps_per_droplet": round(art["steps"] / droplets, 1)})
        if os.environ.get("BENCH_CALLGRIND") == "1" and port_available():
            row.update(_callgrind(size, 4096))
        rows.append(row)
    rows.extend(_resolution((512, 1024) if quick else (512, 1024, 2048),
                            4096 if quick else 8192))
    return rows
