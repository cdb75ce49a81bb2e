"""Display values for the terrain arrays: one gray level 0..1 per cell for color layers."""

from __future__ import annotations

import numpy as np

#: Depth (cell units) that maps to mid-gray for the depth-like arrays.
HALF_GRAY_DEPTH = 1.0


def gray(name: str, values: np.ndarray) -> np.ndarray:
    """Map a terrain array to 0..1: depths (sediment, pool) as d / (d + 1 cell), so
    1 cell of sand is mid-gray; maps that are already 0..1 (stream, vegetation, wind)
    are clipped."""
    if name in ("sediment", "pool"):
        d = np.maximum(values, 0.0)
        return d / (d + HALF_GRAY_DEPTH)
    return np.clip(values, 0.0, 1.0)
