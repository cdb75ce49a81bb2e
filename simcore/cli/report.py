"""``python -m simcore report``: the realism report of a state, before and after."""

from __future__ import annotations

import argparse
import math

from ..errors import CliError
from ..terrain import TerrainError, as_float_grid


def add_parser(sub) -> None:
    r = sub.add_parser("report", help="realism report of a state: slopes, closed basins, "
                       "lakes and their spill levels, channel concavity, relief; before "
                       "and after the run")
    r.add_argument("state", help=".npz state (erode --output X.npz)")
    r.add_argument("--before", help="the start's heights (.npy, world units, or .npz); "
                   "default: rebuilt from the state's books (eroded, deposited, uplifted)")
    r.add_argument("--json", action="store_true", help="the figures as JSON")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from ..analysis.report import format_report, report
    from ..fileio import check_memory
    from ..formats.states import load_heights, load_state

    if not args.state.lower().endswith(".npz"):
        raise CliError(f"{args.state}: the report reads an .npz state (erode --output "
                       "X.npz)")
    terrain, _ = load_state(args.state)
    rows, cols = terrain.shape
    check_memory(rows * cols * 8 * 16, f"a report on a {rows}x{cols} grid")
    before = None
    if args.before:
        name = args.before.lower()
        if name.endswith(".npz"):
            start, _ = load_state(args.before)
            before = start.world_height() / terrain.cell_size
        elif name.endswith(".npy"):
            try:  # finite, in range, a grid: checked like erode's input
                before = as_float_grid("--before", load_heights(args.before)
                                       / terrain.cell_size, None)
            except TerrainError as exc:
                raise CliError(f"--before {args.before}: {exc}") from None
        else:
            raise CliError(f"--before {args.before}: use a .npy heightmap (world units) or "
                           "an .npz state")
        if before.shape != terrain.shape:
            raise CliError(f"--before {args.before}: its grid is {before.shape[0]}x"
                           f"{before.shape[1]}, the state's {rows}x{cols}")
    figures = report(terrain, before)
    print(json.dumps(standard(figures), indent=1, allow_nan=False) if args.json
          else format_report(figures))
    return 0


def standard(value):
    """``value`` with every NaN or infinity (a figure that is undefined here, e.g. the
    concavity of a map without channels) as None: standard JSON's null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: standard(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [standard(v) for v in value]
    return value
