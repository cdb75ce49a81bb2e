import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcore.engine.simulation import PROCESSES, Simulation
from simcore.kernels import parallel
from simcore.processes.thermal import ThermalParams, _limited, run_batch
from simcore.terrain import Terrain

N = 40


def run(t, passes, params, seed=0):
    height = t.height()
    n = run_batch(t, params, seed, 0, passes, height)
    assert n >= passes * height.size and n % height.size == 0
    assert np.array_equal(height, t.bedrock + t.sediment), "height kept in step"


def max_loose_slope(t):
    """Steepest slope (height difference / centre distance) between 8-neighbours whose
    higher cell holds sediment."""
    h, s = t.height(), t.sediment
    worst = 0.0
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        sl = (slice(dr, None), slice(max(dc, 0), h.shape[1] + min(dc, 0)))
        sr = (slice(0, h.shape[0] - dr), slice(max(-dc, 0), h.shape[1] - max(dc, 0)))
        diff = h[sl] - h[sr]
        loose = np.where(diff > 0, s[sl], s[sr]) > 1e-9
        if loose.any():
            worst = max(worst, float(np.abs(diff)[loose].max()) / math.hypot(dr, dc))
    return worst


def cliff():
    """A 20-cell high wall of loose material on flat bedrock."""
    sed = np.zeros((N, N))
    sed[:, :15] = 20.0
    return Terrain.from_heights(np.zeros((N, N)), world_units=False, sediment=sed)


def test_registered_after_wind():
    names = list(PROCESSES)
    assert names.index("snowball") < names.index("wind") < names.index("thermal")
    assert PROCESSES["thermal"].params_type is ThermalParams


@pytest.mark.parametrize("angle", [20.0, 33.0, 45.0])
def test_cliff_of_loose_material_relaxes_to_the_talus_angle(angle):
    t = cliff()
    p = ThermalParams(talus_angle=angle, weathering=0.0)
    total0 = t.total_material()
    run(t, 3000, p)
    talus = math.tan(math.radians(angle))
    slope = max_loose_slope(t)
    assert slope <= talus * 1.01 + 1e-6, "no loose slope steeper than the talus"
    assert slope >= talus * 0.9, "relaxes *to* the angle, not flatter"
    # the profile is a straight ramp at the talus angle where the cliff was
    profile = t.height()[N // 2]
    ramp = np.diff(profile)
    steep = ramp[np.abs(ramp) > 1e-3][1:-1]  # the ramp without its top and toe cells
    assert steep.size >= 3
    assert np.abs(np.abs(steep) - talus).max() < 0.15 * talus + 0.02
    assert np.array_equal(t.bedrock, np.zeros((N, N))), "bedrock never moves"
    assert abs(t.total_material() - total0) < 1e-10 * total0
    assert t.outflow == 0.0


def test_bedrock_obstacle_stays_put_and_weathers_only_down():
    bed = np.zeros((N, N))
    bed[15:25, 15:25] = 12.0  # a rock block with a loose pile against it
    sed = np.zeros((N, N))
    sed[10:30, 5:15] = 8.0
    t = Terrain.from_heights(bed, world_units=False, sediment=sed)
    total0 = t.total_material()
    prev = t.bedrock.copy()
    for _ in range(20):
        run(t, 10, ThermalParams(weathering=0.01, rock_angle=90.0))
        assert np.all(t.bedrock <= prev)
        prev = t.bedrock.copy()
    assert (t.bedrock < bed).any(), "bare rock weathers"
    # weathering is the only change to rock: at most 200 x 0.01 per cell
    assert (bed - t.bedrock).max() <= 200 * 0.01 + 1e-9
    assert abs(t.total_material() - total0) < 1e-10 * total0
    assert t.sediment.min() >= 0
    frozen = Terrain.from_heights(bed, world_units=False, sediment=sed)
    run(frozen, 200, ThermalParams(weathering=0.0, rock_angle=90.0))
    assert np.array_equal(frozen.bedrock, bed), "without weathering or slides rock stays"


def test_buried_rock_weathers_less_than_bare_rock():
    sed = np.zeros((N, N))
    sed[:, N // 2:] = 2.0
    t = Terrain.from_heights(np.zeros((N, N)), world_units=False, sediment=sed)
    run(t, 1, ThermalParams(weathering=0.01, soil_depth=0.5, relax_sweeps=0))
    bare = -t.bedrock[:, 2].mean()
    buried = -t.bedrock[:, -3].mean()
    assert buried == pytest.approx(bare * math.exp(-2.0 / 0.5), rel=1e-6)


def test_deterministic_and_independent_of_thread_count(hills):
    sed = np.full(hills.shape, 2.0)
    results = []
    old = parallel.threads()
    try:
        for threads in (1, parallel.most_threads(), 1):
            parallel.set_threads(threads)
            t = Terrain.from_heights(hills, world_units=False, sediment=sed)
            run(t, 50, ThermalParams(weathering=0.002))
            results.append(t)
    finally:
        parallel.set_threads(old)
    for other in results[1:]:
        for name in ("bedrock", "sediment", "eroded", "deposited"):
            assert np.array_equal(getattr(results[0], name), getattr(other, name))


def test_runs_inside_a_simulation_with_wind(hills):
    from simcore.processes.wind import WindParams
    t = Terrain.from_heights(hills, world_units=False, sediment=np.full(hills.shape, 1.0))
    total0 = t.total_material()
    Simulation(t, {"thermal": ThermalParams(batch=2), "wind": WindParams(batch=50)},
               seed=1, particles=520).run()
    assert abs((total0 - t.total_material()) - t.outflow) < 1e-10 * total0


params_strategy = st.builds(
    ThermalParams, talus_angle=st.floats(0, 89), weathering=st.floats(0, 1),
    soil_depth=st.floats(0.001, 1000), settling=st.floats(0, 1),
    rock_angle=st.floats(1, 90), creep=st.floats(0, 10), relax_sweeps=st.integers(0, 8),
    batch=st.integers(1, 8))


def _assert_sound(t, heights, sed, total0):
    """Finite arrays, no negative sediment, bedrock never raised, mass kept."""
    for name, arr in t.arrays().items():
        assert np.all(np.isfinite(arr)), name
    assert t.sediment.min() >= 0
    assert np.all(t.bedrock <= np.asarray(heights, dtype=np.float64))
    tol = 1e-9 * (np.abs(heights).sum() + sed.sum() + 1)
    assert abs(t.total_material() - total0) < tol


@given(heights=arrays(np.float64, st.tuples(st.integers(3, 16), st.integers(3, 16)),
                      elements=st.floats(-1e3, 1e3)),
       data=st.data(), params=params_strategy, passes=st.integers(1, 20))
def test_random_terrains_and_parameters_never_give_nan(heights, data, params, passes):
    sed = data.draw(arrays(np.float64, heights.shape, elements=st.floats(0, 100)))
    t = Terrain.from_heights(heights, world_units=False, sediment=sed)
    total0 = t.total_material()
    run(t, passes, params)
    _assert_sound(t, heights, sed, total0)


def test_bedrock_steeper_than_rock_angle_gives_way_and_comes_to_rest():
    """A 30-cell rock wall (a landslide scarp) fails back to the critical angle; what
    breaks loose rests at its talus angle at the foot; mass is kept."""
    bed = np.zeros((N, N))
    bed[:, :20] = 30.0
    t = Terrain.from_heights(bed, world_units=False)
    total0 = t.total_material()
    p = ThermalParams(talus_angle=33.0, rock_angle=40.0, weathering=0.0)
    run(t, 40, p)
    rock = math.tan(math.radians(40.0))
    rock_face = t.bedrock[N // 2, :-1] - t.height()[N // 2, 1:]  # rock over the next surface
    assert rock_face.max() <= rock * 1.02 + 0.02, "no rock above its angle (talus buttresses)"
    assert (t.bedrock < bed).any() and t.sediment.sum() > 0, "the wall slid"
    assert max_loose_slope(t) <= math.tan(math.radians(33.0)) * 1.02 + 0.02
    assert abs(t.total_material() - total0) < 1e-10 * total0
    assert t.eroded.sum() > 0 and t.deposited.sum() > 0


def test_rock_between_talus_and_rock_angle_stands_bare():
    """A 35 degree rock ramp: too steep for loose material, gentle enough for rock."""
    ramp = np.tile(np.arange(N, dtype=float)[::-1] * math.tan(math.radians(35.0)), (N, 1))
    sed = np.zeros((N, N))
    sed[:, 5] = 0.5  # a little loose material on the ramp slides off it
    t = Terrain.from_heights(ramp, world_units=False, sediment=sed)
    run(t, 5, ThermalParams(talus_angle=33.0, rock_angle=40.0, weathering=0.0))
    assert np.array_equal(t.bedrock, ramp), "rock below its critical angle never fails"
    assert t.sediment[:, 5].max() < 1e-9, "loose material does not rest at 35 degrees"
    assert t.sediment[:, -1].sum() > 0, "it gathered at the foot"


def test_rock_angle_90_and_hard_rock_never_fail():
    bed = np.zeros((N, N))
    bed[:, :20] = 30.0
    t = Terrain.from_heights(bed, world_units=False)
    run(t, 5, ThermalParams(rock_angle=90.0, weathering=0.0))
    assert np.array_equal(t.bedrock, bed)
    hard = Terrain.from_heights(bed, world_units=False, erodibility=np.zeros((N, N)))
    run(hard, 5, ThermalParams(rock_angle=40.0, weathering=0.0))
    assert np.array_equal(hard.bedrock, bed)


def soil_ridge(n, cell):
    """A gentle soil ridge on flat rock (world heights, 20 world units high)."""
    x = (np.arange(n) + 0.5) * cell - n * cell / 2
    profile = np.maximum(20.0 - np.abs(x) * 0.4, 0.0)  # 22 degree flanks
    return np.tile(profile, (n, 1))


def test_creep_rounds_a_ridge_and_keeps_its_mass():
    ridge = soil_ridge(N, 1.0)
    t = Terrain.from_heights(np.zeros((N, N)), world_units=False, sediment=ridge)
    total0 = t.total_material()
    run(t, 20, ThermalParams(creep=0.0, weathering=0.0))
    assert np.array_equal(t.sediment, ridge), "below the talus angle nothing moves"
    run(t, 20, ThermalParams(creep=0.1, weathering=0.0))
    crest = t.sediment[:, N // 2 - 1:N // 2 + 1].max()
    assert crest < 20.0 - 0.5, "creep lowers the crest"
    assert t.sediment[:, 0].max() < 1e-9 or t.sediment[:, 0].max() < ridge[:, 0].max() + 1
    assert abs(t.total_material() - total0) < 1e-10 * total0


def test_creep_is_the_same_per_pass_at_any_cell_size():
    """Creep diffusivity is in world units^2 per pass: the same world at cells of 1
    and 2 world units loses the same crest height (2x2 block means compared)."""
    fine_world = soil_ridge(2 * N, 1.0)
    coarse_world = fine_world.reshape(N, 2, N, 2).mean(axis=(1, 3))
    p = ThermalParams(creep=0.3, weathering=0.0)
    fine = Terrain.from_heights(np.zeros((2 * N, 2 * N)), 1.0, sediment=fine_world)
    coarse = Terrain.from_heights(np.zeros((N, N)), 2.0, sediment=coarse_world / 2.0)
    run(fine, 30, p)
    run(coarse, 30, p)
    dh_fine = (fine.world_height() - fine_world).reshape(N, 2, N, 2).mean(axis=(1, 3))
    dh_coarse = coarse.world_height() - coarse_world
    assert np.corrcoef(dh_fine.ravel(), dh_coarse.ravel())[0, 1] > 0.95
    assert dh_coarse.min() == pytest.approx(dh_fine.min(), rel=0.2)


def test_weathering_and_soil_depth_are_world_lengths():
    t = Terrain.from_heights(np.zeros((N, N)), 30.0)
    run(t, 1, ThermalParams(weathering=0.3, soil_depth=1.0, relax_sweeps=0))
    assert -t.bedrock * 30.0 == pytest.approx(np.full((N, N), 0.3))


def test_weathering_turns_rock_into_soil_in_place_and_books_both():
    """Soil production moves material only from bedrock to sediment of the same cell
    (kernels.transfer without writing height during the sweep): the surface stays, the
    soil made is the rock worn, and the records, which follow the surface, book as much
    eroded as deposited (the first pass's soil; later passes wear rock under a deposit)."""
    bed = np.tile(np.linspace(0.0, 3.0, N), (N, 1))  # 4 degrees: nothing slides
    t = Terrain.from_heights(bed, world_units=False)
    h0 = t.height()
    run(t, 3, ThermalParams(weathering=0.01, relax_sweeps=0))
    assert np.allclose(t.height(), h0, rtol=0, atol=1e-14)
    assert np.allclose(t.sediment, bed - t.bedrock, rtol=0, atol=1e-14)
    assert t.sediment.min() > 0.02, "three passes of soil"
    assert np.array_equal(t.eroded, t.deposited)
    assert np.allclose(t.deposited, 0.01, rtol=1e-12), "the first pass's soil"


def test_creep_on_centimetre_cells_is_a_bounded_number_of_sweeps():
    """A preset tuned for 30 m cells (creep 25 m² a pass) on Blender's default 2 m grid
    (cells of 3 cm): the explicit creep asked for ~800k sweeps a pass, so Erode never
    finished. Creep is one implicit solve a pass at any cell size, and the slope goes
    down."""
    n, cell = 32, 2.0 / 63
    yy, xx = np.mgrid[0:n, 0:n]
    heights = 0.01 * np.sin(xx / 3.0) * np.cos(yy / 4.0)  # world units, gentle
    t = Terrain.from_heights(heights, cell)
    params = ThermalParams(creep=25.0, talus_angle=89.0, rock_angle=90.0)
    relief0 = np.ptp(t.height())
    updates = run_batch(t, params, 1, 0, 1)
    assert updates <= (2 + params.relax_sweeps) * n * n
    assert np.ptp(t.height()) < relief0, "creep still smooths"


@pytest.mark.parametrize("cell", [30.0, 1.0])
def test_a_pass_creeps_what_is_asked_at_any_cell_size(cell):
    """A gentle 600 m wave under creep D (world units² a pass) decays by exp(-D k²) a
    pass, the linear diffusion its slopes are well inside of: at 30 m cells (20 cells a
    wavelength) and at 1 m cells (D is 25 cells² there; the explicit creep, capped at
    64 sub-steps, did 8% of it)."""
    creep, wavelength, amplitude = 25.0, 600.0, 5.0
    cols = round(2 * wavelength / cell)
    x = (np.arange(cols) + 0.5) * cell
    wave = np.cos(2 * np.pi * x / wavelength)
    world = np.tile(100.0 + amplitude * wave, (40, 1))
    t = Terrain.from_heights(np.zeros_like(world), cell, sediment=world / cell)
    total0 = t.total_material()
    run_batch(t, ThermalParams(creep=creep, weathering=0.0), 0, 0, 1)
    row = t.world_height()[20] - 100.0
    kept = (row @ wave) / (wave @ wave) / amplitude
    expected = np.exp(-creep * (2 * np.pi / wavelength) ** 2)
    assert 1.0 - kept == pytest.approx(1.0 - expected, rel=0.02)
    assert abs(t.total_material() - total0) < 1e-12 * total0


def test_creep_per_unit_of_rain_does_not_depend_on_the_map_extent():
    """A round rains its particles over the whole map, so a map twice as wide needs 4x
    the rounds for the same rain per area; a thermal pass then creeps a quarter as much
    (simulation.rain_share). The same hills as a 3.84 km map and inside a 7.68 km one
    (its mirror images around it, which a no-flux edge cannot tell apart) creep alike;
    with one full pass a round the wider map crept 4x as much."""
    from simcore.engine.simulation import REFERENCE_AREA, rain_share

    cell, n = 60.0, 64
    y, x = np.mgrid[0:n, 0:n] * cell
    tile = 300.0 + 200.0 * np.sin(x / 500.0) * np.cos(y / 700.0)
    wide = np.block([[tile, tile[:, ::-1]], [tile[::-1], tile[::-1, ::-1]]])
    params = {"thermal": ThermalParams(creep=2000.0, weathering=0.0)}
    per_area = 8 / REFERENCE_AREA  # 8 rounds on the 3.84 km map
    change = []
    for h in (tile, wide):
        t = Terrain.from_heights(h, cell)
        Simulation(t, params, particles=round(per_area * h.size * cell ** 2)).run()
        change.append(t.world_height()[:n, :n] - tile)
    assert np.abs(change[0]).max() > 1.0, "the hills crept (metres)"
    assert np.corrcoef(change[0].ravel(), change[1].ravel())[0, 1] > 0.95
    ratio = np.abs(change[1]).sum() / np.abs(change[0]).sum()
    assert 0.8 < ratio < 1.25, ratio
    assert rain_share(Terrain.from_heights(tile, cell)) == 1.0
    assert rain_share(Terrain.from_heights(wide, cell)) == 0.25


def test_a_long_loose_wall_settles_in_one_pass_as_endless_sweeps_would():
    """An 80-cell wall of loose material: on one grid its ramp flattens from the foot
    up a cell a sweep (over a thousand sweeps); relaxed on coarse grids first
    (multigrid) one pass of at most ``relax_sweeps`` ends at the same ramp."""
    from simcore.processes import thermal

    rows, cols = 64, 384
    sed = np.zeros((rows, cols))
    sed[:, :128] = 80.0

    def wall():
        return Terrain.from_heights(np.zeros((rows, cols)), world_units=False, sediment=sed)

    params = ThermalParams(talus_angle=33.0, weathering=0.0)
    t = wall()
    total0 = t.total_material()
    updates = run_batch(t, params, 0, 0, 1)
    assert updates <= (1 + params.relax_sweeps) * rows * cols
    old = thermal.MULTIGRID_CELLS
    try:
        thermal.MULTIGRID_CELLS = 10 ** 12  # one grid only
        ref = wall()
        sweeps = run_batch(ref, params.replace(relax_sweeps=100_000), 0, 0, 1) // sed.size
    finally:
        thermal.MULTIGRID_CELLS = old
    assert sweeps > 500, "the long way round"
    talus = math.tan(math.radians(33.0))
    assert max_loose_slope(t) <= talus * 1.01 + 1e-6
    assert np.abs(t.height() - ref.height()).max() < 0.5, "the same ramp (cell units)"
    assert np.array_equal(t.bedrock, np.zeros((rows, cols)))
    assert abs(t.total_material() - total0) < 1e-12 * total0


@given(heights=arrays(np.float64, st.tuples(st.integers(8, 24), st.integers(8, 24)),
                      elements=st.floats(-100, 100)),
       data=st.data(), params=params_strategy, passes=st.integers(1, 4))
def test_relaxation_on_coarse_grids_keeps_mass_and_signs(heights, data, params, passes):
    """The coarse grids (forced down to 8x8 cells here) move material mass-exactly,
    leave no negative sediment and never raise bedrock."""
    from simcore.processes import thermal

    sed = data.draw(arrays(np.float64, heights.shape, elements=st.floats(0, 50)))
    ero = data.draw(arrays(np.float64, heights.shape, elements=st.sampled_from([0.0, 0.5, 1.0])))
    t = Terrain.from_heights(heights, world_units=False, sediment=sed, erodibility=ero)
    total0 = t.total_material()
    old = thermal.MULTIGRID_CELLS
    try:
        thermal.MULTIGRID_CELLS = 64
        run(t, passes, params)
    finally:
        thermal.MULTIGRID_CELLS = old
    _assert_sound(t, heights, sed, total0)


_change = st.floats(-100.0, 100.0, allow_nan=False)


@given(lower=_change, mid=_change, upper=_change, edge=st.sampled_from(["", "first", "last"]))
def test_a_coarse_change_comes_back_without_new_highs_or_lows(lower, mid, upper, edge):
    """The multigrid carries a coarse block's change to its fine cells as a plane (fine
    cells a quarter of a coarse cell from the centre): they stay between the block's
    change and its neighbours', also at the map's edge (a one-sided slope there dug a
    trench along the edge under a block that had not changed)."""
    slope = _limited(lower, mid, upper, edge == "first", edge == "last")
    near = [mid] + ([] if edge == "first" else [lower]) + ([] if edge == "last" else [upper])
    for fine in (mid - slope / 4, mid + slope / 4):
        assert min(near) - 1e-9 <= fine <= max(near) + 1e-9


@given(st.integers(1, 300), st.integers(1, 8))
def test_sweep_tasks_that_may_run_together_never_touch_the_same_band(bands, threads):
    """Each band is in one task; an odd task waits for exactly the even tasks holding
    the bands next to its own, so any even task it may run beside is a band away."""
    from simcore.processes.thermal import _sweep_tasks
    tasks, needs, frees = _sweep_tasks(bands, threads)
    assert sorted(int(b) for ids in tasks for b in ids) == list(range(bands))
    for t, ids in enumerate(tasks):
        assert len({int(b) % 2 for b in ids}) == 1, "one parity a task"
        odd = int(ids[0]) % 2 == 1
        waits = {e for e in range(len(tasks)) if t in frees[e]}
        assert needs[t] == len(waits) and (needs[t] > 0) == odd
        for e, other in enumerate(tasks):
            if odd and int(other[0]) % 2 == 0:
                near = any(abs(int(a) - int(b)) < 2 for a in ids for b in other)
                assert near == (e in waits), (t, e)


def _talus_sweep_reference(k, height, bedrock, sediment, eroded, deposited, erodibility,
                           critical=None):
    """The parallel talus sweep (``_send`` then ``_receive``) in plain Python: every
    cell weathers, loosens rock above its critical slope (``critical``'s, else from its
    erodibility) and sends loose material down its talus in proportion to the excess,
    all against the surface before the sweep. Returns the new surface, each cell's
    share and each row's largest excess."""
    rows, cols = height.shape
    share = np.zeros_like(height)
    excess = np.zeros(rows)
    for r in range(rows):
        for c in range(cols):
            near = [(rr, cc, math.sqrt(2.0) if rr != r and cc != c else 1.0)
                    for rr in range(max(r - 1, 0), min(r + 2, rows))
                    for cc in range(max(c - 1, 0), min(c + 2, cols))]
            if k.weathering > 0.0:
                w = k.weathering * erodibility[r, c] * math.exp(-sediment[r, c] / k.soil_depth)
                _book(r, c, 0.0, w, w, bedrock, sediment, eroded, deposited)
            e = min(erodibility[r, c], 1.0)
            crit = k.rock / e if e > 0.0 else math.inf
            if critical is not None:
                crit = critical[r, c]
            rmax = max([0.0] + [bedrock[r, c] - height[m, n] - crit * d for m, n, d in near])
            if rmax > 0.0:
                excess[r] = max(excess[r], rmax)
                loose = 0.5 * rmax * e
                _book(r, c, 0.0, loose, loose, bedrock, sediment, eroded, deposited)
            ex = [max(height[r, c] - height[m, n] - k.talus * d, 0.0) for m, n, d in near]
            if sediment[r, c] > 1e-12:
                excess[r] = max(excess[r], max(ex))
            want = min(sediment[r, c], k.settling * 0.5 * max(ex))
            share[r, c] = want / sum(ex) if sum(ex) > 0.0 else 0.0
    new = np.zeros_like(height)
    for r in range(rows):
        for c in range(cols):
            gain = out = 0.0
            for m in range(max(r - 1, 0), min(r + 2, rows)):
                for n in range(max(c - 1, 0), min(c + 2, cols)):
                    d = math.sqrt(2.0) if m != r and n != c else 1.0
                    up = height[m, n] - height[r, c]
                    if up > 0.0:
                        gain += share[m, n] * max(up - k.talus * d, 0.0)
                    elif up < 0.0:
                        out += share[r, c] * max(-up - k.talus * d, 0.0)
            from_sed = min(out, sediment[r, c])
            _book(r, c, from_sed, out - from_sed, gain, bedrock, sediment, eroded, deposited)
            new[r, c] = bedrock[r, c] + sediment[r, c]
    return new, share, excess


def _critical_slopes(k, erodibility):
    """Each cell's critical rock slope without a rock column's angles, in plain Python:
    tan(rock_angle) over the erodibility (at most 1), inf where that is 0."""
    return np.array([[k.rock / min(e, 1.0) if e > 0.0 else math.inf for e in row]
                     for row in erodibility]).reshape(erodibility.shape)


def _book(r, c, from_sed, from_rock, lay, bedrock, sediment, eroded, deposited):
    """``kernels.transfer`` at one cell, in plain Python."""
    sediment[r, c] = sediment[r, c] - from_sed + lay
    bedrock[r, c] -= from_rock
    taken = min(from_sed + from_rock, deposited[r, c])
    deposited[r, c] = deposited[r, c] - taken + lay
    eroded[r, c] += from_sed + from_rock - taken


@given(heights=arrays(np.float64, st.tuples(st.integers(1, 9), st.integers(1, 9)),
                      elements=st.one_of(st.sampled_from([0.0, 0.0, 0.0, 2.0]),
                                         st.floats(-20, 20))),
       data=st.data(), params=params_strategy, bands=st.integers(1, 4),
       per_cell=st.booleans())
def test_the_parallel_talus_sweep_is_the_plain_rule_at_every_cell(heights, data, params,
                                                                   bands, per_cell):
    """The sweep that opens a pass (weathering, loosening, one talus step of every cell
    against the old surface) does at every cell, edges and corners too, what the plain
    rule does, in any row bands, with critical slopes from the erodibility or per cell
    (a rock column's layers); cells that neither send nor receive (a short cut) keep
    their material."""
    from simcore.processes import thermal

    sed = data.draw(arrays(np.float64, heights.shape,
                           elements=st.sampled_from([0.0, 1e-13, 0.3, 2.0, 15.0])))
    ero = data.draw(arrays(np.float64, heights.shape,
                           elements=st.sampled_from([0.0, 0.5, 1.0, 2.0])))
    k = thermal._kernel_params(params, 1.0)
    grids = [heights + sed, heights.copy(), sed.copy(), np.zeros_like(sed),
             data.draw(arrays(np.float64, heights.shape, elements=st.floats(0, 5))), ero]
    critical = (data.draw(arrays(np.float64, heights.shape,
                                 elements=st.sampled_from([0.0, 0.3, 1.0, 4.0, math.inf])))
                if per_cell else None)
    want = [g.copy() for g in grids]
    expect, expect_share, expect_excess = _talus_sweep_reference(k, *want, critical)
    share, new, excess = np.zeros_like(sed), np.full_like(sed, np.nan), np.zeros(len(sed))
    spans = parallel.chunks(len(sed), bands)
    for first, last in reversed(spans):  # bands are independent: any order
        thermal._send(k, first, last, *grids,
                      _critical_slopes(k, ero) if critical is None else critical, share, excess)
    for first, last in spans:
        thermal._receive(k, first, last, *grids[:5], share, new)
    np.testing.assert_allclose(new, expect, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(share, expect_share, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(excess, expect_excess, rtol=1e-12, atol=1e-12)
    for got, ref in zip(grids[1:5], want[1:5]):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@given(heights=arrays(np.float64, st.tuples(st.integers(1, 7), st.integers(1, 7)),
                      elements=st.one_of(st.sampled_from([0.0, 1.0]), st.floats(-5, 5))),
       data=st.data(), params=params_strategy, split=st.integers(0, 7),
       per_cell=st.booleans())
def test_the_first_sweep_lists_exactly_the_cells_that_would_move(heights, data, params, split,
                                                                  per_cell):
    """The first sweep of a relaxation tests a row at a time on the vector units; it
    must list the same cells as the one-cell test the later sweeps use, edges and
    corners, bare rock, hard rock and loose ground alike, in any row bands, with
    critical slopes from the erodibility or per cell (a rock column's layers)."""
    from simcore.kernels.primitives import heap_pop, heap_push
    from simcore.processes import thermal

    sed = data.draw(arrays(np.float64, heights.shape,
                           elements=st.sampled_from([0.0, 1e-13, 0.5, 3.0])))
    ero = data.draw(arrays(np.float64, heights.shape,
                           elements=st.sampled_from([0.0, 0.3, 1.0, 2.0])))
    critical = (data.draw(arrays(np.float64, heights.shape,
                                 elements=st.sampled_from([0.0, 0.3, 1.0, 4.0, math.inf])))
                if per_cell else None)
    k = thermal._kernel_params(params, 1.0)
    if critical is None:
        critical = _critical_slopes(k, ero)
    rows, cols = heights.shape
    height = heights + sed
    want = {i for i in range(rows * cols)
            if thermal._unstable(k, i, rows, cols, height.reshape(-1), heights.reshape(-1),
                                 sed.reshape(-1), critical.reshape(-1))}
    got = set()
    queued = np.zeros(heights.shape, dtype=np.uint16)
    split = min(split, rows)
    for first, last in ((0, split), (split, rows)):
        keys, cells = np.empty(rows * cols), np.empty(rows * cols, dtype=np.int64)
        top = thermal._push_unstable(k, first, last, 5, queued, height, heights, sed,
                                     critical, keys, cells)
        # the same heap, entry for entry, as pushing the one-cell test's cells in order
        # (equal heights leave the heap in the order they were pushed)
        ref_keys, ref_cells, ref_top = np.empty(rows * cols), np.empty_like(cells), 0
        for i in range(first * cols, last * cols):
            if i in want:
                ref_top = heap_push(ref_keys, ref_cells, ref_top, -height.flat[i], i)
        assert top == ref_top
        assert np.array_equal(keys[:top], ref_keys[:top])
        assert np.array_equal(cells[:top], ref_cells[:top])
        while top > 0:
            _, i, top = heap_pop(keys, cells, top)
            assert first * cols <= i < last * cols
            got.add(int(i))
    assert got == want
    assert {int(i) for i in np.flatnonzero(queued == 5)} == want


@pytest.mark.parametrize("test", ["rock", "talus"])
@pytest.mark.parametrize("dr,dc", [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1),
                                   (1, 0), (1, 1)])
def test_the_first_sweep_tests_each_neighbour_at_its_distance(test, dr, dc):
    """A cell with one lower neighbour just past (or just within) its rock or talus
    slope at that neighbour's distance (1 or sqrt 2 cells) is listed (or not) by the
    first sweep's row test, as by the one-cell test."""
    from simcore.kernels.primitives import heap_pop
    from simcore.processes import thermal

    k = thermal._kernel_params(ThermalParams(talus_angle=33.0, rock_angle=40.0), 1.0)
    slope = k.rock if test == "rock" else k.talus
    for delta, moves in ((1e-6, True), (-1e-6, False)):
        bedrock, sed = np.ones((3, 5)), np.zeros((3, 5))  # a plain at height 1
        if test == "talus":
            bedrock[1, 2], sed[1, 2] = 0.0, 1.0  # loose; the rock under it cannot fail
        height = bedrock + sed
        height[1 + dr, 2 + dc] = 1.0 - slope * math.hypot(dr, dc) - delta
        bedrock[1 + dr, 2 + dc] = height[1 + dr, 2 + dc] - sed[1 + dr, 2 + dc]
        ero = np.ones((3, 5))
        queued = np.zeros((3, 5), dtype=np.uint16)
        keys, cells = np.empty(15), np.empty(15, dtype=np.int64)
        top = thermal._push_unstable(k, 0, 3, 3, queued, height, bedrock, sed,
                                     _critical_slopes(k, ero), keys, cells)
        listed = set()
        while top > 0:
            _, i, top = heap_pop(keys, cells, top)
            listed.add(int(i))
        assert (7 in listed) == moves
        assert thermal._unstable(k, 7, 3, 5, height.reshape(-1), bedrock.reshape(-1),
                                 sed.reshape(-1), _critical_slopes(k, ero).reshape(-1)) == moves


# --- a rock column's layers: per-cell critical slopes ---------------------------------

def _rock_excess(t, critical):
    """The largest excess of each cell's bedrock over its critical slope ``critical``
    (per cell) towards the surface of each of its 8 neighbours, and its steepest such
    slope (height difference over distance; 0 towards nothing lower)."""
    rows, cols = t.shape
    b, h = t.bedrock, t.height()
    excess = np.full(t.shape, -np.inf)
    slope = np.zeros(t.shape)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if dr == dc == 0:
                continue
            dist = math.hypot(dr, dc)
            near = np.full(t.shape, np.inf)  # the neighbour's surface (none: inf)
            near[max(-dr, 0):rows - max(dr, 0), max(-dc, 0):cols - max(dc, 0)] = \
                h[max(dr, 0):rows + min(dr, 0), max(dc, 0):cols + min(dc, 0)]
            excess = np.maximum(excess, b - near - critical * dist)
            slope = np.maximum(slope, np.where(np.isfinite(near), (b - near) / dist, 0.0))
    return excess, slope


def _layered_cone(threads):
    """A 68 degree cone of 64x64 cells cut through alternating hard (65 degrees) and
    soft (30 degrees) layers 6 cells thick, eroded by thermal alone for 10 rounds."""
    from simcore.rock import RockColumn

    n = 64
    y, x = np.mgrid[0:n, 0:n] - (n - 1) / 2
    cone = np.maximum(60.0 - 2.5 * np.hypot(x, y), 0.0)
    column = RockColumn.from_dict({"layers": [
        {"thickness": 6.0, "erodibility": 1.0, "rock_angle": 65.0},
        {"thickness": 6.0, "erodibility": 1.0, "rock_angle": 30.0}]})
    old = parallel.threads()
    try:
        parallel.set_threads(threads)
        t = Terrain.from_heights(cone, rock=column)
        Simulation(t, {"thermal": ThermalParams(talus_angle=25.0, weathering=0.0)},
                   particles=10).run()
    finally:
        parallel.set_threads(old)
    return t


def test_each_rock_layer_stands_at_its_own_critical_angle():
    """On a rock column whose layers have their own critical angles, no cell's bedrock
    ends steeper than its layer's angle towards any neighbour, the hard layer's
    outcrops stand steep and the soft one's gentle; on 1 or 2 threads alike."""
    from simcore.processes.thermal import TOLERANCE

    t = _layered_cone(2)
    layer = np.floor(t.rock_layer).astype(int)
    assert set(np.unique(layer)) == {0, 1}, "both layers crop out"
    critical = np.tan(np.radians([65.0, 30.0]))[layer]
    excess, slope = _rock_excess(t, critical)
    assert excess.max() <= TOLERANCE, "no rock steeper than its layer's angle"
    hard = np.median(slope[(layer == 0) & (slope > 0.05)])
    soft = np.median(slope[(layer == 1) & (slope > 0.05)])
    assert hard > math.tan(math.radians(50.0)) and soft < math.tan(math.radians(30.0))
    assert t.sediment.sum() > 0, "the cone shed rock"
    other = _layered_cone(1)
    for name in ("bedrock", "sediment", "eroded", "deposited", "rock_layer"):
        assert np.array_equal(getattr(t, name), getattr(other, name)), name


@pytest.mark.parametrize("creep", [0.0, 5.0])
def test_layers_at_the_process_angle_are_bit_identical_to_no_column(creep):
    """A column whose layers all take the process's own rock angle at erodibility 1
    goes through the per-layer rule (their angle over the erodibility map, hard and
    unbreakable cells too, multigrid included) and must give exactly what the same
    terrain gives without a column."""
    from simcore.rock import RockColumn

    n = 72  # >= MULTIGRID_CELLS: a coarse level
    rng = np.random.default_rng(3)
    heights = np.cumsum(np.cumsum(rng.normal(size=(n, n)), 0), 1) * 0.3
    heights[20:30, 20:40] += 25.0  # a block whose walls fail
    erodibility = rng.choice([0.0, 0.3, 1.0, 2.0], size=(n, n))
    params = ThermalParams(rock_angle=40.0, talus_angle=30.0, creep=creep, batch=2)
    column = RockColumn.from_dict({"layers": [
        {"thickness": 5.0, "erodibility": 1.0, "rock_angle": 40.0},
        {"thickness": 3.0, "erodibility": 1.0, "rock_angle": 40.0}], "dip": 20.0})
    results = []
    for rock in (None, column):
        t = Terrain.from_heights(heights, cell_size=2.0, rock=rock,
                                 erodibility=erodibility.copy(),
                                 sediment=np.full((n, n), 0.2))
        Simulation(t, {"thermal": params}, particles=6).run()
        results.append(t)
    for name in ("bedrock", "sediment", "eroded", "deposited"):
        assert np.array_equal(getattr(results[0], name), getattr(results[1], name)), name
    assert not np.array_equal(results[0].bedrock, heights / 2.0), "the rock moved"


def test_a_layers_angle_is_steepened_by_the_map_not_by_its_own_factor():
    """The critical slope of each cell: tan(rock_angle) over the erodibility (at most
    1) where its layer has no angle; where it has one, that angle's tangent over the
    erodibility without the layer's factor (inf at a factor 0 or 90 degrees)."""
    from simcore.processes import thermal

    rock = math.tan(math.radians(40.0))
    tan65 = math.tan(math.radians(65.0))
    #                 no angle, e 0.5 | 65 deg, factor 2, map 0.25 | factor 2, map 1
    #                 65, factor 0    | 90 deg, factor 1           | no angle, e 0
    erodibility = np.array([0.5, 0.5, 2.0, 0.0, 0.7, 0.0])
    layer = np.array([np.nan, tan65, tan65, tan65, math.inf, np.nan])
    factor = np.array([3.0, 2.0, 2.0, 0.0, 1.0, 1.0])
    out = np.empty(6)
    thermal._critical_grid(rock, 0, 6, erodibility, layer, factor, out)
    assert out.tolist() == [rock / 0.5, tan65 / 0.25, tan65, math.inf, math.inf, math.inf]
    thermal._critical_grid(rock, 0, 6, erodibility, np.empty(0), np.empty(0), out)
    assert out.tolist() == [rock / 0.5, rock / 0.5, rock, math.inf, rock / 0.7, math.inf]
