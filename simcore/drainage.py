"""The drainage core: where water goes on the grid, with closed depressions routed.

One call, :func:`route`, gives for a height grid

* ``level``: the surface water would rest at if every closed depression were filled to
  its spill point (priority-flood, Barnes et al. 2014); ``level - height`` is the depth
  of the lake that would stand there, 0 outside depressions;
* ``receiver``: single-flow (D8) receivers: each cell drains to its steepest lower
  neighbour on the filled surface (``level`` plus an infinitesimal gradient across
  lakes and flats, Priority-Flood+epsilon), so every cell drains to an outlet and
  water crosses a lake over its spill point, like the basin graph of Cordonnier et al.
  (2019) resolves it; outlets (the grid's edges by default) drain to themselves;
* ``stack``: the cells ordered from the outlets upstream (Braun & Willett 2013): a
  cell comes after its receiver, so a pass in stack order meets receivers first and a
  pass in reverse order meets donors first;
* ``area``: drainage area in world units² (optionally weighted per cell, e.g. by rain).

The flood is Priority-Flood with a plain queue for the cells inside depressions (Barnes
et al. 2014, "Priority-Flood+epsilon"): O(n log n) in the worst case, nearly O(n) on
land with many pits; receivers, the stack and the areas are O(n). Everything is
serial and exact, so results never depend on the thread count. Heights may be in any
unit; distances are in cells unless a cell size is given.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numba import njit

_SQRT2 = math.sqrt(2.0)
#: the 8 neighbours: row offset, column offset, distance in cells
_DR = np.array([-1, -1, -1, 0, 0, 1, 1, 1], dtype=np.int64)
_DC = np.array([-1, 0, 1, -1, 1, -1, 0, 1], dtype=np.int64)
_DIST = np.array([_SQRT2, 1.0, _SQRT2, 1.0, 1.0, _SQRT2, 1.0, _SQRT2])


@njit(cache=True, nogil=True)
def _heap_push(keys, cells, size, key, cell):
    """Push (key, cell) on a binary min-heap ordered by key, then cell index."""
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        pk = keys[parent]
        if pk < key or (pk == key and cells[parent] < cell):
            break
        keys[i] = pk
        cells[i] = cells[parent]
        i = parent
    keys[i] = key
    cells[i] = cell
    return size + 1


@njit(cache=True, nogil=True)
def _heap_pop(keys, cells, size):
    """Remove the smallest entry; return (cell, new size)."""
    top = cells[0]
    size -= 1
    key = keys[size]
    cell = cells[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and (keys[child + 1] < keys[child] or (
                keys[child + 1] == keys[child] and cells[child + 1] < cells[child])):
            child += 1
        ck = keys[child]
        if key < ck or (key == ck and cell < cells[child]):
            break
        keys[i] = ck
        cells[i] = cells[child]
        i = child
    keys[i] = key
    cells[i] = cell
    return top, size


@njit(cache=True, nogil=True)
def flood(height, outlet, level, routed):
    """Priority-Flood+epsilon from the ``outlet`` cells (uint8, 1 = water leaves the
    grid here). Writes ``level`` (the depression-filled surface: the spill level inside
    closed depressions, the height elsewhere) and ``routed`` (``level`` plus the
    smallest float steps that make every cell higher than the cell it was reached
    from). 2-D float64 arrays of one shape."""
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
    size = 0
    for k in range(n):
        if out[k]:
            seen[k] = 1
            lv[k] = h[k]
            fe[k] = h[k]
            size = _heap_push(keys, cells, size, h[k], k)
    if size == 0:  # no outlet: the lowest cell is one (a closed grid drains somewhere)
        low = 0
        for k in range(1, n):
            if h[k] < h[low]:
                low = k
        seen[low] = 1
        lv[low] = h[low]
        fe[low] = h[low]
        size = _heap_push(keys, cells, size, h[low], low)
    head = 0
    tail = 0
    while size > 0 or head < tail:
        if head < tail:
            c = pit[head]
            head += 1
        else:
            c, size = _heap_pop(keys, cells, size)
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
            step = np.nextafter(fe[c], np.inf)
            if h[j] <= step:  # inside a depression or a flat: raised, routed over c
                lv[j] = max(h[j], lv[c])
                fe[j] = step
                pit[tail] = j
                tail += 1
            else:
                lv[j] = h[j]
                fe[j] = h[j]
                size = _heap_push(keys, cells, size, h[j], j)


@njit(cache=True, nogil=True)
def steepest_receivers(routed, outlet, receiver, distance):
    """D8 receivers: each non-outlet cell drains to the neighbour with the steepest
    descent of ``routed`` (drop / distance in cells); outlets drain to themselves.
    ``receiver`` (int64) and ``distance`` (cells) are flat arrays."""
    rows, cols = routed.shape
    fe = routed.reshape(-1)
    out = outlet.reshape(-1)
    for k in range(rows * cols):
        receiver[k] = k
        distance[k] = 1.0
        if out[k]:
            continue
        r0 = k // cols
        c0 = k - r0 * cols
        best = 0.0
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
def build_stack(receiver, stack):
    """Order the cells so every cell comes after its receiver (outlets first), by a
    depth-first walk up the donor tree (Braun & Willett 2013). O(n)."""
    n = receiver.size
    count = np.zeros(n + 1, dtype=np.int64)
    for k in range(n):
        r = receiver[k]
        if r != k:
            count[r + 1] += 1
    for k in range(n):
        count[k + 1] += count[k]
    fill = count[:n].copy()
    donors = np.empty(max(count[n], 1), dtype=np.int64)
    for k in range(n):
        r = receiver[k]
        if r != k:
            donors[fill[r]] = k
            fill[r] += 1
    todo = np.empty(n, dtype=np.int64)
    top = 0
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
            for t in range(count[c], count[c + 1]):
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


def edge_outlets(shape: tuple[int, int]) -> np.ndarray:
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
          weight: np.ndarray | None = None) -> Drainage:
    """Route water over ``height`` (2-D, float64) to the ``outlet`` cells (the edges by
    default); ``weight`` (per cell, default 1) scales each cell's contribution to the
    drainage area (e.g. a rain map)."""
    height = np.ascontiguousarray(height, dtype=np.float64)
    shape = height.shape
    outlet = edge_outlets(shape) if outlet is None else np.ascontiguousarray(
        outlet, dtype=np.uint8)
    level = np.empty(shape)
    routed = np.empty(shape)
    flood(height, outlet, level, routed)
    n = height.size
    receiver = np.empty(n, dtype=np.int64)
    distance = np.empty(n)
    steepest_receivers(routed, outlet, receiver, distance)
    stack = np.empty(n, dtype=np.int64)
    build_stack(receiver, stack)
    cell_area = cell_size * cell_size
    w = (np.full(n, cell_area) if weight is None
         else np.ascontiguousarray(weight, dtype=np.float64).reshape(-1) * cell_area)
    area = np.empty(n)
    accumulate(stack, receiver, w, area)
    return Drainage(level, receiver, distance * cell_size, stack, area.reshape(shape),
                    height)


def depression_depth(height: np.ndarray, outlet: np.ndarray | None = None) -> np.ndarray:
    """Depth of every closed depression filled to its spill level (0 elsewhere)."""
    height = np.ascontiguousarray(height, dtype=np.float64)
    outlet = edge_outlets(height.shape) if outlet is None else np.ascontiguousarray(
        outlet, dtype=np.uint8)
    level = np.empty(height.shape)
    routed = np.empty(height.shape)
    flood(height, outlet, level, routed)
    return level - height
