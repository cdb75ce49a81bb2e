"""Hydrology (streams and pools): lakes, spill points, sea level, streams, determinism."""

import heapq

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcore.engine.simulation import Simulation
from simcore.formats.presets import find_preset
from simcore.generators.noise import fractal_terrain
from simcore.params import ParameterError
from simcore.processes import hydrology
from simcore.processes.hydrology import HydrologyParams, pool_volume, pour, run_batch
from simcore.terrain import Terrain

# Terrains here have cell size 1 (m): depths in cell units are metres, volumes m³.
# Water only (the ground never changes); one particle holds 0.01 m³, so a pour of
# 0.2 m³ is a particle of volume 20 (heavy: it rolls slowly, as the article's pours).
STILL = HydrologyParams(deposition=0.0, rain_volume=0.01)
# The article's water on these small cell-1 terrains (relief ~16-30 m): relief / 100 m³
RAIN = HydrologyParams(rain_volume=0.2)


def terrain(heights, **layers):
    return Terrain.from_heights(np.asarray(heights, dtype=float), world_units=False, **layers)


# A descending particle's inertia is a world length (acceleration and friction per step
# scale with the cell size, docs/hydrology.md): tests of where water gathers on these
# small terrains give them the presets' 30 m cells, where a step is the article's step.
# Heights stay in cell units; water volumes scale with the cell volume.
REF = hydrology.REFERENCE_CELL


def terrain_ref(heights):
    """``heights`` (cell units) on cells of the reference size."""
    return Terrain.from_heights(np.asarray(heights, dtype=float), REF, world_units=False)


def run(t, batches, params=None, seed=1, stats=None):
    params = params or RAIN
    for b in range(batches):
        run_batch(t, params, seed, b * params.batch, params.batch, stats=stats)
    return t


def radius(rows, cols, r0, c0):
    yy, xx = np.mgrid[0:rows, 0:cols]
    return np.hypot(yy - r0, xx - c0)


def bowl(n=32):
    return 0.05 * radius(n, n, (n - 1) / 2, (n - 1) / 2) ** 2


def surface(t):
    return t.height() + t.pool


def spill_violations(t, tol=1e-7):
    """Wet cells with a neighbour whose water surface (or dry ground) is lower: water
    that would run out, i.e. a pool standing above its spill point."""
    s = surface(t)
    rows, cols = s.shape
    bad = 0
    for r, c in np.argwhere(t.pool > 0):
        lo = s[max(r - 1, 0):r + 2, max(c - 1, 0):c + 2].min()
        bad += lo < s[r, c] - tol * max(1.0, abs(s[r, c]))
    return int(bad)


def spill_height(h, start, escaped):
    """Lowest water level at which the 8-connected region {h <= level} around ``start``
    reaches a cell where ``escaped(r, c)`` is true (bisection over BFS)."""
    lo, hi = float(h[start]), float(h.max())
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        seen = np.zeros(h.shape, bool)
        stack = [start]
        seen[start] = True
        out = False
        while stack and not out:
            r, c = stack.pop()
            out = escaped(r, c)
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    nr, nc = r + dr, c + dc
                    if 0 <= nr < h.shape[0] and 0 <= nc < h.shape[1] and not seen[nr, nc] \
                            and h[nr, nc] <= mid:
                        seen[nr, nc] = True
                        stack.append((nr, nc))
        lo, hi = (lo, mid) if out else (mid, hi)
    return hi


# ------------------------------------------------------------------------ lakes

def test_closed_bowl_holds_a_flat_lake_with_the_poured_volume():
    t = terrain(bowl())
    low = np.unravel_index(np.argmin(t.height()), t.shape)
    poured = 0.0
    for _ in range(50):
        assert pour(t, STILL, *low, 0.4) == 0.0, "nothing leaves a closed bowl"
        poured += 0.4
        assert pool_volume(t) == pytest.approx(poured, rel=1e-9), "every m³ is in the lake"
        assert spill_violations(t) == 0
    wet = t.pool > 0
    level = surface(t)[wet]
    assert level.max() - level.min() < 1e-9, "a lake is flat"
    assert wet.sum() > 50
    below = t.height() < level.max() - 1e-9
    assert np.array_equal(wet, below), "every cell of the bowl below the level is under water"
    assert np.isfinite(t.pool).all()


def rim_bowl(notch=6.0):
    """A bowl (r < 12) in a ring wall of height 10 with a notch at height ``notch`` on its
    +x side; outside the wall the ground falls away to the map edges."""
    n = 41
    r = radius(n, n, 20, 20)
    h = np.where(r < 12, 0.05 * r ** 2, np.where(r < 14, 10.0, 4.0 - 0.2 * (r - 14)))
    h[19:22, 32:34] = notch
    return h


def test_lake_rises_to_its_spill_point_and_never_above():
    h = rim_bowl(6.0)
    dist = radius(41, 41, 20, 20)
    spill = spill_height(h, (20, 20), lambda r, c: dist[r, c] >= 14)
    assert 6.0 <= spill < 6.2  # the notch, where the bowl's inner slope meets it
    t = terrain(h)
    capacity = np.clip(spill - h, 0, None)[dist < 12].sum()  # m³
    gone = 0.0
    for _ in range(int(1.5 * capacity / 2.0) + 1):
        gone += pour(t, STILL, 20, 20, 2.0)
        assert spill_violations(t) == 0
        assert surface(t)[t.pool > 0].max() <= spill + 1e-9, "no pool above its spill point"
    assert surface(t)[20, 20] == pytest.approx(spill, abs=1e-9), "filled up to the notch"
    assert pool_volume(t) == pytest.approx(capacity, rel=0.02), "holding what the bowl holds"
    assert gone > 0.0, "the overflow left over the notch and off the map"


def two_basins():
    """A slope falling along +x with an upper bowl (centre x=10) and a lower one (x=34)."""
    rows, cols = 24, 48
    h = np.tile(30.0 - 0.6 * np.arange(cols), (rows, 1))
    for c0, rad in ((10, 4.0), (34, 8.0)):
        r = radius(rows, cols, 12, c0)
        h -= np.where(r < rad, 0.3 * (rad ** 2 - r ** 2), 0.0)
    return h


def test_upper_lake_stops_at_its_spill_height_and_the_lower_one_fills():
    h = two_basins()
    t = terrain_ref(h)
    still = STILL.replace(rain_volume=STILL.rain_volume * REF ** 3)
    up = np.unravel_index(np.argmin(np.where(np.arange(48) < 15, h, np.inf)), h.shape)
    down = np.unravel_index(np.argmin(np.where(np.arange(48) >= 24, h, np.inf)), h.shape)
    spill = spill_height(h, up, lambda r, c: c >= 20)
    t.pool[down] = 1e-3  # a puddle: the article floods only in pools or on streams
    upper = np.zeros(h.shape, bool)
    upper[:, :20] = True
    for _ in range(300):
        pour(t, still, *up, 0.2 * REF ** 3)
        assert surface(t)[upper & (t.pool > 0)].max() <= spill + 1e-9
    lake_up = surface(t)[up]
    assert spill - 0.05 < lake_up <= spill + 1e-9, (lake_up, spill)
    lower_volume = t.pool[~upper].sum()
    assert lower_volume > 1.0, "the overflow ran down and filled the lower basin"
    assert spill_violations(t) == 0


# ------------------------------------------------------------------------ streams

def test_stream_map_is_high_in_the_valley_and_low_on_the_ridges():
    rows, cols = 33, 48
    y = np.abs(np.arange(rows) - 16)[:, None]
    h = 0.3 * np.arange(cols)[None, :] + 0.5 * y  # falls toward x = 0, valley at row 16
    t = run(terrain_ref(h), 30, RAIN.replace(rain_volume=RAIN.rain_volume * REF ** 3))
    valley = t.stream[15:18, 3:40].mean()
    ridges = np.concatenate([t.stream[:3, 3:40], t.stream[-3:, 3:40]]).mean()
    assert valley > 0.15
    assert valley > 4 * ridges, (valley, ridges)
    assert np.all((t.stream >= 0) & (t.stream <= 1))


def test_descent_erodes_and_mass_is_booked(hills):
    t = run(terrain(hills), 20)
    assert t.eroded.sum() > 0 and t.deposited.sum() > 0
    tol = 1e-9 * np.abs(hills).sum()
    assert abs((t.eroded.sum() - t.deposited.sum()) - t.outflow) < tol
    assert abs(t.total_material() + t.outflow - hills.sum()) < tol
    assert np.array_equal(t.height(), t.bedrock + t.sediment)


def test_height_array_is_kept_in_step(hills):
    t = terrain(hills)
    h = t.height()
    run_batch(t, RAIN, 3, 0, 500, height=h)
    assert np.array_equal(h, t.bedrock + t.sediment)


# ------------------------------------------------------------------------ sea level

def test_closed_edges_are_a_wall():
    walls = STILL.replace(open_edges=False)
    t = terrain(np.tile(0.1 * np.arange(32.0), (32, 1)))  # lowest along the x = 0 edge
    for _ in range(10):
        assert pour(t, walls, 16, 0, 0.2) == 0.0
    assert pool_volume(t) == pytest.approx(2.0, rel=1e-9)
    assert t.pool[:, 0].min() > 0, "the pool leans on the edge"
    assert spill_violations(t) == 0


def test_open_edges_let_water_off_the_map_and_no_lake_leans_on_them():
    t = terrain(np.tile(0.1 * np.arange(32.0), (32, 1)))  # lowest along the x = 0 edge
    for col in (0, 1, 5):
        assert pour(t, STILL, 16, col, 0.2) == pytest.approx(0.2), "it all runs off"
    assert pool_volume(t) == 0.0
    h = bowl(32)
    h[15:17, :16] = np.minimum(h[15:17, :16], 2.0)  # a trench from the bowl to the edge
    t = terrain(h)
    for _ in range(40):
        pour(t, STILL, 15, 15, 1.0)
    assert surface(t)[t.pool > 0].max() <= 2.0 + 1e-9, "the lake stops at the trench"
    assert t.pool[:, 0].max() == 0.0


def test_with_sea_water_leaves_through_edges_below_sea_level():
    h = np.tile(0.1 * np.arange(32.0), (32, 1))
    sea = STILL.replace(sea=True, sea_level=0.45)
    t = terrain(h)
    assert pour(t, sea, 16, 0, 0.2) == pytest.approx(0.2)
    ocean = h < 0.45
    assert np.allclose(t.pool[ocean], 0.45 - h[ocean]), "ocean filled to sea level"
    assert np.all(t.pool[~ocean] == 0)
    sea_volume = pool_volume(t)
    for _ in range(10):
        assert pour(t, sea, 16, 5, 0.2) == pytest.approx(0.2), "the coast drains to the sea"
        # from further up it runs down first (and evaporates a little on the way)
        assert pour(t, sea, 16, 12, 0.2) > 0.15
    assert pool_volume(t) == pytest.approx(sea_volume)


def test_sea_height_is_in_world_units_the_same_sea_at_any_cell_size():
    """A coast rising 0.1 m per metre, 960 m wide, at 30 and 15 m cells: sea_height
    40 m floods the same 400 m strip on both (to a cell); the legacy sea_level (cell units) still
    wins when given."""
    strips = []
    for cell in (30.0, 15.0):
        n = int(960 / cell)
        x = (np.arange(n) + 0.5) * cell
        t = Terrain.from_heights(np.tile(0.1 * x, (n, 1)), cell)
        run_batch(t, RAIN.replace(sea=True, sea_height=40.0, rain_volume=1.0), 1, 0, 1)
        strips.append((t.pool[n // 2] > 0).sum() * cell)
        assert abs(strips[-1] - 400.0) <= cell, strips  # the 40 m contour, to a cell
    legacy = HydrologyParams(sea_level=2.0, sea_height=40.0)
    assert legacy.sea_cells(15.0) == 2.0 and HydrologyParams(sea_height=40.0).sea_cells(
        15.0) == pytest.approx(40.0 / 15.0)


def test_sea_inland_depression_below_sea_level_is_not_ocean():
    h = np.full((24, 24), 5.0)
    h[:, :3] = 0.0  # coast
    h[10:14, 10:14] = -1.0  # a closed hollow below sea level, far from the edge
    t = terrain(h)
    run_batch(t, RAIN.replace(sea=True, sea_level=1.0), 1, 0, 1)
    assert np.allclose(t.pool[:, :3], 1.0)
    assert np.all(t.pool[10:14, 10:14] < 1.0), "a hollow behind the coast is no sea"


def test_runs_with_sea_end_particles_in_the_ocean():
    n = 32
    h = 0.05 * radius(n, n, 16, -1.0) ** 2  # a slope down to the x = 0 edge
    p = RAIN.replace(deposition=0.0, sea=True, sea_level=1.0)
    t = run(terrain(h, stream=np.ones((n, n))), 5, p)
    ocean = h < 1.0
    assert np.allclose(t.pool[ocean], 1.0 - h[ocean])
    assert np.all(t.pool[~ocean] == 0), "no lake forms above a reachable sea"


# ------------------------------------------------------------------------ failure cases

def test_flat_plateau_and_single_cell_pit_end():
    flat = np.full((24, 24), 5.0)
    stats = np.zeros(len(hydrology.STATS))
    for stream in (0.0, 1.0):  # stream 1: every idle particle floods (whole-map fills)
        t = run(terrain(flat, stream=np.full((24, 24), stream)), 3, STILL, stats=stats)
        assert np.isfinite(t.pool).all()
    assert stats[1] > 0, "the plateau case reached flood"
    assert stats[2] <= stats[1] * (24 * 24 + 24), "a flood visits each cell at most once"
    pit = flat.copy()
    pit[12, 12] = 4.0
    t = terrain(pit)
    walls = STILL.replace(open_edges=False)
    pour(t, walls, 12, 12, 0.5)  # more than the pit holds: spreads over the plateau
    pour(t, walls, 12, 12, 0.5)
    assert pool_volume(t) == pytest.approx(1.0, rel=1e-9)
    wet = surface(t)[t.pool > 0]
    assert wet.max() - wet.min() < 1e-9
    assert spill_violations(t) == 0
    t = run(terrain(pit, stream=np.ones((24, 24))), 3)
    assert np.isfinite(t.height()).all()


def test_pour_checks_its_arguments():
    t = terrain(bowl(8))
    with pytest.raises(ValueError, match="outside"):
        pour(t, STILL, 8, 0, 1.0)
    with pytest.raises(ParameterError, match="evaporation"):
        HydrologyParams(evaporation=0.0)


# ------------------------------------------------------------------------ determinism

def test_same_seed_same_result_other_seed_differs(hills):
    a = run(terrain(hills), 6, seed=4)
    b = run(terrain(hills), 6, seed=4)
    c = run(terrain(hills), 6, seed=5)
    for name, arr in a.arrays().items():
        assert np.array_equal(arr, b.arrays()[name]), name
    assert a.outflow == b.outflow
    assert not np.array_equal(a.height(), c.height())


def test_fill_cost_does_not_depend_on_the_map():
    """The flood's scratch is never cleared per flood: stamps from earlier fills stay."""
    t = terrain(bowl(16))
    stamp, gen = hydrology._scratch(t)[:2]
    g0 = int(gen[0])
    pour(t, STILL, 7, 7, 0.1)
    assert int(gen[0]) > g0
    assert (stamp == gen[0]).sum() < t.pool.size, "the last fill touched part of the map"


@given(arrays(np.float64, st.tuples(st.integers(4, 20), st.integers(4, 20)),
              elements=st.floats(-50, 50)),
       st.booleans(), st.floats(-10, 10), st.integers(0, 2**32),
       st.floats(0.01, 1.9), st.floats(0, 1), st.floats(1e-4, 0.5), st.floats(0, 0.5))
def test_random_terrains_stay_finite_and_booked(h, sea, level, seed, dt, deposition, evap,
                                                friction):
    t = terrain(h)
    p = RAIN.replace(batch=40, sea=sea, sea_level=level, dt=dt, deposition=deposition,
                     evaporation=evap, friction=friction)
    run(t, 3, p, seed=seed)
    for name, arr in t.arrays().items():
        assert np.isfinite(arr).all(), name
    assert (t.pool >= 0).all() and (t.stream >= 0).all() and (t.stream <= 1).all()
    assert t.outflow >= 0 and t.sediment.min() >= 0
    tol = 1e-9 * (np.abs(h).sum() + 1)
    assert abs((t.eroded.sum() - t.deposited.sum()) - t.outflow) < tol
    assert abs((h.sum() - t.total_material()) - t.outflow) < tol
    # erosion never digs below the next cell: the relief cannot run away
    assert t.height().min() >= h.min() - 1e-9
    t.validate()


@given(arrays(np.float64, st.tuples(st.integers(4, 16), st.integers(4, 16)),
              elements=st.floats(0, 20)),
       st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0.005, 3)),
                min_size=1, max_size=8))
def test_pours_never_leave_a_pool_above_its_spill_point(h, pours):
    t = terrain(h)
    for fy, fx, vol in pours:
        r = min(int(fy * h.shape[0]), h.shape[0] - 1)
        c = min(int(fx * h.shape[1]), h.shape[1] - 1)
        pour(t, STILL, r, c, vol)
        assert spill_violations(t) == 0
        assert np.isfinite(t.pool).all()


def drain_by_whole_grid_scans(ground, pool, open_edges, ocean):
    """Reference for ``level_lakes``: scan every cell in order, pass after pass (at most
    16), and lower the lake of any wet cell (not ``ocean``) with a lower outlet to that
    outlet. Returns (pools, lakes lowered)."""
    rows, cols = ground.shape
    pool = pool.copy()
    tol = hydrology.LEVEL_TOL
    lowered = 0
    for _ in range(16):
        changed = 0
        for r in range(rows):
            for c in range(cols):
                if pool[r, c] <= 0.0 or ocean[r, c]:
                    continue
                level = ground[r, c] + pool[r, c]
                edge = r in (0, rows - 1) or c in (0, cols - 1)
                outlet = ground[r, c] if open_edges and edge else level
                box = (slice(max(r - 1, 0), r + 2), slice(max(c - 1, 0), c + 2))
                outlet = min(outlet, (ground[box] + pool[box]).min())
                if outlet >= level - tol * max(1.0, abs(level)):
                    continue
                # the lake: cells connected to (r, c) whose surface is at its level
                seen, stack, lake = {(r, c)}, [(r, c)], []
                while stack:
                    y, x = stack.pop()
                    if abs(ground[y, x] + pool[y, x] - level) > tol * max(1.0, abs(level)):
                        continue
                    lake.append((y, x))
                    for ny in range(max(y - 1, 0), min(y + 2, rows)):
                        for nx in range(max(x - 1, 0), min(x + 2, cols)):
                            if (ny, nx) not in seen:
                                seen.add((ny, nx))
                                stack.append((ny, nx))
                for y, x in lake:
                    pool[y, x] = max(outlet - ground[y, x], 0.0)
                changed += 1
        lowered += changed
        if not changed:
            break
    return pool, lowered


@given(arrays(np.float64, st.tuples(st.integers(3, 12), st.integers(3, 12)),
              elements=st.floats(0, 8)),
       st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0.1, 6)),
                min_size=1, max_size=6),
       st.booleans(), st.sampled_from([None, 0.5, 2.0]))
def test_level_lakes_lowers_what_whole_grid_scans_lower(h, lakes, open_edges, sea_level):
    # flat lakes filled to a level over 5x5 boxes around given cells: where boxes overlap
    # or a box's rim is lower than its level, lakes stand above an outlet, some in chains;
    # with a sea, the cells below it that reach an edge are ocean (left alone)
    t = terrain(h)
    rows, cols = h.shape
    for fy, fx, depth in lakes:
        r, c = min(int(fy * rows), rows - 1), min(int(fx * cols), cols - 1)
        level = h[r, c] + depth
        box = (slice(max(r - 2, 0), r + 3), slice(max(c - 2, 0), c + 3))
        t.pool[box] = np.maximum(t.pool[box], level - h[box])
    t.pool[t.pool < 1e-6] = 0.0
    params = HydrologyParams(open_edges=open_edges, sea=sea_level is not None,
                             sea_level=sea_level or 0.0)
    if sea_level is None:
        ocean = np.zeros(h.shape, dtype=bool)
    else:  # the sea filled and marked as level_lakes does, on a copy
        u = t.copy()
        ocean = hydrology._prepare(u, params, u.height())[0] != 0
        t.pool[...] = u.pool
    expected, lowered = drain_by_whole_grid_scans(h, t.pool, open_edges, ocean)
    assert hydrology.level_lakes(t, params) == lowered
    np.testing.assert_array_equal(t.pool, expected)


def test_level_lakes_lowers_a_lake_whose_outlet_drains_later_in_the_scan():
    # lake B (top left, level 5) has no lower neighbour when the scan reaches it; lake A
    # (level 6, two cells) drains through cell (0, 3) to 1 after it: only a second pass
    # finds that B now spills into A
    g = np.full((3, 5), 100.0)
    g[0, 0] = g[0, 2] = g[1, 1] = 0.0
    g[0, 3] = 1.0
    t = terrain(g)
    t.pool[0, 0] = 5.0
    t.pool[0, 2] = t.pool[1, 1] = 6.0
    expected, lowered = drain_by_whole_grid_scans(g, t.pool, False, np.zeros(g.shape, bool))
    assert hydrology.level_lakes(t, HydrologyParams(open_edges=False)) == lowered == 2
    np.testing.assert_array_equal(t.pool, expected)
    assert t.pool[0, 0] == t.pool[0, 2] == t.pool[1, 1] == 1.0


# ------------------------------------------------------------------------ presets on land

def spill_levels(ground):
    """Independent priority flood (heapq): the lowest level at which water on each cell
    can leave the map; the map edges are the outlets (open edges)."""
    rows, cols = ground.shape
    level = np.full(ground.shape, np.inf)
    heap = []
    for r in range(rows):
        for c in range(cols):
            if r in (0, rows - 1) or c in (0, cols - 1):
                level[r, c] = ground[r, c]
                heap.append((ground[r, c], r, c))
    heapq.heapify(heap)
    while heap:
        lv, r, c = heapq.heappop(heap)
        for nr in range(max(r - 1, 0), min(r + 2, rows)):
            for nc in range(max(c - 1, 0), min(c + 2, cols)):
                if level[nr, nc] == np.inf:
                    level[nr, nc] = max(ground[nr, nc], lv)
                    heapq.heappush(heap, (level[nr, nc], nr, nc))
    return level


def upland(cell=30.0, relief=920.0, n=256, seed=4):
    """Uneroded uplands like ``simcore generate`` (fBm, persistence 0.45), in metres."""
    return Terrain.from_heights(fractal_terrain(n, seed=seed, relief=1.0, persistence=0.45)
                                * relief, cell_size=cell)


def run_preset(t, name, particles, **overrides):
    preset = find_preset(name).with_overrides(overrides)
    before = t.total_material()
    Simulation(t, preset.enabled_params(), seed=preset.seed, particles=particles).run()
    return before


def check_lakes(t, before):
    """Pools below their spill level, each lake flat, mass booked exactly."""
    spill = spill_levels(t.height())
    surf = surface(t)
    wet = t.pool > 0
    tol = 1e-9 * np.abs(surf).max()
    above = wet & (surf > spill + tol)
    assert not above.any(), f"{above.sum()} pool cells above their spill level, by up " \
        f"to {(surf - spill)[above].max() * t.cell_size:.3g} m"
    labels = lake_labels(wet)
    for k in range(1, labels.max() + 1):
        level = surf[labels == k]
        assert level.max() - level.min() <= tol, "a lake is flat"
    assert abs(t.total_material() + t.outflow - before) <= 1e-9 * abs(before)
    assert abs((t.eroded.sum() - t.deposited.sum()) - t.outflow) <= 1e-9 * abs(before)
    assert np.isfinite(t.pool).all() and (t.pool >= 0).all()


def lake_labels(wet):
    labels = np.zeros(wet.shape, int)
    k = 0
    for r0, c0 in np.argwhere(wet):
        if labels[r0, c0]:
            continue
        k += 1
        labels[r0, c0] = k
        stack = [(r0, c0)]
        while stack:
            r, c = stack.pop()
            for nr in range(max(r - 1, 0), min(r + 2, wet.shape[0])):
                for nc in range(max(c - 1, 0), min(c + 2, wet.shape[1])):
                    if wet[nr, nc] and not labels[nr, nc]:
                        labels[nr, nc] = k
                        stack.append((nr, nc))
    return labels


@pytest.mark.slow
def test_rivers_and_lakes_fills_lakes_on_generated_uplands():
    """256² of 30 m cells, 920 m of relief (``simcore generate``'s uplands)."""
    t = upland()
    before = run_preset(t, "rivers_and_lakes", 30_000)
    big = hydrology.lakes(t, 20)
    assert len(big) >= 3, big
    assert (t.pool > 0).sum() >= 2000, "lakes at the article's level (2,000-12,000 cells)"
    check_lakes(t, before)
    assert t.eroded.sum() > 0, "the rivers cut"


def test_rivers_and_lakes_with_the_articles_rain_on_a_cell_unit_terrain():
    """The old ``generate --size 256`` terrain (cell 1, relief 64) with the article's
    water per particle (relief / 100 on one cell): the article's processes (water and
    trees) of the preset; its hillslope table is tuned for 30 m cells, not this 1 m,
    38-degree terrain, and is covered on uplands by the tests above."""
    t = Terrain.from_heights(fractal_terrain(256, seed=4), cell_size=1.0)
    rain = hydrology.article_rain_volume(64.0, 1.0)
    preset = find_preset("rivers_and_lakes").with_overrides({"hydrology.rain_volume": rain})
    procs = {n: p for n, p in preset.enabled_params().items() if n != "thermal"}
    before = t.total_material()
    Simulation(t, procs, seed=preset.seed, particles=30_000).run()
    assert len(hydrology.lakes(t, 20)) >= 3, hydrology.lakes(t, 20)
    check_lakes(t, before)


@pytest.mark.slow
def test_default_preset_leaves_a_lake_on_generated_uplands():
    t = upland()
    before = run_preset(t, "default", 40_000)
    assert len(hydrology.lakes(t, 20)) >= 1
    check_lakes(t, before)


def test_rain_volume_is_booked_in_cubic_metres_at_any_cell_size():
    """The same bowl at cell 1 m and 2 m (same world): a pour of V m³ stands at the same
    world level."""
    levels = []
    for cell, n in ((1.0, 64), (2.0, 32)):
        yy, xx = np.mgrid[0:n, 0:n] * cell
        world = 0.02 * np.hypot(yy - 31.5, xx - 31.5) ** 2
        t = Terrain.from_heights(world, cell_size=cell)
        low = np.unravel_index(np.argmin(world), world.shape)
        pour(t, STILL, *low, 50.0)
        assert pool_volume(t) == pytest.approx(50.0, rel=1e-9)
        levels.append(surface(t)[t.pool > 0].max() * cell)
    assert levels[0] == pytest.approx(levels[1], rel=0.1)


@pytest.mark.slow
def test_same_world_at_two_resolutions_gets_the_same_lakes():
    """A 7.7 km upland at 128² (60 m cells) and 256² (30 m), the same rain (particle
    count and m³ each): the same lake area, water and places."""
    fine = fractal_terrain(256, seed=4, relief=1.0, persistence=0.45) * 920.0
    coarse = fine.reshape(128, 2, 128, 2).mean(axis=(1, 3))
    out = {}
    for cell, heights in ((60.0, coarse), (30.0, fine)):
        t = Terrain.from_heights(heights, cell_size=cell)
        before = run_preset(t, "rivers_and_lakes", 30_000)
        check_lakes(t, before)
        out[cell] = t
    a, b = out[60.0], out[30.0]
    area = [(t.pool > 0).sum() * t.cell_size ** 2 for t in (a, b)]
    assert area[0] > 1e6, "lakes of more than 1 km² form"
    assert area[1] == pytest.approx(area[0], rel=0.2), area
    assert pool_volume(b) == pytest.approx(pool_volume(a), rel=0.25)
    wet_b = (b.pool > 0).reshape(128, 2, 128, 2).mean(axis=(1, 3)) >= 0.5
    wet_a = a.pool > 0
    overlap = (wet_a & wet_b).sum() / (wet_a | wet_b).sum()
    assert overlap > 0.5, f"the lakes lie in the same places (IoU {overlap:.2f})"


@given(arrays(np.float64, st.tuples(st.integers(4, 14), st.integers(4, 14)),
              elements=st.floats(0, 20)),
       st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0.005, 5)),
                min_size=1, max_size=6), st.booleans())
@example(np.pad(np.full((1, 1), 1e-9), ((0, 3), (0, 3))), [(0.0, 0.0, 1.0)], True)  # cells
# within the level tolerance below the surface once joined without paying their water
def test_pours_make_no_water_and_stay_under_the_spill_level(h, pours, walls):
    """No water from nothing: pools plus what left the map never exceed what was poured
    (the rest evaporated between basins). With open edges no pool stands above the
    independent priority flood's spill level."""
    p = STILL.replace(open_edges=not walls)
    t = terrain(h)
    poured = gone = 0.0
    for fy, fx, vol in pours:
        r = min(int(fy * h.shape[0]), h.shape[0] - 1)
        c = min(int(fx * h.shape[1]), h.shape[1] - 1)
        gone += pour(t, p, r, c, vol)
        poured += vol
        assert pool_volume(t) + gone <= poured * (1 + 1e-9)
    if not walls:
        spill = spill_levels(h)
        assert np.all(surface(t)[t.pool > 0] <= spill[t.pool > 0] + 1e-9)
