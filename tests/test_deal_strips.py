"""simcore.kernels.deal_strips: the droplet strips of a pass dealt into one group per
thread, so that threads get about equal numbers of droplets (the parallel loop gives
each thread an equal number of groups)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.kernels import deal_strips


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 500), min_size=1, max_size=24), st.integers(1, 8),
       st.integers(0, 1))
def test_every_strip_once_and_groups_within_one_strip_of_each_other(sizes, threads, parity):
    counts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    nstrips = len(sizes)
    active = np.array([s for s in range(parity, nstrips, 2) if sizes[s] > 0] or [0],
                      dtype=np.int64)
    nactive = int(sum(1 for s in range(parity, nstrips, 2) if sizes[s] > 0))
    groups = min(threads, nactive)
    dealt = np.full(nstrips, -1, dtype=np.int64)
    starts = np.full(nstrips + 1, -1, dtype=np.int64)
    deal_strips(counts, active, nactive, groups, dealt, starts)
    assert starts[0] == 0 and starts[groups] == nactive
    assert all(starts[g] <= starts[g + 1] for g in range(groups))
    assert sorted(dealt[:nactive]) == sorted(active[:nactive])
    if nactive:
        loads = [sum(sizes[s] for s in dealt[starts[g]:starts[g + 1]]) for g in range(groups)]
        biggest = max(sizes[s] for s in active[:nactive])
        assert max(loads) - min(loads) <= biggest, (loads, biggest)
        assert all(starts[g + 1] > starts[g] for g in range(groups)), "no group idles"


def test_a_full_strip_gets_a_thread_of_its_own():
    """Four strips of 300, 100, 100, 100 droplets on 2 threads: numba's equal split of
    the loop would give one thread 400 and the other 200; dealt, it is 300 and 300."""
    sizes = [300, 0, 100, 0, 100, 0, 100, 0]
    counts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    active = np.array([0, 2, 4, 6], dtype=np.int64)
    dealt = np.empty(8, dtype=np.int64)
    starts = np.empty(9, dtype=np.int64)
    deal_strips(counts, active, 4, 2, dealt, starts)
    groups = [sorted(dealt[starts[g]:starts[g + 1]]) for g in range(2)]
    assert groups == [[0], [2, 4, 6]]
