"""First use of the add-on in the bpy module: how long the simulation core takes to get
ready with an empty numba cache (cold) and a filled one (warm), and how long the main
thread is blocked meanwhile.

Rows:
- ``warm-up``: the background warm-up (addon/warmup.py). ``ready_s`` = register to core
  ready; ``first_step_s`` = to the first finished step of the progress bar;
  ``worst_gap_ms`` = the longest the main thread waited (a 5 ms sleep loop standing in
  for Blender's UI) while the core was being prepared; ``erode_s`` = a following Erode
  (default preset, 64², 3000 particles).
- ``no warm-up``: Erode on the main thread straight away (what a user got before): its
  whole duration blocks the UI (``worst_gap_ms``).
Each case runs in a fresh process with its own NUMBA_CACHE_DIR; "warm" reuses the
directory the cold run filled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
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
t_reg = time.perf_counter()
out = {"register_s": t_reg - t0}
worst = 0.0
if sys.argv[1] == "warm-up":
    te.warmup.start()
    first, last = None, time.perf_counter()
    while te.warmup.status().busy:
        if first is None and te.warmup.status().done >= 1:
            first = time.perf_counter() - t_reg
        time.sleep(0.005)
        now = time.perf_counter()
        worst, last = max(worst, now - last - 0.005), now
    st = te.warmup.wait()
    assert st.state == te.warmup.READY, st
    out.update(ready_s=time.perf_counter() - t_reg, first_step_s=first or 0.0)
t1 = time.perf_counter()
assert bpy.ops.terrain.erode() == {'FINISHED'}
out["erode_s"] = time.perf_counter() - t1
if sys.argv[1] != "warm-up":
    worst = out["erode_s"]
out["worst_gap_ms"] = worst * 1000
print("RESULT " + json.dumps(out))
"""


def _case(mode: str, cache: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    run = subprocess.run([sys.executable, "-c", SCRIPT, mode], env=env,
                         capture_output=True, text=True, cwd=ROOT / "tests")
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")]
    if not line:
        raise RuntimeError(run.stdout[-2000:] + run.stderr[-2000:])
    return json.loads(line[0][7:])


def run(quick: bool) -> list[dict]:
    rows = []
    for mode in ("warm-up", "no warm-up"):
        with tempfile.TemporaryDirectory(prefix="te-numba-") as tmp:
            for cache in ("cold", "warm"):
                rows.append({"name": f"{mode}, {cache} cache", **_case(mode, Path(tmp))})
        if quick:
            break
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(row)
