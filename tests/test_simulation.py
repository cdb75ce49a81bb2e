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
