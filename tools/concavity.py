"""Concavity harness: run presets on the drained generated uplands (the concavity
test's starts: 3.84 km at 30 m and 15 m cells, or a larger world with ``--cells``) with
one change at a time, and print the channels' slope-area fit and the slope percentiles.

    python -m tools.concavity default rivers_and_lakes --set hydrology.gather=0.75
    python -m tools.concavity snowball_preview --sizes 30m --cells 256
    python -m tools.concavity snowball_preview --try snowball.gather=1 --try snowball.gather=2

Each ``--try`` (comma-separated overrides) is one more run of every preset on every
size, after the run with the ``--set`` overrides alone; ``--cache DIR`` keeps the
generated starts between calls.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from simcore.analysis.report import landform_figures
from simcore.engine.simulation import Simulation
from simcore.formats.presets import find_preset
from simcore.generators.uplands import drained_uplands
from simcore.terrain import Terrain

#: the concavity test's worlds: (cells per side at 3.84 km, cell size)
SIZES = {"30m": (128, 30.0), "15m": (256, 15.0)}
COLUMNS = ("theta", "theta_r2", "slope_p50", "slope_p90", "slope_p99", "steeper_45", "cut",
           "fill")


def _value(text: str) -> object:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text)
    except ValueError:
        return float(text)


def start(size: str, scale: int = 1, cache: str = "") -> tuple[np.ndarray, float]:
    """World heights and cell size of the drained uplands of ``size`` (``scale`` x the
    test's cells per side, the same cell size: a larger world), kept in ``cache`` (a
    folder) when given."""
    n, cell = SIZES[size]
    path = os.path.join(cache, f"uplands_{n * scale}_{cell:g}.npy") if cache else ""
    if path and os.path.exists(path):
        return np.load(path), cell
    heights = drained_uplands(n * scale, seed=3, cell_size=cell)
    if path:
        os.makedirs(cache, exist_ok=True)
        np.save(path, heights)
    return heights, cell


def _overrides(items: list[str], ap: argparse.ArgumentParser) -> dict:
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        if not value:
            ap.error(f"{item}: write it as process.param=value")
        out[key] = _value(value)
    return out


def run(name: str, heights: np.ndarray, cell: float, overrides: dict) -> dict[str, float]:
    """The report's figures after preset ``name`` with ``overrides`` on ``heights``."""
    preset = find_preset(name).with_overrides(overrides)
    terrain = Terrain.from_heights(heights, cell, rock=preset.rock)
    Simulation(terrain, preset.enabled_params(), seed=preset.seed,
               particles=preset.work(terrain)).run()
    dh = terrain.world_height() - heights
    # cut and fill: mean lowering and raising over the map, world units
    return {**landform_figures(terrain.height(), cell), "cut": float(np.maximum(-dh, 0).mean()),
            "fill": float(np.maximum(dh, 0).mean())}


def _row(label: str, f: dict[str, float], seconds: float | None = None) -> str:
    cells = " ".join(f"{f.get(c, 0.0):7.3f}" if c.startswith("theta") else
                     f"{f.get(c, 0.0):6.1f}" if c.startswith(("slope", "steep")) else
                     f"{f.get(c, 0.0):6.2f}" for c in COLUMNS)
    tail = f" {seconds:6.1f}s" if seconds is not None else ""
    return f"{label:44s} {cells}{tail}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("presets", nargs="+")
    ap.add_argument("--set", action="append", default=[], metavar="PROCESS.PARAM=VALUE",
                    help="an override for every run (repeatable)")
    ap.add_argument("--sizes", default="30m,15m", help="comma list of 30m, 15m")
    ap.add_argument("--cells", type=int, default=0,
                    help="cells per side at 30 m (a larger world; 15 m gets twice)")
    ap.add_argument("--try", dest="tries", action="append", default=[],
                    metavar="P.K=V,P.K=V", help="one more run with these overrides too")
    ap.add_argument("--no-base", action="store_true",
                    help="only the --try runs (not the run with --set alone)")
    ap.add_argument("--cache", default="", help="folder that keeps the generated starts")
    args = ap.parse_args(argv)
    base = _overrides(args.set, ap)
    runs = [] if args.no_base else [("", base)]
    runs += [(t, {**base, **_overrides(t.split(","), ap)}) for t in args.tries]
    sizes = args.sizes.split(",")
    unknown = [z for z in sizes if z not in SIZES]
    if unknown:
        ap.error(f"--sizes {','.join(unknown)}: use a comma list of {', '.join(SIZES)}")
    scale = max(args.cells // SIZES["30m"][0], 1)
    print(f"{'run':44s} {'theta':>7s} {'r2':>7s} {'p50':>6s} {'p90':>6s} {'p99':>6s} "
          f"{'>45%':>6s} {'cut m':>6s} {'fill m':>6s}")
    for size in sizes:
        heights, cell = start(size, scale, args.cache)
        print(_row(f"start {size}", landform_figures(heights / cell, cell)), flush=True)
        for name in args.presets:
            for label, overrides in runs:
                t = time.perf_counter()
                f = run(name, heights, cell, overrides)
                label = f"{name} {size} " + " ".join(args.set + [label])
                print(_row(label, f, time.perf_counter() - t), flush=True)


if __name__ == "__main__":
    main()
