"""Diffusion-limited aggregation (simcore.generators.ridges): the cluster grows only by
sticking, the article's options do what they say, the ridge terrain is
plausible land in world units."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simcore.generators import ridges as dla
from simcore.params import ParameterError


def assert_grown_by_sticking(c: dla.Cluster, n_start: int) -> None:
    """Every particle after the start touches (8-neighbourhood) an earlier particle,
    its parent; the lattice holds exactly the particles."""
    i = np.arange(n_start, c.size)
    p = c.parent[n_start:]
    assert (c.parent[:n_start] == -1).all()
    assert (p >= 0).all() and (p < i).all(), "parent is always an earlier particle"
    dy, dx = np.abs(c.y[i] - c.y[p]), np.abs(c.x[i] - c.x[p])
    assert (np.maximum(dy, dx) == 1).all(), "every particle touches its parent"
    assert (c.occ[c.y, c.x] == np.arange(c.size)).all()
    assert (c.occ >= 0).sum() == c.size, "one particle per cell, nothing else"


def connected(mask: np.ndarray) -> bool:
    """8-connectivity of a boolean mask by flood fill (independent of parent links)."""
    ys, xs = np.nonzero(mask)
    seen = np.zeros_like(mask)
    stack = [(ys[0], xs[0])]
    seen[ys[0], xs[0]] = True
    while stack:
        r, c = stack.pop()
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                rr, cc = r + dr, c + dc
                if (0 <= rr < mask.shape[0] and 0 <= cc < mask.shape[1]
                        and mask[rr, cc] and not seen[rr, cc]):
                    seen[rr, cc] = True
                    stack.append((rr, cc))
    return bool(seen[mask].all())


def radius_of_gyration(c: dla.Cluster) -> float:
    return float(np.sqrt(((c.x - c.x.mean()) ** 2 + (c.y - c.y.mean()) ** 2).mean()))


def box_dimension(mask: np.ndarray, sizes=(8, 16, 32, 64)) -> float:
    ys, xs = np.nonzero(mask)
    counts = [len(np.unique((ys // e) * 1_000_000 + xs // e)) for e in sizes]
    return float(-np.polyfit(np.log(sizes), np.log(counts), 1)[0])


def slope_degrees(h: np.ndarray, cell: float) -> np.ndarray:
    gy, gx = np.gradient(h, cell)
    return np.degrees(np.arctan(np.hypot(gx, gy)))


def local_maxima(h: np.ndarray) -> np.ndarray:
    c = h[1:-1, 1:-1]
    top = np.ones(c.shape, bool)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dy or dx:
                top &= c > h[1 + dy:h.shape[0] - 1 + dy, 1 + dx:h.shape[1] - 1 + dx]
    return top


# -- the cluster ------------------------------------------------------------------------

def test_single_seed_cluster_is_connected_and_grows_only_by_sticking():
    c = dla.grow_cluster((201, 201), 3000, launch="ring", seed=4)
    assert c.size == 3000
    assert_grown_by_sticking(c, 1)
    assert connected(c.mask())


def test_multiscale_levels_keep_the_sticking_invariant():
    levels = dla.grow_multiscale((12, 12), 3, 0.15, seed=2)
    assert [lv.occ.shape for lv in levels] == [(12, 12), (24, 24), (48, 48), (96, 96)]
    for lv in levels:
        assert_grown_by_sticking(lv, 1)
        assert connected(lv.mask())
        assert lv.size >= 0.15 * lv.occ.size - 1


def test_lower_stickiness_gives_a_denser_cluster():
    loose = [radius_of_gyration(dla.grow_cluster((301, 301), 3000, launch="ring", seed=s))
             for s in range(2)]
    sticky = [radius_of_gyration(dla.grow_cluster((301, 301), 3000, launch="ring", seed=s,
                                                  stickiness=0.05)) for s in range(2)]
    # same particle count packed into a smaller radius (measured: ~84 vs ~50 cells)
    assert np.mean(sticky) < 0.75 * np.mean(loose)


def test_box_counting_dimension_of_unbiased_dla_is_near_1_7():
    dims = [box_dimension(dla.grow_cluster((801, 801), 12000, launch="ring",
                                           seed=s).mask()) for s in range(2)]
    # measured 1.57..1.61 for lattice DLA of 10^4 particles (mass-radius: ~1.65);
    # published ~1.7 for large off-lattice clusters. Lines would give 1, a filled disc 2.
    assert 1.5 < np.mean(dims) < 1.85


def _grown_part(bias: str, start: str = "walls", strength: float = 0.3, shape=(80, 80)):
    begin = dla.start_mask(shape, start, bias="none")
    c = dla.grow_cluster(shape, int(begin.sum()) + 600, start=begin, bias=bias,
                         bias_strength=0.0 if bias == "none" else strength, seed=1)
    assert c.size == int(begin.sum()) + 600, "growth was not cut short"
    assert_grown_by_sticking(c, int(begin.sum()))
    n0 = int(begin.sum())
    return c.y[n0:].astype(float), c.x[n0:].astype(float), c


@pytest.mark.parametrize("bias, axis, sign", [("left", "x", -1), ("right", "x", 1),
                                              ("up", "y", 1), ("down", "y", -1)])
def test_bias_moves_the_mass_the_stated_way(bias, axis, sign):
    y0, x0, _ = _grown_part("none")
    y, x, _ = _grown_part(bias)
    before, after = (x0, x) if axis == "x" else (y0, y)
    # inside a frame of walls, drifting walkers pile up on the side they drift to
    assert sign * (after.mean() - before.mean()) > 10  # cells; measured ~20


def test_equator_meridian_edges_and_center_bias():
    mid = 39.5
    y0, x0, _ = _grown_part("none")
    y, x, _ = _grown_part("equator")
    assert np.abs(y - mid).mean() < 0.6 * np.abs(y0 - mid).mean()
    y, x, _ = _grown_part("meridian")
    assert np.abs(x - mid).mean() < 0.6 * np.abs(x0 - mid).mean()

    def edge(y, x):
        return np.minimum.reduce([x, y, 79 - x, 79 - y]).mean()

    y, x, _ = _grown_part("edges")
    assert edge(y, x) < 0.85 * edge(y0, x0)
    # walkers drifting to the middle meet a middle seed sooner: a compact cluster
    _, _, free = _grown_part("none", start="center", shape=(120, 120))
    _, _, central = _grown_part("center", start="center", shape=(120, 120))
    assert radius_of_gyration(central) < 0.85 * radius_of_gyration(free)  # 19 vs 26


def _grow_left_biased(lost_per_particle: int) -> tuple[int, int, int]:
    """(particles, walkers, lost) of a 600-particle cluster on 64^2 from the middle
    cell with a left bias of 0.3: about 3 walkers are lost per particle."""
    shape = (64, 64)
    occ, ys, xs = dla._seed_cluster(dla.start_mask(shape))
    target = 600
    px, py = np.empty(target, np.int32), np.empty(target, np.int32)
    parent = np.full(target, -1, np.int32)
    px[:1], py[:1] = xs, ys
    bd, near = dla.distance_maps(occ)
    walk = dla._walk("left", 0.3, 0.7, "anywhere", shape)
    n, walkers, lost, _ = dla.grow(occ, px, py, parent, 1, target, bd, near, walk, 3, 7,
                                   np.array([ys.mean(), xs.mean()]), 0.0, lost_per_particle)
    return n, walkers, lost


def test_growth_gives_up_after_so_many_lost_walkers_per_particle():
    """The give-up rule bounds the work when walkers keep getting lost but not 200 in a
    row (each lost walker costs the longest walk); by default a biased walk that loses
    a few walkers per particle still grows its whole cluster. (The old budget counted
    steps, and a biased jump overwrote its counter, so it never stopped anything.)"""
    n, walkers, lost = _grow_left_biased(dla.LOST_PER_PARTICLE)
    assert n == 600 and lost > 2 * 599
    n, walkers, lost = _grow_left_biased(1)
    assert n < 600 and lost == 599 + 200, "stops at 1 lost walker per wanted particle"


def test_a_walk_that_loses_walkers_faster_than_it_grows_gives_up():
    """Walkers drifting left away from a right wall: about 65 are lost per particle,
    seldom 200 in a row. Growth gives up at 50 lost walkers per wanted particle (plus
    200) instead of walking on: each lost walker costs the longest walk (20 000 moves
    here). The old rule, a budget of steps, never stopped it: a biased jump reused the
    budget's counter for its own step count, and this cluster grew all 20 particles
    after 1301 lost walkers."""
    shape = (10, 90)
    wall = dla.start_mask(shape, "walls", bias="right")
    c = dla.grow_cluster(shape, int(wall.sum()) + 20, start=wall, bias="left",
                         bias_strength=0.9, seed=1)
    grown = c.size - int(wall.sum())
    assert grown < 20, "growth gave up"
    assert c.lost == 50 * 20 + 200 == dla.LOST_PER_PARTICLE * 20 + dla.LOST_IN_A_ROW
    assert_grown_by_sticking(c, int(wall.sum()))


def test_start_from_points_walls_and_mask():
    shape = (40, 50)
    pts = dla.start_mask(shape, "points", points=np.array([[5, 5], [30, 40]]))
    assert pts.sum() == 2 and pts[5, 5] and pts[30, 40]
    walls = dla.start_mask(shape, "walls", bias="left")
    assert walls[:, 0].all() and walls.sum() == 40
    assert dla.start_mask(shape, "walls", bias="up")[-1, :].all()
    assert dla.start_mask(shape, "walls", bias="equator")[20, :].all()
    ring = np.zeros(shape, bool)
    ring[10:30, 10] = ring[10:30, 40] = True
    c = dla.grow_cluster(shape, int(ring.sum()) + 300, start=ring, seed=3)
    assert (c.occ[ring] >= 0).all() and (c.parent[:ring.sum()] == -1).all()
    assert_grown_by_sticking(c, int(ring.sum()))
    with pytest.raises(ParameterError, match="empty"):
        dla.start_mask(shape, "mask", mask=np.zeros(shape, bool))
    with pytest.raises(ParameterError, match="bias"):
        dla.grow_cluster(shape, 10, bias="sideways")


def test_same_seed_same_cluster_other_seed_other_cluster():
    floor = dla.start_mask((120, 120), "walls", bias="down")

    def grow(seed):
        return dla.grow_cluster((120, 120), 1500, start=floor, bias="down",
                                bias_strength=0.2, seed=seed)

    a, b, c = grow(9), grow(9), grow(10)
    assert a.size == 1500
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    assert np.array_equal(a.parent, b.parent)
    assert not np.array_equal(a.occ, c.occ)


# -- kernel invariants (hypothesis) ------------------------------------------------------

@given(rows=st.integers(3, 40), cols=st.integers(3, 40), fill=st.floats(0.05, 0.6),
       bias=st.sampled_from(dla.BIASES), strength=st.floats(0.0, 0.8),
       stickiness=st.floats(0.05, 1.0), launch=st.sampled_from(dla.LAUNCHES),
       seed=st.integers(0, 2**32))
def test_growth_invariants(rows, cols, fill, bias, strength, stickiness, launch, seed):
    n = max(2, int(fill * rows * cols))
    c = dla.grow_cluster((rows, cols), n, bias=bias, bias_strength=strength,
                         stickiness=stickiness, launch=launch, seed=seed)
    assert 1 <= c.size <= n
    assert_grown_by_sticking(c, 1)


@given(rows=st.integers(3, 24), cols=st.integers(3, 24), seed=st.integers(0, 2**32),
       jitter=st.floats(0.0, 1.0))
def test_refine_doubles_and_keeps_every_link_touching(rows, cols, seed, jitter):
    c = dla.grow_cluster((rows, cols), max(2, rows * cols // 4), seed=seed)
    occ, x, y, parent, m = dla.refine(c.x, c.y, c.parent, c.size, rows, cols, seed, 1,
                                      jitter)
    fine = dla.Cluster(occ, x, y, parent)
    assert_grown_by_sticking(fine, 1)
    # every old particle is still there, on the doubled lattice
    assert (occ[2 * c.y, 2 * c.x] >= 0).all()
    assert c.size <= m <= 3 * c.size
    depth = dla.tip_depth(parent, m)
    kids = np.arange(1, m)
    assert (depth[parent[kids]] >= depth[kids] + 1).all()


@given(seed=st.integers(0, 2**32), drop=st.floats(0.05, 3.0))
def test_slope_cap_only_lowers_and_bounds_every_slope(seed, drop):
    h = np.random.default_rng(seed).normal(0, 5, (17, 23)).cumsum(axis=0)
    capped = dla.slope_cap(h, drop)
    assert (capped <= h + 1e-12).all()
    for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
        a = capped[dy:, max(dx, 0):capped.shape[1] + min(dx, 0)]
        b = capped[:capped.shape[0] - dy, max(-dx, 0):capped.shape[1] - max(dx, 0)]
        assert (np.abs(a - b) <= drop * math.hypot(dy, dx) + 1e-9).all()
    assert np.allclose(dla.slope_cap(capped, drop), capped), "idempotent"


# -- ridge terrain -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def ridges():
    """10 km x 10 km at 20 m cells, default ridge settings."""
    return dla.ridge_terrain((501, 501), 20.0, dla.RidgeParams(seed=1))


def test_ridge_terrain_is_finite_and_within_the_amplitude(ridges):
    h = ridges.heights
    assert np.isfinite(h).all()
    assert h.min() == pytest.approx(0.0, abs=1e-9)
    assert 0.7 * 1000 < h.max() <= 1000 + 1e-9


def test_ridge_slopes_are_mountain_slopes(ridges):
    s = slope_degrees(ridges.heights, 20.0)
    assert 12 < np.median(s) < 30  # measured ~16-17 degrees
    assert (s > 45).mean() < 0.01
    assert local_maxima(ridges.heights).mean() * 1000 < 2  # peaks, not spikes


def test_ridge_lines_follow_the_cluster(ridges):
    """Crest cells (higher than both neighbours along a row or a column) lie on or next
    to cluster particles far more often than cells in general."""
    h = ridges.heights
    crest = np.zeros(h.shape, bool)
    crest[1:-1, :] |= (h[1:-1] > h[:-2]) & (h[1:-1] > h[2:])
    crest[:, 1:-1] |= (h[:, 1:-1] > h[:, :-2]) & (h[:, 1:-1] > h[:, 2:])
    near = dla.block_distance(ridges.clusters[-1].occ, 1, 4) <= 1
    world = np.arange(501) * 20.0
    r, c = ridges.to_grid(world, world)
    ri = np.clip(np.rint(r).astype(int), 0, near.shape[0] - 1)
    ci = np.clip(np.rint(c).astype(int), 0, near.shape[1] - 1)
    on_cluster = near[np.ix_(ri, ci)]
    crest_share = on_cluster[crest].mean()
    assert crest_share > 0.7
    assert crest_share > on_cluster.mean() + 0.2
    # and the highest ground is where the tree is deepest (the trunk)
    top = np.unravel_index(np.argmax(h), h.shape)
    assert on_cluster[max(top[0] - 3, 0):top[0] + 4, max(top[1] - 3, 0):top[1] + 4].any()


def test_ridges_do_not_depend_on_grid_resolution():
    """The same 8 km square sampled at 40 m and at 20 m gives the same mountains."""
    p = dla.RidgeParams(seed=3)
    coarse = dla.ridge_terrain((201, 201), 40.0, p).heights
    fine = dla.ridge_terrain((401, 401), 20.0, p).heights[::2, ::2]
    assert np.corrcoef(coarse.ravel(), fine.ravel())[0, 1] > 0.97
    assert np.abs(coarse - fine).mean() < 0.05 * p.amplitude


def test_same_seed_same_ridges_and_world_units():
    p = dla.RidgeParams(seed=5, amplitude=500.0)
    a = dla.ridge_terrain((101, 101), 30.0, p).heights
    assert np.array_equal(a, dla.ridge_terrain((101, 101), 30.0, p).heights)
    twice = dla.ridge_terrain((101, 101), 30.0, p.replace(amplitude=1000.0)).heights
    assert twice.max() > a.max()


def test_ridges_from_a_mask_start_on_the_mask():
    mask = np.zeros((201, 201), bool)
    mask[100, 30:170] = True  # a painted line across the map
    p = dla.RidgeParams(start="mask", seed=2)
    h = dla.ridge_terrain((201, 201), 40.0, p, start=mask).heights
    assert h[95:106, 30:170].mean() > np.percentile(h, 80), "the painted line is a crest"
    with pytest.raises(ParameterError, match="mask"):
        dla.ridge_terrain((201, 201), 40.0, p, start=np.zeros((201, 201), bool))


def test_add_ridges_adds_to_existing_heights():
    base = np.linspace(0, 100, 101)[None, :].repeat(101, 0)
    p = dla.RidgeParams(seed=1, amplitude=300.0)
    out = dla.add_ridges(base, 50.0, p)
    diff = out - base
    assert diff.min() >= -1e-9 and diff.max() <= 300 + 1e-9
    assert diff.max() > 150


def test_bad_settings_are_clear_errors():
    with pytest.raises(ParameterError, match="bias"):
        dla.RidgeParams(bias="north")
    with pytest.raises(ParameterError, match="start"):
        dla.RidgeParams(start="everywhere")
    with pytest.raises(ParameterError, match="ridge spacing"):
        dla.ridge_terrain((501, 501), 1000.0, dla.RidgeParams(ridge_spacing=1.0))


# -- the chained preset ------------------------------------------------------------------

def test_ridges_eroded_preset_raises_ridges_then_erodes(tmp_path):
    from simcore.cli import main as cli
    from simcore.formats.presets import dump_preset, find_preset, parse_preset
    from simcore.formats.states import load_state

    preset = find_preset("ridges_eroded")
    assert isinstance(preset.ridges, dla.RidgeParams) and preset.ridges.amplitude == 1000
    assert {"droplets", "thermal"} <= set(preset.enabled_params())
    import tomllib
    again = parse_preset(tomllib.loads(dump_preset(preset)), "round trip")
    assert again.ridges == preset.ridges
    flat = tmp_path / "flat.npy"
    np.save(flat, np.zeros((65, 65)))
    out = tmp_path / "out.npz"
    assert cli.main(["erode", "--preset", "ridges_eroded", "--input", str(flat),
                     "--cell-size", "100", "--particles", "3000", "--output", str(out),
                     "--quiet"]) == 0
    terrain, _ = load_state(out)
    h = terrain.world_height()
    assert np.isfinite(h).all() and h.max() > 300, "mountains were raised"
    assert terrain.eroded.sum() > 0, "then eroded"
    # the same ridges as simcore.generators.ridges makes on its own, before erosion touched them
    ridges = dla.ridge_terrain((65, 65), 100.0, preset.ridges).heights
    assert np.corrcoef(h.ravel(), ridges.ravel())[0, 1] > 0.9


def test_ridges_eroded_leaves_land_not_spikes():
    """The chained preset on its own ridges (10.24 km at 40 m cells,
    the preset's full rain per area) keeps <= 10% of cells above 45 degrees and at most
    1.5x the local maxima of the un-eroded ridges, and really erodes them."""
    from simcore.analysis import landforms
    from simcore.engine.simulation import Simulation
    from simcore.formats.presets import find_preset
    from simcore.terrain import Terrain

    preset = find_preset("ridges_eroded")
    cell = 40.0
    h = dla.add_ridges(np.zeros((256, 256)), cell, preset.ridges)
    before = landforms.slope_stats(h / cell)
    t = Terrain.from_heights(h, cell)
    Simulation(t, preset.enabled_params(), seed=preset.seed, particles=preset.work(t)).run()
    after = landforms.slope_stats(t.height())
    assert after["pct45"] <= 10.0
    assert after["peaks"] <= 1.5 * before["peaks"], "erosion made pinnacles"
    assert np.abs(t.world_height() - h).mean() > 1.0, "the ridges were eroded (metres)"
