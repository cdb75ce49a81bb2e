"""Display values for the terrain arrays and fast conversion to per-vertex float32
buffers (what a mesh attribute stores)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .processes import FIELDS

#: Pool depth (cell units) above which a cell counts as wet (lakes, the sea, te_wet).
WET_DEPTH = 1e-6
#: Depth (cell units) that maps to mid-gray for the depth-like arrays.
HALF_GRAY_DEPTH = 1.0
#: Arrays shown as d / (d + HALF_GRAY_DEPTH): the depths of simcore/fields.py.
DEPTH_LIKE = tuple(f.name for f in FIELDS.values() if f.kind == "depth" and f.color)


@njit(cache=True, error_model="numpy")
def _scaled(values, scale, order, out):
    flat = values.ravel()
    if order.size == 0:
        for i in range(flat.size):
            out[i] = flat[i] * scale
    else:
        for i in range(flat.size):
            out[order[i]] = flat[i] * scale


@njit(cache=True, error_model="numpy")
def _gray_rgba(values, depth_like, order, rgba):
    flat = values.ravel()
    for i in range(flat.size):
        v = flat[i]
        if depth_like:
            v = max(v, 0.0)
            g = v / (v + HALF_GRAY_DEPTH)
        else:
            g = min(max(v, 0.0), 1.0)
        j = i if order.size == 0 else order[i]
        rgba[j, 0] = g
        rgba[j, 1] = g
        rgba[j, 2] = g
        rgba[j, 3] = 1.0


def to_vertices(values: np.ndarray, out: np.ndarray, scale: float = 1.0,
                order: np.ndarray | None = None) -> np.ndarray:
    """``out[order[i]] = values.flat[i] * scale`` into a float32 buffer (no order:
    identity). One pass, no temporaries."""
    _scaled(values, float(scale), np.empty(0, np.int64) if order is None else order, out)
    return out


def gray_to_rgba(name: str, values: np.ndarray, rgba: np.ndarray,
                 order: np.ndarray | None = None) -> np.ndarray:
    """Gray of ``values`` into an (n, 4) float32 RGBA buffer (alpha 1): depths
    (sediment, pool) as d / (d + 1 cell), so 1 cell of sand is mid-gray; maps that are
    already 0..1 (stream, vegetation, wind) clipped."""
    _gray_rgba(values, name in DEPTH_LIKE, np.empty(0, np.int64) if order is None else order,
               rgba)
    return rgba


def water_surface(height: np.ndarray, pool: np.ndarray, below: float = 0.5) -> np.ndarray:
    """Heights of a water surface mesh (cell units): ground + pool depth where there is
    water, ``below`` cells under the ground elsewhere (hidden by the terrain)."""
    return np.where(pool > WET_DEPTH, height + pool, height - below)


def sample_bilinear(height: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bilinear heights at points (x = column, y = row, cell units), clamped to the grid."""
    rows, cols = height.shape
    x = np.clip(x, 0.0, cols - 1.000001)
    y = np.clip(y, 0.0, rows - 1.000001)
    xi, yi = x.astype(np.int64), y.astype(np.int64)
    fx, fy = x - xi, y - yi
    top = height[yi, xi] * (1 - fx) + height[yi, xi + 1] * fx
    bottom = height[yi + 1, xi] * (1 - fx) + height[yi + 1, xi + 1] * fx
    return top * (1 - fy) + bottom * fy
