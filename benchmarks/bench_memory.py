"""Memory a run needs, measured: the peak resident memory (``ru_maxrss``) of child
processes at two grid sizes; the slope between them is the bytes per cell, compared
with the estimate the runs are checked against (simcore/engine/memory.py).

- ``cli <process>``: ``python -m simcore erode`` with that process alone (its default
  parameters, 30 m cells, one round), and with the default preset;
- ``add-on``: the modal Erode's live path in the bpy module (the default preset's
  layers, trees and water, thermal off), from before the job starts to the end of two
  frames and the final write, beyond what the grid mesh itself held.

Rows: ``measured_B_per_cell`` (slope), ``estimate_B_per_cell`` (what the check uses),
``intercept_MB`` (Python, numpy, numba, the kernels: in use before the check).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CELL = 30.0

ADDON_CHILD = r"""
import json, resource, sys, time
import numpy as np
import bpy
from tools.stage import import_staged
te = import_staged()
n = int(sys.argv[1])
bpy.ops.wm.read_factory_settings(use_empty=True)
te.register()
from benchmarks.bench_addon import _grid_mesh
from terrain_erosion.simcore.formats.presets import find_preset
obj = _grid_mesh(bpy, n, cell=30.0)
s = obj.terrain_erosion
s.apply_preset(find_preset("default"))
s.thermal.enabled = False
s.particles = 10**9
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
before = rss()
job = te.data.job.ErosionJob(obj)
job.prepare_live()
job.live_update = 0.0
end = time.perf_counter() + 300
while job.frames_written < 2 and time.perf_counter() < end:
    job.tick(0.04, background=True)
    time.sleep(0.005)
job.finish()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
estimate = te.simcore.engine.memory.bytes_per_cell(job.sim.processes, job.bytes_per_vertex())
print(json.dumps({"before": before, "peak": peak, "estimate": estimate}))
"""


def _peak(args: list[str], cwd: Path) -> int:
    """ru_maxrss of a child process, bytes (Linux reports kB)."""
    proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"{args} failed ({status})")
    return usage.ru_maxrss * 1024


def _cli_rows(sizes: tuple[int, int], tmp: Path) -> list[dict]:
    import numpy as np

    from simcore.engine.memory import bytes_per_cell
    from simcore.engine.simulation import PROCESSES
    from simcore.formats.presets import find_preset
    from simcore.generators.noise import fractal_terrain

    heights = {}
    for n in (16, *sizes):
        heights[n] = tmp / f"h{n}.npy"
        np.save(heights[n], fractal_terrain(n, seed=1) * CELL * 3)
    cases = {}
    for name in PROCESSES:
        path = tmp / f"only_{name}.toml"
        extra = "age = 40000.0\ntime_step = 20000.0\nbatch = 1\n" if name == "landscape" else ""
        path.write_text(f'[preset]\nname = "{name} alone"\n[simulation]\nseed = 1\n'
                        f'particles = 1\n[{name}]\nenabled = true\n{extra}')
        cases[f"cli {name}"] = (str(path), [name])
    cases["cli default preset"] = ("default", list(find_preset("default").enabled_params()))
    rows = []
    for label, (preset, processes) in cases.items():
        peaks = {}
        for n in (16, *sizes):  # 16: compiles into numba's cache, not measured
            peaks[n] = _peak([sys.executable, "-m", "simcore", "erode", "--preset", preset,
                              "--input", str(heights[n]), "--cell-size", str(CELL),
                              "--output", str(tmp / "out.npz"), "--quiet",
                              "--particles", "1"], ROOT)
        rows.append(_row(label, sizes, peaks, bytes_per_cell(processes)))
    return rows


def _row(label: str, sizes: tuple[int, int], peaks: dict, estimate: float) -> dict:
    a, b = sizes
    slope = (peaks[b] - peaks[a]) / (b * b - a * a)
    return {"name": label, f"peak_{a}_MB": round(peaks[a] / 2**20, 1),
            f"peak_{b}_MB": round(peaks[b] / 2**20, 1),
            "measured_B_per_cell": round(slope, 1), "estimate_B_per_cell": round(estimate, 1),
            "intercept_MB": round((peaks[a] - slope * a * a) / 2**20)}


def _addon_row(sizes: tuple[int, int]) -> dict:
    peaks, estimate = {}, 0.0
    for n in sizes:
        out = subprocess.run([sys.executable, "-c", ADDON_CHILD, str(n)], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        got = json.loads(out.strip().splitlines()[-1])
        peaks[n] = got["peak"] - got["before"]  # beyond Blender and the grid mesh
        estimate = got["estimate"]
    row = _row("add-on live run (default, no thermal)", sizes, peaks, estimate)
    row.pop("intercept_MB")
    return row


def run(quick: bool) -> list[dict]:
    if not sys.platform.startswith("linux"):
        return [{"name": "memory", "skipped": "ru_maxrss and /proc are read on Linux"}]
    sizes = (256, 512) if quick else (512, 1024)
    with tempfile.TemporaryDirectory() as tmp:
        rows = _cli_rows(sizes, Path(tmp))
    rows.append(_addon_row(sizes))
    return rows
