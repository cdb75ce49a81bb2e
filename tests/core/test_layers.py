"""simcore.analysis.layers: the per-vertex buffers a write-back fills (on the live run's worker
thread) are exactly the values, whatever the buffer held before, and say whether
anything changed, so an unchanged layer is not written to the mesh again."""

from __future__ import annotations

import numpy as np

from simcore.analysis.layers import (
    HALF_GRAY_DEPTH,
    WET_DEPTH,
    tree_points,
    vertex_gray,
    vertex_values,
    water_surface,
    water_vertices,
)
from simcore.generators.noise import fractal_terrain
from simcore.kernels.sampling import sample_bilinear


def _order(n: int) -> np.ndarray:
    return np.random.default_rng(3).permutation(n).astype(np.int64)


def test_values_land_where_the_order_says_and_changes_are_reported():
    values = fractal_terrain(16, seed=2)
    order = _order(values.size)
    out = np.full(values.size, 7.0, np.float32)
    assert vertex_values(values, out, 2.5, order)
    expected = np.empty(values.size, np.float32)
    expected[order] = (values.ravel() * 2.5).astype(np.float32)
    assert np.array_equal(out, expected)
    assert not vertex_values(values, out, 2.5, order), "the same values: no change"
    values[3, 4] += 1.0
    assert vertex_values(values, out, 2.5, order)
    co = np.arange(3 * values.size, dtype=np.float32)  # positions: only z changes
    before = co.copy()
    vertex_values(values, co, 1.0, None, 3, 2)
    assert np.array_equal(co[2::3], values.ravel().astype(np.float32))
    assert np.array_equal(co[0::3], before[0::3]) and np.array_equal(co[1::3], before[1::3])


def test_gray_fills_every_channel_whatever_the_buffer_held():
    depth = np.abs(fractal_terrain(12, seed=4))
    gray = (depth / (depth + HALF_GRAY_DEPTH)).astype(np.float32).ravel()
    rgba = np.zeros(4 * depth.size, np.float32)
    rgba[0::4], rgba[3::4] = gray, 1.0  # red and alpha already right, green and blue not
    assert vertex_gray("sediment", depth, rgba)
    assert np.array_equal(rgba.reshape(-1, 4), np.stack([gray, gray, gray,
                                                         np.ones_like(gray)], 1))
    assert not vertex_gray("sediment", depth, rgba)
    stream = np.clip(fractal_terrain(12, seed=5) / 10.0, -0.5, 1.5)
    vertex_gray("stream", stream, rgba)  # a 0..1 map: clipped
    assert np.array_equal(rgba[0::4], np.clip(stream, 0, 1).astype(np.float32).ravel())


def test_water_vertices_are_the_water_surface_and_its_wet_layer():
    height = fractal_terrain(20, seed=6)
    pool = np.where(height < np.median(height), 0.8, 0.0)
    pool[0, 0] = WET_DEPTH / 2  # a film too thin to count as water
    order = _order(height.size)
    co = np.full(3 * height.size, np.nan, np.float32)
    wet = np.empty(height.size, np.float32)
    assert water_vertices(height, pool, 3.0, co, wet, order)
    z = np.empty(height.size, np.float32)
    z[order] = (water_surface(height, pool) * 3.0).astype(np.float32).ravel()
    assert np.array_equal(co[2::3], z)
    expected = np.empty(height.size, np.float32)
    expected[order] = (pool > WET_DEPTH).ravel()
    assert np.array_equal(wet, expected)
    assert not water_vertices(height, pool, 3.0, co, wet, order)


def test_tree_points_stand_on_the_ground():
    height = fractal_terrain(16, seed=7)
    trees = np.array([[0.0, 0.0, 0.5], [3.25, 7.5, 1.0], [15.0, 15.0, 0.2]])
    co, size = tree_points(trees, height, 10.0, 20.0, 2.0, 2.0)
    assert co.dtype == np.float32 and size.dtype == np.float32
    assert np.array_equal(co[:, 0], (10.0 + 2.0 * trees[:, 0]).astype(np.float32))
    assert np.array_equal(co[:, 1], (20.0 + 2.0 * trees[:, 1]).astype(np.float32))
    ground = sample_bilinear(height, trees[:, 1], trees[:, 0]) * 2.0
    assert np.array_equal(co[:, 2], ground.astype(np.float32))
    assert np.array_equal(size, trees[:, 2].astype(np.float32))
