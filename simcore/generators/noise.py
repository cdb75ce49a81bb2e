"""Test terrains: fractal value noise (numpy only, deterministic for a seed)."""

from __future__ import annotations

import numpy as np


def _value_noise(rows: int, cols: int, cells: int, rng: np.random.Generator) -> np.ndarray:
    """One octave: random values on a (cells+1)^2 lattice, smoothstep-interpolated."""
    lattice = rng.random((cells + 2, cells + 2))
    y = np.linspace(0.0, cells, rows, endpoint=False)
    x = np.linspace(0.0, cells, cols, endpoint=False)
    yi = y.astype(int)
    xi = x.astype(int)
    fy = y - yi
    fx = x - xi
    fy = fy * fy * (3 - 2 * fy)
    fx = fx * fx * (3 - 2 * fx)
    a = lattice[np.ix_(yi, xi)]
    b = lattice[np.ix_(yi, xi + 1)]
    c = lattice[np.ix_(yi + 1, xi)]
    d = lattice[np.ix_(yi + 1, xi + 1)]
    top = a + (b - a) * fx[None, :]
    bottom = c + (d - c) * fx[None, :]
    return top + (bottom - top) * fy[:, None]


def fractal_terrain(rows: int, cols: int | None = None, *, seed: int = 0,
                    relief: float | None = None, base_cells: int = 4,
                    octaves: int = 7, persistence: float = 0.5) -> np.ndarray:
    """Fractal (fBm) heights, shape (rows, cols), from 0 to ``relief`` cell units.

    ``relief`` defaults to a quarter of the longer side, which gives mountains with
    real slopes for the erosion to work on. ``base_cells`` is the number of noise
    features across the map at the lowest octave.
    """
    cols = rows if cols is None else cols
    if rows < 3 or cols < 3:
        raise ValueError(f"a terrain needs at least 3x3 cells, got {rows}x{cols}")
    rng = np.random.default_rng(seed)
    heights = np.zeros((rows, cols))
    amplitude = 1.0
    cells = base_cells
    for _ in range(octaves):
        heights += amplitude * _value_noise(rows, cols, cells, rng)
        amplitude *= persistence
        cells *= 2
    heights -= heights.min()
    span = heights.max()
    relief = max(rows, cols) / 4.0 if relief is None else relief
    return heights * (relief / span if span > 0 else 0.0)


#: ``simcore generate`` defaults: 30 m cells (a 1-arc-second DEM) ...
DEFAULT_CELL_SIZE = 30.0
#: ... and relief = 0.12 x the longer side (about 920 m on 256 x 256 cells = 7.7 km),
#: with persistence 0.45: slope median ~18 deg, p99 ~40 deg, like real uplands.
RELIEF_FRACTION = 0.12
UPLAND_PERSISTENCE = 0.45


def upland_terrain(rows: int, cols: int | None = None, *, seed: int = 0,
                   cell_size: float = DEFAULT_CELL_SIZE,
                   relief: float | None = None) -> np.ndarray:
    """World heights (0 .. ``relief`` world units) of uneroded uplands on a grid of
    ``cell_size`` world units: fBm with persistence 0.45 (smoother than 0.5, as real
    relief is at short wavelengths). ``relief`` defaults to 0.12 x the extent, so the
    slopes (median ~18 deg, almost none above 45 deg) do not depend on the grid size.
    """
    cols = rows if cols is None else cols
    if relief is None:
        relief = RELIEF_FRACTION * max(rows, cols) * cell_size
    return fractal_terrain(rows, cols, seed=seed, relief=1.0,
                           persistence=UPLAND_PERSISTENCE) * relief
