"""The drainage core (simcore/algorithms/drainage.py): filled levels against an independent
priority-flood, receivers, the stack and drainage areas, on random grids."""

from __future__ import annotations

import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcore.algorithms import drainage


def reference_fill(h: np.ndarray) -> np.ndarray:
    """Textbook priority-flood (Barnes et al. 2014, algorithm 1) with heapq: the
    lowest surface over ``h`` that drains to the edges without climbing."""
    rows, cols = h.shape
    level = h.copy()
    seen = np.zeros(h.shape, bool)
    heap = []
    for r in range(rows):
        for c in range(cols):
            if r in (0, rows - 1) or c in (0, cols - 1):
                seen[r, c] = True
                heapq.heappush(heap, (h[r, c], r, c))
    while heap:
        z, r, c = heapq.heappop(heap)
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                rr, cc = r + dr, c + dc
                if 0 <= rr < rows and 0 <= cc < cols and not seen[rr, cc]:
                    seen[rr, cc] = True
                    level[rr, cc] = max(h[rr, cc], z)
                    heapq.heappush(heap, (level[rr, cc], rr, cc))
    return level


grids = arrays(np.float64, st.tuples(st.integers(3, 14), st.integers(3, 14)),
               elements=st.floats(-50.0, 50.0))


@pytest.mark.parametrize("method", ["basin graph", "flood"])
@settings(max_examples=150, deadline=None)
@given(h=grids, cell=st.sampled_from([1.0, 30.0]))
def test_route_fills_orders_and_accumulates(method, h, cell):
    """Both ways of routing pits (the basin graph; the flood where pits are dense)."""
    most = drainage.MOST_PITS
    drainage.MOST_PITS = 1 if method == "basin graph" else 10**9
    try:
        flow = drainage.route(h, cell)
    finally:
        drainage.MOST_PITS = most
    rows, cols = h.shape
    n = h.size
    # filled levels: the independent priority-flood, exactly
    assert np.array_equal(flow.level, reference_fill(h))
    assert (flow.lake_depth >= 0).all()
    # the stack holds every cell once, each after its receiver
    assert sorted(flow.stack.tolist()) == list(range(n))
    pos = np.empty(n, int)
    pos[flow.stack] = np.arange(n)
    rec = flow.receiver
    inner = rec != np.arange(n)
    assert (pos[rec[inner]] < pos[inner]).all()
    # only the edges drain to themselves; every other cell follows a neighbour
    edge = drainage.edge_outlets(h.shape).reshape(-1).astype(bool)
    assert np.array_equal(~inner, edge)
    r, c = np.divmod(np.arange(n), cols)
    rr, cc = np.divmod(rec, cols)
    assert np.allclose(flow.distance[inner], cell * np.hypot(r - rr, c - cc)[inner])
    # a receiver is a neighbour no higher, except for a pit or a lake cell, which
    # drain towards their spill point
    flat = h.reshape(-1)
    lower = (np.maximum(abs(r - rr), abs(c - cc)) == 1) & (flat[rec] <= flat)
    lower |= flow.lake_depth.reshape(-1) > 0
    padded = np.pad(h, 1, constant_values=np.inf)
    pit = np.ones(h.shape, bool)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            pit &= h <= padded[1 + dr:1 + dr + rows, 1 + dc:1 + dc + cols]
    assert (lower | pit.reshape(-1))[inner].all()
    # water never climbs the filled surface
    level = flow.level.reshape(-1)
    assert (level[rec] <= level).all()
    # every cell's area reaches one outlet: the outlets hold the whole map
    area = flow.area.reshape(-1)
    assert np.isclose(area[edge].sum(), n * cell * cell)
    assert (area >= cell * cell - 1e-9).all()


def test_a_closed_basin_fills_to_its_spill_point_and_drains_over_it():
    h = np.full((7, 9), 10.0)
    h[1:6, 1:8] = 5.0  # a basin, rim at 10 ...
    h[3, 8] = 7.0  # ... with a notch at 7 on the right edge
    h[3, 4] = 1.0
    flow = drainage.route(h, 2.0)
    assert flow.level[3, 4] == 7.0 and flow.lake_depth[3, 4] == 6.0
    assert (flow.level[1:6, 1:8] == 7.0).all()
    # all the basin's water leaves through the notch
    assert flow.area[3, 8] == 2.0 * 2.0 * (5 * 7 + 1)


def test_a_grid_with_no_outlet_drains_to_its_lowest_cell():
    h = np.arange(16.0).reshape(4, 4)
    flow = drainage.route(h, 1.0, outlet=np.zeros((4, 4), np.uint8))
    assert flow.receiver[0] == 0 and flow.area[0, 0] == 16.0
