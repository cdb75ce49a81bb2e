"""``python -m simcore export``: a state's heights and every layer as one multi-layer
EXR, as the Blender add-on writes and imports it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import CliError, UserError
from ..pipeline import arguments


def add_parser(sub) -> None:
    x = sub.add_parser("export", help="a state's heights and every layer as one "
                       "multi-layer 32-bit float EXR (named channels; needs OpenImageIO)")
    x.add_argument("state", help=".npz state (erode --output X.npz)")
    x.add_argument("--output", required=True, help="where to write the .exr")
    x.add_argument("--quiet", action="store_true", help="no message on stderr")
    x.set_defaults(func=run)


def openimageio():
    """The OpenImageIO module, checked before any work (CliError if there is none)."""
    from ..formats.exr import load_openimageio

    try:
        return load_openimageio()
    except UserError as exc:
        raise CliError(f"--output: {exc}") from None


def save_exr(out: Path, terrain, meta: dict, oiio) -> None:
    """A multi-layer EXR of a state, as the Blender add-on writes and imports one: the
    ground as ``height`` and every float layer the add-on would give the terrain
    (``bedrock``, ``sediment_depth``, ``change_<process>``, ...; simcore.analysis.layers.
    exported_maps), lengths in world units (a Blender import takes them as local
    units); the header has the add-on's facts (``cell_size_x``, ``cell_size_y``,
    ``units``, ``rows``, ``cols``, ``real_size``, ...) plus the run's metadata."""
    from .. import __version__
    from ..analysis.layers import exported_maps
    from ..formats import exr
    from ..formats.sidecar import state_header

    maps = exported_maps(terrain, float(terrain.cell_size), meta.get("processes") or None)
    h = maps["height"]
    facts = state_header(meta, simcore_version=__version__, shape=terrain.shape,
                         cell_size=terrain.cell_size, channels=list(maps),
                         height_min=float(h.min()), height_max=float(h.max()),
                         row_order=exr.ROW_ORDER)
    exr.write(out, maps, facts, oiio)


def run(args: argparse.Namespace) -> int:
    from ..fileio import check_memory
    from ..formats.states import load_state, state_bytes

    out = arguments.output(args.output, (".exr",))
    if not args.state.lower().endswith(".npz"):
        raise CliError(f"{args.state}: export reads an .npz state (erode --output X.npz)")
    oiio = openimageio()
    terrain, meta = load_state(args.state)
    rows, cols = terrain.shape
    check_memory(rows * cols * 8 * (len(terrain.arrays()) + len(terrain.changes) + 4),
                 f"exporting a {rows}x{cols} grid")
    arguments.output(args.output, (".exr",), state_bytes((rows, cols), len(terrain.changes)))
    save_exr(out, terrain, meta, oiio)
    if not args.quiet:
        print(f"wrote {out}", file=sys.stderr)
    return 0
