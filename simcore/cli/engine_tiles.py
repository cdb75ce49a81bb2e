"""``python -m simcore engine-tiles``: heights and layers cut into Unreal or Unity
terrain tiles (simcore/formats/engine_tiles.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import CliError
from ..pipeline import arguments


def add_parser(sub) -> None:
    t = sub.add_parser("engine-tiles", help="heights and layers as Unreal or Unity "
                       "terrain tiles (16-bit PNG/RAW, shared edges, JSON sidecar)")
    t.add_argument("state", help=".npz state (heights and layers) or .npy heightmap")
    t.add_argument("--engine", required=True, choices=("unreal", "unity"))
    t.add_argument("--size", type=int, required=True,
                   help="vertices per tile side: unreal 127 253 505 1009 2017 4033 8129; "
                   "unity 33 65 129 257 513 1025 2049 4097")
    t.add_argument("--out", required=True, help="folder for the tiles and the sidecar "
                   "(made if missing)")
    t.add_argument("--tiles", metavar="XxY", help="tiles across and down, e.g. 2x2 "
                   "(default: as many as keep the map's detail); the map is resampled "
                   "once (bilinear) when it is not tiles x (size - 1) + 1 vertices")
    t.add_argument("--format", choices=("png", "r16", "both"), default="png",
                   help="height files: 16-bit PNG, 16-bit little-endian RAW, or both")
    t.add_argument("--layer-bits", type=int, choices=(8, 16), default=8,
                   help="bits of the layer weight maps (8)")
    t.add_argument("--no-layers", action="store_true", help="heights only")
    t.add_argument("--name", help="file name prefix (default: the input's name + "
                   "_tiles, apart from a map export's <name>.json)")
    t.add_argument("--cell-size", type=float, help="for a .npy input: world distance "
                   "between samples (1)")
    t.add_argument("--quiet", action="store_true", help="no message on stderr")
    t.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..formats import engine_tiles as et
    from ..formats.states import load_heights, load_state

    et.check_size(args.engine, args.size)
    count = None if args.tiles is None else arguments.tiles(args.tiles)
    tiles = None if count is None else (count.across, count.down)
    name = args.state.lower()
    if name.endswith(".npz"):
        if args.cell_size is not None:
            raise CliError("--cell-size cannot change the scale of a saved state (it holds "
                           "world units)")
        terrain, meta = load_state(args.state)
        heights, cell = terrain.world_height(), float(terrain.cell_size)
        layers, fractions = ({}, ()) if args.no_layers else et.state_layers(terrain)
        facts = {k: meta[k] for k in ("seed", "preset", "rounds_done") if k in meta}
    elif name.endswith(".npy"):
        heights, cell = load_heights(args.state), arguments.cell_size(args.cell_size)
        layers, fractions, facts = {}, (), {}
    else:
        raise CliError(f"{args.state}: use an .npz state or a .npy heightmap")
    formats = ("png", "r16") if args.format == "both" else (args.format,)
    files, side = et.write_tiles(
        args.out, args.name or f"{Path(args.state).stem}_tiles", heights, cell, args.engine,
        args.size, layers, fractions, tiles, formats, args.layer_bits,
        facts={"source_file": Path(args.state).name, **facts})
    for text in side["warnings"]:
        print(f"warning: {text}", file=sys.stderr)
    if not args.quiet:
        print(f"wrote {side['tiles_x']}x{side['tiles_y']} {args.engine} tiles of "
              f"{args.size} ({len(files)} files) to {files[-1].parent}; sidecar "
              f"{files[-1].name}", file=sys.stderr)
    return 0
