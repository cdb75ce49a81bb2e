"""A grid made twice as fine: the monotone cubic (Fritsch-Carlson, PCHIP) kernel and the
volume every refined layer keeps (docs/refine.md).

A grid of ``n`` samples along an axis becomes ``2n - 1``: every sample is kept and a new
one sits half-way between each pair, so the grid's extent (``(n - 1) x cell``) stays
the same at half the cell size. Along an axis the new sample is the piecewise cubic
Hermite interpolant at the interval's middle, ``(y0 + y1) / 2 + (m0 - m1) / 8`` (in
samples), with the slopes ``m`` of Fritsch and Carlson (1980) as SciPy's
``PchipInterpolator`` takes them: the harmonic mean of the two secants inside, 0 at a
local extremum, the shape-preserving three-point formula at the ends. On a grid the
interpolation is the tensor product: rows first, then columns. Every new sample then
lies between the samples around it (a middle one between its interval's two ends, a
centre one between its cell's four corners): no overshoot, no new peak or pit, a plane
stays exactly a plane.

Volumes are integrals over the grid's extent of the surface its samples span: a sample
stands for the area nearer to it than to any other (a whole cell inside, half a cell
on an edge, a quarter at a corner), which a refinement keeps.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import parallel


@njit(cache=True, nogil=True, inline="always")
def _inner_slope(left, right):
    """Fritsch-Carlson slope at a sample between secants ``left`` and ``right`` (equal
    spacing): 0 at an extremum, else their harmonic mean."""
    if left * right <= 0.0:
        return 0.0
    return 2.0 * left * right / (left + right)


@njit(cache=True, nogil=True, inline="always")
def _end_slope(near, far):
    """The shape-preserving three-point slope at an end whose first secant is ``near``
    and second ``far`` (SciPy's PchipInterpolator)."""
    m = 0.5 * (3.0 * near - far)
    if m * near <= 0.0:
        return 0.0
    if near * far < 0.0 and abs(m) > abs(3.0 * near):
        return 3.0 * near
    return m


@njit(cache=True, nogil=True)
def _slope(y0, y1, y2, i, n):
    """Slope at sample ``i`` of ``n`` from the values at i-1, i, i+1 (``y0``, ``y1``,
    ``y2``; at the first sample y0..y2 are samples 0..2, at the last n-3..n-1)."""
    if i == 0:
        return _end_slope(y1 - y0, y2 - y1)
    if i == n - 1:
        return _end_slope(y2 - y1, y1 - y0)
    return _inner_slope(y1 - y0, y2 - y1)


@njit(cache=True, nogil=True)
def _double_rows(a, out, first, last):
    """Rows ``first .. last-1`` of ``a`` (n columns) into ``out``'s even rows, with
    2n - 1 columns: the samples kept, the middles interpolated."""
    n = a.shape[1]
    for r in range(first, last):
        src = a[r]
        dst = out[2 * r]
        m_prev = _slope(src[0], src[1], src[2], 0, n)
        for c in range(n - 1):
            lo = min(c, n - 3)
            m_next = _slope(src[lo], src[lo + 1], src[lo + 2], c + 1, n)
            dst[2 * c] = src[c]
            dst[2 * c + 1] = 0.5 * (src[c] + src[c + 1]) + 0.125 * (m_prev - m_next)
            m_prev = m_next
        dst[2 * n - 2] = src[n - 1]


@njit(cache=True, nogil=True)
def _odd_rows(out, first, last):
    """Odd rows ``2k + 1`` for k in ``first .. last-1`` of ``out`` from its even rows
    (the coarse rows, already doubled along themselves)."""
    n = (out.shape[0] + 1) // 2
    cols = out.shape[1]
    for k in range(first, last):
        a0 = 2 * k
        a1 = 2 * k + 2
        lo0 = 2 * (min(max(k - 1, 0), n - 3))
        lo1 = 2 * (min(max(k, 0), n - 3))
        for c in range(cols):
            m0 = _slope(out[lo0, c], out[lo0 + 2, c], out[lo0 + 4, c], k, n)
            m1 = _slope(out[lo1, c], out[lo1 + 2, c], out[lo1 + 4, c], k + 1, n)
            out[2 * k + 1, c] = 0.5 * (out[a0, c] + out[a1, c]) + 0.125 * (m0 - m1)


def double(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``a`` (rows x cols, at least 3 x 3) on the grid twice as fine, (2 rows - 1) x
    (2 cols - 1): every sample kept, the new ones by the monotone cubic (module doc).
    Runs on the pooled threads; the result does not depend on how many."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    rows, cols = a.shape
    if out is None:
        out = np.empty((2 * rows - 1, 2 * cols - 1))
    parallel.run(parallel.bands(rows), lambda s: _double_rows(a, out, s[0], s[1]))
    parallel.run(parallel.bands(rows - 1), lambda s: _odd_rows(out, s[0], s[1]))
    return out


def volume(a: np.ndarray) -> float:
    """Integral of ``a`` over the grid's extent, in samples² x ``a``'s unit: each
    sample weighs 1 inside, 1/2 on an edge, 1/4 at a corner (module doc)."""
    inner = float(a[1:-1, 1:-1].sum())
    edges = float(a[0, 1:-1].sum() + a[-1, 1:-1].sum() + a[1:-1, 0].sum()
                  + a[1:-1, -1].sum())
    corners = float(a[0, 0] + a[0, -1] + a[-1, 0] + a[-1, -1])
    return inner + 0.5 * edges + 0.25 * corners


@njit(cache=True, nogil=True)
def _levels(height, depth, ground, shift, out, first, last):
    rows, cols = height.shape
    for i in range(first, last):
        r0 = i // 2
        r1 = r0 + (i & 1)
        for j in range(out.shape[1]):
            c0 = j // 2
            c1 = c0 + (j & 1)
            level = np.inf
            for r in (r0, r1):
                for c in (c0, c1):
                    if depth[r, c] > 0.0:
                        level = min(level, height[r, c] + depth[r, c])
            out[i, j] = max(level + shift - ground[i, j], 0.0) if level < np.inf else 0.0


def carry_levels(height: np.ndarray, depth: np.ndarray, ground: np.ndarray,
                 shift: float = 0.0, out: np.ndarray | None = None) -> np.ndarray:
    """Depth of water standing at its level on the grid twice as fine: the coarse
    water (``depth`` > 0 on the ground ``height``) stands at ``height + depth``; a fine
    sample takes the level of the wet coarse samples around it (the lowest, where two
    meet), raised by ``shift`` (the ground's), and is wet where that level is above
    its ``ground``. A fine sample with no wet coarse sample around it stays dry."""
    if out is None:
        out = np.empty(ground.shape)
    parallel.run(parallel.bands(ground.shape[0]),
                 lambda s: _levels(height, depth, ground, shift, out, s[0], s[1]))
    return out
