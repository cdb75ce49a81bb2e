"""The add-on's warm-up compiling in helper processes (simcore.cli.prepare.Helpers), in real
Blender (fresh bpy processes): the helpers run Blender's own Python and import the
add-on's simcore under the add-on's package name, the warm-up thread then only loads
from numba's cache, the Threads preference caps the helpers, and a helper never
outlives Blender."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import bpy  # noqa: F401 - marks these as add-on tests (run on every Blender line)
import pytest

TESTS = Path(__file__).resolve().parents[1]

LOADS = r"""
import json, sys
import bpy, numba
from blender_helpers import staged_addon
te = staged_addon()
import terrain_erosion.simcore.cli.prepare as prepare
jobs = [j for j in te.data.warmup.steps() if j[0] in ("write-back", "trees")]
done = []
assert prepare.run(jobs, 2, lambda key, doing: key and done.append(key))
misses = sorted({d.__name__ for name, m in list(sys.modules.items())
                 if name.startswith("terrain_erosion.simcore") for d in vars(m).values()
                 if isinstance(d, numba.core.registry.CPUDispatcher) and d._cache_misses})
loaded = sum(sum(d._cache_hits.values()) for name, m in list(sys.modules.items())
             if name.startswith("terrain_erosion.simcore") for d in vars(m).values()
             if isinstance(d, numba.core.registry.CPUDispatcher))
print("LOADS " + json.dumps({"done": done, "misses": misses, "loaded": loaded}))
"""

BLENDER_QUITS = r"""
import json, os, time
import bpy
from blender_helpers import staged_addon
te = staged_addon()
bpy.ops.wm.read_factory_settings(use_empty=True)
te.register()
assert te.data.warmup.start(2), "the warm-up starts"
while te.data.warmup.status().total == 0:
    time.sleep(0.01)
print("STARTED " + json.dumps({"helpers": te.data.warmup.status().helpers}), flush=True)
time.sleep(600)
"""


DISABLED = r"""
import json, os, sys, time
from pathlib import Path
import bpy
from blender_helpers import staged_addon
sys.path.insert(0, "addon")  # cwd = tests/: this module's folder
from test_warmup import _children
te = staged_addon()
bpy.ops.wm.read_factory_settings(use_empty=True)
te.register()
assert te.data.warmup.start(2)
deadline = time.monotonic() + 60
while len(_children(os.getpid())) < 2 and time.monotonic() < deadline:
    time.sleep(0.05)
helpers = _children(os.getpid())
time.sleep(1.0)  # at work on the first jobs
te.unregister()  # the user disables the add-on mid-warm-up
deadline = time.monotonic() + 2.5
while _children(os.getpid()) and time.monotonic() < deadline:
    time.sleep(0.05)
te.data.warmup.wait(30)
print("DISABLED " + json.dumps({"helpers": len(helpers), "left": len(_children(os.getpid())),
                               "state": te.data.warmup.status().state}))
"""


def _env(cache: Path) -> dict:
    return {**os.environ, "NUMBA_CACHE_DIR": str(cache)}


def _children(pid: int) -> dict[int, str]:
    """Live (not zombie) child processes of ``pid``: {pid: state} (Linux /proc)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found[int(entry)] = fields[0]
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.cold
def test_helpers_run_blenders_python_and_the_add_on_only_loads_their_kernels(tmp_path):
    run = subprocess.run([sys.executable, "-c", LOADS], capture_output=True, text=True,
                         cwd=TESTS, env=_env(tmp_path))
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("LOADS ")]
    assert line, run.stdout[-3000:] + run.stderr[-3000:]
    out = json.loads(line[0][6:])
    assert sorted(out["done"]) == ["trees", "write-back"]
    assert out["misses"] == [] and out["loaded"] > 0, out


def test_the_threads_preference_and_busy_cores_cap_the_helpers(blender):
    import terrain_erosion as te
    from terrain_erosion.features.preferences import thread_count
    assert te.data.warmup.helper_count(1, load=0.0) == 0, "one thread: compile on the thread"
    for cap in (0, 2, 3, 64):
        n = te.data.warmup.helper_count(cap, load=0.0)  # an idle machine
        assert n == (0 if thread_count(cap) < 2 else min(thread_count(cap), 4)), (cap, n)
    cores = os.cpu_count() or 1
    # other programs keep all but one core busy: helpers would only fight over it
    assert te.data.warmup.helper_count(0, load=cores - 0.5) == 0
    assert te.data.warmup.helper_count(0, load=float(cores)) == 0
    if thread_count(0) >= 3 and cores >= 3:  # one core busy of three or more: 2 helpers
        assert te.data.warmup.helper_count(0, load=1.0) >= 2


@pytest.mark.cold
def test_helpers_end_at_once_when_blender_quits_mid_warm_up(tmp_path):
    if not Path("/proc/self/stat").exists():  # the check reads Linux's /proc
        import pytest
        pytest.skip("needs /proc (Linux) to list child processes")
    blender = subprocess.Popen([sys.executable, "-c", BLENDER_QUITS], cwd=TESTS,
                               env=_env(tmp_path), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    helpers: dict[int, str] = {}
    try:
        line = blender.stdout.readline()
        assert line.startswith("STARTED "), line + blender.stderr.read()[-3000:]
        started = json.loads(line[8:])
        assert started["helpers"] == 2, started
        deadline = time.monotonic() + 60
        while len(helpers) < started["helpers"] and time.monotonic() < deadline:
            helpers = _children(blender.pid)
            time.sleep(0.05)
        assert len(helpers) == started["helpers"], helpers
        time.sleep(1.0)  # importing numba, then compiling a first job (4-8 s cold)
        assert all(_alive(pid) for pid in helpers), "the helpers are at work"
        blender.send_signal(signal.SIGKILL)  # no atexit, no unregister: only the pipes close
        blender.wait()
        deadline = time.monotonic() + 2.5
        while any(_alive(pid) for pid in helpers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in helpers if _alive(pid)], "a helper outlived Blender"
    finally:
        if blender.poll() is None:
            blender.kill()
            blender.wait()
        for pid in helpers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.cold
def test_disabling_the_add_on_mid_warm_up_ends_its_helpers(tmp_path):
    if not Path("/proc/self/stat").exists():
        import pytest
        pytest.skip("needs /proc (Linux) to list child processes")
    run = subprocess.run([sys.executable, "-c", DISABLED], capture_output=True, text=True,
                         cwd=TESTS, env=_env(tmp_path))
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("DISABLED ")]
    assert line, run.stdout[-3000:] + run.stderr[-3000:]
    out = json.loads(line[0][9:])
    assert out["helpers"] >= 2 and out["left"] == 0, out
    assert out["state"] == "idle", "a stopped warm-up leaves the core to compile on use"
