"""Bilinear sampling of a grid at fractional positions: the one interpolation every
layer uses (tree positions on the surface, ridges drawn on a coarse lattice, a map
resampled to an engine's tile size, a coarse run's change carried to the fine grid, a
dune profile across the wind). Plain numpy, no numba: the formats layer and the add-on
import it without compiling anything.

Positions are in samples (0 .. n - 1 along an axis) and clamped to the grid; a position
on the last sample is that sample exactly.
"""

from __future__ import annotations

import numpy as np


def axis_weights(positions, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i0, i1, t) of fractional ``positions`` along an axis of ``n`` samples: the value
    there is ``v[i0] * (1 - t) + v[i1] * t``. Positions are clamped to 0 .. n - 1;
    ``i1 = i0 + 1`` except on a one-sample axis."""
    x = np.clip(positions, 0, n - 1)
    i0 = np.minimum(np.asarray(x).astype(np.int64), max(n - 2, 0))
    return i0, np.minimum(i0 + 1, n - 1), x - i0


def sample_bilinear(field: np.ndarray, rows, cols) -> np.ndarray:
    """``field`` at fractional (row, col) positions. ``rows`` and ``cols`` broadcast:
    two arrays of points, or ``rows[:, None]`` and ``cols[None, :]`` for a whole
    lattice (:func:`sample_lattice` reads only the part of the field it needs)."""
    r0, r1, fr = axis_weights(rows, field.shape[0])
    c0, c1, fc = axis_weights(cols, field.shape[1])
    top = field[r0, c0] * (1 - fc) + field[r0, c1] * fc
    bottom = field[r1, c0] * (1 - fc) + field[r1, c1] * fc
    return top * (1 - fr) + bottom * fr


def sample_lattice(field, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``field`` (a numpy array or anything sliced like one, e.g. a Zarr array) at the
    lattice of 1-D fractional positions ``rows`` x ``cols``, as float64, reading only
    the window of the field the lattice touches: the same numbers as
    ``sample_bilinear(field, rows[:, None], cols[None, :])``."""
    r0, r1, fr = axis_weights(rows, field.shape[0])
    c0, c1, fc = axis_weights(cols, field.shape[1])
    ra, rb, ca, cb = int(r0.min()), int(r1.max()) + 1, int(c0.min()), int(c1.max()) + 1
    a = np.asarray(field[ra:rb, ca:cb], dtype=np.float64)
    r0, r1, c0, c1 = r0 - ra, r1 - ra, c0 - ca, c1 - ca
    fc = fc[None, :]
    top = a[r0][:, c0] * (1 - fc) + a[r0][:, c1] * fc
    bottom = a[r1][:, c0] * (1 - fc) + a[r1][:, c1] * fc
    return top * (1 - fr)[:, None] + bottom * fr[:, None]


def corner_positions(n_in: int, n_out: int) -> np.ndarray:
    """Positions of ``n_out`` samples spread over ``n_in`` with both ends kept: output
    sample i sits at input position i x (n_in - 1) / (n_out - 1)."""
    return np.linspace(0.0, n_in - 1, n_out)


def centre_positions(n_fine: int, factor: int, window: tuple[int, int] | None = None
                     ) -> np.ndarray:
    """Positions on a coarse grid of the fine samples ``window`` (start, end exclusive;
    all ``n_fine`` by default) when each coarse sample stands for ``factor`` fine ones
    and sits at their centre: fine sample k is at coarse (k - (factor - 1) / 2) / factor."""
    lo, hi = window if window is not None else (0, n_fine)
    return (np.arange(n_fine)[lo:hi] - (factor - 1) / 2.0) / factor
