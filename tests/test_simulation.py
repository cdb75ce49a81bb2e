"""All processes together through Simulation: the shared height stays in sync, mass is
booked, and slicing never changes the result."""

import numpy as np
from conftest import small_batches

from simcore.simulation import PROCESSES, Simulation
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
    import pytest

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


def test_standing_water_keeps_its_level_while_ground_moves_under_it(hills):
    """Around a process that does not move water (thermal), a wet cell's depth becomes
    its surface before the batch minus the new ground (never below 0), and dry cells
    stay dry: booked in the same pass as the change. The result is the same, bit for
    bit, when the simulation has to take the slower path (a pool array it cannot write
    through a flat view: kept level with numpy afterwards)."""
    procs = {"thermal": small_batches("thermal").replace(creep=2.0)}

    def lake_terrain():
        t = Terrain.from_heights(hills, world_units=False, sediment=np.full(hills.shape, 0.3))
        h = t.height()
        t.pool[...] = np.maximum(np.quantile(h, 0.3) - h, 0.0)  # the lowest ground flooded
        t.pool[:8] = 0.25  # and water on a slope, where the ground will slide under it
        return t

    t = lake_terrain()
    h0, pool0 = t.height(), t.pool.copy()
    wet = pool0 > 0
    assert 0.2 < wet.mean() < 0.6
    sim = Simulation(t, procs, seed=1, particles=1)
    sim.run_round()
    h1 = t.height()
    moved = wet & (h1 != h0)
    assert moved.sum() > 50, "ground moved under the water"
    expected = np.where(wet, np.maximum((h0 + pool0) - h1, 0.0), 0.0)
    assert np.array_equal(t.pool, expected)

    slow = lake_terrain()
    sim = Simulation(slow, procs, seed=1, particles=1)
    slow.pool = np.asfortranarray(slow.pool)  # no flat view: the numpy path
    sim.run_round()
    for name in ("bedrock", "sediment", "pool"):
        assert np.array_equal(getattr(slow, name), getattr(t, name)), name
