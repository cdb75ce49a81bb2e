"""Production resolution: the ``default`` and ``droplets_only`` presets on one
world at four resolutions, through the command line, as a user runs them.

    python build.py bench --only resolution [--quick] [--sizes 256,512] [--one-thread-max 1024]
    python -m benchmarks.bench_resolution [--quick] [--sizes 256,512] [--presets default]
                                          [--one-thread-max 1024] [--repeat 2] [--regenerate]
    python -m benchmarks.bench_resolution --sizes 1024,2048 --particles 3000  # paths only

The world: 7.68 km square, ``python -m simcore generate --size N --cell-size 7680/N
--seed 4`` (drained uplands): 256² x 30 m, 512² x 15 m, 1024² x 7.5 m, 2048² x 3.75 m
(``--quick``: 256² and 512² only; ``--sizes`` any list). Generated worlds are cached
by size, cell size and seed in ``$TE_BENCH_CACHE`` or ``<tmp>/terrain-erosion-bench/``
(2048² takes about 3 minutes to generate; never part of a timing); they are reused
after code changes, so timings of two versions compare on the same land (a
``.json`` beside each says which commit made it, ``+changes`` if simcore had
uncommitted edits), and ``--regenerate`` makes them anew.

Each (preset, size, threads) runs in a fresh Python process: ``simcore.cli.main(["erode",
"--preset", P, "--input", X, "--cell-size", C, "--output", Y, "--quiet"])``, rain per area
as the presets define it (0.0034 per m²: about 200k particles on this world at every
size). A small run first fills numba's cache; each process then runs one tiny erode of
its preset (64², ``load_s``: loading the kernels from the cache) before the measured one.
Figures per row (2 threads unless said):

* ``wall_s`` / ``cpu_s``: the whole CLI call (reading the input, the rounds, writing the
  output; CPU of all threads); ``<process>_s`` / ``<process>_cpu_s``: inside each
  process's ``run_batch`` (``PROCESSES[name]`` wrapped, as bench_threads' SHARES);
  ``other_s``: the rest (I/O, masks, lake levelling between processes);
* ``peak_mb``: ru_maxrss of the process (its whole life); ``bytes_per_cell``: (peak RSS
  during the CLI call - RSS right before it, after imports and the tiny warm-up) /
  cells, so the interpreter and the numba code are not counted (Linux: the peak is
  VmHWM reset through /proc/self/clear_refs at the start; elsewhere ru_maxrss); the
  input is read inside the measured call, so its 8 bytes per cell are.
  ``raw_bytes_per_cell``: ru_maxrss / cells;
* ``growth``: wall-time factor per doubling of the resolution against the previous
  size in the list, (t(N) / t(M)) ** (1 / log2(N / M)) (t(2N) / t(N) for doublings);
* default preset only: ``t1_s`` (1 thread; ``--one-thread-max N`` skips sizes above N),
  ``speedup`` = t1 / t2 and ``same`` = the 1- and 2-thread outputs are bit-identical
  (SHA-1 of the output heights, ``hash``). The 2- and 1-thread runs go in pairs, one
  right after the other (``--repeat K``: K pairs, the fastest of each kind counts);
  ``pair_speedups`` lists each pair's ratio, measured under the same conditions on a
  machine whose speed drifts (this shared 2-core host moved the 2-thread time of one
  1024² run from 23 to 35 s within an hour).

The resolution targets, flagged ``pass`` / ``FAIL`` in the rows and summed up in the last row
(the growth per doubling is reported, not judged: finer cells resolve more over-steep
ground for the hillslopes to relax, and the droplets' brush is a world length):

* default preset (2 threads): 1024² <= 60 s (``time_target``), 2048² <= 240 s;
* 2-thread speed-up of the whole default preset >= 1.6x (``speedup_target``);
* peak memory <= 250 bytes per cell, marginal (``memory_target``, both presets, every
  run of the row). On small grids fixed costs (thread stacks, allocator arenas) weigh
  more per cell; the target matters at 1024² and 2048².

Before the resolution work the default preset took about 65 s at 512² and over 10
minutes at 1024²: the full set (every size, 1 and 2 threads) then takes hours.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORLD_M = 7680.0  #: side of the world in metres (256 cells of 30 m)
SEED = 4
SIZES = (256, 512, 1024, 2048)
QUICK_SIZES = (256, 512)
PRESETS = ("default", "droplets_only")
THREADED = "default"  #: the preset also run on 1 thread (speed-up, bit-identity)
WARM_SIZE = 64  #: side of the tiny world of the warm-up runs (120 m cells)
WARM_PARTICLES = 20_000

TIME_TARGET = {1024: 60.0, 2048: 240.0}  #: default preset, seconds with 2 threads
SPEEDUP_TARGET = 1.6  #: 1-thread / 2-thread wall, whole default preset
BYTES_TARGET = 250.0  #: marginal peak memory per cell

CHILD = r"""
import dataclasses, gc, hashlib, json, os, resource, sys, time
import numpy as np
from simcore.cli import main as cli
from simcore.kernels import parallel
from simcore.formats.presets import find_preset
from simcore.engine.simulation import PROCESSES

preset, src, cell, out, threads, warm, warm_cell, warm_particles = sys.argv[1:9]
extra = ["--particles", sys.argv[9]] if len(sys.argv) > 9 else []
spent = {}
for name, proc in list(PROCESSES.items()):
    def timed(*a, _run=proc.run_batch, _name=name, **k):
        w, c = time.perf_counter(), time.process_time()
        result = _run(*a, **k)
        s = spent.setdefault(_name, [0.0, 0.0])
        s[0] += time.perf_counter() - w
        s[1] += time.process_time() - c
        return result
    PROCESSES[name] = dataclasses.replace(proc, run_batch=timed)

def status(key):  # bytes of a /proc/self/status line (Linux), None elsewhere
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None

def maxrss():  # Linux updates ru_maxrss lazily: it may lag the RSS of now
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return max(r if sys.platform == "darwin" else r * 1024, status("VmRSS") or 0)

def reset_peak():  # Linux >= 4.0: VmHWM starts again from the RSS of now
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return status("VmHWM") is not None
    except OSError:
        return False

def erode(src, cell, out, *extra):
    rc = cli.main(["erode", "--preset", preset, "--input", src, "--cell-size", cell,
                   "--output", out, "--quiet", *extra])
    if rc != 0:
        raise SystemExit(f"erode {src} exited with {rc}")

used = parallel.set_threads(int(threads))
t = time.perf_counter()
erode(warm, warm_cell, out, "--particles", warm_particles)  # kernels from numba's cache
load = time.perf_counter() - t
os.remove(out)
shape = np.load(src, mmap_mode="r").shape
cells = shape[0] * shape[1]
p = find_preset(preset)
particles = p.work(type("T", (), {"shape": shape, "cell_size": float(cell)})())
particles = int(extra[1]) if extra else particles
spent.clear()
gc.collect()
base = status("VmRSS") or maxrss()  # not Linux: the peak so far, an upper bound
before = maxrss()
fresh = reset_peak()  # (ru_maxrss too)
w, c = time.perf_counter(), time.process_time()
erode(src, cell, out, *extra)
wall, cpu = time.perf_counter() - w, time.process_time() - c
top = max(before, maxrss())  # the whole process's peak
run_peak = max(status("VmHWM"), status("VmRSS")) if fresh else top  # since the reset
heights = np.load(out)
digest = hashlib.sha1(heights.tobytes()).hexdigest()
os.remove(out)
print("RESULT " + json.dumps({
    "threads": used, "particles": particles, "cells": cells, "load_s": load,
    "wall_s": wall, "cpu_s": cpu, "spent": spent, "base": base, "peak": top,
    "run_peak": run_peak, "hash": digest, "shape": list(heights.shape)}))
"""


def add_arguments(ap: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """This benchmark's options (also offered by ``python build.py bench``)."""
    ap.add_argument("--sizes", help="grid sides of the 7.68 km world, e.g. 256,512 "
                    f"(default {','.join(map(str, SIZES))}; --quick: "
                    f"{','.join(map(str, QUICK_SIZES))})")
    ap.add_argument("--presets", help=f"presets to run (default {','.join(PRESETS)})")
    ap.add_argument("--one-thread-max", type=int, default=0, metavar="N",
                    help=f"run the {THREADED} preset on 1 thread only up to N² "
                    "(0: every size)")
    ap.add_argument("--repeat", type=int, default=1, metavar="K",
                    help="runs per (preset, size, threads), fastest kept (1)")
    ap.add_argument("--regenerate", action="store_true",
                    help="generate the worlds anew instead of using the cache")
    ap.add_argument("--particles", type=int, metavar="N",
                    help="override the rain: N particles a run (a quick check of the code "
                    "paths at large sizes; no targets are judged)")


def world_cache() -> Path:
    return Path(os.environ.get("TE_BENCH_CACHE")
                or Path(tempfile.gettempdir()) / "terrain-erosion-bench")


def cell_size(size: int) -> float:
    return WORLD_M / size


def world(size: int, seed: int = SEED, regenerate: bool = False,
          samples: int | None = None) -> Path:
    """The .npy of ``simcore generate`` for a ``size``² world of 7.68 km (cells of
    7680 / size; ``samples`` a side instead of ``size``, e.g. ``size + 1``), generated
    once (atomically, so parallel runs never read half a file) and cached."""
    cell = cell_size(size)
    name = f"{size}" if samples is None else f"{samples}x{samples}"
    path = world_cache() / f"uplands_{name}_cell{cell:g}_seed{seed}.npy"
    if path.exists() and not regenerate:
        print(f"  {size}² world: {path} ({origin(path)})", flush=True)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
    print(f"  generating {name} x {cell:g} m, seed {seed} -> {path}", flush=True)
    t0 = time.perf_counter()
    side = size if samples is None else samples
    run = subprocess.run([sys.executable, "-m", "simcore", "generate", "--size", str(side),
                          "--cell-size", f"{cell!r}", "--seed", str(seed),
                          "--output", str(tmp)], capture_output=True, text=True, cwd=ROOT)
    if run.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"generate {size}: {run.stderr[-2000:]}")
    seconds = time.perf_counter() - t0
    path.with_suffix(".json").write_text(json.dumps(
        {"code": _code_version(), "seconds": round(seconds, 1),
         "time": time.strftime("%Y-%m-%d %H:%M")}))
    os.replace(tmp, path)
    print(f"  generated in {seconds:.0f} s", flush=True)
    return path


def _code_version() -> str:
    """Commit of the repository, ``+changes`` when simcore differs from it."""
    def git(*args: str) -> str:
        run = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT)
        return run.stdout.strip() if run.returncode == 0 else ""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "simcore") else "")


def origin(path: Path) -> str:
    """Which code generated a cached world, and when."""
    try:
        meta = json.loads(path.with_suffix(".json").read_text())
        return f"generated {meta['time']} by {meta['code']} in {meta['seconds']} s"
    except (OSError, ValueError, KeyError):
        return "generated earlier"


def warm_up(presets: list[str], tiny: Path, scratch: Path) -> float:
    """One small run of each preset in a new process: compiles into numba's cache if
    the code changed. Returns seconds."""
    t0 = time.perf_counter()
    for name in presets:
        run = subprocess.run([sys.executable, "-m", "simcore", "erode", "--preset", name,
                              "--input", str(tiny), "--cell-size", f"{cell_size(WARM_SIZE)!r}",
                              "--output", str(scratch / "warm.npy"), "--quiet",
                              "--particles", str(WARM_PARTICLES)],
                             capture_output=True, text=True, cwd=ROOT)
        if run.returncode != 0:
            raise RuntimeError(f"warm-up {name}: {run.stderr[-2000:]}")
    return time.perf_counter() - t0


def measure(preset: str, size: int, threads: int, src: Path, tiny: Path,
            scratch: Path, particles: int | None = None) -> dict:
    """One fresh process: the CLI run of ``preset`` on ``src``; its RESULT (or error)."""
    out = scratch / f"{preset}_{size}_{threads}.npy"
    args = [preset, str(src), f"{cell_size(size)!r}", str(out), str(threads), str(tiny),
            f"{cell_size(WARM_SIZE)!r}", str(WARM_PARTICLES)]
    if particles is not None:
        args.append(str(particles))
    run = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True,
                         text=True, cwd=ROOT)
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")]
    if run.returncode != 0 or not line:
        return {"error": (run.stdout[-500:] + run.stderr[-1500:]).strip()
                or f"exit code {run.returncode}"}
    return json.loads(line[0][7:])


def marginal(r: dict) -> float:
    """Bytes the measured call added to the process's RSS at its peak."""
    return r.get("marginal", r["run_peak"] - r["base"])


def best(preset: str, size: int, threads: int, src: Path, tiny: Path, scratch: Path,
         repeat: int, particles: int | None = None) -> dict:
    """The fastest of ``repeat`` runs; ``same_runs`` = every repeat gave the same heights."""
    return fastest_of([measure(preset, size, threads, src, tiny, scratch, particles)
                       for _ in range(repeat)])


def paired(preset: str, size: int, src: Path, tiny: Path, scratch: Path, repeat: int,
           particles: int | None = None) -> tuple[dict, dict, list[float]]:
    """``repeat`` pairs of runs on 2 threads then 1, one right after the other: the
    fastest of each (as :func:`best`) and each pair's 1- / 2-thread wall ratio. On a
    machine whose speed drifts over minutes (a shared host), a pair's ratio is measured
    under the same conditions; the fastest runs of each kind may not be."""
    twos, ones = [], []
    for _ in range(repeat):
        twos.append(measure(preset, size, 2, src, tiny, scratch, particles))
        if "error" in twos[-1]:
            break
        ones.append(measure(preset, size, 1, src, tiny, scratch, particles))
    ratios = [round(o["wall_s"] / t["wall_s"], 3) for t, o in zip(twos, ones)
              if "error" not in t and "error" not in o]
    return fastest_of(twos), fastest_of(ones) if ones else {"error": "not run"}, ratios


def fastest_of(runs: list[dict]) -> dict:
    """The fastest run without an error (the first error if all failed), with
    ``same_runs`` (every run gave the same heights) and the largest peaks of all."""
    good = [r for r in runs if "error" not in r]
    if not good:
        return runs[0]
    fastest = min(good, key=lambda r: r["wall_s"])
    fastest["same_runs"] = len({r["hash"] for r in good}) == 1
    fastest["peak"] = max(r["peak"] for r in good)
    fastest["marginal"] = max(r["run_peak"] - r["base"] for r in good)
    return fastest


def _flag(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def make_row(preset: str, size: int, two: dict, one: dict | None) -> dict:
    cells = two["cells"]
    row: dict = {"name": f"{preset} {size}² x {cell_size(size):g} m", "preset": preset,
                 "grid": size, "cell_m": cell_size(size), "particles": two["particles"],
                 "threads": two["threads"], "wall_s": round(two["wall_s"], 2),
                 "cpu_s": round(two["cpu_s"], 2)}
    inside = 0.0
    for name, (wall, cpu) in two["spent"].items():
        row[f"{name}_s"] = round(wall, 2)
        row[f"{name}_cpu_s"] = round(cpu, 2)
        inside += wall
    row["other_s"] = round(two["wall_s"] - inside, 2)
    row["load_s"] = round(two["load_s"], 2)
    row["peak_mb"] = round(two["peak"] / 2**20, 1)
    row["base_mb"] = round(two["base"] / 2**20, 1)
    row["run_peak_mb"] = round((two["base"] + marginal(two)) / 2**20, 1)
    row["bytes_per_cell"] = round(marginal(two) / cells, 1)
    row["raw_bytes_per_cell"] = round(two["peak"] / cells, 1)
    row["hash"] = two["hash"][:12]
    if one is not None:
        if "error" in one:
            row["t1_error"] = one["error"][-300:]
        else:
            row["t1_s"] = round(one["wall_s"], 2)
            row["t1_cpu_s"] = round(one["cpu_s"], 2)
            row["t1_bytes_per_cell"] = round(marginal(one) / cells, 1)
            row["speedup"] = round(one["wall_s"] / two["wall_s"], 3)
            row["same"] = one["hash"] == two["hash"]
    return row


def add_growth(rows: list[dict]) -> None:
    """``growth`` on each row: wall factor per doubling against the previous size."""
    by_preset: dict[str, list[dict]] = {}
    for row in rows:
        if "wall_s" in row:
            by_preset.setdefault(row["preset"], []).append(row)
    for runs in by_preset.values():
        runs.sort(key=lambda r: r["grid"])
        for a, b in zip(runs, runs[1:], strict=False):
            doublings = math.log2(b["grid"] / a["grid"])
            if doublings > 0 and a["wall_s"] > 0:
                b["growth"] = round((b["wall_s"] / a["wall_s"]) ** (1 / doublings), 2)
                b["growth_from"] = a["grid"]


def add_flags(rows: list[dict]) -> None:
    for row in rows:
        if "wall_s" not in row:
            continue
        if row["preset"] == THREADED and row["grid"] in TIME_TARGET:
            limit = TIME_TARGET[row["grid"]]
            row["time_target"] = f"<= {limit:g} s: {_flag(row['wall_s'] <= limit)}"
        if "speedup" in row:
            row["speedup_target"] = (f">= {SPEEDUP_TARGET:g}x: "
                                     f"{_flag(row['speedup'] >= SPEEDUP_TARGET)}")
        worst = max(row["bytes_per_cell"], row.get("t1_bytes_per_cell", 0.0))
        row["memory_target"] = f"<= {BYTES_TARGET:g} B/cell: {_flag(worst <= BYTES_TARGET)}"


def summary(rows: list[dict]) -> dict:
    """One row: each resolution target over the rows that measured it."""
    out: dict = {"name": "resolution targets"}
    default = {r["grid"]: r for r in rows if r.get("preset") == THREADED and "wall_s" in r}
    for size, limit in TIME_TARGET.items():
        r = default.get(size)
        out[f"default_{size}_le_{limit:g}s"] = (
            f"{_flag(r['wall_s'] <= limit)} ({r['wall_s']:.1f} s)" if r else "not run")
    for key, field, word in (("speedup_ge_1.6x", "speedup_target", "speedup"),
                             ("memory_le_250_bytes_per_cell", "memory_target",
                              "bytes_per_cell")):
        flagged = [r for r in rows if field in r]
        if not flagged:
            out[key] = "not run"
            continue
        fails = [f"{r['preset']} {r['grid']}² {r[word]}" for r in flagged
                 if r[field].endswith("FAIL")]
        out[key] = f"FAIL: {', '.join(fails)}" if fails else f"pass ({len(flagged)} rows)"
    same = [r["same"] for r in rows if "same" in r]
    out["bit_identical_1_2_threads"] = (("yes" if all(same) else "NO") + f" ({len(same)} sizes)"
                                        if same else "not run")
    return out


def table(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    head = ("| preset | grid | cell m | particles | wall s (2 thr) | cpu s | seconds per process "
            "| peak MB | B/cell (raw) | growth | 1 thr s | speed-up | same | targets |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        if "wall_s" not in r:
            lines.append(f"| {r['name']} | | | | error | | {r.get('error', '')[-120:]!r} "
                         "| | | | | | | |")
            continue
        procs = ", ".join(f"{k[:-2]} {r[k]:.1f}" for k in r
                          if k.endswith("_s") and not k.endswith("_cpu_s")
                          and k not in ("wall_s", "cpu_s", "load_s", "t1_s"))
        flags = ", ".join(f"{k.split('_')[0]} {r[k].split(': ')[1]}" for k in r
                          if k.endswith("_target"))
        lines.append(
            f"| {r['preset']} | {r['grid']}² | {r['cell_m']:g} | {r['particles']} "
            f"| {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {procs} | {r['peak_mb']:.0f} "
            f"| {r['bytes_per_cell']:.0f} ({r['raw_bytes_per_cell']:.0f}) "
            f"| {_opt(r.get('growth'), '{:.2f}x')} | {_opt(r.get('t1_s'), '{:.1f}')} "
            f"| {_opt(r.get('speedup'), '{:.2f}x')} | {_opt(r.get('same'), '{}')} | {flags} |")
    return "\n".join(lines)


def _opt(value: object, fmt: str) -> str:
    return "" if value is None else fmt.format(value)


def run(quick: bool, options: argparse.Namespace | None = None) -> list[dict]:
    opts = options or argparse.Namespace(sizes=None, presets=None, one_thread_max=0,
                                         repeat=1, regenerate=False, particles=None)
    sizes = (sorted({int(s) for s in opts.sizes.split(",")}) if opts.sizes
             else list(QUICK_SIZES if quick else SIZES))
    if any(s < 16 for s in sizes):
        raise SystemExit(f"--sizes {opts.sizes}: sides of at least 16 cells")
    presets = opts.presets.split(",") if opts.presets else list(PRESETS)
    one_max = opts.one_thread_max or max(sizes)
    repeat = max(1, opts.repeat)
    worlds = {s: world(s, regenerate=opts.regenerate) for s in sorted({WARM_SIZE, *sizes})}
    tiny = worlds[WARM_SIZE]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-resolution-") as tmp:
        scratch = Path(tmp)
        seconds = warm_up(presets, tiny, scratch)
        print(f"  warm-up (numba cache, {WARM_SIZE}² runs): {seconds:.1f} s", flush=True)
        for size in sizes:
            for preset in presets:
                one, ratios = None, []
                if preset == THREADED and size <= one_max:
                    two, one, ratios = paired(preset, size, worlds[size], tiny, scratch,
                                              repeat, opts.particles)
                    if "error" in one:
                        one = None
                else:
                    two = best(preset, size, 2, worlds[size], tiny, scratch, repeat,
                               opts.particles)
                if "error" in two:
                    rows.append({"name": f"{preset} {size}² x {cell_size(size):g} m",
                                 "preset": preset, "grid": size, "error": two["error"][-300:]})
                else:
                    rows.append(make_row(preset, size, two, one))
                    if repeat > 1:
                        rows[-1]["same_runs"] = two["same_runs"]
                    if ratios:  # each back-to-back pair's speed-up
                        rows[-1]["pair_speedups"] = ratios
                r = rows[-1]
                print(f"  {r['name']}: " + (f"{r['wall_s']:.1f} s" if "wall_s" in r
                                            else "error")
                      + (f", 1 thread {r['t1_s']:.1f} s" if "t1_s" in r else ""), flush=True)
    add_growth(rows)
    if opts.particles is None:
        add_flags(rows)
        rows.append(summary(rows))
    else:
        rows.append({"name": "resolution targets", "judged": f"no: --particles {opts.particles}"})
    print(table(rows[:-1]))
    print("  " + "; ".join(f"{k}: {v}" for k, v in rows[-1].items() if k != "name"))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="256² and 512² only")
    add_arguments(ap)
    args = ap.parse_args(argv)
    for row in run(args.quick, args):
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
