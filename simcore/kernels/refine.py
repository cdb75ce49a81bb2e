"""A grid made twice as fine: the monotone cubic kernel and the volume every refined
layer keeps (docs/refine.md).

A grid of ``n`` samples along an axis becomes ``2n - 1``: every sample is kept and a new
one sits half-way between each pair, so the grid's extent (``(n - 1) x cell``) stays
the same at half the cell size. Along an axis the new sample is the cubic Hermite
interpolant at the interval's middle, ``(y0 + y1) / 2 + (m0 - m1) / 8`` (in samples),
with slopes limited in the manner of Fritsch and Carlson (1980): at each sample the
slope of the parabola through it and its two neighbours (three-point at the ends),
clamped to twice the smaller secant beside it. That bound keeps every new sample
between its interval's two ends (a monotone run stays monotone, no overshoot, no new
peak or pit), and, unlike PCHIP's zero slope at every local extremum, it does not
flatten a summit or a valley floor that falls between samples. On a grid the
interpolation is the tensor product, rows first, then columns, so a centre sample lies
between its cell's four corners; where the two ends of one diagonal are both lower than
the other two corners (a pass: water on the coarse grid crosses the cell only along that
diagonal, as in a valley one cell wide running diagonally), the centre is kept no
higher than the pass's higher end, so the valley is not dammed. A plane stays exactly
a plane; a parabola is exact where no bound acts.

Volumes are integrals over the grid's extent of the surface its samples span: a sample
stands for the area nearer to it than to any other (a whole cell inside, half a cell
on an edge, a quarter at a corner), which a refinement keeps.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import parallel


@njit(cache=True, nogil=True, inline="always")
def _limited(m, bound):
    """``m`` clamped to -bound .. bound."""
    return min(max(m, -bound), bound)


@njit(cache=True, nogil=True)
def _slope(y0, y1, y2, i, n):
    """Slope at sample ``i`` of ``n`` from the values at i-1, i, i+1 (``y0``, ``y1``,
    ``y2``; at the first sample y0..y2 are samples 0..2, at the last n-3..n-1): the
    parabola's through the three, at most twice the secant of each interval the sample
    bounds (so every new sample lies between its interval's ends)."""
    left = y1 - y0
    right = y2 - y1
    if i == 0:
        return _limited(1.5 * left - 0.5 * right, 2.0 * abs(left))
    if i == n - 1:
        return _limited(1.5 * right - 0.5 * left, 2.0 * abs(right))
    return _limited(0.5 * (left + right), 2.0 * min(abs(left), abs(right)))


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


@njit(cache=True, nogil=True, inline="always")
def _open_pass(v, a, d, b, c):
    """A cell centre ``v`` no higher than a diagonal pass across the cell: corners
    ``a`` and ``d`` (or ``b`` and ``c``) both below the other two, so water on the coarse
    grid crosses from one to the other only along that diagonal."""
    low = max(a, d)
    if min(b, c) > low and v > low:
        v = low
    low = max(b, c)
    if min(a, d) > low and v > low:
        v = low
    return v


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
            v = 0.5 * (out[a0, c] + out[a1, c]) + 0.125 * (m0 - m1)
            if c & 1:  # a cell's centre never dams a pass along a diagonal
                v = _open_pass(v, out[a0, c - 1], out[a1, c + 1], out[a0, c + 1],
                               out[a1, c - 1])
            out[2 * k + 1, c] = v


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


def halve(a: np.ndarray) -> np.ndarray:
    """``a`` (rows x cols, both odd and at least 3) on the grid half as fine, ((rows + 1)
    / 2) x ((cols + 1) / 2) over the same extent: each coarse sample is the mean of the
    fine samples around it weighted 1/4, 1/2, 1/4 along each axis (full weighting; on
    an edge, along the edge only), so a plane stays the plane and detail finer than
    the coarse cells is averaged away, not aliased."""
    a = np.asarray(a, dtype=np.float64)
    rows = np.empty(((a.shape[0] + 1) // 2, a.shape[1]))
    rows[1:-1] = 0.25 * (a[1:-2:2] + a[3::2]) + 0.5 * a[2:-1:2]
    rows[0], rows[-1] = a[0], a[-1]
    out = np.empty((rows.shape[0], (a.shape[1] + 1) // 2))
    out[:, 1:-1] = 0.25 * (rows[:, 1:-2:2] + rows[:, 3::2]) + 0.5 * rows[:, 2:-1:2]
    out[:, 0], out[:, -1] = rows[:, 0], rows[:, -1]
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
