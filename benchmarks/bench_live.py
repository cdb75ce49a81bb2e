"""Live Painting: the landscape of the young_range preset (with thermal) on the worker
thread while a brush paints the Uplift vertex group, at 256² and 512² (the generator's
uplands, 30 m cells), in the bpy module, ticking like the modal operator (a timer
every 30 ms): each tick reads the mask through the session's modifier, hands a changed
mask to the worker and writes a slice of the latest frame.

Between ticks a "dab" adds weight to a disc of vertices moving along a line (Blender's
brush does this in the GUI; its time is not ours and is not counted), and, as the UI
would, the depsgraph is evaluated (the modifier runs then) with the normals recomputed
after each frame (``blender_longest_ms``, the proxy of the viewport's redraw).
``updates_per_s``: frames written to the mesh a second; ``rounds_per_s``: landscape
rounds (``batch`` passes each); ``gap_longest_ms``: the longest the main thread was
busy with a tick, waits for the GIL included (the wall time of a tick cycle beyond the
timer's interval); ``read_longest_ms``: reading the mask. Targets: >= 4 updates/s at
256², >= 2 at 512²; gap <= 100 ms at 512²."""

from __future__ import annotations

import time
import types

import numpy as np

INTERVAL = 0.03  # the modal's timer (addon/features/live.py TICK_INTERVAL)


def _session(te, bpy, obj, seconds: float) -> dict:
    from terrain_erosion.features import live as live_ui
    from terrain_erosion.features.operators import tick
    live = te.data.live
    reader = live.MaskReader(obj, "uplift")
    group = obj.vertex_groups[reader.picked]
    job = live.LiveJob(obj)
    job.live_update = live_ui.UPDATE_INTERVAL
    job.prepare_live()
    rt = types.SimpleNamespace(stop_requested=False, progress=0.0, status="")
    g = job.grid
    xy = np.stack(np.meshgrid(np.arange(g.cols), np.arange(g.rows)), -1).reshape(-1, 2)
    vertex = np.empty(g.rows * g.cols, np.int64)
    vertex[:] = g.order  # raster cell -> vertex index
    radius = max(g.cols // 16, 2)
    gaps, reads, blender = [], [], []
    started = time.perf_counter()
    end, k, last = started + seconds, 0, None
    while time.perf_counter() < end:
        k += 1
        centre = np.array([g.cols // 2, (k * 3) % g.rows])  # a stroke along the middle
        dab = vertex[np.hypot(*(xy - centre).T) < radius]
        group.add(dab.tolist(), 1.0, 'REPLACE')
        obj.data.update()
        frames = job.frames_written
        t0 = time.perf_counter()
        if last is not None:
            gaps.append(t0 - last - INTERVAL)
        values = reader.read(obj, bpy.context)
        reads.append(time.perf_counter() - t0)
        job.paint({"uplift": values}, "the painted mask")
        assert tick(job, rt, on_worker=True) == "running", rt.status
        took = time.perf_counter() - t0
        gaps[-1:] = [max(gaps[-1], took)] if gaps else [took]
        t1 = time.perf_counter()
        dg = bpy.context.evaluated_depsgraph_get()
        if job.frames_written != frames:
            for o in (obj, obj.terrain_erosion.water_object):
                if o is not None:
                    me = o.evaluated_get(dg).data
                    normals = np.empty(len(me.vertices) * 3, np.float32)
                    me.vertex_normals.foreach_get("vector", normals)
        blender.append(time.perf_counter() - t1)
        time.sleep(INTERVAL)
        last = time.perf_counter()
    elapsed = time.perf_counter() - started
    job.finish()
    reader.close(obj)
    land = job.sim.processes["landscape"]
    return {"batch": int(land.batch),
            "updates_per_s": round(job.frames_written / elapsed, 2),
            "rounds_per_s": round((job.sim.rounds_done - job.sim.start_rounds) / elapsed, 2),
            "gap_longest_ms": round(max(gaps) * 1e3, 1),
            "gap_median_ms": round(float(np.median(gaps)) * 1e3, 1),
            "read_longest_ms": round(max(reads) * 1e3, 1),
            "blender_longest_ms": round(max(blender) * 1e3, 1),
            "mask_states": len(job.sim.states)}


def run(quick: bool) -> list[dict]:
    import bpy

    from benchmarks.bench_addon import _grid_mesh
    from tools.stage import import_staged
    te = import_staged()
    from terrain_erosion.simcore.formats.presets import find_preset
    bpy.ops.wm.read_factory_settings(use_empty=True)
    te.register()
    rows = []
    try:
        for n in (256, 512):
            obj = _grid_mesh(bpy, n, cell=30.0)
            obj.terrain_erosion.apply_preset(find_preset("young_range"))
            _session(te, bpy, obj, 2.0)  # compile (or load the cache), first layers
            obj = _grid_mesh(bpy, n, cell=30.0)
            obj.terrain_erosion.apply_preset(find_preset("young_range"))
            rows.append({"name": f"live painting {n}x{n}",
                         **_session(te, bpy, obj, 6.0 if quick else 15.0)})
    finally:
        te.unregister()
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
