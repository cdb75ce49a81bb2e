"""Rivers and lakes as data (simcore.analysis.channels)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from simcore.analysis.channels import label_lakes, lake_mesh, stream_polylines


def valley(n=40):
    """A V valley draining south (row 0 is low) with a stream along its floor."""
    r, c = np.mgrid[0:n, 0:n].astype(float)
    height = 0.5 * r + 0.8 * np.abs(c - n // 2)
    stream = np.zeros((n, n))
    stream[:, n // 2] = 0.9
    return height, stream


def test_polyline_follows_the_stream_cells_downhill():
    height, stream = valley()
    lines = stream_polylines(stream, height, 0.5)
    assert len(lines) == 1
    cells, flow = lines[0]
    assert (cells[:, 1] == 20).all()
    assert list(cells[:, 0]) == list(range(39, -1, -1))  # source (high) to mouth (row 0)
    assert np.allclose(flow, 0.9)


def test_tributary_joins_at_a_shared_junction_and_spurs_are_dropped():
    height, stream = valley()
    stream[30, 21:30] = 0.8  # a side stream flowing west into the main one
    height[30, 21:30] = height[30, 20] + 0.1 * np.arange(1, 10)
    stream[10, 22] = 0.7  # a 1-cell spur
    lines = stream_polylines(stream, height, 0.5, min_points=4)
    assert len(lines) == 2
    main, trib = lines[0][0], lines[1][0]
    assert tuple(trib[-1]) in {tuple(p) for p in main}
    covered = {tuple(p) for cells, _ in lines for p in cells}
    assert (10, 22) not in covered


@given(st.integers(0, 10_000))
def test_every_point_is_a_channel_cell_and_steps_go_downhill(seed):
    rng = np.random.default_rng(seed)
    height = rng.random((24, 24)) * 5 + np.mgrid[0:24, 0:24][0]
    stream = rng.random((24, 24))
    for cells, flow in stream_polylines(stream, height, 0.4, 2):
        h = height[cells[:, 0], cells[:, 1]]
        assert (np.diff(h) < 0).all()
        assert (np.abs(np.diff(cells, axis=0)) <= 1).all()
        assert (stream[cells[:-1, 0], cells[:-1, 1]] >= 0.4).all()
        assert ((flow >= 0) & (flow <= 1)).all()


def test_lakes_labelled_and_meshed_flat_at_their_surface():
    height = np.full((20, 20), 5.0)
    pool = np.zeros((20, 20))
    height[3:7, 3:7] = 2.0
    pool[3:7, 3:7] = 1.5       # lake 1, surface 3.5
    height[12:16, 10:18] = 1.0
    pool[12:16, 10:18] = 3.0   # lake 2, surface 4.0
    labels, n = label_lakes(pool > 0)
    assert n == 2 and len(np.unique(labels[3:7, 3:7])) == 1
    cells, level, quads, lake = lake_mesh(height, pool)
    assert set(np.unique(lake)) == {1, 2}
    for k, surface in ((1, 3.5), (2, 4.0)):
        verts = np.unique(quads[lake == k])
        assert np.allclose(level[verts], surface)
    # every wet cell is a vertex of the mesh
    wet = {tuple(p) for p in np.argwhere(pool > 0)}
    assert wet <= {tuple(p) for p in cells}


def test_a_wide_band_gives_one_line_down_its_crest():
    height, _ = valley()
    height = height * 0 + 0.5 * np.mgrid[0:40, 0:40][0]  # a plain slope: parallel flow
    stream = np.zeros((40, 40))
    stream[:, 18:23] = [0.5, 0.7, 0.9, 0.7, 0.5]
    lines = stream_polylines(stream, height, 0.4)
    assert len(lines) == 1 and (lines[0][0][:, 1] == 20).all()
    assert len(stream_polylines(stream, height, 0.4, thin=False)) == 5
