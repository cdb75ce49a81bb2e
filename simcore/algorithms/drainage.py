"""The drainage core: where water goes on the grid, with closed depressions routed.

One call, :func:`route`, gives for a height grid

* ``level``: the surface water would rest at if every closed depression were filled to
  its spill point (priority-flood, Barnes et al. 2014); ``level - height`` is the depth
  of the lake that would stand there, 0 outside depressions;
* ``receiver``: single-flow (D8) receivers: each cell drains to its steepest lower
  neighbour; a pit (no lower neighbour) drains over the spill point of its basin to
  the cell beyond it, found on the basin graph of Cordonnier et al. (2019), so every
  cell drains to an outlet and water crosses lakes; on land with pits everywhere
  (fresh noise) the receivers follow the filled surface instead (Priority-Flood+
  epsilon: ``level`` plus an infinitesimal gradient across lakes and flats); outlets
  (the grid's edges by default) drain to themselves;
* ``stack``: the cells ordered from the outlets upstream (Braun & Willett 2013): a
  cell comes after its receiver, so a pass in stack order meets receivers first and a
  pass in reverse order meets donors first;
* ``area``: drainage area in world units² (optionally weighted per cell, e.g. by rain).

Receivers, the stack, the basins and the areas are O(n); the passes between basins
are joined by Boruvka rounds (O(p log b) for p pass cells and b basins). The flood is
Priority-Flood with a plain queue for the cells inside depressions (Barnes et al. 2014):
O(n log n) in the worst case, used when more than one cell in MOST_PITS is a pit.
Everything is exact and either serial or per cell, so results never depend on the
thread count. Heights may be in any unit; distances are in cells unless a cell size is
given.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numba import njit

from ..kernels import parallel
from ..kernels.primitives import heap_pop, heap_push

_SQRT2 = math.sqrt(2.0)
#: route() resolves pits on the basin graph up to one pit per this many cells; on land
#: pitted more densely (fresh noise) one priority-flood is cheaper than the passes
MOST_PITS = 64
#: the 8 neighbours: row offset, column offset, distance in cells
_DR = np.array([-1, -1, -1, 0, 0, 1, 1, 1], dtype=np.int64)
_DC = np.array([-1, 0, 1, -1, 1, -1, 0, 1], dtype=np.int64)
_DIST = np.array([_SQRT2, 1.0, _SQRT2, 1.0, 1.0, _SQRT2, 1.0, _SQRT2])


@njit(cache=True, nogil=True)
def flood(height, outlet, level, routed, parent):
    """Priority-Flood+epsilon from the ``outlet`` cells (uint8, 1 = water leaves the
    grid here). Writes ``level`` (the depression-filled surface: the spill level inside
    closed depressions, the height elsewhere), ``routed`` (``level`` plus the smallest
    float steps that make every cell higher than the cell it was reached from) and
    ``parent`` (flat index of that cell; an outlet's own). 2-D float64 arrays of one
    shape, ``parent`` flat int64."""
    rows, cols = height.shape
    n = rows * cols
    h = height.reshape(-1)
    lv = level.reshape(-1)
    fe = routed.reshape(-1)
    out = outlet.reshape(-1)
    seen = np.zeros(n, dtype=np.uint8)
    keys = np.empty(n)
    cells = np.empty(n, dtype=np.int64)
    pit = np.empty(n, dtype=np.int64)
    size = np.int64(0)  # heap size (not a literal 0: one signature of heap_pop)
    for k in range(n):
        if out[k]:
            seen[k] = 1
            lv[k] = h[k]
            fe[k] = h[k]
            parent[k] = k
            size = heap_push(keys, cells, size, h[k], k)
    if size == 0:  # no outlet: the lowest cell is one (a closed grid drains somewhere)
        low = 0
        for k in range(1, n):
            if h[k] < h[low]:
                low = k
        seen[low] = 1
        lv[low] = h[low]
        fe[low] = h[low]
        parent[low] = low
        size = heap_push(keys, cells, size, h[low], low)
    head = 0
    tail = 0
    while size > 0 or head < tail:
        if head < tail:
            c = pit[head]
            head += 1
        else:
            _, c, size = heap_pop(keys, cells, size)
            head = 0
            tail = 0
        r0 = c // cols
        c0 = c - r0 * cols
        for d in range(8):
            r = r0 + _DR[d]
            q = c0 + _DC[d]
            if r < 0 or r >= rows or q < 0 or q >= cols:
                continue
            j = r * cols + q
            if seen[j]:
                continue
            seen[j] = 1
            parent[j] = c
            step = np.nextafter(fe[c], np.inf)
            if h[j] <= lv[c]:  # inside a depression or on a flat at c's level
                lv[j] = lv[c]
                fe[j] = step
                pit[tail] = j
                tail += 1
            else:  # higher ground: flooded in its own turn (fe above c's, for routing;
                # a cell only a float step above c is no depression: it keeps its level)
                lv[j] = h[j]
                fe[j] = max(h[j], step)
                size = heap_push(keys, cells, size, h[j], j)


def steepest_receivers(routed, outlet, receiver, distance):
    """D8 receivers: each non-outlet cell drains to the neighbour with the steepest
    descent of ``routed`` (drop / distance in cells); outlets drain to themselves.
    ``receiver`` (int64) and ``distance`` (cells) are flat arrays. Bands of rows run on
    the pooled threads (each cell on its own: the same result on any thread count)."""
    rows, cols = routed.shape
    parallel.run(parallel.bands(rows),
                 lambda band: _steepest_band(routed, outlet, receiver, distance,
                                             band[0] * cols, band[1] * cols))


@njit(cache=True, nogil=True)
def _steepest_band(routed, outlet, receiver, distance, lo, hi):
    """:func:`steepest_receivers` for the flat cells ``lo .. hi-1`` (whole rows): the
    inner cells of a row without bounds checks, the same neighbours in the same order."""
    rows, cols = routed.shape
    fe = routed.reshape(-1)
    out = outlet.reshape(-1)
    for r0 in range(lo // cols, hi // cols):
        for c0 in range(cols):
            k = r0 * cols + c0
            receiver[k] = k
            distance[k] = 1.0
            if out[k]:
                continue
            best = 0.0
            if 0 < r0 < rows - 1 and 0 < c0 < cols - 1:
                z = fe[k]
                for d in range(8):
                    j = k + _DR[d] * cols + _DC[d]
                    s = (z - fe[j]) / _DIST[d]
                    if s > best:
                        best = s
                        receiver[k] = j
                        distance[k] = _DIST[d]
                continue
            for d in range(8):
                r = r0 + _DR[d]
                q = c0 + _DC[d]
                if r < 0 or r >= rows or q < 0 or q >= cols:
                    continue
                j = r * cols + q
                s = (fe[k] - fe[j]) / _DIST[d]
                if s > best:
                    best = s
                    receiver[k] = j
                    distance[k] = _DIST[d]


@njit(cache=True, nogil=True)
def _keep_downhill(height, level, parent, receiver, distance):
    """Where the float steps of the flood's routed surface outweigh real height
    differences (heights a few float steps apart), a receiver can stand higher than
    its cell (in height outside lakes, or in level): such a cell drains to the cell
    that flooded it instead, a lower neighbour that was routed before it (so the
    receivers stay a tree)."""
    rows, cols = height.shape
    h = height.reshape(-1)
    lv = level.reshape(-1)
    for k in range(h.size):
        r = receiver[k]
        if r == k:
            continue
        if lv[r] > lv[k] or (h[r] > h[k] and lv[k] <= h[k]):
            p = parent[k]
            receiver[k] = p
            distance[k] = math.hypot(k // cols - p // cols, k % cols - p % cols)


@njit(cache=True, nogil=True)
def build_stack(receiver, stack):
    """Order the cells so every cell comes after its receiver (outlets first), by a
    depth-first walk up the donor tree (Braun & Willett 2013). O(n); the donor lists
    are 32-bit (half the memory traffic), so up to 2^31 cells."""
    n = receiver.size
    return stack_into(receiver, stack, np.empty(n + 1, dtype=np.int32),
                      np.empty(max(n, 1), dtype=np.int32), np.empty(n, dtype=np.int32))


@njit(cache=True, nogil=True)
def stack_into(receiver, stack, start, donors, todo):
    """:func:`build_stack` with its scratch given: ``start`` (n + 1), ``donors`` and
    ``todo`` (n), int32, any contents."""
    n = receiver.size
    # donors of r: donors[start[r-1] .. start[r]] once placed (start[-1] read as 0)
    start[:] = 0
    for k in range(n):
        r = receiver[k]
        if r != k:
            start[r + 1] += 1
    for k in range(n):
        start[k + 1] += start[k]
    for k in range(n):  # placing r's donors walks start[r] to the start of r+1's
        r = receiver[k]
        if r != k:
            donors[start[r]] = k
            start[r] += 1
    m = 0
    for k in range(n):
        if receiver[k] != k:
            continue
        todo[0] = k
        top = 1
        while top > 0:
            top -= 1
            c = todo[top]
            stack[m] = c
            m += 1
            for t in range(start[c - 1] if c > 0 else 0, start[c]):
                todo[top] = donors[t]
                top += 1
    return m


@njit(cache=True, nogil=True)
def accumulate(stack, receiver, weight, total):
    """``total`` = ``weight`` summed over every cell upstream of each cell (itself
    included), by one pass over the stack from the sources down."""
    total[:] = weight
    for t in range(stack.size - 1, -1, -1):
        k = stack[t]
        r = receiver[k]
        if r != k:
            total[r] += total[k]


@njit(cache=True, nogil=True)
def _find(parent, a):
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


@njit(cache=True, nogil=True)
def _passes(cells, basin, h, rows, cols, ea, eb, ez, write):
    """The passes from ``cells`` to neighbours of another basin: their number, and with
    ``write`` the cells on both sides and the pass height (the higher of the two)."""
    m = 0
    for k in cells:
        r0 = k // cols
        c0 = k - r0 * cols
        for d in range(8):
            r = r0 + _DR[d]
            q = c0 + _DC[d]
            if r < 0 or r >= rows or q < 0 or q >= cols:
                continue
            j = r * cols + q
            if basin[j] != basin[k]:
                if write:
                    ea[m] = k
                    eb[m] = j
                    ez[m] = max(h[k], h[j])
                m += 1
    return m


@njit(cache=True, nogil=True)
def resolve_pits(height, outlet, receiver, distance, stack, level, most_pits):
    """Route the closed depressions of a D8 receiver graph over their spill points, the
    basin graph of Cordonnier et al. (2019): every basin draining to a pit is joined to
    its neighbours at their lowest pass, the minimum spanning tree from the outlets
    (Boruvka) gives each pit the pass it spills over, the pit drains to the cell beyond
    it, and ``level`` is each basin's lake surface (the highest pass on its way out),
    the priority-flood fill. ``receiver``, ``distance`` (cells) and ``stack`` are
    updated in place. O(n) plus Boruvka rounds over the passes; returns -1 without
    changing anything when there are more than ``most_pits`` pits (the caller floods
    instead), else the number of pits."""
    rows, cols = height.shape
    n = rows * cols
    h = height.reshape(-1)
    out = outlet.reshape(-1)
    lv = level.reshape(-1)
    pits = 0
    for k in range(n):
        if receiver[k] == k and not out[k]:
            pits += 1
    if pits > most_pits:
        return -1
    for k in range(n):
        lv[k] = h[k]
    if pits == 0:
        return 0
    # basin of every cell: 0 = drains to an outlet, 1..pits = drains to that pit
    basin = np.empty(n, dtype=np.int64)
    pit_cell = np.empty(pits + 1, dtype=np.int64)
    pit_cell[0] = -1
    inside = np.empty(n, dtype=np.int64)  # the cells of the pits' basins
    m_in = 0
    b = 0
    for t in range(n):
        k = stack[t]
        r = receiver[k]
        if r == k:
            if out[k]:
                basin[k] = 0
            else:
                b += 1
                basin[k] = b
                pit_cell[b] = k
        else:
            basin[k] = basin[r]
        if basin[k] > 0:
            inside[m_in] = k
            m_in += 1
    # passes from the pits' basins to their neighbours (a pass between two pit basins
    # is listed from both sides; Boruvka does not mind)
    count = _passes(inside[:m_in], basin, h, rows, cols, inside[:0], inside[:0],
                    h[:0], False)
    ea = np.empty(count, dtype=np.int64)
    eb = np.empty(count, dtype=np.int64)
    ez = np.empty(count)
    m = _passes(inside[:m_in], basin, h, rows, cols, ea, eb, ez, True)
    # minimum spanning tree of the basins (Boruvka: each round every component takes
    # its lowest pass out, ties to the first listed; no sort of the passes)
    parent = np.arange(pits + 1)
    tree_a = np.empty(pits, dtype=np.int64)
    tree_b = np.empty(pits, dtype=np.int64)
    tree_z = np.empty(pits)
    best = np.empty(pits + 1, dtype=np.int64)
    used = 0
    while used < pits and m > 0:
        best[:] = -1
        w = 0
        for e in range(m):
            ca = _find(parent, basin[ea[e]])
            cb = _find(parent, basin[eb[e]])
            if ca == cb:
                continue
            ea[w] = ea[e]
            eb[w] = eb[e]
            ez[w] = ez[e]
            if best[ca] < 0 or ez[w] < ez[best[ca]]:
                best[ca] = w
            if best[cb] < 0 or ez[w] < ez[best[cb]]:
                best[cb] = w
            w += 1
        m = w
        for c in range(pits + 1):
            e = best[c]
            if e < 0:
                continue
            ca = _find(parent, basin[ea[e]])
            cb = _find(parent, basin[eb[e]])
            if ca == cb:
                continue
            parent[ca] = cb
            tree_a[used] = ea[e]
            tree_b[used] = eb[e]
            tree_z[used] = ez[e]
            used += 1
    # orient the tree from the outlets (basin 0): each pit basin learns its way out
    deg = np.zeros(pits + 2, dtype=np.int64)
    for e in range(used):
        deg[basin[tree_a[e]] + 1] += 1
        deg[basin[tree_b[e]] + 1] += 1
    for i in range(pits + 1):
        deg[i + 1] += deg[i]
    fill = deg[:pits + 1].copy()
    adj = np.empty(2 * used, dtype=np.int64)
    for e in range(used):
        adj[fill[basin[tree_a[e]]]] = e
        fill[basin[tree_a[e]]] += 1
        adj[fill[basin[tree_b[e]]]] = e
        fill[basin[tree_b[e]]] += 1
    lake = np.full(pits + 1, -np.inf)
    seen = np.zeros(pits + 1, dtype=np.uint8)
    todo = np.empty(pits + 1, dtype=np.int64)
    todo[0] = 0
    seen[0] = 1
    head = 0
    tail = 1
    while head < tail:
        p = todo[head]
        head += 1
        for t in range(deg[p], deg[p + 1]):
            e = adj[t]
            a = tree_a[e]
            c = tree_b[e]
            if basin[a] == p:  # a on the parent's side: the child is c's basin
                a, c = c, a
            child = basin[a]
            if seen[child]:
                continue
            seen[child] = 1
            lake[child] = max(tree_z[e], lake[p])
            pit = pit_cell[child]
            receiver[pit] = c  # the pit drains over the pass into the parent basin
            pr = pit // cols
            cr = c // cols
            distance[pit] = math.hypot(pr - cr, (pit - pr * cols) - (c - cr * cols))
            todo[tail] = child
            tail += 1
    for k in range(n):
        if lv[k] < lake[basin[k]]:
            lv[k] = lake[basin[k]]
    build_stack(receiver, stack)
    return pits


def edge_outlets(shape: tuple[int, ...]) -> np.ndarray:
    """The four edges of the grid as outlets (uint8 grid, 1 = outlet)."""
    outlet = np.zeros(shape, dtype=np.uint8)
    outlet[0, :] = outlet[-1, :] = 1
    outlet[:, 0] = outlet[:, -1] = 1
    return outlet


@dataclasses.dataclass
class Drainage:
    """Where water goes on one height grid (see the module's docstring)."""

    level: np.ndarray  # (rows, cols) depression-filled surface, the heights' unit
    receiver: np.ndarray  # (n,) int64 flat index of each cell's receiver
    distance: np.ndarray  # (n,) world distance to the receiver
    stack: np.ndarray  # (n,) int64 cells from the outlets upstream
    area: np.ndarray  # (rows, cols) drainage area, world units² (x weight)
    height: np.ndarray  # (rows, cols) the heights routed over

    @property
    def lake_depth(self) -> np.ndarray:
        """Depth of water in each closed depression filled to its spill level."""
        return self.level - self.height


def route(height: np.ndarray, cell_size: float = 1.0, *, outlet: np.ndarray | None = None,
          weight: np.ndarray | None = None, work: dict | None = None) -> Drainage:
    """Route water over ``height`` (2-D, float64) to the ``outlet`` cells (the edges by
    default); ``weight`` (per cell, default 1) scales each cell's contribution to the
    drainage area (e.g. a rain map). ``work``, a dict kept by the caller across calls
    on one grid, lends the arrays (the result's included: valid until the next call
    with it), so repeated routing does not map fresh memory each time."""
    height = np.ascontiguousarray(height, dtype=np.float64)
    shape = height.shape
    outlet = edge_outlets(shape) if outlet is None else np.ascontiguousarray(
        outlet, dtype=np.uint8)
    n = height.size
    work = {} if work is None else work
    level = buffer(work, "level", shape)
    receiver = buffer(work, "receiver", n, np.int64)
    distance = buffer(work, "distance", n)
    stack = buffer(work, "stack", n, np.int64)
    steepest_receivers(height, outlet, receiver, distance)
    stack_into(receiver, stack, buffer(work, "start", n + 1, np.int32),
               buffer(work, "donors", max(n, 1), np.int32), buffer(work, "todo", n, np.int32))
    if resolve_pits(height, outlet, receiver, distance, stack, level,
                    n // MOST_PITS) < 0:  # pitted everywhere: flood is faster
        routed = np.empty(shape)
        parent = np.empty(n, dtype=np.int64)
        flood(height, outlet, level, routed, parent)
        steepest_receivers(routed, outlet, receiver, distance)
        _keep_downhill(height, level, parent, receiver, distance)
        build_stack(receiver, stack)
    cell_area = cell_size * cell_size
    w = buffer(work, "weight", n)
    if weight is None:
        w[:] = cell_area
    else:
        np.multiply(np.ascontiguousarray(weight, dtype=np.float64).reshape(-1), cell_area,
                    out=w)
    area = buffer(work, "area", n)
    accumulate(stack, receiver, w, area)
    distance *= cell_size
    return Drainage(level, receiver, distance, stack, area.reshape(shape), height)


def buffer(work: dict, name: str, shape: int | tuple[int, ...], dtype: type = np.float64
           ) -> np.ndarray:
    """The array ``work[name]`` when it has this shape and type, else a new one kept
    there (contents undefined)."""
    want = (shape,) if isinstance(shape, int) else tuple(shape)
    kept = work.get(name)
    if kept is None or kept.shape != want or kept.dtype != dtype:
        kept = work[name] = np.empty(want, dtype=dtype)
    return kept


def depression_depth(height: np.ndarray, outlet: np.ndarray | None = None) -> np.ndarray:
    """Depth of every closed depression filled to its spill level (0 elsewhere)."""
    height = np.ascontiguousarray(height, dtype=np.float64)
    outlet = edge_outlets(height.shape) if outlet is None else np.ascontiguousarray(
        outlet, dtype=np.uint8)
    level = np.empty(height.shape)
    routed = np.empty(height.shape)
    flood(height, outlet, level, routed, np.empty(height.size, dtype=np.int64))
    return level - height
