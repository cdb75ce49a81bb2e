"""``python -m simcore refine``: a saved state on the grid twice as fine, carrying its
whole state (docs/refine.md)."""

from __future__ import annotations

import argparse
import sys
import time

from ..errors import CliError
from ..pipeline import arguments


def add_parser(sub) -> None:
    r = sub.add_parser("refine", help="a state on the grid twice as fine (2n-1 samples a "
                       "side at half the cell size, the same extent), every layer, lake, "
                       "tree and change carried")
    r.add_argument("state", help=".npz state (erode --output X.npz)")
    r.add_argument("--output", required=True, help="where to write the refined .npz state")
    r.add_argument("--quiet", action="store_true", help="no message on stderr")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..engine.memory import check_refine
    from ..engine.refine import refine
    from ..formats.states import grid_shape, load_state, save_state, state_bytes
    from ..processes import PROCESSES

    arguments.output(args.output, (".npz",))
    if not args.state.lower().endswith(".npz"):
        raise CliError(f"{args.state}: refine reads an .npz state (erode --output X.npz); "
                       "for a .npy heightmap, erode it with --particles 0 to an .npz first")
    shape = grid_shape(args.state)
    if shape is not None:  # before reading: at most one change record per process
        check_refine(shape, len(PROCESSES))
    t0 = time.perf_counter()
    terrain, meta = load_state(args.state)
    fine = refine(terrain)
    del terrain
    out = arguments.output(args.output, (".npz",), state_bytes(fine.shape, len(fine.changes)))
    save_state(out, fine, meta)
    if not args.quiet:
        rows, cols = fine.shape
        print(f"wrote {out}: {rows}x{cols}, cells of {fine.cell_size:g}, in "
              f"{time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return 0
