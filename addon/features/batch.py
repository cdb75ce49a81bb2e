"""Batch entry: ``blender -b scene.blend -c terrain_erosion --object Terrain --preset
default --save``. ``main(argv)`` is a plain function (the bpy module cannot run -c, so
tests call it directly)."""

from __future__ import annotations

import argparse
import sys

import bpy

from ..data.job import ErosionJob
from ..data.scale import RealScale
from ..simcore.errors import UserError
from ..simcore.fileio import check_output
from ..simcore.formats.presets import find_preset
from ..ui.properties import INT32_MAX


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="blender -b FILE.blend -c terrain_erosion",
        description="Erode a grid mesh object of the loaded .blend with a preset.")
    p.add_argument("--object", required=True, help="name of the grid mesh object")
    p.add_argument("--preset", help="preset name or .toml path (default: the object's "
                                    "own settings)")
    p.add_argument("--seed", type=int, help="override the seed")
    p.add_argument("--particles", type=int, help="override the amount of work")
    p.add_argument("--real-size", type=float, metavar="METRES",
                   help="the grid's real size: metres across its longer side (0: automatic, "
                        "any object is treated as 5 km; its own width takes it as 1 unit "
                        "= 1 m); saved on the object, like --set real_size=METRES")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a parameter, e.g. droplets.Kq=5 (repeatable)")
    p.add_argument("--history", metavar="FILE.json",
                   help="replay this history instead of a preset: an export's sidecar (its "
                        "'history') or a JSON list of entries; it replaces the object's "
                        "history and runs Rebuild (from the original heights, as in "
                        "Blender)")
    p.add_argument("--save", action="store_true", help="save the .blend afterwards")
    p.add_argument("--save-as", metavar="PATH", help="save the result to another .blend")
    p.add_argument("--export-maps", metavar="FOLDER",
                   help="after the run, write heights and layers as 16-bit PNG + 32-bit "
                        "EXR with a JSON sidecar (and rivers, lakes) into FOLDER")
    p.add_argument("--multilayer-exr", action="store_true",
                   help="with --export-maps: also one multi-layer EXR, <object>_layers.exr "
                        "(every map as a named 32-bit float channel; Blender 4.5+)")
    return p


def main(argv: list[str]) -> int:
    """Run; return 0 on success, 2 on a user error (one line on stderr, nothing saved).

    Everything is checked before the run: the object, the preset and overrides, the
    output path of --save/--save-as. ``--particles 0`` does no erosion (the settings
    are still applied and saved).
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage
        return int(exc.code or 0)
    try:
        obj = _checked_object(args)
        if args.history:
            _replay(obj, args.history)
        elif (work := _apply_settings(obj, args)) == 0:
            print(f"terrain_erosion: {obj.name}: --particles 0, nothing to erode",
                  flush=True)
        else:
            _run(obj, work)
        if args.export_maps:
            from .export import export_maps, skipped_attributes, skipped_note
            files = export_maps(obj, args.export_maps, formats=(
                "PNG", "EXR", *(("MULTI_EXR",) if args.multilayer_exr else ())))
            print(f"terrain_erosion: exported {len(files)} files to {args.export_maps}",
                  flush=True)
            skipped = skipped_attributes(obj)
            if skipped:
                print(f"terrain_erosion: {skipped_note(skipped)}", flush=True)
        if args.save_as:
            bpy.ops.wm.save_as_mainfile(filepath=args.save_as, copy=True)
        elif args.save:
            bpy.ops.wm.save_mainfile()
    except UserError as exc:
        print(f"terrain_erosion: error: {exc}", file=sys.stderr, flush=True)
        return 2
    except RuntimeError as exc:  # Blender's own save failed (message from the operator)
        print(f"terrain_erosion: error: saving failed: {exc}", file=sys.stderr, flush=True)
        return 2
    return 0


def _checked_object(args: argparse.Namespace) -> bpy.types.Object:
    """The object to erode, once the places the run will write are checked (the .blend
    to save, the maps' folder): a CliError says what is wrong before anything runs."""
    from ..simcore.errors import CliError
    obj = bpy.data.objects.get(args.object)
    if obj is None:
        names = ", ".join(o.name for o in bpy.data.objects if o.type == 'MESH')
        raise CliError(f"no object named '{args.object}'; mesh objects: "
                       f"{names or '(none)'}")
    if args.save_as:
        try:
            check_output(args.save_as, 64 * len(getattr(obj.data, "vertices", ())),
                         (".blend",))
        except UserError as exc:
            raise CliError(f"--save-as: {exc}") from None
    elif args.save and not bpy.data.filepath:
        raise CliError("--save needs a .blend loaded from a file; use --save-as PATH")
    elif args.save:
        check_output(bpy.data.filepath)
    if args.export_maps:  # the folder is checked before the run, maps written after it
        from .export import check_export_folder
        check_export_folder(args.export_maps)
        if args.multilayer_exr:
            from .export import openimageio
            openimageio()  # none (Blender 4.2): say so before the run
    elif args.multilayer_exr:
        raise CliError("--multilayer-exr needs --export-maps FOLDER")
    if args.history:
        given = [flag for flag, value in (("--preset", args.preset), ("--seed", args.seed),
                                          ("--particles", args.particles),
                                          ("--real-size", args.real_size),
                                          ("--set", args.set or None))
                 if value is not None]
        if given:
            raise CliError(f"--history replays the recorded runs with their own settings: "
                           f"leave out {', '.join(given)}")
    return obj


def _replay(obj: bpy.types.Object, path: str) -> None:
    """``path``'s history made the object's, then Rebuild. Every switched-on entry is
    read first: one this version cannot replay is a HistoryError naming it, and the
    object keeps its own history."""
    from ..data import history
    from ..simcore.formats import history as entries
    from .history import rebuild
    found = entries.read_file(path)
    if not found.complete:
        raise entries.HistoryError(
            f"the history in {path} does not hold all of the erosion of the exported "
            "object (an Animation Bake, a Refine x2 or runs before the history): Apply "
            "in Blender to start a history from the current heights, and export again")
    for i, (enabled, entry) in enumerate(found.entries):
        if enabled:
            entries.parse_entry(entry if not isinstance(entry, str) else None,
                                f"history entry {i + 1} of {path}")
    s = obj.terrain_erosion
    kept = [(e.enabled, e.data) for e in s.history], s.history_index, \
        s.history_from_original
    history.replace(s, found.entries)
    s.history_from_original = True
    try:
        replayed, notes = rebuild(obj)
    except BaseException:
        history.replace(s, kept[0])
        s.history_index, s.history_from_original = kept[1], kept[2]
        raise
    for note in notes:
        print(f"terrain_erosion: note: {note}", flush=True)
    print(f"terrain_erosion: {obj.name}: rebuilt from its original heights, {replayed} "
          f"entries replayed from {path}", flush=True)


def _apply_settings(obj: bpy.types.Object, args: argparse.Namespace) -> int | None:
    """The preset and overrides, validated, then applied to the object's settings.
    Returns the particles to run: None when rain per area sizes the run to the grid."""
    from ..simcore.pipeline.arguments import overrides
    settings = obj.terrain_erosion
    base = find_preset(args.preset) if args.preset else settings.to_preset(settings.preset)
    if args.real_size is not None:
        RealScale.of(3, 3, 1.0, args.real_size)  # a clear message for a bad value
    preset = base.with_overrides(overrides(  # validated: nothing changed on error
        args.set, seed=args.seed, particles=args.particles, real_size=args.real_size))
    # rain per area (preset or object settings) sizes the run to this grid, unless
    # --particles / --set particles=N gave an explicit total (with_overrides then
    # switched it off, as in the CLI)
    work = None if preset.particles_per_area > 0 else preset.particles
    if work is not None and not 1 <= work <= INT32_MAX:
        preset.particles = settings.particles  # runs, but the 32-bit field keeps its value
    settings.apply_preset(preset)
    return work


def _run(obj: bpy.types.Object, work: int | None) -> None:
    """One synchronous run of the object's settings, with progress lines."""
    job = ErosionJob(obj, work, record="erode")  # in the history, as Erode in the UI
    print(f"terrain_erosion: {obj.name}: {job.grid.cols}x{job.grid.rows} grid, "
          f"{job.sim.target_particles} particles, seed {job.sim.seed}; "
          f"{job.scale.describe()}", flush=True)
    for text in job.advice:
        print(f"terrain_erosion: note: {text}", flush=True)
    if job.estimate:  # a long run: how long, before it starts
        print(f"terrain_erosion: {job.estimate}", flush=True)
    progress = job.run(lambda p: print(
        f"terrain_erosion: {100 * p.fraction:5.1f}%", flush=True))
    print(f"terrain_erosion: done, {progress.particles} particles in "
          f"{progress.seconds:.1f} s", flush=True)


_handles: list = []


def register() -> None:
    if hasattr(bpy.utils, "register_cli_command"):
        _handles.append(bpy.utils.register_cli_command("terrain_erosion", main))


def unregister() -> None:
    while _handles:
        bpy.utils.unregister_cli_command(_handles.pop())
