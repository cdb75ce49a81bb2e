"""Animation bake and map export in the bpy module.

- playback: time per frame change (``scene.frame_set``) of a baked 512² cache: cold
  (a jump: the frame is read and decompressed from disk), playing (consecutive frames
  at 24 fps: the next frame was decoded in the background) and warm (frames in the
  in-memory cache); target ≤ 50 ms. Droplets + hydrology + trees, so every layer is cached.
- cache size per frame (compressed .npz).
- export of every map (heights + te_* float layers, 16-bit PNG and 32-bit EXR, rivers,
  lakes, sidecar) at 1024².
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def run(quick: bool) -> list[dict]:
    import bpy

    from benchmarks.bench_addon import _grid_mesh
    from tools.stage import import_staged
    te = import_staged()
    from terrain_erosion.simcore.generators.noise import fractal_terrain

    rows = []
    bpy.ops.wm.read_factory_settings(use_empty=True)
    te.register()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            n = 256 if quick else 512
            frames = 6 if quick else 12
            obj = _grid_mesh(bpy, n)
            z = fractal_terrain(n, seed=3, relief=n / 8).astype(np.float32)
            co = te.data.grid.read_positions(obj.data)
            co[:, 2] = z.ravel()
            obj.data.attributes["position"].data.foreach_set("vector", co.ravel())
            obj.data.update()
            s = obj.terrain_erosion
            s.hydrology.enabled = True
            s.trees.enabled = True
            bpy.ops.wm.save_as_mainfile(filepath=str(Path(tmp) / "bench.blend"))
            obj = bpy.data.objects[obj.name]
            for compress in (True, False):
                obj.terrain_bake.compress = compress
                obj.terrain_bake.playback = True
                t0 = time.perf_counter()
                manifest = te.features.bake.bake(obj, 1, frames, 2000)
                bake_s = time.perf_counter() - t0
                scene = bpy.context.scene
                cold = []
                for f in range(frames, 0, -2):  # jumps: never prefetched, read from disk
                    te.features.bake._state.clear()
                    t0 = time.perf_counter()
                    scene.frame_set(f)
                    cold.append(time.perf_counter() - t0)
                te.features.bake._state.clear()
                scene.frame_set(1)
                play = []
                for f in range(2, frames + 1):  # playback at 24 fps: Blender draws between
                    time.sleep(1 / 24)
                    t0 = time.perf_counter()
                    scene.frame_set(f)
                    play.append(time.perf_counter() - t0)
                warm = []
                for f in list(range(1, frames + 1)) * 2:
                    t0 = time.perf_counter()
                    scene.frame_set(f)
                    warm.append(time.perf_counter() - t0)
                empty = []
                obj.terrain_bake.playback = False
                for f in range(1, frames + 1):
                    t0 = time.perf_counter()
                    scene.frame_set(f)
                    empty.append(time.perf_counter() - t0)
                label = f"bake playback {n}²" + ("" if compress else " uncompressed")
                rows.append({"name": label, "frames": frames,
                             "layers": len(np.load(Path(tmp) / "terrain_cache" / obj.name /
                                                   "frame_000002.npz").files),
                             "frame_change_cold_ms": 1000 * statistics.median(cold),
                             "frame_change_playing_ms": 1000 * statistics.median(play),
                             "frame_change_warm_ms": 1000 * statistics.median(warm),
                             "frame_change_no_bake_ms": 1000 * statistics.median(empty),
                             "cache_MB_per_frame": manifest["bytes"] / frames / 2**20,
                             "bake_s": bake_s})
            n = 512 if quick else 1024
            obj = _grid_mesh(bpy, n)
            z = fractal_terrain(n, seed=4, relief=n / 8).astype(np.float32)
            g = te.data.grid.detect_grid(obj.data)
            te.data.grid.write_heights(obj.data, g, te.data.grid.read_positions(obj.data), z)
            rng = np.random.default_rng(0)
            for name in ("te_bedrock", "te_sediment_depth", "te_eroded", "te_deposited",
                         "te_stream", "te_pool_depth", "te_vegetation"):
                te.data.grid.write_float_layer(obj.data, name, g, rng.random((n, n)) ** 4)
            out = Path(tmp) / "maps"
            out.mkdir()
            t0 = time.perf_counter()
            files = te.features.export.export_maps(obj, out, "bench")
            rows.append({"name": f"export all maps {n}²", "files": len(files),
                         "seconds": time.perf_counter() - t0,
                         "MB": sum(f.stat().st_size for f in files) / 2**20})
    finally:
        te.unregister()
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(row)
