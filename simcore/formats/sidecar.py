"""The export sidecar: ``<name>.json`` beside the maps of a map export.

It says what the maps are and how to read them back: the grid (``rows``, ``cols``,
``cell_size_x``/``_y``, ``origin_x``/``_y``, in the object's local units), its height
range (``height_min``, ``height_max``: a 16-bit PNG decodes as ``min + png / 65535 *
(max - min)``), the real world the erosion ran in (``real_size``,
``vertical_exaggeration``, ...), one entry per map under ``maps`` (its range and files;
a change map's process and signed range), the rivers and lakes, the multi-layer EXR,
the run's settings, the object's erosion history (``history``: its entries,
simcore/formats/history.py), and the attributes the export skipped. ``generator`` =
:data:`GENERATOR` marks a sidecar as ours; a multi-layer EXR's header repeats the
facts (:func:`header_facts`), so it stands in for a missing sidecar
(:func:`from_header`).

One schema, both ways: :class:`Facts` is what an import reads back, under the names
:func:`build` writes them; :func:`read_facts` checks every value (a key that is present
must be valid, a key the import needs must be present) and names the file and the key
when one is not. Sidecars written before the real size (no ``real_size``) still load:
the size is then automatic. :func:`listed_files` is what a re-export replaces: the
files an earlier sidecar of ours of the same kind lists, never a name outside its
folder (engine tiles use it too). A sidecar with a ``kind`` (an engine-tiles set's) is
never taken for a map export's: :func:`read` refuses it by name, and
:func:`check_replaceable` keeps either writer from replacing the other's.

No bpy here: the add-on (addon/features/export.py) gathers the values and writes the images.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path

from ..errors import InputFileError, OutputPathError, describe_os_error
from ..fileio import atomic_write, check_input
from .presets import REAL_SIZE_KEY

SCHEMA = 1
GENERATOR = "Terrain Erosion"
#: what :func:`kind_of` calls a map export's sidecar (it has no ``kind`` key; sidecars
#: of other sets of ours, engine tiles, carry one)
MAPS = "maps"
#: where each kind lists its entries (each with ``files``), and as what
_ENTRIES: dict[str, tuple[str, type]] = {MAPS: ("maps", dict),
                                         "engine_tiles": ("tiles", list)}
#: sidecar entries not copied into the multi-layer EXR's header (the per-map record and
#: the run's settings are in the sidecar only)
NOT_IN_HEADER = ("maps", "enabled", "parameters", "provenance", "history", "png_decode",
                 "schema", "generator")
PNG_LEVELS = 65535
PNG_DECODE = "value = min + (png / 65535) * (max - min)"
IMAGE_ROWS = "image bottom row = lowest local Y (top of the picture = +Y)"
MIN_REAL_SIZE, MAX_REAL_SIZE = REAL_SIZE_KEY[1:3]
#: largest local coordinate an import makes (|x|, |y| or a height): float32 positions
#: still resolve a unit there; farther out Blender cannot place vertices usefully
MAX_COORD = 1e7
#: smallest cell relative to the grid's largest coordinate (16 float32 steps): finer
#: and neighbouring vertices merge
MIN_CELL_RELATIVE = 2.0 ** -20


@dataclasses.dataclass(frozen=True)
class Facts:
    """The grid a sidecar describes, under the keys the sidecar holds them. Read back,
    a value the sidecar does not give is None (``vertical_exaggeration``: 1;
    ``real_size`` None: a sidecar written before real sizes, automatic)."""

    rows: int
    cols: int
    cell_size_x: float | None
    cell_size_y: float | None
    origin_x: float | None
    origin_y: float | None
    height_min: float | None
    height_max: float | None
    real_size: float | None = None
    vertical_exaggeration: float = 1.0


# ------------------------------------------------------------------ writing

def map_entry(values, unit_range: bool = False, process: str | None = None) -> dict:
    """A map's entry under ``maps`` (its ``files`` filled in as they are written):
    the PNG range -- 0..1 for a 0..1 map (comparable across runs), else the values'
    range; a change map (``process``: the process that made it) has a range symmetric
    about 0, so mid-grey is no change."""
    lo, hi = (0.0, 1.0) if unit_range else (float(values.min()), float(values.max()))
    if process is None:
        return {"min": lo, "max": hi, "files": {}}
    reach = max(abs(lo), abs(hi))
    return {"min": -reach, "max": reach, "files": {}, **_change_entry(process, values)}


def _change_entry(process: str, values) -> dict:
    """What a change map's entry says besides its range."""
    return {
        "process": process, "signed": True,
        "meaning": f"how much {process} raised (+) or lowered (-) the ground since the "
                   "original heights (te_original_z); the change maps add up to the whole "
                   "change",
        "units": "local (like height; EXR: the exact values)",
        "value_min": float(values.min()), "value_max": float(values.max()),
        "png_decode": f"{PNG_DECODE}, min = -max: mid-grey (32767.5) is no change",
    }


def rivers_entry(file: str, count: int) -> dict:
    return {"files": {"JSON": file}, "count": count}


def lakes_entry(file: str, count: int) -> dict:
    return {"files": {"PNG": file}, "count": count, "decode": "lake id = png value (0 = dry)"}


def build(facts: Facts, *, addon_version: str, simcore_version: str, object_name: str,
          object_scale: list[float], real_cell_size: float, real_size_automatic: bool,
          real_scale: float, maps: dict[str, dict], multilayer: tuple[str, list[str],
                                                                      str] | None = None,
          settings: dict | None = None, skipped: dict[str, str] | None = None) -> dict:
    """The sidecar of an export: ``facts`` (every field given), the maps' entries, the
    multi-layer EXR (file, channels, row order) if one is written, the run's settings
    and the attributes skipped."""
    if facts.height_min is None or facts.height_max is None:
        raise ValueError("an export's sidecar needs its height range")
    sidecar = {
        "schema": SCHEMA,
        "generator": GENERATOR,
        "addon_version": addon_version,
        "simcore_version": simcore_version,
        "object": object_name,
        "rows": facts.rows, "cols": facts.cols,
        "cell_size_x": facts.cell_size_x, "cell_size_y": facts.cell_size_y,
        "origin_x": facts.origin_x, "origin_y": facts.origin_y,
        "units": "local (object space); world = local x object scale",
        "object_scale": object_scale,
        # the real world the erosion ran in (sidecars written before real sizes have
        # none: an import then leaves Real Size automatic)
        "real_size": facts.real_size, "real_cell_size": real_cell_size,
        "real_size_automatic": real_size_automatic,
        "vertical_exaggeration": facts.vertical_exaggeration, "real_scale": real_scale,
        "real_units": "metres across = local x real_scale; metres of height = local x "
                      "real_scale / vertical_exaggeration",
        "height_min": facts.height_min, "height_max": facts.height_max,
        "height_scale": facts.height_max - facts.height_min,
        "png_decode": PNG_DECODE,
        "image_rows": IMAGE_ROWS,
    }
    if multilayer is not None:
        file, channels, row_order = multilayer
        sidecar["multilayer_exr"] = {
            "file": file, "channels": channels,
            "decode": "one 32-bit float channel per map, named as the map (EXR lists them "
                      "alphabetically): the exact local values; header attributes "
                      "TerrainErosion/<key> repeat this sidecar's facts",
            "row_order": row_order}
    sidecar["maps"] = maps
    sidecar.update(settings or {})
    if skipped:
        sidecar["skipped_attributes"] = skipped
    return sidecar


def state_header(meta: dict, *, simcore_version: str, shape: tuple[int, int],
                 cell_size: float, channels: list[str], height_min: float,
                 height_max: float, row_order: str) -> dict:
    """The facts a multi-layer EXR of a state (``python -m simcore export``) holds in
    its header, under the sidecar's keys: the run's metadata, the grid, world units
    taken 1:1 (an import in Blender takes them as local units and, when the extent is a
    real size, as that real size), the height range and the channels."""
    rows, cols = shape
    cell = float(cell_size)
    extent = (max(rows, cols) - 1) * cell
    facts = {
        **{k: v for k, v in meta.items() if k not in ("units", "cell_size")},
        "simcore_version": simcore_version,
        "rows": rows, "cols": cols,
        "cell_size_x": cell, "cell_size_y": cell,
        "units": "world units (the CLI's): heights and lengths as world units, "
                 "0..1 maps as they are; a Blender import takes them as local units",
        "height_min": float(height_min), "height_max": float(height_max),
        "height_scale": float(height_max - height_min),
        "vertical_exaggeration": 1.0,
        "image_rows": IMAGE_ROWS,
        "multilayer_exr": {
            "channels": list(channels),
            "decode": "one 32-bit float channel per map, named as the add-on's float "
                      "layer without 'te_' (EXR lists them alphabetically): lengths in "
                      "world units",
            "row_order": row_order},
    }
    if MIN_REAL_SIZE <= extent <= MAX_REAL_SIZE:
        # the world the run used, 1:1: eroding the import in Blender goes on in it
        facts["real_size"] = extent
    return facts


def header_facts(sidecar: dict) -> dict:
    """The entries a multi-layer EXR's header repeats."""
    return {k: v for k, v in sidecar.items() if k not in NOT_IN_HEADER}


def dumps(sidecar: dict) -> str:
    return json.dumps(sidecar, indent=1, sort_keys=False)


def write(path: Path, sidecar: dict) -> Path:
    """Write the sidecar (all or nothing)."""
    text = dumps(sidecar)
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))


# ------------------------------------------------------------------ reading

class Sidecar(dict):
    """A sidecar's entries (the .json beside a map, or the facts a multi-layer EXR's
    header repeats); ``where`` names it in messages, ``fix`` says how to mend it."""

    def __init__(self, data: dict, where: str, fix: str) -> None:
        super().__init__(data)
        self.where, self.fix = where, fix


def is_input_file(path: Path) -> bool:
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


def read(path: Path) -> Sidecar | None:
    """The sidecar of an exported map (``<base>.json`` for ``<base>_height.*`` or
    ``<base>_layers.exr``, else the map's name with ``.json``), or None when there is
    none (a JSON file that is not ours is not a sidecar); InputFileError when it cannot
    be read or is not JSON."""
    path = Path(path)
    stem = path.stem
    candidates = [path.with_suffix(".json")]
    for ending in ("_height", "_layers"):
        if stem.endswith(ending):
            candidates.insert(0, path.with_name(stem[:-len(ending)] + ".json"))
    for side in candidates:
        if is_input_file(side):
            try:
                data = json.loads(side.read_text("utf-8"))
            except (OSError, ValueError) as exc:
                raise InputFileError(f"cannot read the sidecar {side}: {exc}") from None
            kind = kind_of(data)
            if kind is not None and kind != MAPS:
                raise InputFileError(
                    f"{side} is a Terrain Erosion {_shown(kind)} sidecar, not a map "
                    "export's: its numbers do not describe this map; move it away, or "
                    "export the maps again under another name")
            if kind == MAPS:
                return Sidecar(data, f"the sidecar {side}",
                               "fix it, export the map again, or move the sidecar away to "
                               "import with the values you give")
    return None


def from_header(attributes: dict[str, str], path: Path) -> Sidecar | None:
    """The sidecar a multi-layer EXR's header repeats (its ``TerrainErosion/<key>``
    attributes: JSON text, or a string as it is), or None when the file is not ours."""
    if attributes.get("generator") != GENERATOR:
        return None
    side = Sidecar({}, f"the header of {path}", "export it again")
    for key, text in attributes.items():
        try:
            side[key] = json.loads(text)
        except ValueError:
            side[key] = text
    return side


def kind_of(data) -> str | None:
    """What a sidecar of ours is: :data:`MAPS` for a map export's (it carries no
    ``kind``), else its ``kind`` (an engine-tiles set: ``engine_tiles``); None for JSON
    that is not ours."""
    if not isinstance(data, dict) or data.get("generator") != GENERATOR:
        return None
    kind = data.get("kind", MAPS)
    return kind if isinstance(kind, str) else repr(kind)


def load_ours(side: Path) -> dict | None:
    """The JSON of ``side`` if it is a sidecar of ours, else None (missing, unreadable,
    not JSON, not ours)."""
    try:
        data = json.loads(side.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if kind_of(data) is not None else None


def check_replaceable(folder: Path, base: str, kind: str, rename: str,
                      any_file: bool = False) -> None:
    """OutputPathError when a set of ``kind`` named ``base`` would replace a
    ``<base>.json`` in ``folder`` that is a sidecar of ours of another kind (with
    ``any_file``: any file but a sidecar of ``kind``); ``rename`` says what to do."""
    side = folder / f"{base}.json"
    other = kind_of(load_ours(side))
    if other == kind or not (other is not None or any_file and os.path.lexists(side)):
        return
    what = ("a map export's sidecar" if other == MAPS else
            f"the sidecar of a Terrain Erosion {other} set" if other is not None else
            f"not the sidecar of an earlier {kind} set")
    raise OutputPathError(f"cannot write {side}: it is {what}, which this would "
                          f"replace; {rename}")


def listed_files(folder: Path, base: str, kind: str = MAPS) -> list[str]:
    """What a re-export of ``base`` of ``kind`` replaces: the files an earlier set of
    the same kind in ``folder`` lists in its sidecar ``<base>.json`` (ours) -- the
    sidecar first (a map export: the files of each entry under ``maps``; engine tiles:
    of each entry under ``tiles``). Names that are not plain ``<base>_*`` files in the
    folder are never taken as ours; a sidecar of another kind lists nothing."""
    side = folder / f"{base}.json"
    data = load_ours(side)
    if data is None or kind_of(data) != kind:
        return []
    key, form = _ENTRIES.get(kind, ("", dict))
    found = data.get(key)
    if not (isinstance(found, form) and isinstance(found, (dict, list))):
        return []
    entries = list(found.values()) if isinstance(found, dict) else found
    names = [side.name]
    for entry in entries:
        files = entry.get("files") if isinstance(entry, dict) else None
        for name in (files.values() if isinstance(files, dict) else ()):
            if (isinstance(name, str) and name.startswith(f"{base}_")
                    and Path(name).name == name and "\\" not in name
                    and (folder / name).is_file()):
                names.append(name)
    return list(dict.fromkeys(names))


_REQUIRED = object()


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _side_error(side: Sidecar, key: str, problem: str, need: str) -> InputFileError:
    return InputFileError(f"{side.where}: {key!r} {problem}; it must be {need}: "
                          f"{side.fix}")


def _number(side: Sidecar, key: str, need: str, ok=lambda v: True, default=_REQUIRED):
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


def read_facts(side: Sidecar, path: Path, shape: tuple[int, int], png: bool,
               cell_given: bool, exaggeration_range: tuple[float, float]) -> Facts:
    """What an import of the map ``path`` (a (rows, cols) image) takes from its
    sidecar, every value checked: the cell sizes (needed unless ``cell_given``), the
    height range (needed for a PNG), the origin, the real size and the vertical
    exaggeration (within ``exaggeration_range``)."""
    rows, cols = shape
    for key, n in (("rows", rows), ("cols", cols)):
        got = side.get(key, n)
        if isinstance(got, bool) or not isinstance(got, int) or got != n:
            raise _side_error(side, key, f"is {_shown(got)}, but {path.name} is {cols}x"
                              f"{rows} pixels", f"{n} (or the sidecar belongs to another "
                              "image)")
    inside = f"a number within ±{MAX_COORD:g} local units"
    cell = "a cell size in local units above 0"
    cell_x = _number(side, "cell_size_x", cell, lambda v: v > 0,
                     None if cell_given else _REQUIRED)
    cell_y = _number(side, "cell_size_y", cell, lambda v: v > 0, cell_x)
    low = _number(side, "height_min", inside, lambda v: abs(v) <= MAX_COORD,
                  _REQUIRED if png else None)
    high = _number(side, "height_max", f"{inside}, at least 'height_min' ({low!r})",
                   lambda v: abs(v) <= MAX_COORD and (low is None or v >= low),
                   _REQUIRED if png else None)
    origin = [_number(side, key, inside, lambda v: abs(v) <= MAX_COORD, None)
              for key in ("origin_x", "origin_y")]
    lo, hi = exaggeration_range
    exaggeration = _number(side, "vertical_exaggeration", f"between {lo:g} and {hi:g}",
                           lambda v: lo <= v <= hi, 1.0)
    real = None
    if "real_size" in side:  # sidecars written before real sizes have none: automatic
        real = _number(side, "real_size", f"0 (automatic) or {MIN_REAL_SIZE:g} to "
                       f"{MAX_REAL_SIZE:g} metres",
                       lambda v: v == 0 or MIN_REAL_SIZE <= v <= MAX_REAL_SIZE)
    return Facts(rows, cols, cell_x, cell_y, origin[0], origin[1], low, high, real,
                 exaggeration)


def check_lattice(side: Sidecar | None, path: Path, shape: tuple[int, int],
                  cell_x: float, cell_y: float, x0: float | None,
                  y0: float | None) -> tuple[float, float]:
    """The origin (x0, y0) of a grid of ``shape`` with these cells (None: centred on
    0): every vertex within :data:`MAX_COORD` and apart from its neighbours in float32;
    InputFileError naming the sidecar's key (or the Cell Size given) otherwise."""
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
