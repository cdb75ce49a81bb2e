"""All processes together through Simulation: the shared height stays in sync, mass is
booked, and slicing never changes the result."""

import numpy as np
import pytest
from conftest import small_batches

from simcore.engine.simulation import PROCESSES, Simulation
from simcore.params import ParameterError
from simcore.terrain import Terrain


def all_processes():
    """Every process with its default parameters, batches capped (conftest)."""
    return {name: small_batches(name) for name in PROCESSES}


def test_every_process_together_keeps_height_in_sync_and_books_mass(hills):
    t = Terrain.from_heights(hills, world_units=False, sediment=np.full(hills.shape, 0.3))
    total0 = t.total_material()
    sim = Simulation(t, all_processes(), seed=3, particles=3000)
    sim.run()
    assert np.array_equal(sim._height, t.height()), "shared height = bedrock + sediment"
    tol = 1e-9 * np.abs(hills).sum()
    came_in = t.sources().sum()  # the landscape's uplift
    assert came_in > 0
    assert abs((total0 - t.total_material()) - t.outflow + came_in) < tol * (1 + came_in)
    for name, arr in t.arrays().items():
        assert np.isfinite(arr).all(), name
    assert t.sediment.min() >= 0 and t.pool.min() >= 0
    assert t.stream.max() > 0 and t.wind.max() > 0 and len(t.trees) > 0, "every process did work"


def test_every_process_together_is_independent_of_slicing(hills):
    procs = all_processes()
    a = Terrain.from_heights(hills, world_units=False)
    Simulation(a, procs, seed=8, particles=2500).run()
    b = Terrain.from_heights(hills, world_units=False)
    sim = Simulation(b, procs, seed=8, particles=2500)
    while not sim.advance(0.0).done:
        pass
    for name in ("bedrock", "sediment", "pool", "stream", "wind", "vegetation"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.trees, b.trees)


def test_a_change_record_that_cannot_be_booked_in_place_is_refused(hills):
    """Each process's change is booked through a flat view of ``terrain.changes``: a
    record that is not a writeable C-contiguous float64 grid would lose it (or be
    written out of bounds), so the run refuses it and says what to pass."""
    from simcore.params import ParameterError
    procs = {"thermal": small_batches("thermal")}
    for bad in (np.zeros(hills.shape, dtype=np.float32), np.zeros(hills.shape).T.copy().T,
                np.zeros((hills.shape[0], hills.shape[1] + 1))):
        t = Terrain.from_heights(hills, world_units=False)
        t.changes["thermal"] = bad
        with pytest.raises(ParameterError, match="C-contiguous float64"):
            Simulation(t, procs, particles=10)
    t = Terrain.from_heights(hills, world_units=False)
    frozen = np.zeros(hills.shape)
    frozen.flags.writeable = False
    t.changes["thermal"] = frozen
    with pytest.raises(ParameterError, match="writeable"):
        Simulation(t, procs, particles=10)
    t = Terrain.from_heights(hills, world_units=False)  # a good record is kept and used
    mine = np.zeros(hills.shape)
    t.changes["thermal"] = mine
    Simulation(t, procs, particles=10).run()
    assert t.changes["thermal"] is mine and np.abs(mine).max() > 0


def _no_numpy_path(sim, name):
    """Simulation._water_surface when the booking pass must keep the water: only a
    process that moves water itself may ask (and gets None)."""
    if not PROCESSES[name].moves_water:
        pytest.fail(f"{name}: the water was kept with numpy, not in the booking pass")


def test_standing_water_keeps_its_level_while_ground_moves_under_it(hills, monkeypatch):
    """Around a process that does not move water (thermal), a wet cell's depth becomes
    its surface before the batch minus the new ground (never below 0), and dry cells
    stay dry: booked in the same pass as the change, then the lakes re-levelled
    (hydrology). The result is the same, bit for bit, on the slower path (the water
    surface kept with numpy apart from the booking), which a protect mask takes."""
    thermal = small_batches("thermal").replace(creep=2.0)

    def lake_terrain():
        t = Terrain.from_heights(hills, world_units=False, sediment=np.full(hills.shape, 0.3))
        h = t.height()
        t.pool[...] = np.maximum(np.quantile(h, 0.3) - h, 0.0)  # the lowest ground flooded
        t.pool[:8] = 0.25  # and water on a slope, where the ground will slide under it
        t.pool[:8, :8] = 1e-6  # so thin that ground rising under it leaves it dry
        return t

    # thermal alone: the formula, cell by cell, on the booking pass
    t = lake_terrain()
    h0, pool0 = t.height(), t.pool.copy()
    wet = pool0 > 0
    assert 0.2 < wet.mean() < 0.6
    sim = Simulation(t, {"thermal": thermal}, seed=1, particles=1)
    with monkeypatch.context() as m:  # the booking pass keeps the water: no numpy path
        m.setattr(Simulation, "_water_surface", _no_numpy_path)
        sim.run_round()
    h1 = t.height()
    assert (wet & (h1 != h0)).sum() > 50, "ground moved under the water"
    assert (wet & (h1 > h0 + pool0)).any(), "ground rose above a thin pool"
    expected = np.where(wet, np.maximum((h0 + pool0) - h1, 0.0), 0.0)
    assert np.array_equal(t.pool, expected)

    # with hydrology (its relevel after thermal), rounds on both paths
    procs = {"hydrology": small_batches("hydrology"), "thermal": thermal}
    runs = []
    for fast in (True, False):
        t = lake_terrain()
        sim = Simulation(t, procs, seed=2,
                         particles=3 * sum(int(p.batch) for p in procs.values()))
        with monkeypatch.context() as m:
            if fast:
                m.setattr(Simulation, "_water_surface", _no_numpy_path)
            else:
                m.setattr(Simulation, "_level_in_booking", lambda *a: False)
            sim.run()
        runs.append(t)
    fast, slow = runs
    for name in ("bedrock", "sediment", "pool", "stream"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    for name in procs:
        assert np.array_equal(fast.changes[name], slow.changes[name]), name
    assert fast.pool.max() > 0


def test_a_billion_landscape_steps_are_refused_before_any_work():
    """Age / time step past the documented limit of cell passes: one message, the
    terrain untouched (else a run that never ends, without a word)."""
    from simcore.engine.simulation import MAX_CELL_PASSES, process_params
    from simcore.params import ParameterError

    t = Terrain.from_heights(np.random.default_rng(0).random((64, 64)), 10.0)
    start = t.bedrock.copy()
    huge = process_params("landscape", {"age": 1e9, "time_step": 1.0})
    with pytest.raises(ParameterError, match="landscape: 1,000,000,000 passes on 4,096 "
                                             "cells is more than 1e"):
        Simulation(t, {"landscape": huge})
    assert np.array_equal(t.bedrock, start)
    fits = process_params("landscape", {"age": MAX_CELL_PASSES // 4096, "time_step": 1.0})
    Simulation(t, {"landscape": fits}, particles=0)  # at the limit: accepted


def rounds(sim, count):
    for _ in range(count):
        sim.run_round()


def test_params_changed_between_rounds_equal_a_new_run_from_there(hills):
    """set_params (a bake's keyed values) = a new Simulation on the same terrain with the
    new params and the rounds done so far; the batch and the passes cannot change."""
    names = ("droplets", "thermal", "landscape")
    first = {n: small_batches(n) for n in names}
    later = dict(first, droplets=first["droplets"].replace(Kr=0.3),
                 landscape=first["landscape"].replace(uplift=5e-3))
    per_round = sum(int(p.batch) for p in first.values())
    start = hills[:32, :32]
    a = Terrain.from_heights(start, world_units=False)
    sim = Simulation(a, first, seed=4, particles=4 * per_round)
    rounds(sim, 2)  # rounds as a bake runs them (the landscape's age is longer)
    sim.set_params(later)
    rounds(sim, 2)
    b = Terrain.from_heights(start, world_units=False)
    rounds(Simulation(b, first, seed=4, particles=2 * per_round), 2)
    rounds(Simulation(b, later, seed=4, particles=2 * per_round, rounds_done=2), 2)
    for name in ("bedrock", "sediment", "pool"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    c = Terrain.from_heights(start, world_units=False)
    rounds(Simulation(c, first, seed=4, particles=4 * per_round), 4)
    assert not np.array_equal(a.bedrock, c.bedrock), "the new values did something"
    with pytest.raises(ParameterError, match="'batch' cannot change"):
        sim.set_params(dict(later, droplets=later["droplets"].replace(batch=7)))
    with pytest.raises(ParameterError, match="passes in all"):
        sim.set_params(dict(later, landscape=later["landscape"].replace(age=1.0e7)))
    with pytest.raises(ParameterError, match="processes cannot change"):
        sim.set_params({"droplets": later["droplets"]})
