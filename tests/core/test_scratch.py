"""Scratch kept from one batch to the next (simcore.kernels.scratch): taken and given back by
key within a simulation's run, never where it would change a result or outlive the
run."""

import gc
import weakref

import numpy as np
import pytest
from conftest import small_batches

from simcore.engine.simulation import Simulation
from simcore.kernels import parallel, scratch
from simcore.processes import thermal
from simcore.terrain import Terrain


def test_take_returns_what_was_given_under_the_same_key_once():
    store: dict = {}
    kept = object()
    with scratch.keeping(store):
        assert scratch.take("p", 1) is None
        scratch.give("p", 1, kept)
        assert scratch.take("p", 1) is kept
        assert scratch.take("p", 1) is None, "taken out: no two batches share it"
        scratch.give("p", 1, kept)
        assert scratch.take("p", 2) is None, "another key (shape, threads) makes anew"
        assert "p" not in store, "and what the old key held is dropped"
    scratch.give("p", 1, kept)  # no store set: nothing is kept
    assert scratch.take("p", 1) is None and store == {}


def processes():
    """Droplets, and thermal with creep and weathering on (the default preset's parts:
    the creep's solve reuses the talus shares' grid)."""
    return {"droplets": small_batches("droplets"),
            "thermal": small_batches("thermal", 4).replace(creep=0.3, weathering=0.002)}


def run_rounds(hills, rounds, threads_at=None):
    """A world run ``rounds`` rounds; ``threads_at``: {round: threads}. Returns the
    terrain and the thermal scratch object of each round."""
    t = Terrain.from_heights(hills, world_units=False, sediment=np.full(hills.shape, 0.5))
    sim = Simulation(t, processes(), seed=2, particles=10**6)
    kept = []
    old = parallel.threads()
    try:
        for r in range(rounds):
            if threads_at and r in threads_at:
                parallel.set_threads(threads_at[r])
            sim.run_round()
            kept.append(sim._scratch.get("thermal", (None, None))[1])
    finally:
        parallel.set_threads(old)
    return t, kept


def test_thermal_keeps_its_scratch_across_rounds_and_gives_the_same_result(hills,
                                                                         monkeypatch):
    kept_run, kept = run_rounds(hills, 4)
    assert all(k is kept[0] for k in kept), "one scratch for the whole run"
    assert kept[0].grid.coarse is not None, "the multigrid's levels are kept too"
    with monkeypatch.context() as m:  # nothing kept: each batch makes its scratch anew
        m.setattr(scratch, "give", lambda name, key, obj: None)
        fresh_run, _ = run_rounds(hills, 4)
    for name in ("bedrock", "sediment", "eroded", "deposited"):
        assert np.array_equal(getattr(kept_run, name), getattr(fresh_run, name)), name


def test_a_new_thread_count_makes_new_scratch_and_the_same_result(hills):
    if parallel.most_threads() < 2:
        pytest.skip("needs 2 threads")
    one, _ = run_rounds(hills, 4, {0: 1})
    switched, kept = run_rounds(hills, 4, {0: 1, 2: 2})
    assert kept[0] is kept[1] and kept[1] is not kept[2], "the bands differ by threads"
    for name in ("bedrock", "sediment", "eroded", "deposited"):
        assert np.array_equal(getattr(one, name), getattr(switched, name)), name


def test_a_failed_batch_keeps_nothing_and_the_run_frees_its_scratch(hills, monkeypatch):
    t = Terrain.from_heights(hills, world_units=False, sediment=np.full(hills.shape, 0.5))
    params = small_batches("thermal", 2)
    store: dict = {}
    with scratch.keeping(store):
        thermal.run_batch(t, params, 0, 0, 2)
        assert "thermal" in store

        def fail(*args):
            raise MemoryError("a batch that stops half-way")

        monkeypatch.setattr(thermal, "_run_passes", fail)
        with pytest.raises(MemoryError):
            thermal.run_batch(t, params, 0, 2, 2)
        assert "thermal" not in store, "half-written scratch is never reused"
    monkeypatch.undo()
    sim = Simulation(t, {"thermal": params}, particles=10)
    sim.run()
    gone = weakref.ref(sim._scratch["thermal"][1])
    del sim
    gc.collect()
    assert gone() is None, "a finished run holds none of its scratch"
