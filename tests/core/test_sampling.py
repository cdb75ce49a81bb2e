"""The one bilinear sampler: exact on the samples, exact on planes, a window of a
lattice the same numbers as the whole lattice, and both ends kept by corner positions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.kernels.sampling import (
    axis_weights,
    centre_positions,
    corner_positions,
    sample_bilinear,
    sample_lattice,
)

shapes = st.tuples(st.integers(1, 9), st.integers(1, 9))


@settings(max_examples=60, deadline=None)
@given(shapes, st.integers(0, 2**32 - 1))
def test_exact_on_the_samples(shape, seed):
    field = np.random.default_rng(seed).normal(size=shape) * 1e3
    r, c = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    assert np.array_equal(sample_bilinear(field, r.astype(float), c.astype(float)), field)
    assert np.array_equal(sample_lattice(field, np.arange(shape[0]) * 1.0,
                                         np.arange(shape[1]) * 1.0), field)


@settings(max_examples=60, deadline=None)
@given(shapes, st.floats(-5, 5), st.floats(-5, 5), st.integers(0, 2**32 - 1))
def test_planes_are_reproduced_and_positions_clamped(shape, a, b, seed):
    rows, cols = shape
    field = a * np.arange(rows)[:, None] + b * np.arange(cols)[None, :]
    rng = np.random.default_rng(seed)
    r, c = rng.uniform(-2, rows + 1, 50), rng.uniform(-2, cols + 1, 50)
    want = a * np.clip(r, 0, rows - 1) + b * np.clip(c, 0, cols - 1)
    assert np.allclose(sample_bilinear(field, r, c), want, rtol=0, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 12), st.integers(2, 12), st.integers(1, 5), st.data())
def test_a_window_is_the_same_numbers_as_the_whole(rows, cols, factor, data):
    coarse = np.random.default_rng(rows * 100 + cols).normal(size=(rows, cols))
    n_r, n_c = rows * factor, cols * factor
    whole = sample_lattice(coarse, centre_positions(n_r, factor),
                           centre_positions(n_c, factor))
    assert np.array_equal(whole, sample_bilinear(
        coarse, centre_positions(n_r, factor)[:, None],
        centre_positions(n_c, factor)[None, :]))
    r0 = data.draw(st.integers(0, n_r - 1))
    r1 = data.draw(st.integers(r0 + 1, n_r))
    c0 = data.draw(st.integers(0, n_c - 1))
    c1 = data.draw(st.integers(c0 + 1, n_c))
    part = sample_lattice(coarse, centre_positions(n_r, factor, (r0, r1)),
                          centre_positions(n_c, factor, (c0, c1)))
    assert np.array_equal(part, whole[r0:r1, c0:c1])


@given(st.integers(2, 50), st.integers(1, 50))
def test_corner_positions_keep_both_ends(n_in, n_out):
    pos = corner_positions(n_in, n_out)
    assert pos[0] == 0 and len(pos) == n_out
    if n_out > 1:
        assert pos[-1] == n_in - 1
    i0, i1, t = axis_weights(pos, n_in)
    assert np.all((0 <= t) & (t <= 1)) and np.all(i1 <= n_in - 1)
