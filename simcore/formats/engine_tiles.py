"""Game-engine tiles: heights and layers cut to the sizes Unreal and Unity import.

A map is cut into ``tiles_x`` x ``tiles_y`` square tiles of ``size`` vertices a side
(Unreal's recommended landscape sizes, Unity's heightmap resolutions: :data:`SIZES`).
Neighbouring tiles share their border: tile (i, j) covers grid vertices
``i*(size-1) .. i*(size-1)+size-1``, so the last column of one tile is the first column
of the next, bit for bit, and the terrains join without cracks. When the map is not
``tiles x (size-1) + 1`` vertices along an axis, the whole map is resampled once
(bilinear, :func:`resample`) to that size and then cut: its world extent stays, the
cell size changes (the sidecar says so, ``resampling``). A map smaller than one tile is
resampled up, with a warning (no new detail appears).

Heights are 16-bit (PNG, big-endian as PNG is; and/or RAW ``.r16``, little-endian, as
Unity reads it), all tiles encoded with one height range so their values join:
``height = height_min + value / 65535 * height_scale``. Layers (sediment, streams,
pools, trees, ...) are 8- or 16-bit grayscale PNG weight maps cut the same way, each
with one range for all tiles (0..1 maps stay 0..1; depths 0..their maximum).

Rows: a PNG's top row is the map's north edge (+Y, highest row of the array), as the
add-on's other exports; a Unity ``.r16`` starts at the south edge (Unity's RAW import
puts the file's first row at z = 0), an Unreal ``.r16`` at the north edge (like its
PNG). Tile indices follow each engine: Unreal ``_x<i>_y<j>`` counts j from the north
(Unreal's +Y runs down the picture; its tiled import reads these names), Unity counts j
from the south (+Z).

The sidecar ``<name>.json`` names every tile: its files, grid position, world origin
and size, height range, and where the engine puts it (Unreal: location in cm and the
landscape scale, Z scale included; Unity: terrain position and size in metres).

A set is written all or nothing (:class:`simcore.formats.staging.Staging`: a staging folder
inside the target folder, moved in when complete, the sidecar last; an earlier set of
the same name is replaced as a whole: the files its sidecar lists,
:func:`simcore.formats.sidecar.listed_files`). A ``<name>.json`` that is not a tile
set's sidecar -- a map export's, the add-on's other sidecar of the same
``<name>.json`` form -- is never replaced: the write is refused, nothing written, and
the sidecar's ``kind`` keeps a map import from taking it for a map export's.
:func:`read_tiles` reads a set back into one grid and checks that neighbours agree
on their shared edges. No bpy here: the CLI and the add-on call
:func:`write_tiles`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputFileError, OutputPathError, UserError, describe_os_error
from ..fileio import atomic_write, check_input, check_memory, check_output
from ..kernels.sampling import corner_positions, sample_lattice
from . import images, sidecar
from .staging import Staging

#: vertices per tile side each engine takes: Unreal's recommended landscape sizes
#: (components of 63, 127 or 255 quads; Landscape Technical Guide), Unity's terrain
#: heightmap resolutions (2^n + 1)
SIZES = {
    "unreal": (127, 253, 505, 1009, 2017, 4033, 8129),
    "unity": (33, 65, 129, 257, 513, 1025, 2049, 4097),
}
FORMATS = ("png", "r16")
LEVELS = {8: 255, 16: 65535}
SCHEMA = 1
KIND = "engine_tiles"
#: most tiles along one axis (a name ends in _x<i>_y<j>; beyond this a set is absurd)
MAX_TILES = 64
#: the map's arrays that are not layers (bedrock = height - sediment)
NOT_LAYERS = ("bedrock",)


class EngineTilesError(UserError):
    """A tile set cannot be written or read; the message says why and what to do."""


# ------------------------------------------------------------------ plan

def check_size(engine: str, size: int) -> int:
    """``size`` if ``engine`` takes it, else EngineTilesError listing the valid ones."""
    if engine not in SIZES:
        raise EngineTilesError(f"unknown engine {engine!r}: use {' or '.join(SIZES)}")
    if size not in SIZES[engine]:
        valid = ", ".join(str(s) for s in SIZES[engine])
        raise EngineTilesError(f"{engine} does not take tiles of {size} vertices a side; "
                               f"use one of {valid}")
    return size


@dataclass
class Tiling:
    """How a (rows, cols) map becomes tiles: the grid it is resampled to (or not)."""

    engine: str
    size: int
    tiles_x: int
    tiles_y: int
    source: tuple[int, int]
    warnings: list[str] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, cols) of the grid that is cut: tiles x (size - 1) + 1."""
        q = self.size - 1
        return self.tiles_y * q + 1, self.tiles_x * q + 1

    @property
    def resampled(self) -> bool:
        return self.shape != self.source


def plan(engine: str, size: int, shape: tuple[int, int],
         tiles: tuple[int, int] | None = None) -> Tiling:
    """The tiles for a map of ``shape`` (rows, cols): ``tiles`` (x, y) when given (0 on
    an axis: automatic there), else as many as cover the map without losing detail
    (ceil((n - 1) / (size - 1)) per axis, at least 1). A map smaller than one tile is
    resampled up, with a warning."""
    check_size(engine, size)
    rows, cols = shape
    if rows < 2 or cols < 2:
        raise EngineTilesError(f"a {rows}x{cols} map is too small to cut; it needs at "
                               "least 2x2 vertices")
    q = size - 1
    auto = (max(1, math.ceil((cols - 1) / q)), max(1, math.ceil((rows - 1) / q)))
    tx, ty = auto if tiles is None else (tiles[0] or auto[0], tiles[1] or auto[1])
    if not (1 <= tx <= MAX_TILES and 1 <= ty <= MAX_TILES):
        raise EngineTilesError(f"{tx}x{ty} tiles: use 1 to {MAX_TILES} tiles per axis")
    p = Tiling(engine, size, tx, ty, (rows, cols))
    out_rows, out_cols = p.shape
    up = max((out_rows - 1) / (rows - 1), (out_cols - 1) / (cols - 1))
    if up > 2.0:
        smaller = [s for s in SIZES[engine] if s >= min(rows, cols)]
        hint = (f"; a tile of {smaller[0]} keeps the map's own detail" if smaller
                and smaller[0] < size else "")
        p.warnings.append(
            f"the {rows}x{cols} map is resampled up x{up:.2g} to {out_rows}x{out_cols} "
            f"vertices ({tx}x{ty} tiles of {size}): smooth, with no detail it did not "
            f"have{hint}")
    down = min((out_rows - 1) / (rows - 1), (out_cols - 1) / (cols - 1))
    if down < 1.0:
        p.warnings.append(
            f"the {rows}x{cols} map is resampled down to {out_rows}x{out_cols} vertices "
            f"({tx}x{ty} tiles of {size}): detail finer than its new cells is lost; "
            "more tiles keep it")
    return p


def resample(values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``values`` (rows, cols) resampled bilinearly to ``shape`` with the corners kept:
    output vertex i sits at input position i x (n - 1) / (N - 1) on each axis."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape == tuple(shape):
        return values.copy()
    return sample_lattice(values, corner_positions(values.shape[0], shape[0]),
                          corner_positions(values.shape[1], shape[1]))


# ------------------------------------------------------------------ encoding

def encode(values: np.ndarray, lo: float, hi: float, bits: int) -> np.ndarray:
    """``values`` as integer codes 0..2^bits-1 of the range lo..hi (rounded; a flat
    range gives 0)."""
    levels = LEVELS[bits]
    span = hi - lo
    if span <= 0:
        codes = np.zeros(values.shape)
    else:
        codes = np.rint(np.clip((values - lo) / span, 0.0, 1.0) * levels)
    return codes.astype(np.uint16 if bits == 16 else np.uint8)


def decode(codes: np.ndarray, lo: float, hi: float, bits: int) -> np.ndarray:
    return lo + codes.astype(np.float64) / LEVELS[bits] * (hi - lo)


def read_png(path: Path) -> np.ndarray:
    """The codes of a grayscale 8- or 16-bit PNG tile (uint8 / uint16, first row = top;
    :func:`simcore.formats.images.read_png`); InputFileError for anything else."""
    bad = (f"{path} is not a grayscale PNG tile written by Terrain Erosion; export the "
           "tiles again")
    codes = images.read_png(path, bad)
    if codes.ndim != 2:
        raise InputFileError(bad)
    return codes


def read_r16(path: Path, size: int) -> np.ndarray:
    """The uint16 codes of a little-endian RAW ``size`` x ``size`` file, first row first."""
    path = check_input(path)
    try:
        blob = Path(path).read_bytes()
    except OSError as exc:
        raise InputFileError(describe_os_error(exc, path, "read")) from None
    if len(blob) != 2 * size * size:
        raise InputFileError(f"{path} has {len(blob)} bytes; a {size}x{size} 16-bit RAW "
                             f"tile has {2 * size * size}: export the tiles again")
    return np.frombuffer(blob, "<u2").reshape(size, size).astype(np.uint16)


def check_name(name: str) -> str:
    """``name`` if it is a plain file name prefix, else EngineTilesError."""
    if (not name.strip() or name.startswith(".") or any(c in name for c in '/\\:')
            or any(ord(c) < 32 for c in name) or len(name.encode("utf-8")) > 150):
        raise EngineTilesError(f"the tile set name {name!r} is not a plain file name: use "
                               "letters, digits, '-' or '_' (at most 150 bytes), no folders "
                               "or leading '.'")
    return name


# ------------------------------------------------------------------ writing

def _tile_name(name: str, what: str, x: int, y: int, ext: str) -> str:
    return f"{name}_{what}_x{x}_y{y}.{ext}"


def write_tiles(folder: str | os.PathLike, name: str, heights: np.ndarray,
                cell_size: float | tuple[float, float], engine: str, size: int,
                layers: dict[str, np.ndarray] | None = None,
                fractions: tuple[str, ...] = (), tiles: tuple[int, int] | None = None,
                formats: tuple[str, ...] = ("png",), layer_bits: int = 8,
                origin: tuple[float, float] = (0.0, 0.0), facts: dict | None = None
                ) -> tuple[list[Path], dict]:
    """Cut ``heights`` (rows, cols; row 0 = south, world units, e.g. metres) and
    ``layers`` (same shape; those named in ``fractions`` are 0..1, the others depths in
    world units) into ``engine`` tiles of ``size`` vertices and write them with the
    sidecar ``<name>.json`` into ``folder`` (made if missing, its parent must exist).
    ``cell_size`` is the world distance between vertices (x, y, or one for both);
    ``origin`` the world position of vertex (0, 0); ``facts`` go into the sidecar as
    they are. Returns (files written, the sidecar last; the sidecar). All or nothing;
    every check comes before the first file."""
    name = check_name(name)
    bad_format = [f for f in formats if f not in FORMATS]
    if bad_format or not formats:
        raise EngineTilesError(f"unknown height format(s) {bad_format}: use png and/or r16")
    if layer_bits not in LEVELS:
        raise EngineTilesError(f"layers are 8- or 16-bit, not {layer_bits}")
    heights = np.asarray(heights, dtype=np.float64)
    if heights.ndim != 2:
        raise EngineTilesError(f"heights must be a 2-D grid, got shape {heights.shape}")
    if not np.isfinite(heights).all():
        raise EngineTilesError("the heights have NaN/inf values; fill them first")
    layers = {k: np.asarray(v, dtype=np.float64) for k, v in (layers or {}).items()}
    for key, values in layers.items():
        if values.shape != heights.shape or not np.isfinite(values).all():
            raise EngineTilesError(f"layer {key!r} must be finite and {heights.shape}")
    cx, cy = (cell_size, cell_size) if np.isscalar(cell_size) else cell_size
    cx, cy = float(cx), float(cy)
    if not (cx > 0 and cy > 0 and math.isfinite(cx) and math.isfinite(cy)):
        raise EngineTilesError(f"the cell size must be positive, got {cell_size!r}")
    p = plan(engine, size, heights.shape, tiles)
    rows, cols = p.shape
    check_memory(rows * cols * 8 * (4 + len(layers)),
                 f"cutting {p.tiles_x}x{p.tiles_y} tiles of {size}")
    folder = Path(folder)
    _make_folder(folder)
    n_files = p.tiles_x * p.tiles_y * (len(formats) + len(layers))
    check_output(folder / f"{name}.json", rows * cols * (2 * len(formats) + len(layers)
                                                        * layer_bits // 8) + n_files * 256)
    sidecar.check_replaceable(
        folder, name, KIND, "give the tile set another name (the add-on's default is "
        "<object>_tiles), or write the tiles to another folder", any_file=True)
    previous = sidecar.listed_files(folder, name, KIND)
    with Staging(folder) as stage:
        names, side = _write_set(stage.path, name, p, heights, (cx, cy), layers,
                                 fractions, formats, layer_bits, origin, facts or {})
        stage.commit(names, previous)
    return [folder / n for n in names], side


def _make_folder(folder: Path) -> None:
    try:
        if not folder.is_dir():
            if not folder.parent.is_dir():
                raise OutputPathError(f"cannot write tiles to {folder}: folder "
                                      f"{folder.parent} does not exist; create it or "
                                      "choose another folder")
            folder.mkdir()
    except OSError as exc:
        raise OutputPathError(describe_os_error(exc, folder)) from None


def _write_set(out: Path, name: str, p: Tiling, heights: np.ndarray,
               cell: tuple[float, float], layers: dict[str, np.ndarray],
               fractions: tuple[str, ...], formats: tuple[str, ...], layer_bits: int,
               origin: tuple[float, float], facts: dict) -> tuple[list[str], dict]:
    rows, cols = p.shape
    src_rows, src_cols = p.source
    # the same world extent, cut into tiles x (size - 1) quads
    cx = cell[0] * (src_cols - 1) / (cols - 1)
    cy = cell[1] * (src_rows - 1) / (rows - 1)
    h = resample(heights, p.shape)
    lo, hi = float(h.min()), float(h.max())
    codes = encode(h, lo, hi, 16)
    layer_codes, layer_record = _layer_codes(layers, fractions, p.shape, layer_bits)
    q = p.size - 1
    written: list[str] = []
    tiles = []
    for j in range(p.tiles_y):          # j: from the south (array rows)
        for i in range(p.tiles_x):
            y_engine = j if p.engine == "unity" else p.tiles_y - 1 - j
            window = (slice(j * q, j * q + p.size), slice(i * q, i * q + p.size))
            files = _write_tile(out, name, p, (i, y_engine), window, codes, layer_codes,
                                formats)
            written += files.values()
            th = h[window]
            x0, y0 = origin[0] + i * q * cx, origin[1] + j * q * cy
            tiles.append({
                "x": i, "y": y_engine, "column": i, "row_from_south": j,
                "files": files,
                "vertices": [p.size, p.size],
                "grid_offset": [i * q, j * q],
                "origin_x": x0, "origin_y": y0,
                "size_x": q * cx, "size_y": q * cy,
                "height_min": float(th.min()), "height_max": float(th.max()),
                "engine_location": _location(p, i, y_engine, cx, cy, lo, hi - lo),
            })
    record = {**_set_record(p, cell, (cx, cy), origin, (lo, hi), formats),
              "layers": layer_record, **facts, "tiles": tiles}
    side = out / f"{name}.json"
    _write(side, json.dumps(record, indent=1).encode("utf-8"))
    written.append(side.name)
    return written, record


def _layer_codes(layers: dict[str, np.ndarray], fractions: tuple[str, ...],
                 shape: tuple[int, int], bits: int) -> tuple[dict, dict]:
    """Each layer resampled to ``shape`` and encoded (fractions over 0..1, depths and
    factors over min(0, their least)..their most), and what the sidecar says of it."""
    from ..processes import FIELDS
    depths = {f.exact[3:] for f in FIELDS.values() if f.exact and f.is_length}
    layer_codes, layer_record = {}, {}
    for key, values in layers.items():
        v = resample(values, shape)
        if key in fractions:
            llo, lhi = 0.0, 1.0
        else:
            llo, lhi = min(0.0, float(v.min())), float(v.max())
        layer_codes[key] = encode(v, llo, lhi, bits)
        layer_record[key] = {
            "min": llo, "max": lhi, "bits": bits,
            "unit": "0..1" if key in fractions else (
                "world units (depth)" if key in depths else "factor"),
            "decode": f"value = min + png / {LEVELS[bits]} * (max - min)"}
    return layer_codes, layer_record


def _write_tile(out: Path, name: str, p: Tiling, at: tuple[int, int], window,
                codes: np.ndarray, layer_codes: dict, formats: tuple[str, ...]
                ) -> dict[str, str]:
    """One tile's files (``at``: its x, y as the engine counts them): the heightmap in
    each format and each layer's PNG. Returns their names by kind."""
    i, y_engine = at
    files = {}
    tile_codes = codes[window]
    if "png" in formats:
        files["height_png"] = _tile_name(name, "height", i, y_engine, "png")
        _write(out / files["height_png"], images.png_bytes(tile_codes[::-1], up=True))
    if "r16" in formats:
        files["height_r16"] = _tile_name(name, "height", i, y_engine, "r16")
        rows_first = tile_codes if p.engine == "unity" else tile_codes[::-1]
        _write(out / files["height_r16"], np.ascontiguousarray(rows_first, "<u2").tobytes())
    for key, lc in layer_codes.items():
        files[f"layer_{key}"] = _tile_name(name, key, i, y_engine, "png")
        _write(out / files[f"layer_{key}"], images.png_bytes(lc[window][::-1], up=True))
    return files


def _set_record(p: Tiling, cell: tuple[float, float], tile_cell: tuple[float, float],
                origin: tuple[float, float], heights: tuple[float, float],
                formats: tuple[str, ...]) -> dict:
    """The sidecar's description of the whole set (its layers, facts and tiles go after
    it)."""
    rows, cols = p.shape
    src_rows, src_cols = p.source
    cx, cy = tile_cell
    lo, hi = heights
    span = hi - lo
    return {
        "schema": SCHEMA, "generator": sidecar.GENERATOR, "kind": KIND,
        "engine": p.engine, "tile_size": p.size, "quads_per_tile": p.size - 1,
        "tiles_x": p.tiles_x, "tiles_y": p.tiles_y, "tile_count": p.tiles_x * p.tiles_y,
        "rows": rows, "cols": cols,
        "cell_size_x": cx, "cell_size_y": cy,
        "origin_x": float(origin[0]), "origin_y": float(origin[1]),
        "size_x": (cols - 1) * cx, "size_y": (rows - 1) * cy,
        "units": "world units (metres for the engines): lengths and heights",
        "height_min": lo, "height_max": hi, "height_scale": span,
        "height_bits": 16,
        "height_decode": "height = height_min + value / 65535 * height_scale (one range "
                         "for every tile)",
        "formats": list(formats),
        "rows_order": {
            "png": "top row of the picture = north edge (+Y)",
            "r16": ("first row = south edge (z = 0 in Unity)" if p.engine == "unity" else
                    "first row = north edge (like the PNG)"),
        },
        "tile_index": ("x = column from the west, y = row from the south (Unity +Z)"
                       if p.engine == "unity" else
                       "x = column from the west, y = row from the north (Unreal +Y runs "
                       "down the picture; names _x<i>_y<j> as its tiled import reads)"),
        "shared_edges": "neighbouring tiles repeat their common row/column exactly",
        "source": {"rows": src_rows, "cols": src_cols, "cell_size_x": cell[0],
                   "cell_size_y": cell[1]},
        "resampled": p.resampled,
        "resampling": ({"method": "bilinear", "from": [src_rows, src_cols],
                        "to": [rows, cols],
                        "note": "the whole map was resampled once, corners kept, then "
                                "cut; the world extent is unchanged"}
                       if p.resampled else None),
        "warnings": p.warnings,
        "engine_settings": _engine_settings(p, cx, cy, lo, span),
    }


def _write(path: Path, data: bytes) -> None:
    atomic_write(path, lambda f: f.write(data))


def _unreal_z_scale(span: float) -> float:
    """Unreal's landscape Scale Z that spans ``span`` metres over 0..65535: a landscape
    height is (value - 32768) / 128 x Scale Z centimetres (100: -256..256 m)."""
    return 128.0 * span * 100.0 / 65535.0 if span > 0 else 100.0


def _location(p: Tiling, i: int, y: int, cx: float, cy: float, lo: float,
              span: float) -> dict:
    q = p.size - 1
    if p.engine == "unreal":
        z = _unreal_z_scale(span)
        return {"units": "cm", "x": i * q * cx * 100.0, "y": y * q * cy * 100.0,
                "z": lo * 100.0 + 256.0 * z}
    return {"units": "m", "x": i * q * cx, "y": lo, "z": y * q * cy}


def _engine_settings(p: Tiling, cx: float, cy: float, lo: float, span: float) -> dict:
    q = p.size - 1
    if p.engine == "unreal":
        z = _unreal_z_scale(span)
        return {
            "landscape_scale": [cx * 100.0, cy * 100.0, z],
            "scale_units": "the landscape's Scale as the editor shows it: X, Y = cm per "
                           "quad; Z: height = (value - 32768) / 128 x Z cm (100 spans "
                           "-256..256 m)",
            "z_location_cm": lo * 100.0 + 256.0 * z,
            "note": "Z location puts value 0 at height_min; one landscape from the tiled "
                    "import (x/y in the file names), or one per tile at engine_location",
        }
    return {
        "heightmap_resolution": p.size,
        # Import Raw divides by 65536 (UnityCsReference ImportRaw), not 65535
        "terrain_size": [q * cx, span * 65536 / 65535 if span > 0 else 1.0, q * cy],
        "terrain_size_units": "m: width (X), height (Y), length (Z); the height is "
                              "height_scale x 65536 / 65535 for Import Raw (it reads "
                              "value / 65536); a PNG read as value / 65535 takes "
                              "terrain_height_png",
        "terrain_height_png": span if span > 0 else 1.0,
        "position_y": lo,
        "raw": {"depth": 16, "byte_order": "Windows (little-endian)",
                "flip_vertically": False},
        "note": "each tile is one Terrain at engine_location; connect neighbours "
                "(same Grouping ID, Auto Connect)",
    }


# ------------------------------------------------------------------ reading

@dataclass
class TileSet:
    """A tile set read back: the whole grid (row 0 = south, world units), its layers
    and the sidecar."""

    heights: np.ndarray
    layers: dict[str, np.ndarray]
    sidecar: dict
    codes: np.ndarray


def read_tiles(path: str | os.PathLike, fmt: str = "png") -> TileSet:
    """Read a set by its sidecar (``<name>.json``) into one grid; ``fmt`` picks the
    height files (png or r16). InputFileError when a tile is missing or neighbours
    disagree on a shared edge."""
    path = check_input(Path(path))
    try:
        side = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise InputFileError(f"cannot read the tile sidecar {path}: {exc}") from None
    if not isinstance(side, dict) or side.get("kind") != KIND:
        raise InputFileError(f"{path} is not a Terrain Erosion tile sidecar")
    folder = Path(path).parent
    size = int(side["tile_size"])
    rows, cols = int(side["rows"]), int(side["cols"])
    codes = np.zeros((rows, cols), np.uint16)
    seen = np.zeros((rows, cols), bool)
    layer_codes = {k: np.zeros((rows, cols), np.uint16) for k in side["layers"]}
    for tile in side["tiles"]:
        c0, r0 = tile["grid_offset"]
        window = (slice(r0, r0 + size), slice(c0, c0 + size))
        key = f"height_{fmt}"
        if key not in tile["files"]:
            raise InputFileError(f"{path}: the set has no {fmt} heights")
        f = folder / tile["files"][key]
        if not f.is_file():
            raise InputFileError(f"{path}: tile {f.name} is missing; export the set again")
        if fmt == "png":
            t = read_png(f)[::-1]
        else:
            t = read_r16(f, size)
            t = t if side["engine"] == "unity" else t[::-1]
        if t.shape != (size, size):
            raise InputFileError(f"{f} is {t.shape[1]}x{t.shape[0]}, not {size}x{size}")
        overlap = seen[window]
        if np.any(codes[window][overlap] != t[overlap]):
            raise InputFileError(f"{f} does not match its neighbours on their shared edge")
        codes[window], seen[window] = t, True
        for name in layer_codes:
            lc = read_png(folder / tile["files"][f"layer_{name}"])[::-1]
            layer_codes[name][window] = lc
    if not seen.all():
        raise InputFileError(f"{path}: the tiles do not cover the {rows}x{cols} grid")
    heights = decode(codes, side["height_min"], side["height_max"], 16)
    layers = {k: decode(layer_codes[k], e["min"], e["max"], e["bits"])
              for k, e in side["layers"].items()}
    return TileSet(heights, layers, side, codes)


def state_layers(terrain) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    """The layers of a simcore Terrain as the add-on names its float layers (without
    ``te_``): depths in world units, 0..1 maps and factors as they are; bedrock left out
    (heights cover it) and maps that are zero everywhere (a process that never ran) too.
    Returns (layers, the names of the 0..1 ones)."""
    from ..processes import FIELDS

    layers, fractions = {}, []
    for f in FIELDS.values():
        if not f.exact or f.name in NOT_LAYERS:
            continue
        values = getattr(terrain, f.name)
        if not np.any(values):
            continue
        key = f.exact[3:]
        layers[key] = values * terrain.cell_size if f.is_length else values
        if is_fraction(f.name):
            fractions.append(key)
    return layers, tuple(fractions)


def is_fraction(name: str) -> bool:
    """Whether terrain array ``name`` is a 0..1 map (encoded over 0..1 in a tile; the
    others, depths and factors such as the exposed rock layer, over their own range)."""
    from ..processes import FIELDS
    return FIELDS[name].kind == "fraction"
