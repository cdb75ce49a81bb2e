"""Multi-layer OpenEXR: heights and every layer of a terrain in one file.

One 32-bit float channel per layer, named as the layer (``height``, ``bedrock``,
``sediment_depth``, ``change_droplets``, ...), ZIP-compressed, scanline, single part.
The file's facts (cell size, units, generator, version, ...) are string attributes
of its header named ``TerrainErosion/<key>``; ``TerrainErosion/crc32`` holds a CRC-32
of every channel's pixels, so a damaged file is refused rather than read as garbage.

Row order: the arrays given to :func:`write` and returned by :func:`read` are grids,
row 0 = lowest Y. The file's first scanline (the picture's top) is the grid's last
row, so the picture's top is +Y (north) -- the same as the separate EXR and PNG files
of the Blender export, pixel for pixel. EXR stores channels alphabetically: read them
by name.

The pixels go through OpenImageIO's Python module (the library VFX tools use).
Inside Blender it is Blender's own (4.5, 5.0 and 5.2 ship it, 4.2 does not; it is
built against Blender's libraries, and another EXR library loaded into Blender clashes
with them); outside it is the PyPI
package ``OpenImageIO``. :func:`load_openimageio` finds one; without it,
:class:`MissingLibraryError` says so. :func:`channel_names` reads the header with
plain Python, so telling a multi-layer EXR from another file needs no library; a tiled,
deep or multi-part EXR is never ours (:func:`has_height` is False: an image reader
takes it).

Writes go to a temporary file (OpenImageIO writes by name) in the target's folder,
which :func:`simcore.fileio.atomic_write` then copies into place: all or nothing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import shutil
import sys
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

from ..errors import InputFileError, OutputPathError, UserError, describe_os_error
from ..fileio import atomic_write, check_input, check_memory, open_input
from .staging import temporary_folder

GENERATOR = "Terrain Erosion"
#: prefix of our header attributes
PREFIX = "TerrainErosion/"
#: the channel every multi-layer file of ours has
HEIGHT = "height"
MAGIC = b"\x76\x2f\x31\x01"
#: largest grid side and cell count a file may claim (the add-on's 4096x4096 limit
#: and simcore's largest grid are both within it)
MAX_SIDE = 65536
MAX_CELLS = 16384 * 16384
ROW_ORDER = ("the file's top scanline is the grid's last row (highest Y): the picture's "
             "top is +Y (north)")
MISSING_OUTSIDE = ("Multi-layer EXR needs the OpenImageIO Python package: pip install "
                   "OpenImageIO")


class MissingLibraryError(UserError):
    """No OpenImageIO module could be loaded; the message says what to use instead."""


class ExrFileError(InputFileError):
    """A file that is not a readable multi-layer EXR of ours (missing, foreign, damaged)."""


class OtherLayoutError(ExrFileError):
    """An OpenEXR file laid out otherwise than ours (tiled, deep or multi-part): not a
    multi-layer EXR of ours, maybe a single heightmap another tool wrote."""


@dataclass
class Layers:
    """What a multi-layer EXR holds: float32 grids by name (row 0 = lowest Y) and the
    header's ``TerrainErosion/*`` attributes (strings, prefix removed)."""

    channels: dict[str, np.ndarray]
    attributes: dict[str, str] = field(default_factory=dict)


# ------------------------------------------------------------------ the library

def _load_from(folder: Path) -> ModuleType | None:
    """The ``OpenImageIO`` package in ``folder`` loaded under its own name, without
    adding ``folder`` to sys.path; None if it is not there or does not load."""
    init = folder / "OpenImageIO" / "__init__.py"
    if not init.is_file():
        return None
    spec = importlib.util.spec_from_file_location(
        "OpenImageIO", init, submodule_search_locations=[str(init.parent)])
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules["OpenImageIO"] = module  # its __init__ imports its extension relatively
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - a broken or foreign build: as if absent
        sys.modules.pop("OpenImageIO", None)
        return None
    return module


def load_openimageio(search: Iterable[Path] = (), missing: str = MISSING_OUTSIDE
                     ) -> ModuleType:
    """The OpenImageIO module: the one already imported, else the first found in the
    ``search`` folders (a Blender's own site-packages: what it ships is preferred over
    any other copy), else ``import OpenImageIO``; MissingLibraryError(``missing``)
    when there is none."""
    if "OpenImageIO" in sys.modules:
        module = sys.modules["OpenImageIO"]
        if module is None:  # an import blocked on purpose (sys.modules entry None)
            raise MissingLibraryError(missing)
        return module
    for folder in search:
        found = _load_from(Path(folder))
        if found is not None:
            return found
    try:
        import OpenImageIO
    except ImportError:
        raise MissingLibraryError(missing) from None
    return OpenImageIO


# ------------------------------------------------------------------ header (no library)

def channel_names(path: str | Path) -> list[str]:
    """The channel names of an OpenEXR file, read from its header with plain Python.
    ExrFileError for a missing file or one that is not a single-part scanline EXR."""
    path = Path(path)
    try:
        check_input(path)
        with open(path, "rb") as f:
            head = f.read(1 << 20)  # the header: ours is a few KB
    except InputFileError as exc:  # a FIFO or a device: would block or never end
        raise ExrFileError(str(exc)) from None
    except OSError as exc:
        raise ExrFileError(f"cannot read {path}: {exc.strerror or exc}; check the path") \
            from None
    if head[:4] != MAGIC:
        raise ExrFileError(f"{path} is not an OpenEXR file")
    flags = int.from_bytes(head[4:8], "little") >> 8
    if flags & 0x1A:  # tiled (0x2), deep (0x8) or multi-part (0x10); 0x4 = long names
        raise OtherLayoutError(f"{path} is a tiled, deep or multi-part EXR; a "
                               "multi-layer heightmap is one scanline image")
    pos = 8
    while True:
        end = head.find(b"\0", pos)
        if end < 0:
            raise ExrFileError(f"{path}: the EXR header is damaged or truncated")
        name = head[pos:end]
        if not name:
            break
        tend = head.find(b"\0", end + 1)
        if tend < 0 or tend + 5 > len(head):
            raise ExrFileError(f"{path}: the EXR header is damaged or truncated")
        kind = head[end + 1:tend]
        size = int.from_bytes(head[tend + 1:tend + 5], "little", signed=True)
        value = head[tend + 5:tend + 5 + size]
        if size < 0 or len(value) != size:
            raise ExrFileError(f"{path}: the EXR header is damaged or truncated")
        if name == b"channels" and kind == b"chlist":
            return _chlist(value, path)
        pos = tend + 5 + size
    raise ExrFileError(f"{path}: the EXR header lists no channels")


def _chlist(value: bytes, path: Path) -> list[str]:
    names, pos = [], 0
    while pos < len(value) and value[pos] != 0:
        end = value.find(b"\0", pos)
        if end < 0 or end + 17 > len(value):
            raise ExrFileError(f"{path}: the EXR channel list is damaged")
        names.append(value[pos:end].decode("utf-8", "replace"))
        pos = end + 17
    return names


def is_multipart(path: str | Path) -> bool:
    """True for a multi-part (or deep) OpenEXR file, which Blender's image reader
    cannot read (it makes a 0x0 image of it); False for any other file."""
    try:
        with open_input(path) as f:
            head = f.read(8)
    except (InputFileError, OSError):
        return False
    return head[:4] == MAGIC and bool((int.from_bytes(head[4:8], "little") >> 8) & 0x18)


def has_height(path: str | Path) -> bool:
    """True for a single-part scanline EXR with a ``height`` channel (what :func:`read`
    takes: ours, also with no other layer); False for any other EXR -- tiled, deep,
    multi-part or without that channel: a single heightmap, for an image reader;
    ExrFileError if it is not a readable EXR at all."""
    try:
        return HEIGHT in channel_names(path)
    except OtherLayoutError:
        return False


def is_multilayer(path: str | Path) -> bool:
    """True for an EXR with a ``height`` channel and at least one other; False for
    another EXR (a single heightmap, tiled ones included); ExrFileError if it is not a
    readable EXR."""
    try:
        names = channel_names(path)
    except OtherLayoutError:
        return False
    return HEIGHT in names and len(names) > 1


# ------------------------------------------------------------------ writing

def _check_channels(channels: Mapping[str, np.ndarray]) -> tuple[int, int]:
    if not channels:
        raise UserError("a multi-layer EXR needs at least one layer")
    shapes = {np.shape(a) for a in channels.values()}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        raise UserError(f"the layers of a multi-layer EXR must be 2-D grids of one shape, "
                        f"got {sorted(shapes)}")
    rows, cols = next(iter(shapes))
    if min(rows, cols) < 1 or max(rows, cols) > MAX_SIDE:
        raise UserError(f"a {rows}x{cols} grid cannot be written as EXR (sides 1 to "
                        f"{MAX_SIDE})")
    for name in channels:
        if (not isinstance(name, str) or not name or len(name) > 200 or not name.isprintable()
                or "\0" in name):
            raise UserError(f"layer name {name!r} cannot name an EXR channel")
    return rows, cols


def write(path: str | Path, channels: Mapping[str, np.ndarray],
          attributes: Mapping[str, object] | None = None,
          oiio: ModuleType | None = None) -> Path:
    """Write ``channels`` (name -> 2-D grid, row 0 = lowest Y; stored as float32) as one
    ZIP-compressed EXR with ``attributes`` (strings as they are, anything else as JSON)
    in its header; all or nothing. OutputPathError on any write failure."""
    path = Path(path)
    rows, cols = _check_channels(channels)
    oiio = oiio or load_openimageio()
    names = list(channels)
    pixels = np.empty((rows, cols, len(names)), np.float32)
    for i, name in enumerate(names):
        pixels[..., i] = np.flipud(np.asarray(channels[name], np.float32))
    spec = oiio.ImageSpec(cols, rows, len(names), "float")
    spec.channelnames = tuple(names)
    spec.attribute("compression", "zip")
    facts = {"generator": GENERATOR, "row_order": ROW_ORDER,
             **{k: (v if isinstance(v, str) else json.dumps(v))
                for k, v in (attributes or {}).items()},
             "crc32": json.dumps({n: zlib.crc32(pixels[..., i].tobytes())
                                  for i, n in enumerate(names)})}
    for key, value in facts.items():
        spec.attribute(PREFIX + key, value)
    try:
        tmp = temporary_folder(path.parent)
        try:
            tmp_file = tmp / "layers.exr"
            out = oiio.ImageOutput.create(str(tmp_file))
            if out is None:
                raise OutputPathError(f"cannot write {path}: {oiio.geterror()}")
            ok = out.open(str(tmp_file), spec) and out.write_image(pixels)
            problem = out.geterror()
            ok = out.close() and ok
            if not ok:
                raise OutputPathError(f"cannot write {path}: "
                                      f"{problem or out.geterror() or 'OpenImageIO failed'}")

            def copy(f) -> None:
                with open(tmp_file, "rb") as src:
                    shutil.copyfileobj(src, f, 1 << 20)
            atomic_write(path, copy)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:  # the temporary folder itself
        raise OutputPathError(describe_os_error(exc, path)) from None
    return path


# ------------------------------------------------------------------ reading

def read(path: str | Path, oiio: ModuleType | None = None,
         max_cells: int = MAX_CELLS) -> Layers:
    """Every channel of a multi-layer EXR by name (float32 grids, row 0 = lowest Y)
    and its ``TerrainErosion/*`` attributes. ExrFileError for a missing, foreign,
    damaged or truncated file; nothing large is allocated before the header is
    checked."""
    path = Path(path)
    names = channel_names(path)
    if HEIGHT not in names:
        raise ExrFileError(f"{path} has no '{HEIGHT}' channel (it has "
                           f"{', '.join(names) or 'none'}): it is not a multi-layer "
                           "terrain EXR")
    oiio = oiio or load_openimageio()
    inp = oiio.ImageInput.open(str(path))
    if inp is None:
        raise ExrFileError(f"cannot read {path}: {oiio.geterror()}; the file is damaged")
    try:
        spec = inp.spec()
        rows, cols, n = spec.height, spec.width, spec.nchannels
        if min(rows, cols) < 1 or max(rows, cols) > MAX_SIDE or rows * cols > max_cells:
            raise ExrFileError(f"{path} claims a {cols}x{rows} image; the largest grid is "
                               f"{math.isqrt(max_cells)}x{math.isqrt(max_cells)}")
        check_memory(rows * cols * n * 8, f"reading a {cols}x{rows} EXR of {n} layers")
        attributes = {}
        for attr in spec.extra_attribs:
            if attr.name.startswith(PREFIX):
                attributes[attr.name[len(PREFIX):]] = str(attr.value)
        pixels = inp.read_image(0, 0, 0, n, "float")
        if pixels is None:
            raise ExrFileError(f"cannot read {path}: {inp.geterror()}; the file is "
                               "damaged or truncated")
        pixels = np.asarray(pixels, np.float32).reshape(rows, cols, n)
        got = list(spec.channelnames)
    finally:
        inp.close()
    sums = _sums(attributes.get("crc32"), path)
    channels = {}
    for name in names:
        plane = np.ascontiguousarray(pixels[..., got.index(name)])
        if name in sums and zlib.crc32(plane.tobytes()) != sums[name]:
            raise ExrFileError(f"{path}: channel '{name}' does not match its checksum; "
                               "the file is damaged: export it again")
        channels[name] = np.flipud(plane).copy()
    return Layers(channels, attributes)


def _sums(text: str | None, path: Path) -> dict[str, int]:
    if text is None:
        return {}
    with contextlib.suppress(ValueError):
        sums = json.loads(text)
        if isinstance(sums, dict) and all(isinstance(v, int) for v in sums.values()):
            return sums
    raise ExrFileError(f"{path}: its checksum attribute is damaged")
