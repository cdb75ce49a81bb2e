"""Command line: erode heightmaps without Blender.

    python -m simcore generate --size 256 --output hills.npy
    python -m simcore erode --preset default --input hills.npy --output eroded.npz
    python -m simcore presets
    python -m simcore shade --input eroded.npz --output eroded.png
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from pathlib import Path

from .params import ParameterError
from .terrain import TerrainError

EPILOG = """\
examples:
  python -m simcore generate --size 512 --seed 4 --output hills.npy
  python -m simcore erode --preset default --input hills.npy --output eroded.npy
  python -m simcore erode --preset default --input hills.npy --output state.npz \\
      --particles 500000 --set droplets.Kq=20 --set droplets.Ki=0.3
  python -m simcore erode --preset default --input state.npz --output more.npz  # resume

heights in .npy files are world units; --cell-size is the world distance between
neighbouring samples (default 1). An .npz output holds the whole state (every array
by name, in cell units, plus 'height' in world units and JSON 'metadata'); pass it as
--input to continue a run with the same random sequence.
"""


class CliError(Exception):
    """A user mistake: printed as one line, exit code 2, nothing written."""


def parse_set(items: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--set {item!r}: expected KEY=VALUE, e.g. droplets.Kq=5")
        try:
            value = tomllib.loads(f"v = {text.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        out[key.strip()] = value
    return out


def _check_output(path: str, allowed: tuple[str, ...]) -> Path:
    out = Path(path)
    if out.suffix.lower() not in allowed:
        raise CliError(f"--output {path}: use one of {', '.join(allowed)}")
    if not out.parent.exists():
        raise CliError(f"--output {path}: folder {out.parent} does not exist")
    return out


def cmd_generate(args: argparse.Namespace) -> int:
    from .noise import upland_terrain
    from .state_io import save_heights

    out = _check_output(args.output, (".npy",))
    rows = args.rows or args.size
    cols = args.cols or args.size
    if rows < 3 or cols < 3 or rows * cols > 16384 * 16384:
        raise CliError(f"grid {rows}x{cols}: sides must be >= 3 and the grid at most "
                       "16384x16384")
    if args.cell_size <= 0 or (args.relief is not None and args.relief < 0):
        raise CliError("--cell-size must be > 0 and --relief >= 0")
    heights = upland_terrain(rows, cols, seed=args.seed, cell_size=args.cell_size,
                             relief=args.relief)
    save_heights(out, heights)
    print(f"wrote {out} ({rows}x{cols} cells of {args.cell_size:g}, heights "
          f"0..{heights.max():g}); erode it with --cell-size {args.cell_size:g}",
          file=sys.stderr)
    return 0


def cmd_erode(args: argparse.Namespace) -> int:
    from .presets import find_preset
    from .simulation import Simulation
    from .state_io import load_heights, load_state, save_heights, save_state
    from .terrain import Terrain

    out = _check_output(args.output, (".npy", ".npz"))
    preset = find_preset(args.preset)
    overrides = parse_set(args.set or [])
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.particles is not None:
        overrides["particles"] = args.particles
    preset = preset.with_overrides(overrides)
    rounds_done = 0
    if args.input.lower().endswith(".npz"):
        terrain, meta = load_state(args.input)
        if meta.get("seed") == preset.seed:
            rounds_done = int(meta.get("rounds_done", 0))
        if args.cell_size is not None:
            raise CliError("--cell-size cannot change the cell size of a saved state")
    elif args.input.lower().endswith(".npy"):
        cell = 1.0 if args.cell_size is None else args.cell_size
        terrain = Terrain.from_heights(load_heights(args.input), cell)
    else:
        raise CliError(f"--input {args.input}: use a .npy heightmap or an .npz state")
    if terrain.bedrock.size > 8192 * 8192:
        raise CliError(f"grid {terrain.shape[0]}x{terrain.shape[1]} is larger than "
                       "8192x8192; downsample it first")
    sim = Simulation(terrain, preset.enabled_params(), seed=preset.seed,
                     particles=preset.work(terrain), rounds_done=rounds_done)
    t0 = time.perf_counter()

    def report(p) -> None:
        if not args.quiet:
            print(f"  {100 * p.fraction:5.1f}%  {p.particles} particles  "
                  f"{time.perf_counter() - t0:6.1f}s", file=sys.stderr, flush=True)

    if not args.quiet:
        print(f"eroding {terrain.shape[0]}x{terrain.shape[1]} with preset "
              f"'{preset.name}' ({', '.join(sim.processes)}), {sim.target_particles} "
              f"particles, seed {preset.seed}", file=sys.stderr)
    sim.run(report, report_every=1.0)
    meta = sim.metadata()
    meta["preset"] = preset.name
    if out.suffix.lower() == ".npz":
        save_state(out, terrain, meta)
    else:
        save_heights(out, terrain.world_height())
    if not args.quiet:
        print(f"wrote {out} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    from .presets import load_preset, preset_files

    for name, path in preset_files().items():
        p = load_preset(path)
        print(f"{name:16s} {p.name}: {p.description} "
              f"[{', '.join(p.enabled_params())}; {p.particles} particles]")
    return 0


def cmd_shade(args: argparse.Namespace) -> int:
    from .image import save_png, shaded_relief
    from .state_io import load_heights, load_state

    out = _check_output(args.output, (".png",))
    if args.input.lower().endswith(".npz"):
        terrain, _ = load_state(args.input)
        heights = terrain.height()
    else:
        heights = load_heights(args.input) / args.cell_size
    save_png(out, shaded_relief(heights))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m simcore", description="Erode terrain heightmaps: rain droplets, "
        "snowball erosion (more processes as they land). No Blender needed.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser("generate", help="make a fractal test terrain (.npy)")
    g.add_argument("--size", type=int, default=256, help="grid side in samples (256)")
    g.add_argument("--rows", type=int, help="rows, if not square")
    g.add_argument("--cols", type=int, help="columns, if not square")
    g.add_argument("--seed", type=int, default=0, help="noise seed (0)")
    g.add_argument("--relief", type=float,
                   help="height range in world units (0.12 x the extent: 920 for 256 "
                   "cells of 30)")
    g.add_argument("--cell-size", type=float, default=30.0,
                   help="world size of a cell, e.g. metres (30, like a 1-arc-second DEM)")
    g.add_argument("--output", required=True, help="where to write the .npy")
    g.set_defaults(func=cmd_generate)

    e = sub.add_parser("erode", help="erode a heightmap with a preset",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("--preset", default="default",
                   help="preset name (see 'presets') or path to a .toml (default)")
    e.add_argument("--input", required=True, help=".npy heightmap or .npz state")
    e.add_argument("--output", required=True,
                   help=".npy (heights, world units) or .npz (whole state)")
    e.add_argument("--cell-size", type=float,
                   help="world distance between samples of a .npy input (1)")
    e.add_argument("--seed", type=int, help="override the preset's seed")
    e.add_argument("--particles", type=int, help="override the total particle count")
    e.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a parameter, e.g. droplets.Kq=5 (repeatable)")
    e.add_argument("--quiet", action="store_true", help="no progress on stderr")
    e.set_defaults(func=cmd_erode)

    p = sub.add_parser("presets", help="list the shipped presets")
    p.set_defaults(func=cmd_presets)

    s = sub.add_parser("shade", help="shaded-relief PNG of a heightmap or state")
    s.add_argument("--input", required=True, help=".npy heightmap or .npz state")
    s.add_argument("--output", required=True, help="where to write the .png")
    s.add_argument("--cell-size", type=float, default=1.0, help="for a .npy input (1)")
    s.set_defaults(func=cmd_shade)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "cell_size", None) is not None and not args.cell_size > 0:
        print("error: --cell-size must be a positive number", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except (CliError, ParameterError, TerrainError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; nothing written", file=sys.stderr)
        return 130
