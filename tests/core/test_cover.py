"""A layer on the ground as a mesh (simcore/analysis/cover.py)."""

from __future__ import annotations

import numpy as np

from simcore.analysis.cover import cover_mesh


def test_quads_only_around_covered_vertices_at_ground_plus_depth():
    ground = np.arange(30, dtype=float).reshape(5, 6) * 0.1
    depth = np.zeros((5, 6))
    depth[2, 3] = 2.0   # covered
    depth[0, 0] = 0.05  # thinner than the minimum: bare
    cells, top, quads, covered = cover_mesh(ground, depth, 0.1)
    assert len(quads) == 4, "the 4 quads around the one covered vertex"
    assert sorted(map(tuple, cells)) == [(r, c) for r in (1, 2, 3) for c in (2, 3, 4)]
    r, c = cells[:, 0], cells[:, 1]
    assert np.array_equal(top, ground[r, c] + depth[r, c])
    assert covered.sum() == 1 and tuple(cells[covered][0]) == (2, 3)
    # counter-clockwise seen from above (x = col, y = row): positive signed area
    xy = cells[quads][..., ::-1].astype(float)
    area = 0.5 * np.sum(xy[:, :, 0] * np.roll(xy[:, :, 1], -1, 1)
                        - np.roll(xy[:, :, 0], -1, 1) * xy[:, :, 1], axis=1)
    assert (area > 0).all()


def test_nothing_covered_is_an_empty_mesh():
    cells, top, quads, covered = cover_mesh(np.zeros((4, 4)), np.zeros((4, 4)), 0.0)
    assert cells.shape == (0, 2) and quads.shape == (0, 4) and len(top) == len(covered) == 0
