"""Coarse to fine (simcore/engine/schedule.py, docs/refine.md): the default preset on the
7.68 km drained uplands at 4097² (1.875 m cells), run directly and coarse to fine in
four levels (513², 1025², 2049², 4097²), each through the command line in a fresh
process, as a user runs them (``--quick``: 513² at 15 m cells, two levels from 257²).

The world: ``simcore generate --size 1025 --cell-size 7.5 --seed 4`` refined x2 twice
(simcore/engine/refine.py) to 4097² (``--quick``: generated at 513²), cached as
bench_resolution's worlds are. Rows, one per run:

* ``wall_s``: the whole CLI call (loading the kernels from numba's cache, reading the
  input, the run, writing the state); ``cpu_s``: its CPU time, all threads (on a
  shared machine the wall time also counts the others' work); ``bytes_per_cell``: the
  process's peak resident memory (ru_maxrss, interpreter and code included) / cells of
  the finest grid;
* the landform figures of the result (simcore/analysis/report.py): slope p50 / p99,
  share of cells above 45 degrees, share of the map in closed basins deeper than 1 m,
  the concavity theta;
* coarse to fine only: ``r``, the correlation of its height change with the direct
  run's after block-averaging both to 512² (the first 4096 rows and columns);
  ``spectral``, the height spectrum's mean power at wavelengths of 4-32 cells as a
  ratio to the direct run's (analysis.landforms.band_power); and the targets, flagged
  ``pass`` / ``FAIL``: <= 180 s, <= 200 bytes per cell, r >= 0.9, spectral 0.5-2.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_resolution import world, world_cache

ROOT = Path(__file__).resolve().parent.parent

LEVELS = 4
QUICK_LEVELS = 2
TARGETS = {"wall_s": 180.0, "bytes_per_cell": 200.0, "r": 0.9, "spectral": (0.5, 2.0)}


def fine_world(quick: bool) -> tuple[Path, float]:
    """The input of the rows and its cell size (module doc)."""
    if quick:
        return world(512, samples=513), 15.0
    path = world_cache() / "uplands_4097x4097_from1025_cell1.875_seed4.npy"
    if not path.exists():
        from simcore.engine.refine import refine
        from simcore.terrain import Terrain
        terrain = Terrain.from_heights(np.load(world(1024, samples=1025)), 7.5)
        for _ in range(2):
            terrain = refine(terrain)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
        np.save(tmp, terrain.world_height())
        os.replace(tmp, path)
    return path, 1.875


def erode(src: Path, cell: float, out: Path, *extra: str) -> dict:
    """One ``simcore erode`` of the default preset in a fresh process: wall and CPU
    seconds (all threads) and its peak resident bytes."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "simcore", "erode", "--input", str(src),
                             "--cell-size", repr(cell), "--output", str(out), "--quiet",
                             *extra], cwd=ROOT, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr is not None else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"erode {' '.join(extra)}: {err[-2000:]}")
    peak = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak": peak}


def figures(path: Path, start: np.ndarray) -> tuple[dict, np.ndarray, float]:
    """The landform figures of a saved state, its height change (world units) and the
    band power of its heights."""
    from simcore.analysis.landforms import band_power
    from simcore.analysis.report import landform_figures
    from simcore.formats.states import load_state
    terrain, _ = load_state(path)
    height = terrain.height()
    f = landform_figures(height, terrain.cell_size, terrain.pool)
    keep = ("slope_p50", "slope_p99", "steeper_45", "closed_basins", "theta")
    return ({k: f[k] for k in keep}, height * terrain.cell_size - start,
            band_power(height, 4.0, 32.0))


def run(quick: bool) -> list[dict]:
    from simcore.analysis.landforms import block_mean, correlation
    src, cell = fine_world(quick)
    levels = QUICK_LEVELS if quick else LEVELS
    start = np.load(src)
    n = start.shape[0]
    cells = start.size
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        tiny = scratch / "tiny.npy"
        np.save(tiny, start[::(n - 1) // 64, ::(n - 1) // 64])  # numba's cache filled
        erode(tiny, cell * (n - 1) / 64, scratch / "tiny.npz", "--levels", "2")
        runs: dict[str, dict] = {}
        for kind, extra in (("coarse to fine", ("--levels", str(levels))), ("direct", ())):
            out = scratch / f"{kind.replace(' ', '_')}.npz"
            runs[kind] = erode(src, cell, out, *extra)
            runs[kind]["figures"], runs[kind]["dh"], runs[kind]["power"] = figures(out, start)
            print(f"  {kind}: {runs[kind]['wall_s']:.1f} s, peak "
                  f"{runs[kind]['peak'] / cells:.0f} bytes per cell, "
                  f"{runs[kind]['figures']}", flush=True)  # before the slower run ends
            out.unlink()
    k = (n - 1) // 512
    rows = []
    for kind in ("direct", "coarse to fine"):
        r = runs[kind]
        row = {"name": f"default {n}² {kind}" + (f", {levels} levels" if kind != "direct"
                                                   else ""),
               "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
               "bytes_per_cell": r["peak"] / cells, **r["figures"]}
        if kind != "direct":
            d = runs["direct"]
            row["r"] = correlation(block_mean(d["dh"][:n - 1, :n - 1], k),
                                   block_mean(r["dh"][:n - 1, :n - 1], k))
            row["spectral"] = r["power"] / d["power"]
            lo, hi = TARGETS["spectral"]
            ok = (row["wall_s"] <= TARGETS["wall_s"]
                  and row["bytes_per_cell"] <= TARGETS["bytes_per_cell"]
                  and row["r"] >= TARGETS["r"] and lo <= row["spectral"] <= hi)
            row["targets"] = "pass" if ok else "FAIL"
        rows.append(row)
    return rows
