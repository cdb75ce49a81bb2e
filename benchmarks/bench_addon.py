"""Blender mesh I/O: grid read (detect + heights), full write-back (heights + every float
and color layer) and one modal tick (40 ms simulation budget + write-back; at least one
whole round), with droplets only and with the default preset, in the bpy module; and
the modal Erode's ticks with the rounds on a worker thread (``bg_*``: longest and
median tick, rounds done and written meanwhile).
Targets: write-back of everything at 1024² under 50 ms; a tick at 512² under 1/15 s."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _background_ticks(te, obj, seconds: float) -> dict:
    """The modal Erode's ticks (rounds on the worker thread, a write-back every 0.5 s)
    until two rounds are on the mesh, or ``seconds`` at most: the longest and the median
    tick, and the rounds done and written meanwhile."""
    job = te.job.ErosionJob(obj)
    job.live_update = 0.5
    took = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end and job.rounds_written < 2:
        t0 = time.perf_counter()
        job.tick(0.04, background=True)
        took.append(time.perf_counter() - t0)
        time.sleep(0.02)  # the operator's timer
    rounds = job.sim.rounds_done
    job.halt()
    return {"bg_tick_worst_ms": round(max(took) * 1e3, 1),
            "bg_tick_median_ms": round(float(np.median(took)) * 1e3, 2),
            "bg_rounds": rounds, "bg_written": job.rounds_written}


def _grid_mesh(bpy, n: int):
    """An n x n quad grid built from numpy (primitive_grid_add takes 13 s at 2048²)."""
    ys, xs = np.mgrid[0:n, 0:n].astype(np.float32)
    co = np.zeros((n * n, 3), np.float32)
    co[:, 0], co[:, 1] = xs.ravel(), ys.ravel()
    idx = np.arange(n * n, dtype=np.int32).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], -1).reshape(-1)
    me = bpy.data.meshes.new(f"grid{n}")
    me.vertices.add(n * n)
    me.attributes["position"].data.foreach_set("vector", co.ravel())
    me.loops.add(len(quads))
    me.loops.foreach_set("vertex_index", quads)
    me.polygons.add((n - 1) ** 2)
    me.polygons.foreach_set("loop_start", np.arange(0, len(quads), 4, dtype=np.int32))
    me.update(calc_edges=True)
    obj = bpy.data.objects.new(f"grid{n}", me)
    bpy.context.collection.objects.link(obj)
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
    from terrain_erosion.simcore.noise import fractal_terrain

    bpy.ops.wm.read_factory_settings(use_empty=True)
    te.register()
    rows = []
    try:
        for n in (256, 512, 1024) if quick else (256, 512, 1024, 2048):
            obj = _grid_mesh(bpy, n)
            co = te.grid.read_positions(obj.data)
            co[:, 2] = fractal_terrain(n, seed=1).ravel()
            obj.data.attributes["position"].data.foreach_set("vector", co.ravel())
            obj.terrain_erosion.particles = 10**8
            read = _best(lambda o=obj: te.grid.detect_grid(o.data))
            job = te.job.ErosionJob(obj)
            job.outputs = list(te.grid.FLOAT_LAYERS)  # every layer, as with all processes
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
                job = te.job.ErosionJob(obj)
                job.live_update = 0.0
                job.tick(0.04)
                row["tick_default_preset_ms"] = round(
                    _best(lambda j=job: j.tick(0.04)) * 1e3, 1)
                row.update(_background_ticks(te, obj, 60.0))
            rows.append(row)
            bpy.data.objects.remove(obj)
    finally:
        te.unregister()
    return rows
