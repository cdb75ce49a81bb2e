"""Blender mesh I/O: grid read (detect + heights), full write-back (heights + every float
and color layer) and one modal tick (40 ms simulation budget + write-back; at least one
whole round), with droplets only and with the default preset, in the bpy module; and
the modal Erode's live run (rounds on the worker thread, the mesh written a slice per
tick: ``live_*``) on the generator's uplands (30 m cells) with the default preset's
layers, trees and water, thermal off (its rounds take 6 s at 1024² here: few frames),
twice: as the bpy module runs it, and as Blender's UI would (``gui_*``: after every
tick that wrote, the depsgraph is evaluated, which makes the next write of each layer
copy it, and after each frame the normals are recomputed, the proxy of the viewport's
redraw); and at 1024² with thermal on. ``*_tick_longest_ms``: our longest tick after
the first frame (``*_first_frame_longest_ms``: during it, when the layers are made);
``*_wait_longest_ms``: the longest the main thread waited beyond the timer between
ticks (for the GIL, held by some kernels of the worker's rounds).
Targets: write-back of everything at 1024² under 50 ms; a tick at 512² under 1/15 s;
the longest live tick (the main thread's gap) at 2048² under 0.1 s."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _live_ticks(te, bpy, obj, seconds: float, gui: bool) -> dict:
    """Tick like the modal Erode (timer every 20 ms) for ``seconds``: our longest tick
    after the first frame and during it (new layers are made then), the median tick,
    frames written; with ``gui``, Blender's time after our writes (depsgraph, normals)."""
    job = te.data.job.ErosionJob(obj)
    job.prepare_live()  # the water object, made when the modal Erode starts
    job.live_update = 0.2  # the Viewport Update default
    first, steady, ticks, blender, waits = [], [], [], [], []
    end = time.perf_counter() + seconds
    woken = None
    while time.perf_counter() < end:
        if woken is not None:  # the main thread kept waiting (for the GIL...)
            waits.append(time.perf_counter() - woken)
        frames = job.frames_written
        t0 = time.perf_counter()
        job.tick(0.04, background=True)
        took = time.perf_counter() - t0
        ticks.append(took)
        if job._wrote:
            (steady if frames else first).append(took)
            if gui:
                t1 = time.perf_counter()
                dg = bpy.context.evaluated_depsgraph_get()
                if job.frames_written != frames:
                    for o in (obj, obj.terrain_erosion.water_object):
                        if o is not None:
                            me = o.evaluated_get(dg).data
                            normals = np.empty(len(me.vertices) * 3, np.float32)
                            me.vertex_normals.foreach_get("vector", normals)
                blender.append(time.perf_counter() - t1)
        woken = time.perf_counter() + 0.02
        time.sleep(0.02)
    job.halt()
    key = "gui_" if gui else "live_"
    row = {f"{key}tick_longest_ms": round(max(steady or [0.0]) * 1e3, 1),
           f"{key}first_frame_longest_ms": round(max(first or [0.0]) * 1e3, 1),
           f"{key}tick_median_ms": round(float(np.median(ticks)) * 1e3, 2),
           f"{key}wait_longest_ms": round(max(waits or [0.0]) * 1e3, 1),
           f"{key}frames": job.frames_written, f"{key}rounds": job.sim.rounds_done}
    if gui:
        row["gui_blender_longest_ms"] = round(max(blender or [0.0]) * 1e3)
        row["gui_frame_interval_s"] = round(job.frame_interval, 2)
    job.cancel()
    return row


def _live_row(te, bpy, n: int, seconds: float, thermal: bool = False) -> dict:
    from terrain_erosion.simcore.formats.presets import find_preset
    obj = _grid_mesh(bpy, n, cell=30.0)
    s = obj.terrain_erosion
    s.apply_preset(find_preset("default"))
    s.thermal.enabled = thermal
    s.particles = 10**9
    row = {"name": f"live run {n}x{n}" + (" with thermal" if thermal else ""),
           "vertices": n * n}
    for gui in (False,) if thermal else (False, True):
        row.update(_live_ticks(te, bpy, obj, seconds, gui))
    bpy.data.objects.remove(obj)
    return row


def _grid_mesh(bpy, n: int, cell: float = 1.0):
    """An n x n quad grid built from numpy (primitive_grid_add takes 13 s at 2048²);
    with ``cell`` other than 1, the generator's uplands on cells of that size. Its Real
    Size is its own extent: the benchmarks' figures are for cells of ``cell`` metres."""
    from terrain_erosion.features.export import make_grid_object
    z = np.zeros((n, n))
    if cell != 1.0:  # the generator's uplands (relief 0.12 x the extent)
        from terrain_erosion.simcore.generators.noise import upland_terrain
        z = upland_terrain(n, n, seed=1, cell_size=cell)
    obj = make_grid_object(f"grid{n}", z, cell, cell, 0.0, 0.0)
    obj.terrain_erosion.real_size = (n - 1) * cell  # 1:1: cells of ``cell`` metres
    bpy.context.view_layer.objects.active = obj
    return obj


def _best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run(quick: bool) -> list[dict]:
    import bpy

    from tools.stage import import_staged
    te = import_staged()
    from terrain_erosion.simcore.formats.presets import find_preset
    from terrain_erosion.simcore.generators.noise import fractal_terrain

    bpy.ops.wm.read_factory_settings(use_empty=True)
    te.register()
    rows = []
    try:
        for n in (256, 512, 1024) if quick else (256, 512, 1024, 2048):
            obj = _grid_mesh(bpy, n)
            co = te.data.grid.read_positions(obj.data)
            co[:, 2] = fractal_terrain(n, seed=1).ravel()
            obj.data.attributes["position"].data.foreach_set("vector", co.ravel())
            obj.terrain_erosion.particles = 10**8
            read = _best(lambda o=obj: te.data.grid.detect_grid(o.data))
            job = te.data.job.ErosionJob(obj)
            job.outputs = list(te.data.grid.FLOAT_LAYERS)  # every layer, as with all processes
            job.writer = te.data.writeback.Writer(job.grid, job.scale, job.positions,
                                             job.outputs, True, False, False, None)
            job.sim.run_round()
            write = _best(lambda j=job, o=obj: j.write(o))
            row = {"name": f"mesh I/O {n}x{n}", "vertices": n * n,
                   "read_detect_ms": round(read * 1e3, 1),
                   "write_all_layers_ms": round(write * 1e3, 1)}
            if n in (512, 1024):
                job.live_update = 0.0
                job.tick(0.04)
                row["tick_droplets_ms"] = round(_best(lambda j=job: j.tick(0.04)) * 1e3, 1)
                obj.terrain_erosion.apply_preset(find_preset("default"))
                obj.terrain_erosion.particles = 10**8
                job = te.data.job.ErosionJob(obj)
                job.live_update = 0.0
                job.tick(0.04)
                row["tick_default_preset_ms"] = round(
                    _best(lambda j=job: j.tick(0.04)) * 1e3, 1)
            rows.append(row)
            bpy.data.objects.remove(obj)
        for n in (1024,) if quick else (1024, 2048):
            rows.append(_live_row(te, bpy, n, 15.0 if quick else 45.0))
        if not quick:  # the whole preset: thermal's rounds (6 s here) hold the GIL at times
            rows.append(_live_row(te, bpy, 1024, 45.0, thermal=True))
    finally:
        te.unregister()
    return rows
