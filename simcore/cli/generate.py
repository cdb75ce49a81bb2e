"""``python -m simcore generate``: a terrain to erode, drained uplands or raw noise."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..errors import CliError
from ..fileio import check_memory
from ..formats.states import heights_bytes, save_heights
from ..pipeline import arguments
from ..terrain import BYTES_PER_CELL, MAX_ABS_VALUE, MAX_CELLS, MAX_SIDE


def add_parser(sub) -> None:
    g = sub.add_parser("generate", help="make a terrain (.npy): drained uplands, or raw "
                       "fractal noise with --raw")
    g.add_argument("--size", type=int, default=256, help="grid side in samples (256)")
    g.add_argument("--rows", type=int, help="rows, if not square")
    g.add_argument("--cols", type=int, help="columns, if not square")
    g.add_argument("--seed", type=int, default=0, help="noise seed (0)")
    g.add_argument("--relief", type=float,
                   help="height range in world units (drained: what two million years "
                   "of evolution make, about 0.09 x the extent, 690 for 256 cells of "
                   "30; --raw: 0.12 x the extent, 920)")
    g.add_argument("--raw", action="store_true",
                   help="the fractal noise itself, without the evolution that drains it "
                   "(about a fifth of it in closed basins: what generate made before the "
                   "landscape process)")
    g.add_argument("--cell-size", type=float, default=30.0,
                   help="world size of a cell, e.g. metres (30, like a 1-arc-second DEM)")
    g.add_argument("--output", required=True, help="where to write the .npy")
    g.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..generators.noise import upland_terrain
    from ..generators.uplands import drained_uplands

    rows = args.size if args.rows is None else args.rows
    cols = args.size if args.cols is None else args.cols
    if rows < 3 or cols < 3 or rows * cols > MAX_CELLS:
        raise CliError(f"grid {rows}x{cols}: sides must be >= 3 and the grid at most "
                       f"{MAX_SIDE}x{MAX_SIDE}")
    seed = arguments.seed(args.seed)
    cell = arguments.cell_size(args.cell_size)
    relief = args.relief
    if relief is not None and not 0 <= relief <= MAX_ABS_VALUE * cell:  # also refuses NaN
        raise CliError(f"--relief must be a number from 0 to {MAX_ABS_VALUE * cell:g} "
                       f"(world units), got {relief!r}")
    out = arguments.output(args.output, (".npy",), heights_bytes((rows, cols)))
    if args.raw:
        check_memory(rows * cols * 8 * 6, f"a {rows}x{cols} terrain")
        heights = upland_terrain(rows, cols, seed=seed, cell_size=cell, relief=relief)
    else:  # the terrain, its scratch and the drainage arrays of an evolution
        check_memory(rows * cols * (BYTES_PER_CELL + 160), f"a {rows}x{cols} landscape")
        heights = drained_uplands(rows, cols, seed=seed, cell_size=cell, relief=relief)
    if not np.isfinite(heights).all() or np.abs(heights).max() > MAX_ABS_VALUE * cell:
        raise CliError(f"--relief {relief} with --cell-size {cell} gives heights out of "
                       "range; use smaller values")
    save_heights(out, heights)
    what = "fractal noise" if args.raw else "drained uplands"
    print(f"wrote {out} ({what}, {rows}x{cols} cells of {cell:g}, heights "
          f"0..{heights.max():g}); erode it with --cell-size {cell:g}", file=sys.stderr)
    return 0
