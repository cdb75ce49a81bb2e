"""Hydrology: streams and pools (docs/references.md: the hydrology article, N. McDonald's
"Procedural Hydrology: Dynamic Lake and River Simulation").

Water particles alternate between two algorithms:

* **descend** — a droplet with volume rolls over the surface (ground + pool), pushed by
  the surface normal, slowed by friction, evaporating; it exchanges sediment with the
  ground (``kernels.exchange``, so the sediment layer, erodibility and the
  eroded/deposited masks stay consistent) and marks every cell it visits in a per-batch
  ``track`` mask. The stream map lowers friction and evaporation; vegetation lowers the
  mass exchange. A descent ends off the map (the water is gone, its sediment goes to
  ``terrain.outflow``), on entering a pool, when it idles on a strong stream (the
  article's rules) or when it is trapped, slow, in a hollow (ours); then the remaining
  water floods.
* **flood** — the water runs down to the bottom of the hollow it is in and fills the
  basin from there: a priority flood takes the cells in order of surface height and
  raises the level over them until the water is used up, or until the level reaches
  the basin's spill point (lower ground or a lower lake beyond the rim, the sea, or an
  open map edge); then the lake stands at its spill level and the rest of the water
  overflows there with 10 % of its sediment and descends again. A lake already above
  its drain (its outlet eroded) sinks toward it by ``drainage`` per particle, and after
  every batch any lake still above an outlet is lowered to it: at batch boundaries no
  pool stands above its spill level.

**Units.** Heights and pool depths are in cell units like every terrain array (world
height / cell size), so ``height + pool`` is the water surface. Water is booked as real
volume: a particle brings ``rain_volume`` m³ (``rain_volume / cell_size**3`` cell³); a
pool of depth ``d`` cells on ``n`` cells holds ``d * n * cell_size**3`` m³. With rain
given per area (a number of particles per m², as the presets do) the same world gets
the same water at any grid resolution. The article's heights are normalised (0..1,
times a ``scale`` for the normal) and its particle fills ``1 / volumeFactor`` of that
unit on one cell: the same rain as the article on a terrain of relief ``R`` is
``article_rain_volume(R, cell_size) = R / 100 * cell_size**2``. The descent's volume
is the fraction of the particle's water left (1 at the start); its equilibrium load is
``capacity`` (sediment per water, m³/m³) x speed x drop, so erosion grows with the
water a particle carries.

Our changes to the article's flood (documented, tested):

* Exact and conservative: every m³ of water a flood takes is in the pool map; a lake
  never stands above its spill level after a flood; cost is the basin's area (plus its
  rim) times log, never the map's, and nothing recurses. The article's plane search
  (a test plane rising by half the volume, at most 10 failed tries, the level raised to
  the failed plane) made water from nothing and left lakes above their spill points.
* Water that stops on a slope first runs down to the bottom of its hollow (the article
  moved the particle one cell to a lower "drain"; with ``spill`` 5 the water of a
  particle stopping on a hillside was lost before it reached any hollow).
* Open map edges (``open_edges``, default): water reaching a map-edge cell flows off
  the map there, so no lake leans on the edge of the world. Off, the edges are walls,
  as in the article.
* Sea level (optional): cells below it that connect to a map edge are ocean; they are
  filled to sea level in the pool map before every batch, and a particle or a flood that
  reaches the ocean drains away.
* Mass: sediment a particle carries is never lost silently. Off the map it is counted in
  ``terrain.outflow``; when water goes into a pool, the sediment in that water settles
  where the particle entered (a delta); what a drain does not keep settles there too.
  Material laid down in a pool displaces water, so the pool's surface stays flat.

Runs on one thread, particles in index order; particle ``k`` draws its random numbers
from ``(seed, STREAM_ID, k)``, so the result depends only on (terrain, params, seed,
first, count).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
from numba import njit

from ..algorithms import components
from ..fields import Field
from ..kernels.primitives import (
    exchange,
    heap_pop,
    heap_push,
    put,
    rain_cdf,
    start_position,
    stream_state,
)
from ..params import Params, param
from ..process import Process
from ..terrain import Terrain

STREAM_ID = 5

#: The article's fixed thresholds: a descent on a stream (> STREAM_STOP) whose
#: acceleration is below ACC_STOP ends and floods.
STREAM_STOP = 0.5
ACC_STOP = 0.01
#: Ours: a slow descent (speed below SLOW_STOP cells/step) in a cell no neighbour is
#: lower than is trapped in a hollow and floods there (the article lets it roll to and
#: fro until it evaporates, so dry hollows never gather water)
SLOW_STOP = 0.1
#: The article's stream factors: on a full stream (1) friction is halved and
#: evaporation cut by a fifth, so particles prefer established streams.
STREAM_FRICTION_CUT = 0.5
STREAM_EVAPORATION_CUT = 0.2
#: a descent never digs a cell lower than this fraction of the drop to the next cell
DIG_LIMIT = 0.99
#: the article's volumeFactor: its particle fills 1/100 of its height unit on one cell
ARTICLE_VOLUME_FACTOR = 100.0

#: world size (m) of the cells the per-step rates (evaporation, deposition) are given
#: for: a descending particle moves about a cell a step, so on other grids they are
#: scaled by cell_size / REFERENCE_CELL and stay the same per metre of path
REFERENCE_CELL = 30.0

#: relative tolerance under which two water surfaces count as the same level
LEVEL_TOL = 1e-9

_U1 = np.uint64(1)  # unsigned index arithmetic stays unsigned (no float promotion)

# descend outcomes
_OUT, _EVAPORATED, _FLOOD = 0, 1, 2
# flood outcomes: water all in the pool (or dropped), overflow to a drain, into the sea,
# off an open map edge
_DONE, _DRAINED, _SEA, _EDGE = 0, 1, 2, 3
#: what ``run_batch(stats=...)`` counts, in order (floods by outcome last)
STATS = ("descend steps", "floods", "flood cells visited", "floods kept",
         "floods drained", "floods to sea", "floods off edge")


class Kernel(NamedTuple):
    """What the kernels read, in their units (steps, cell units, cell³)."""

    dt: float
    density: float
    evaporation: float
    deposition: float
    min_volume: float
    friction: float
    water: float  # cell³ of water in one unit of particle volume
    load: float  # capacity x water: equilibrium load per unit volume, speed and drop
    drainage: float
    spill: int
    drain_sediment: float
    max_steps: int
    sea: bool
    sea_level: float
    open_edges: bool


@dataclasses.dataclass(frozen=True)
class HydrologyParams(Params):
    """Streams and pools (article defaults). Water in world units (m, m³); heights,
    pool depths and sea level are in cell units like the terrain."""

    dt: float = param(1.2, 0.01, 1.9, "step", "time step of a descending particle")
    density: float = param(1.0, 0.01, 100.0, "-", "water density; higher = more inertia "
                           "(on 30 m cells; the acceleration per step scales with the "
                           "cell size)", soft_hi=10.0)
    evaporation: float = param(0.001, 1e-4, 0.5, "1/30 m",
                               "fraction of volume lost per step on 30 m cells (per "
                               "distance: scaled by cell size / 30 m)", soft_hi=0.05)
    deposition: float = param(0.1, 0.0, 1.0, "1/30 m",
                              "mass exchange rate toward the equilibrium load, per step on "
                              "30 m cells (per distance: scaled by cell size / 30 m)")
    min_volume: float = param(0.01, 1e-4, 1.0, "-",
                              "a particle ends below this fraction of its water")
    friction: float = param(0.05, 0.0, 0.5, "1/30 m", "speed lost per step on 30 m cells "
                            "(scaled by cell size / 30 m, like the acceleration: a "
                            "particle's inertia is a world length)")
    rain_volume: float = param(8000.0, 1e-9, 1e12, "m³",
                               "water one particle brings (world volume); the article's "
                               "is relief / 100 x cell area (about 8000 m³ on 30 m cells "
                               "and 900 m of relief)", soft_hi=1e5)
    capacity: float = param(0.3, 0.0, 100.0, "m³/m³",
                            "sediment a descending particle carries at equilibrium, per "
                            "volume of its water, per unit of speed (cells/step) and of "
                            "drop (cells); so erosion grows with the rain", soft_hi=10.0)
    volume_factor: float = param(0.0, 0.0, 1e4, "volume/cell",
                                 "legacy (files from before world units): when > 0, a "
                                 "particle holds 1/volume_factor cell³ and rain_volume is "
                                 "ignored; 0 = use rain_volume", soft_hi=1000.0,
                                 replaces="rain_volume")
    drainage: float = param(0.001, 0.0, 1.0, "-",
                            "how fast a draining pool sinks toward its drain, per particle")
    spill: int = param(20, 1, 100, "times", "descend-flood cycles a particle may do (the "
                       "article: 5; finer grids pass more small pools)")
    stream_rate: float = param(0.01, 0.0, 1.0, "1/batch",
                               "stream map adaptation rate per batch")
    drain_sediment: float = param(0.1, 0.0, 1.0, "-",
                                  "fraction of its sediment a draining particle keeps")
    max_tries: int = param(10, 1, 100, "tries", "legacy, unused: the flood finds its "
                           "level in one pass (kept so older presets and files load)",
                           legacy=True)
    max_steps: int = param(20000, 1, 10_000_000, "steps",
                           "safety cap on the steps of one descent (defaults end by "
                           "evaporation within ~4800)", soft_hi=100000)
    open_edges: bool = param(True, doc="water reaching the map edge flows off it (no lake "
                             "leans on the edge of the map); off: the edges are walls")
    sea: bool = param(False, doc="enable the sea: below sea_level, map edges drain and "
                      "connected low ground is ocean")
    sea_height: float = param(0.0, -1e9, 1e9, "world",
                              "sea surface height in world units (the same sea at any "
                              "cell size)", soft_hi=10000.0)
    sea_level: float = param(0.0, -1e6, 1e6, "cell units",
                             "legacy: sea surface height in cell units (world height / "
                             "cell size); when not 0 it replaces sea_height",
                             replaces="sea_height")
    batch: int = param(250, 1, 1_000_000, "particles",
                       "particles per batch; the stream map is updated after each",
                       soft_hi=10000)

    def water(self, cell_size: float) -> float:
        """Water of one new particle in cell³ (m³ / cell_size³)."""
        legacy = self.legacy_override("rain_volume")  # volume_factor: 1/it cell³
        if legacy is not None:
            return 1.0 / legacy
        return self.rain_volume / float(cell_size) ** 3

    def sea_cells(self, cell_size: float) -> float:
        """The sea surface in cell units: ``sea_level`` (legacy, cell units) when not 0,
        else ``sea_height`` (world units) / ``cell_size``."""
        legacy = self.legacy_override("sea_height")  # sea_level, in cell units
        return float(legacy) if legacy is not None else \
            float(self.sea_height) / float(cell_size)

    def kernel(self, cell_size: float) -> Kernel:
        """The kernels' parameters for a grid of ``cell_size``."""
        # a step is about one cell of travel, so the time of a step grows with the cell
        # size: rates per step scale by cell / REFERENCE_CELL, and so do the acceleration
        # (density) and friction, so the speed in cells a step and the distance a
        # particle takes to slow down are the same at any resolution
        per_step = float(cell_size) / REFERENCE_CELL
        return Kernel(float(self.dt), float(self.density) / per_step,
                      self.evaporation * per_step, self.deposition * per_step,
                      float(self.min_volume), float(self.friction) * per_step,
                      self.water(cell_size), self.capacity * self.water(cell_size),
                      float(self.drainage), int(self.spill),
                      float(self.drain_sediment), int(self.max_steps),
                      bool(self.sea), self.sea_cells(cell_size), bool(self.open_edges))


def article_rain_volume(relief: float, cell_size: float) -> float:
    """``rain_volume`` (m³) that gives the article's water per particle on a terrain of
    ``relief`` world units and cells of ``cell_size``: its heights are normalised to
    0..1 of the relief and a particle fills 1/volumeFactor of that on one cell."""
    return float(relief) / ARTICLE_VOLUME_FACTOR * float(cell_size) ** 2


# ---------------------------------------------------------------------------- scratch

def _scratch(terrain: Terrain) -> tuple[np.ndarray, ...]:
    """Work arrays for the flood, kept with the terrain (freed with it), all flat:
    visit stamps (with the generation counter in ``gen[0]``), the priority queue's
    keys (also the levelling's list of wet cells, :func:`_wet_list`) and cells (also
    the fill's stack), and the taken cells. Never cleared: a new
    generation number marks every cell unvisited in O(1)."""
    n = terrain.bedrock.size
    found = terrain.__dict__.get("_flood_scratch")
    if found is None or found[0].size != n:
        found = (np.zeros(n, dtype=np.int32), np.zeros(1, dtype=np.int64),
                 np.empty(n, dtype=np.float64), np.empty(n, dtype=np.int64),
                 np.empty(n, dtype=np.int64))
        terrain.__dict__["_flood_scratch"] = found
    return found


def _wet_list(scratch: tuple[np.ndarray, ...]) -> np.ndarray:
    """Room for :func:`_drain_lakes`' list of wet cells: the flood's heap keys (a cell
    each), which it does not use, seen as int64."""
    wet = scratch[2].view(np.int64)
    assert wet.size == scratch[0].size
    return wet


# ---------------------------------------------------------------------------- kernels

@njit(cache=True, error_model="numpy")
def _settle(r, c, amount, height, bedrock, sediment, deposited, pool):
    """Lay sediment down at (r, c); in a pool it displaces water (the surface stays)."""
    if amount > 0.0:
        put(r, c, amount, height, bedrock, sediment, deposited)
        pool[r, c] = max(pool[r, c] - amount, 0.0)


@njit(nogil=True, cache=True, error_model="numpy")
def mark_ocean(sea_level, height, pool, ocean, stack):
    """Mark cells below ``sea_level`` connected (8-neighbour) to a map edge as ocean and
    fill them to sea level in the pool map. Returns the number of ocean cells."""
    rows, cols = height.shape
    ocean[:, :] = 0
    top = 0
    for r in range(rows):
        for c in range(cols):
            if (r == 0 or c == 0 or r == rows - 1 or c == cols - 1) and \
                    height[r, c] < sea_level:
                ocean[r, c] = 1
                stack[top] = r * cols + c
                top += 1
    count = 0
    while top > 0:
        top -= 1
        i = stack[top]
        r = i // cols
        c = i - r * cols
        pool[r, c] = sea_level - height[r, c]
        count += 1
        for dr in range(-1, 2):
            for dc in range(-1, 2):
                nr = r + dr
                nc = c + dc
                if 0 <= nr < rows and 0 <= nc < cols and ocean[nr, nc] == 0 and \
                        height[nr, nc] < sea_level:
                    ocean[nr, nc] = 1
                    stack[top] = nr * cols + nc
                    top += 1
    return count


@njit(cache=True, error_model="numpy")
def _next_gen(stamp, gen):
    """A new stamp value: every cell counts as unvisited again, in O(1)."""
    g = gen[0] + 1
    if g >= 2147483647:  # stamps are int32: start over once in 2**31 fills
        stamp[:] = 0
        g = 1
    gen[0] = g
    return g


@njit(cache=True, error_model="numpy")
def _basin(start, water, open_edges, hf, pf, oceanf, rows, cols, scratch):
    """Pour ``water`` (cell³) at flat cell ``start``: grow the water body from there in
    order of surface height (ground + pool, a priority flood), raising the level over
    the cells taken so far, until the water is used up or the level reaches a spill
    point: a cell lower than the level (lower ground, a lower lake), the sea, or with
    ``open_edges`` a map-edge cell. Cells at or under the level join through a plain
    stack (no heap cost: a lake's surface costs one visit a cell). Writes nothing but
    the scratch; the taken cells (all those under the final level, connected to
    ``start``) are ``scratch[4][:n]``.

    Returns (n, final level, water left, drain cell or -1, drain surface, whether the
    drain was reached from a wet cell (the lake stands above its outlet), cells
    visited). With a drain the level is the spill level and the water left overflows
    there; the drain's surface is below the level unless it is an edge cell."""
    stamp, gen, keys, cells, members = scratch
    g = _next_gen(stamp, gen)
    level = hf[start] + pf[start]
    tol = LEVEL_TOL * max(1.0, abs(level))
    stamp[start] = g
    # members[n:] doubles as the plain stack (it grows down from the end)
    size = members.size
    low = size - 1
    members[low] = start
    top = np.int64(0)  # heap size (not a literal 0: one signature of heap_pop)
    n = 0
    while True:
        if low < size:
            i = members[low]
            low += 1
        elif top > 0:
            s, i, top = heap_pop(keys, cells, top)
            if s > level:
                need = (s - level) * n
                if need >= water:
                    return n, level + water / n, 0.0, -1, 0.0, False, n + top
                water -= need
                level = s
                tol = LEVEL_TOL * max(1.0, abs(level))
        else:  # the whole connected map is under water: spread the rest evenly
            return n, level + water / n, 0.0, -1, 0.0, False, n
        members[n] = i
        n += 1
        r = i // cols
        c = i - r * cols
        if open_edges and (r == 0 or c == 0 or r == rows - 1 or c == cols - 1):
            return n, level, water, i, level, False, n + top  # the water leaves the map
        for nr in range(max(r - 1, 0), min(r + 2, rows)):
            for nc in range(max(c - 1, 0), min(c + 2, cols)):
                j = nr * cols + nc
                if stamp[j] == g:
                    continue
                stamp[j] = g
                sj = hf[j] + pf[j]
                if oceanf[j] != 0 or sj < level - tol:  # lower ground beyond the rim
                    return n, level, water, j, sj, pf[i] > 0.0, n + top
                if sj <= level + tol:
                    water -= max(level - sj, 0.0)  # its water up to the level, however little
                    low -= 1
                    members[low] = j
                else:
                    top = heap_push(keys, cells, top, sj, j)


@njit(cache=True, error_model="numpy")
def _lake_at(start, level, hf, pf, rows, cols, scratch):
    """The connected cells (8-neighbour) from ``start`` whose surface is within rounding
    of ``level``: the lake's surface. Into ``scratch[4]``; returns the count."""
    stamp, gen, _, cells, members = scratch
    tol = LEVEL_TOL * max(1.0, abs(level))
    g = _next_gen(stamp, gen)
    stamp[start] = g
    cells[0] = start
    top = 1
    n = 0
    while top > 0:
        top -= 1
        i = cells[top]
        if abs(hf[i] + pf[i] - level) > tol:
            continue
        members[n] = i
        n += 1
        r = i // cols
        c = i - r * cols
        for nr in range(max(r - 1, 0), min(r + 2, rows)):
            for nc in range(max(c - 1, 0), min(c + 2, cols)):
                j = nr * cols + nc
                if stamp[j] != g:
                    stamp[j] = g
                    cells[top] = j
                    top += 1
    return n


@njit(cache=True, error_model="numpy")
def _bottom(i, open_edges, hf, pf, oceanf, rows, cols):
    """From dry flat cell ``i`` follow the steepest way down (8 neighbours, ground +
    pool) to where water gathers: a cell with no lower neighbour, a pool, the sea, or
    with ``open_edges`` the map edge. Returns (that cell, cells walked)."""
    walked = 0
    while pf[i] <= 0.0 and oceanf[i] == 0:
        r = i // cols
        c = i - r * cols
        if open_edges and (r == 0 or c == 0 or r == rows - 1 or c == cols - 1):
            break
        here = hf[i]
        low = here - LEVEL_TOL * max(1.0, abs(here))
        best = i
        for nr in range(max(r - 1, 0), min(r + 2, rows)):
            for nc in range(max(c - 1, 0), min(c + 2, cols)):
                j = nr * cols + nc
                s = hf[j] + pf[j]
                if s < low:
                    low = s
                    best = j
        if best == i:
            break
        i = best
        walked += 1
    return i, walked


@njit(nogil=True, cache=True, error_model="numpy")
def _drain_lakes(open_edges, height, pool, ocean, scratch, wet, max_passes=16):
    """Lower every lake that stands above an outlet (a neighbour with a lower surface,
    or with ``open_edges`` a wet map-edge cell) to the outlet's surface, until none
    does (or ``max_passes`` passes). Erosion of a rim, a lower lake reached: the water
    above the outlet runs out. Ocean cells are left alone. ``wet`` is room (int64, at
    least a cell each; its contents ignored) where the wet cells are listed. Pools are
    finite (Terrain.validate). Returns the lakes lowered."""
    rows, cols = height.shape
    hf = height.reshape(rows * cols)
    pf = pool.reshape(rows * cols)
    of = ocean.reshape(rows * cols)
    members = scratch[4]
    lowered = 0
    # the passes visit the cells wet now, in order: lowering a lake only ever dries
    # cells, so they see what passes over the whole grid would see
    n_wet = 0
    for i in range(rows * cols):
        if pf[i] > 0.0 and of[i] == 0:
            wet[n_wet] = i
            n_wet += 1
    for _ in range(max_passes):
        changed = 0
        for w in range(n_wet):
            i = wet[w]
            if pf[i] <= 0.0:
                continue
            level = hf[i] + pf[i]
            r = i // cols
            c = i - r * cols
            outlet = level
            if open_edges and (r == 0 or c == 0 or r == rows - 1 or c == cols - 1):
                outlet = hf[i]
            for nr in range(max(r - 1, 0), min(r + 2, rows)):
                for nc in range(max(c - 1, 0), min(c + 2, cols)):
                    j = nr * cols + nc
                    outlet = min(outlet, hf[j] + pf[j])
            if outlet < level - LEVEL_TOL * max(1.0, abs(level)):
                n = _lake_at(i, level, hf, pf, rows, cols, scratch)
                for m in range(n):
                    k = members[m]
                    pf[k] = max(outlet - hf[k], 0.0)
                changed += 1
        lowered += changed
        if changed == 0:
            break
    return lowered


@njit(cache=True, error_model="numpy")
def _settle_over(r0, c0, amount, members, n, height, bedrock, sediment, deposited, pool):
    """Lay ``amount`` of sediment evenly on the wet cells among ``members[:n]`` (the
    lake the water went into: fines settle over its bed), never more than a cell's water
    depth, so the surface stays flat; what is left settles at (r0, c0) (a delta)."""
    rows, cols = height.shape
    wet = 0
    for j in range(n):
        i = members[j]
        if pool[i // cols, i % cols] > 0.0:
            wet += 1
    left = amount
    if wet > 1 and amount > 0.0:
        share = amount / wet
        for j in range(n):
            i = members[j]
            r = i // cols
            c = i - r * cols
            a = min(share, pool[r, c])
            if a > 0.0:
                _settle(r, c, a, height, bedrock, sediment, deposited, pool)
                left -= a
    _settle(r0, c0, max(left, 0.0), height, bedrock, sediment, deposited, pool)


@njit(cache=True, error_model="numpy")
def _flood(r0, c0, volume, sed, k, height, bedrock, sediment, deposited, pool, ocean,
           scratch):
    """Flood from cell (r0, c0) with a particle of ``volume`` (fraction of its water)
    carrying concentration ``sed``. Returns (outcome, volume left, concentration, drain
    row, drain col, cells visited).

    The water fills the basin up to the level it holds, or up to the basin's spill
    level and overflows at the drain (``_basin``). A lake already at or above its drain
    (the outlet eroded, a lower lake reached) is lowered by ``drainage`` of the height
    difference, as in the article, and the particle leaves by the drain."""
    rows, cols = height.shape
    hf = height.reshape(rows * cols)
    pf = pool.reshape(rows * cols)
    of = ocean.reshape(rows * cols)
    start, walked = _bottom(r0 * cols + c0, k.open_edges, hf, pf, of, rows, cols)
    r0 = start // cols
    c0 = start - r0 * cols
    if ocean[r0, c0] != 0:
        _settle(r0, c0, volume * sed, height, bedrock, sediment, deposited, pool)
        return _SEA, volume, 0.0, r0, c0, walked
    level0 = hf[start] + pf[start]
    n, level, left, drain, dsurf, above, visited = _basin(
        start, volume * k.water, k.open_edges, hf, pf, of, rows, cols, scratch)
    visited += walked
    members = scratch[4]
    if level > level0:  # water went in: every taken cell stands at the new level
        for j in range(n):
            i = members[j]
            pf[i] = max(level - hf[i], pf[i])
    elif drain >= 0 and above and dsurf < level0:  # over its outlet: the lake sinks
        n = _lake_at(start, level0, hf, pf, rows, cols, scratch)
        visited += n
        new_level = level0 - k.drainage * (level0 - dsurf)
        for j in range(n):
            i = members[j]
            pf[i] = max(new_level - hf[i], 0.0)
    rest = min(left / k.water, volume)  # particle volume that overflows
    settle = (volume - rest) * sed  # the load of the water that stays settles here
    if drain < 0 or rest <= k.min_volume:
        _settle_over(r0, c0, settle + rest * sed, members, n, height, bedrock, sediment,
                     deposited, pool)
        return _DONE, 0.0, 0.0, r0, c0, visited
    dr = drain // cols
    dc = drain - dr * cols
    settle += (1.0 - k.drain_sediment) * rest * sed
    sed *= k.drain_sediment
    _settle_over(r0, c0, settle, members, n, height, bedrock, sediment, deposited, pool)
    if ocean[dr, dc] != 0:  # into the sea: the particle is gone, its load settles there
        _settle(dr, dc, rest * sed, height, bedrock, sediment, deposited, pool)
        return _SEA, rest, 0.0, dr, dc, visited
    if k.open_edges and (dr == 0 or dc == 0 or dr == rows - 1 or dc == cols - 1):
        return _EDGE, rest, sed, dr, dc, visited  # off the map, with its load
    return _DRAINED, rest, sed, dr, dc, visited


@njit(cache=True, error_model="numpy")
def _is_pit(j, hf, pf, rows, cols):
    """No 8-neighbour of flat cell ``j`` has a lower surface (ground + pool)."""
    r = j // cols
    c = j - r * cols
    here = hf[j] + pf[j]
    for nr in range(max(r - 1, 0), min(r + 2, rows)):
        for nc in range(max(c - 1, 0), min(c + 2, cols)):
            i = nr * cols + nc
            if hf[i] + pf[i] < here:
                return False
    return True


@njit(cache=True, error_model="numpy")
def _descend(x, y, vx, vy, volume, sed, k, rows, cols, flat, tf):
    """Roll a particle until it leaves the map, evaporates or must flood.
    Returns (outcome, x, y, vx, vy, volume, sed, steps).

    ``flat`` holds 1-d views of the grids (see ``_flat``), ``tf`` of the track mask.
    Each step depends on the one before, so this is written for the latency of a step:
    unsigned flat indices (numba adds no negative-index wraparound), interior gradients
    multiply by 0.5 instead of dividing by 2 (exact), and erosion/deposition go through
    the branch-free ``kernels.exchange``."""
    dt = k.dt
    hf, bf, sedf, ef, df, erf, pf, strf, vgf = flat
    steps = 0
    ucols = np.uint64(cols)
    while volume > k.min_volume and steps < k.max_steps:
        r = int(y)
        c = int(x)
        i = np.uint64(r * cols + c)
        tf[i] = 1
        # central differences inside, one-sided at the edges; x / 2 == x * 0.5 exactly
        if c > 0 and c < cols - 1:
            il = i - _U1
            ir = i + _U1
            fx = 0.5
        else:
            c0 = max(c - 1, 0)
            c1 = min(c + 1, cols - 1)
            il = np.uint64(r * cols + c0)
            ir = np.uint64(r * cols + c1)
            fx = 1.0 / (c1 - c0)
        if r > 0 and r < rows - 1:
            iu = i - ucols
            idn = i + ucols
            fy = 0.5
        else:
            r0 = max(r - 1, 0)
            r1 = min(r + 1, rows - 1)
            iu = np.uint64(r0 * cols + c)
            idn = np.uint64(r1 * cols + c)
            fy = 1.0 / (r1 - r0)
        gx = ((hf[ir] + pf[ir]) - (hf[il] + pf[il])) * fx
        gy = ((hf[idn] + pf[idn]) - (hf[iu] + pf[iu])) * fy
        scale = 1.0 / (np.sqrt(1.0 + gx * gx + gy * gy) * volume * k.density)
        ax = -gx * scale
        ay = -gy * scale
        here = strf[i]
        eff_d = k.deposition * max(0.0, 1.0 - vgf[i])
        eff_f = k.friction * (1.0 - STREAM_FRICTION_CUT * here)
        eff_r = k.evaporation * (1.0 - STREAM_EVAPORATION_CUT * here)
        vx += dt * ax
        vy += dt * ay
        x += dt * vx
        y += dt * vy
        slow = max(0.0, 1.0 - dt * eff_f)
        vx *= slow
        vy *= slow
        steps += 1
        if not (x >= 0.0 and y >= 0.0 and x < cols and y < rows):
            return _OUT, x, y, vx, vy, volume, sed, steps
        j = np.uint64(int(y) * cols + int(x))
        if strf[j] > STREAM_STOP and np.sqrt(ax * ax + ay * ay) < ACC_STOP:
            return _FLOOD, x, y, vx, vy, volume, sed, steps
        if pf[j] > 0.0:
            return _FLOOD, x, y, vx, vy, volume, sed, steps
        if vx * vx + vy * vy < SLOW_STOP * SLOW_STOP and _is_pit(j, hf, pf, rows, cols):
            return _FLOOD, x, y, vx, vy, volume, sed, steps  # trapped: water gathers here
        if pf[i] <= 0.0:  # water standing in a pool exchanges nothing
            speed = np.sqrt(vx * vx + vy * vy)
            drop = hf[i] - hf[j]
            # equilibrium load per unit of particle volume: a concentration (sediment
            # per water, world volumes) times the water in one unit of volume
            c_eq = max(0.0, k.load * volume * speed * drop)
            # a rate above 1 would overshoot the equilibrium (negative load)
            change = min(dt * eff_d, 1.0) * (c_eq - sed)
            mass = volume * change
            # branch-free (the sign of ``mass`` is unpredictable): at most one of dig /
            # lay is non-zero; never dig a cell below the next one on the path
            dig = max(min(mass, max(DIG_LIMIT * drop, 0.0)), 0.0)
            lay = max(-mass, 0.0)
            removed = exchange(i, dig, lay, hf, bf, sedf, ef, df, erf)
            sed += removed / volume + (change if mass < 0.0 else 0.0)
        keep = 1.0 - dt * eff_r
        sed /= keep
        volume *= keep
    return _EVAPORATED, x, y, vx, vy, volume, sed, steps


@njit(cache=True, error_model="numpy")
def _particle(x, y, volume, sed, flood_first, k, height, bedrock, sediment, deposited, pool,
              ocean, scratch, stats, flat, flat_track):
    """Cycle one particle through descend and flood (at most ``spill`` times). Returns
    (sediment carried off the map, particle volume that left the map or reached the
    sea). ``stats`` (accumulated, see ``STATS``)."""
    vx = 0.0
    vy = 0.0
    rows, cols = height.shape
    for _ in range(k.spill):
        if not flood_first:
            outcome, x, y, vx, vy, volume, sed, steps = _descend(
                x, y, vx, vy, volume, sed, k, rows, cols, flat, flat_track)
            stats[0] += steps
            r = min(max(int(y), 0), rows - 1)
            c = min(max(int(x), 0), cols - 1)
            if outcome == _OUT:
                return volume * sed, volume
            if outcome == _EVAPORATED:
                _settle(r, c, volume * sed, height, bedrock, sediment, deposited, pool)
                return 0.0, 0.0
        flood_first = False
        outcome, volume, sed, dr, dc, visited = _flood(
            int(y), int(x), volume, sed, k, height, bedrock, sediment, deposited, pool,
            ocean, scratch)
        stats[1] += 1
        stats[2] += visited
        stats[3 + outcome] += 1
        if outcome == _SEA:
            return 0.0, volume
        if outcome == _EDGE:
            return volume * sed, volume
        if outcome == _DONE:
            return 0.0, 0.0
        x = dc + 0.5
        y = dr + 0.5
    # out of spills: what is left settles where the particle stands
    _settle(int(y), int(x), volume * sed, height, bedrock, sediment, deposited, pool)
    return 0.0, 0.0


@njit(cache=True)
def _flat(height, bedrock, sediment, eroded, deposited, erodibility, pool, stream,
          vegetation):
    """1-d views of the grids, in the order ``_descend`` unpacks them."""
    n = height.size
    return (height.reshape(n), bedrock.reshape(n), sediment.reshape(n), eroded.reshape(n),
            deposited.reshape(n), erodibility.reshape(n), pool.reshape(n), stream.reshape(n),
            vegetation.reshape(n))


@njit(nogil=True, cache=True, error_model="numpy")
def _run_batch(seed, first, count, k, cdf, height, bedrock, sediment, eroded, deposited,
               erodibility, pool, stream, vegetation, track, ocean, scratch, stats):
    rows, cols = height.shape
    flat = _flat(height, bedrock, sediment, eroded, deposited, erodibility, pool, stream,
                 vegetation)
    flat_track = track.reshape(rows * cols)
    lost = 0.0
    for p in range(count):
        st = stream_state(np.uint64(seed), np.uint64(STREAM_ID), np.uint64(first + p))
        st, x, y = start_position(st, cdf, rows, cols)
        out, _ = _particle(x, y, 1.0, 0.0, False, k, height, bedrock, sediment, deposited,
                           pool, ocean, scratch, stats, flat, flat_track)
        lost += out
    return lost


@njit(nogil=True, cache=True, error_model="numpy")
def _adapt_stream(stream, track, rate):
    """``stream = clip((1 - rate) * stream + rate * track, 0, 1)`` in one pass (the same
    operations as the numpy form, without its temporaries and slow clip)."""
    rows, cols = stream.shape
    decay = 1.0 - rate
    for r in range(rows):
        for c in range(cols):
            v = stream[r, c] * decay + rate * track[r, c]
            if v < 0.0:
                v = 0.0
            elif v > 1.0:
                v = 1.0
            stream[r, c] = v


# ---------------------------------------------------------------------------- Python API

def _prepare(terrain: Terrain, params: HydrologyParams, height: np.ndarray):
    """Scratch arrays and the ocean mask (filled to sea level when the sea is on)."""
    scratch = _scratch(terrain)
    ocean = np.zeros(terrain.shape, dtype=np.uint8)
    if params.sea:
        mark_ocean(params.sea_cells(terrain.cell_size), height, terrain.pool, ocean,
                   scratch[3])
    return ocean, scratch


def run_batch(terrain: Terrain, params: HydrologyParams, seed: int, first: int, count: int,
              height: np.ndarray | None = None, cdf: np.ndarray | None = None,
              stats: np.ndarray | None = None) -> int:
    """Run particles ``first .. first+count-1`` in place, then update the stream map.

    ``height`` (bedrock + sediment) is kept in step when given. ``stats`` (floats,
    accumulated, named in ``STATS``) counts the work. Returns the number of descend
    steps."""
    if height is None:
        height = terrain.height()
    if cdf is None:
        cdf = rain_cdf(terrain.rain)
    own = np.zeros(len(STATS)) if stats is None else stats
    before = own[0]
    ocean, scratch = _prepare(terrain, params, height)
    track = np.zeros(terrain.shape, dtype=np.uint8)
    lost = _run_batch(np.uint64(seed & 0xFFFFFFFFFFFFFFFF), first, count,
                      params.kernel(terrain.cell_size), cdf, height, terrain.bedrock,
                      terrain.sediment, terrain.eroded, terrain.deposited,
                      terrain.erodibility, terrain.pool, terrain.stream, terrain.vegetation,
                      track, ocean, scratch, own)
    terrain.outflow += lost
    _drain_lakes(params.open_edges, height, terrain.pool, ocean, scratch, _wet_list(scratch))
    _adapt_stream(terrain.stream, track, params.stream_rate)
    return int(own[0] - before)


def level_lakes(terrain: Terrain, params: HydrologyParams,
                height: np.ndarray | None = None) -> int:
    """Lower every lake that stands above an outlet, after another process moved the
    ground under or around it (creep lowering a rim); the sea is refilled to sea level.
    Keeps "no pool above its spill level" true at the end of every round. Returns the
    lakes lowered."""
    if height is None:
        height = terrain.height()
    ocean, scratch = _prepare(terrain, params, height)
    return int(_drain_lakes(params.open_edges, height, terrain.pool, ocean, scratch,
                            _wet_list(scratch)))


def pour(terrain: Terrain, params: HydrologyParams, row: int, col: int, volume: float,
         height: np.ndarray | None = None) -> float:
    """Pour ``volume`` m³ of clean water into cell (row, col) as one particle: it floods
    there first, then descends from any drain as a normal particle would. The track of
    its descents is not added to the stream map. Returns the water (m³) that left the
    map or reached the sea (the rest is in pools, evaporated, or dropped below
    ``min_volume``)."""
    if height is None:
        height = terrain.height()
    rows, cols = terrain.shape
    if not (0 <= row < rows and 0 <= col < cols):
        raise ValueError(f"cell ({row}, {col}) is outside the {rows}x{cols} grid")
    if not volume >= 0:
        raise ValueError(f"volume must be >= 0, got {volume!r}")
    k = params.kernel(terrain.cell_size)
    m3 = k.water * terrain.cell_size ** 3  # m³ of one unit of particle volume
    ocean, scratch = _prepare(terrain, params, height)
    track = np.zeros(terrain.shape, dtype=np.uint8)
    out, gone = _particle(col + 0.5, row + 0.5, float(volume) / m3, 0.0, True, k, height,
                          terrain.bedrock, terrain.sediment, terrain.deposited, terrain.pool,
                          ocean, scratch, np.zeros(len(STATS)),
                          _flat(height, terrain.bedrock, terrain.sediment, terrain.eroded,
                                terrain.deposited, terrain.erodibility, terrain.pool,
                                terrain.stream, terrain.vegetation),
                          track.reshape(track.size))
    terrain.outflow += out
    return float(gone * m3)


def pool_volume(terrain: Terrain, params: HydrologyParams | None = None) -> float:
    """Water standing in pools, m³ (depth x cell area, in world units)."""
    return float(terrain.pool.sum() * terrain.cell_size ** 3)


def lakes(terrain: Terrain, min_cells: int = 1) -> list[int]:
    """Sizes (cells) of the separate pools (8-connected wet cells), largest first; only
    those of at least ``min_cells``."""
    wet = terrain.pool > 0.0
    return sorted((int(s) for s in components.sizes(wet) if s >= min_cells), reverse=True)


PROCESS = Process(
    "hydrology", HydrologyParams, run_batch, "Rivers and lakes",
    "water particles cut streams and fill pools (N. McDonald's article)", order=40,
    stream=STREAM_ID,
    reads=("bedrock", "sediment", "erodibility", "rain", "stream", "pool", "vegetation"),
    writes=("bedrock", "sediment", "eroded", "deposited", "stream", "pool"),
    fields=(Field("stream", "fraction", "time-averaged presence of flowing water", lo=0.0,
                  hi=1.0, color="te_streams", exact="te_stream", refine="map"),
            Field("pool", "depth", "depth of standing water", lo=0.0, color="te_pools",
                  exact="te_pool_depth", refine="level")),
    relevel=level_lakes, moves_water=True, bytes_per_cell=32, reach="map", levels="coarse",
    # a particle runs until it leaves the map or settles: its path follows the side
    work=lambda p, shape: max(shape), seconds_per_unit=8.4e-8)
