import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcore.simulation import Simulation
from simcore.snowball import SnowballParams, blur_change, run_batch
from simcore.terrain import Terrain


def test_blur_keeps_the_sum_and_smooths():
    rng = np.random.default_rng(1)
    change = rng.normal(size=(17, 23))
    out = blur_change(change)
    assert np.isclose(out.sum(), change.sum(), rtol=0, atol=1e-9)
    assert out.std() < change.std()


def test_snowballs_carve_slopes_and_book_mass(hills):
    t = Terrain.from_heights(hills, world_units=False)
    steps = run_batch(t, SnowballParams(batch=2000), 1, 0, 2000)
    assert steps > 0
    assert t.eroded.sum() > 0 and t.deposited.sum() > 0
    tol = 1e-9 * np.abs(hills).sum()
    assert abs((hills.sum() - t.total_material()) - t.outflow) < tol
    assert abs((t.eroded.sum() - t.deposited.sum()) - t.outflow) < tol
    assert t.sediment.min() >= 0


def test_snowball_same_seed_same_result_and_slicing(hills):
    procs = {"snowball": SnowballParams(batch=500)}
    a = Terrain.from_heights(hills, world_units=False)
    Simulation(a, procs, seed=2, particles=3000).run()
    b = Terrain.from_heights(hills, world_units=False)
    sim = Simulation(b, procs, seed=2, particles=3000)
    while not sim.advance(0.0).done:
        pass
    assert np.array_equal(a.bedrock, b.bedrock) and np.array_equal(a.sediment, b.sediment)


@given(heights=arrays(np.float64, st.tuples(st.integers(3, 16), st.integers(3, 16)),
                      elements=st.floats(-1e3, 1e3)),
       erosion=st.floats(0, 10), deposition=st.floats(0, 1), speed=st.floats(0, 10),
       friction=st.floats(0, 1), blur=st.floats(0, 1), seed=st.integers(0, 2**32))
def test_random_snowball_runs_stay_finite(heights, erosion, deposition, speed, friction,
                                          blur, seed):
    p = SnowballParams(erosion_rate=erosion, deposition_rate=deposition, speed=speed,
                       friction=friction, blur=blur, batch=32)
    t = Terrain.from_heights(heights, world_units=False)
    run_batch(t, p, seed, 0, 32)
    for name, arr in t.arrays().items():
        assert np.all(np.isfinite(arr)), name
    assert t.sediment.min() >= 0


def test_parameters_are_world_units():
    """At a cell size of 1 the numbers are the old cell-unit ones; on a grid k times
    coarser, volumes shrink by k^3 and lengths by k in cell units."""
    p = SnowballParams(erosion_rate=2.0, speed=3.0, radius=1.5)
    one = p.kernel(1.0)
    assert one.erosion_rate == 2.0 and one.speed == 3.0 and one.radius == 1.5
    k = 4.0
    coarse = p.kernel(k)
    assert coarse.erosion_rate == pytest.approx(2.0 / k ** 3)
    assert coarse.speed == pytest.approx(3.0 / k)
    assert coarse.radius == pytest.approx(1.5 / k)
    same = ("deposition_rate", "friction", "max_iterations", "iteration_scale", "min_slope")
    assert [getattr(coarse, n) for n in same] == [getattr(one, n) for n in same]
    assert [getattr(one, n) for n in same] == [p.deposition_rate, p.friction,
                                               p.max_iterations, p.iteration_scale,
                                               p.min_slope]
