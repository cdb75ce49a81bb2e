"""Batch entry: ``blender -b scene.blend -c terrain_erosion --object Terrain --preset
default --save``. ``main(argv)`` is a plain function (the bpy module cannot run -c, so
tests call it directly)."""

from __future__ import annotations

import argparse
import sys

import bpy

from .grid import GridError
from .job import ErosionJob, JobEnded
from .simcore.params import ParameterError
from .simcore.presets import find_preset
from .simcore.terrain import TerrainError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="blender -b FILE.blend -c terrain_erosion",
        description="Erode a grid mesh object of the loaded .blend with a preset.")
    p.add_argument("--object", required=True, help="name of the grid mesh object")
    p.add_argument("--preset", help="preset name or .toml path (default: the object's "
                                    "own settings)")
    p.add_argument("--seed", type=int, help="override the seed")
    p.add_argument("--particles", type=int, help="override the amount of work")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a parameter, e.g. droplets.Kq=5 (repeatable)")
    p.add_argument("--save", action="store_true", help="save the .blend afterwards")
    p.add_argument("--save-as", metavar="PATH", help="save the result to another .blend")
    return p


def main(argv: list[str]) -> int:
    """Run; return 0 on success, 2 on a user error (message on stderr)."""
    from .simcore.cli import CliError, parse_set

    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage
        return int(exc.code or 0)
    try:
        obj = bpy.data.objects.get(args.object)
        if obj is None:
            names = ", ".join(o.name for o in bpy.data.objects if o.type == 'MESH')
            raise CliError(f"no object named '{args.object}'; mesh objects: "
                           f"{names or '(none)'}")
        settings = obj.terrain_erosion
        if args.preset:
            settings.apply_preset(find_preset(args.preset))
        preset = settings.to_preset(settings.preset)
        overrides = parse_set(args.set)
        if args.seed is not None:
            overrides["seed"] = args.seed
        if args.particles is not None:
            overrides["particles"] = args.particles
        settings.apply_preset(preset.with_overrides(overrides))
        job = ErosionJob(obj)
        print(f"terrain_erosion: {obj.name}: {job.grid.cols}x{job.grid.rows} grid, "
              f"{job.sim.target_particles} particles, seed {job.sim.seed}", flush=True)
        progress = job.run(lambda p: print(f"terrain_erosion: {100 * p.fraction:5.1f}%",
                                           flush=True))
        print(f"terrain_erosion: done, {progress.particles} particles in "
              f"{progress.seconds:.1f} s", flush=True)
    except (CliError, GridError, ParameterError, TerrainError, JobEnded) as exc:
        print(f"terrain_erosion: error: {exc}", file=sys.stderr, flush=True)
        return 2
    if args.save_as:
        bpy.ops.wm.save_as_mainfile(filepath=args.save_as, copy=True)
    elif args.save:
        if not bpy.data.filepath:
            print("terrain_erosion: error: --save needs a .blend loaded from a file; use "
                  "--save-as PATH", file=sys.stderr)
            return 2
        bpy.ops.wm.save_mainfile()
    return 0


_handles: list = []


def register() -> None:
    if hasattr(bpy.utils, "register_cli_command"):
        _handles.append(bpy.utils.register_cli_command("terrain_erosion", main))


def unregister() -> None:
    while _handles:
        bpy.utils.unregister_cli_command(_handles.pop())
