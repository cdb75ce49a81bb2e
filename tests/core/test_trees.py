"""Trees: where they grow and die, root density, coupling with hydrology, determinism."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcore.engine.simulation import Simulation
from simcore.formats.states import load_state, save_state
from simcore.processes import hydrology, trees
from simcore.processes.hydrology import HydrologyParams
from simcore.processes.trees import TreeParams
from simcore.terrain import Terrain

#: the article's distances (4 and 2 cells) on these toy terrains' 1-unit cells
CELLS = {"spread_distance": 4.0, "root_distance": 2.0}
LUSH = TreeParams(spawn_tries=20, spread_chance=0.2, **CELLS)


def terrain(heights, **layers):
    return Terrain.from_heights(np.asarray(heights, dtype=float), world_units=False, **layers)


def grow(t, cycles, params=LUSH, seed=1):
    trees.run_batch(t, params, seed, 0, cycles)
    return t


def cells(t):
    return (np.floor(t.trees[:, 1] + 0.5).astype(int), np.floor(t.trees[:, 0] + 0.5).astype(int))


def test_trees_spread_grow_and_write_root_density():
    t = grow(terrain(np.zeros((32, 32))), 60)
    assert len(t.trees) > 100
    assert np.all((t.trees[:, 2] >= 0.5) & (t.trees[:, 2] <= 1.0))
    assert t.trees[:, 2].max() > 0.9, "the first trees have grown toward full size"
    assert np.all((t.vegetation >= 0) & (t.vegetation <= 1))
    r, c = cells(t)
    assert np.all(t.vegetation[r, c] > 0), "a tree's roots are under it"
    assert np.all((t.trees[:, 0] >= 0) & (t.trees[:, 0] <= 31))
    assert np.all((t.trees[:, 1] >= 0) & (t.trees[:, 1] <= 31))
    t.validate()


def test_trees_never_stand_in_pools_or_on_strong_streams_or_cliffs():
    n = 32
    h = np.zeros((n, n))
    h[:, 24:] = 3.0 * np.arange(8)  # a cliff band: steepness > 0.6
    pool = np.zeros((n, n))
    pool[4:14, 4:14] = 0.5
    stream = np.zeros((n, n))
    stream[20:23, :] = 0.9
    t = grow(terrain(h, pool=pool, stream=stream), 80)
    r, c = cells(t)
    assert len(t.trees) > 50
    assert np.all(t.pool[r, c] == 0)
    assert np.all(t.stream[r, c] <= LUSH.max_stream)
    assert np.all(c < 25), "no tree on the cliff"
    # flood a forested patch: its trees die in the next cycle
    wet = np.zeros((n, n), bool)
    wet[14:20, :20] = True
    assert wet[r, c].any()
    t.pool[wet] = 0.2
    grow(t, 1, seed=2)
    r, c = cells(t)
    assert not wet[r, c].any()


def test_trees_die_by_chance():
    t = grow(terrain(np.zeros((24, 24))), 40)
    many = len(t.trees)
    trees.run_batch(t, TreeParams(spawn_tries=0, spread_chance=0.0, death_chance=0.2,
                                                **CELLS),
                         1, 100, 10)
    assert 0 < len(t.trees) < 0.3 * many


def test_simulation_with_hydrology_keeps_trees_out_of_pools(hills):
    t = terrain(hills, stream=np.where(hills < 4, 1.0, 0.0))
    rain = HydrologyParams(batch=200, rain_volume=0.2)
    sim = Simulation(t, {"hydrology": rain, "trees": LUSH}, seed=3,
                     particles=201 * 30)
    saw_pool = False
    while not sim.progress().done:
        sim.run_round()
        r, c = cells(t)
        saw_pool |= bool((t.pool > 0).any())
        assert np.all(t.pool[r, c] == 0)
    assert saw_pool and len(t.trees) > 0
    assert np.isfinite(t.height()).all()


def test_vegetation_reduces_erosion(hills):
    bare = terrain(hills)
    forest = grow(terrain(hills), 150, TreeParams(spawn_tries=50, spread_chance=0.3,
                                                  max_steepness=1.0, **CELLS))
    assert forest.vegetation.mean() > 0.5
    p = HydrologyParams(batch=250, rain_volume=0.2)
    for t in (bare, forest):
        for b in range(8):
            hydrology.run_batch(t, p, 7, b * p.batch, p.batch)
    assert forest.eroded.sum() < 0.7 * bare.eroded.sum(), (forest.eroded.sum(),
                                                           bare.eroded.sum())


def test_same_seed_same_trees_other_seed_differs(hills):
    a = grow(terrain(hills), 40, seed=5)
    b = terrain(hills)
    for first in range(0, 40, 8):  # sliced into batches: same cycles, same result
        trees.run_batch(b, LUSH, 5, first, 8)
    c = grow(terrain(hills), 40, seed=6)
    assert np.array_equal(a.trees, b.trees)
    assert np.array_equal(a.vegetation, b.vegetation)
    assert not np.array_equal(a.trees, c.trees)


def test_trees_are_state_copied_saved_and_loaded(tmp_path, hills):
    t = grow(terrain(hills), 20)
    assert len(t.trees) > 0
    copy = t.copy()
    copy.trees[0, 2] = 0.123
    assert t.trees[0, 2] != 0.123
    path = save_state(tmp_path / "s.npz", t, {"seed": 1})
    back, _ = load_state(path)
    assert np.array_equal(back.trees, t.trees)
    assert np.array_equal(back.vegetation, t.vegetation)
    assert terrain(hills).trees.shape == (0, 3)


@given(arrays(np.float64, st.tuples(st.integers(3, 16), st.integers(3, 16)),
              elements=st.floats(-30, 30)),
       st.integers(0, 2**32), st.integers(0, 30))
def test_random_terrains_give_valid_trees(h, seed, cycles):
    t = terrain(h)
    trees.run_batch(t, LUSH, seed, 0, cycles)
    t.validate()
    assert np.all((t.vegetation >= 0) & (t.vegetation <= 1))
    if len(t.trees):
        assert np.isfinite(t.trees).all()


def test_a_forest_has_the_same_trees_per_area_at_any_cell_size():
    """The same 1.92 km world at 30, 15 and 7.5 m cells, default distances (metres):
    as many trees per km² and as much forest cover while it grows and once full. With
    the distances in cells (the legacy parameters) a halving of the cell size gave 3-4x
    the trees per km²."""
    params = TreeParams(spawn_tries=20, spread_chance=0.2)
    for cycles in (15, 120):
        density, cover = [], []
        for cell in (30.0, 15.0, 7.5):
            n = int(1920 / cell)
            u = Terrain.from_heights(np.zeros((n, n)), cell)
            trees.run_batch(u, params, 1, 0, cycles)
            density.append(len(u.trees) / 1.92 ** 2)
            cover.append((u.vegetation > 0.5).mean())
        assert max(density) <= 1.25 * min(density), (cycles, density)
        assert max(cover) - min(cover) <= 0.1, (cycles, cover)
    legacy = TreeParams(spawn_tries=20, spread_chance=0.2, root_radius=2.0, spread_radius=4)
    assert legacy.root_cells(7.5) == 2.0 and legacy.spread_cells(7.5) == 4
    assert params.root_cells(30.0) == 2.0 and params.spread_cells(30.0) == 4
    assert params.root_cells(7.5) == 8.0 and params.spread_cells(7.5) == 16


def test_a_forest_grows_as_much_per_unit_of_rain_on_any_map_extent():
    """Cycles are rounds, and a map twice as wide runs 4x the rounds for the same rain
    per area; a tree's chances per cycle then shrink (trees.per_rain), so the same
    rain grows the same forest on a 3.84 and a 7.68 km map. With the full chances every
    cycle the wide map's forest was older and denser."""
    from simcore.engine.simulation import REFERENCE_AREA
    params = {"trees": TreeParams(spawn_tries=20, spread_chance=0.2)}
    per_area = 30 / REFERENCE_AREA  # 30 cycles on the 3.84 km map
    size, density, cover = [], [], []
    for n in (64, 128):  # 60 m cells
        t = Terrain.from_heights(np.zeros((n, n)), 60.0)
        Simulation(t, params, seed=1, particles=round(per_area * (n * 60.0) ** 2)).run()
        size.append(t.trees[:, 2].mean())
        density.append(len(t.trees) / (n * 0.06) ** 2)
        cover.append((t.vegetation > 0.5).mean())
    assert abs(size[1] - size[0]) < 0.02, size
    assert max(density) <= 1.25 * min(density), density
    assert abs(cover[1] - cover[0]) <= 0.1, cover


@given(st.integers(1, 30), st.integers(1, 30),
       st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)), max_size=12),
       st.floats(0.5, 16.0), st.lists(st.integers(1, 29), max_size=5))
def test_root_density_built_in_row_bands_is_the_sum_over_trees_in_order(
        rows, cols, rows_of_trees, radius, cuts):
    # trees anywhere on the grid; the row bands may cut a tree's roots anywhere
    given_trees = np.array([(fx * (cols - 1), fy * (rows - 1), size)
                            for fx, fy, size in rows_of_trees]).reshape(-1, 3)
    expected = np.zeros((rows, cols))
    yy, xx = np.mgrid[0:rows, 0:cols]
    for x, y, size in given_trees:  # in list order, as the kernel adds them up
        d = np.sqrt((yy - y) * (yy - y) + (xx - x) * (xx - x))
        near = (d < radius) & (np.abs(yy - np.floor(y + 0.5)) <= np.ceil(radius)) \
            & (np.abs(xx - np.floor(x + 0.5)) <= np.ceil(radius))
        expected[near] += size * (1.0 - d[near] / radius)
    expected = np.minimum(expected, 1.0)
    edges = sorted({0, rows, *(c for c in cuts if c < rows)})
    vegetation = np.full((rows, cols), 7.0)  # last cycle's values are all rebuilt
    for first, last in reversed(list(zip(edges[:-1], edges[1:]))):  # any order
        trees.root_density_rows(first, last, given_trees, len(given_trees), radius, vegetation)
    np.testing.assert_array_equal(vegetation, expected)


def test_trees_are_the_same_on_one_and_two_threads():
    from simcore.kernels import parallel
    if parallel.most_threads() < 2:
        pytest.skip("one CPU: nothing to compare")
    old = parallel.threads()
    grown = []
    try:
        for threads in (1, 2):
            parallel.set_threads(threads)
            grown.append(grow(terrain(np.zeros((48, 40))), 40))
    finally:
        parallel.set_threads(old)
    assert len(grown[0].trees) > 50
    np.testing.assert_array_equal(grown[0].trees, grown[1].trees)
    np.testing.assert_array_equal(grown[0].vegetation, grown[1].vegetation)
