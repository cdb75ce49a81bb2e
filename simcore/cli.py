"""Command line: erode heightmaps without Blender.

    python -m simcore generate --size 256 --output hills.npy
    python -m simcore erode --preset default --input hills.npy --output eroded.npz
    python -m simcore presets
    python -m simcore shade --input eroded.npz --output eroded.png
    python -m simcore report eroded.npz
    python -m simcore export eroded.npz --output eroded.exr
    python -m simcore sweep --preset default,alpine --seed 1..4 --input maps/*.npy --output sw/
    python -m simcore tile --input world.npy --cell-size 30 --tiles 2 --output world.zarr
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

from .errors import UserError
from .fileio import check_output, make_folder

EPILOG = """\
examples:
  python -m simcore generate --size 512 --seed 4 --output hills.npy
  python -m simcore erode --preset default --input hills.npy --cell-size 30 --output eroded.npy
  python -m simcore erode --preset default --input hills.npy --cell-size 30 --output state.npz \\
      --particles 500000 --set droplets.Kq=20 --set droplets.Ki=0.3
  python -m simcore erode --preset default --input state.npz --output more.npz  # resume
  python -m simcore export state.npz --output state.exr  # every layer, one EXR

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

exit codes: 0 done, 2 a problem with the input, parameters or output (one line on
stderr says what to do; nothing is written), 130 interrupted (nothing written but a
sweep's finished runs and the heightmap tiles already written).
"""

#: Largest grid the CLI erodes (cells per side squared) and the largest it generates.
SEED_RANGE = (0, 2**63 - 1)


class CliError(UserError):
    """A user mistake: printed as one line, exit code 2, nothing written."""


def parse_set(items: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--set {item!r}: expected KEY=VALUE, e.g. droplets.Kq=5")
        try:
            value = tomllib.loads(f"v = {text.strip()}")["v"]
        except (tomllib.TOMLDecodeError, RecursionError, KeyError):
            value = text.strip()
        out[key.strip()] = value
    return out


def overrides(items: list[str] | None, **flags: object) -> dict[str, object]:
    """The overrides of a command line: its ``--set KEY=VALUE`` items, then the flags
    that are shorthands for simulation keys (``seed``, ``particles``, ``real_size``;
    None: not given), which win. Used by this CLI and the add-on's batch command."""
    out = parse_set(items or [])
    out.update({key: value for key, value in flags.items() if value is not None})
    return out


def _check_output(path: str, allowed: tuple[str, ...], estimate: int = 0) -> Path:
    """Refuse a bad --output before any work: suffix, folder, writable, free space."""
    try:
        return check_output(path, estimate, allowed)
    except UserError as exc:
        raise CliError(f"--output: {exc}") from None


def _cell_size(value: float | None, default: float = 1.0) -> float:
    from .terrain import CELL_SIZE_RANGE

    lo, hi = CELL_SIZE_RANGE
    value = default if value is None else value
    if not lo <= value <= hi:  # also refuses NaN
        raise CliError(f"--cell-size must be a positive number from {lo:g} to {hi:g}, "
                       f"got {value!r}")
    return value


def _seed(value: int) -> int:
    lo, hi = SEED_RANGE
    if not lo <= value <= hi:
        raise CliError(f"--seed must be a whole number from {lo} to {hi} (64-bit), got "
                       f"{value}")
    return value


def cmd_generate(args: argparse.Namespace) -> int:
    from .fileio import check_memory
    from .formats.states import heights_bytes, save_heights
    from .noise import upland_terrain
    from .processes.landscape import drained_uplands
    from .terrain import BYTES_PER_CELL, MAX_ABS_VALUE, MAX_CELLS, MAX_SIDE

    rows = args.size if args.rows is None else args.rows
    cols = args.size if args.cols is None else args.cols
    if rows < 3 or cols < 3 or rows * cols > MAX_CELLS:
        raise CliError(f"grid {rows}x{cols}: sides must be >= 3 and the grid at most "
                       f"{MAX_SIDE}x{MAX_SIDE}")
    seed = _seed(args.seed)
    cell = _cell_size(args.cell_size)
    relief = args.relief
    if relief is not None and not 0 <= relief <= MAX_ABS_VALUE * cell:  # also refuses NaN
        raise CliError(f"--relief must be a number from 0 to {MAX_ABS_VALUE * cell:g} "
                       f"(world units), got {relief!r}")
    out = _check_output(args.output, (".npy",), heights_bytes((rows, cols)))
    if args.raw:
        check_memory(rows * cols * 8 * 6, f"a {rows}x{cols} terrain")
        heights = upland_terrain(rows, cols, seed=seed, cell_size=cell, relief=relief)
    else:  # the terrain, its scratch and the drainage arrays of an evolution
        check_memory(rows * cols * (BYTES_PER_CELL + 160), f"a {rows}x{cols} landscape")
        heights = drained_uplands(rows, cols, seed=seed, cell_size=cell, relief=relief)
    if not np.isfinite(heights).all() or np.abs(heights).max() > MAX_ABS_VALUE * cell:
        raise CliError(f"--relief {relief} with --cell-size {cell} gives heights out of "
                       "range; use smaller values")
    save_heights(out, heights)
    what = "fractal noise" if args.raw else "drained uplands"
    print(f"wrote {out} ({what}, {rows}x{cols} cells of {cell:g}, heights "
          f"0..{heights.max():g}); erode it with --cell-size {cell:g}", file=sys.stderr)
    return 0


#: --extent: the world size a map may stand for (1 mm to 100,000 km)
EXTENT_RANGE = (1e-3, 1e8)


def _real_scale(args: argparse.Namespace, preset, shape: tuple[int, int],
                cell: float) -> float:
    """World units per unit of a .npy map (heights and cells alike): ``--extent`` (else
    the preset's ``real_size`` when it gives one, as in Blender) over the map's own
    extent (``(longer side - 1) x --cell-size``), else 1."""
    extent = args.extent
    if extent is None and getattr(preset, "real_size", None):
        extent = preset.real_size
    if extent is None:
        return 1.0
    lo, hi = EXTENT_RANGE
    if not lo <= extent <= hi:  # also refuses NaN
        raise CliError(f"--extent must be a positive number of world units from {lo:g} to "
                       f"{hi:g} (the map's longer side, e.g. 5000 for 5 km), got "
                       f"{extent!r}")
    scale = extent / ((max(shape) - 1) * cell)
    _cell_size(cell * scale)  # the world cell it gives must be usable too
    return scale


def _vertical(args: argparse.Namespace) -> float:
    value = args.vertical_exaggeration
    if not 1e-3 <= value <= 1e3:  # also refuses NaN
        raise CliError("--vertical-exaggeration must be a number from 0.001 to 1000 (how "
                       f"much the map's heights are exaggerated; 1 = true), got {value!r}")
    return value


def _load_input(args: argparse.Namespace, preset) -> tuple[object, int, float]:
    """(terrain, rounds_done, output scale) from --input, checked before any work; the
    output scale turns world heights back into the input's units (a .npy with
    --extent or --vertical-exaggeration), else 1."""
    from .formats.states import load_heights, load_state
    from .memory import check_grid_run, check_input_run
    from .terrain import Terrain

    name = args.input.lower()
    if name.endswith(".npz"):
        given = [flag for flag, used in (("--cell-size", args.cell_size is not None),
                                         ("--extent", args.extent is not None),
                                         ("--vertical-exaggeration",
                                          args.vertical_exaggeration != 1.0)) if used]
        if given:
            raise CliError(f"{given[0]} cannot change the scale of a saved state (it holds "
                           "world units)")
        checked = check_input_run(args.input, preset.enabled_params())
        terrain, meta = load_state(args.input)
        if not checked:
            check_grid_run(terrain.shape, preset.enabled_params())
        rounds_done = int(meta.get("rounds_done", 0)) if meta.get("seed") == preset.seed else 0
        return terrain, rounds_done, 1.0
    if name.endswith(".npy"):
        cell = _cell_size(args.cell_size)
        vertical = _vertical(args)
        checked = check_input_run(args.input, preset.enabled_params())
        heights = load_heights(args.input)
        if not checked:
            check_grid_run(heights.shape, preset.enabled_params())
        scale = _real_scale(args, preset, heights.shape, cell)
        if scale != 1.0 or vertical != 1.0:
            heights = heights * (scale / vertical)
            cell *= scale
        if preset.ridges is not None:  # [ridges]: DLA mountains first, then erosion
            from .dla import add_ridges
            heights = add_ridges(heights, cell, preset.ridges)  # type: ignore[arg-type]
        return Terrain.from_heights(heights, cell), 0, vertical / scale
    raise CliError(f"--input {args.input}: use a .npy heightmap or an .npz state")


def cmd_erode(args: argparse.Namespace) -> int:
    from .formats.presets import find_preset
    from .formats.states import heights_bytes, save_heights, save_state, state_bytes
    from .simulation import Simulation

    outputs = (".npy", ".npz", ".exr")
    out = _check_output(args.output, outputs)
    if args.cell_size is not None:
        _cell_size(args.cell_size)
    preset = find_preset(args.preset)
    preset = preset.with_overrides(overrides(args.set, seed=args.seed,
                                             particles=args.particles))
    terrain, rounds_done, back = _load_input(args, preset)  # size and memory checked
    rows, cols = terrain.shape
    estimate = (state_bytes((rows, cols), len(preset.enabled_params()))
                if out.suffix.lower() != ".npy" else heights_bytes((rows, cols)))
    _check_output(args.output, outputs, estimate)
    oiio = _openimageio() if out.suffix.lower() == ".exr" else None
    sim = Simulation(terrain, preset.enabled_params(), seed=preset.seed,
                     particles=preset.work(terrain), rounds_done=rounds_done)
    t0 = time.perf_counter()

    def report(p) -> None:
        if not args.quiet:
            print(f"  {100 * p.fraction:5.1f}%  {p.particles} particles  "
                  f"{time.perf_counter() - t0:6.1f}s", file=sys.stderr, flush=True)

    if not args.quiet:
        print(f"eroding {rows}x{cols} with preset '{preset.name}' "
              f"({', '.join(sim.processes)}), {sim.target_particles} particles, "
              f"seed {preset.seed}", file=sys.stderr)
        for text in sim.advice():
            print(f"note: {text}", file=sys.stderr)
    sim.run(report, report_every=1.0)
    meta = sim.metadata()
    meta["preset"] = preset.name
    if out.suffix.lower() == ".npz":
        save_state(out, terrain, meta)
    elif oiio is not None:
        _save_exr(out, terrain, meta, oiio)
    else:  # in the input's units
        save_heights(out, terrain.world_height() * back if back != 1.0 else
                     terrain.world_height())
    if not args.quiet:
        print(f"wrote {out} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return 0


def _openimageio():
    """The OpenImageIO module, checked before any work (CliError if there is none)."""
    from .formats.exr import load_openimageio

    try:
        return load_openimageio()
    except UserError as exc:
        raise CliError(f"--output: {exc}") from None


def _save_exr(out: Path, terrain, meta: dict, oiio) -> None:
    """A multi-layer EXR of a state, as the Blender add-on writes and imports one: the
    ground as ``height`` and every float layer the add-on would give the terrain
    (``bedrock``, ``sediment_depth``, ``change_<process>``, ...; simcore.layers.
    exported_maps), lengths in world units (a Blender import takes them as local
    units); the header has the add-on's facts (``cell_size_x``, ``cell_size_y``,
    ``units``, ``rows``, ``cols``, ``real_size``, ...) plus the run's metadata."""
    from . import __version__
    from .formats import exr
    from .formats.presets import REAL_SIZE_KEY
    from .formats.sidecar import IMAGE_ROWS
    from .layers import exported_maps

    cell = float(terrain.cell_size)
    rows, cols = terrain.shape
    maps = exported_maps(terrain, cell, meta.get("processes") or None)
    h = maps["height"]
    extent = (max(rows, cols) - 1) * cell
    facts = {
        **{k: v for k, v in meta.items() if k not in ("units", "cell_size")},
        "simcore_version": __version__,
        "rows": rows, "cols": cols,
        "cell_size_x": cell, "cell_size_y": cell,
        "units": "world units (the CLI's): heights and lengths as world units, "
                 "0..1 maps as they are; a Blender import takes them as local units",
        "height_min": float(h.min()), "height_max": float(h.max()),
        "height_scale": float(h.max() - h.min()),
        "vertical_exaggeration": 1.0,
        "image_rows": IMAGE_ROWS,
        "multilayer_exr": {
            "channels": list(maps),
            "decode": "one 32-bit float channel per map, named as the add-on's float "
                      "layer without 'te_' (EXR lists them alphabetically): lengths in "
                      "world units",
            "row_order": exr.ROW_ORDER},
    }
    if REAL_SIZE_KEY[1] <= extent <= REAL_SIZE_KEY[2]:
        # the world the run used, 1:1: eroding the import in Blender goes on in it
        facts["real_size"] = extent
    exr.write(out, maps, facts, oiio)


def cmd_export(args: argparse.Namespace) -> int:
    from .fileio import check_memory
    from .formats.states import load_state, state_bytes

    out = _check_output(args.output, (".exr",))
    if not args.state.lower().endswith(".npz"):
        raise CliError(f"{args.state}: export reads an .npz state (erode --output X.npz)")
    oiio = _openimageio()
    terrain, meta = load_state(args.state)
    rows, cols = terrain.shape
    check_memory(rows * cols * 8 * (len(terrain.arrays()) + len(terrain.changes) + 4),
                 f"exporting a {rows}x{cols} grid")
    _check_output(args.output, (".exr",), state_bytes((rows, cols), len(terrain.changes)))
    _save_exr(out, terrain, meta, oiio)
    if not args.quiet:
        print(f"wrote {out}", file=sys.stderr)
    return 0


def _tiles_arg(text: str | None) -> tuple[int, int] | None:
    """``--tiles 3x2`` (x by y) or ``--tiles 2`` (2x2); None: as many as the map needs."""
    if text is None:
        return None
    x, sep, y = text.lower().partition("x")
    try:
        return (int(x), int(y if sep else x))
    except ValueError:
        raise CliError(f"--tiles {text!r}: give COLSxROWS, e.g. 2x2, or one number") from None


def cmd_engine_tiles(args: argparse.Namespace) -> int:
    """Heights and layers cut into Unreal or Unity tiles (simcore/formats/engine_tiles.py)."""
    from .formats import engine_tiles as et
    from .formats.states import load_heights, load_state

    et.check_size(args.engine, args.size)
    tiles = _tiles_arg(args.tiles)
    name = args.state.lower()
    if name.endswith(".npz"):
        if args.cell_size is not None:
            raise CliError("--cell-size cannot change the scale of a saved state (it holds "
                           "world units)")
        terrain, meta = load_state(args.state)
        heights, cell = terrain.world_height(), float(terrain.cell_size)
        layers, fractions = ({}, ()) if args.no_layers else et.state_layers(terrain)
        facts = {k: meta[k] for k in ("seed", "preset", "rounds_done") if k in meta}
    elif name.endswith(".npy"):
        heights, cell = load_heights(args.state), _cell_size(args.cell_size)
        layers, fractions, facts = {}, (), {}
    else:
        raise CliError(f"{args.state}: use an .npz state or a .npy heightmap")
    formats = ("png", "r16") if args.format == "both" else (args.format,)
    files, side = et.write_tiles(
        args.out, args.name or f"{Path(args.state).stem}_tiles", heights, cell, args.engine,
        args.size, layers, fractions, tiles, formats, args.layer_bits,
        facts={"source_file": Path(args.state).name, **facts})
    for text in side["warnings"]:
        print(f"warning: {text}", file=sys.stderr)
    if not args.quiet:
        print(f"wrote {side['tiles_x']}x{side['tiles_y']} {args.engine} tiles of "
              f"{args.size} ({len(files)} files) to {files[-1].parent}; sidecar "
              f"{files[-1].name}", file=sys.stderr)
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    from .formats.presets import load_preset, preset_files

    for name, path in preset_files().items():
        try:
            p = load_preset(path)
        except UserError as exc:
            print(f"{name:16s} BROKEN: {exc}")
            continue
        print(f"{name:16s} {p.name}: {p.description} "
              f"[{', '.join(p.enabled_params())}; {p.particles} particles]")
    return 0


def cmd_shade(args: argparse.Namespace) -> int:
    from .fileio import check_memory
    from .formats.images import save_png, shaded_relief
    from .formats.states import load_heights, load_state
    from .terrain import Terrain

    out = _check_output(args.output, (".png",))
    name = args.input.lower()
    if name.endswith(".npz"):
        terrain, _ = load_state(args.input)
    elif name.endswith(".npy"):
        terrain = Terrain.from_heights(load_heights(args.input), _cell_size(args.cell_size))
    else:
        raise CliError(f"--input {args.input}: use a .npy heightmap or an .npz state")
    rows, cols = terrain.shape
    check_memory(rows * cols * 8 * 12, f"shading a {rows}x{cols} grid")
    _check_output(args.output, (".png",), 3 * rows * cols + rows + 2**16)
    pool = terrain.pool if terrain.pool.any() else None  # lakes and sea in blue
    save_png(out, shaded_relief(terrain.height(), pool=pool))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    import json

    from .fileio import check_memory
    from .formats.states import load_heights, load_state
    from .report import format_report, report

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
            before = load_heights(args.before) / terrain.cell_size
        else:
            raise CliError(f"--before {args.before}: use a .npy heightmap (world units) or "
                           "an .npz state")
        if before.shape != terrain.shape:
            raise CliError(f"--before {args.before}: its grid is {before.shape[0]}x"
                           f"{before.shape[1]}, the state's {rows}x{cols}")
    figures = report(terrain, before)
    print(json.dumps(figures, indent=1) if args.json else format_report(figures))
    return 0


def _cluster_args(args: argparse.Namespace):
    """The dask client of --workers / --scheduler / --threads."""
    from .cluster import client

    return client(workers=args.workers, scheduler=args.scheduler, threads=args.threads,
                  quiet=args.quiet)


def cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import expand_inputs, parse_seeds, sweep

    presets = [p.strip() for p in args.preset.split(",") if p.strip()]
    seeds = parse_seeds(args.seed)
    inputs = expand_inputs(args.input)
    if args.cell_size is not None:
        _cell_size(args.cell_size)
    sets = overrides(args.set)
    make_folder(args.output, "--output")  # before a cluster starts
    t0 = time.perf_counter()
    with _cluster_args(args) as c:
        rows = sweep(inputs, presets, seeds, args.output, c, cell_size=args.cell_size,
                     particles=args.particles, sets=sets, quiet=args.quiet)
    failed = [r for r in rows if r["status"] != "ok"]
    for r in failed:
        print(f"failed: run {r['run']} ({r['input']}, {r['preset']}, seed {r['seed']}): "
              f"{r['error']}", file=sys.stderr)
    if not args.quiet:
        print(f"{len(rows) - len(failed)} of {len(rows)} runs done in "
              f"{time.perf_counter() - t0:.1f}s; table: {Path(args.output) / 'sweep.csv'}",
              file=sys.stderr)
    return 0 if not failed else 1


def cmd_tile(args: argparse.Namespace) -> int:
    from .tiles import tile_command

    return tile_command(args)


def _add_cluster_flags(q: argparse.ArgumentParser) -> None:
    q.add_argument("--workers", type=int, default=2,
                   help="worker processes of the local dask cluster (2)")
    q.add_argument("--scheduler", metavar="ADDRESS",
                   help="a running dask scheduler (e.g. tcp://10.0.0.5:8786) instead of a "
                   "local cluster")
    q.add_argument("--threads", type=int, default=1,
                   help="numba threads per local worker (1)")
    q.add_argument("--quiet", action="store_true", help="no progress on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m simcore", description="Erode terrain heightmaps: rain droplets, "
        "snowballs, rivers and lakes, wind and dunes, hillslopes, trees and ridges. "
        "No Blender needed.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser("generate", help="make a terrain (.npy): drained uplands, or raw "
                       "fractal noise with --raw")
    g.add_argument("--size", type=int, default=256, help="grid side in samples (256)")
    g.add_argument("--rows", type=int, help="rows, if not square")
    g.add_argument("--cols", type=int, help="columns, if not square")
    g.add_argument("--seed", type=int, default=0, help="noise seed (0)")
    g.add_argument("--relief", type=float,
                   help="height range in world units (drained: what two million years "
                   "of evolution make, about 0.085 x the extent, 660 for 256 cells of "
                   "30; --raw: 0.12 x the extent, 920)")
    g.add_argument("--raw", action="store_true",
                   help="the fractal noise itself, without the evolution that drains it "
                   "(about a fifth of it in closed basins: what generate made before the "
                   "landscape process)")
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
    e.add_argument("--quiet", action="store_true", help="no progress on stderr")
    e.set_defaults(func=cmd_erode)

    p = sub.add_parser("presets", help="list the shipped presets")
    p.set_defaults(func=cmd_presets)

    r = sub.add_parser("report", help="realism report of a state: slopes, closed basins, "
                       "lakes and their spill levels, channel concavity, relief; before "
                       "and after the run")
    r.add_argument("state", help=".npz state (erode --output X.npz)")
    r.add_argument("--before", help="the start's heights (.npy, world units, or .npz); "
                   "default: rebuilt from the state's books (eroded, deposited, uplifted)")
    r.add_argument("--json", action="store_true", help="the figures as JSON")
    r.set_defaults(func=cmd_report)

    x = sub.add_parser("export", help="a state's heights and every layer as one "
                       "multi-layer 32-bit float EXR (named channels; needs OpenImageIO)")
    x.add_argument("state", help=".npz state (erode --output X.npz)")
    x.add_argument("--output", required=True, help="where to write the .exr")
    x.add_argument("--quiet", action="store_true", help="no message on stderr")
    x.set_defaults(func=cmd_export)

    t = sub.add_parser("engine-tiles", help="heights and layers as Unreal or Unity "
                       "terrain tiles (16-bit PNG/RAW, shared edges, JSON sidecar)")
    t.add_argument("state", help=".npz state (heights and layers) or .npy heightmap")
    t.add_argument("--engine", required=True, choices=("unreal", "unity"))
    t.add_argument("--size", type=int, required=True,
                   help="vertices per tile side: unreal 127 253 505 1009 2017 4033 8129; "
                   "unity 33 65 129 257 513 1025 2049 4097")
    t.add_argument("--out", required=True, help="folder for the tiles and the sidecar "
                   "(made if missing)")
    t.add_argument("--tiles", metavar="XxY", help="tiles across and down, e.g. 2x2 "
                   "(default: as many as keep the map's detail); the map is resampled "
                   "once (bilinear) when it is not tiles x (size - 1) + 1 vertices")
    t.add_argument("--format", choices=("png", "r16", "both"), default="png",
                   help="height files: 16-bit PNG, 16-bit little-endian RAW, or both")
    t.add_argument("--layer-bits", type=int, choices=(8, 16), default=8,
                   help="bits of the layer weight maps (8)")
    t.add_argument("--no-layers", action="store_true", help="heights only")
    t.add_argument("--name", help="file name prefix (default: the input's name + "
                   "_tiles, apart from a map export's <name>.json)")
    t.add_argument("--cell-size", type=float, help="for a .npy input: world distance "
                   "between samples (1)")
    t.add_argument("--quiet", action="store_true", help="no message on stderr")
    t.set_defaults(func=cmd_engine_tiles)

    s = sub.add_parser("shade", help="shaded-relief PNG of a heightmap or state "
                       "(pools of a state in blue)")
    s.add_argument("--input", required=True, help=".npy heightmap or .npz state")
    s.add_argument("--output", required=True, help="where to write the .png")
    s.add_argument("--cell-size", type=float, default=1.0, help="for a .npy input (1)")
    s.set_defaults(func=cmd_shade)

    w = sub.add_parser(
        "sweep", help="every combination of presets, seeds and inputs as tasks on "
        "dask.distributed: states, shaded previews and a table (CSV, JSON)",
        description="Run every (input, preset, seed) as one task on a dask cluster. "
        "Writes NNNN_<input>_<preset>_s<seed>.npz and .png into --output, and sweep.csv "
        "/ sweep.json: each run's parameters, status, seconds and realism figures after "
        "the run. A failed run (a bad input) is a row with its reason; the others go "
        "on; the exit code is then 1.")
    w.add_argument("--preset", required=True, help="preset names or .toml paths, comma "
                   "separated (default,alpine)")
    w.add_argument("--seed", required=True, help="seeds: 1..20, 1,4,9 or a mix")
    w.add_argument("--input", required=True, nargs="+",
                   help=".npy heightmaps or .npz states (globs such as 'maps/*.npy')")
    w.add_argument("--output", required=True, help="folder for the results and table")
    w.add_argument("--cell-size", type=float, help="cell size of .npy inputs (1)")
    w.add_argument("--particles", type=int, help="override the total particle count")
    w.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a parameter of every run, e.g. droplets.Kq=5")
    _add_cluster_flags(w)
    w.set_defaults(func=cmd_sweep)

    t = sub.add_parser(
        "tile", help="erode a big world as overlapping tiles on dask.distributed, into a "
        "chunked Zarr store (seamless; docs/tiles.md)",
        description="Erode a world in tiles: the global processes (landscape, hydrology, "
        "wind) on the whole map (or a --coarse version of it), then the detail processes "
        "(droplets, snowball, thermal, trees) per tile with overlapping margins, "
        "particles keyed to world position, margins blended. Output: a Zarr store "
        "chunked by tile (heights in world units and every terrain array); "
        "--heightmap-tiles also writes one heightmap per tile.")
    t.add_argument("--preset", default="default", help="preset name or .toml (default)")
    t.add_argument("--input", required=True,
                   help=".npy heightmap, .npz state, or an earlier tiled world's store "
                   "(.zarr folder; read tile by tile, as a .npy)")
    t.add_argument("--output", required=True, help="the Zarr store to write (a folder, "
                   "e.g. world.zarr; written as <output>.partial and renamed when done: "
                   "replaces only a tiled world's store)")
    t.add_argument("--tiles", default="2", metavar="N or XxY",
                   help="tiles per side (2: 2x2) or columns x rows (3x2: 3 across, 2 "
                   "down; as engine-tiles)")
    t.add_argument("--margin", type=int, help="overlap margin in cells on each side, at "
                   "least 32 (default: an eighth of the map's longer side, at least 64, "
                   "at most a tile)")
    t.add_argument("--coarse", type=int, default=1, metavar="F",
                   help="run the global processes on the map downsampled F times (1: "
                   "full resolution, in one worker); with F > 1 and a .npy input no process "
                   "holds the full-resolution map (each tile interpolates the change on "
                   "its own; an .npz state is loaded whole by the command)")
    t.add_argument("--cell-size", type=float, help="cell size of a .npy input (1)")
    t.add_argument("--seed", type=int, help="override the preset's seed")
    t.add_argument("--particles", type=int, help="override the total particle count")
    t.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a parameter, e.g. droplets.Kq=5 (repeatable)")
    t.add_argument("--heightmap-tiles", metavar="FOLDER",
                   help="also write each tile's heights (world units) there as "
                   "tile_r<row>_c<col>: row 0 = the map's first rows (row 0 of the "
                   "input array); a PNG's top row is its tile's first row")
    t.add_argument("--tile-format", choices=("npy", "png"), default="npy",
                   help="format of --heightmap-tiles: .npy (float) or 16-bit gray PNG")
    _add_cluster_flags(t)
    t.set_defaults(func=cmd_tile)
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
        print("interrupted; nothing written (but a sweep keeps the runs it had finished, and "
              "tile --heightmap-tiles the tiles it had written)", file=sys.stderr)
        return 130
