"""A layer lying on the ground (glacier ice, say) as a quad mesh of its top surface.

Inputs are plain rasters in any consistent length unit (the caller's): the ground
height and the layer's thickness there.
"""

from __future__ import annotations

import numpy as np


def cover_mesh(ground: np.ndarray, depth: np.ndarray, min_depth: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Quads over every place where ``depth`` is thicker than ``min_depth``.

    A grid quad is kept when any of its 4 corners is covered (``depth > min_depth``);
    every vertex sits at ``ground + depth``, so the surface thins out to the ground at
    the cover's edge. Quads whose corners are all bare are left out.

    Returns ``(cells, top, quads, covered)``: ``cells`` (n, 2) (row, col) of the used
    vertices, ``top`` their height (ground + depth), ``quads`` (m, 4) indices into
    ``cells`` (counter-clockwise seen from above, rows along +y), ``covered`` (n,) True
    where the vertex itself is covered (False: a rim vertex of a covered quad).
    """
    ground = np.asarray(ground, dtype=np.float64)
    depth = np.maximum(np.asarray(depth, dtype=np.float64), 0.0)
    thick = depth > min_depth
    rows, cols = thick.shape
    any_thick = thick[:-1, :-1] | thick[:-1, 1:] | thick[1:, :-1] | thick[1:, 1:]
    qr, qc = np.nonzero(any_thick)
    corners = np.stack([qr * cols + qc, qr * cols + qc + 1, (qr + 1) * cols + qc + 1,
                        (qr + 1) * cols + qc], axis=1)
    used, inverse = np.unique(corners.ravel(), return_inverse=True)
    cells = np.stack([used // cols, used % cols], axis=1)
    top = (ground + depth).ravel()[used]
    return cells, top, inverse.reshape(-1, 4), thick.ravel()[used]
