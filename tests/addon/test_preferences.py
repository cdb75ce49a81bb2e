"""Add-on preferences in real Blender: the thread cap limits the simulation's threads
for runs from any thread, and a run gives the same mesh at any thread count."""

from __future__ import annotations

import os
import threading
import types

import bpy
import numpy as np
import pytest
from blender_helpers import add_grid, positions, registered_addon, staged_addon

te = staged_addon()


@pytest.fixture
def blender():
    with registered_addon() as bpy_:
        try:
            yield bpy_
        finally:
            te.data.threads.apply_thread_cap(0)


def _erode(seed_name: str) -> np.ndarray:
    obj = add_grid(bpy, n=40, name=seed_name, seed=3)
    obj.terrain_erosion.apply_preset(te.simcore.formats.presets.find_preset("default"))
    obj.terrain_erosion.particles = 6000
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    return positions(obj.data)


def test_thread_cap_limits_threads_and_keeps_results_identical(blender):
    most = te.simcore.kernels.parallel.most_threads()
    assert most == (os.cpu_count() or 1) or "NUMBA_NUM_THREADS" in os.environ
    assert te.data.threads.thread_count(0) == most
    assert te.data.threads.thread_count(10_000) == most
    assert te.data.threads.apply_thread_cap(1) == 1
    assert te.simcore.kernels.parallel.threads() == 1
    # the cap holds on any thread (numba's own cap is per thread)
    seen = []
    worker = threading.Thread(target=lambda: seen.append(te.simcore.kernels.parallel.threads()))
    worker.start()
    worker.join()
    assert seen == [1]
    capped = _erode("A")
    assert te.data.threads.apply_thread_cap(0) == most
    assert te.simcore.kernels.parallel.threads() == most
    free = _erode("B")
    assert np.array_equal(capped, free), "same seed, same mesh, whatever the thread count"


def test_preferences_draw_the_cap_and_the_threads_in_use(blender):
    log = []

    class Layout:
        def prop(self, data, name, **kw):
            log.append(("prop", name))

        def label(self, text="", **kw):
            log.append(("label", text))

    te.features.preferences.TerrainErosionPreferences.draw(
        types.SimpleNamespace(layout=Layout(), threads=1), bpy.context)
    assert ("prop", "threads") in log
    assert any(kind == "label" and text.startswith("Using 1 of") for kind, text in log), log
