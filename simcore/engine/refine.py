"""A terrain on the grid twice as fine, carrying its whole state (docs/refine.md).

``rows x cols`` samples become ``(2 rows - 1) x (2 cols - 1)`` at half the cell size:
every sample is kept and the grid's extent ((samples - 1) x cell size, what Blender
shows as the object's size and the add-on's Real Size) stays the same. Each terrain
array is carried as its descriptor says (``Field.refine``, simcore/fields.py); an
array whose descriptor says nothing is refused by name, never dropped.
"""

from __future__ import annotations

import numpy as np

from ..algorithms.strata import Strata
from ..fields import REFINE, Field
from ..kernels.refine import carry_levels, double, volume
from ..terrain import (
    MAX_ABS_VALUE,
    Terrain,
    TerrainError,
    check_cell_size,
    fields,
    grid,
    range_error,
)
from .memory import check_refine


class RefineError(TerrainError):
    """The terrain holds an array a refinement cannot carry."""


def _by_method(known: dict[str, Field]) -> dict[str, list[Field]]:
    """The terrain's fields grouped by ``Field.refine``; RefineError for a field that
    says nothing, or a terrain without exactly one ground array."""
    groups: dict[str, list[Field]] = {m: [] for m in REFINE}
    for f in known.values():
        if f.refine not in REFINE:
            raise RefineError(f"the terrain array '{f.name}' cannot be refined: its "
                              "descriptor gives no 'refine' method (simcore/fields.py "
                              "REFINE); nothing was written")
        groups[f.refine].append(f)
    if len(groups["ground"]) != 1:
        raise RefineError("a refinement needs exactly one 'ground' array, got "
                          f"{[f.name for f in groups['ground']] or 'none'}")
    return groups


def _constant(a: np.ndarray) -> float | None:
    """The one value of ``a`` when all its values are equal, else None."""
    first = float(a.flat[0])
    return first if bool((a == first).all()) else None


def _amount(a: np.ndarray, scale: float, out: np.ndarray | None = None) -> np.ndarray:
    """An amount (>= 0) on the fine grid: interpolated, its volume kept by scaling,
    then in fine cell units (x ``scale``)."""
    out = double(a, out)
    np.maximum(out, 0.0, out=out)  # the interpolation keeps >= 0; rounding too
    have = volume(out)
    want = 4.0 * volume(a)
    out *= scale * (want / have if have > 0.0 else 0.0)
    return out


def _fine(f: Field, a: np.ndarray, out: np.ndarray) -> None:
    """An 'amount', 'layer' or 'map' array on the fine grid, in fine units, into
    ``out``."""
    if f.refine in ("amount", "layer"):
        _amount(a, 2.0 if f.is_length else 1.0, out)
        return
    double(a, out)
    if f.lo is not None or f.hi is not None:  # the interpolation keeps the range
        np.clip(out, f.lo, f.hi, out=out)


def refine(terrain: Terrain, available: int | None = None) -> Terrain:
    """``terrain`` on the grid twice as fine (module doc); the input is not changed.
    A ResourceError before any work when it would not fit in memory (``available``
    bytes, default: what is free now); a RefineError naming an array it cannot carry."""
    known = fields()
    groups = _by_method(known)
    check_refine(terrain.shape, len(terrain.changes), available)
    check_cell_size(terrain.cell_size / 2.0)
    for f in known.values():  # lengths double in the finer cells
        if f.is_length and 2.0 * float(np.abs(getattr(terrain, f.name)).max()) > MAX_ABS_VALUE:
            raise range_error(f.name, 2.0 * float(np.abs(getattr(terrain, f.name)).max()))
    rows, cols = terrain.shape
    shape = (2 * rows - 1, 2 * cols - 1)
    area = float((shape[0] - 1) * (shape[1] - 1))
    # the fine arrays, in the page slots a run's grids take (terrain.grid); an array
    # that is one value throughout stays one value (zeros cost nothing until written)
    same = {name: _constant(getattr(terrain, name)) for name in known}
    out = {name: grid(shape, slot, zeros=same[name] is not None)
           for slot, name in enumerate(known)}
    # the ground surface: interpolated, its volume kept by a uniform shift
    base = groups["ground"][0]
    height = np.array(getattr(terrain, base.name))
    for f in groups["layer"]:
        height += getattr(terrain, f.name)
    ground = double(height, out[base.name])
    shift = (4.0 * volume(height) - volume(ground)) / area
    ground += shift
    for f in groups["amount"] + groups["layer"] + groups["map"]:
        value = same[f.name]
        if value is None:
            _fine(f, getattr(terrain, f.name), out[f.name])
        elif value != 0.0:  # its volume is kept as it is
            out[f.name].fill(value * 2.0 if f.is_length else value)
    for f in groups["level"]:
        if same[f.name] == 0.0:  # no water: none on the fine grid
            continue
        depth = carry_levels(height, getattr(terrain, f.name), ground, shift, out[f.name])
        if f.is_length:
            depth *= 2.0
    del height
    ground *= 2.0  # fine cell units
    for f in groups["layer"]:
        ground -= out[f.name]
    for f in groups["rock"]:  # 0 without a column (zeros already when it was)
        if same[f.name] != 0.0:
            out[f.name].fill(0.0)
    fine = Terrain(**out, cell_size=terrain.cell_size / 2.0,
                   outflow=terrain.outflow * 8.0, rock=terrain.rock,
                   trees=np.array(terrain.trees, dtype=np.float64))
    fine.trees[:, :2] *= 2.0  # the same places, counted in the finer cells
    losses = np.empty(shape) if terrain.changes else None
    for name, change in terrain.changes.items():  # gains and losses each kept
        gains = _amount(np.maximum(change, 0.0), 2.0)
        gains -= _amount(np.maximum(-change, 0.0), 2.0, losses)
        fine.changes[name] = gains
    del losses
    if groups["rock"] and terrain.rock is not None:
        uplifted = fine.sources() if any(f.source for f in known.values()) else None
        scratch = np.empty(shape)
        strata = Strata(terrain.rock, shape, fine.cell_size)
        for f in groups["rock"]:
            strata.evaluate(fine.bedrock, fine.erodibility, scratch, getattr(fine, f.name),
                            uplifted=uplifted)
    # every array is finite and in its range by construction (the interpolation keeps
    # each new sample between coarse ones): no validate() pass over the fine grid
    return fine
