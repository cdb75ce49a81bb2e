"""The terrain model shared by every process (sources: docs/references.md).

All arrays are ``(rows, cols)`` float64, row-major; row index = y, column index = x.
Heights are in **cell units** (world height / cell spacing), so slopes are real slopes
and scaling heights and cell size together scales the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import InputFileError, UserError
from .fields import Field
from .rock import column_from


def fields() -> dict[str, Field]:
    """Every terrain array (:mod:`simcore.fields`): the core ones and those the
    processes declare, by name."""
    from .processes import FIELDS  # the processes import this module
    return FIELDS


MIN_SIDE = 3
#: Largest grid simcore makes, reads or erodes (cells per side; far beyond any Blender
#: mesh, see addon/data/grid.py MAX_VERTICES); memory is checked separately.
MAX_SIDE = 16384
MAX_CELLS = MAX_SIDE * MAX_SIDE
#: Allowed cell sizes (world units): wide enough for millimetre to continental grids,
#: narrow enough that world heights (cell units x cell size) stay finite.
CELL_SIZE_RANGE = (1e-9, 1e9)
#: Largest magnitude of any terrain value, cell units: far beyond real relief, small
#: enough that squares and sums in the kernels can never overflow to inf.
MAX_ABS_VALUE = 1e9
#: Memory one grid cell costs during a run (state arrays, scratch, output copies).
BYTES_PER_CELL = 24 * 8


#: Grids of at least this many bytes get their own place in a 4 KiB page (:func:`grid`).
SPREAD_BYTES = 1 << 16
_PAGE = 4096
_LINE = 64


def grid(shape: tuple[int, ...], slot: int, zeros: bool = False) -> np.ndarray:
    """An uninitialised (``zeros``: zero) float64 grid whose first cell sits ``slot`` x 9
    cache lines into
    a 4 KiB page. Large arrays come from the system as whole pages, so every grid would
    start at the same place in its page, and cell k of each grid would share its
    address's low 12 bits: the kernels that touch cell k in five or six grids then evict
    their own lines from the 8-way L1 cache and stall on false store/load conflicts (4K
    aliasing), which made a droplet step 1.5x slower on 2048^2 grids. Grids in
    different slots do not collide."""
    n = int(np.prod(shape))
    # zeros come from the system as untouched zero pages: no cost until written
    buf = (np.zeros if zeros else np.empty)(n + (_PAGE + _LINE) // 8)
    skip = ((_offset(slot) - buf.ctypes.data) % _PAGE) // 8
    return buf[skip:skip + n].reshape(shape)


def _offset(slot: int) -> int:
    """Byte offset in a 4 KiB page of :func:`grid`'s ``slot``."""
    return (slot * 9 * _LINE) % _PAGE


def _placed(value: Any, slot: int, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """A new float64 grid holding ``value`` (an array, or a number filling ``shape``), in
    :func:`grid`'s ``slot`` when it is large."""
    shape = np.shape(value) if shape is None else shape
    out = (grid(shape, slot) if int(np.prod(shape)) * 8 >= SPREAD_BYTES
           else np.empty(shape))
    out[...] = value
    return out


class TerrainError(UserError):
    """The terrain arrays are unusable (shape, dtype, NaN/inf, range)."""


class StateFileError(TerrainError, InputFileError):
    """A file is not a usable Terrain Erosion state or heightmap."""


def check_cell_size(cell_size: Any) -> float:
    """A finite cell size inside :data:`CELL_SIZE_RANGE`, or TerrainError."""
    lo, hi = CELL_SIZE_RANGE
    try:
        value = float(cell_size)
    except (TypeError, ValueError, OverflowError):
        value = float("nan")
    if isinstance(cell_size, bool) or not (lo <= value <= hi):
        raise TerrainError(f"cell_size must be a number from {lo:g} to {hi:g} (world "
                           f"units between neighbouring samples), got {cell_size!r}")
    return value


def nonfinite_error(name: str, count: int, row: int, col: int) -> TerrainError:
    """The message for ``count`` NaN/inf values in array ``name``, the first at row, col."""
    return TerrainError(f"'{name}' has {count} NaN/inf value(s), first at row {row}, col "
                        f"{col}; fix or fill them before eroding")


def range_error(name: str, big: float) -> TerrainError:
    """The message for values up to ``big`` cells in array ``name``."""
    return TerrainError(f"'{name}' has values up to {big:g} cells; the allowed range is "
                        f"-{MAX_ABS_VALUE:g}..{MAX_ABS_VALUE:g} cells: rescale the heights "
                        "or use a larger cell size")


def as_float_grid(name: str, value: Any, shape: tuple[int, ...] | None) -> np.ndarray:
    """``value`` as a float64 grid named ``name`` (of ``shape`` when given), refused
    with a message that names it when it is not numbers, not 2-D, or out of range."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        raise TerrainError(
            f"'{name}' must hold real numbers (int or float), got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise TerrainError(f"'{name}' must be a 2-D (rows, cols) array, got shape {arr.shape}")
    if shape is not None and arr.shape != shape:
        raise TerrainError(f"'{name}' has shape {arr.shape}, expected {shape} like 'bedrock'")
    if min(arr.shape) < MIN_SIDE:
        raise TerrainError(
            f"'{name}' is {arr.shape[0]}x{arr.shape[1]}; the grid must be at least "
            f"{MIN_SIDE}x{MIN_SIDE} cells")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise nonfinite_error(name, int(bad.sum()), int(r), int(c))
    big = float(np.abs(arr).max())
    if big > MAX_ABS_VALUE:
        raise range_error(name, big)
    return arr


class Terrain:
    """Terrain state: bedrock + sediment with derived masks and maps (cell units).

    Every array of :func:`fields` is an attribute (``terrain.bedrock``,
    ``terrain.pool``, ...). ``outflow`` counts material (cell units x cells) that left
    the grid; ``cell_size`` is the world size of one cell (any length unit, e.g.
    metres); ``trees`` holds rows (x, y, size): x = column, y = row (cell units),
    size 0..1; ``changes`` maps a process name to how much it has raised (+) or lowered
    (-) the ground of every cell so far (cell units; kept by the Simulation, the
    processes that ran add up to the whole change of the ground). ``rock`` is the rock
    column (:class:`simcore.rock.RockColumn`) or None (one rock throughout);
    ``rock_now`` is set by the Simulation while a process batch runs on a column with
    critical angles: the tangent of the critical angle of each cell's layer (NaN: the
    hillslope process's own) and that layer's erodibility factor.
    """

    def __init__(self, *, cell_size: float = 1.0, outflow: float = 0.0,
                 trees: Any = None, rock: Any = None, **arrays: Any) -> None:
        known = fields()
        unknown = [n for n in arrays if n not in known]
        missing = [n for n in known if n not in arrays]
        if unknown or missing:
            raise TerrainError(f"Terrain needs exactly the arrays {', '.join(known)}; "
                               f"unknown: {unknown}, missing: {missing}")
        self.__dict__["_arrays"] = dict(arrays)
        self.cell_size = cell_size
        self.outflow = outflow
        self.trees = np.zeros((0, 3)) if trees is None else trees
        self.changes: dict[str, np.ndarray] = {}
        self.rock = rock
        self.rock_now: tuple[np.ndarray, np.ndarray] | None = None

    def __getattr__(self, name: str) -> np.ndarray:
        arrays = self.__dict__.get("_arrays")
        if arrays is not None and name in arrays:
            return arrays[name]
        raise AttributeError(f"'Terrain' has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        arrays = self.__dict__.get("_arrays")
        if arrays is not None and name in arrays:
            arrays[name] = value
        else:
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return (f"Terrain({self.shape[0]}x{self.shape[1]}, cell_size={self.cell_size!r}, "
                f"outflow={self.outflow!r}, {len(self.trees)} trees)")

    @classmethod
    def from_heights(cls, heights: Any, cell_size: float = 1.0, *,
                     world_units: bool = True, rock: Any = None, **arrays: Any) -> Terrain:
        """Make a terrain whose bedrock is ``heights``.

        With ``world_units`` the heights are world heights and are divided by
        ``cell_size``; otherwise they are already in cell units.
        """
        cell_size = check_cell_size(cell_size)
        raw = np.asarray(heights)
        if world_units and raw.dtype.kind in "iuf":
            with np.errstate(over="ignore"):
                raw = raw / cell_size
        bedrock = as_float_grid("heights", raw, None)
        slots = {name: slot for slot, name in enumerate(fields())}
        if not world_units or bedrock.ctypes.data % _PAGE != _offset(slots["bedrock"]):
            bedrock = _placed(bedrock, slots["bedrock"])  # a copy when not world units
        del raw  # the unplaced copy (world units): not held through the other grids
        values: dict[str, Any] = {"bedrock": bedrock}
        for name, array in arrays.items():
            if name not in fields() or name == "bedrock":
                raise TerrainError(f"unknown terrain array '{name}'; known: "
                                   f"{', '.join(fields())}")
            array = np.asarray(array)
            # a copy: never erode the caller's arrays
            values[name] = (_placed(array, slots[name]) if array.dtype.kind in "iuf"
                            and array.shape == bedrock.shape else np.array(array))
        for name, f in fields().items():
            if name not in values:
                values[name] = _placed(f.default, slots[name], bedrock.shape)
        terrain = cls(**values, cell_size=cell_size, rock=rock)
        terrain.validate()
        return terrain

    @property
    def shape(self) -> tuple[int, int]:
        return self.bedrock.shape  # type: ignore[return-value]

    def height(self) -> np.ndarray:
        """Ground surface, cell units: bedrock + sediment (in a page slot of its own,
        :func:`grid`)."""
        if self.bedrock.nbytes < SPREAD_BYTES:
            return self.bedrock + self.sediment
        return np.add(self.bedrock, self.sediment, out=grid(self.shape, len(fields())))

    def world_height(self) -> np.ndarray:
        """Ground surface in world units."""
        return self.height() * self.cell_size

    def total_material(self) -> float:
        """Sum of bedrock + sediment over the grid (cell units x cells)."""
        return float(self.bedrock.sum() + self.sediment.sum())

    def sources(self) -> np.ndarray:
        """Material that entered the ground from below at each cell so far (the source
        records, ``Field.source``: uplift), cell units; the mass budget is
        total_material() + outflow - sources().sum() == the start's total."""
        total = np.zeros(self.shape)
        for name, f in fields().items():
            if f.source:
                total += getattr(self, name)
        return total

    def arrays(self) -> dict[str, np.ndarray]:
        """Every terrain array by name, in the order of :func:`fields`."""
        arrays = self.__dict__["_arrays"]
        return {name: arrays[name] for name in fields()}

    def validate(self) -> None:
        """Check shapes, dtypes, finiteness and ranges; coerce arrays to float64 C order."""
        shape = None
        for name, f in fields().items():
            lo, hi = f.lo, f.hi
            arr = as_float_grid(name, getattr(self, name), shape)
            shape = arr.shape
            if lo is not None and (arr < lo).any():
                raise TerrainError(f"'{name}' has values below {lo:g} (min {arr.min():g})")
            if hi is not None and (arr > hi).any():
                raise TerrainError(f"'{name}' has values above {hi:g} (max {arr.max():g})")
            setattr(self, name, arr)
        self.cell_size = check_cell_size(self.cell_size)
        if not np.isfinite(self.outflow) or abs(self.outflow) > MAX_ABS_VALUE * self.bedrock.size:
            raise TerrainError(f"outflow must be a finite amount of material, got "
                               f"{self.outflow!r}")
        if self.rain.sum() <= 0:
            raise TerrainError("'rain' is zero everywhere; no droplet could start")
        trees = np.asarray(self.trees)
        if trees.dtype.kind not in "iuf" or trees.ndim != 2 or trees.shape[1] != 3:
            raise TerrainError(f"'trees' must be an (n, 3) array of (x, y, size), got "
                               f"shape {trees.shape}")
        if not np.isfinite(trees).all():
            raise TerrainError("'trees' has NaN/inf values")
        rows, cols = self.bedrock.shape
        if len(trees) and (trees[:, 0].min() < 0 or trees[:, 0].max() > cols - 1
                           or trees[:, 1].min() < 0 or trees[:, 1].max() > rows - 1):
            raise TerrainError(f"'trees' has positions outside the {rows}x{cols} grid "
                               "(x must be in 0..cols-1, y in 0..rows-1)")
        self.trees = np.ascontiguousarray(trees, dtype=np.float64)
        self.rock = column_from(self.rock)

    def copy(self) -> Terrain:
        slots = {name: slot for slot, name in enumerate(fields())}
        return Terrain(**{n: _placed(a, slots[n]) for n, a in self.arrays().items()},
                       cell_size=self.cell_size, outflow=self.outflow,
                       trees=np.array(self.trees, dtype=np.float64), rock=self.rock)
