"""Trees (docs/references.md: the hydrology article).

Each growth cycle: a few random cells are tried for a new tree; every tree grows
(``size += growth_rate * (max_size - size)``, from ``start_size``), may seed a neighbour
within ``spread_radius`` and dies in a pool, on a strong stream, or by chance. A tree
takes root only where there is no pool, the stream is weak, the ground is not steep and
a random draw beats the vegetation already there (crowding). After each cycle the root
density is rebuilt: every tree adds ``size * (1 - d / root_radius)`` around itself,
clamped to 1, into ``terrain.vegetation``; hydrology's deposition rate is multiplied by
``1 - vegetation``, so roots hold the soil.

Distances are world lengths (``spread_distance``, ``root_distance``, metres), so a
forest has the same trees per km² at any cell size; the defaults (120 m, 60 m) are the
article's 4 and 2 cells on the generator's 30 m cells. ``spread_radius`` and
``root_radius`` are the older parameters in cells: above 0 (as saved by earlier
versions) they still win. ``spawn_tries`` is per cycle over the whole map.

Trees are state: ``terrain.trees`` rows are (x = column, y = row, size), cell units.
``size`` is 0..1 of a full-grown tree; ``tree_height`` (world units, metres) is how tall
a tree of size 1 is drawn, so the same preset gives the same trees at any cell size
(the add-on instances each tree ``size * tree_height`` tall).
Cycle ``k`` draws its random numbers from ``(seed, STREAM_ID, k)`` in tree-list order on
one thread, so the result depends only on (terrain, params, seed, first, count); the
root density is rebuilt in row bands on the pooled threads, the same on any number.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
from numba import njit

from ..fields import Field
from ..kernels import parallel
from ..kernels.primitives import next_uniform, stream_state
from ..params import Params, param
from ..process import Process
from ..terrain import Terrain

STREAM_ID = 6
#: a seedling lands at most this many cells from its parent, whatever the world distance
MAX_SPREAD_CELLS = 64
#: roots reach at most this many cells (a tree's root density costs radius² per cycle)
MAX_ROOT_CELLS = 16.0


class Kernel(NamedTuple):
    """What the tree kernels read (cells, fractions, counts)."""

    spawn_tries: int
    spread_chance: float
    spread_radius: int
    death_chance: float
    max_stream: float
    max_steepness: float
    start_size: float
    max_size: float
    growth_rate: float
    root_radius: float
    max_trees: int


@dataclasses.dataclass(frozen=True)
class TreeParams(Params):
    """Tree parameters (the article's model; open values are ours)."""

    spawn_tries: int = param(1, 0, 100_000, "cells/cycle",
                             "random cells tried for a new tree each cycle", soft_hi=100)
    spread_chance: float = param(0.02, 0.0, 1.0, "1/cycle",
                                 "chance a tree seeds a new one nearby each cycle")
    spread_distance: float = param(120.0, 0.0, 100_000.0, "m",
                                   "how far from its parent a seedling lands (world units)",
                                   soft_hi=2000.0)
    spread_radius: int = param(0, 0, 64, "cells",
                               "legacy, in cells: when above 0 it replaces spread_distance",
                               replaces="spread_distance")
    death_chance: float = param(0.001, 0.0, 1.0, "1/cycle", "random death chance per cycle")
    max_stream: float = param(0.2, 0.0, 1.0, "-",
                              "no tree takes root, and trees die, above this stream value")
    max_steepness: float = param(0.6, 0.0, 1.0, "-",
                                 "no tree takes root where the surface normal leans more "
                                 "than this (horizontal part; 0.6 is about 37 degrees)")
    start_size: float = param(0.5, 0.0, 1.0, "-", "size of a new tree")
    max_size: float = param(1.0, 0.0, 1.0, "-", "size a tree grows toward")
    growth_rate: float = param(0.05, 0.0, 1.0, "1/cycle",
                               "fraction of the remaining growth done per cycle")
    root_distance: float = param(60.0, 0.0, 100_000.0, "m",
                                 "radius of a tree's root density (world units)",
                                 soft_hi=1000.0)
    root_radius: float = param(0.0, 0.0, 16.0, "cells",
                               "legacy, in cells: when above 0 it replaces root_distance",
                               replaces="root_distance")
    tree_height: float = param(20.0, 0.01, 150.0, "m",
                               "height of a full-grown tree (size 1) in world units: trees "
                               "are drawn size x tree_height tall at any cell size",
                               soft_hi=60.0)
    max_trees: int = param(200_000, 0, 10_000_000, "trees", "cap on the number of trees",
                           soft_hi=1_000_000)
    batch: int = param(1, 1, 100_000, "cycles", "growth cycles per batch", soft_hi=100)

    def spread_cells(self, cell_size: float = 1.0) -> int:
        """How far a seedling lands, in cells (1 .. MAX_SPREAD_CELLS)."""
        legacy = self.legacy_override("spread_distance")  # spread_radius, in cells
        if legacy is not None:
            return int(legacy)
        return int(min(max(round(self.spread_distance / cell_size), 1), MAX_SPREAD_CELLS))

    def root_cells(self, cell_size: float = 1.0) -> float:
        """Root radius in cells (0.5 .. MAX_ROOT_CELLS)."""
        legacy = self.legacy_override("root_distance")  # root_radius, in cells
        if legacy is not None:
            return float(max(legacy, 0.5))
        return float(min(max(self.root_distance / cell_size, 0.5), MAX_ROOT_CELLS))

    def kernel(self, cell_size: float = 1.0) -> Kernel:
        """The kernels' parameters, by name, on a grid of ``cell_size`` world units (a
        named tuple the njit kernels read; ``tree_height`` is for drawing only)."""
        return Kernel(int(self.spawn_tries), float(self.spread_chance),
                          self.spread_cells(cell_size), float(self.death_chance),
                          float(self.max_stream), float(self.max_steepness),
                          float(self.start_size), float(self.max_size),
                          float(self.growth_rate), self.root_cells(cell_size),
                          int(self.max_trees))


@njit(cache=True, error_model="numpy")
def _steepness(height, pool, r, c):
    """Horizontal part of the unit surface normal at (r, c) (0 flat, -> 1 vertical)."""
    rows, cols = height.shape
    c0 = max(c - 1, 0)
    c1 = min(c + 1, cols - 1)
    r0 = max(r - 1, 0)
    r1 = min(r + 1, rows - 1)
    gx = ((height[r, c1] + pool[r, c1]) - (height[r, c0] + pool[r, c0])) / (c1 - c0)
    gy = ((height[r1, c] + pool[r1, c]) - (height[r0, c] + pool[r0, c])) / (r1 - r0)
    g2 = gx * gx + gy * gy
    return np.sqrt(g2 / (1.0 + g2))


@njit(cache=True, error_model="numpy")
def _fits(r, c, k, height, pool, stream):
    return pool[r, c] <= 0.0 and stream[r, c] <= k.max_stream and \
        _steepness(height, pool, r, c) <= k.max_steepness


@njit(cache=True)
def _copy_row(dst, a, src, b):
    """``dst[a] = src[b]`` for (x, y, size) tree rows, as a plain loop: numba's
    array-to-array slice assignment costs seconds of cold compile (bench_warmup)."""
    for j in range(3):
        dst[a, j] = src[b, j]


@njit(cache=True, error_model="numpy")
def _push(trees, n, x, y, size):
    if n == trees.shape[0]:
        bigger = np.empty((2 * trees.shape[0] + 16, 3))
        for i in range(n):
            _copy_row(bigger, i, trees, i)
        trees = bigger
    trees[n, 0] = x
    trees[n, 1] = y
    trees[n, 2] = size
    return trees, n + 1


@njit(nogil=True, cache=True, error_model="numpy")
def root_density_rows(first, last, trees, n, radius, vegetation):
    """Rows ``first .. last - 1`` of the root density of the first ``n`` trees (clamped
    to 0..1) into ``vegetation``: each cell sums the trees in list order, so row bands
    rebuilt on any threads give the whole grid's result."""
    cols = vegetation.shape[1]
    for r in range(first, last):
        for c in range(cols):
            vegetation[r, c] = 0.0
    reach = int(np.ceil(radius))
    for i in range(n):
        x = trees[i, 0]
        y = trees[i, 1]
        size = trees[i, 2]
        rc = int(np.floor(y + 0.5))
        cc = int(np.floor(x + 0.5))
        for r in range(max(rc - reach, first), min(rc + reach, last - 1) + 1):
            for c in range(max(cc - reach, 0), min(cc + reach, cols - 1) + 1):
                d = np.sqrt((r - y) * (r - y) + (c - x) * (c - x))
                if d < radius:
                    vegetation[r, c] += size * (1.0 - d / radius)
    for r in range(first, last):
        for c in range(cols):
            if vegetation[r, c] > 1.0:
                vegetation[r, c] = 1.0


def root_density(trees: np.ndarray, n: int, radius: float, vegetation: np.ndarray) -> None:
    """Rebuild ``vegetation`` from the first ``n`` trees (radius in cells), in row bands
    on the pooled threads (:func:`root_density_rows`)."""
    parallel.run(parallel.bands(vegetation.shape[0]),
                 lambda b: root_density_rows(b[0], b[1], trees, n, radius, vegetation))


@njit(cache=True, error_model="numpy")
def _seedling(st, r, c, k, trees, n, height, pool, stream, vegetation, seeding):
    """Try to root a tree in cell (r, c); ``seeding`` (0..1) is the chance the cell
    accepts one (1 draws no extra random number). Returns (state, trees, n)."""
    rows, cols = height.shape
    st, crowd = next_uniform(st)
    st, jx = next_uniform(st)
    st, jy = next_uniform(st)
    allowed = True
    if seeding[r, c] < 1.0:
        st, g = next_uniform(st)
        allowed = g < seeding[r, c]
    if allowed and n < k.max_trees and crowd >= vegetation[r, c] and \
            _fits(r, c, k, height, pool, stream):
        x = min(max(c + jx - 0.5, 0.0), cols - 1.0)
        y = min(max(r + jy - 0.5, 0.0), rows - 1.0)
        trees, n = _push(trees, n, x, y, k.start_size)
    return st, trees, n


@njit(nogil=True, cache=True, error_model="numpy")
def _cycle(seed, cycle, k, trees, n, height, pool, stream, vegetation, seeding):
    """Growth cycle number ``cycle`` on the first ``n`` rows of ``trees``: seedlings,
    growth and seeding, deaths (the root density is rebuilt after it). Returns
    (trees, n): a bigger array when the trees outgrew it."""
    rows, cols = height.shape
    reach = k.spread_radius
    st = stream_state(np.uint64(seed), np.uint64(STREAM_ID), np.uint64(cycle))
    for _ in range(k.spawn_tries):
        st, u = next_uniform(st)
        st, w = next_uniform(st)
        st, trees, n = _seedling(st, int(u * rows), int(w * cols), k, trees, n, height,
                                 pool, stream, vegetation, seeding)
    n0 = n
    for i in range(n0):
        trees[i, 2] += k.growth_rate * (k.max_size - trees[i, 2])
        st, u = next_uniform(st)
        if u < k.spread_chance:
            st, a = next_uniform(st)
            st, b = next_uniform(st)
            r = int(np.floor(trees[i, 1] + 0.5)) + int(a * (2 * reach + 1)) - reach
            c = int(np.floor(trees[i, 0] + 0.5)) + int(b * (2 * reach + 1)) - reach
            if 0 <= r < rows and 0 <= c < cols:
                st, trees, n = _seedling(st, r, c, k, trees, n, height, pool, stream,
                                         vegetation, seeding)
    kept = np.int64(0)  # not a literal 0: one signature of _copy_row
    for i in range(n):
        st, u = next_uniform(st)
        r = int(np.floor(trees[i, 1] + 0.5))
        c = int(np.floor(trees[i, 0] + 0.5))
        if pool[r, c] > 0.0 or stream[r, c] > k.max_stream or u < k.death_chance:
            continue
        _copy_row(trees, kept, trees, i)
        kept += 1
    return trees, kept


def run_batch(terrain: Terrain, params: TreeParams, seed: int, first: int, count: int,
              height: np.ndarray | None = None, cdf: np.ndarray | None = None) -> int:
    """Run growth cycles ``first .. first+count-1``; updates ``terrain.trees`` and
    ``terrain.vegetation``. ``cdf`` is unused (trees ignore rain). Returns the number
    of trees alive."""
    if height is None:
        height = terrain.height()
    given = np.asarray(terrain.trees, dtype=np.float64).reshape(-1, 3)
    n = given.shape[0]
    trees = np.empty((n + 16, 3))
    trees[:n] = given
    k = params.kernel(terrain.cell_size)
    t = terrain
    key = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    for cycle in range(first, first + count):
        trees, n = _cycle(key, cycle, k, trees, n, height, t.pool, t.stream, t.vegetation,
                          t.tree_seeding)
        root_density(trees, n, k.root_radius, t.vegetation)
    if count == 0:
        root_density(trees, n, k.root_radius, t.vegetation)
    terrain.trees = trees[:n].copy()
    return n


def per_rain(params: TreeParams, share: float) -> TreeParams:
    """A cycle's params when a round brings ``share`` x the reference rain per area
    (simulation.rain_share): a tree's chances per cycle (growth, seeding, death) become
    ``1 - (1 - p)^share``, so a forest grows as much per unit of rain on any map extent.
    ``spawn_tries`` is per cycle over the whole map: a bigger map runs more cycles for
    the same rain per area, so it already tries as many cells per km² per unit of rain."""
    if share == 1.0:
        return params

    def per(p: float) -> float:
        return float(-np.expm1(share * np.log1p(-p))) if p < 1.0 else 1.0

    return params.replace(growth_rate=per(params.growth_rate),
                          spread_chance=per(params.spread_chance),
                          death_chance=per(params.death_chance))


def per_area(params: TreeParams, share: float) -> TreeParams:
    """A window's params when it is ``share`` of the map (a tile): ``spawn_tries`` is
    per cycle over the whole map, so the window tries its share of them (at least one)."""
    return params.replace(spawn_tries=max(1, round(params.spawn_tries * share)))


PROCESS = Process(
    "trees", TreeParams, run_batch, "Trees",
    "trees spread where it is dry and gentle; roots hold the soil (N. McDonald's article)",
    order=60,
    stream=STREAM_ID, reads=("bedrock", "sediment", "stream", "pool", "tree_seeding",
                             "vegetation"),
    writes=("vegetation", "trees"),
    fields=(Field("vegetation", "fraction", "tree/root density", lo=0.0, hi=1.0,
                  color="te_trees", exact="te_vegetation", refine="map"),), per_rain=per_rain,
    per_area=per_area, seconds_per_unit=2.7e-3)
