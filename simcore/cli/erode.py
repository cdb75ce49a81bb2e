"""``python -m simcore erode``: run a preset on a heightmap or a saved state."""

from __future__ import annotations

import argparse
import sys
import time

from ..pipeline import arguments


def add_parser(sub, epilog: str) -> None:
    e = sub.add_parser("erode", help="erode a heightmap with a preset",
                       epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("--preset", default="default",
                   help="preset name (see 'presets') or path to a .toml (default)")
    e.add_argument("--input", required=True, help=".npy heightmap or .npz state")
    e.add_argument("--output", required=True,
                   help=".npy (heights, world units), .npz (whole state) or .exr (heights "
                   "and layers as one multi-layer EXR, as the Blender add-on writes it)")
    e.add_argument("--cell-size", type=float,
                   help="distance between samples of a .npy input, in its own units (1)")
    e.add_argument("--extent", type=float, metavar="WORLD",
                   help="the world size a .npy map stands for along its longer side "
                   "(e.g. 5000: 5 km); its heights and cells scale alike, and a .npy "
                   "output is written back in the input's units (default: the preset's "
                   "real_size if it sets one, else the map's units are world units)")
    e.add_argument("--vertical-exaggeration", type=float, default=1.0, metavar="X",
                   help="how much a .npy map's heights are exaggerated (1: true); the "
                   "simulation sees them divided by X, a .npy output multiplied back")
    e.add_argument("--seed", type=int, help="override the preset's seed")
    e.add_argument("--particles", type=int, help="override the total particle count")
    e.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a parameter, e.g. droplets.Kq=5 (repeatable)")
    e.add_argument("--to", type=int, metavar="SIZE",
                   help="coarse to fine: erode up to SIZE samples on the longer side, the "
                   "grid refined x2 (n -> 2n - 1) between levels (docs/refine.md)")
    e.add_argument("--levels", type=int, metavar="K",
                   help="coarse to fine in K levels: a heightmap finer than the coarsest "
                   "is coarsened to it first (default: the input's grid and the "
                   "refinements up to --to)")
    e.add_argument("--quiet", action="store_true", help="no progress on stderr")
    e.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..formats.presets import find_preset
    from ..formats.states import heights_bytes, save_heights, save_state, state_bytes
    from ..pipeline.start import load_start
    from .export import openimageio, save_exr

    outputs = (".npy", ".npz", ".exr")
    out = arguments.output(args.output, outputs)
    if args.cell_size is not None:
        arguments.cell_size(args.cell_size)
    preset = find_preset(args.preset)
    preset = preset.with_overrides(arguments.overrides(args.set, seed=args.seed,
                                                       particles=args.particles))
    start = load_start(args.input, preset, cell_size=args.cell_size, extent=args.extent,
                       vertical=args.vertical_exaggeration)  # size and memory checked
    levels = None
    if args.to is not None or args.levels is not None:
        from ..pipeline.schedule import levels_of
        levels = levels_of(start, args.to, args.levels)
    rows, cols = start.terrain.shape if levels is None else levels[0][-1]
    estimate = (state_bytes((rows, cols), len(preset.enabled_params()))
                if out.suffix.lower() != ".npy" else heights_bytes((rows, cols)))
    arguments.output(args.output, outputs, estimate)
    oiio = openimageio() if out.suffix.lower() == ".exr" else None
    t0 = time.perf_counter()
    if levels is not None:
        terrain, meta = _levels(args, start, preset, levels)
    else:
        terrain, meta = _direct(args, start, preset, start.terrain)
    meta["preset"] = preset.name
    if out.suffix.lower() == ".npz":
        save_state(out, terrain, meta)
    elif oiio is not None:
        save_exr(out, terrain, meta, oiio)
    else:  # in the input's units
        back = start.back
        save_heights(out, terrain.world_height() * back if back != 1.0 else
                     terrain.world_height())
    if not args.quiet:
        print(f"wrote {out} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return 0


def _reporter(args: argparse.Namespace):
    """The progress lines of a run on stderr (none with --quiet)."""
    t0 = time.perf_counter()

    def report(p) -> None:
        if not args.quiet:
            print(f"  {100 * p.fraction:5.1f}%  {p.particles} particles  "
                  f"{time.perf_counter() - t0:6.1f}s", file=sys.stderr, flush=True)
    return report


def _levels(args: argparse.Namespace, start, preset, levels):
    """The coarse-to-fine run (pipeline/schedule.py), its progress on stderr."""
    from ..pipeline.schedule import run_levels
    shapes, coarser = levels
    if not args.quiet:
        print(f"eroding {shapes[-1][0]}x{shapes[-1][1]} with preset '{preset.name}' in "
              f"{len(shapes)} levels from {shapes[0][0]}x{shapes[0][1]}, seed "
              f"{preset.seed}", file=sys.stderr)

    def on_level(level, terrain, names, rounds) -> None:
        if not args.quiet:
            rows, cols = terrain.shape
            print(f"level {level + 1}/{len(shapes)}: {rows}x{cols}, cells of "
                  f"{terrain.cell_size:g}, {rounds} rounds of {', '.join(names)}",
                  file=sys.stderr, flush=True)
    return run_levels(start, preset, shapes, coarser, on_level, _reporter(args))


def _direct(args: argparse.Namespace, start, preset, terrain):
    """The run on the input's grid."""
    from ..engine.simulation import Simulation
    from ..engine.timing import long_run_note
    rows, cols = terrain.shape
    sim = Simulation(terrain, preset.enabled_params(), seed=preset.seed,
                     particles=preset.work(terrain), rounds_done=start.rounds_done)
    if not args.quiet:
        print(f"eroding {rows}x{cols} with preset '{preset.name}' "
              f"({', '.join(sim.processes)}), {sim.target_particles} particles, "
              f"seed {preset.seed}", file=sys.stderr)
        for text in sim.advice():
            print(f"note: {text}", file=sys.stderr)
        note = long_run_note(sim)
        if note:
            print(note, file=sys.stderr, flush=True)
    sim.run(_reporter(args), report_every=1.0)
    return terrain, sim.metadata()
