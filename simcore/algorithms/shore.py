"""Distance and direction to the shore, for shading waves that roll toward every coast
(the snowball article's appendix, docs/references.md).

The *waterline* is the set of dry cells with a water cell among their 4 neighbours.
:func:`shore_field` gives, for every cell, the exact Euclidean distance (world units,
cell centres) to the nearest waterline cell and the unit vector pointing to it. It is
an exact distance transform (Felzenszwalb & Huttenlocher 2012: two passes of a 1-D
lower envelope of parabolas, O(cells)), not a search; non-square cells are handled
by scaling each pass with its own spacing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels import numba_cache  # noqa: F401 - a failing cache write is a warning

INF = np.inf


@njit(cache=True)
def _envelope_1d(f, spacing, d_out, arg_out, v, z):
    """Squared distance transform of the sampled function ``f`` (inf = no site) on
    points ``q * spacing``; ``arg_out[q]`` is the index of the nearest site (-1: none)."""
    n = f.size
    k = -1
    for q in range(n):
        if f[q] == INF:
            continue
        xq = q * spacing
        s = -INF
        while k >= 0:
            p = v[k]
            xp = p * spacing
            s = ((f[q] + xq * xq) - (f[p] + xp * xp)) / (2.0 * (xq - xp))
            if s <= z[k]:
                k -= 1
            else:
                break
        k += 1
        v[k] = q
        z[k] = -INF if k == 0 else s
        z[k + 1] = INF
    if k < 0:
        for q in range(n):
            d_out[q] = INF
            arg_out[q] = -1
        return
    k = 0
    for q in range(n):
        x = q * spacing
        while z[k + 1] < x:
            k += 1
        p = v[k]
        dx = x - p * spacing
        d_out[q] = dx * dx + f[p]
        arg_out[q] = p


@njit(cache=True)
def _feature_transform(sites, cell_x, cell_y, dist2, near_r, near_c):
    """Squared distance and nearest site (row, col) for every cell."""
    rows, cols = sites.shape
    m = max(rows, cols)
    f = np.empty(m)
    d = np.empty(m)
    arg = np.empty(m, np.int64)
    v = np.empty(m, np.int64)
    z = np.empty(m + 1)
    g = np.empty((rows, cols))
    site_row = np.empty((rows, cols), np.int64)
    for c in range(cols):  # pass 1: along each column (y spacing)
        for r in range(rows):
            f[r] = 0.0 if sites[r, c] else INF
        _envelope_1d(f[:rows], cell_y, d[:rows], arg[:rows], v, z)
        for r in range(rows):
            g[r, c] = d[r]
            site_row[r, c] = arg[r]
    for r in range(rows):  # pass 2: along each row (x spacing)
        for c in range(cols):
            f[c] = g[r, c]
        _envelope_1d(f[:cols], cell_x, d[:cols], arg[:cols], v, z)
        for c in range(cols):
            dist2[r, c] = d[c]
            near_c[r, c] = arg[c]
            near_r[r, c] = site_row[r, arg[c]] if arg[c] >= 0 else -1


def waterline(water: np.ndarray) -> np.ndarray:
    """Dry cells with a water cell among their 4 neighbours (bool, same shape)."""
    w = np.asarray(water, dtype=bool)
    near = np.zeros_like(w)
    near[1:, :] |= w[:-1, :]
    near[:-1, :] |= w[1:, :]
    near[:, 1:] |= w[:, :-1]
    near[:, :-1] |= w[:, 1:]
    return near & ~w


def distance_to_sites(sites: np.ndarray, cell_x: float = 1.0, cell_y: float | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact Euclidean distance (world units) from every cell centre to the nearest
    ``True`` cell of ``sites``, and that cell's (row, col); inf / -1 when there is none.
    ``cell_x`` is the spacing between columns, ``cell_y`` between rows."""
    sites = np.ascontiguousarray(sites, dtype=np.bool_)
    if sites.ndim != 2:
        raise ValueError(f"sites must be a 2-D mask, got shape {sites.shape}")
    cy = float(cell_x if cell_y is None else cell_y)
    dist2 = np.empty(sites.shape)
    near_r = np.empty(sites.shape, np.int64)
    near_c = np.empty(sites.shape, np.int64)
    _feature_transform(sites, float(cell_x), cy, dist2, near_r, near_c)
    return np.sqrt(dist2), near_r, near_c


def shore_field(water: np.ndarray, cell_x: float = 1.0, cell_y: float | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Distance to the waterline (world units, 0 on it; inf on a map with no shore) and
    the unit direction toward it as ``(rows, cols, 2)`` = (dx, dy) in world axes
    (x along columns, y along rows; zero on the waterline and where there is no shore).
    """
    cy = float(cell_x if cell_y is None else cell_y)
    dist, near_r, near_c = distance_to_sites(waterline(water), cell_x, cy)
    rows, cols = dist.shape
    r, c = np.mgrid[0:rows, 0:cols]
    direction = np.zeros((rows, cols, 2))
    ok = (near_r >= 0) & (dist > 0)
    direction[..., 0] = np.where(ok, (near_c - c) * float(cell_x), 0.0)
    direction[..., 1] = np.where(ok, (near_r - r) * cy, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        direction /= np.where(ok, dist, 1.0)[..., None]
    return dist, direction
