"""Painted masks that steer the simulation: helpers that turn what an
artist paints or selects into the terrain's input maps (``rain``, ``erodibility``,
``protect``, ``tree_seeding``; the ``input`` fields of :mod:`simcore.fields`).

"Erode only the selection": :func:`selection_protect` gives 0 on the selected cells,
rising smoothly (smoothstep of the distance, world units) to exactly 1 at ``falloff``
and beyond, so the simulation leaves everything outside the falloff bit-identical and
the change fades out without a step at the border.
"""

from __future__ import annotations

import numpy as np

from ..errors import UserError
from .shore import distance_to_sites


class MaskError(UserError):
    """A mask cannot be used (wrong shape, empty where it must not be)."""


def smoothstep(t: np.ndarray) -> np.ndarray:
    """3t² - 2t³ on t clipped to 0..1: 0 and 1 with zero slope at both ends."""
    t = np.clip(t, 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def selection_protect(selected: np.ndarray, falloff: float, cell_x: float = 1.0,
                      cell_y: float | None = None) -> np.ndarray:
    """Protect map (0..1) for eroding only ``selected`` cells (bool (rows, cols)):
    0 on the selection, smoothstep(distance / falloff) around it, exactly 1 from
    ``falloff`` (world units) on. ``cell_x``/``cell_y`` are the world spacings."""
    selected = np.asarray(selected, dtype=bool)
    if selected.ndim != 2:
        raise MaskError(f"the selection must be a (rows, cols) mask, got {selected.shape}")
    if not selected.any():
        raise MaskError("nothing is selected: select the vertices to erode (Edit Mode) "
                        "or pick a vertex group, or turn 'Selection Only' off")
    falloff = float(falloff)
    if not np.isfinite(falloff) or falloff < 0:
        raise MaskError(f"the falloff must be a distance >= 0, got {falloff!r}")
    dist, _, _ = distance_to_sites(selected, cell_x, cell_y)
    if falloff == 0.0:
        return (dist > 0.0).astype(np.float64)
    out = smoothstep(dist / falloff)
    out[dist >= falloff] = 1.0
    return out


def combine_protect(*maps: np.ndarray | None) -> np.ndarray | None:
    """Cell-wise maximum of the protect maps given (None entries are skipped)."""
    present = [np.asarray(m, dtype=np.float64) for m in maps if m is not None]
    if not present:
        return None
    return np.clip(np.maximum.reduce(present), 0.0, 1.0)


def check_rain(rain: np.ndarray, source: str) -> None:
    """A rain mask must let some rain fall somewhere."""
    if not (np.asarray(rain) > 0).any():
        raise MaskError(f"the rain mask {source} is zero everywhere, so no droplet could "
                        "start: paint some rain or set the Rain mask to None")
