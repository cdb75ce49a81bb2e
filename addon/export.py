"""Map export for game engines and heightmap import.

Export writes the heights and every ``te_*`` float layer of a grid at the grid's
resolution, as 16-bit grayscale PNG (normalised to the map's range) and/or 32-bit
float EXR (exact local values), with Blender's own image writer, and/or one
multi-layer EXR (``<name>_layers.exr``: every map as a named 32-bit float channel,
the sidecar's facts in its header; simcore/formats/exr.py, through the OpenImageIO
module Blender ships -- 4.2 has none: then a message says so), plus a JSON sidecar
(cell size, height range and scale, seed, preset, parameters, add-on version) and the
rivers (polylines with flow) and lakes (mask) as data. Image row 0 is the grid's
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
values are checked like any other input (a message naming the file and the key), and
an import is all or nothing: it makes a whole grid object or none.

Blender 4.2 and 5.x: ``Image.save_render`` with a scene's ``image_settings`` works in
both; the settings are put back afterwards. Non-color ("data") images are written
without any view transform.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import bpy
import numpy as np

from . import grid as gridio
from . import staging
from .scale import EXAGGERATION_RANGE, MAX_REAL_SIZE, MIN_REAL_SIZE, RealScale
from .simcore import __version__ as simcore_version
from .simcore.channels import label_lakes, stream_polylines
from .simcore.errors import InputFileError, OutputPathError, UserError, describe_os_error
from .simcore.fileio import atomic_write, check_input, check_output
from .simcore.formats import exr
from .simcore.layers import WET_DEPTH
from .simcore.processes import FIELDS

#: map formats and the file name ending of each; MULTI_EXR is one file for all maps
FORMATS = {"PNG": ".png", "EXR": ".exr", "MULTI_EXR": "_layers.exr"}
MULTI = "MULTI_EXR"
MISSING_OIIO = ("Multi-layer EXR needs OpenImageIO, which this Blender does not include; "
                "use the separate EXR files")
#: sidecar entries not copied into the multi-layer EXR's header (the per-map record and
#: the run's settings are in the sidecar only)
NOT_IN_HEADER = ("maps", "enabled", "parameters", "provenance", "png_decode", "schema",
                 "generator")
SIDECAR_SCHEMA = 1
#: 0..1 maps keep a fixed 0..1 range in PNGs (so values are comparable across runs);
#: map names are the float attributes' names without "te_"
UNIT_MAPS = tuple(f.exact[3:] for f in FIELDS.values() if f.exact and f.unit == "0..1")
#: signed maps: each process's change (``change_<process>``, from te_change_<process>)
#: keeps a range symmetric about 0 in PNGs, so mid-grey is no change
SIGNED_MAPS = tuple(a[3:] for a in gridio.CHANGE_LAYERS.values())
PNG_LEVELS = 65535


class ExportError(UserError):
    """A map cannot be exported or imported; the message says why."""


def addon_version() -> str:
    """Version of the extension (its manifest), else simcore's."""
    manifest = Path(__file__).with_name("blender_manifest.toml")
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


def _is_file(path: Path) -> bool:
    """``path.is_file()``, with a name the system refuses (too long, a NUL byte) or a
    FIFO or device (fileio.check_input: it would block) an InputFileError."""
    if "\0" in str(path):
        raise InputFileError(f"cannot read {str(path)!r}: the path has a NUL byte; fix "
                             "the path")
    try:
        found = path.is_file()
    except OSError as exc:
        raise InputFileError(describe_os_error(exc, path, "read")) from None
    check_input(path)
    return found


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
    if not _is_file(path):
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
    return {"seed": seed, "preset": s.preset, "particles": int(s.particles),
            "particles_per_area": s.rain_per_area(), "rounds_done": int(s.rounds_done),
            "enabled": enabled, "parameters": params,
            "provenance": s.provenance}


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


def previous_export(folder: Path, base: str) -> list[str]:
    """The files of an earlier export ``base`` in ``folder`` that its sidecar (ours:
    ``generator`` Terrain Erosion) lists -- the sidecar first. A re-export replaces
    them as a whole (those the new set has no more are removed). Names that are not
    plain ``<base>_*`` files in the folder are never taken as ours."""
    side = folder / f"{base}.json"
    try:
        data = json.loads(side.read_text("utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or data.get("generator") != "Terrain Erosion" \
            or not isinstance(data.get("maps"), dict):
        return []
    names = [side.name]
    for entry in data["maps"].values():
        files = entry.get("files") if isinstance(entry, dict) else None
        for name in (files.values() if isinstance(files, dict) else ()):
            if (isinstance(name, str) and name.startswith(f"{base}_")
                    and Path(name).name == name and "\\" not in name
                    and (folder / name).is_file()):
                names.append(name)
    return list(dict.fromkeys(names))


def export_maps(obj: bpy.types.Object, folder: str | os.PathLike, basename: str = "",
                formats: tuple[str, ...] = ("PNG", "EXR"), stream_threshold: float = 0.5
                ) -> list[Path]:
    """Write every map of ``obj`` into ``folder``; returns the files written (the
    sidecar ``<basename>.json`` last). Nothing is written if a check fails first.

    All or nothing: the maps, rivers, lakes and the sidecar are written into a staging
    folder inside ``folder`` and moved in when all are written (addon/staging.py),
    replacing the earlier export of the same name as a whole; a failure part-way
    leaves the earlier set exactly as it was."""
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
    previous = previous_export(folder, base)
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
        lo, hi = (0.0, 1.0) if name in UNIT_MAPS else (float(values.min()),
                                                       float(values.max()))
        entry = {"min": lo, "max": hi, "files": {}}
        if name in SIGNED_MAPS:  # mid-grey = 0: the range is symmetric
            reach = max(abs(lo), abs(hi))
            lo, hi = -reach, reach
            entry = {"min": lo, "max": hi, "files": {}, **_change_entry(name, values)}
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
    sidecar = {
        "schema": SIDECAR_SCHEMA,
        "generator": "Terrain Erosion",
        "addon_version": addon_version(),
        "simcore_version": simcore_version,
        "object": obj.name,
        "rows": grid.rows, "cols": grid.cols,
        "cell_size_x": grid.cell_x, "cell_size_y": grid.cell_y,
        "origin_x": grid.x0, "origin_y": grid.y0,
        "units": "local (object space); world = local x object scale",
        "object_scale": list(obj.matrix_world.to_scale()),
        # the real world the erosion ran in (addon/scale.py; sidecars before issue 29
        # have none: an import then leaves Real Size automatic)
        "real_size": scale.real_size, "real_cell_size": scale.world_cell,
        "real_size_automatic": scale.automatic,
        "vertical_exaggeration": scale.exaggeration, "real_scale": scale.s,
        "real_units": "metres across = local x real_scale; metres of height = local x "
                      "real_scale / vertical_exaggeration",
        "height_min": float(h.min()), "height_max": float(h.max()),
        "height_scale": float(h.max() - h.min()),
        "png_decode": "value = min + (png / 65535) * (max - min)",
        "image_rows": "image bottom row = lowest local Y (top of the picture = +Y)",
        **({"multilayer_exr": {
            "file": multi, "channels": list(maps),
            "decode": "one 32-bit float channel per map, named as the map (EXR lists them "
                      "alphabetically): the exact local values; header attributes "
                      "TerrainErosion/<key> repeat this sidecar's facts",
            "row_order": exr.ROW_ORDER}} if multi else {}),
        "maps": record,
        **_settings_record(obj),
    }
    skipped = skipped_attributes(obj)
    if skipped:
        sidecar["skipped_attributes"] = skipped
    if multi:
        facts = {k: v for k, v in sidecar.items() if k not in NOT_IN_HEADER}
        written.append(exr.write(out / multi, maps, facts, oiio))
    side = out / f"{base}.json"
    text = json.dumps(sidecar, indent=1, sort_keys=False)
    atomic_write(side, lambda f: f.write(text.encode("utf-8")))
    written.append(side)
    return [p.name for p in written]


def _change_entry(name: str, values: np.ndarray) -> dict:
    """What a change map's sidecar entry says besides its range."""
    process = name[len("change_"):]
    return {
        "process": process, "signed": True,
        "meaning": f"how much {process} raised (+) or lowered (-) the ground since the "
                   "original heights (te_original_z); the change maps add up to the whole "
                   "change",
        "units": "local (like height; EXR: the exact values)",
        "value_min": float(values.min()), "value_max": float(values.max()),
        "png_decode": "value = min + (png / 65535) * (max - min), min = -max: mid-grey "
                      "(32767.5) is no change",
    }


def _export_water(folder: Path, base: str, maps: dict, grid: gridio.Grid,
                  threshold: float, record: dict) -> list[Path]:
    """Rivers as polylines (JSON, local units) and lakes as a labelled 16-bit mask."""
    out = []
    if "stream" in maps:
        surface = maps["height"] + maps.get("pool_depth", 0.0)
        lines = stream_polylines(maps["stream"], surface, threshold, 4, grid.cell_x,
                                 grid.cell_y)
        rivers = [{"points": [[grid.x0 + c * grid.cell_x, grid.y0 + r * grid.cell_y,
                               float(surface[r, c])] for r, c in cells],
                   "flow": [round(float(f), 6) for f in flow]} for cells, flow in lines]
        path = folder / f"{base}_rivers.json"
        text = json.dumps({"threshold": threshold, "units": "local", "rivers": rivers})
        atomic_write(path, lambda f: f.write(text.encode("utf-8")))
        record["rivers"] = {"files": {"JSON": path.name}, "count": len(rivers)}
        out.append(path)
    if "pool_depth" in maps:
        labels, n = label_lakes(maps["pool_depth"] > WET_DEPTH)
        path = folder / f"{base}_lakes.png"
        _save_image(path, labels / PNG_LEVELS, "PNG")
        record["lakes"] = {"files": {"PNG": path.name}, "count": n,
                           "decode": "lake id = png value (0 = dry)"}
        out.append(path)
    return out


# ------------------------------------------------------------------ import

class Sidecar(dict):
    """A sidecar's entries (the .json beside a map, or the facts a multi-layer EXR's
    header repeats); ``where`` names it in messages, ``fix`` says how to mend it."""

    def __init__(self, data: dict, where: str, fix: str) -> None:
        super().__init__(data)
        self.where, self.fix = where, fix


def read_sidecar(path: Path) -> Sidecar | None:
    """The sidecar of an exported map (``<base>.json`` for ``<base>_height.*``), or
    None when there is none (a JSON file that is not ours is not a sidecar)."""
    stem = path.stem
    candidates = [path.with_suffix(".json")]
    for ending in ("_height", "_layers"):
        if stem.endswith(ending):
            candidates.insert(0, path.with_name(stem[:-len(ending)] + ".json"))
    for side in candidates:
        if _is_file(side):
            try:
                data = json.loads(side.read_text("utf-8"))
            except (OSError, ValueError) as exc:
                raise InputFileError(f"cannot read the sidecar {side}: {exc}") from None
            if isinstance(data, dict) and data.get("generator") == "Terrain Erosion":
                return Sidecar(data, f"the sidecar {side}",
                               "fix it, export the map again, or move the sidecar away to "
                               "import with the values you give")
    return None


#: largest local coordinate an import makes (|x|, |y| or a height): float32 positions
#: still resolve a unit there; farther out Blender cannot place vertices usefully
MAX_COORD = 1e7
#: smallest cell relative to the grid's largest coordinate (16 float32 steps): finer
#: and neighbouring vertices merge
MIN_CELL_RELATIVE = 2.0 ** -20
_REQUIRED = object()


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _side_error(side: Sidecar, key: str, problem: str, need: str) -> InputFileError:
    return InputFileError(f"{side.where}: {key!r} {problem}; it must be {need}: "
                          f"{side.fix}")


def _side_number(side: Sidecar, key: str, need: str, ok=lambda v: True,
                 default=_REQUIRED):
    """The finite number ``side[key]`` (``ok`` of it true), ``default`` when absent;
    InputFileError naming the sidecar and the key otherwise (text, null, a list, a
    bool, NaN, inf, out of range, missing and required)."""
    if key not in side:
        if default is not _REQUIRED:
            return default
        raise _side_error(side, key, "is missing", need)
    value, number = side[key], None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond any float
            number = None
    if number is None or not math.isfinite(number) or not ok(number):
        raise _side_error(side, key, f"is {_shown(value)}", need)
    return number


def _sidecar_facts(side: Sidecar, path: Path, shape: tuple[int, int], png: bool,
                   cell_size: float) -> dict:
    """What the import takes from a sidecar, every value checked (a key that is
    present must be valid; a key the import needs must be present): cell sizes (unless
    ``cell_size`` > 0 is given), the PNG height range, the origin, the real size."""
    rows, cols = shape
    for key, n in (("rows", rows), ("cols", cols)):
        got = side.get(key, n)
        if isinstance(got, bool) or not isinstance(got, int) or got != n:
            raise _side_error(side, key, f"is {_shown(got)}, but {path.name} is {cols}x"
                              f"{rows} pixels", f"{n} (or the sidecar belongs to another "
                              "image)")
    inside = f"a number within ±{MAX_COORD:g} local units"
    cell = "a cell size in local units above 0"
    facts = {"cell_x": _side_number(side, "cell_size_x", cell, lambda v: v > 0,
                                    None if cell_size > 0 else _REQUIRED)}
    facts["cell_y"] = _side_number(side, "cell_size_y", cell, lambda v: v > 0,
                                   facts["cell_x"])
    low = _side_number(side, "height_min", inside, lambda v: abs(v) <= MAX_COORD,
                       _REQUIRED if png else None)
    facts["height_min"] = low
    facts["height_max"] = _side_number(
        side, "height_max", f"{inside}, at least 'height_min' ({low!r})",
        lambda v: abs(v) <= MAX_COORD and (low is None or v >= low),
        _REQUIRED if png else None)
    for key in ("origin_x", "origin_y"):
        facts[key] = _side_number(side, key, inside, lambda v: abs(v) <= MAX_COORD, None)
    facts["real"] = None
    lo, hi = EXAGGERATION_RANGE
    exaggeration = _side_number(side, "vertical_exaggeration", f"between {lo:g} and {hi:g}",
                                lambda v: lo <= v <= hi, 1.0)
    if "real_size" in side:  # sidecars before issue 29 have none: Real Size automatic
        real = _side_number(side, "real_size", f"0 (automatic) or {MIN_REAL_SIZE:g} to "
                            f"{MAX_REAL_SIZE:g} metres",
                            lambda v: v == 0 or MIN_REAL_SIZE <= v <= MAX_REAL_SIZE)
        try:
            RealScale.of(3, 3, 1.0, real, exaggeration)
        except UserError as exc:
            raise InputFileError(f"{side.where}: {exc}; {side.fix}") from None
        facts["real"] = (real, exaggeration)
    return facts


def _check_lattice(side: Sidecar | None, path: Path, shape: tuple[int, int],
                   cell_x: float, cell_y: float, x0: float | None,
                   y0: float | None) -> tuple[float, float]:
    """The origin (x0, y0) of a grid of ``shape`` with these cells: every vertex within
    :data:`MAX_COORD` and apart from its neighbours in float32; InputFileError naming
    the key (or the Cell Size given) otherwise."""
    rows, cols = shape
    origin = []
    for axis, n, cell, start in (("x", cols, cell_x, x0), ("y", rows, cell_y, y0)):
        start = -(n - 1) * cell / 2 if start is None else start
        reach = max(abs(start), abs(start + (n - 1) * cell))
        problem = None
        if not reach <= MAX_COORD:
            problem = (f"makes the {n}-vertex grid reach {reach:g} local units in {axis}; "
                       f"at most {MAX_COORD:g}")
        elif cell < MIN_CELL_RELATIVE * max(reach, 1.0):
            problem = (f"is too small for a grid reaching {reach:g} local units in {axis}: "
                       "its vertices would merge (float32 positions)")
        if problem:
            key = f"cell_size_{axis}"
            if side is not None and key in side:
                raise InputFileError(f"{side.where}: {key!r} ({cell:g}) {problem}; "
                                     f"{side.fix}")
            raise InputFileError(f"cannot import {path.name}: a Cell Size of {cell:g} "
                                 f"{problem}; give another Cell Size")
        origin.append(start)
    return origin[0], origin[1]


def quad_mesh(me: bpy.types.Mesh, co: np.ndarray, quads: np.ndarray) -> bpy.types.Mesh:
    """Fill an empty mesh with vertices ``co`` (n, 3) and quads (m, 4), fast."""
    me.vertices.add(len(co))
    me.attributes["position"].data.foreach_set(
        "vector", np.ascontiguousarray(co, np.float32).ravel())
    me.loops.add(quads.size)
    me.loops.foreach_set("vertex_index", np.ascontiguousarray(quads, np.int32).ravel())
    me.polygons.add(len(quads))
    me.polygons.foreach_set("loop_start", np.arange(0, quads.size, 4, dtype=np.int32))
    me.update(calc_edges=True)
    return me


def make_grid_object(name: str, z: np.ndarray, cell_x: float, cell_y: float,
                     x0: float | None = None, y0: float | None = None) -> bpy.types.Object:
    """A new quad grid object (row-major, x fastest) with local heights ``z``; centred
    on the origin unless ``x0``/``y0`` are given. Linked to the active collection."""
    rows, cols = z.shape
    x0 = -(cols - 1) * cell_x / 2 if x0 is None else x0
    y0 = -(rows - 1) * cell_y / 2 if y0 is None else y0
    yy, xx = np.mgrid[0:rows, 0:cols]
    co = np.stack([x0 + xx * cell_x, y0 + yy * cell_y, z], axis=-1)
    qr, qc = np.mgrid[0:rows - 1, 0:cols - 1]
    first = (qr * cols + qc).ravel()
    quads = np.stack([first, first + 1, first + cols + 1, first + cols], axis=1)
    me = bpy.data.meshes.new(name)
    obj = None
    try:  # all or nothing: a failure removes what was made
        quad_mesh(me, co.reshape(-1, 3), quads)
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
    if not _is_file(path):
        raise InputFileError(f"cannot read {path}: no such file")
    layers: dict[str, np.ndarray] = {}
    # ours by its 'height' channel, also with no other layer (Blender's reader makes
    # garbage of a channel of that name); any other EXR (tiled, deep, multi-part, or
    # without that channel: another tool's heightmap) goes to Blender's image reader
    if path.suffix.lower() == ".exr" and exr.has_height(path):
        layers, side = _read_layers(path)
        raw = layers.pop(exr.HEIGHT)
    else:
        raw = _load_image(path)
        side = read_sidecar(path)
    png = path.suffix.lower() == ".png"
    cell_x = cell_y = 1.0
    x0 = y0 = real = None
    if side is not None:
        facts = _sidecar_facts(side, path, raw.shape, png, cell_size)
        cell_x, cell_y = facts["cell_x"] or 1.0, facts["cell_y"] or 1.0
        if png:
            height_min, height_max = facts["height_min"], facts["height_max"]
        x0, y0, real = facts["origin_x"], facts["origin_y"], facts["real"]
    if cell_size > 0:
        cell_x = cell_y = float(cell_size)
    x0, y0 = _check_lattice(side, path, raw.shape, cell_x, cell_y, x0, y0)
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
        _remove_object(obj)
        raise
    return obj


def _remove_object(obj: bpy.types.Object) -> None:
    """Remove an object this module made, and its mesh."""
    me = obj.data
    bpy.data.objects.remove(obj)
    if me is not None and me.users == 0:
        bpy.data.meshes.remove(me)


def _read_layers(path: Path) -> tuple[dict[str, np.ndarray], Sidecar | None]:
    """The channels of a multi-layer EXR (float32 grids by name) and its sidecar:
    the .json beside it, else the facts its header repeats, else None."""
    layers = exr.read(path, openimageio(), max_cells=gridio.MAX_VERTICES)
    rows, cols = layers.channels[exr.HEIGHT].shape
    if rows < 3 or cols < 3:
        raise InputFileError(f"{path} is {cols}x{rows} pixels; a heightmap needs at "
                             "least 3x3")
    side = read_sidecar(path)
    if side is None and layers.attributes.get("generator") == "Terrain Erosion":
        side = Sidecar({}, f"the header of {path}", "export it again")
        for key, text in layers.attributes.items():
            try:
                side[key] = json.loads(text)
            except ValueError:
                side[key] = text
    return layers.channels, side


# ------------------------------------------------------------------ operators & panel

class TERRAIN_OT_export_maps(bpy.types.Operator):
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

    @classmethod
    def poll(cls, context):
        problem = gridio.object_problem(context.active_object)
        if problem:
            cls.poll_message_set(problem)
            return False
        return True

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {'RUNNING_MODAL'}

    def execute(self, context):
        formats = tuple(f for f, on in (("PNG", self.png), ("EXR", self.exr),
                                         (MULTI, self.multilayer)) if on)
        try:
            files = export_maps(context.active_object, self.directory or "//",
                                self.basename, formats)
        except UserError as exc:
            self.report({'ERROR'}, str(exc))
            return {'CANCELLED'}
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

    def execute(self, context):
        try:
            obj = import_heightmap(self.filepath, self.cell_size, self.height_min,
                                   self.height_max)
        except UserError as exc:
            self.report({'ERROR'}, str(exc))
            return {'CANCELLED'}
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


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.TOPBAR_MT_file_import.append(_menu_import)


def unregister() -> None:
    bpy.types.TOPBAR_MT_file_import.remove(_menu_import)
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
