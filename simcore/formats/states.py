"""Save and load heightmaps (.npy, world units) and whole states (.npz).

Readers check every header before allocating: a damaged, truncated or foreign file
gives a :class:`~simcore.terrain.StateFileError` ("this file is not a Terrain Erosion
state: ..."), never a raw exception or a huge allocation. Writers go through
:func:`simcore.fileio.atomic_write`.
"""

from __future__ import annotations

import json
import math
import re
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import UserError
from ..fields import EXTRA_UNITS
from ..fileio import atomic_write, check_input, check_memory, open_input
from ..params import SEED_RANGE
from ..rock import RockError, column_from
from ..terrain import (
    BYTES_PER_CELL,
    MAX_CELLS,
    MAX_SIDE,
    StateFileError,
    Terrain,
    TerrainError,
    as_float_grid,
    check_cell_size,
    fields,
)

#: Largest 'rounds_done' a state may claim: keeps particle indices far inside int64.
MAX_ROUNDS = 10**12
#: Largest number of trees a state may hold.
MAX_TREES = 10**8

NOT_A_STATE = "this file is not a Terrain Erosion state"
#: arrays ``change_<process>``: how much each process moved the ground (world units)
CHANGE_PREFIX = "change_"
#: zlib level of compressed states and bake frames: 1 wrote a 1024² default state in
#: 1.26 s CPU against 1.88 s at numpy's level 6, 37.3 MB against 36.6 MB
DEFLATE_LEVEL = 1


def save_state(path: str | Path, terrain: Terrain, metadata: dict[str, Any]) -> Path:
    """Write every terrain array by name, ``height`` in world units and ``metadata``
    (JSON text) to an .npz, atomically (a failed write leaves no file).

    ``metadata["units"]`` gives each entry's unit: ``cell`` (world length / cell_size),
    ``world``, ``0..1`` or ``factor`` (see :mod:`simcore.fields`). ``change_<process>``
    (world units) is how much each process raised or lowered every cell so far
    (``Terrain.changes``); together they add up to the whole change."""
    grids, units = state_grids(terrain)
    meta = {**metadata, "cell_size": terrain.cell_size, "outflow": terrain.outflow,
            "units": units}
    if terrain.rock is not None:  # the rock column (simcore.rock), world units
        meta["rock"] = terrain.rock.to_dict()
    arrays = {**grids, "trees": terrain.trees, "metadata": np.array(json.dumps(meta))}
    return atomic_write(path, lambda f: write_npz(f, arrays))


def write_npz(f: IO[bytes], arrays: dict[str, np.ndarray], compress: bool = True) -> None:
    """What ``np.savez_compressed`` (``np.savez``) writes, with the zip file closed on
    every path: numpy's leaves it open when a write fails, and its ``__del__`` later
    writes into the dead file and prints a traceback after our message. Deflate level
    1 (:data:`DEFLATE_LEVEL`): a third faster than numpy's 6 on terrain arrays, files 2%
    larger; any zip reader reads both."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    level = DEFLATE_LEVEL if compress else None
    with zipfile.ZipFile(f, mode="w", compression=method, compresslevel=level,
                         allowZip64=True) as zf:
        for name, value in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)


def state_grids(terrain: Terrain) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The grids a state file holds -- every terrain array by name, ``height`` in world
    units, ``change_<process>`` in world units -- and the unit of each (and of the
    entries the state adds, see :data:`simcore.fields.EXTRA_UNITS`)."""
    changes = {f"{CHANGE_PREFIX}{name}": change * terrain.cell_size
               for name, change in terrain.changes.items()}
    units = ({n: f.unit for n, f in fields().items()} | EXTRA_UNITS
             | dict.fromkeys(changes, "world"))
    return {**terrain.arrays(), "height": terrain.world_height(), **changes}, units


def save_heights(path: str | Path, heights: np.ndarray) -> Path:
    """Write a float64 heightmap .npy atomically."""
    return atomic_write(path, lambda f: np.save(f, np.asarray(heights, np.float64)))


def state_bytes(shape: tuple[int, int], processes: int = 0) -> int:
    """Upper estimate of an .npz state's size on disk (uncompressed arrays), with the
    change arrays of ``processes`` processes."""
    return (len(fields()) + 1 + processes) * 8 * shape[0] * shape[1] + 2**20


def heights_bytes(shape: tuple[int, int]) -> int:
    return 8 * shape[0] * shape[1] + 128


# -- reading -----------------------------------------------------------------------

def _npy_header(f: IO[bytes], where: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from an .npy header, without reading the data."""
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"unknown .npy version {version}")
    except zlib.error:  # a damaged compressed member: load_state says so
        raise
    except Exception as exc:  # numpy's header parser raises many kinds on junk
        raise StateFileError(f"{where}: not a valid .npy array ({exc})") from None
    if dtype.hasobject or dtype.kind not in "biuf" or dtype.names is not None:
        raise StateFileError(f"{where}: holds {dtype} values; heights must be real numbers")
    return tuple(int(n) for n in shape), dtype


def _check_array_size(shape: tuple[int, ...], dtype: np.dtype, where: str,
                      data_bytes: int | None) -> None:
    count = math.prod(shape)
    if count > MAX_CELLS * (3 if len(shape) == 2 and shape[-1] == 3 else 1):
        raise StateFileError(f"{where}: claims a {'x'.join(map(str, shape))} array, larger "
                             f"than the largest grid ({MAX_SIDE}x{MAX_SIDE})")
    if data_bytes is not None and count * dtype.itemsize > data_bytes:
        raise StateFileError(f"{where}: the file is truncated (the header promises "
                             f"{count * dtype.itemsize} bytes, it holds {data_bytes})")


def check_heightmap(path: str | Path) -> tuple[Path, tuple[int, ...]]:
    """The path and shape of a 2-D .npy heightmap, after checking the file (a regular
    file we can read), its header and its size; reads no data."""
    path = check_input(path)
    where = f"{path}: cannot read heightmap"
    try:
        with open(path, "rb") as f:
            shape, dtype = _npy_header(f, where)
            header_end = f.tell()
            f.seek(0, 2)
            _check_array_size(shape, dtype, where, f.tell() - header_end)
    except UserError:
        raise
    except OSError as exc:
        raise StateFileError(f"{where}: {exc.strerror or exc}; check the path") from None
    except ValueError as exc:
        raise StateFileError(f"{where}: {exc}") from None
    if len(shape) != 2:
        raise StateFileError(f"{where}: expected a 2-D (rows, cols) array, got shape {shape}")
    return path, shape


def load_heights(path: str | Path) -> np.ndarray:
    """Read a 2-D heightmap from ..npy (world units)."""
    path, shape = check_heightmap(path)
    where = f"{path}: cannot read heightmap"
    check_memory(math.prod(shape) * BYTES_PER_CELL, f"a {shape[0]}x{shape[1]} grid")
    try:
        return np.load(path, allow_pickle=False)
    except OSError as exc:
        raise StateFileError(f"{where}: {exc.strerror or exc}; check the path") from None
    except ValueError as exc:
        raise StateFileError(f"{where}: {exc}") from None


def _meta_number(meta: dict, key: str, default: float, where: str) -> float:
    value = meta.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value):
        raise StateFileError(f"{where}: metadata '{key}' must be a finite number, got "
                             f"{value!r}")
    return float(value)


def _meta_int(meta: dict, key: str, lo: int, hi: int, where: str) -> None:
    if key not in meta:
        return
    value = meta[key]
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise StateFileError(f"{where}: metadata '{key}' must be a whole number from {lo} to "
                             f"{hi}, got {value!r}")


def _read_member(zf: zipfile.ZipFile, name: str, where: str) -> np.ndarray:
    info = zf.getinfo(name)
    with zf.open(info) as f:
        shape, dtype = _npy_header(f, f"{where}: array '{name[:-4]}'")
        _check_array_size(shape, dtype, f"{where}: array '{name[:-4]}'",
                          info.file_size - f.tell())
        f.seek(0)
        return np.lib.format.read_array(f, allow_pickle=False)


def grid_shape(path: str | Path) -> tuple[int, int] | None:
    """Rows and columns of a .npy heightmap or an .npz state's grid, from the array
    headers alone (no data is read): what a run's memory check needs before the input
    is loaded. None for any other file, or one these headers do not describe (its
    loader then says what is wrong)."""
    name = str(path).lower()
    try:
        if name.endswith(".npy"):
            _, shape = check_heightmap(path)
        elif name.endswith(".npz"):
            checked = check_input(path)
            with zipfile.ZipFile(checked) as zf:
                shape, _ = _peek(zf, "bedrock.npy", str(checked))
        else:
            return None
    except (UserError, OSError, KeyError, ValueError, EOFError, zlib.error,
            zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError):
        return None
    return (int(shape[0]), int(shape[1])) if len(shape) == 2 else None


def load_state(path: str | Path) -> tuple[Terrain, dict[str, Any]]:
    """Read an .npz written by :func:`save_state`; returns (terrain, metadata)."""
    path = check_input(path)
    where = f"{path}: {NOT_A_STATE}"
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            if "metadata.npy" not in names or "bedrock.npy" not in names:
                raise StateFileError(f"{where}: it needs the arrays 'bedrock' and "
                                     "'metadata'; pass a .npy heightmap instead")
            info = zf.getinfo("metadata.npy")
            if info.file_size > 2**24:
                raise StateFileError(f"{where}: its metadata is {info.file_size} bytes")
            with zf.open(info) as f:
                shape, dtype = _npy_header_text(f, where)
                raw = np.lib.format.read_array(f, allow_pickle=False)
            shape, _ = _peek(zf, "bedrock.npy", where)
            if len(shape) != 2:
                raise StateFileError(f"{where}: 'bedrock' must be 2-D, got shape {shape}")
            check_memory(math.prod(shape) * BYTES_PER_CELL, f"a {shape[0]}x{shape[1]} grid")
            meta = _parse_meta(raw, where)
            arrays = {n: _read_member(zf, f"{n}.npy", where)
                      for n in fields() if f"{n}.npy" in names}
            trees = (_read_member(zf, "trees.npy", where) if "trees.npy" in names
                     else np.zeros((0, 3)))
            changes = {n[len(CHANGE_PREFIX):-4]: _read_member(zf, n, where)
                       for n in sorted(names)
                       if n.startswith(CHANGE_PREFIX) and n.endswith(".npy")}
    except UserError:
        raise
    except OSError as exc:
        raise StateFileError(f"{path}: cannot read state: {exc.strerror or exc}; check the "
                             "path") from None
    except zlib.error as exc:
        raise StateFileError(f"{where}: it is damaged (its compressed data does not "
                             f"decode: {exc}); use an intact copy") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, KeyError, ValueError,
            NotImplementedError, RuntimeError) as exc:
        raise StateFileError(f"{where}: {type(exc).__name__}: {exc}") from None
    _check_units(meta, set(arrays) | {"bedrock"} | {CHANGE_PREFIX + n for n in changes},
                 where)
    if "cell_size" not in meta:
        raise StateFileError(f"{where}: its metadata has no 'cell_size' (the distance "
                             "between samples), so its lengths cannot be known; save its "
                             "'height' array as a .npy and give --cell-size")
    try:
        cell_size = check_cell_size(_meta_number(meta, "cell_size", 1.0, where))
    except TerrainError as exc:
        raise StateFileError(f"{where}: {exc}") from None
    outflow = _meta_number(meta, "outflow", 0.0, where)
    bedrock = arrays.pop("bedrock")
    if trees.ndim != 2 or len(trees) > MAX_TREES:
        raise StateFileError(f"{where}: 'trees' must be an (n, 3) table, got shape "
                             f"{trees.shape}")
    try:
        terrain = Terrain.from_heights(bedrock, cell_size, world_units=False, **arrays)
        terrain.outflow = outflow
        terrain.trees = trees
        terrain.rock = column_from(meta.get("rock"), "metadata 'rock'")
        terrain.validate()
        for name, change in changes.items():
            if not name.isidentifier() or len(name) > 64:
                raise TerrainError(f"'{CHANGE_PREFIX}{name}' does not name a process")
            terrain.changes[name] = as_float_grid(CHANGE_PREFIX + name, change,
                                                   terrain.shape) / cell_size
    except (TerrainError, RockError) as exc:
        raise StateFileError(f"{where}: {exc}") from None
    return terrain, meta


def _check_units(meta: dict, present: set[str], where: str) -> None:
    """``metadata["units"]`` must give every array read the unit this version reads it
    in (see :func:`state_grids`). States written before units were a mapping (no entry,
    or one sentence) used the same units and load as they are."""
    units = meta.get("units")
    if units is None or isinstance(units, str):
        return
    if not isinstance(units, dict):
        raise StateFileError(f"{where}: metadata 'units' must map array names to units, "
                             f"got {type(units).__name__}")
    expected = ({n: f.unit for n, f in fields().items()} | EXTRA_UNITS
                | {n: "world" for n in present if n.startswith(CHANGE_PREFIX)})
    for name in sorted(present | {"height"}):
        if name in units and units[name] != expected.get(name, units[name]):
            raise StateFileError(f"{where}: array '{name}' is in unit {units[name]!r}, but "
                                 f"this version reads it in {expected[name]!r}; convert it "
                                 "or write the state with this version")


def _npy_header_text(f: IO[bytes], where: str):
    try:
        version = np.lib.format.read_magic(f)
        reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                  else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = reader(f)
    except zlib.error:
        raise
    except Exception as exc:  # numpy's header parser raises many kinds on junk
        raise StateFileError(f"{where}: metadata is not a valid array ({exc})") from None
    if dtype.kind != "U" or shape != ():
        raise StateFileError(f"{where}: metadata must be one JSON text, got {dtype} "
                             f"of shape {shape}")
    # read_array needs the file at its start again
    f.seek(0)
    return shape, dtype


def _peek(zf: zipfile.ZipFile, name: str, where: str):
    info = zf.getinfo(name)
    with zf.open(info) as f:
        shape, dtype = _npy_header(f, f"{where}: array '{name[:-4]}'")
        _check_array_size(shape, dtype, f"{where}: array '{name[:-4]}'",
                          info.file_size - f.tell())
    return shape, dtype


def _parse_meta(raw: np.ndarray, where: str) -> dict[str, Any]:
    try:
        meta = json.loads(str(raw))
    except (ValueError, RecursionError) as exc:
        raise StateFileError(f"{where}: metadata is not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise StateFileError(f"{where}: metadata must be a JSON object, got "
                             f"{type(meta).__name__}")
    _meta_int(meta, "rounds_done", 0, MAX_ROUNDS, where)
    _meta_int(meta, "seed", *SEED_RANGE, where)
    return meta



# -- thread-safe .npz reading ------------------------------------------------------

_NPY_MAGIC = b"\x93NUMPY"
_NPY_HEADER = re.compile(
    r"\{'descr': '([<>|][biuf][1248])', 'fortran_order': (False|True), "
    r"'shape': \(((?:\d+, ?)*\d*)\), \}\s*$")


def _npy_from_bytes(data: bytes, where: str) -> np.ndarray:
    """An array from the bytes of an .npy file written by numpy (real numbers only).

    numpy's own header reader goes through ``ast``, which Python 3.11.0-3.11.7 (Blender
    4.2's Python among them) does not make thread-safe: two threads parsing at once can
    raise SystemError. This one uses a regular expression, so it may run in a worker
    thread while the main thread parses Python."""
    if data[:6] != _NPY_MAGIC or len(data) < 10:
        raise StateFileError(f"{where}: not a valid .npy array")
    major = data[6]
    size_bytes = 2 if major == 1 else 4
    start = 8 + size_bytes
    header_len = int.from_bytes(data[8:start], "little")
    header = data[start:start + header_len].decode("latin1")
    m = _NPY_HEADER.match(header)
    if m is None:
        raise StateFileError(f"{where}: unexpected .npy header {header.strip()!r}")
    dtype = np.dtype(m.group(1))
    shape = tuple(int(n) for n in m.group(3).replace(" ", "").split(",") if n)
    count = math.prod(shape)
    offset = start + header_len
    if len(data) - offset < count * dtype.itemsize:
        raise StateFileError(f"{where}: the file is truncated")
    flat = np.frombuffer(data, dtype, count, offset)
    return flat.reshape(shape, order="F" if m.group(2) == "True" else "C").copy()


def read_npz_arrays(path: str | Path) -> dict[str, np.ndarray]:
    """Every array of an .npz (compressed or not) by name; safe in a worker thread
    (see :func:`_npy_from_bytes`). OSError, zipfile.BadZipFile or StateFileError on a
    missing or damaged file; InputFileError for a FIFO or device."""
    out = {}
    path = Path(path)
    try:
        with open_input(path) as f, zipfile.ZipFile(f) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                out[info.filename[:-4]] = _npy_from_bytes(zf.read(info),
                                                          f"{path}: {info.filename}")
    except zlib.error as exc:
        raise StateFileError(f"{path}: it is damaged (its compressed data does not "
                             f"decode: {exc})") from None
    return out
