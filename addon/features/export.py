"""Map export for game engines and heightmap import.

Export writes the heights and every ``te_*`` float layer of a grid at the grid's
resolution, as 16-bit grayscale PNG (normalised to the map's range) and/or 32-bit
float EXR (exact local values), with Blender's own image writer, and/or one
multi-layer EXR (``<name>_layers.exr``: every map as a named 32-bit float channel,
the sidecar's facts in its header; simcore/formats/exr.py, through the OpenImageIO
module Blender ships -- 4.2 has none: then a message says so), plus a JSON sidecar
(cell size, height range and scale, seed, preset, parameters, add-on version;
simcore/formats/sidecar.py writes it and reads it back) and the rivers (polylines with
flow, simcore/formats/rivers.py) and lakes (mask) as data. Image row 0 is the grid's
lowest local Y, so the picture's top is +Y (north) as seen from above. The change maps
(``change_<process>``: how much each process moved the ground) are signed: their PNG
range is symmetric about 0, so mid-grey is no change.

A re-export is all or nothing: the whole set is written into a staging folder inside
the chosen folder and moved in only when complete, replacing the earlier set of the
same Name (the files its sidecar lists) as a whole; a failure part-way leaves the
earlier set exactly as it was. The Name is a plain file name prefix: the maps never go
outside the chosen folder.

Only the add-on's own float layers are exported: a ``te_*`` attribute that is not one
of them, or has another type or domain than the add-on gives it (a user's own
``te_sediment``, say), is skipped, listed in the sidecar's ``skipped_attributes`` and
named in the operator's report.

Import makes a new grid object from a 16-bit PNG or EXR heightmap (a sidecar next to
it, if present, restores cell size and height range exactly). A multi-layer EXR gives
the heights from its ``height`` channel and every other channel back as the object's
``te_<channel>`` float layer, bit for bit; its header stands in for a missing sidecar.
A heightmap is grayscale: an image whose red, green and blue differ, or with
transparent pixels, is refused (reading one channel would silently give a terrain
nobody drew; a gray image stored as RGB or RGBA imports as it is). The sidecar's
values are checked like any other input (simcore/formats/sidecar.py: a message naming
the file and the key), and an import is all or nothing: it makes a whole grid object
or none.

Blender 4.2 and 5.x: ``Image.save_render`` with a scene's ``image_settings`` works in
both; the settings are put back afterwards. Non-color ("data") images are written
without any view transform.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import bpy
import numpy as np

from ..data import grid as gridio
from ..data import history
from ..data.meshes import quad_mesh
from ..data.objects import remove_object
from ..data.package import FOLDER
from ..data.scale import EXAGGERATION_RANGE, RealScale
from ..simcore import __version__ as simcore_version
from ..simcore.analysis.channels import label_lakes
from ..simcore.analysis.layers import WET_DEPTH
from ..simcore.errors import InputFileError, OutputPathError, UserError
from ..simcore.fileio import atomic_write, check_output
from ..simcore.formats import exr, staging
from ..simcore.formats import rivers as rivers_file
from ..simcore.formats import sidecar as sidecar_file
from ..simcore.formats.lattice import grid_lattice
from ..simcore.formats.sidecar import MAX_COORD, PNG_LEVELS, Sidecar
from ..simcore.processes import FIELDS
from ..ui.boundary import reports_user_errors

#: map formats and the file name ending of each; MULTI_EXR is one file for all maps
FORMATS = {"PNG": ".png", "EXR": ".exr", "MULTI_EXR": "_layers.exr"}
MULTI = "MULTI_EXR"
MISSING_OIIO = ("Multi-layer EXR needs OpenImageIO, which this Blender does not include; "
                "use the separate EXR files")
#: 0..1 maps keep a fixed 0..1 range in PNGs (so values are comparable across runs);
#: map names are the float attributes' names without "te_"
UNIT_MAPS = tuple(f.exact[3:] for f in FIELDS.values() if f.exact and f.unit == "0..1")
#: signed maps: each process's change (``change_<process>``, from te_change_<process>)
#: keeps a range symmetric about 0 in PNGs, so mid-grey is no change
SIGNED_MAPS = tuple(a[3:] for a in gridio.CHANGE_LAYERS.values())


class ExportError(UserError):
    """A map cannot be exported or imported; the message says why."""


def addon_version() -> str:
    """Version of the extension (its manifest), else simcore's."""
    manifest = FOLDER / "blender_manifest.toml"
    try:
        import tomllib
        return str(tomllib.loads(manifest.read_text("utf-8"))["version"])
    except (OSError, KeyError, ValueError):
        return simcore_version


# ------------------------------------------------------------------ image writing

def blender_site_packages() -> list[Path]:
    """The folders where this Blender keeps its own Python packages (in Blender and in
    the bpy module: ``<version>/python/lib/python3.x/site-packages``; on Windows
    ``<version>/python/lib/site-packages``)."""
    found: list[Path] = []
    for kind in ('LOCAL', 'SYSTEM'):
        root = bpy.utils.resource_path(kind)
        if root:
            lib = Path(root) / "python" / "lib"
            found += [*sorted(lib.glob("python3*/site-packages")), lib / "site-packages"]
    return [p for p in dict.fromkeys(found) if p.is_dir()]


def openimageio():
    """The OpenImageIO module Blender ships (built against Blender's own EXR libraries),
    else one the user installed; MissingLibraryError (a UserError) with
    :data:`MISSING_OIIO` when there is none (Blender 4.2)."""
    return exr.load_openimageio(blender_site_packages(), MISSING_OIIO)


def _save_image(path: Path, raster: np.ndarray, fmt: str) -> None:
    """Write a (rows, cols) float raster as a grayscale image, via a temporary file
    that :func:`atomic_write` then puts in place. PNG values must be 0..1."""
    rows, cols = raster.shape
    img = bpy.data.images.new("TE Export", cols, rows, alpha=False, float_buffer=True,
                              is_data=True)
    scene = bpy.data.scenes.new("TE Export")  # its image settings, not the user's
    try:
        rgba = np.empty((rows, cols, 4), np.float32)
        rgba[..., :3] = raster[..., None]
        rgba[..., 3] = 1.0
        img.pixels.foreach_set(rgba.ravel())
        s = scene.render.image_settings
        if fmt == "PNG":
            s.file_format, s.color_depth, s.compression = 'PNG', '16', 15
        else:
            s.file_format, s.color_depth, s.exr_codec = 'OPEN_EXR', '32', 'ZIP'
        s.color_mode = 'BW'
        with tempfile.TemporaryDirectory(prefix="te-export-", dir=path.parent) as tmp:
            tmp_file = Path(tmp) / ("map" + FORMATS[fmt])
            img.save_render(str(tmp_file), scene=scene)
            if not tmp_file.exists():
                raise OutputPathError(f"Blender could not write {path}")
            data = tmp_file.read_bytes()
        atomic_write(path, lambda f: f.write(data))
    except (OSError, RuntimeError) as exc:
        raise OutputPathError(f"cannot write {path}: {exc}") from None
    finally:
        bpy.data.images.remove(img)
        bpy.data.scenes.remove(scene)


def _gray(px: np.ndarray, path: Path) -> np.ndarray:
    """The gray channel of (rows, cols, channels) pixels; InputFileError for a colour
    image (red, green and blue differ) or transparent pixels. A heightmap has one
    value a pixel: taking one channel of a colour image would make a terrain nobody
    drew, without a word."""
    rows, cols, n = px.shape
    gray = px[..., 0]
    if n >= 3:
        same = np.ones((rows, cols), bool)
        for k in (1, 2):
            other = px[..., k]
            same &= (other == gray) | (np.isnan(other) & np.isnan(gray))
        differ = int(rows * cols - np.count_nonzero(same))
        if differ:
            raise InputFileError(
                f"{path} is a colour image (red, green and blue differ at {differ:,} of "
                f"{rows * cols:,} pixels): a heightmap is grayscale, and reading one "
                "channel would give a terrain you did not draw; save it as a grayscale "
                "image (a 16-bit PNG or a float EXR), or the channel you mean on its own")
    if n in (2, 4):
        transparent = int(np.count_nonzero(px[..., -1] != 1.0))
        if transparent:
            raise InputFileError(
                f"{path} has transparent pixels ({transparent:,} with alpha below 1): a "
                "heightmap needs a height at every pixel; save it without alpha")
    return gray


def _load_image(path: Path) -> np.ndarray:
    """A grayscale float64 raster, row 0 = image bottom; InputFileError for a colour
    image or transparent pixels (:func:`_gray`)."""
    if not sidecar_file.is_input_file(path):
        raise InputFileError(f"cannot read {path}: no such file")
    try:
        img = bpy.data.images.load(str(path), check_existing=False)
    except RuntimeError as exc:
        raise InputFileError(f"cannot read {path}: {exc}") from None
    try:
        img.colorspace_settings.is_data = True
        cols, rows = img.size
        if cols < 3 or rows < 3:
            raise InputFileError(f"{path} is {cols}x{rows} pixels; a heightmap needs at "
                                 "least 3x3 (or it is not an image Blender can read)")
        if cols * rows > gridio.MAX_VERTICES:
            raise InputFileError(f"{path} is {cols}x{rows} pixels; the limit is "
                                 f"{gridio.MAX_VERTICES:,} vertices (4096x4096)")
        px = np.empty(cols * rows * img.channels, np.float32)
        img.pixels.foreach_get(px)
        return _gray(px.reshape(rows, cols, img.channels), path).astype(np.float64)
    finally:
        bpy.data.images.remove(img)


# ------------------------------------------------------------------ export

#: the float layers export writes (the exact state and each process's change; the
#: original heights stay on the mesh): FLOAT per POINT, as the add-on writes them
EXPORTED_LAYERS = frozenset(gridio.FLOAT_LAYERS.values()) | frozenset(
    gridio.CHANGE_LAYERS.values())


def skipped_attributes(obj: bpy.types.Object) -> dict[str, str]:
    """The ``te_*`` attributes of ``obj`` that are not the add-on's (not a layer it
    writes, or another type or domain than it gives it: a user's own, whatever it
    means) -> why; export leaves them out."""
    skipped = {}
    for attr in obj.data.attributes:
        name = attr.name
        if not name.startswith("te_"):
            continue
        kind = gridio.our_kind(name)
        if kind is None:
            skipped[name] = "not a layer the add-on writes"
        elif (attr.data_type, attr.domain) != (kind, 'POINT'):
            skipped[name] = (f"{attr.data_type} per {attr.domain}; the add-on's {name} is "
                             f"{kind} per POINT")
    return skipped


def _layers(obj: bpy.types.Object, grid: gridio.Grid) -> dict[str, np.ndarray]:
    """Heights plus every float layer of the add-on's (:data:`EXPORTED_LAYERS`, FLOAT
    per POINT), (rows, cols) in local units."""
    me = obj.data
    z = gridio.read_positions(me)[:, 2][grid.order].reshape(grid.rows, grid.cols)
    maps = {"height": z.astype(np.float64)}
    for attr in me.attributes:
        if attr.name in EXPORTED_LAYERS:
            values = gridio.read_float_layer(me, attr.name, grid)  # None: another kind
            if values is not None:
                maps[attr.name[3:]] = values.astype(np.float64)
    return maps


def skipped_note(skipped: dict[str, str]) -> str:
    """One sentence naming the attributes export skipped and why."""
    return ("Export skipped attributes the add-on did not write: "
            + "; ".join(f"{name} ({why})" for name, why in skipped.items())
            + " (rename them if they are yours)")


def _settings_record(obj: bpy.types.Object) -> dict:
    s = getattr(obj, "terrain_erosion", None)
    if s is None:
        return {}
    try:
        preset = s.to_preset(s.preset)
        params = {name: p.to_dict() for name, p in preset.params.items()}
        enabled = dict(preset.enabled)
        seed = preset.seed
    except UserError:
        params, enabled, seed = {}, {}, None
    out = {"seed": seed, "preset": s.preset, "particles": int(s.particles),
           "particles_per_area": s.rain_per_area(), "rounds_done": int(s.rounds_done),
           "enabled": enabled, "parameters": params,
           "provenance": s.provenance}
    try:
        rock = s.rock.to_column()
    except UserError:
        rock = None
    if rock is not None:  # the rock column (Rock Layers on), as a preset's [rock]
        out["rock"] = rock.to_dict()
    if s.history:  # what the batch command's --history replays
        out["history"] = history.exported(s)
        out["history_complete"] = bool(s.history_from_original)
    return out


def check_export_folder(folder: str | os.PathLike) -> Path:
    """The absolute export folder, or OutputPathError when it is not a writable
    folder."""
    if str(folder).startswith("//") and not bpy.data.filepath:
        raise OutputPathError(f"cannot export to {folder}: it is relative to the .blend, "
                              "which is not saved yet; save it or choose a folder")
    path = Path(bpy.path.abspath(str(folder)))
    if "\0" not in str(path):  # a NUL byte: fileio's check below says so
        try:
            missing = not path.is_dir()
        except OSError:  # too long a name: fileio's check below says so
            missing = False
        if missing:
            raise OutputPathError(f"cannot export to {path}: not an existing folder; "
                                  "create it or choose another")
    check_output(path / ".te-export-check.json")  # over-long names, NUL: a message
    return path


#: longest export Name (bytes): the longest map file name, plus the temporary name a
#: write uses for a moment, stays within the 255 bytes file systems allow
MAX_BASENAME = 150


def check_basename(base: str) -> str:
    """``base`` if it is a plain file name prefix (the maps stay in the chosen folder),
    else ExportError saying what to type."""
    if (not base.strip() or base.startswith(".") or any(c in base for c in '/\\:')
            or any(ord(c) < 32 for c in base)):
        raise ExportError(f"the export Name '{base}' is not a plain file name: use "
                          "letters, digits, '-' or '_', without folders ('/', '\\', "
                          "'..') or a leading '.'; the maps always go into the chosen "
                          "folder")
    if len(base.encode("utf-8")) > MAX_BASENAME:
        raise ExportError(f"the export Name is {len(base.encode('utf-8'))} bytes long; "
                          f"use at most {MAX_BASENAME}")
    return base


def export_maps(obj: bpy.types.Object, folder: str | os.PathLike, basename: str = "",
                formats: tuple[str, ...] = ("PNG", "EXR"), stream_threshold: float = 0.5
                ) -> list[Path]:
    """Write every map of ``obj`` into ``folder``; returns the files written (the
    sidecar ``<basename>.json`` last). Nothing is written if a check fails first.

    All or nothing: the maps, rivers, lakes and the sidecar are written into a staging
    folder inside ``folder`` and moved in when all are written (simcore/formats/staging.py),
    replacing the earlier export of the same name as a whole; a failure part-way
    leaves the earlier set exactly as it was. An engine-tiles set's sidecar of the
    same name is never replaced (OutputPathError, nothing written)."""
    problem = gridio.object_problem(obj)
    if problem:
        raise gridio.GridError(problem)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ExportError(f"unknown map format(s) {unknown}; use PNG, EXR and/or "
                          f"{MULTI}")
    oiio = openimageio() if MULTI in formats else None
    base = check_basename(basename or bpy.path.clean_name(obj.name))
    folder = check_export_folder(folder)
    grid = gridio.detect_grid(obj.data)
    scale = obj.terrain_erosion.real_scale(grid.rows, grid.cols, grid.cell_size)
    maps = _layers(obj, grid)  # ours only: no map is named 'layers' (the multi-layer EXR)
    estimate = len(maps) * grid.rows * grid.cols * 6 * len(formats)
    check_output(folder / f"{base}.json", estimate)
    sidecar_file.check_replaceable(  # an engine-tiles set's: never replaced
        folder, base, sidecar_file.MAPS, "give the export another Name (the tile set's "
        "default is <object>_tiles), or export to another folder")
    previous = sidecar_file.listed_files(folder, base)
    with staging.Staging(folder) as stage:
        names = _write_set(obj, stage.path, base, formats, maps, grid, scale,
                           stream_threshold, oiio)
        stage.commit(names, previous)
    return [folder / name for name in names]


def _write_set(obj, out: Path, base: str, formats, maps: dict, grid: gridio.Grid,
               scale: RealScale, stream_threshold: float, oiio=None) -> list[str]:
    """Write the whole export into ``out`` (the staging folder); returns the file
    names, the sidecar last."""
    written: list[Path] = []
    record: dict[str, dict] = {}
    for name, values in maps.items():
        entry = sidecar_file.map_entry(
            values, name in UNIT_MAPS,
            name[len("change_"):] if name in SIGNED_MAPS else None)
        lo, hi = entry["min"], entry["max"]
        for fmt in (f for f in formats if f != MULTI):
            path = out / f"{base}_{name}{FORMATS[fmt]}"
            if fmt == "PNG":
                span = hi - lo
                norm = np.clip((values - lo) / span, 0, 1) if span > 0 else values * 0
                _save_image(path, norm, fmt)
            else:
                _save_image(path, values, fmt)
            entry["files"][fmt] = path.name
            written.append(path)
        record[name] = entry
    written += _export_water(out, base, maps, grid, stream_threshold, record)
    h = maps["height"]
    multi = f"{base}{FORMATS[MULTI]}" if MULTI in formats else None
    for name in maps if multi else ():
        record[name]["files"][MULTI] = multi
    facts = sidecar_file.Facts(
        grid.rows, grid.cols, grid.cell_x, grid.cell_y, grid.x0, grid.y0,
        float(h.min()), float(h.max()), scale.real_size, scale.exaggeration)
    sidecar = sidecar_file.build(
        facts, addon_version=addon_version(), simcore_version=simcore_version,
        object_name=obj.name, object_scale=list(obj.matrix_world.to_scale()),
        real_cell_size=scale.world_cell, real_size_automatic=scale.automatic,
        real_scale=scale.s, maps=record,
        multilayer=(multi, list(maps), exr.ROW_ORDER) if multi else None,
        settings=_settings_record(obj), skipped=skipped_attributes(obj))
    if multi:
        written.append(exr.write(out / multi, maps, sidecar_file.header_facts(sidecar),
                                 oiio))
    written.append(sidecar_file.write(out / f"{base}.json", sidecar))
    return [p.name for p in written]


def _export_water(folder: Path, base: str, maps: dict, grid: gridio.Grid,
                  threshold: float, record: dict) -> list[Path]:
    """Rivers as polylines (JSON, local units; simcore/formats/rivers.py) and lakes as
    a labelled 16-bit mask."""
    out = []
    if "stream" in maps:
        surface = maps["height"] + maps.get("pool_depth", 0.0)
        rivers = rivers_file.polylines(maps["stream"], surface, threshold, grid.x0,
                                       grid.y0, grid.cell_x, grid.cell_y)
        path = rivers_file.write(folder / f"{base}_rivers.json", threshold, rivers)
        record["rivers"] = sidecar_file.rivers_entry(path.name, len(rivers))
        out.append(path)
    if "pool_depth" in maps:
        labels, n = label_lakes(maps["pool_depth"] > WET_DEPTH)
        path = folder / f"{base}_lakes.png"
        _save_image(path, labels / PNG_LEVELS, "PNG")
        record["lakes"] = sidecar_file.lakes_entry(path.name, n)
        out.append(path)
    return out


# ------------------------------------------------------------------ import

def make_grid_object(name: str, z: np.ndarray, cell_x: float, cell_y: float,
                     x0: float | None = None, y0: float | None = None) -> bpy.types.Object:
    """A new quad grid object (row-major, x fastest) with local heights ``z``; centred
    on the origin unless ``x0``/``y0`` are given. Linked to the active collection."""
    rows, cols = z.shape
    x0 = -(cols - 1) * cell_x / 2 if x0 is None else x0
    y0 = -(rows - 1) * cell_y / 2 if y0 is None else y0
    co, quads = grid_lattice(rows, cols, x0, y0, cell_x, cell_y, z)
    me = bpy.data.meshes.new(name)
    obj = None
    try:  # all or nothing: a failure removes what was made
        quad_mesh(me, co, quads)
        obj = bpy.data.objects.new(name, me)
        bpy.context.collection.objects.link(obj)
    except BaseException:
        if obj is not None:
            bpy.data.objects.remove(obj)
        bpy.data.meshes.remove(me)
        raise
    return obj


def import_heightmap(filepath: str | os.PathLike, cell_size: float = 0.0,
                     height_min: float = 0.0, height_max: float = 1.0,
                     name: str = "") -> bpy.types.Object:
    """A new grid object from a heightmap image.

    EXR values are taken as local heights. 16-bit PNG values are snapped to their
    65536 levels and mapped to ``height_min..height_max``. A Terrain Erosion sidecar
    next to the file overrides the range and gives the cell size; ``cell_size`` > 0
    overrides that (no sidecar and 0: 1 unit per cell). The sidecar's real size and
    vertical exaggeration become the new object's (older sidecars have none: automatic).

    Every value is checked before anything is made (InputFileError naming the file and
    the key); all or nothing: whatever fails once the object is made removes it again.
    """
    path = Path(bpy.path.abspath(str(filepath)))
    if path.suffix.lower() not in (".png", ".exr"):
        raise InputFileError(f"cannot import {path.name}: use a 16-bit PNG or an EXR")
    if not sidecar_file.is_input_file(path):
        raise InputFileError(f"cannot read {path}: no such file")
    layers: dict[str, np.ndarray] = {}
    # ours by its 'height' channel, also with no other layer (Blender's reader makes
    # garbage of a channel of that name); any other EXR (tiled, deep, multi-part, or
    # without that channel: another tool's heightmap) goes to Blender's image reader
    if path.suffix.lower() == ".exr" and exr.has_height(path):
        layers, side = _read_layers(path)
        raw = layers.pop(exr.HEIGHT)
    elif path.suffix.lower() == ".exr" and exr.is_multipart(path):
        raise InputFileError(f"{path} is a multi-part (or deep) EXR, which Blender's "
                             "image reader cannot read: save its heights as a "
                             "single-part EXR (one image, one part) and import that")
    else:
        raw = _load_image(path)
        side = sidecar_file.read(path)
    png = path.suffix.lower() == ".png"
    cell_x = cell_y = 1.0
    x0 = y0 = real = None
    if side is not None:
        facts = sidecar_file.read_facts(side, path, raw.shape, png, cell_size > 0,
                                        EXAGGERATION_RANGE)
        cell_x, cell_y = facts.cell_size_x or 1.0, facts.cell_size_y or 1.0
        if png:
            height_min, height_max = facts.height_min, facts.height_max
        x0, y0 = facts.origin_x, facts.origin_y
        if facts.real_size is not None:
            real = (facts.real_size, facts.vertical_exaggeration)
    if cell_size > 0:
        cell_x = cell_y = float(cell_size)
    x0, y0 = sidecar_file.check_lattice(side, path, raw.shape, cell_x, cell_y, x0, y0)
    if png:
        z = height_min + np.rint(raw * PNG_LEVELS) / PNG_LEVELS * (height_max - height_min)
    else:
        z = raw
    if not np.isfinite(z).all():
        raise InputFileError(f"{path} has NaN/inf pixels; fill them before importing")
    if np.abs(z).max() > MAX_COORD:
        raise InputFileError(f"{path} has heights up to {np.abs(z).max():g} local units; "
                             f"at most {MAX_COORD:g} can be placed (float32 positions): "
                             "scale the heights down (PNG: Height Min/Max)")
    obj = make_grid_object(name or path.stem, z, cell_x, cell_y, x0, y0)
    try:
        obj["terrain_erosion_source"] = str(path)
        grid = gridio.detect_grid(obj.data)  # a grid the add-on can erode, or nothing
        for channel, values in layers.items():
            gridio.write_float_layer(obj.data, "te_" + channel, grid, values)
        if real is not None:
            obj.terrain_erosion.real_size, obj.terrain_erosion.vertical_exaggeration = real
    except BaseException:
        remove_object(obj)
        raise
    return obj


#: the longest attribute name Blender keeps (bytes; longer names are cut)
MAX_ATTRIBUTE_NAME = 63


def _read_layers(path: Path) -> tuple[dict[str, np.ndarray], Sidecar | None]:
    """The channels of a multi-layer EXR (float32 grids by name) and its sidecar:
    the .json beside it, else the facts its header repeats, else None."""
    layers = exr.read(path, openimageio(), max_cells=gridio.MAX_VERTICES)
    rows, cols = layers.channels[exr.HEIGHT].shape
    if rows < 3 or cols < 3:
        raise InputFileError(f"{path} is {cols}x{rows} pixels; a heightmap needs at "
                             "least 3x3")
    for channel, values in layers.channels.items():
        if channel == exr.HEIGHT:
            continue  # checked with the heights
        attr = "te_" + channel
        why = ("it names the stored original heights" if attr == gridio.ORIGINAL_Z
               else "its name is too long for a Blender attribute"
               if len(attr.encode("utf-8")) > MAX_ATTRIBUTE_NAME else "")
        if why:
            raise InputFileError(f"{path}: channel '{channel[:80]}' cannot be a layer "
                                 f"({why}); rename or remove it")
        bad = ~np.isfinite(values)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise InputFileError(f"{path}: channel '{channel}' has {int(bad.sum())} NaN/inf "
                                 f"value(s), the first at row {r}, column {c}; fill them "
                                 "before importing")
    side = sidecar_file.read(path)
    if side is None:
        side = sidecar_file.from_header(layers.attributes, path)
    return layers.channels, side


# ------------------------------------------------------------------ operators & panel

class ExportToFolder:
    """Mixin of the operators that write the active grid's files into a folder picked
    in the file browser (maps, engine tiles): available for a grid the add-on can
    work on (else the reason as the poll message), the file browser on invoke."""

    @classmethod
    def poll(cls, context):
        return gridio.poll_grid(cls, context)

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {'RUNNING_MODAL'}


class TERRAIN_OT_export_maps(ExportToFolder, bpy.types.Operator):
    """Export heights and every layer as 16-bit PNG and/or 32-bit EXR files, and/or one
    multi-layer EXR, with a JSON sidecar (cell size, height range, seed, preset,
    parameters), rivers and lakes"""

    bl_idname = "terrain.export_maps"
    bl_label = "Export Maps"
    bl_options = {'REGISTER'}

    directory: bpy.props.StringProperty(name="Folder", subtype='DIR_PATH',
                                        description="Folder the maps are written to")
    basename: bpy.props.StringProperty(name="Name", default="",
                                       description="File name prefix (empty: object name)")
    png: bpy.props.BoolProperty(name="16-bit PNG", default=True,
                                description="Write 16-bit grayscale PNGs (normalised)")
    exr: bpy.props.BoolProperty(name="32-bit EXR", default=True,
                                description="Write 32-bit float EXRs (exact values)")
    # off by default: Blender 4.2 has no OpenImageIO, and the separate files are what
    # game engines import; on, it adds one file and changes nothing else
    multilayer: bpy.props.BoolProperty(
        name="Multi-layer EXR", default=False,
        description="Also write one EXR holding the heights and every layer as named "
                    "32-bit float channels (<Name>_layers.exr; needs the OpenImageIO "
                    "that Blender 4.5+ includes)")

    @reports_user_errors
    def execute(self, context):
        formats = tuple(f for f, on in (("PNG", self.png), ("EXR", self.exr),
                                         (MULTI, self.multilayer)) if on)
        files = export_maps(context.active_object, self.directory or "//",
                            self.basename, formats)
        self.report({'INFO'}, f"Exported {len(files)} files to {files[-1].parent}")
        skipped = skipped_attributes(context.active_object)
        if skipped:
            self.report({'WARNING'}, skipped_note(skipped))
        return {'FINISHED'}


class TERRAIN_OT_import_heightmap(bpy.types.Operator):
    """Make a new grid object from a 16-bit PNG or EXR heightmap, or from a
    multi-layer EXR with all its layers"""

    bl_idname = "terrain.import_heightmap"
    bl_label = "Import Heightmap"
    bl_options = {'REGISTER', 'UNDO'}

    filepath: bpy.props.StringProperty(name="File", subtype='FILE_PATH')
    filter_glob: bpy.props.StringProperty(default="*.png;*.exr", options={'HIDDEN'})
    cell_size: bpy.props.FloatProperty(
        name="Cell Size", default=0.0, min=0.0, soft_max=100.0,
        description="Distance between vertices (0: from the sidecar, else 1)")
    height_min: bpy.props.FloatProperty(name="Height Min", default=0.0,
                                        description="Height of PNG black (no sidecar)")
    height_max: bpy.props.FloatProperty(name="Height Max", default=1.0,
                                        description="Height of PNG white (no sidecar)")

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {'RUNNING_MODAL'}

    @reports_user_errors
    def execute(self, context):
        obj = import_heightmap(self.filepath, self.cell_size, self.height_min,
                               self.height_max)
        for other in context.view_layer.objects:
            other.select_set(False)
        obj.select_set(True)
        context.view_layer.objects.active = obj
        g = gridio.detect_grid(obj.data)
        self.report({'INFO'}, f"Imported {obj.name}: {g.cols}x{g.rows} grid")
        return {'FINISHED'}


class TERRAIN_PT_export(bpy.types.Panel):
    """Export maps for game engines; import heightmaps"""

    bl_idname = "TERRAIN_PT_export"
    bl_label = "Export / Import"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Erosion"
    bl_parent_id = "TERRAIN_PT_main"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        col = self.layout.column(align=True)
        col.operator(TERRAIN_OT_export_maps.bl_idname, icon='EXPORT')
        col.operator(TERRAIN_OT_import_heightmap.bl_idname, icon='IMPORT')


def _menu_import(self, context):
    self.layout.operator(TERRAIN_OT_import_heightmap.bl_idname,
                         text="Terrain Heightmap (.png/.exr)")


classes = (TERRAIN_OT_export_maps, TERRAIN_OT_import_heightmap, TERRAIN_PT_export)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    bpy.types.TOPBAR_MT_file_import.append(_menu_import)


def unregister() -> None:
    bpy.types.TOPBAR_MT_file_import.remove(_menu_import)
    _unregister_classes()
