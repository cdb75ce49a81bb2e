"""Landforms per preset and resolution independence, in world units.

    python -m benchmarks.bench_landforms [--size 256] [--seed 4] [--presets a,b]
                                         [--resolution 128,256,512] [--old-generator]
    python benchmarks/bench_landforms.py --presets default --resolution 512,1024

(the second: the 1024² vs 512² resolution check on a 7.68 km world, 7.5 m against 15 m
cells; about 35 min on a loaded 2-core machine. Measured 2026-11-24: default r = 0.60,
eroded volume 1024/512 = 1.96 before droplets deposited over their brush and hydrology's
inertia became a world length; after: r = 0.97, volume 0.96)

For every shipped preset on ``simcore generate --size N --seed S``: slope p50 / p99,
percentage of cells above 45 deg and peaks per 1000 cells before and after. With
``--resolution``, the same world at each listed size (every coarser grid is the 2x2
block mean of the next finer one, cell size doubled) is eroded with each preset; the
table gives the height-change correlation after block-averaging the finer result and
the ratio of eroded volumes (world units cubed). The world of the resolution table is
as wide as ``--size`` cells of 30 m (7.7 km for 256), the finest grid has finer cells.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from simcore.analysis import landforms  # noqa: E402
from simcore.engine.simulation import Simulation  # noqa: E402
from simcore.formats.presets import find_preset, preset_files  # noqa: E402
from simcore.generators.noise import fractal_terrain  # noqa: E402
from simcore.terrain import Terrain  # noqa: E402


def generated(size: int, seed: int, old: bool, extent_cells: int = 0
              ) -> tuple[np.ndarray, float]:
    """World heights and cell size of ``simcore generate --size size --seed seed``;
    with ``extent_cells`` the world is as wide as that many 30 m cells (finer cells)."""
    if old:
        return fractal_terrain(size, seed=seed), 1.0
    from simcore.generators.noise import DEFAULT_CELL_SIZE, upland_terrain
    cell = DEFAULT_CELL_SIZE * (extent_cells or size) / size
    return upland_terrain(size, seed=seed, cell_size=cell), cell


def erode(heights: np.ndarray, cell: float, name: str) -> tuple[Terrain, float]:
    """Erode world ``heights`` with preset ``name``; returns the terrain and seconds."""
    preset = find_preset(name)
    terrain = Terrain.from_heights(heights, cell, rock=preset.rock)
    work = preset.work(terrain) if hasattr(preset, "work") else preset.particles
    sim = Simulation(terrain, preset.enabled_params(), seed=preset.seed, particles=work)
    t0 = time.perf_counter()
    sim.run()
    if hasattr(sim, "finish"):
        sim.finish()
    return terrain, time.perf_counter() - t0


def compare(dh_coarse: np.ndarray, c_coarse: float, dh_fine: np.ndarray, c_fine: float
            ) -> tuple[float, float]:
    """Height-change correlation after block-averaging the finer change, and the eroded
    volume of the fine grid over the coarse one's (world units cubed)."""
    r = landforms.correlation(dh_coarse, landforms.block_mean(dh_fine))
    vol_c = float(np.maximum(-dh_coarse, 0).sum() * c_coarse ** 2)
    vol_f = float(np.maximum(-dh_fine, 0).sum() * c_fine ** 2)
    return r, (vol_f / vol_c if vol_c else float("nan"))


def fmt(stats: dict[str, float]) -> str:
    return (f"{stats['p50']:5.1f} {stats['p99']:5.1f} {stats['pct45']:5.1f} "
            f"{stats['peaks']:5.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--presets", default="")
    ap.add_argument("--resolution", default="")
    ap.add_argument("--old-generator", action="store_true")
    args = ap.parse_args()
    names = args.presets.split(",") if args.presets else list(preset_files())
    heights, cell = generated(args.size, args.seed, args.old_generator)
    before = landforms.slope_stats(heights / cell)
    print(f"terrain {args.size}^2 seed {args.seed}, cell {cell:g}, relief "
          f"{np.ptp(heights):.0f}")
    print(f"{'preset':18s}  p50   p99  %>45 peaks   s")
    print(f"{'(generated)':18s} {fmt(before)}")
    results = {}
    for name in names:
        terrain, secs = erode(heights, cell, name)
        results[name] = terrain.world_height() - heights
        print(f"{name:18s} {fmt(landforms.slope_stats(terrain.height()))} {secs:5.1f}",
              flush=True)
    if len(names) > 1:
        worst = max((abs(landforms.correlation(results[a], results[b])), a, b)
                    for i, a in enumerate(names) for b in names[i + 1:])
        print(f"largest pairwise dh correlation: {worst[0]:.2f} ({worst[1]} vs {worst[2]})")
    if args.resolution:
        sizes = sorted(int(s) for s in args.resolution.split(","))
        fine_h, fine_cell = generated(sizes[-1], args.seed, args.old_generator,
                                      extent_cells=args.size)
        worlds = {sizes[-1]: (fine_h, fine_cell)}
        for s in reversed(sizes[:-1]):
            h, c = worlds[s * 2]
            worlds[s] = (landforms.block_mean(h), 2 * c)
        print("resolution: preset, coarse vs fine, dh correlation, eroded volume ratio")
        for name in names:
            dh = {}
            for s in sizes:
                h, c = worlds[s]
                terrain, _ = erode(h, c, name)
                dh[s] = terrain.world_height() - h
            for a, b in zip(sizes, sizes[1:], strict=False):
                r, ratio = compare(dh[a], worlds[a][1], dh[b], worlds[b][1])
                print(f"  {name:18s} {a}^2 vs {b}^2  r = {r:5.2f}  volume {b}/{a} = "
                      f"{ratio:5.2f}", flush=True)
    return 0


def run(quick: bool) -> list[dict]:
    """Rows for ``python build.py bench``: every shipped preset on the generated upland
    (128² x 30 m quick, else 256²), slopes before/after, and ``default`` on the same
    world at 30 m and 15 m cells (quick: 64² and 128²): height-change correlation and
    eroded volume ratio."""
    size = 128 if quick else 256
    heights, cell = generated(size, 4, False)
    before = landforms.slope_stats(heights / cell)
    rows = [{"name": f"generated {size}² x {cell:g} m", **{k: round(v, 2)
                                                            for k, v in before.items()}}]
    for name in preset_files():
        if find_preset(name).ridges is not None:
            continue  # raises its own DLA mountains first (test_dla.py)
        terrain, secs = erode(heights, cell, name)
        st = landforms.slope_stats(terrain.height())
        rows.append({"name": f"{name} {size}²", **{k: round(v, 2) for k, v in st.items()},
                     "seconds": round(secs, 1)})
    fine_h, fine_c = generated(size, 4, False, extent_cells=size // 2)
    coarse_h, coarse_c = landforms.block_mean(fine_h), 2 * fine_c
    fine, _ = erode(fine_h, fine_c, "default")
    coarse, _ = erode(coarse_h, coarse_c, "default")
    r, ratio = compare(coarse.world_height() - coarse_h, coarse_c,
                       fine.world_height() - fine_h, fine_c)
    rows.append({"name": f"default {size // 2}² vs {size}², {coarse_c:g} vs {fine_c:g} m",
                 "r": round(r, 3), "eroded_fine_over_coarse": round(ratio, 3)})
    return rows


if __name__ == "__main__":
    sys.exit(main())
