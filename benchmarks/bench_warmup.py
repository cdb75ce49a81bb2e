"""First use: how long the simulation core takes to get ready with an empty numba cache
(cold) and a filled one (warm).

    python -m benchmarks.bench_warmup [--quick] [--core]

Rows:
- ``core: <step>``: the jobs of simcore/cli/prepare.py (what the add-on's warm-up runs),
  in the add-on's order, in a fresh Python process with its own empty NUMBA_CACHE_DIR
  (cold), then again in a new process on the filled directory (warm). Wall and CPU
  seconds per job; a kernel shared by several processes is compiled by the first job
  that needs it. The machine is shared, so CPU seconds (this process and its threads)
  are the steadier figure.
- ``core: total (new process, in process | N helpers)``: Python start + imports + every
  job, wall and CPU (the child's ``RUSAGE_CHILDREN``, its helper processes included);
  with N helpers the jobs compile in N helper processes in parallel and the process
  loads each from numba's cache when a helper has done it (simcore.cli.prepare.run, what
  the add-on does with 2 or more threads allowed); ``default_ready_s``: up to the end
  of the default preset's jobs (its processes and the write-back: when the add-on
  offers Erode for it); with helpers also ``cpu_path_default_s`` / ``cpu_path_all_s``:
  the process's imports plus the CPU seconds its helpers had used when the last default
  job / the last job was done (the wall time on a machine with a free core per helper:
  the steadier figure when others share the cores); ``top``: the
  functions whose own compile took longest (numba compile events, callees excluded);
  ``load``: the 1-minute load average before and after.
- ``add-on: ...`` (bpy module): register, then the background warm-up
  (addon/data/warmup.py): ``erode_available_s`` = until Erode can run for the default
  preset, ``ready_s`` = until the whole core is ready, ``worst_gap_ms`` = the longest
  the main thread waited meanwhile (a 5 ms sleep loop standing in for Blender's UI),
  ``erode_s`` = a following Erode (default preset, 64², 3000 particles); ``helpers`` =
  helper processes used (``warm-up``: as many as the add-on picks on this machine;
  ``warm-up in process``: none, all compiled on the warm-up thread). Without
  ``--quick`` also ``no warm-up``: Erode on the main thread straight away, which blocks
  the UI for its whole duration.
``--core`` runs the core rows only (about half a minute).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the default preset's processes (the add-on prepares them first)
DEFAULT_FIRST = ("droplets", "hydrology", "thermal", "trees")

CORE = r"""
import json, sys, time
wall0, cpu0 = time.perf_counter(), time.process_time()
from numba.core import event
from simcore.cli.prepare import run, steps
out = {"import_s": time.perf_counter() - wall0, "import_cpu_s": time.process_time() - cpu0}
spans, stack = {}, []

class Own(event.Listener):  # compile time per function, its callees' compiles excluded
    def on_start(self, ev):
        stack.append([time.perf_counter(), 0.0])
    def on_end(self, ev):
        t0, inner = stack.pop()
        took = time.perf_counter() - t0
        if stack:
            stack[-1][1] += took
        f = ev.data["dispatcher"].py_func
        key = f"{f.__module__.rsplit('.', 1)[-1]}.{f.__name__}"
        spans[key] = spans.get(key, 0.0) + took - inner

event.register("numba:compile", Own())
jobs, mark = [], [time.perf_counter(), time.process_time()]
def progress(key, doing):  # a job here starts (key None) or ends
    now = [time.perf_counter(), time.process_time()]
    if key is not None:  # [key, wall s, CPU s, ready at (s after start)]
        jobs.append([key, now[0] - mark[0], now[1] - mark[1], now[0] - wall0])
    mark[:] = now
helper_cpu = {}
run(steps(json.loads(sys.argv[1])), int(sys.argv[2]), progress, helper_cpu=helper_cpu)
out["jobs"] = jobs
out["helper_cpu"] = helper_cpu
out["top"] = sorted(spans.items(), key=lambda kv: -kv[1])[:6]
print("RESULT " + json.dumps(out))
"""

ADDON = r"""
import json, sys, time
t0 = time.perf_counter()
import bpy
from blender_helpers import add_grid, staged_addon
te = staged_addon()
bpy.ops.wm.read_factory_settings(use_empty=True)
te.register()
obj = add_grid(bpy, n=64, name="Terrain")
obj.terrain_erosion.apply_preset(te.simcore.formats.presets.find_preset("default"))
obj.terrain_erosion.particles = 3000
bpy.context.view_layer.objects.active = obj
t_reg = time.perf_counter()
out = {"register_s": t_reg - t0}
worst = 0.0
if sys.argv[1].startswith("warm-up"):
    te.data.warmup.start(0 if sys.argv[1] == "warm-up in process" else None)
    wanted = te.data.warmup.enabled_processes(obj)
    available, last = None, time.perf_counter()
    while te.data.warmup.status().busy:
        if available is None and te.data.warmup.status().ready_for(wanted):
            available = time.perf_counter() - t_reg
            assert bpy.ops.terrain.erode.poll(), "Erode is offered"
        time.sleep(0.005)
        now = time.perf_counter()
        worst, last = max(worst, now - last - 0.005), now
    st = te.data.warmup.wait()
    assert st.state == te.data.warmup.READY, st
    ready = time.perf_counter() - t_reg
    out.update(erode_available_s=available or ready, ready_s=ready, helpers=st.helpers)
t1 = time.perf_counter()
assert bpy.ops.terrain.erode() == {'FINISHED'}
out["erode_s"] = time.perf_counter() - t1
if not sys.argv[1].startswith("warm-up"):
    worst = out["erode_s"]
out["worst_gap_ms"] = worst * 1000
print("RESULT " + json.dumps(out))
"""


def _child(code: str, args: list[str], cache: Path, cwd: Path) -> tuple[dict, float, float]:
    """Run ``code`` in a fresh interpreter; (its RESULT, wall s, CPU s of the child)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                         text=True, cwd=cwd)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")]
    if not line:
        raise RuntimeError(run.stdout[-2000:] + run.stderr[-2000:])
    return json.loads(line[0][7:]), wall, cpu


def core_rows(helpers: int = 0) -> list[dict]:
    """Cold and warm rows of the prepare jobs; with ``helpers`` >= 2 they compile in
    that many helper processes (simcore.cli.prepare.run), and the CPU includes theirs."""
    load0 = os.getloadavg()[0]
    first, arg = json.dumps(DEFAULT_FIRST), str(helpers)
    with tempfile.TemporaryDirectory(prefix="te-numba-") as tmp:
        cold, cold_wall, cold_cpu = _child(CORE, [first, arg], Path(tmp), ROOT)
        warm, warm_wall, warm_cpu = _child(CORE, [first, arg], Path(tmp), ROOT)
    mode = f"{helpers} helpers" if helpers >= 2 else "in process"
    rows = []
    if helpers < 2:  # per job; with helpers a job here only loads what a helper compiled
        warm_jobs = {key: (w, c) for key, w, c, _ in warm["jobs"]}
        for key, cw, cc, _ in cold["jobs"]:
            ww, wc = warm_jobs[key]
            rows.append({"name": f"core: {key}", "cold_s": round(cw, 2),
                         "cold_cpu_s": round(cc, 2), "warm_s": round(ww, 3),
                         "warm_cpu_s": round(wc, 3)})
    default = {*DEFAULT_FIRST, "write-back"}
    default_ready = max(at for key, _, _, at in cold["jobs"] if key in default)
    extra = {}
    if cold["helper_cpu"]:  # with a free core per helper: their CPU is their time
        at = {key: cpu for key, (_, cpu) in cold["helper_cpu"].items()}
        extra = {"cpu_path_default_s": round(cold["import_s"] + max(
                     at.get(key, 0.0) for key in default), 2),
                 "cpu_path_all_s": round(cold["import_s"] + max(at.values()), 2)}
    rows.append({"name": f"core: total (new process, {mode})", "cold_s": round(cold_wall, 2),
                 "cold_cpu_s": round(cold_cpu, 2), "warm_s": round(warm_wall, 2),
                 "warm_cpu_s": round(warm_cpu, 2),
                 "default_ready_s": round(default_ready, 2), **extra,
                 "top": ", ".join(f"{k} {v:.1f}" for k, v in cold["top"]),
                 "load": f"{load0:.1f}->{os.getloadavg()[0]:.1f}"})
    return rows


def addon_rows(quick: bool) -> list[dict]:
    rows = []
    modes = ("warm-up", "warm-up in process")
    for mode in modes if quick else (*modes, "no warm-up"):
        with tempfile.TemporaryDirectory(prefix="te-numba-") as tmp:
            for cache in ("cold", "warm"):
                result, _, cpu = _child(ADDON, [mode], Path(tmp), ROOT / "tests")
                rows.append({"name": f"add-on: {mode}, {cache} cache", **result,
                             "cpu_s": round(cpu, 1)})
    return rows


def run(quick: bool, core_only: bool = False) -> list[dict]:
    from simcore.cli.prepare import MOST_HELPERS
    rows = core_rows() + core_rows(max(2, min(MOST_HELPERS, os.cpu_count() or 1)))
    return rows if core_only else rows + addon_rows(quick)


if __name__ == "__main__":
    for row in run("--quick" in sys.argv, "--core" in sys.argv):
        print(row, flush=True)
