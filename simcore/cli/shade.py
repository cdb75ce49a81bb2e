"""``python -m simcore shade``: a shaded-relief PNG of a heightmap or a state."""

from __future__ import annotations

import argparse

from ..errors import CliError
from ..pipeline import arguments


def add_parser(sub) -> None:
    s = sub.add_parser("shade", help="shaded-relief PNG of a heightmap or state "
                       "(pools of a state in blue)")
    s.add_argument("--input", required=True, help=".npy heightmap or .npz state")
    s.add_argument("--output", required=True, help="where to write the .png")
    s.add_argument("--cell-size", type=float, default=1.0, help="for a .npy input (1)")
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..fileio import check_memory
    from ..formats.images import save_png, shaded_relief
    from ..formats.states import load_heights, load_state
    from ..terrain import Terrain

    out = arguments.output(args.output, (".png",))
    name = args.input.lower()
    if name.endswith(".npz"):
        terrain, _ = load_state(args.input)
    elif name.endswith(".npy"):
        terrain = Terrain.from_heights(load_heights(args.input),
                                       arguments.cell_size(args.cell_size))
    else:
        raise CliError(f"--input {args.input}: use a .npy heightmap or an .npz state")
    rows, cols = terrain.shape
    check_memory(rows * cols * 8 * 12, f"shading a {rows}x{cols} grid")
    arguments.output(args.output, (".png",), 3 * rows * cols + rows + 2**16)
    pool = terrain.pool if terrain.pool.any() else None  # lakes and sea in blue
    save_png(out, shaded_relief(terrain.height(), pool=pool))
    return 0
