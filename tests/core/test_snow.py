"""Snow: the books close, avalanches leave no snow steeper than its repose angle, drifts
fill hollows, no snow lies below the line, the same bits on any thread count."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcore.engine.simulation import Simulation, process_params
from simcore.generators.noise import fractal_terrain
from simcore.kernels import parallel
from simcore.params import ParameterError
from simcore.processes import snow
from simcore.terrain import Terrain


def closes(books: dict[str, float], scale: float) -> bool:
    """fallen = depth change + melted + out, to 1e-9 of the amounts involved."""
    gap = books["fallen"] - books["change"] - books["melted"] - books["out"]
    return abs(gap) <= 1e-9 * (scale + books["fallen"] + books["melted"] + 1.0)


def fractal(rows: int, cols: int, seed: int, cell: float) -> Terrain:
    return Terrain.from_heights(fractal_terrain(rows, cols, seed=seed), cell,
                                world_units=False)


def test_books_close_pass_by_pass_on_mountains():
    t = fractal(64, 56, 3, 30.0)
    p = snow.SnowParams(time_step=2.0)
    height = t.height()
    ground = height.copy()
    moved = {"blown": 0.0, "slid": 0.0, "out": 0.0, "melted": 0.0}
    for _ in range(15):
        books = snow.snow_pass(t, p, p.time_step, height)
        assert closes(books, float(t.snow.sum()))
        for k in moved:
            moved[k] += books[k]
    assert all(v > 0.0 for v in moved.values()), moved  # every part of the pass worked
    assert t.snow.min() >= 0.0 and np.isfinite(t.snow).all()
    assert np.array_equal(t.height(), ground) and np.array_equal(height, ground)


@settings(max_examples=40, deadline=None)
@given(ground=arrays(np.float64, st.tuples(st.integers(3, 14), st.integers(3, 14)),
                     elements=st.floats(-20.0, 40.0)),
       start=st.floats(0.0, 5.0), cell=st.sampled_from([0.5, 1.0, 10.0, 30.0]),
       fraction=st.floats(0.0, 1.0), repose=st.floats(25.0, 60.0),
       wind=st.floats(0.0, 1.0), aspect=st.floats(0.0, 1.0),
       dt=st.sampled_from([0.1, 1.0, 7.0]), drift=st.floats(0.0, 300.0),
       azimuth=st.floats(0.0, 360.0))
def test_books_close_on_any_grid_and_params(ground, start, cell, fraction, repose, wind,
                                            aspect, dt, drift, azimuth):
    t = Terrain.from_heights(ground, cell, world_units=False,
                             snow=np.full(ground.shape, start))
    p = snow.SnowParams(time_step=dt, snow_line_fraction=fraction, repose_angle=repose,
                        wind_exposure=wind, aspect=aspect, drift_length=drift,
                        sun_azimuth=azimuth)
    height = t.height()
    for _ in range(3):
        books = snow.snow_pass(t, p, dt, height)
        assert closes(books, float(t.snow.sum()) + start * ground.size)
        assert t.snow.min() >= 0.0 and np.isfinite(t.snow).all()
        assert_rests_at_repose(t, repose)


def assert_rests_at_repose(t: Terrain, angle: float, tol: float = 1e-6) -> None:
    """Every cell holding snow stands no more than tan(angle) x distance above each
    neighbour's snow surface (ground + snow): the snow left on ground steeper than the
    angle is at most what the neighbour below holds up at that angle."""
    s = t.height() + t.snow
    rows, cols = s.shape
    tan = math.tan(math.radians(angle))
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if dr == dc == 0:
                continue
            dist = math.hypot(dr, dc)
            a = s[max(dr, 0):rows + min(dr, 0), max(dc, 0):cols + min(dc, 0)]
            b = s[max(-dr, 0):rows + min(-dr, 0), max(-dc, 0):cols + min(-dc, 0)]
            held = t.snow[max(-dr, 0):rows + min(-dr, 0), max(-dc, 0):cols + min(-dc, 0)]
            steep = (b - a - tan * dist)[held > 0.0]
            assert steep.size == 0 or steep.max() <= tol, (dr, dc, steep.max())


def test_a_face_steeper_than_repose_keeps_no_snow():
    """A 60 degree face running off the grid's edge: everything falling on it slides
    off (the outflow); at 38 degrees of repose the face is bare after every pass."""
    rows, cols = 24, 40
    ground = np.tile(np.arange(cols) * math.tan(math.radians(60.0)), (rows, 1)) + 400.0
    t = Terrain.from_heights(ground, 10.0, world_units=False)
    p = snow.SnowParams(relative_line=False, snow_line=0.0, wind_exposure=0.0)
    height = t.height()
    for _ in range(5):
        books = snow.snow_pass(t, p, 1.0, height)
        assert books["fallen"] > 0.0 and closes(books, 0.0)
        assert t.snow.max() <= 1e-6
        assert books["out"] == pytest.approx(books["fallen"], rel=1e-6)


def test_a_face_above_a_floor_sheds_its_snow_onto_a_cone_at_the_repose_angle():
    """A 60 degree face above a flat floor: the snow surface rests at the repose angle
    everywhere there is snow (a cone at the foot), the upper face stays bare, and a
    lower angle of repose keeps the same rule."""
    rows, cols = 24, 48
    x = np.arange(cols, dtype=float)
    ground = np.tile(np.maximum(x - 16.0, 0.0) * math.tan(math.radians(60.0)), (rows, 1))
    for angle in (30.0, 38.0):
        t = Terrain.from_heights(ground + 300.0, 10.0, world_units=False)
        p = snow.SnowParams(relative_line=False, snow_line=0.0, repose_angle=angle,
                            snowfall=3.0, max_snowfall=3.0, wind_exposure=0.0)
        snow.run_batch(t, p.replace(years=20.0), 0, 0, 20, t.height())
        assert_rests_at_repose(t, angle)
        assert t.snow[:, :16].min() > 1.0, "the floor holds snow"
        assert t.snow[:, 40:-1].max() <= 1e-6, "the upper face is bare"


def test_snow_on_mountains_rests_at_its_repose_angle():
    t = fractal(48, 48, 8, 10.0)  # relief 12 cells: faces steeper than 38 degrees
    p = snow.SnowParams(snowfall=4.0, max_snowfall=6.0, snow_line_fraction=0.2)
    snow.run_batch(t, p, 0, 0, 10, t.height())
    assert t.snow.max() > 0.5
    assert_rests_at_repose(t, p.repose_angle)


def waves(steep: bool) -> Terrain:
    """Parallel ridges and troughs (a sine along the columns, 16 cells long) 1 km up,
    10 m cells: slopes up to 30 degrees, or 63 with ``steep``."""
    rows, cols = 48, 64
    amp = 15.0 if not steep else 50.0  # metres; max slope amp * 2 pi / 160 m
    x = np.arange(cols)
    z = 1000.0 + amp * np.sin(2.0 * np.pi * x / 16.0)
    return Terrain.from_heights(np.tile(z, (rows, 1)), 10.0)


def crests_and_troughs(t: Terrain) -> tuple[float, float]:
    phase = np.sin(2.0 * np.pi * np.arange(t.shape[1]) / 16.0)
    inner = t.snow[:, 8:-8]  # away from the edges
    phase = phase[8:-8]
    return float(inner[:, phase > 0.7].mean()), float(inner[:, phase < -0.7].mean())


@pytest.mark.parametrize("steep,wind,more_in_hollows", [
    (False, 0.0, False),  # control: gentle, calm: crests get more (more fall up there)
    (False, 0.5, True),   # the wind drifts it into the troughs
    (True, 0.0, True),    # avalanches slide it into them
    (True, 0.5, True),
])
def test_more_snow_lies_in_hollows_than_on_ridges(steep, wind, more_in_hollows):
    t = waves(steep)
    p = snow.SnowParams(relative_line=False, snow_line=500.0, wind_exposure=wind,
                        drift_length=40.0, aspect=0.0, years=30.0)
    snow.run_batch(t, p, 0, 0, 30, t.height())
    crest, trough = crests_and_troughs(t)
    assert crest > 0.0 or more_in_hollows
    assert (trough > 1.5 * crest) == more_in_hollows, (crest, trough)


@pytest.mark.parametrize("relative", [True, False])
def test_no_snow_lies_where_the_line_is_above_the_summits(relative):
    t = fractal(40, 40, 4, 30.0)
    top = float(t.height().max()) * 30.0
    p = snow.SnowParams(relative_line=relative, snow_line_fraction=1.0,
                        snow_line=top + 1.0, snowfall=5.0, max_snowfall=5.0,
                        wind_exposure=1.0, aspect=1.0)
    assert snow.above_summits(p, t.height(), 30.0)
    assert (snow.advice(p, 30.0) is not None) == relative  # the grid is unknown to it
    total = 0.0
    for _ in range(5):
        books = snow.snow_pass(t, p, 1.0, t.height())
        total += books["fallen"]
        assert books["melted"] == books["fallen"] and closes(books, 0.0)
    assert total > 0.0 and not t.snow.any()
    below = p.replace(snow_line=top - 300.0, snow_line_fraction=0.9)
    assert not snow.above_summits(below, t.height(), 30.0)
    snow.snow_pass(t, below, 1.0, t.height())
    assert t.snow.any()


def test_melt_removes_snow_below_the_line_at_its_degree_day_rate():
    """A gentle plane rising 1 m a 10 m cell from 0 to 47 m, 2 m of snow, no
    snowfall, the line at 25 m: a year melts melt_gradient x (line - z) / 100 below
    the line (at most the snow there), nothing above."""
    cell = 10.0
    z = np.tile(np.arange(48) * 1.0, (32, 1))
    t = Terrain.from_heights(z, cell, snow=np.full(z.shape, 0.2))  # 2 m
    p = snow.SnowParams(relative_line=False, snow_line=25.0, snowfall=0.0, snowfall_gradient=0.0,
                        wind_exposure=0.0, aspect=0.0, melt_gradient=10.0)
    alt = t.height() * cell
    start = t.snow.copy()
    snow.snow_pass(t, p, 1.0, t.height())
    want = np.maximum(start - np.maximum(10.0 * (25.0 - alt) / 100.0, 0.0) / cell, 0.0)
    np.testing.assert_allclose(t.snow, want, rtol=0, atol=1e-12)
    assert (t.snow[alt < 25.0] < start[alt < 25.0]).all()
    assert not t.snow[alt < 5.0].any(), "all 2 m gone where a year melts more"
    assert np.array_equal(t.snow[alt >= 25.0], start[alt >= 25.0])
    for _ in range(20):
        snow.snow_pass(t, p, 1.0, t.height())
    assert not t.snow[alt < 24.0].any(), "melted away below the line"
    assert np.array_equal(t.snow[alt >= 25.0], start[alt >= 25.0])


def test_sun_facing_slopes_keep_less_snow():
    """A cone near the line: its -y flank (facing the sun at 180 degrees) melts more
    than its +y flank; with aspect 0 the two are mirror images."""
    n = 41
    r = np.hypot(*np.meshgrid(np.arange(n) - 20.0, np.arange(n) - 20.0))
    t0 = Terrain.from_heights(1000.0 - 3.0 * r, 10.0)  # 17 degree flanks, 940 m foot
    out = {}
    for aspect in (0.0, 1.0):
        t = t0.copy()
        p = snow.SnowParams(relative_line=False, snow_line=960.0, wind_exposure=0.0,
                            aspect=aspect, years=10.0)
        snow.run_batch(t, p, 0, 0, 10, t.height())
        out[aspect] = (float(t.snow[:15].sum()), float(t.snow[-15:].sum()))  # -y, +y
    assert out[0.0][0] == pytest.approx(out[0.0][1], rel=1e-9)
    assert out[1.0][0] < 0.9 * out[1.0][1]


def test_the_same_bits_on_one_thread_and_two():
    out = []
    old = parallel.threads()
    try:
        for threads in (1, min(2, parallel.most_threads())):
            parallel.set_threads(threads)
            t = fractal(72, 50, 9, 20.0)
            snow.run_batch(t, snow.SnowParams(), 0, 0, 12, t.height())
            out.append(t.snow.copy())
    finally:
        parallel.set_threads(old)
    assert out[0].any() and np.array_equal(out[0], out[1])


def test_years_split_into_passes_and_the_run_stops_there():
    """2.5 years in passes of 1: three passes (the last half a year), then nothing;
    flat ground above the line gathers exactly snowfall x years."""
    t = Terrain.from_heights(np.full((8, 9), 2000.0), 10.0)
    p = snow.SnowParams(years=2.5, relative_line=False, snow_line=1000.0,
                        snowfall=1.0, snowfall_gradient=0.1, max_snowfall=1.5)
    assert snow.steps(p) == 3 and snow.steps(p.replace(years=0.0)) == 0
    done = snow.run_batch(t, p, 0, 0, 10, t.height())
    assert done == 3 * t.bedrock.size
    np.testing.assert_allclose(t.snow, 1.5 * 2.5 / 10.0, rtol=1e-12)
    assert snow.run_batch(t, p, 0, 3, 5, t.height()) == 0


def test_a_simulation_runs_it_and_leaves_the_ground_alone():
    t = fractal(32, 30, 2, 30.0)
    t0 = t.copy()
    sim = Simulation(t, {"snow": process_params("snow", {"years": 20.0, "batch": 5})},
                     seed=1, particles=5)
    sim.run()
    assert sim.rounds_done == 4 and t.snow.max() > 0.0
    for name in ("bedrock", "sediment", "eroded", "deposited"):
        assert np.array_equal(getattr(t, name), getattr(t0, name)), name
    assert t.outflow == t0.outflow


@pytest.mark.parametrize("key,value", [
    ("repose_angle", 20.0), ("repose_angle", 70.0), ("years", -1.0),
    ("years", float("inf")), ("years", 2e6), ("time_step", 0.0),
    ("snow_line_fraction", 1.5), ("wind_exposure", float("nan")), ("aspect", 2.0),
    ("snowfall", -1.0), ("melt_gradient", float("nan")), ("sun_azimuth", 400.0),
    ("snow_line", float("inf")), ("batch", 0)])
def test_absurd_parameters_are_refused_with_their_range(key, value):
    with pytest.raises(ParameterError, match=key):
        process_params("snow", {key: value})


def test_centimetre_cells_are_told_their_real_size_matters():
    assert snow.advice(snow.SnowParams(), 30.0) is None
    text = snow.advice(snow.SnowParams(), 0.01)
    assert text is not None and "metres" in text


def test_the_alpine_preset_lays_snow_above_the_middle_of_the_relief():
    from simcore.formats.presets import find_preset
    from simcore.generators.uplands import drained_uplands
    cell = 30.0
    start = drained_uplands(48, seed=3, cell_size=cell, relief=1200.0)
    preset = find_preset("alpine")
    assert preset.enabled.get("snow")
    terrain = Terrain.from_heights(start, cell)
    Simulation(terrain, preset.enabled_params(), seed=preset.seed,
               particles=preset.work(terrain)).run()
    depth = terrain.snow * cell
    ground = terrain.height() * cell
    line = ground.min() + 0.5 * np.ptp(ground)
    assert (depth[ground > line + 100.0] > 0.1).mean() > 0.5  # most high ground has snow
    # avalanches run out below the line, but the low valleys have none
    low = ground < ground.min() + 0.25 * np.ptp(ground)
    assert depth[low].max() == 0.0, depth[low].max()
