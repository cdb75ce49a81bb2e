"""The animation bake cache: one ``frame_NNNNNN.npz`` per frame and ``cache.json``.

A **frame** is an .npz (zlib-compressed or stored; :func:`write_frame`) of numeric
arrays by name, per vertex in the mesh's own vertex order:

- ``z``: the heights (always there);
- ``f__<attribute>``: a float layer, one value per vertex (the layer entries'
  names: :func:`layer_entry`, :func:`split_layer`);
- ``g__<attribute>``: a gray colour layer (red = green = blue, alpha 1), its gray value
  per vertex (4x smaller than ``c__``, exact);
- ``c__<attribute>``: a colour layer, red, green, blue, alpha per vertex (flat, 4 n);
- ``trees_co`` (trees, 3) and ``trees_size`` (trees,): the tree points;
- ``water_z`` and ``water_wet``: the water surface object's heights and wet layer.

:func:`checked_frame` refuses anything else (a layer that is not one of ours would
replace a built-in attribute such as ``position``), a wrong shape or non-finite values,
with a :class:`BakeError` naming the file: a frame is checked whole before anything of
the mesh changes.

The **manifest** ``cache.json`` (:func:`manifest`, written with ``indent=1``) names the
object, its vertex count, the frame range, the particles per frame and per round, the
seed, the bytes written, whether the frames are compressed, every frame's file
(``files``: ``"<frame>": "frame_NNNNNN.npz"``) and, when some frames repeat the one
before, why and how to avoid it (``repeats``), and, when process parameters were
keyed on the timeline, ``keyed``: ``parameters``, every keyed one as
``"<process>.<field>"``, and ``values``, those whose value changes over the frames,
``{"<process>.<field>": {"<frame>": value}}`` (the rounds that lead to a frame ran
with its values). A manifest is ours when it carries
``format`` = :data:`CACHE_FORMAT` and ``generator``, or -- written before those keys --
has exactly :data:`OLD_KEYS` and lists exactly ``frame_file(frame)`` for every frame of
its range (:func:`read_manifest`); a bake deletes or replaces only the files a manifest
of ours lists.

Every file is written with :func:`simcore.fileio.atomic_write`. No bpy here: the
add-on (addon/features/bake.py) reads the mesh into these arrays and writes them back.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..fileio import atomic_write
from .states import read_npz_arrays, write_npz

MANIFEST = "cache.json"
CACHE_SCHEMA = 1
#: what marks a manifest as ours (with ``generator``)
CACHE_FORMAT = "terrain_erosion.bake_cache"
GENERATOR = "Terrain Erosion"
#: the keys of a manifest written before CACHE_FORMAT existed (schema 1): such a cache is
#: ours only if it has exactly these keys and its files are exactly frame_file(frame)
#: for every frame of its range
OLD_KEYS = frozenset({"schema", "object", "vertices", "frame_start", "frame_end",
                      "particles_per_frame", "particles_per_round", "seed", "bytes",
                      "compressed", "files"})
#: a temporary file atomic_write leaves for a moment next to one of our files
TEMP_FILE = re.compile(r"\.(cache\.json|frame_\d{6}\.npz)\.te-\d+-\d+-\d+\.tmp")

#: the entries a frame may hold besides the layers (:func:`layer_entry`), and how many
#: values per vertex (None: per tree)
FRAME_ENTRIES = {"z": 1, "water_z": 1, "water_wet": 1, "trees_co": None,
                 "trees_size": None}
#: the kinds of layer entry (``<kind>__<attribute>``): float, gray colour, colour (rgba)
FLOAT_LAYER, GRAY_LAYER, COLOR_LAYER = "f", "g", "c"
#: values per vertex of each layer kind
LAYER_WIDTH = {FLOAT_LAYER: 1, GRAY_LAYER: 1, COLOR_LAYER: 4}
_LAYER_SEP = "__"
#: errors a damaged frame file gives when it is read
READ_ERRORS = (OSError, ValueError, zipfile.BadZipFile, EOFError)


class BakeError(UserError):
    """Baking or playback cannot go on; the message says what to do."""


def frame_file(frame: int) -> str:
    return f"frame_{frame:06d}.npz"


def layer_entry(kind: str, attribute: str) -> str:
    """The name of a frame's entry for layer ``attribute`` of ``kind``
    (:data:`FLOAT_LAYER`, :data:`GRAY_LAYER` or :data:`COLOR_LAYER`)."""
    return f"{kind}{_LAYER_SEP}{attribute}"


def split_layer(name: str) -> tuple[str, str] | None:
    """(kind, attribute) of a layer entry's name; None for the other entries (``z``,
    trees, water). The kind is not checked: :func:`checked_frame` does that."""
    kind, sep, attribute = name.partition(_LAYER_SEP)
    return (kind, attribute) if sep else None


# ------------------------------------------------------------------ frames

def write_frame(path: Path, arrays: dict[str, np.ndarray], compress: bool = True) -> int:
    """Write one frame (all or nothing); returns its size in bytes."""
    buf = io.BytesIO()
    write_npz(buf, arrays, compress)  # its zip file closed on every path
    data = buf.getvalue()
    atomic_write(path, lambda f: f.write(data))
    return len(data)


def read_frame(path: Path) -> dict[str, np.ndarray]:
    """The arrays of one frame file, unchecked (no bpy, no ``ast``: runs in a worker
    thread too). OSError, ValueError, zipfile.BadZipFile or EOFError
    (:data:`READ_ERRORS`) for a missing or damaged file."""
    return read_npz_arrays(path)


def checked_frame(arrays: dict[str, np.ndarray], n: int, path: Path,
                  layers: Collection[str]) -> dict[str, np.ndarray]:
    """The arrays of a frame file of a mesh with ``n`` vertices as float32, or
    BakeError naming the file when it is damaged or not one of ours: a missing ``z``,
    an entry we never write (a layer not in ``layers``, e.g. ``f__position``, would
    replace a built-in attribute), a wrong shape, values that are not finite numbers."""
    def bad(why: str) -> BakeError:
        return BakeError(f"the baked frame {path} is damaged or not this bake's ({why}); "
                         "bake again or free the cache")

    if "z" not in arrays:
        raise bad("it has no heights 'z'")
    out = {}
    trees = None
    width: int | None
    for name, values in arrays.items():
        layer = split_layer(name)
        if layer is not None:
            kind, attr_name = layer
            if kind not in LAYER_WIDTH or attr_name not in layers:
                raise bad(f"'{name[:80]}' is not a layer Terrain Erosion bakes")
            width = LAYER_WIDTH[kind]
        elif name in FRAME_ENTRIES:
            width = FRAME_ENTRIES[name]
        else:
            raise bad(f"unknown entry '{name[:80]}'")
        if not isinstance(values, np.ndarray) or values.dtype.kind not in "biuf":
            raise bad(f"'{name}' does not hold numbers")
        if name == "trees_co":
            if values.ndim != 2 or values.shape[1] != 3:
                raise bad(f"'trees_co' has shape {values.shape}, not (trees, 3)")
            trees = len(values)
        elif values.ndim != 1 or (width is not None and values.size != n * width):
            raise bad(f"'{name}' has shape {values.shape}, not ({n * (width or 1)},)")
        with np.errstate(over="ignore"):  # beyond float32: inf, refused below
            values = np.ascontiguousarray(values, np.float32)
        if not np.isfinite(values).all():
            raise bad(f"'{name}' holds values that are not finite")
        out[name] = values
    if ("trees_co" in out) != ("trees_size" in out) or (
            trees is not None and out["trees_size"].size != trees):
        raise bad("the trees' positions and sizes do not match")
    return out


# ------------------------------------------------------------------ manifest

def manifest(object_name: str, vertices: int, frame_start: int, frame_end: int,
             per_frame: int, per_round: int, seed: int, size: int, compressed: bool,
             repeats: Sequence[int] = (), keyed: dict | None = None) -> dict:
    """The manifest of a bake of frames ``frame_start..frame_end`` (``size``: the bytes
    of all frames; ``repeats``: the frames that show the one before; ``keyed``: the
    parameters keyed on the timeline and the values of those that change)."""
    data = {"schema": CACHE_SCHEMA, "format": CACHE_FORMAT, "generator": GENERATOR,
            "object": object_name, "vertices": vertices,
            "frame_start": frame_start, "frame_end": frame_end,
            "particles_per_frame": per_frame, "particles_per_round": per_round,
            "seed": seed, "bytes": size, "compressed": bool(compressed),
            "files": {str(f): frame_file(f) for f in range(frame_start, frame_end + 1)}}
    if repeats:
        data["repeats"] = repeat_note(list(repeats), per_round, per_frame)
    if keyed:
        data["keyed"] = keyed
    return data


def write_manifest(path: Path, data: dict) -> Path:
    text = json.dumps(data, indent=1)
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def repeat_note(frames: list[int], per_round: int, per_frame: int) -> dict:
    """Why frames repeat the one before and how to avoid it (the manifest's
    ``repeats``): the simulation runs whole rounds, and a frame that is already at or
    past its particle target after the rounds of the frames before gets none."""
    shown = ", ".join(map(str, frames[:12])) + (" ..." if len(frames) > 12 else "")
    return {"frames": frames,
            "why": f"the simulation runs whole rounds of {per_round:,} particles; with "
                   f"{per_frame:,} particles per frame, a round already overshoots the "
                   f"target of the frames after it, so {len(frames)} frame(s) ({shown}) "
                   "show the same terrain as the frame before",
            "fix": f"set Particles per Frame to at least {per_round:,} (a multiple of it "
                   "gives evenly spaced frames)"}


def manifest_files(data: object) -> list[str] | None:
    """The frame files a manifest says it wrote, or None when it is not one of ours
    (another program's cache.json, a damaged one, names that are not our frames)."""
    if not isinstance(data, dict) or data.get("schema") != CACHE_SCHEMA:
        return None
    files = data.get("files")
    if not isinstance(files, dict):
        return None
    try:
        ours = all(name == frame_file(int(frame)) for frame, name in files.items())
    except (TypeError, ValueError):
        return None
    if not ours:
        return None
    if data.get("format") == CACHE_FORMAT and data.get("generator") == GENERATOR:
        return list(files.values())
    try:  # written before the format key: only exactly our old layout
        frames = range(int(data["frame_start"]), int(data["frame_end"]) + 1)
    except (KeyError, TypeError, ValueError):
        return None
    if set(data) != OLD_KEYS or files != {str(f): frame_file(f) for f in frames}:
        return None
    return list(files.values())


def read_manifest(path: Path) -> dict | None:
    """The manifest at ``path`` if it is ours (:func:`manifest_files`), else None (none
    there, unreadable, not JSON, another program's)."""
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if manifest_files(data) is not None else None
