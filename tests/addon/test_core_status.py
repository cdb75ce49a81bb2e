"""The simulation core's state in the add-on, in real Blender (fresh bpy processes):
the background warm-up (panel shows "Preparing the simulation core…", then Erode runs
without compiling anything more) and a Blender where numba cannot be imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import bpy  # noqa: F401 - marks these as add-on tests (run on every Blender line)
import pytest

TESTS = Path(__file__).resolve().parents[1]

PRELUDE = r"""
import sys, types  # cwd = tests/: `python -c` imports from it
import bpy

class Layout:
    '''Records what a panel draws.'''
    def __init__(self, log):
        self.log = log
    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
    def _sub(self, *a, **k):
        return self
    column = row = box = split = _sub
    def label(self, text="", icon='NONE', **k):
        self.log.append(("label", text))
    def operator(self, idname, **k):
        self.log.append(("operator", idname))
    def prop(self, data, name, **k):
        self.log.append(("prop", name))
    def menu(self, idname, **k):
        self.log.append(("menu", idname))
    def progress(self, factor=0.0, type='BAR', text=""):
        self.log.append(("progress", text))
    def separator(self, **k):
        pass

def draw_main(context):
    log = []
    bpy.types.TERRAIN_PT_main.draw(types.SimpleNamespace(layout=Layout(log)), context)
    return log
"""

WARMUP = PRELUDE + r"""
import gc, time
import numba
thresholds = gc.get_threshold()
from blender_helpers import add_grid, staged_addon
te = staged_addon()
bpy.ops.wm.read_factory_settings(use_empty=True)
te.register()
assert te.data.warmup.status().state == te.data.warmup.IDLE, 'never started in background mode'
obj = add_grid(bpy, n=24, name="Terrain")
obj.terrain_erosion.apply_preset(te.simcore.formats.presets.find_preset("default"))
obj.terrain_erosion.particles = 3000
context = types.SimpleNamespace(active_object=obj, window_manager=bpy.context.window_manager)
assert ("operator", "terrain.erode") in draw_main(context)

assert te.data.warmup.start()
assert not te.data.warmup.start(), 'one warm-up at a time'
log = draw_main(context)
bars = [text for kind, text in log if kind == "progress"]
assert bars and bars[0].startswith("Preparing the simulation core"), log
assert ("operator", "terrain.erode") not in log, 'Erode waits for the core'
assert not bpy.ops.terrain.erode.poll(), 'no run on the main thread while compiling'
assert te.data.warmup._redraw() == 0.25, 'the sidebar is redrawn while preparing'
seen, ticks, worst, last = [], 0, 0.0, time.perf_counter()
while te.data.warmup.status().busy:
    seen.append(te.data.warmup.status().done)
    time.sleep(0.005)
    now = time.perf_counter()
    worst, last, ticks = max(worst, now - last), now, ticks + 1
status = te.data.warmup.wait()
assert status.state == te.data.warmup.READY, status
assert status.done == status.total > 6 and seen == sorted(seen), (status, seen)
assert ticks > 10, 'the main thread kept running while the core was prepared'
assert gc.get_threshold() == thresholds, 'full garbage collections are back on'
assert ("operator", "terrain.erode") in draw_main(context)
assert te.data.warmup._redraw() is None, 'the redraw timer ends with the warm-up'

def compiled():
    return {(d.__name__, str(sig)) for name, m in list(sys.modules.items())
            if name.startswith("terrain_erosion.simcore") for d in vars(m).values()
            if isinstance(d, numba.core.registry.CPUDispatcher) for sig in d.signatures}
before = compiled()
assert bpy.ops.terrain.erode() == {'FINISHED'}
assert obj.terrain_erosion.trees_object is not None, 'the default preset plants trees'
after = compiled()
assert after == before, f'the run compiled more: warm-up missed {sorted(after - before)}'
te.unregister()
print(f"WARMUP-OK {status.seconds:.1f}s, main thread worst gap {worst * 1000:.0f} ms")
"""

NO_NUMBA = PRELUDE + r"""
import importlib.abc
class Block(importlib.abc.MetaPathFinder):
    '''As if the zip's numba/llvmlite wheels were for another platform.'''
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numba", "llvmlite"):
            raise ImportError(f"No module named '{name}' (blocked by the test)")
        return None
sys.meta_path.insert(0, Block())
from blender_helpers import staged_addon
bpy.ops.wm.read_factory_settings(use_empty=True)
before = set(dir(bpy.types))
te = staged_addon()
assert "numba" in te.CORE_PROBLEM, te.CORE_PROBLEM
te.register()
assert bpy.types.TERRAIN_PT_main.__module__.endswith("core_missing")
assert not hasattr(bpy.types, "TERRAIN_OT_erode")
bpy.ops.mesh.primitive_grid_add()
context = types.SimpleNamespace(active_object=bpy.context.active_object,
                                window_manager=bpy.context.window_manager)
text = " ".join(t for kind, t in draw_main(context) if kind == "label")
assert "numba did not load" in text, text
plat = te.features.core_missing.this_platform()
assert plat in text and "Install from Disk" in text and "restart Blender" in text, text
assert te.features.core_missing.main(["--object", "Grid"]) == 1
assert not [m for m in sys.modules if m.startswith("terrain_erosion.simcore")], \
    "nothing needing numba was imported"
te.unregister()
assert set(dir(bpy.types)) == before
print("NO-NUMBA-OK", plat)
"""


def _run(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script], capture_output=True,
                          text=True, cwd=TESTS)


@pytest.mark.cold
def test_warm_up_in_the_background_then_erode_compiles_nothing_more():
    run = _run(WARMUP)
    assert "WARMUP-OK" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
    print(run.stdout.strip().splitlines()[-1])


def test_without_numba_the_panel_says_what_to_do_and_nothing_breaks():
    run = _run(NO_NUMBA)
    assert "NO-NUMBA-OK" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
