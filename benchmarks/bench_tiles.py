"""Tiled worlds on dask.distributed: wall time and peak memory per worker.

A generated upland world of SIZE x SIZE 30 m cells, eroded with the default preset

- ``tiled``: ``python -m simcore tile`` on a local cluster of 2 worker processes
  (TxT tiles), wall time of the whole command and the peak resident memory of each
  worker (``ru_maxrss``, read on the workers after the run);
- ``untiled``: ``python -m simcore erode`` on the same world in one process (its peak
  resident memory), where it fits.

Run: ``python -m benchmarks.bench_tiles --size 1024 --tiles 2`` (``build.py bench`` runs
it at 256, 2x2, with --quick at 128). Wall times on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CELL = 30.0

TILED_CHILD = r"""
import json, resource, sys, time
from simcore import tiles
from simcore.cluster import client
from simcore.formats.presets import find_preset
from simcore.formats.states import load_heights
from simcore.terrain import Terrain

def main():
    src, store = sys.argv[1], sys.argv[2]
    n, workers, particles = (int(a) for a in sys.argv[3:6])
    preset = find_preset("default")
    if particles:
        preset = preset.with_overrides({"particles": particles})
    terrain = Terrain.from_heights(load_heights(src), 30.0)
    t0 = time.perf_counter()
    with client(workers, threads=1, quiet=True) as c:
        margin = int(sys.argv[7]) if len(sys.argv) > 7 and sys.argv[7] else None
        info = tiles.run_world(terrain, preset, store, c, (n, n), margin=margin, quiet=True)
        peaks = c.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    wall = time.perf_counter() - t0
    out = {"wall": wall, "stages": info["seconds"], "rounds": info["rounds"],
           "worker_peak": sorted(peaks.values()),
           "client_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if len(sys.argv) > 6 and sys.argv[6] == "seams":  # the same world on one tile
        from benchmarks.bench_tiles import seam_figures
        with client(workers, threads=1, quiet=True) as c:
            tiles.run_world(Terrain.from_heights(load_heights(src), 30.0), preset,
                            store + ".one", c, (1, 1), margin=margin, quiet=True)
        out["seams"] = seam_figures(src, store + ".one", store)
    print(json.dumps(out))

if __name__ == "__main__":
    main()
"""


#: the CLI's erode in a child that prints its own peak resident memory (bytes)
ERODE_CHILD = (
    "import json, resource, sys\n"
    "from simcore.cli import main\n"
    "code = main(json.loads(sys.argv[1]))\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)\n"
    "sys.exit(code)\n")


def seam_figures(src: str, one: str, tiled: str) -> dict:
    """Δh r of a tiled store against the one-tile store of the same world, and the
    height steps across each tile border (p95, p99, max; the same lines of the one-tile
    run beside them) against the interior's p99 (world units)."""
    import numpy as np

    from simcore import tiles
    from simcore.formats.states import load_heights
    h0 = load_heights(src)
    a, _ = tiles.load_world(one)
    b, attrs = tiles.load_world(tiled)
    cell = attrs["cell_size"]
    da, db = a.world_height() - h0, b.world_height() - h0
    plan = tiles.Plan(tuple(attrs["shape"]), tuple(attrs["tiles"]), tuple(attrs["core"]), 0)
    out: dict = {"dh_r": float(np.corrcoef(da.ravel(), db.ravel())[0, 1]),
                 "mean_abs_dh": float(np.abs(db).mean()), "borders": []}
    cols = [e - 1 for _, e in plan.cores(1)[:-1]]
    rows = [e - 1 for _, e in plan.cores(0)[:-1]]
    lines = [("col", 1, c) for c in cols] + [("row", 0, r) for r in rows]
    figs = {}
    for name, t in (("tiled", b), ("one_tile", a)):
        h = t.height() * cell
        dx, dy = np.abs(np.diff(h, axis=1)), np.abs(np.diff(h, axis=0))
        inside = np.concatenate([np.delete(dx, cols, axis=1).ravel(),
                                 np.delete(dy, rows, axis=0).ravel()])
        out[f"{name}_interior_p99"] = float(np.percentile(inside, 99))
        figs[name] = []
        for _, axis, k in lines:
            across = dx[:, k] if axis == 1 else dy[k, :]
            figs[name].append({"p95": float(np.percentile(across, 95)),
                               "p99": float(np.percentile(across, 99)),
                               "max": float(across.max())})
    out["borders"] = [{"at": f"{label} {k + 1}", **f, "one_tile": g}
                      for (label, _, k), f, g in zip(lines, figs["tiled"], figs["one_tile"])]
    return out


def _world(size: int, folder: Path) -> Path:
    out = folder / f"world{size}.npy"
    subprocess.run([sys.executable, "-m", "simcore", "generate", "--size", str(size),
                    "--seed", "3", "--output", str(out)], cwd=ROOT, check=True,
                   capture_output=True)
    return out


def measure(size: int, n: int, workers: int = 2, untiled: bool = True,
            particles: int = 0, seams: bool = False, margin: int = 0) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rows = []
    with tempfile.TemporaryDirectory(prefix="te-bench-tiles-") as tmp:
        folder = Path(tmp)
        src = _world(size, folder)
        done = subprocess.run([sys.executable, "-c", TILED_CHILD, str(src),
                               str(folder / "w.zarr"), str(n), str(workers), str(particles),
                               "seams" if seams else "", str(margin or "")],
                              cwd=ROOT, env=env, capture_output=True, text=True, check=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append({"name": f"tiled {size}^2 {n}x{n} on {workers} workers"
                     f"{f' margin {margin}' if margin else ''}",
                     "seconds": round(r["wall"], 1), "rounds": r["rounds"],
                     **{f"{k}_s": round(v, 1) for k, v in r["stages"].items()},
                     "peak_MB_per_worker": [round(p / 2**20) for p in r["worker_peak"]],
                     "client_peak_MB": round(r["client_peak"] / 2**20)})
        if "seams" in r:
            rows.append({"name": f"seams {size}^2 {n}x{n} vs one tile", **r["seams"]})
        if untiled:
            t0 = time.perf_counter()
            args = ["erode", "--input", str(src), "--cell-size", str(CELL), "--output",
                    str(folder / "e.npz"), "--quiet"]
            if particles:
                args += ["--particles", str(particles)]
            done = subprocess.run([sys.executable, "-c", ERODE_CHILD, json.dumps(args)],
                                  cwd=ROOT, env=env, check=True, capture_output=True,
                                  text=True)
            rows.append({"name": f"untiled {size}^2 (erode, one process)",
                         "seconds": round(time.perf_counter() - t0, 1),
                         "peak_MB": round(int(done.stdout.split()[-1]) / 2**20)})
    return rows


def run(quick: bool) -> list[dict]:
    return measure(128 if quick else 256, 2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--tiles", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--particles", type=int, default=0, help="override (0: the preset's)")
    ap.add_argument("--no-untiled", action="store_true")
    ap.add_argument("--margin", type=int, default=0, help="tile margin (0: the default)")
    ap.add_argument("--seams", action="store_true",
                    help="also run the world on one tile: Δh r and the steps across borders")
    args = ap.parse_args(argv)
    for row in measure(args.size, args.tiles, args.workers, not args.no_untiled,
                       args.particles, args.seams, args.margin):
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
