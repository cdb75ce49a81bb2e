"""Threads on a busy machine: droplet erosion (the parallel process of the default
preset) with 1 and 2 threads, on an idle machine and with one core kept busy by a
spinning process.

The kernels run on plain Python threads (simcore/kernels/parallel.py: numba kernels release
the GIL, idle threads sleep, droplet strips start as soon as their neighbours allow).
Each condition runs in a fresh process with a warm numba cache; rows give seconds (best
of 3) and ``ratio`` = 2-thread / 1-thread time in the same condition, and ``same`` = the
2-thread result is bit-identical to 1 thread. The busy-core target is ratio
<= 1.3; idle, ratio <= 0.59 (>= 1.7x speed-up). Without ``--quick`` both 256² and 512².

A last row runs the default preset (256² or 512² at 30 m cells) on 1 and then 2 threads
in one process (idle) and times each process: hydrology and trees have no parallel
loop, so their share of the 1-thread time (``serial_share``, with the round's glue)
bounds what more threads can gain for that preset (Amdahl: ``max_speedup_2`` with 2
threads, the parallel part halved).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import hashlib, json, sys, time
from simcore.kernels import parallel
from simcore.generators.noise import fractal_terrain
from simcore.engine.simulation import Simulation, process_params
from simcore.terrain import Terrain
n, particles = int(sys.argv[1]), int(sys.argv[2])
heights = fractal_terrain(n, seed=3, relief=n / 8)
def once(threads):
    parallel.set_threads(threads)
    t = Terrain.from_heights(heights.copy(), 1.0)
    sim = Simulation(t, {"droplets": process_params("droplets")}, seed=7, particles=particles)
    t0 = time.perf_counter()
    sim.run()
    return time.perf_counter() - t0, hashlib.sha1(t.height().tobytes()).hexdigest()
once(1); once(2)  # compile or load from the cache
out = {}
for threads in (1, 2):
    runs = [once(threads) for _ in range(3)]
    out[threads] = (min(r[0] for r in runs), runs[0][1])
print("RESULT " + json.dumps({"t1": out[1][0], "t2": out[2][0],
                              "same": out[1][1] == out[2][1]}))
"""


SHARES = r"""
import dataclasses, json, sys, time
from simcore.formats.presets import find_preset
from simcore.generators.noise import fractal_terrain
from simcore.engine.simulation import PROCESSES, Simulation
from simcore.terrain import Terrain
from simcore.kernels import parallel
n, particles = int(sys.argv[1]), int(sys.argv[2])
spent = {}
for name, proc in list(PROCESSES.items()):
    def timed(*a, _run=proc.run_batch, _name=name, **k):
        t = time.perf_counter()
        out = _run(*a, **k)
        spent[_name] = spent.get(_name, 0.0) + time.perf_counter() - t
        return out
    PROCESSES[name] = dataclasses.replace(proc, run_batch=timed)
def once(threads):
    parallel.set_threads(threads)
    t = Terrain.from_heights(fractal_terrain(n, seed=3, relief=n / 8), 30.0)
    sim = Simulation(t, dict(find_preset("default").params), seed=7, particles=particles)
    spent.clear()
    t0 = time.perf_counter()
    sim.run()
    return {"total": time.perf_counter() - t0, **spent}
once(1)  # compile or load from the cache
print("RESULT " + json.dumps({"1": once(1), "2": once(2)}))
"""


def _child(code: str, n: int, particles: int) -> dict:
    """Run ``code`` in a fresh interpreter on an n² grid; its RESULT line."""
    run = subprocess.run([sys.executable, "-c", code, str(n), str(particles)],
                         capture_output=True, text=True, cwd=ROOT)
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")]
    if not line:
        raise RuntimeError(run.stdout[-2000:] + run.stderr[-2000:])
    return json.loads(line[0][7:])


def _shares(n: int, particles: int) -> dict:
    """Default preset, 1 and 2 threads, seconds per process (same process, same work)."""
    r = _child(SHARES, n, particles)
    one, two = r["1"], r["2"]
    glue = one["total"] - sum(v for k, v in one.items() if k != "total")
    serial = (one.get("hydrology", 0.0) + one.get("trees", 0.0) + glue) / one["total"]
    return {"name": "default preset: seconds per process, 1 -> 2 threads", "grid": n,
            "particles": particles, "t1_s": round(one["total"], 2),
            "t2_s": round(two["total"], 2), "ratio": round(two["total"] / one["total"], 3),
            **{k: f"{one[k]:.2f} -> {two[k]:.2f}" for k in one if k != "total"},
            "serial_share": round(serial, 3),
            "max_speedup_2": round(1 / (serial + (1 - serial) / 2), 2)}


def run(quick: bool) -> list[dict]:
    sizes = [(256, 100_000)] if quick else [(256, 100_000), (512, 400_000)]
    rows = []
    for busy in (False, True):
        spinner = None
        if busy:
            spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            for n, particles in sizes:
                r = _child(SCRIPT, n, particles)
                rows.append({"name": f"droplets, {'one core busy' if busy else 'idle'}",
                             "grid": n, "particles": particles, "t1_s": r["t1"],
                             "t2_s": r["t2"], "ratio": r["t2"] / r["t1"],
                             "speedup": r["t1"] / r["t2"], "same": r["same"]})
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    rows.append(_shares(*sizes[-1]))
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(row)
