import math

import numpy as np
import pytest
from conftest import local_minima
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcore.engine.simulation import Simulation
from simcore.generators.noise import fractal_terrain
from simcore.kernels import parallel
from simcore.kernels import primitives as kernels
from simcore.kernels.primitives import rain_cdf
from simcore.processes.droplets import DropletParams, run_batch
from simcore.terrain import Terrain


def run(heights, n, seed=1, params=None, **layers):
    t = Terrain.from_heights(heights, world_units=False, **layers)
    params = params or DropletParams()
    steps = 0
    for first in range(0, n, params.batch):
        steps += run_batch(t, params, seed, first, min(params.batch, n - first))
    return t, steps


def tilted(rows=40, cols=40, slope=0.3):
    return np.tile(np.arange(cols) * slope, (rows, 1))  # rises with x: downhill is -x


def test_droplet_on_tilted_plane_runs_downhill_and_carves():
    t, steps = run(tilted(), 1, params=DropletParams(batch=1))
    assert steps > 0
    dug = np.argwhere(t.eroded > 0)
    assert len(dug) > 0, "a droplet on a slope must carve"
    assert t.outflow > 0, "it leaves over the low edge carrying sediment"
    # the carved trail reaches the low (x = 0) side of the plane
    assert dug[:, 1].min() <= 3


def test_droplets_on_flat_plane_change_nothing():
    t, steps = run(np.full((32, 32), 7.0), 500)
    assert steps > 0
    assert np.all(np.isfinite(t.height()))
    assert np.max(np.abs(t.height() - 7.0)) < 1e-12
    assert t.outflow == 0.0


def test_brush_never_digs_below_the_next_height_on_the_path():
    rng = np.random.default_rng(3)
    for _ in range(50):
        h = rng.random((9, 9)) * 4
        bed, sed = h.copy(), np.zeros_like(h)
        height, er, de, k = h.copy(), np.zeros_like(h), np.zeros_like(h), np.ones_like(h)
        floor = float(rng.random() * 3)
        x, y = 2 + rng.random() * 4, 2 + rng.random() * 4
        got = kernels.erode_brush(x, y, 5.0, floor, 2.0, 9, 9, height.reshape(-1),
                                     bed.reshape(-1), sed.reshape(-1), er.reshape(-1),
                                     de.reshape(-1), k.reshape(-1))
        above = h > floor
        assert np.all(height[above] >= floor - 1e-12)
        assert np.array_equal(height[~above], h[~above])
        assert got == pytest.approx(h.sum() - height.sum())
        assert got <= 5.0 + 1e-12


def _brush_reference(xp, yp, amount, floor, radius, height, bedrock, sediment, eroded,
                     deposited, erodibility):
    """The brush written plainly: every cell of the box gets its (possibly zero) share,
    through the same exchange arithmetic as kernels.exchange."""
    rows, cols = height.shape
    inv_r2 = 1.0 / (radius * radius)
    x0, x1 = max(math.floor(xp - radius) + 1, 0), min(math.floor(xp + radius), cols - 1)
    y0, y1 = max(math.floor(yp - radius) + 1, 0), min(math.floor(yp + radius), rows - 1)
    cells = [(y, x) for y in range(y0, y1 + 1) for x in range(x0, x1 + 1)]
    weights = [max(1.0 - ((x - xp) * (x - xp) + (y - yp) * (y - yp)) * inv_r2, 0.0)
               for y, x in cells]
    total = 0.0
    for w in weights:
        total += w
    removed = 0.0
    if total <= 0.0:
        return removed
    scale = amount / total
    for (y, x), w in zip(cells, weights):
        dig = min(w * scale, max(height[y, x] - floor, 0.0))
        s0 = sediment[y, x]
        from_sed = min(dig, s0)
        rock = (dig - from_sed) * min(erodibility[y, x], 1.0)
        sediment[y, x] = (s0 - from_sed) + 0.0
        bedrock[y, x] = bedrock[y, x] - rock
        height[y, x] = bedrock[y, x] + sediment[y, x]
        got = from_sed + rock
        from_dep = min(got, deposited[y, x])
        deposited[y, x] = (deposited[y, x] - from_dep) + 0.0
        eroded[y, x] += got - from_dep
        removed += got
    return removed


@given(seed=st.integers(0, 2**32 - 1), radius=st.floats(1.0, 8.0),
       amount=st.floats(0.0, 50.0), floor=st.floats(-1.0, 5.0))
def test_brush_equals_the_plain_formula_bit_for_bit(seed, radius, amount, floor):
    """The kernel skips cells whose share is zero; that must change no bit against
    giving every cell of the box its share (sediment first, hard rock, records)."""
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(3, 24)), int(rng.integers(3, 24))
    bed = rng.random((rows, cols)) * 4
    sed = np.where(rng.random((rows, cols)) < 0.5, rng.random((rows, cols)), 0.0)
    arrays = [bed + sed, bed, sed, rng.random((rows, cols)) * (rng.random() < 0.5),
              rng.random((rows, cols)) * (rng.random() < 0.5),
              np.clip(rng.random((rows, cols)) * 1.5, 0.0, 1.0)]
    ref = [a.copy() for a in arrays]
    ours = [a.copy() for a in arrays]
    xp, yp = rng.random() * (cols - 1), rng.random() * (rows - 1)
    want = _brush_reference(xp, yp, amount, floor, radius, *ref)
    got = kernels.erode_brush(xp, yp, amount, floor, radius, rows, cols,
                                 *[a.reshape(-1) for a in ours])
    assert got == want
    for a, b in zip(ours, ref):
        assert np.array_equal(a, b)


def test_no_droplet_digs_below_the_terrain_minimum_or_leaves_pits(hills):
    t = Terrain.from_heights(hills, world_units=False)
    p = DropletParams(batch=1)
    for i in range(200):
        before = t.height()
        run_batch(t, p, 9, i, 1)
        after = t.height()
        assert after.min() >= before.min() - 1e-9, "erosion never makes a new lowest point"
    pits_before = local_minima(hills, 0.05)
    t2, _ = run(hills, 20000)
    assert local_minima(t2.height(), 0.05) <= pits_before


def test_mass_is_booked(hills):
    t, _ = run(hills, 20000)
    total0 = hills.sum()
    assert t.outflow > 0
    tol = 1e-9 * np.abs(hills).sum()
    assert abs((t.eroded.sum() - t.deposited.sum()) - t.outflow) < tol
    assert abs((total0 - t.total_material()) - t.outflow) < tol
    assert t.sediment.min() >= 0 and t.eroded.min() >= 0 and t.deposited.min() >= 0


def test_sediment_is_taken_before_bedrock_and_hard_rock_resists(hills):
    soft, _ = run(hills, 5000)
    hard, _ = run(hills, 5000, erodibility=np.full(hills.shape, 0.2))
    assert hard.eroded.sum() < soft.eroded.sum()
    loose = np.full(hills.shape, 0.5)
    t, _ = run(hills, 3000, sediment=loose.copy(), erodibility=np.zeros(hills.shape))
    # with unerodible rock only the loose layer moves: bedrock is untouched
    assert np.array_equal(t.bedrock, hills)
    assert t.eroded.sum() > 0


def test_same_seed_is_bit_identical_and_other_seed_differs(hills):
    a, _ = run(hills, 6000, seed=4)
    b, _ = run(hills, 6000, seed=4)
    c, _ = run(hills, 6000, seed=5)
    for name in ("bedrock", "sediment", "eroded", "deposited"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.bedrock, c.bedrock)


@pytest.mark.parametrize("world", ["fractal", "upland", "upland_fine"])
def test_thread_count_does_not_change_the_result(world):
    """Every array and the outflow, bit for bit. The upland case (8 strips, one batch)
    caught ``lost.sum()`` becoming a threaded reduction in the parallel kernel; on
    3.75 m cells the default brush is at its 8-cell cap and the capacity reads the
    slope 8 cells ahead, the farthest a step reads."""
    from simcore.formats.presets import find_preset
    from simcore.generators.noise import fractal_terrain, upland_terrain
    if world == "fractal":
        h, cell, n = fractal_terrain(160, seed=2), 1.0, 8192  # 5 strips: parallel phases
        params = DropletParams(batch=4096)
    else:
        cell = 30.0 if world == "upland" else 3.75
        h, n = upland_terrain(256, seed=3, cell_size=cell), 2048
        params = find_preset("default").params["droplets"]
        assert params.slope_cells(cell) == (1.0 if world == "upland" else 8.0)
    results = []
    old = parallel.threads()
    try:
        for threads in (1, parallel.most_threads()):
            parallel.set_threads(threads)
            t = Terrain.from_heights(h, cell, world_units=world != "fractal")
            for first in range(0, n, params.batch):
                run_batch(t, params, 1, first, min(params.batch, n - first))
            results.append(t)
    finally:
        parallel.set_threads(old)
    one, many = results
    assert one.outflow == many.outflow
    for name, arr in one.arrays().items():
        assert np.array_equal(arr, getattr(many, name)), name


def test_slicing_by_time_or_count_gives_identical_arrays(hills):
    procs = {"droplets": DropletParams(batch=512)}
    one = Terrain.from_heights(hills, world_units=False)
    Simulation(one, procs, seed=3, particles=5000).run()
    sliced = Terrain.from_heights(hills, world_units=False)
    sim = Simulation(sliced, procs, seed=3, particles=5000)
    calls = 0
    while not sim.advance(0.0).done:
        calls += 1
    assert calls > 3
    resumed = Terrain.from_heights(hills, world_units=False)
    first = Simulation(resumed, procs, seed=3, particles=2048)
    first.run()
    Simulation(resumed, procs, seed=3, particles=5000 - 2048,
               rounds_done=first.rounds_done).run()
    for t in (sliced, resumed):
        assert np.array_equal(one.bedrock, t.bedrock)
        assert np.array_equal(one.sediment, t.sediment)
        assert np.array_equal(one.deposited, t.deposited)


@pytest.mark.parametrize("k", [0.25, 2.0, 8.0])
def test_parameters_are_world_units(k):
    """Dimensional analysis: a world k times larger, with every length scaled by k (per
    length rates compounded, volumes by k^3, gravity by 1/k so that the speed per cell
    stays), gives the droplet kernel the same numbers in cell units."""
    p = DropletParams(Kq=10.0, Kw=0.01, Kr=0.5, Kd=0.1, Ki=0.5, gravity=20.0,
                      brush_radius=3.0, gather=0.8, gather_length=50.0)
    scaled = DropletParams(Kq=10.0 * k ** 3, Kw=1 - 0.99 ** (1 / k), Kr=1 - 0.5 ** (1 / k),
                           Kd=1 - 0.9 ** (1 / k), Ki=0.5 ** (1 / k), gravity=20.0 / k,
                           brush_radius=3.0 * k, gather=0.8, gather_length=50.0 * k)
    assert np.allclose(p.kernel((50, 60), 1.5), scaled.kernel((50, 60), 1.5 * k),
                       rtol=1e-12)
    # at a cell size of 1 the numbers are the seed article's per-step values
    a = DropletParams().kernel((50, 60), 1.0)
    assert (a.Kq, a.Kw, a.Kr, a.Kd, a.Ki, a.min_slope) == (10.0, 0.001, 0.9, 0.02, 0.1, 0.05)
    assert (a.Kg, a.radius, a.max_steps) == (40.0, 2.0, 240)


@given(brush=st.floats(0.0, 1000.0), cell=st.floats(0.01, 1000.0),
       nudge=st.floats(-1e-6, 1e-6))
@example(brush=2.0, cell=1.0, nudge=1e-7)
@example(brush=2.5, cell=1.0, nudge=-1e-7)
@example(brush=3.0, cell=1.0, nudge=-1e-7)
@example(brush=3.0, cell=1.0, nudge=1e-7)
def test_the_capacity_reads_the_slope_over_the_brush_radius(brush, cell, nudge):
    """The run of the capacity's slope: one step while the brush is 2 cells or less (the
    article at a cell size of 1, the default 45 m brush on 30 m cells), the brush
    radius from 3 cells, never beyond the brush (a step then reads no row beyond the
    brush's reach, from which the strips' margin is made: ``strip_margin``), and no
    jump as the cell size changes."""
    p = DropletParams(brush_radius=brush)
    run = p.slope_cells(cell)
    brush_cells = p.brush_cells(cell)
    assert 1.0 <= run <= brush_cells
    if brush_cells == 2.5:
        assert run == 2.0  # half-way in the blend
    if brush_cells <= 2.0:
        assert run == 1.0
    if brush_cells >= 3.0:
        assert run == brush_cells
    near = p.slope_cells(cell * (1.0 + nudge))
    assert abs(near - run) <= 2.0 * abs(brush_cells - p.brush_cells(cell * (1.0 + nudge)))
    assert p.kernel((50, 60), cell).slope_run == run


def test_the_default_brush_reads_the_slope_over_45_m():
    """The default preset's 45 m brush: one step on 30 m cells (as before), 45 m on 15
    and 7.5 m cells, 30 m (its 8-cell cap) on 3.75 m cells; there the run changes
    where the droplets dig, on 30 m cells nothing."""
    from simcore.formats.presets import find_preset
    from simcore.generators.noise import upland_terrain
    from simcore.processes import droplets as D
    p = find_preset("default").params["droplets"]
    assert p.brush_radius == 45.0
    assert DropletParams().kernel((50, 60), 1.0).slope_run == 1.0  # the article
    assert p.slope_cells(30.0) == 1.0
    assert p.slope_cells(15.0) * 15.0 == pytest.approx(45.0)
    assert p.slope_cells(7.5) * 7.5 == pytest.approx(45.0)
    assert p.slope_cells(3.75) == 8.0
    for cell in (30.0, 3.75):
        out = []
        for run in (None, 1.0):
            t = Terrain.from_heights(upland_terrain(96, seed=5, cell_size=cell), cell)
            k = p.kernel(t.shape, cell)
            k = k if run is None else k._replace(slope_run=run)
            D._run_batch(2, 0, 256, k, np.empty(0), D.strip_margin(k.radius), t.height(),
                         t.bedrock, t.sediment, t.eroded, t.deposited, t.erodibility, 1)
            out.append(t.bedrock)
        assert np.array_equal(*out) == (cell == 30.0)


def test_same_world_at_two_resolutions_erodes_alike():
    """The same world at 128^2 (cell 2) and as its 2x2 block mean at 64^2 (cell 4), the
    same rain per area: the height changes correlate and the eroded volumes agree."""
    from simcore.analysis.landforms import block_mean, correlation
    from simcore.generators.noise import upland_terrain
    fine_h = upland_terrain(128, seed=3, cell_size=2.0)
    coarse_h = block_mean(fine_h)
    params = {"droplets": DropletParams(Kq=40.0, Kd=0.01, Kw=0.005, brush_radius=6.0)}
    fine = Terrain.from_heights(fine_h, 2.0)
    coarse = Terrain.from_heights(coarse_h, 4.0)
    Simulation(fine, params, seed=2, particles=30000).run()
    Simulation(coarse, params, seed=2, particles=30000).run()
    dh_fine = fine.world_height() - fine_h
    dh_coarse = coarse.world_height() - coarse_h
    assert correlation(block_mean(dh_fine), dh_coarse) >= 0.7
    ratio = np.maximum(-dh_fine, 0).sum() * 4.0 / (np.maximum(-dh_coarse, 0).sum() * 16.0)
    assert 0.7 <= ratio <= 1.3


params_strategy = st.builds(
    DropletParams,
    Kq=st.floats(0, 1000), Kw=st.floats(0, 1), Kr=st.floats(0, 1), Kd=st.floats(0, 1),
    Ki=st.floats(0, 1), min_slope=st.floats(0, 10), gravity=st.floats(0, 1000),
    brush_radius=st.floats(1, 4), max_path_factor=st.floats(0.1, 8),
    batch=st.integers(1, 64))


@given(heights=arrays(np.float64, st.tuples(st.integers(3, 20), st.integers(3, 20)),
                      elements=st.floats(-1e4, 1e4)),
       params=params_strategy, seed=st.integers(0, 2**63 - 1))
def test_random_terrains_and_parameters_never_give_nan(heights, params, seed):
    t, _ = run(heights, 64, seed=seed, params=params)
    for name, arr in t.arrays().items():
        assert np.all(np.isfinite(arr)), name
    assert np.isfinite(t.outflow) and t.outflow >= 0
    assert t.sediment.min() >= 0
    tol = 1e-9 * (np.abs(heights).sum() + 1)
    assert abs((heights.sum() - t.total_material()) - t.outflow) < tol


@given(side=st.integers(16, 48), cell=st.floats(0.01, 100.0), seed=st.integers(0, 2**31),
       Kq=st.floats(0.1, 1e6), Kw=st.floats(1e-5, 0.004), Kr=st.floats(0.01, 1.0),
       Kd=st.floats(0.0005, 0.05), Ki=st.floats(0.0, 1.0), min_slope=st.floats(0.001, 1.0),
       brush=st.floats(0.1, 100.0), path=st.floats(0.5, 8.0))
@settings(max_examples=40, deadline=None)
def test_droplets_that_die_pile_no_tower_above_the_ground_around(side, cell, seed, Kq, Kw,
                                                                 Kr, Kd, Ki, min_slope,
                                                                 brush, path):
    """Droplets that run out of steps lay their load down where it can stay (a level
    fill of the ground within their brush when the article's 4 cells would rise above
    it): at any cell size, capacity, brush and path length, no cell rises above the
    start's highest point (+5% of the relief). The article's deposit on the 4 cells
    piled towers of up to 55x the relief here. Evaporation and deposition rates span
    the shipped presets' (Kw <= 0.004, Kd <= 0.05 per world unit): with a droplet that
    dries up within a few cells and drops all its load at once (Kd near 1), the
    article's mid-path deposit can still raise a bump above the start (+16% of the
    relief in one case)."""
    rng = np.random.default_rng(seed)
    z = np.cumsum(np.cumsum(rng.standard_normal((side, side)), 0), 1)
    z = (z - z.min()) / np.ptp(z) * side * cell * 0.2
    params = DropletParams(Kq=Kq, Kw=Kw, Kr=Kr, Kd=Kd, Ki=Ki, min_slope=min_slope,
                           brush_radius=brush, max_path_factor=path)
    t = Terrain.from_heights(z, cell)
    Simulation(t, {"droplets": params}, seed=seed, particles=1500).run()
    h = t.height() * cell
    assert h.max() <= z.max() + 0.05 * np.ptp(z)


def test_rain_map_decides_where_droplets_start():
    h = tilted(rows=40, cols=60, slope=0.3).T.copy()  # (60, 40): rises with row index
    rain = np.zeros_like(h)
    rain[:, :20] = 1.0  # rain only on the left half (columns 0..19)
    t, _ = run(h, 3000, rain=rain)
    assert t.eroded[:, :18].sum() > 0
    # droplets run downhill (towards row 0), never across to the dry columns: only the
    # wall of the channel cut along the rain's edge wears back a few cells
    assert t.eroded[:, 30:].sum() == 0 and t.deposited[:, 30:].sum() == 0
    assert t.eroded[:, 20:].sum() < 0.1 * t.eroded[:, :20].sum()


@pytest.mark.parametrize("threads", [3, 8])
def test_strips_give_the_same_result_on_more_threads_than_cores(threads):
    """The strips' passes run as soon as their neighbours allow (simcore.kernels.parallel), in
    an order that changes from run to run with more threads than cores; the result
    must not (12 strips, brush radius 3: 2-cell margins)."""
    from simcore.generators.noise import fractal_terrain
    from simcore.processes.droplets import _run_batch, strip_margin
    h = fractal_terrain(384, seed=4, relief=48.0)[:, :96].copy()
    params = DropletParams(batch=6000)
    results = []
    for n in (1, threads, threads):
        t = Terrain.from_heights(h, 1.0, world_units=False)
        lost, steps = _run_batch(9, 0, params.batch, params.kernel(t.shape, 1.0),
                                 rain_cdf(t.rain), strip_margin(params.brush_cells(1.0)),
                                 t.height(), t.bedrock, t.sediment, t.eroded, t.deposited,
                                 t.erodibility, n)
        results.append((lost, steps, t))
    (lost1, steps1, one), *others = results
    assert steps1 > 6000 * 10
    for lost, steps, other in others:
        assert (lost, steps) == (lost1, steps1)
        for name, arr in one.arrays().items():
            assert np.array_equal(arr, getattr(other, name)), name


@pytest.mark.parametrize("count", [5, 63, 300])
def test_strip_passes_on_one_thread_are_the_threads_schedule(count, monkeypatch):
    """Small batches and one thread run the strips' passes in one numba loop
    (_run_passes); it makes, bit for bit, what the threads' schedule makes."""
    from simcore.processes import droplets as D
    h = fractal_terrain(160, seed=4) * 40.0
    out = []
    for serial in (True, False):
        monkeypatch.setattr(D, "SERIAL_BELOW", 10**9 if serial else 0)
        t = Terrain.from_heights(h, world_units=False)
        height = t.height()
        p = DropletParams(brush_radius=3.0)
        lost, steps = D._run_batch(5, 0, count, p.kernel(t.shape, 1.0), np.empty(0),
                                   D.strip_margin(p.brush_cells(1.0)), height, t.bedrock,
                                   t.sediment, t.eroded, t.deposited, t.erodibility,
                                   threads=1 if serial else 2)
        out.append((lost, steps, height, t.bedrock, t.sediment, t.eroded, t.deposited))
    assert out[0][1] > count  # the droplets walked
    assert out[0][0] == out[1][0] and out[0][1] == out[1][1]
    for a, b in zip(out[0][2:], out[1][2:]):
        np.testing.assert_array_equal(a, b)
