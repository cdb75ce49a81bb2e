"""Command line: erode heightmaps without Blender; one module per command.

    python -m simcore generate --size 256 --output hills.npy
    python -m simcore erode --preset default --input hills.npy --output eroded.npz
    python -m simcore presets
    python -m simcore shade --input eroded.npz --output eroded.png
    python -m simcore report eroded.npz
    python -m simcore export eroded.npz --output eroded.exr
    python -m simcore refine eroded.npz --output fine.npz
    python -m simcore sweep --preset default,alpine --seed 1..4 --input maps/*.npy --output sw/
    python -m simcore tile --input world.npy --cell-size 30 --tiles 2 --output world.zarr
"""

from __future__ import annotations

import argparse
import sys

from ..errors import CliError, UserError
from ..pipeline.arguments import overrides
from . import (
    engine_tiles,
    erode,
    export,
    generate,
    presets,
    refine,
    report,
    shade,
    sweep,
    tile,
)

__all__ = ["CliError", "build_parser", "main", "overrides"]

EPILOG = """\
examples:
  python -m simcore generate --size 512 --seed 4 --output hills.npy
  python -m simcore erode --preset default --input hills.npy --cell-size 30 --output eroded.npy
  python -m simcore erode --preset default --input hills.npy --cell-size 30 --output state.npz \\
      --particles 500000 --set droplets.Kq=20 --set droplets.Ki=0.3
  python -m simcore erode --preset default --input state.npz --output more.npz  # resume
  python -m simcore export state.npz --output state.exr  # every layer, one EXR
  python -m simcore refine state.npz --output fine.npz  # twice as fine, whole state

heights in .npy files are world units; --cell-size is the world distance between
neighbouring samples (default 1; `generate` makes 30 m cells and prints the value to
pass). For a map in other units (a Blender grid 2 units wide, heights 0..1), --extent
says the world size it stands for: `--extent 5000` treats its longer side as 5 km,
heights scaled alike (the presets are tuned on kilometre-scale uplands), and a .npy
output comes back in the map's units. An .npz output holds the whole state (every array
by name, plus 'height' in world units and JSON 'metadata' whose 'units' names each
array's unit: 'cell' = world length / cell_size); pass it as
--input to continue a run with the same random sequence. --particles 0 does no work
(an .npy input is written out as a state). An .exr output (or `export`) is a
multi-layer EXR as the Blender add-on writes and imports it: 'height' and each float
layer the add-on gives the terrain (bedrock, sediment_depth, change_<process>, ...),
one 32-bit float channel each, lengths in world units; the header holds cell_size_x,
cell_size_y, units and the run's metadata (needs: pip install OpenImageIO).

exit codes: 0 done, 2 a problem with the input, parameters or output, or a tile or
sweep task that failed on every try (one line on stderr says what to do; nothing is
written), 130 interrupted (nothing written but a
sweep's finished runs, which go to <output>.interrupted-<time> while the earlier sweep
in <output> stays as it was).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m simcore", description="Erode terrain heightmaps: rain droplets, "
        "snowballs, rivers and lakes, wind and dunes, hillslopes, trees and ridges. "
        "No Blender needed.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    generate.add_parser(sub)
    erode.add_parser(sub, EPILOG)
    presets.add_parser(sub)
    report.add_parser(sub)
    export.add_parser(sub)
    refine.add_parser(sub)
    engine_tiles.add_parser(sub)
    shade.add_parser(sub)
    sweep.add_parser(sub)
    tile.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; 0 done, 2 user error (one line on stderr), 130 interrupted."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: out of memory; use a smaller grid or close other programs",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; nothing written (but a sweep keeps the runs it had finished)",
              file=sys.stderr)
        return 130
