"""Connected parts of a boolean map (8 neighbours): lakes, sand bodies, wet areas.
One labeller for all of them; ``wrap`` joins the map's opposite edges (a periodic
map, as the dune field's)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels import numba_cache  # noqa: F401 - a failing cache write is a warning


@njit(cache=True)
def _label(mask, wrap, labels, stack):
    rows, cols = mask.shape
    count = 0
    for r0 in range(rows):
        for c0 in range(cols):
            if not mask[r0, c0] or labels[r0, c0] != 0:
                continue
            count += 1
            labels[r0, c0] = count
            stack[0] = r0 * cols + c0
            top = 1
            while top > 0:
                top -= 1
                r = stack[top] // cols
                c = stack[top] - r * cols
                for dr in range(-1, 2):
                    for dc in range(-1, 2):
                        nr, nc = r + dr, c + dc
                        if wrap:
                            nr, nc = nr % rows, nc % cols
                        elif not (0 <= nr < rows and 0 <= nc < cols):
                            continue
                        if mask[nr, nc] and labels[nr, nc] == 0:
                            labels[nr, nc] = count
                            stack[top] = nr * cols + nc
                            top += 1
    return count


def label(mask: np.ndarray, wrap: bool = False) -> tuple[np.ndarray, int]:
    """The 8-connected parts of ``mask``: int32 labels (0 outside, 1..n numbered in the
    order the rows meet them) and n."""
    m = np.ascontiguousarray(mask, dtype=np.bool_)
    labels = np.zeros(m.shape, np.int32)
    n = _label(m, bool(wrap), labels, np.empty(max(m.size, 1), np.int64))
    return labels, int(n)


def sizes(mask: np.ndarray, wrap: bool = False) -> np.ndarray:
    """Cells of each part of ``mask``, in the order of :func:`label`."""
    labels, n = label(mask, wrap)
    return np.bincount(labels.ravel(), minlength=n + 1)[1:]
