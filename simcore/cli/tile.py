"""``python -m simcore tile``: a big world eroded as overlapping tiles on
dask.distributed into a Zarr store (simcore/distributed/tiles.py, docs/tiles.md)."""

from __future__ import annotations

import argparse

from .cluster import add_cluster_flags


def add_parser(sub) -> None:
    t = sub.add_parser(
        "tile", help="erode a big world as overlapping tiles on dask.distributed, into a "
        "chunked Zarr store (seamless; docs/tiles.md)",
        description="Erode a world in tiles: the global processes (landscape, hydrology, "
        "wind) on the whole map (or a --coarse version of it), then the detail processes "
        "(droplets, snowball, thermal, trees) per tile with overlapping margins, "
        "particles keyed to world position, margins blended. Output: a Zarr store "
        "chunked by tile (heights in world units and every terrain array); "
        "--heightmap-tiles also writes one heightmap per tile.")
    t.add_argument("--preset", default="default", help="preset name or .toml (default)")
    t.add_argument("--input", required=True,
                   help=".npy heightmap, .npz state, or an earlier tiled world's store "
                   "(.zarr folder; read tile by tile, as a .npy)")
    t.add_argument("--output", required=True, help="the Zarr store to write (a folder, "
                   "e.g. world.zarr; written as <output>.partial and renamed when done: "
                   "replaces only a tiled world's store)")
    t.add_argument("--tiles", default="2", metavar="N or XxY",
                   help="tiles per side (2: 2x2) or columns x rows (3x2: 3 across, 2 "
                   "down; as engine-tiles)")
    t.add_argument("--margin", type=int, help="overlap margin in cells on each side, at "
                   "least 32 (default: an eighth of the map's longer side, at least 64, "
                   "at most a tile)")
    t.add_argument("--coarse", type=int, default=1, metavar="F",
                   help="run the global processes on the map downsampled F times (1: "
                   "full resolution, in one worker); with F > 1 and a .npy input no process "
                   "holds the full-resolution map (each tile interpolates the change on "
                   "its own; an .npz state is loaded whole by the command)")
    t.add_argument("--cell-size", type=float, help="cell size of a .npy input (1)")
    t.add_argument("--seed", type=int, help="override the preset's seed")
    t.add_argument("--particles", type=int, help="override the total particle count")
    t.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a parameter, e.g. droplets.Kq=5 (repeatable)")
    t.add_argument("--heightmap-tiles", metavar="FOLDER",
                   help="also write each tile's heights (world units) there as "
                   "tile_r<row>_c<col>: row 0 = the map's first rows (row 0 of the "
                   "input array); a PNG's top row is its tile's first row")
    t.add_argument("--tile-format", choices=("npy", "png"), default="npy",
                   help="format of --heightmap-tiles: .npy (float) or 16-bit gray PNG")
    add_cluster_flags(t)
    t.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..distributed.tiles import tile_command

    return tile_command(args)
