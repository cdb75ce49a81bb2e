"""Contact sheet: every shipped preset on the same generated terrain, shaded.

    python -m tools.contact_sheet [--size 256] [--seed 4] [--output docs/presets_contact_sheet.png]
    python build.py demo --contact-sheet

The first tile is the terrain before erosion (``simcore generate --raw --size N --seed
S``: 30 m cells; with --drained, generate's default drained uplands), then one tile per
preset after erosion, labelled with the preset id and its slope median / 99th
percentile (degrees). Sandy tint = loose material, blue = standing water (pools). Also
prints the landform table (world units; lakes = pools of at least 20 cells) the tiles
show, with dry closed basins, lake share and the channels' concavity theta before ->
after each preset, with the fit's r². Needs only numpy (no Blender).
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
from simcore.formats.images import save_png, shaded_relief  # noqa: E402
from simcore.formats.presets import find_preset, preset_files  # noqa: E402
from simcore.generators.noise import DEFAULT_CELL_SIZE, upland_terrain  # noqa: E402
from simcore.generators.uplands import drained_uplands  # noqa: E402
from simcore.processes import hydrology  # noqa: E402
from simcore.terrain import Terrain  # noqa: E402

# a 3x5 pixel font: enough for preset ids and numbers
_FONT = {
    "a": "010101111101101", "b": "110101110101110", "c": "011100100100011",
    "d": "110101101101110", "e": "111100110100111", "f": "111100110100100",
    "g": "011100101101011", "h": "101101111101101", "i": "111010010010111",
    "j": "001001001101010", "k": "101101110101101", "l": "100100100100111",
    "m": "101111111101101", "n": "110101101101101", "o": "010101101101010",
    "p": "110101110100100", "q": "010101101110011", "r": "110101110101101",
    "s": "011100010001110", "t": "111010010010010", "u": "101101101101111",
    "v": "101101101101010", "w": "101101111111101", "x": "101101010101101",
    "y": "101101010010010", "z": "111001010100111", "0": "111101101101111",
    "1": "010110010010111", "2": "110001010100111", "3": "110001010001110",
    "4": "101101111001001", "5": "111100110001110", "6": "011100111101111",
    "7": "111001010010010", "8": "111101111101111", "9": "111101111001110",
    "_": "000000000000111", " ": "000000000000000", "/": "001001010100100",
    ".": "000000000000010", "-": "000000111000000", "%": "101001010100101",
    "(": "010100100100010", ")": "010001001001010",
}


def label(text: str, width: int, scale: int = 3) -> np.ndarray:
    """A white strip ``width`` wide with ``text`` in black (3x5 font, ``scale`` x)."""
    h = 7 * scale
    strip = np.full((h, width, 3), 255, np.uint8)
    x = scale
    for ch in text.lower():
        glyph = np.array([int(b) for b in _FONT.get(ch, _FONT[" "])], bool).reshape(5, 3)
        big = np.kron(glyph, np.ones((scale, scale), bool))
        if x + big.shape[1] > width:
            break
        strip[scale:scale + big.shape[0], x:x + big.shape[1]][big] = 0
        x += 4 * scale
    return strip


def erode(heights: np.ndarray, cell: float, name: str) -> Terrain:
    preset = find_preset(name)
    terrain = Terrain.from_heights(heights, cell, rock=preset.rock)
    Simulation(terrain, preset.enabled_params(), seed=preset.seed,
               particles=preset.work(terrain)).run()
    return terrain


def tile(height: np.ndarray, sediment: np.ndarray | None, text: str,
         pool: np.ndarray | None = None) -> np.ndarray:
    img = shaded_relief(height, sediment, pool=pool)
    return np.concatenate([label(text, img.shape[1]), img], axis=0)


def _drainage(height: np.ndarray, cell: float, pool: np.ndarray | None = None,
              theta_before: float | None = None) -> str:
    """Dry closed basins deeper than 1 m (% of the map; lakes count at their surface),
    the % of the map under lakes and the slope-area concavity with its r² (after
    ``theta_before``, the start's, when given)."""
    water = np.zeros_like(height) if pool is None else pool
    closed = 100.0 * landforms.closed_basin_share(height + water, cell)
    fit = landforms.slope_area(height, cell)
    before = "" if theta_before is None else f"{theta_before:.2f}->"
    return (f"{closed:7.2f} {100.0 * float((water > 0).mean()):6.2f} "
            f"{before + format(fit['theta'], '.2f'):>10s} {fit['r2']:4.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=256, help="grid side (256)")
    ap.add_argument("--seed", type=int, default=4, help="terrain seed (4)")
    ap.add_argument("--columns", type=int, default=4, help="tiles per row (4)")
    ap.add_argument("--drained", action="store_true",
                    help="start from generate's drained uplands instead of the raw noise")
    ap.add_argument("--output", default=str(ROOT / "docs" / "presets_contact_sheet.png"))
    args = ap.parse_args()
    cell = DEFAULT_CELL_SIZE
    make = drained_uplands if args.drained else upland_terrain
    heights = make(args.size, seed=args.seed, cell_size=cell)
    st = landforms.slope_stats(heights / cell)
    tiles = [tile(heights / cell, None,
                  f"before {st['p50']:.0f}/{st['p99']:.0f}")]
    theta0 = landforms.slope_area(heights / cell, cell)["theta"]
    print(f"{'preset':18s}  p50   p99  %>45 peaks  eroded(m3) lakes  s     closed% lake% "
          f"     theta  r2")
    print(f"{'(generated)':18s} {st['p50']:5.1f} {st['p99']:5.1f} {st['pct45']:5.1f} "
          f"{st['peaks']:5.1f} {'':22s}{_drainage(heights / cell, cell)}")
    for name in preset_files():
        t0 = time.perf_counter()
        terrain = erode(heights, cell, name)
        st = landforms.slope_stats(terrain.height())
        dh = terrain.world_height() - heights
        vol = float(np.maximum(-dh, 0).sum()) * cell * cell
        drained = _drainage(terrain.height(), cell, terrain.pool, theta0)
        print(f"{name:18s} {st['p50']:5.1f} {st['p99']:5.1f} {st['pct45']:5.1f} "
              f"{st['peaks']:5.1f} {vol:10.3g} {len(hydrology.lakes(terrain, 20)):5d} "
              f"{time.perf_counter() - t0:5.1f} {drained}", flush=True)
        tiles.append(tile(terrain.height(), terrain.sediment,
                          f"{name} {st['p50']:.0f}/{st['p99']:.0f}", terrain.pool))
    gap = 6
    h, w = tiles[0].shape[:2]
    cols = args.columns
    rows = -(-len(tiles) // cols)
    sheet = np.full((rows * (h + gap) + gap, cols * (w + gap) + gap, 3), 255, np.uint8)
    for i, t in enumerate(tiles):
        r, c = divmod(i, cols)
        sheet[gap + r * (h + gap):gap + r * (h + gap) + h,
              gap + c * (w + gap):gap + c * (w + gap) + w] = t
    save_png(args.output, sheet)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
