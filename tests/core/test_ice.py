"""Glaciers: the shallow-ice solver against Halfar's exact dome, the ice's books over a
cliffed bed, the rock's books, no negative ice, the same bits on any thread count,
refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.algorithms import glacier
from simcore.engine.simulation import Simulation, process_params
from simcore.kernels import parallel
from simcore.params import ParameterError
from simcore.processes import ice
from simcore.terrain import Terrain

A = 2.4e-24 * 3.15576e7  # Pa^-3 yr^-1: temperate ice
GAMMA = 2.0 * A * glacier.RHO_G ** 3 / 5.0
R0, H0 = 5000.0, 300.0  # a 5 km mountain ice cap, 300 m thick
T0 = (7.0 / 4.0) ** 3 * R0 ** 4 / (18.0 * GAMMA * H0 ** 7)


def halfar(t: float, r: np.ndarray) -> np.ndarray:
    """Halfar's similarity solution (Bueler et al. 2005, test B)."""
    f = (T0 / t) ** (1.0 / 18.0) * r / R0
    return H0 * (T0 / t) ** (1.0 / 9.0) * np.maximum(1.0 - f ** (4.0 / 3.0), 0.0) ** (3.0 / 7.0)


def run(bed, h, years, *, ela=-1e9, beta=0.0, m_max=0.0, slide=0.0, dx=100.0,
        change=ice.STEP_CHANGE, max_step=ice.MAX_SOLVER_STEP, rain=None):
    shape = h.shape
    sums = [np.zeros((2,) + shape) for _ in range(3)]
    thick, melt, books = np.zeros(shape), np.zeros(shape), np.zeros(glacier.BOOKS)
    glacier.advance(bed, h, np.ones(shape) if rain is None else rain, dx, years, ela, beta,
                    m_max, 2.0 * A / 5.0, slide, max_step, change, 0.01, sums[0],
                    sums[1], sums[2], thick, melt, books)
    return books, sums, thick, melt


@pytest.mark.parametrize("dx", [250.0, 125.0])
def test_the_dome_thins_as_halfar_s_exact_solution(dx):
    n = int(20000.0 / dx) + 1
    x = (np.arange(n) - n // 2) * dx
    r = np.hypot(*np.meshgrid(x, x))
    h = halfar(T0, r)
    start_volume = h.sum()
    years = 511.0 * T0  # the dome's height halves: (t0 / t)^(1/9) = 1/2
    books, *_ = run(np.zeros_like(h), h, years, dx=dx, change=2.0, max_step=50.0)
    exact = halfar(512.0 * T0, r)
    assert abs(h.max() / exact.max() - 1.0) < 0.02
    # the exact volume is the start's (Halfar's dome neither gains nor loses ice)
    s = np.linspace(0.0, 1.0, 200_001)
    shape = (1.0 - s ** (4.0 / 3.0)) ** (3.0 / 7.0) * s
    exact_volume = 2.0 * np.pi * R0 ** 2 * H0 * float(np.sum(shape[1:] + shape[:-1])
                                                       * 0.5 * (s[1] - s[0]))
    assert abs(h.sum() * dx * dx / exact_volume - 1.0) < 0.01
    assert h.sum() == pytest.approx(start_volume, rel=1e-12)  # nothing gained or lost
    assert h.min() >= 0.0
    assert books[glacier.OUT] == 0.0


def cliffed_bed(n: int, dx: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.arange(n) * dx
    xx, yy = np.meshgrid(x, x)
    bed = 2600.0 - 0.15 * xx - 200.0 * np.cos(yy / (n * dx) * 2 * np.pi)
    bed = np.where(xx > n * dx / 2, bed - 300.0, bed)  # a 300 m cliff across the map
    return bed + rng.normal(0.0, 5.0, bed.shape)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 1000), ela=st.floats(2000.0, 2700.0),
       slide=st.sampled_from([0.0, 3e-14, 3e-13]), years=st.sampled_from([30.0, 300.0]))
def test_the_ice_s_books_close_over_a_cliffed_bed(seed, ela, slide, years):
    n, dx = 24, 100.0
    bed = cliffed_bed(n, dx, seed)
    h = np.zeros((n, n))
    books, _, _, melt = run(bed, h, years, ela=ela, beta=0.007, m_max=2.0, slide=slide,
                            dx=dx)
    change = books[glacier.GAINED] - books[glacier.MELTED] - books[glacier.OUT]
    assert h.sum() == pytest.approx(change, rel=1e-9, abs=1e-9 * books[glacier.GAINED])
    assert melt.sum() == pytest.approx(books[glacier.MELTED], rel=1e-12)
    assert h.min() >= 0.0 and np.isfinite(h).all()


def test_ice_pours_over_a_cliff_without_going_negative_or_gaining_mass():
    n, dx = 32, 100.0
    bed = cliffed_bed(n, dx, 1)
    h = np.zeros((n, n))
    x = np.arange(n) * dx
    h[:, (x > 1000) & (x < n * dx / 2)] = 150.0  # ice on the cliff's top, none below
    start = h.sum()
    books, *_ = run(bed, h, 200.0, slide=3e-14, dx=dx)
    assert h.min() >= 0.0
    assert h.sum() + books[glacier.OUT] == pytest.approx(start, rel=1e-12)
    assert h[:, x > n * dx / 2 + 200].sum() > 0.0  # it went over


def valley(n: int = 48, cell: float = 60.0) -> Terrain:
    x = np.arange(n) * cell
    xx, yy = np.meshgrid(x, x)
    z = 3000.0 - 0.15 * xx + 0.4 * np.abs(yy - x.mean())
    return Terrain.from_heights(z, cell)


def test_a_pass_takes_and_lays_rock_without_losing_any():
    t = valley()
    p = ice.IceParams(age=3000.0, time_step=1000.0, ela=2700.0, flow_cell=120.0)
    height = t.height()
    before = t.total_material()
    taken = laid = out = 0.0
    for k in range(ice.steps(p)):
        books = ice.glaciate(t, p, k, ice._pass_years(p, k), height)
        taken, laid, out = (taken + books["taken"], laid + books["laid"],
                            out + books["debris_out"])
    assert taken > 0.0 and laid > 0.0
    assert laid + out == pytest.approx(taken, rel=1e-9)
    assert t.total_material() + t.outflow == pytest.approx(before, rel=1e-12)
    assert np.array_equal(height, t.height())
    assert t.ice.min() >= 0.0 and t.ice.max() > 0.0


def test_the_ice_is_the_flow_grid_s_on_the_terrain_s_cells():
    t = valley()
    p = ice.IceParams(age=1000.0, time_step=1000.0, ela=2700.0, flow_cell=120.0,
                      erosion=0.0)
    height = t.height()
    ice.glaciate(t, p, 0, 1000.0, height)
    f = ice.flow_factor(p, t.cell_size)
    assert f == 2
    # the fine ice holds the flow grid's volume (the books: gained - melted - out)
    coarse = ice._coarse(t.ice * t.cell_size, f)
    assert coarse.sum() * f * f == pytest.approx(t.ice.sum() * t.cell_size, rel=1e-12)


def test_the_same_bits_on_one_thread_and_two():
    results = []
    for threads in (1, 2):
        parallel.set_threads(threads)
        try:
            t = valley(32)
            Simulation(t, {"ice": process_params("ice", {
                "age": 2000.0, "time_step": 1000.0, "ela": 2700.0})}, particles=1).run()
            results.append((t.bedrock.copy(), t.sediment.copy(), t.ice.copy()))
        finally:
            parallel.set_threads(0)
    for a, b in zip(results[0], results[1], strict=True):
        assert np.array_equal(a, b)


def test_no_ice_where_the_line_is_above_the_summits():
    t = valley(32)
    ground = t.height().copy()
    Simulation(t, {"ice": process_params("ice", {
        "age": 3000.0, "time_step": 1000.0, "ela": 9000.0})}, particles=1).run()
    assert t.ice.max() == 0.0
    assert np.array_equal(t.height(), ground)


def test_a_retreat_leaves_no_ice():
    t = valley(32)
    Simulation(t, {"ice": process_params("ice", {
        "age": 10000.0, "time_step": 1000.0, "ela": 2600.0, "retreat": 0.5})},
        particles=1).run()
    assert t.ice.max() * t.cell_size < 1.0


@pytest.mark.parametrize("key, value", [("age", 1e12), ("ela", float("nan")),
                                        ("balance_gradient", -1.0), ("softness", 1.0),
                                        ("sliding", 1e9), ("erosion", 5.0),
                                        ("erosion_exponent", 3.0), ("acceleration", 0.5),
                                        ("time_step", 0.0)])
def test_absurd_parameters_are_refused_with_their_range(key, value):
    with pytest.raises(ParameterError, match=key):
        process_params("ice", {key: value})


def test_centimetre_cells_are_told_their_real_size_matters():
    assert ice.advice(ice.IceParams(), 0.05) is not None
    assert ice.advice(ice.IceParams(), 30.0) is None


def test_old_snow_deeper_than_the_firn_depth_becomes_ice():
    t = valley(32)
    t.snow[...] = 30.0 / t.cell_size  # 30 m of snow everywhere
    p = ice.IceParams(age=10.0, time_step=10.0, ela=2500.0, firn_depth=10.0,
                      erosion=0.0, flow_cell=0.0)
    height = t.height()
    books = ice.glaciate(t, p, 0, 10.0, height)
    assert np.allclose(t.snow * t.cell_size, 10.0)
    # 20 m of firn made 10 m of ice; the climate and the edges changed it by what the
    # books say
    made = 20.0 * ice.FIRN_TO_ICE * t.snow.size * t.cell_size ** 2
    left = t.ice.sum() * t.cell_size ** 3
    assert left > 0.5 * made
    assert left == pytest.approx(made + books["gained"] - books["melted"] - books["out"],
                                 rel=1e-9)


def test_ten_million_years_in_yearly_passes_is_refused_before_any_work():
    t = valley(256, 30.0)
    ground = t.height().copy()
    with pytest.raises(ParameterError, match="ice: 10,000,000 passes"):
        Simulation(t, {"ice": process_params("ice", {"age": 1e7, "time_step": 1.0})},
                   particles=1)
    assert np.array_equal(t.height(), ground) and t.ice.max() == 0.0


def test_with_the_snow_process_old_snow_feeds_the_glacier():
    ice_params = process_params("ice", {"age": 2000.0, "time_step": 100.0, "ela": 2700.0,
                                        "firn_depth": 5.0})
    snow_params = process_params("snow", {"years": 200.0, "time_step": 10.0,
                                          "relative_line": False, "snow_line": 2700.0})
    alone, fed = valley(), valley()
    before = fed.total_material()
    Simulation(alone, {"snow": snow_params}, particles=1).run()
    Simulation(fed, {"snow": snow_params, "ice": ice_params}, particles=1).run()
    assert alone.snow.max() * alone.cell_size > 20.0  # snow alone piles up
    assert fed.snow.max() * fed.cell_size == pytest.approx(5.0)  # the rest became ice
    assert fed.ice.max() > 0.0
    assert fed.total_material() + fed.outflow == pytest.approx(before, rel=1e-12)


def _preset_run(name: str, size: int = 64):
    """The preset ``name`` on drained uplands 7.68 km across, 1800 m of relief."""
    from simcore.formats.presets import find_preset
    from simcore.generators.uplands import drained_uplands
    cell = 7680.0 / size
    start = drained_uplands(size, seed=3, cell_size=cell, relief=1800.0)
    preset = find_preset(name)
    terrain = Terrain.from_heights(start, cell)
    before = terrain.total_material()
    sim = Simulation(terrain, preset.enabled_params(), seed=preset.seed,
                     particles=preset.work(terrain))
    ice_max = np.zeros_like(start)
    while sim.rounds_done < sim.target_rounds:
        sim.run_round()
        ice_max = np.maximum(ice_max, terrain.ice * cell)
    budget = terrain.total_material() + terrain.outflow - before
    return start, terrain, ice_max, budget


def test_glaciated_range_scours_under_its_ice_and_leaves_none():
    start, terrain, ice_max, budget = _preset_run("glaciated_range")
    cell = terrain.cell_size
    change = terrain.height() * cell - start
    assert terrain.ice.max() == 0.0  # the retreat melted it all
    covered = ice_max > 50.0
    assert covered.mean() > 0.1  # valley glaciers, not a few patches
    # the ice scoured where it lay (tens of metres at least) and laid its debris
    assert np.percentile(-change[covered], 90) > 20.0
    assert change.max() > 5.0
    # the ground lowered by tens of metres is where the ice lay (outwash and the
    # hillslopes raise ground beyond the ice, but lower little)
    deep = change < -20.0
    assert (ice_max[deep] > 0.0).mean() > 0.8
    assert abs(budget) < 1e-9 * terrain.bedrock.size
    slope = np.degrees(np.arctan(np.hypot(*np.gradient(terrain.height()))))
    assert np.percentile(slope, 99) < 50.0


def test_range_under_ice_keeps_its_ice_and_snow_above_the_valleys():
    start, terrain, ice_max, _ = _preset_run("range_under_ice")
    cell = terrain.cell_size
    ice_now = terrain.ice * cell
    snow_now = terrain.snow * cell
    assert (ice_now > 10.0).mean() > 0.1
    assert (snow_now > 0.5).mean() > 0.05
    # both lie high: the ice's cells and the snow's are higher on average than the map
    ground = terrain.height() * cell
    assert ground[ice_now > 10.0].mean() > ground.mean()
    assert ground[snow_now > 0.5].mean() > ground.mean()
    # and none where the ground is in the lowest tenth of the relief
    low = ground < ground.min() + 0.1 * np.ptp(ground)
    assert ice_now[low].max() < 1.0 and snow_now[low].max() < 0.1


def _wall_exponent(section: np.ndarray, across: np.ndarray, half: float,
                   cell: float) -> float:
    """b of depth ~ |x|^b over a section's floor and walls from one cell to ``half``
    off the axis."""
    m = np.abs(across) <= half
    x, z = np.abs(across[m]), section[m] - section[m].min()
    keep = (x > cell) & (z > 0.5)
    return float(np.polyfit(np.log(x[keep]), np.log(z[keep]), 1)[0])


@pytest.mark.slow
def test_a_valley_glacier_widens_its_v_shaped_valley_towards_a_u():
    """A V valley (walls at 0.5, 1.8 km across) under a glacier 250-550 m thick, fed from
    its head and walls: the section's power law steepens (b up: 1 is a V, 2 a U;
    Harbor 1992). The ice's stiffness carries the thick middle's stress to the thin
    ice on the walls (the coupling); without it the middle slides far faster and the
    valley stays a V, deeper (b down to 0.7 in its lower reach)."""
    nx, ny, cell = 120, 64, 50.0
    x = np.arange(nx) * cell
    across = (np.arange(ny) - (ny - 1) / 2.0) * cell
    d = np.abs(across)[:, None]
    z = 3200.0 - 0.08 * x[None, :] + 0.5 * np.minimum(d, 900.0) + 0.05 * np.maximum(d - 900.0, 0)
    t = Terrain.from_heights(z, cell)
    p = ice.IceParams(age=40000.0, time_step=1000.0, ela=3150.0, max_accumulation=1.0,
                      flow_cell=100.0)
    h = t.height()
    last = 0.1
    for k in range(ice.steps(p)):
        last = ice.glaciate(t, p, k, ice._pass_years(p, k), h, last)["last_step"]
    out = t.height() * cell
    for col in (50, 70):
        before = _wall_exponent(z[:, col], across, 900.0, cell)
        after = _wall_exponent(out[:, col], across, 900.0, cell)
        assert z[:, col].min() - out[:, col].min() > 50.0  # the ice dug the floor
        assert after > before + 0.1, (col, before, after)
