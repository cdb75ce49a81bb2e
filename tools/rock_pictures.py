"""Before/after pictures of the rock-column presets (mesa_country, cuesta_land,
ridge_and_valley), and the numbers they show.

    python -m tools.rock_pictures [--size 256] [--only NAME ...] [--output-dir docs]

The start is a raised plateau: the generator's drained uplands (seed 3, 30 m cells) at
a fifth of their relief on a 420 m block, falling to base level (0 m) over the outer
360 m, so the rivers cut back from the edges through the layers. Each picture is the
start and the result side by side, hillshaded and coloured by the layer at the surface
(the layers' own colours); rows go down the picture (+y, the frame's north, is down).
Prints relief, slope median / 90th percentile, runtime, and per preset: the share of
the map on hard rock (mesas), the median scarp and dip-slope gradients along the dip
(cuestas), the peak of the channel directions and the share of channels within 15
degrees of the fold axis (ridge and valley). Needs only numpy (no Blender).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from simcore.algorithms.strata import Strata  # noqa: E402
from simcore.analysis.channels import channel_azimuths  # noqa: E402
from simcore.engine.simulation import Simulation  # noqa: E402
from simcore.formats.images import save_png  # noqa: E402
from simcore.formats.presets import find_preset  # noqa: E402
from simcore.generators.uplands import drained_uplands  # noqa: E402
from simcore.rock import RockColumn  # noqa: E402
from simcore.terrain import Terrain  # noqa: E402
from tools.contact_sheet import label  # noqa: E402

CELL = 30.0
PICTURES = {"mesa_country": "rock_mesa.png", "cuesta_land": "rock_cuesta.png",
            "ridge_and_valley": "rock_ridge_valley.png"}


def plateau(size: int, cell: float = CELL) -> np.ndarray:
    """World heights of the start (module doc)."""
    i = np.arange(size)
    edge = np.minimum(np.minimum(i, size - 1 - i)[:, None], np.minimum(i, size - 1 - i)[None, :])
    ramp = np.clip(edge * cell / 360.0, 0.0, 1.0)
    return ramp * (420.0 + 0.2 * drained_uplands(size, seed=3, cell_size=cell))


def picture(terrain: Terrain, column: RockColumn) -> np.ndarray:
    """RGB uint8: hillshade (light from the upper left, 40 degrees up, heights x2) times
    the colour of the layer at each cell's bedrock."""
    h = terrain.height()
    gy, gx = np.gradient(h * 2.0)
    az, alt = math.radians(315.0), math.radians(40.0)
    light = (math.cos(alt) * math.sin(az), -math.cos(alt) * math.cos(az), math.sin(alt))
    shade = np.clip((-gx * light[0] - gy * light[1] + light[2])
                    / np.sqrt(gx * gx + gy * gy + 1.0), 0.0, 1.0)
    strata = Strata(column, terrain.shape, terrain.cell_size)
    scaled, layer = np.empty(terrain.shape), np.empty(terrain.shape)
    strata.evaluate(terrain.bedrock, np.ones(terrain.shape), scaled, layer)
    colors = np.array(column.colors())[np.floor(layer).astype(int) % len(column.layers)]
    rgb = colors * (0.2 + 0.8 * shade[..., None])
    return (np.clip(rgb, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)


def slopes(world: np.ndarray, cell: float) -> np.ndarray:
    gy, gx = np.gradient(world, cell)
    return np.degrees(np.arctan(np.hypot(gx, gy)))[2:-2, 2:-2]


def along(world: np.ndarray, cell: float, azimuth: float) -> tuple[float, float]:
    """Median gradient (inner 80%) of the slopes rising towards ``azimuth`` (scarps
    facing up-dip when it is the dip direction) and of those falling that way (dip
    slopes), cells steeper than 1 degree along it."""
    gy, gx = np.gradient(world, cell)
    a = math.radians(azimuth)
    g = gx * math.sin(a) + gy * math.cos(a)
    m = world.shape[0] // 10
    g = g[m:-m, m:-m]
    least = math.tan(math.radians(1.0))
    return float(np.median(g[g > least])), float(np.median(-g[g < -least]))


def measure(name: str, terrain: Terrain, start: np.ndarray) -> dict[str, float]:
    cell = terrain.cell_size
    world = terrain.world_height()
    column = terrain.rock
    s0, s1 = slopes(start, cell), slopes(world, cell)
    out = {"relief_before": float(np.ptp(start)), "relief_after": float(np.ptp(world)),
           "mean_lowering": float((start - world).mean()),
           "slope_median_before": float(np.median(s0)),
           "slope_median_after": float(np.median(s1)),
           "slope_p90_after": float(np.percentile(s1, 90))}
    index = np.floor(terrain.rock_layer).astype(int)
    hard = np.array([layer.erodibility < 1.0 for layer in column.layers])
    out["share_on_hard_rock"] = float(hard[index].mean())
    frame = column.frame
    if frame.dip > 0.0:
        scarp, dip = along(world, cell, frame.dip_direction)
        across = along(world, cell, (frame.dip_direction + 90.0) % 360.0)
        out.update(scarp_gradient=scarp, dip_slope_gradient=dip, scarp_over_dip=scarp / dip,
                   across_strike_ratio=across[0] / across[1],
                   tan_dip=math.tan(math.radians(frame.dip)))
    if frame.fold_amplitude > 0.0:
        az = channel_azimuths(world, cell)
        hist, edges = np.histogram(az, bins=12, range=(0.0, 180.0))
        k = int(hist.argmax())
        near = np.abs((az - frame.fold_axis + 90.0) % 180.0 - 90.0) <= 15.0
        out.update(channel_peak_deg=0.5 * (edges[k] + edges[k + 1]),
                   fold_axis_deg=frame.fold_axis, channels_near_axis=float(near.mean()))
        plain = Terrain.from_heights(start, cell)
        preset = find_preset(name)
        Simulation(plain, preset.enabled_params(), seed=preset.seed,
                   particles=preset.work(plain)).run()
        az0 = channel_azimuths(plain.world_height(), cell)
        out["channels_near_axis_without_rock"] = float(
            (np.abs((az0 - frame.fold_axis + 90.0) % 180.0 - 90.0) <= 15.0).mean())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=256, help="grid side (256)")
    ap.add_argument("--only", nargs="*", default=list(PICTURES), help="presets to run")
    ap.add_argument("--output-dir", default=str(ROOT / "docs"))
    args = ap.parse_args()
    start = plateau(args.size)
    for name in args.only:
        preset = find_preset(name)
        terrain = Terrain.from_heights(start, CELL, rock=preset.rock)
        before = picture(terrain, preset.rock)
        t0 = time.perf_counter()
        Simulation(terrain, preset.enabled_params(), seed=preset.seed,
                   particles=preset.work(terrain)).run()
        seconds = time.perf_counter() - t0
        after = picture(terrain, preset.rock)
        n = args.size
        gap = np.full((n, 4, 3), 255, np.uint8)
        width = 2 * n + 4
        strip = np.concatenate([label("before", n, 2), np.full((14, 4, 3), 255, np.uint8),
                                label(f"after {name}", n, 2)], axis=1)
        image = np.concatenate([strip, np.concatenate([before, gap, after], axis=1)], axis=0)
        assert image.shape[1] == width
        path = Path(args.output_dir) / PICTURES[name]
        save_png(path, image)
        numbers = measure(name, terrain, start)
        print(f"{name}: {seconds:.1f} s on {n}x{n} -> {path} ({path.stat().st_size // 1024} KB)")
        for key, value in numbers.items():
            print(f"  {key:32s} {value:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
