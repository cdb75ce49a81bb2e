"""Tiled worlds on dask.distributed: wall time and peak memory per worker.

A generated upland world of SIZE x SIZE 30 m cells, eroded with the default preset

- ``tiled``: ``python -m simcore tile`` on a local cluster of 2 worker processes
  (TxT tiles), wall time of the whole command and the peak resident memory of each
  worker (``ru_maxrss``, read on the workers after the run);
- ``untiled``: ``python -m simcore erode`` on the same world in one process (its peak
  resident memory), where it fits.

Run: ``python -m benchmarks.bench_tiles --size 1024 --tiles 2`` (``build.py bench`` runs
it at 256, 2x2, with --quick at 128); ``--input world.npy --cell-size C`` for a given
world, ``--seams`` for the figures against the same pipeline on one tile (Δh r, the
steps across every border as tests/core/test_tiles.py asserts them, ``--picture``), and
``--other-seed N`` to erode again with seed N (how closely two plain runs agree),
``--keep DIR`` to keep the stores, and ``--scenario NAME`` for the runs docs/tiles.md
reports (SCENARIOS). Wall times on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CELL = 30.0

TILED_CHILD = r"""
import json, resource, sys, time
from simcore.distributed import tiles
from simcore.distributed.cluster import client
from simcore.formats.presets import find_preset

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

def main():
    cfg = json.loads(sys.argv[1])
    preset = find_preset(cfg["preset"])
    if cfg["particles"]:
        preset = preset.with_overrides({"particles": cfg["particles"]})
    out = {"runs": []}
    plans = [(n, n) for n in cfg["tiles"]] + ([(1, 1)] if cfg["seams"] else [])
    for tl in plans:  # a fresh cluster each: the workers' peaks are this run's
        terrain = tiles.HeightmapFile(cfg["src"], cfg["cell"])  # read tile by tile
        store = cfg["store"] + f".{tl[0]}"
        t0, p0 = time.perf_counter(), time.process_time()
        with client(cfg["workers"], threads=1, quiet=True) as c:
            info = tiles.run_world(terrain, preset, store, c, tl, margin=cfg["margin"],
                                   coarse=cfg["coarse"], quiet=True)
            peaks = c.run(peak)
            cpu = c.run(time.process_time)
        out["runs"].append({"tiles": tl[0], "margin": info["margin"],
                            "wall": time.perf_counter() - t0,
                            "worker_cpu": sorted(cpu.values()),
                            "client_cpu": time.process_time() - p0,
                            "stages": info["seconds"], "rounds": info["rounds"],
                            "particles": preset.work(terrain),
                            "worker_peak": sorted(peaks.values()), "client_peak": peak()})
        del terrain
    if cfg["seams"]:
        from benchmarks.bench_tiles import seam_figures, seam_picture
        one = cfg["store"] + ".1"
        out["seams"] = {n: seam_figures(cfg["src"], one, cfg["store"] + f".{n}")
                        for n in cfg["tiles"]}
        if cfg["picture"]:
            seam_picture(cfg["src"], one, cfg["store"] + f".{cfg['tiles'][0]}",
                         cfg["picture"])
    print(json.dumps(out))

if __name__ == "__main__":
    main()
"""


#: the CLI's erode in a child that prints its own peak resident memory (bytes)
ERODE_CHILD = (
    "import json, resource, sys\n"
    "from simcore.cli.main import main\n"
    "code = main(json.loads(sys.argv[1]))\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)\n"
    "sys.exit(code)\n")


def _heights(result: str):
    """The heights (world units) of ``erode``'s .npz state or a tiled store: that
    array only."""
    import numpy as np
    if result.endswith(".npz"):
        with np.load(result) as z:
            return z["height"]
    import zarr
    return zarr.open_group(result, mode="r")["height"][...]


def _fit(da, db) -> dict:
    """Δh r, mean |difference| and each mean |Δh| of two height changes (world units)."""
    import numpy as np
    return {"dh_r": float(np.corrcoef(da.ravel(), db.ravel())[0, 1]),
            "mean_abs_diff": float(np.abs(db - da).mean()),
            "mean_abs_dh": {"first": float(np.abs(da).mean()),
                            "second": float(np.abs(db).mean())}}


def change_fit(src: str, a: str, b: str) -> dict:
    """:func:`_fit` of two results of the same .npy world ``src`` (``erode`` .npz or
    tiled stores): ``a`` first, ``b`` second."""
    from simcore.formats.states import load_heights
    h0 = load_heights(src)
    return _fit(_heights(a) - h0, _heights(b) - h0)


def seam_figures(src: str, one: str, tiled: str) -> dict:
    """Δh r of a tiled store against the one-tile store (or ``erode``'s .npz) of the
    same world, and the
    height steps across each tile border (p95, p99, max, mean and the mean on the lines
    beside it; the same lines of the one-tile run beside them) against the interior's
    p99 and max (world units): the figures tests/core/test_tiles.py asserts on."""
    import numpy as np
    import zarr

    from simcore.distributed import tiles
    from simcore.formats.states import load_heights
    attrs = dict(zarr.open_group(tiled, mode="r").attrs)
    h0, ha, hb = load_heights(src), _heights(one), _heights(tiled)
    plan = tiles.Plan(tuple(attrs["shape"]), tuple(attrs["tiles"]), tuple(attrs["core"]), 0)
    fit = _fit(ha - h0, hb - h0)
    out: dict = {"dh_r": fit["dh_r"], "mean_abs_dh": fit["mean_abs_dh"]["second"],
                 "mean_abs_dh_one_tile": fit["mean_abs_dh"]["first"],
                 "mean_abs_diff": fit["mean_abs_diff"], "borders": []}
    cols = [e - 1 for _, e in plan.cores(1)[:-1]]
    rows = [e - 1 for _, e in plan.cores(0)[:-1]]
    lines = [("col", 1, c) for c in cols] + [("row", 0, r) for r in rows]
    figs: dict = {}
    for name, h in (("tiled", hb), ("one_tile", ha)):
        dx, dy = np.abs(np.diff(h, axis=1)), np.abs(np.diff(h, axis=0))
        inside = np.concatenate([np.delete(dx, cols, axis=1).ravel(),
                                 np.delete(dy, rows, axis=0).ravel()])
        out[f"{name}_interior_p99"] = float(np.percentile(inside, 99))
        out[f"{name}_interior_max"] = float(inside.max())
        figs[name] = []
        for _, axis, k in lines:
            steps = dx if axis == 1 else dy.T
            across = steps[:, k]
            beside = np.concatenate([steps[:, k - 6:k - 1], steps[:, k + 2:k + 7]], axis=1)
            figs[name].append({"p95": float(np.percentile(across, 95)),
                               "p99": float(np.percentile(across, 99)),
                               "max": float(across.max()), "mean": float(across.mean()),
                               "beside_mean": float(beside.mean())})
    out["borders"] = [{"at": f"{label} {k + 1}", **f, "one_tile": g}
                      for (label, _, k), f, g in zip(lines, figs["tiled"], figs["one_tile"])]
    p99, top = out["tiled_interior_p99"], out["tiled_interior_max"]
    out["passes_test"] = all(f["p95"] <= p99 and f["max"] <= top
                             and f["mean"] <= 1.25 * f["beside_mean"] for f in figs["tiled"])
    return out


def seam_picture(src: str, one: str, tiled: str, path: str, crop: int = 384) -> None:
    """A PNG: top, the whole world on one tile | tiled | their difference (every
    n-th cell, about 512 pixels a side); below, the same three at full resolution,
    ``crop`` cells around the central tile corner (where the borders cross). Red ticks
    mark the tile borders; the difference is blue lower, red higher, full colour at the
    99th percentile of |tiled - one tile| (written into the attribute printed)."""
    import numpy as np

    from simcore.distributed import tiles
    from simcore.formats import images
    a, _ = tiles.load_world(one)
    b, attrs = tiles.load_world(tiled)
    cell = attrs["cell_size"]
    plan = tiles.Plan.of(attrs)
    diff = (b.height() - a.height()) * cell
    full = float(np.percentile(np.abs(diff), 99)) or 1.0

    def redblue(d):
        t = np.clip(d / full, -1.0, 1.0)[..., None]
        white = np.ones(d.shape + (3,))
        rgb = np.where(t > 0, white * (1 - t) + np.array([0.85, 0.1, 0.1]) * t,
                       white * (1 + t) - np.array([0.1, 0.2, 0.85]) * t)
        return (rgb * 255 + 0.5).astype(np.uint8)

    def ticks(img, rs, cs, step):
        img = img.copy()
        for r in rs:
            img[r // step, :6] = img[r // step, -6:] = (255, 0, 0)
        for c in cs:
            img[:6, c // step] = img[-6:, c // step] = (255, 0, 0)
        return img

    rb = [e for _, e in plan.cores(0)[:-1]]
    cb = [e for _, e in plan.cores(1)[:-1]]
    step = max(1, plan.shape[0] // 512)
    sl = (slice(None, None, step), slice(None, None, step))
    top = [images.shaded_relief(a.height()[sl] * step), images.shaded_relief(
        b.height()[sl] * step), redblue(diff[sl])]
    top = [ticks(t, rb, cb, step) for t in top]
    r0 = max(0, (rb[len(rb) // 2] if rb else plan.shape[0] // 2) - crop // 2)
    c0 = max(0, (cb[len(cb) // 2] if cb else plan.shape[1] // 2) - crop // 2)
    w = (slice(r0, r0 + crop), slice(c0, c0 + crop))
    low = [images.shaded_relief(a.height()[w]), images.shaded_relief(b.height()[w]),
           redblue(diff[w])]
    low = [ticks(t, [r - r0 for r in rb if r0 <= r < r0 + crop],
                 [c - c0 for c in cb if c0 <= c < c0 + crop], 1) for t in low]
    gap = 8

    def row(imgs):
        hgt = max(i.shape[0] for i in imgs)
        out = []
        for i in imgs:
            pad = np.full((hgt, i.shape[1] + gap, 3), 255, np.uint8)
            pad[:i.shape[0], :i.shape[1]] = i
            out.append(pad)
        return np.concatenate(out, axis=1)

    r1, r2 = row(top), row(low)
    width = max(r1.shape[1], r2.shape[1])
    canvas = np.full((r1.shape[0] + gap + r2.shape[0], width, 3), 255, np.uint8)
    canvas[:r1.shape[0], :r1.shape[1]] = r1
    canvas[r1.shape[0] + gap:, :r2.shape[1]] = r2
    images.save_png(path, canvas)
    print(f"seam picture {path}: difference full colour at {full:.2f} world units; "
          f"crop rows {r0}..{r0 + crop}, cols {c0}..{c0 + crop}", file=sys.stderr)


def mirrored_world(src: str, k: int, out: str) -> str:
    """``src`` laid k x k times, every other copy mirrored (no step where copies meet):
    a world k times wider at the same cell size and slopes, written by rows of copies
    into a memory-mapped .npy (never whole in memory)."""
    import numpy as np
    g = np.load(src, mmap_mode="r")
    n, m = g.shape
    dst = np.lib.format.open_memmap(out, mode="w+", dtype=np.float64, shape=(k * n, k * m))
    for i in range(k):
        for j in range(k):
            t = g[::-1] if i % 2 else g
            dst[i * n:(i + 1) * n, j * m:(j + 1) * m] = t[:, ::-1] if j % 2 else t
    dst.flush()
    return out


def _world(size: int, folder: Path) -> Path:
    out = folder / f"world{size}.npy"
    subprocess.run([sys.executable, "-m", "simcore", "generate", "--size", str(size),
                    "--seed", "3", "--output", str(out)], cwd=ROOT, check=True,
                   capture_output=True)
    return out


def measure(size: int, tiles: list[int], workers: int = 2, untiled: bool = True,
            particles: int = 0, seams: bool = False, margin: int = 0,
            src: str = "", cell: float = CELL, preset: str = "default", coarse: int = 1,
            picture: str = "", scratch: str = "", other_seed: int = 0,
            keep: str = "") -> list[dict]:
    """Tiled runs of one world (``src`` at ``cell``, or a generated SIZE² world of
    30 m cells) for each tile count in ``tiles``; with ``seams`` also on one tile, the
    border figures and (``picture``) the seam picture; ``untiled``: plain ``erode``
    (without ``seams``, the border figures against it; with ``seams``, the fit of the
    one-tile and tiled runs to it), and with ``other_seed`` ``erode`` again with that
    seed: how closely two plain runs agree. ``keep``: write the stores and results
    there and keep them (else a temporary folder)."""
    if other_seed and not untiled:
        raise ValueError("--other-seed needs the untiled run (drop --no-untiled)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rows = []
    src = str(Path(src).resolve()) if src else src  # the children run in ROOT
    if keep:
        keep = str(Path(keep).resolve())
        Path(keep).mkdir(parents=True, exist_ok=True)
    with (contextlib.nullcontext(keep) if keep else
          tempfile.TemporaryDirectory(prefix="te-bench-tiles-", dir=scratch or None)) as tmp:
        folder = Path(tmp)
        src = src or str(_world(size, folder))
        import numpy as np
        size = int(np.load(src, mmap_mode="r").shape[0])
        store = str(folder / "w.zarr")
        cfg = {"src": src, "cell": cell, "store": store, "tiles": tiles,
               "workers": workers, "particles": particles, "preset": preset,
               "margin": margin or None, "coarse": coarse, "seams": seams,
               "picture": picture}
        done = subprocess.run([sys.executable, "-c", TILED_CHILD, json.dumps(cfg)],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(done.stderr[-4000:])
        r = json.loads(done.stdout.strip().splitlines()[-1])
        for run_ in r["runs"]:
            n = run_["tiles"]
            rows.append({"name": f"tiled {size}^2 ({cell:g} m cells) {n}x{n} margin "
                         f"{run_['margin']} coarse {coarse} on {workers} workers, "
                         f"{preset} {run_['particles']} particles",
                         "seconds": round(run_["wall"], 1), "rounds": run_["rounds"],
                         **{f"{k}_s": round(v, 1) for k, v in run_["stages"].items()},
                         "worker_cpu_s": [round(v, 1) for v in run_["worker_cpu"]],
                         "peak_MB_per_worker": [round(p / 2**20) for p in
                                                run_["worker_peak"]],
                         "client_peak_MB": round(run_["client_peak"] / 2**20)})
        for n, fig in r.get("seams", {}).items():
            rows.append({"name": f"seams {size}^2 {n}x{n} vs one tile", **fig})
        if untiled:
            t0 = time.perf_counter()
            erode_npz = str(folder / "e.npz")
            args = ["erode", "--input", str(src), "--cell-size", str(cell), "--output",
                    erode_npz, "--quiet", "--preset", preset]
            if particles:
                args += ["--particles", str(particles)]
            done = subprocess.run([sys.executable, "-c", ERODE_CHILD, json.dumps(args)],
                                  cwd=ROOT, env=env, check=True, capture_output=True,
                                  text=True)
            rows.append({"name": f"untiled {size}^2 (erode, one process)",
                         "seconds": round(time.perf_counter() - t0, 1),
                         "peak_MB": round(int(done.stdout.split()[-1]) / 2**20)})
            if seams:  # what the tiles cost against what the pipeline itself does
                rows.append({"name": f"one tile {size}^2 vs untiled erode",
                             **change_fit(src, store + ".1", erode_npz)})
                for n in tiles:
                    rows.append({"name": f"tiled {size}^2 {n}x{n} vs untiled erode",
                                 **change_fit(src, store + f".{n}", erode_npz)})
            if other_seed:
                other = str(folder / f"e_seed{other_seed}.npz")
                again = [other if a == erode_npz else a for a in args]
                t0 = time.perf_counter()
                done = subprocess.run([sys.executable, "-c", ERODE_CHILD,
                                       json.dumps(again + ["--seed", str(other_seed)])],
                                      cwd=ROOT, env=env, check=True, capture_output=True,
                                      text=True)
                rows.append({"name": f"untiled erode {size}^2, seed {other_seed} vs the "
                             "preset's seed", "seconds": round(time.perf_counter() - t0, 1),
                             "peak_MB": round(int(done.stdout.split()[-1]) / 2**20),
                             **change_fit(src, other, erode_npz)})
            if not seams:  # the tiled results against this one
                for n in tiles:
                    fig = seam_figures(src, erode_npz, store + f".{n}")
                    for b in fig["borders"]:
                        b["untiled"] = b.pop("one_tile")
                    rows.append({"name": f"seams {size}^2 {n}x{n} vs untiled erode",
                                 **{k.replace("one_tile", "untiled"): v
                                    for k, v in fig.items()}})
    return rows


def run(quick: bool) -> list[dict]:
    return measure(128 if quick else 256, [2])


#: the runs docs/tiles.md reports, by name (``--scenario NAME``); the worlds in /tmp/w
#: are the bench world at 7.5 and 3.75 m cells (``generate`` can make others)
SCENARIOS: dict[str, dict[str, Any]] = {
    # 2048² (3.75 m cells, 7.68 km), the default preset's own rain per area (200k), 2x2
    # (the default margin, 256, then and now)
    "seams2048": dict(src="/tmp/w/g2048.npy", cell=3.75, tiles=[2], seams=True,
                      untiled=False, picture="docs/tiles_seamless_2048.png"),
    # the 4x4 row of that run: the earlier default margin, a quarter tile (r 0.967)
    "seams2048x4m128": dict(src="/tmp/w/g2048.npy", cell=3.75, tiles=[4], seams=True,
                            untiled=False, margin=128),
    # 4x4 tiles of 2048² with the default margin (the map's side / 8: 256)
    "seams2048x4": dict(src="/tmp/w/g2048.npy", cell=3.75, tiles=[4], seams=True,
                        untiled=False, picture="docs/tiles_seamless_2048x4.png"),
    # the same run against plain erode, and erode against itself with another seed:
    # what the tile cut costs beside what the pipeline's other particles cost (the
    # bench world of bench_resolution at 2048², 3.75 m cells)
    "seams2048x4e": dict(bench_world=2048, tiles=[4], seams=True, other_seed=2),
    # the bench world generated at 4096² (1.875 m cells, 7.68 km), 4x4 tiles with the
    # default margin (512), against one tile, its picture
    "seams4096x4": dict(bench_world=4096, tiles=[4], seams=True, untiled=False,
                        picture="docs/tiles_seamless_4096x4.png"),
    # 1024² generated uplands of 30 m cells, 800k particles, 4x4 (margin 64)
    "seams1024x4": dict(size=1024, tiles=[4], particles=800_000, seams=True,
                        untiled=False, margin=64),
    # the same with a 128-cell margin (the default 64 gives r 0.938)
    "seams1024x4m128": dict(size=1024, tiles=[4], particles=800_000, seams=True,
                            untiled=False, margin=128),
    # 8192² (3.75 m cells, 30.72 km: the 2048² world mirrored 4 x 4), one round of the
    # default preset (2048 particles: 1/1570 of its rain per area, the droplets'
    # batch; one pass of thermal and trees), hydrology at 1/8, 8x8 tiles, margin 256 (the
    # earlier default; the default is now a whole tile, 1024)
    "big8192": dict(mirror=("/tmp/w/g2048.npy", 4), cell=3.75, tiles=[8], coarse=8,
                    particles=2048, untiled=False, margin=256),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024, help="generated world's side")
    ap.add_argument("--input", default="", help="a .npy world instead of a generated one")
    ap.add_argument("--cell-size", type=float, default=CELL)
    ap.add_argument("--tiles", default="2", help="tiles per side, e.g. 2 or 2,4")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--preset", default="default")
    ap.add_argument("--particles", type=int, default=0, help="override (0: the preset's)")
    ap.add_argument("--coarse", type=int, default=1)
    ap.add_argument("--no-untiled", action="store_true")
    ap.add_argument("--margin", type=int, default=0, help="tile margin (0: the default)")
    ap.add_argument("--seams", action="store_true",
                    help="also run the world on one tile: Δh r and the steps across borders")
    ap.add_argument("--picture", default="", help="with --seams: the seam picture (PNG)")
    ap.add_argument("--scratch", default="", help="folder for the stores (a temp dir in it)")
    ap.add_argument("--other-seed", type=int, default=0,
                    help="also erode with this seed (1 or more; 0: not): how closely two "
                    "plain runs agree")
    ap.add_argument("--keep", default="",
                    help="write the stores and results in this folder and keep them")
    ap.add_argument("--scenario", choices=sorted(SCENARIOS),
                    help="one of the runs docs/tiles.md reports")
    args = ap.parse_args(argv)
    if args.scenario:
        kw = dict(SCENARIOS[args.scenario])
        kw.setdefault("scratch", args.scratch)
        kw.setdefault("keep", args.keep)
        kw.setdefault("other_seed", args.other_seed)
        if "bench_world" in kw:
            from benchmarks import bench_resolution
            n = kw.pop("bench_world")
            with contextlib.redirect_stdout(sys.stderr):  # stdout: JSON lines only
                kw["src"] = str(bench_resolution.world(n))
            kw["cell"] = bench_resolution.cell_size(n)
        if "mirror" in kw:
            src, k = kw.pop("mirror")
            kw["src"] = mirrored_world(src, k, str(Path(args.scratch or tempfile.gettempdir())
                                                   / f"mirror{k}_{Path(src).name}"))
        rows = measure(kw.pop("size", 0), **kw)
    else:
        rows = measure(args.size, [int(t) for t in args.tiles.split(",")], args.workers,
                       not args.no_untiled, args.particles, args.seams, args.margin,
                       args.input, args.cell_size, args.preset, args.coarse, args.picture,
                       args.scratch, args.other_seed, args.keep)
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
