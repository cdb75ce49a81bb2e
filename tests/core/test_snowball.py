import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcore.engine.simulation import Simulation
from simcore.processes.snowball import (
    SnowballParams,
    _apply_change,
    blur_field,
    blur_width,
    box_shape,
    run_batch,
)
from simcore.terrain import Terrain


def old_blur(change, passes):
    """The blur of the article: ``passes`` 3x3 binomial passes over the whole grid,
    what would leave folding back onto the edge cells."""
    rows, cols = change.shape
    for _ in range(passes):
        out = np.zeros((rows + 2, cols + 2))
        for dy, wy in ((-1, 0.25), (0, 0.5), (1, 0.25)):
            for dx, wx in ((-1, 0.25), (0, 0.5), (1, 0.25)):
                out[1 + dy:1 + dy + rows, 1 + dx:1 + dx + cols] += (wy * wx) * change
        out[1, :] += out[0, :]
        out[-2, :] += out[-1, :]
        out[:, 1] += out[:, 0]
        out[:, -2] += out[:, -1]
        change = out[1:-1, 1:-1]
    return change


def test_blur_keeps_the_sum_and_smooths():
    rng = np.random.default_rng(1)
    change = rng.normal(size=(17, 23))
    h, a, passes = blur_width(SnowballParams(blur_radius=40.0), 15.0)
    out = blur_field(change, h, a, passes)
    assert np.isclose(out.sum(), change.sum(), rtol=0, atol=1e-9)
    assert out.std() < change.std()


@given(variance=st.floats(0.0, 400.0))
def test_the_widened_box_has_the_variance_asked_for(variance):
    """box_shape: non-negative weights, end weight in [0, 1], variance exact."""
    h, a = box_shape(variance)
    assert h >= 0 and 0.0 <= a <= 1.0
    i = np.arange(-h - 1, h + 2, dtype=float)
    w = np.ones(i.size)
    w[0] = w[-1] = a
    w /= w.sum()
    assert (w * i * i).sum() == pytest.approx(variance, rel=1e-9, abs=1e-12)


@given(field=arrays(np.float64, st.tuples(st.integers(1, 24), st.integers(1, 24)),
                    elements=st.floats(0.0, 1e3)),
       radius=st.floats(0.0, 200.0), cell=st.sampled_from([7.5, 15.0, 30.0]))
def test_blur_keeps_mass_and_sign_at_any_width(field, radius, cell):
    """Any width, any grid (even narrower than the blur): the sum is kept (closed edges
    fold back what would leave) and a field >= 0 stays >= 0 (non-negative weights)."""
    h, a, passes = blur_width(SnowballParams(blur_radius=radius), cell)
    out = blur_field(field, h, a, passes)
    assert out.shape == field.shape
    assert abs(out.sum() - field.sum()) <= 1e-12 * max(field.sum(), 1.0) * field.size
    assert out.min() >= -1e-12 * max(field.max(), 1.0)


@given(field=arrays(np.float64, st.tuples(st.integers(2, 20), st.integers(2, 20)),
                    elements=st.floats(-1e3, 1e3)),
       passes=st.sampled_from([1, 2, 3]))
def test_the_blur_is_the_old_3x3_blur_up_to_three_passes(field, passes):
    """blur_radius = sqrt(passes / 2) cells (0 = one pass): the old binomial passes,
    within rounding."""
    radius = 15.0 * np.sqrt(passes / 2.0)
    h, a, n = blur_width(SnowballParams(blur_radius=radius), 15.0)
    assert (h, n) == (0, passes) and a == pytest.approx(0.5)
    assert np.allclose(blur_field(field, h, a, n), old_blur(field, passes), rtol=0, atol=1e-9)
    h, a, n = blur_width(SnowballParams(blur_radius=0.0), 15.0)
    assert np.allclose(blur_field(field, h, a, n), old_blur(field, 1), rtol=0, atol=1e-9)


@pytest.mark.parametrize("cells", [2.0, 5.0, 12.0])
def test_wide_blurs_are_the_old_blur_of_the_same_variance(cells):
    """Wider blurs: three widened boxes instead of 2 sigma^2 binomial passes; the same
    variance exactly and nearly the same (Gaussian) shape, at a cost per cell that does
    not grow with the width."""
    size = int(12 * cells) + 9
    spike = np.zeros((size, size))
    spike[size // 2, size // 2] = 1.0
    h, a, n = blur_width(SnowballParams(blur_radius=cells), 1.0)
    new = blur_field(spike, h, a, n)
    old = old_blur(spike, round(2 * cells * cells))
    i = np.arange(size) - size // 2
    assert (new.sum(0) * i * i).sum() == pytest.approx(cells * cells, rel=1e-9)
    assert (old.sum(0) * i * i).sum() == pytest.approx(cells * cells, rel=1e-9)
    assert np.abs(new - old).sum() < 0.08  # of a unit of mass


@given(field=arrays(np.float64, (9, 11), elements=st.floats(-1e3, 1e3)),
       at=st.tuples(st.integers(0, 40), st.integers(0, 40)),
       radius=st.floats(0.0, 60.0))
def test_blurring_only_the_changed_part_is_blurring_the_grid(field, at, radius):
    """A change somewhere in a big grid: blurring the box around it (plus the blur's
    reach; the grid's edge where the box meets it) gives the whole grid's blur."""
    grid = np.zeros((50, 52))
    r, c = at
    grid[r:r + 9, c:c + 11] = field
    h, a, n = blur_width(SnowballParams(blur_radius=radius), 15.0)
    pad = n * (h + 1)
    box = (max(r - pad, 0), min(r + 9 + pad, 50), max(c - pad, 0), min(c + 11 + pad, 52))
    assert np.allclose(blur_field(grid, h, a, n, box), blur_field(grid, h, a, n), rtol=0,
                       atol=1e-9)


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


@given(d_rock=arrays(np.float64, (3, 4), elements=st.floats(-5.0, 0.0)),
       d_sed=arrays(np.float64, (3, 4), elements=st.floats(-5.0, 5.0)),
       sed=arrays(np.float64, (3, 4), elements=st.floats(0.0, 5.0)),
       dep=arrays(np.float64, (3, 4), elements=st.floats(0.0, 5.0)))
def test_blurred_change_is_applied_with_the_mass_primitive(d_rock, d_sed, sed, dep):
    """Bedrock loses -d_rock, sediment changes by d_sed (as the old numpy update did, bit
    for bit), a removal beyond the sediment comes out of the bedrock, and the records
    are booked like every process books them (kernels.transfer)."""
    rock = np.linspace(-3.0, 8.0, 12).reshape(3, 4)
    b, s, e, d = rock.copy(), sed.copy(), np.zeros((3, 4)), dep.copy()
    h = b + s
    _apply_change(d_rock, d_sed, h, b, s, e, d)
    assert s.min() >= 0.0 and np.array_equal(h, b + s)
    plain = sed + d_sed >= 0.0  # no removal beyond the sediment
    assert np.array_equal(b[plain], (rock + d_rock)[plain])
    assert np.array_equal(s[plain], (sed + d_sed)[plain])
    assert np.all(s[~plain] == 0.0)
    assert np.allclose(b + s, rock + sed + d_rock + d_sed, rtol=0, atol=1e-12)
    removed = -d_rock + np.maximum(-d_sed, 0.0)
    assert np.allclose(e, np.maximum(removed - dep, 0.0), rtol=0, atol=1e-12)
    assert np.allclose(d, np.maximum(dep - removed, 0.0) + np.maximum(d_sed, 0.0), rtol=0,
                       atol=1e-12)


def test_a_deposit_worn_away_again_is_taken_off_the_deposited_record():
    b, s, e, d = np.zeros((1, 1)), np.full((1, 1), 1.0), np.zeros((1, 1)), np.full((1, 1), 0.3)
    h = b + s
    _apply_change(np.full((1, 1), -0.5), np.full((1, 1), -2.0), h, b, s, e, d)
    # 2 of sediment asked for, 1 there: 1 more from the rock, plus 0.5 of rock worn
    assert (s[0, 0], b[0, 0], h[0, 0]) == (0.0, -1.5, -1.5)
    assert d[0, 0] == 0.0 and e[0, 0] == pytest.approx(2.5 - 0.3)


def _preset_table():
    from simcore.formats.presets import find_preset

    preset = find_preset("snowball_preview")
    assert "snowball" in preset.enabled_params()
    return preset.params["snowball"], preset.particles_per_area


def test_the_preset_table_books_mass_and_repeats_itself():
    """snowball_preview's table (world brush, 20 m blur of the changed part only) on a
    30 m-cell upland: the mass book closes exactly, sediment stays >= 0, and the same
    seed gives the same ground, bit for bit, run whole or round by round."""
    from simcore.generators.noise import upland_terrain

    table, _ = _preset_table()
    heights = upland_terrain(96, seed=3, cell_size=30.0)
    runs = []
    for whole in (True, False):
        t = Terrain.from_heights(heights, 30.0)
        start = t.total_material()
        sim = Simulation(t, {"snowball": table}, seed=5, particles=3 * table.batch)
        if whole:
            sim.run()
        else:
            while not sim.advance(0.0).done:
                pass
        assert t.eroded.sum() > 0 and t.deposited.sum() > 0 and t.outflow > 0
        tol = 1e-9 * np.abs(heights / 30.0).sum()
        assert abs((start - t.total_material()) - t.outflow) < tol
        assert abs((t.eroded.sum() - t.deposited.sum()) - t.outflow) < tol
        assert t.sediment.min() >= 0
        runs.append(t)
    assert np.array_equal(runs[0].bedrock, runs[1].bedrock)
    assert np.array_equal(runs[0].sediment, runs[1].sediment)


def test_a_snowball_at_the_maps_edge_takes_its_load_off_the_map():
    """On a plane tilted toward +x with no deposition, every snowball runs off: what it
    dug is the outflow, and nothing is laid down (a snowball that
    dropped its load when its read-out point left the grid would leave a rim of deposits)."""
    x = np.arange(40.0)
    plane = np.tile(-0.3 * x * 15.0, (30, 1))
    t = Terrain.from_heights(plane, 15.0)
    p = SnowballParams(erosion_rate=2000.0, deposition_rate=0.0, speed=9.0, radius=24.0,
                       brush_radius=45.0, blur=1.0, blur_radius=20.0, max_iterations=400)
    run_batch(t, p, 3, 0, 200)
    assert t.outflow > 0 and t.deposited.sum() == 0.0
    assert t.eroded.sum() == pytest.approx(t.outflow, rel=1e-12)


def test_snowballs_alone_dig_no_runaway_pits():
    """A step never takes the ground below the height where the snowball rolls to (as
    the droplets): without that, snowball_preview's rates alone dug a pit 3.2 km deep
    into a 512^2 upland, snowballs rolling to and fro in it. Here the deepest cut
    stays a fraction of the relief."""
    from simcore.generators.noise import upland_terrain

    table, per_area = _preset_table()
    heights = upland_terrain(128, seed=4, cell_size=30.0)
    t = Terrain.from_heights(heights, 30.0)
    Simulation(t, {"snowball": table}, seed=1,
               particles=round(per_area * heights.size * 900.0)).run()
    dh = t.world_height() - heights
    relief = float(heights.max() - heights.min())
    assert dh.min() < -0.02 * relief  # it does cut
    assert -dh.min() < 0.3 * relief and dh.max() < 0.3 * relief


@pytest.mark.parametrize("cell", [15.0, 7.5])
def test_the_same_valleys_at_two_resolutions(cell):
    """snowball_preview's snowball table alone on one world at cells of 2*cell
    and cell (the 3.84 km and 1.92 km uplands of test_landforms), at the preset's rain
    per area: the height changes agree after block-averaging (r >= 0.9; measured 0.95 /
    0.94) and so does the volume taken (within 20%; 0.95 / 0.98). The seed's bilinear
    footprint (brush_radius 0) gives r = 0.0 and 1.5-11 x the volume: on finer cells a
    step's erosion sinks into 4 smaller cells and steers the next snowballs; the world
    brush fixes that."""
    from simcore.analysis import landforms
    from simcore.generators.noise import upland_terrain

    table, per_area = _preset_table()
    assert table.brush_radius > 0
    fine = upland_terrain(256, seed=4, cell_size=cell)
    coarse = landforms.block_mean(fine)
    changes, removed = [], []
    for heights, size in ((coarse, 2 * cell), (fine, cell)):
        terrain = Terrain.from_heights(heights, size)
        balls = round(per_area * heights.size * size * size)
        Simulation(terrain, {"snowball": table}, seed=1, particles=balls).run()
        dh = terrain.world_height() - heights
        changes.append(dh)
        removed.append(float(np.maximum(-dh, 0).sum()) * size * size)
    r = landforms.correlation(changes[0], landforms.block_mean(changes[1]))
    assert r >= 0.9, f"height changes correlate at r = {r:.2f} across resolutions"
    assert 0.8 <= removed[1] / removed[0] <= 1.2, f"volume ratio {removed[1] / removed[0]:.2f}"
