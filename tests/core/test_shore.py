"""Distance and direction to the shore: an exact distance transform, checked against
brute force."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcore.algorithms.shore import distance_to_sites, shore_field, waterline


def brute(sites, cx, cy):
    rows, cols = sites.shape
    pts = np.argwhere(sites)
    if len(pts) == 0:
        return np.full(sites.shape, np.inf)
    r, c = np.mgrid[0:rows, 0:cols]
    d = np.sqrt(((r[..., None] - pts[:, 0]) * cy) ** 2 + ((c[..., None] - pts[:, 1]) * cx) ** 2)
    return d.min(-1)


@given(arrays(np.bool_, st.tuples(st.integers(1, 14), st.integers(1, 14))),
       st.floats(0.1, 10.0), st.floats(0.1, 10.0))
def test_distance_transform_equals_brute_force(sites, cx, cy):
    dist, near_r, near_c = distance_to_sites(sites, cx, cy)
    expect = brute(sites, cx, cy)
    assert np.allclose(dist, expect, rtol=1e-9, atol=1e-9, equal_nan=False) or \
        (np.isinf(expect).all() and np.isinf(dist).all())
    if sites.any():
        # the reported nearest site is a site at exactly that distance
        assert sites[near_r, near_c].all()
        rows, cols = sites.shape
        r, c = np.mgrid[0:rows, 0:cols]
        d = np.hypot((near_r - r) * cy, (near_c - c) * cx)
        assert np.allclose(d, dist)


@given(arrays(np.bool_, st.tuples(st.integers(3, 12), st.integers(3, 12))),
       st.floats(0.5, 4.0))
def test_shore_field_zero_on_waterline_direction_points_to_it(water, cell):
    dist, direction = shore_field(water, cell)
    line = waterline(water)
    assert (dist[line] == 0).all()
    if not line.any():
        assert np.isinf(dist).all() and (direction == 0).all()
        return
    assert (dist[~line] > 0).all()
    away = ~line
    norm = np.hypot(direction[..., 0], direction[..., 1])
    assert np.allclose(norm[away], 1.0)
    # stepping dist along the direction lands on a waterline cell centre
    rows, cols = water.shape
    r, c = np.mgrid[0:rows, 0:cols]
    tc = np.rint(c + direction[..., 0] * dist / cell).astype(int)
    tr = np.rint(r + direction[..., 1] * dist / cell).astype(int)
    assert line[tr[away], tc[away]].all()


def test_grows_one_cell_size_per_cell_from_a_straight_coast():
    cell = 2.5
    water = np.zeros((9, 12), bool)
    water[:, 7:] = True  # sea to the east, coast along column 6
    dist, direction = shore_field(water, cell)
    for k in range(12):
        assert np.allclose(dist[:, k], abs(k - 6) * cell)
    assert np.allclose(direction[:, 8:, 0], -1.0) and np.allclose(direction[:, :6, 0], 1.0)
    assert np.allclose(direction[..., 1], 0.0)


def test_non_square_cells_and_a_lake():
    water = np.zeros((21, 21), bool)
    yy, xx = np.mgrid[0:21, 0:21]
    water[(yy - 10) ** 2 + (xx - 10) ** 2 <= 25] = True
    dist, _ = shore_field(water, 1.0, 3.0)
    assert np.allclose(dist, brute(waterline(water), 1.0, 3.0))
