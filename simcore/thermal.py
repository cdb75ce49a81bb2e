"""Thermal erosion (ALGORITHMS.md §7, suggested in seed 000): weathering + talus slides.

"Thermal erosion is trivially implemented on top of the wind system: an abrasive force
making sediment, which then cascades." One *pass* over the whole grid does:

1. Weathering: bedrock turns into sediment in place, ``weathering * erodibility *
   exp(-sediment / soil_depth)`` per pass — bare rock weathers at the full rate, rock
   buried under loose material less (the exponential soil-production law). Counted in
   the masks like wind abrasion: eroded (bedrock removed) and deposited (sediment made).
2. Talus: sediment slides downhill to its angle of repose. For every cell, the excess
   over the talus slope against each of its 8 neighbours is
   ``d = max(h - h_n - tan(talus_angle) * distance, 0)`` (distance 1 or sqrt 2 cells);
   the cell sends ``min(sediment, settling * max(d) / 2)`` to its lower neighbours in
   proportion to ``d``. Only sediment moves: bedrock is an obstacle and never moves.

All cells are updated together from the state before the pass (two sweeps: what every
cell sends, then what every cell receives), so the result depends only on the input
state and the number of passes: it is the same on 1 or N threads, and the seed is not
used. Edges are closed: nothing leaves the grid, so bedrock + sediment is conserved
exactly up to rounding, and ``terrain.outflow`` is not changed.

``run_batch`` runs ``count`` passes (``batch`` passes per round of a Simulation; in
its progress a pass counts as one particle) and returns the cell updates done.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numba import njit, prange

from .params import Params, param
from .terrain import Terrain

STREAM_ID = 4  # reserved RNG stream; the passes need no random numbers

_SQRT2 = math.sqrt(2.0)


@dataclasses.dataclass(frozen=True)
class ThermalParams(Params):
    """Thermal erosion parameters (ours: the seed only suggests the process)."""

    talus_angle: float = param(33.0, 0.0, 89.0, "deg",
                               "angle of repose: loose material slides on steeper slopes")
    weathering: float = param(0.0005, 0.0, 1.0, "cell/pass",
                              "bedrock turned into sediment per pass where it is bare",
                              soft_hi=0.01)
    soil_depth: float = param(0.5, 0.001, 1000.0, "cells",
                              "weathering slows by e for each soil_depth of cover",
                              soft_hi=10.0)
    settling: float = param(0.5, 0.0, 1.0, "-",
                            "fraction of half the largest excess moved per pass")
    batch: int = param(1, 1, 100_000, "passes", "grid passes per batch", soft_hi=100)

    def as_array(self) -> np.ndarray:
        return np.array([math.tan(math.radians(self.talus_angle)), self.weathering,
                         self.soil_depth, self.settling], dtype=np.float64)


@njit(cache=True, parallel=True, error_model="numpy")
def _send(p, height, bedrock, sediment, eroded, deposited, erodibility, sent, share):
    """Weather every cell, then work out what it sends: ``sent`` (total) and ``share``
    (sent / sum of excesses, so a neighbour receives share * its excess)."""
    talus, weathering, soil_depth, settling = p[0], p[1], p[2], p[3]
    rows, cols = height.shape
    for r in prange(rows):
        for c in range(cols):
            if weathering > 0.0:
                s = sediment[r, c]
                w = weathering * erodibility[r, c] * math.exp(-s / soil_depth)
                rock = bedrock[r, c] - w
                s += w
                bedrock[r, c] = rock
                sediment[r, c] = s
                height[r, c] = rock + s
                dep = deposited[r, c]
                fd = min(w, dep)
                deposited[r, c] = dep - fd + w
                eroded[r, c] += w - fd
    for r in prange(rows):
        r0 = max(r - 1, 0)
        r1 = min(r + 1, rows - 1)
        for c in range(cols):
            c0 = max(c - 1, 0)
            c1 = min(c + 1, cols - 1)
            h = height[r, c]
            dmax = 0.0
            dsum = 0.0
            for rr in range(r0, r1 + 1):
                for cc in range(c0, c1 + 1):
                    t = talus * (_SQRT2 if (rr != r and cc != c) else 1.0)
                    d = max(h - height[rr, cc] - t, 0.0)  # 0 for the cell itself
                    dmax = max(dmax, d)
                    dsum += d
            out = min(sediment[r, c], settling * 0.5 * dmax)
            sent[r, c] = out
            share[r, c] = out / dsum if dsum > 0.0 else 0.0


@njit(cache=True, parallel=True, error_model="numpy")
def _receive(p, height, bedrock, sediment, eroded, deposited, sent, share, new_height):
    """Apply one pass: every cell loses what it sent and gains its share of what each
    higher neighbour sent. Reads ``height`` (state before the pass), writes the rest."""
    talus = p[0]
    rows, cols = height.shape
    for r in prange(rows):
        r0 = max(r - 1, 0)
        r1 = min(r + 1, rows - 1)
        for c in range(cols):
            c0 = max(c - 1, 0)
            c1 = min(c + 1, cols - 1)
            h = height[r, c]
            gain = 0.0
            for rr in range(r0, r1 + 1):
                for cc in range(c0, c1 + 1):
                    t = talus * (_SQRT2 if (rr != r and cc != c) else 1.0)
                    gain += share[rr, cc] * max(height[rr, cc] - h - t, 0.0)
            out = sent[r, c]
            s = sediment[r, c] - out + gain
            sediment[r, c] = s
            new_height[r, c] = bedrock[r, c] + s
            dep = deposited[r, c]
            fd = min(out, dep)
            deposited[r, c] = dep - fd + gain
            eroded[r, c] += out - fd


def run_batch(terrain: Terrain, params: ThermalParams, seed: int, first: int, count: int,
              height: np.ndarray | None = None, cdf: np.ndarray | None = None) -> int:
    """Run ``count`` thermal passes on ``terrain`` in place (``seed``, ``first`` and
    ``cdf`` are not needed: the passes are deterministic). ``height`` (bedrock +
    sediment) is kept in step when given. Returns the cell updates done."""
    if height is None:
        height = terrain.height()
    p = params.as_array()
    sent = np.empty_like(height)
    share = np.empty_like(height)
    scratch = np.empty_like(height)
    for _ in range(count):
        _send(p, height, terrain.bedrock, terrain.sediment, terrain.eroded,
              terrain.deposited, terrain.erodibility, sent, share)
        _receive(p, height, terrain.bedrock, terrain.sediment, terrain.eroded,
                 terrain.deposited, sent, share, scratch)
        height[...] = scratch
    return int(count) * height.size
