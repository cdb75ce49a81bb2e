"""Painted masks inside the simulation: protect, selection falloff,
rain, erodibility and tree seeding, as behaviour and invariants (no bpy)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import small_batches
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.algorithms.masks import MaskError, selection_protect, smoothstep
from simcore.engine.simulation import PROCESSES, Simulation, process_params
from simcore.formats.states import load_state, save_state
from simcore.generators.noise import fractal_terrain
from simcore.terrain import Terrain, TerrainError

#: every process that erodes per particle or pass (not the landscape's fixed work)
EROSIVE = tuple(n for n, p in PROCESSES.items() if "eroded" in p.writes and p.passes is None)


def small(name: str):
    """Default parameters with batches small enough for a few-thousand-particle run."""
    return small_batches(name, 128)


GUARDED = ("bedrock", "sediment", "eroded", "deposited")


@settings(max_examples=25)
@given(n=st.integers(10, 24), seed=st.integers(0, 2**32 - 1),
       procs=st.lists(st.sampled_from(EROSIVE), min_size=1, max_size=3, unique=True),
       partial=st.booleans(), sand=st.floats(0.0, 0.5))
def test_protect_keeps_cells_bit_identical_and_mass_exact(n, seed, procs, partial, sand):
    rng = np.random.default_rng(seed)
    heights = fractal_terrain(n, seed=seed % 1000, relief=float(rng.uniform(2, 12)))
    protect = (rng.random((n, n)) < 0.4).astype(float)
    if partial:
        protect = np.where(rng.random((n, n)) < 0.3, rng.random((n, n)), protect)
    t = Terrain.from_heights(heights, world_units=False, protect=protect,
                             sediment=np.full((n, n), sand))
    t0 = t.copy()
    sim = Simulation(t, {p: small(p) for p in procs}, seed=seed, particles=600)
    sim.run()
    full = protect >= 1.0
    for name in GUARDED:
        assert np.array_equal(getattr(t, name)[full], getattr(t0, name)[full]), name
    assert np.array_equal(t.height()[full], t0.height()[full])
    # the budget: what is on the grid + what left it - what the mask put back
    budget = t.total_material() + t.outflow - sim.protect_held - t0.total_material()
    assert abs(budget) <= 1e-9 * (np.abs(heights).sum() + n * n)
    assert t.sediment.min() >= 0
    assert np.isfinite(sim.protect_held)
    assert np.array_equal(t.erodibility, t0.erodibility), "input map left as it was"


@pytest.mark.parametrize("process", ["droplets", "hydrology", "snowball"])
def test_protected_ground_is_never_a_sediment_source(process):
    """A protected half gives no material to the rest: digging there removes nothing,
    so the only thing held back is sediment that landed on it (protect_held <= 0, a
    booked sink), never material handed out (a source would make it > 0)."""
    h = fractal_terrain(48, seed=2, relief=12)
    protect = np.zeros_like(h)
    protect[:, :24] = 1.0
    t = Terrain.from_heights(h, world_units=False, protect=protect)
    t0 = t.copy()
    sim = Simulation(t, {process: small(process)}, seed=1, particles=4000)
    sim.run()
    moved = np.abs(t.height() - t0.height())[:, 24:].sum()
    assert moved > 1
    assert sim.protect_held <= 0.0


def test_partial_protect_erodes_in_between():
    h = fractal_terrain(48, seed=3, relief=12)
    change = {}
    for p in (0.0, 0.5, 1.0):
        t = Terrain.from_heights(h, world_units=False, protect=np.full(h.shape, p))
        Simulation(t, {"droplets": small("droplets")}, seed=4, particles=4000).run()
        change[p] = np.abs(t.height() - h).sum()
    assert change[1.0] == 0.0
    assert 0.05 * change[0.0] < change[0.5] < 0.8 * change[0.0]


# -- erode only a selection ----------------------------------------------------------
def test_selection_protect_shape():
    sel = np.zeros((40, 40), bool)
    sel[15:25, 15:25] = True
    p = selection_protect(sel, falloff=6.0, cell_x=1.0)
    assert np.all(p[sel] == 0.0)
    assert p.min() == 0.0 and p.max() == 1.0
    from simcore.algorithms.shore import distance_to_sites
    d, _, _ = distance_to_sites(sel)
    assert np.all(p[d >= 6.0] == 1.0) and np.all(p[(d > 0) & (d < 6.0)] < 1.0)
    assert np.all(np.diff(np.sort(p[20]))[:] >= 0)
    # smooth: neighbours differ by at most the smoothstep's steepest slope x one cell
    assert np.abs(np.diff(p, axis=1)).max() <= 1.5 / 6.0 + 1e-12
    # world units: the same falloff on 2x larger cells reaches 1 in half the cells
    p2 = selection_protect(sel, falloff=6.0, cell_x=2.0)
    assert p2[20, 25 + 3] == 1.0 and p[20, 25 + 3] < 1.0
    assert np.array_equal(smoothstep(np.array([-1.0, 0.0, 0.5, 1.0, 2.0])),
                          [0.0, 0.0, 0.5, 1.0, 1.0])
    with pytest.raises(MaskError, match="nothing is selected"):
        selection_protect(np.zeros((5, 5), bool), 1.0)


def _selection_run(falloff: float):
    h = fractal_terrain(64, seed=7, relief=14)
    sel = np.zeros(h.shape, bool)
    sel[20:44, 20:44] = True
    protect = selection_protect(sel, falloff)
    t = Terrain.from_heights(h, world_units=False, protect=protect)
    procs = {"droplets": small("droplets"), "thermal": small("thermal")}
    Simulation(t, procs, seed=11, particles=12000).run()
    return h, t, protect


def _border_step(change: np.ndarray, protect: np.ndarray) -> float:
    """Largest jump of the height change between 4-neighbours where one is outside the
    falloff (protect 1) and the other is not."""
    out = protect >= 1.0
    worst = 0.0
    for a, b, oa, ob in ((change[:, 1:], change[:, :-1], out[:, 1:], out[:, :-1]),
                         (change[1:], change[:-1], out[1:], out[:-1])):
        edge = oa != ob
        if edge.any():
            worst = max(worst, float(np.abs(a - b)[edge].max()))
    return worst


def _jumps(change: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """|change difference| of 4-neighbour pairs both inside ``mask``."""
    out = []
    for a, b, ma, mb in ((change[:, 1:], change[:, :-1], mask[:, 1:], mask[:, :-1]),
                         (change[1:], change[:-1], mask[1:], mask[:-1])):
        out.append(np.abs(a - b)[ma & mb])
    return np.concatenate(out)


def test_eroding_a_selection_leaves_outside_bit_identical_without_a_step():
    h, t, protect = _selection_run(falloff=8.0)
    outside = protect >= 1.0
    assert np.array_equal(t.bedrock[outside], h[outside])
    assert np.array_equal(t.sediment[outside], np.zeros(outside.sum()))
    change = t.height() - h
    inside = _jumps(change, protect == 0.0)
    assert np.abs(change[protect == 0.0]).max() > 0.5, "the selection itself was eroded"
    # no seam: across the falloff's outer edge the change jumps no more than it does
    # between ordinary neighbours inside the selection (their largest jump; the 99th
    # percentile was 1.40 against a border step of 1.49 once droplets laid their load
    # down over the brush)
    soft = _border_step(change, protect)
    assert soft <= inside.max()
    # a hard cut (no falloff) on the same run leaves a step larger than any of those
    _, hard_t, hard_p = _selection_run(falloff=0.0)
    hard_change = hard_t.height() - h
    hard = _border_step(hard_change, hard_p)
    assert hard > _jumps(hard_change, hard_p == 0.0).max()
    assert hard > 3 * soft


# -- rain ------------------------------------------------------------------------------
def _downstream(h: np.ndarray, start: np.ndarray, climb: float) -> np.ndarray:
    """Cells reachable from ``start`` by 8-neighbour steps that never climb more than
    ``climb`` (cell units)."""
    rows, cols = h.shape
    reach = start.copy()
    while True:
        grown = reach.copy()
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                if dr == dc == 0:
                    continue
                src = np.zeros_like(reach)
                hs = np.full(h.shape, -np.inf)
                rs = slice(max(-dr, 0), rows - max(dr, 0))
                cs = slice(max(-dc, 0), cols - max(dc, 0))
                rd = slice(max(dr, 0), rows - max(-dr, 0))
                cd = slice(max(dc, 0), cols - max(-dc, 0))
                src[rd, cd] = reach[rs, cs]
                hs[rd, cd] = h[rs, cs]
                grown |= src & (h <= hs + climb)
        if np.array_equal(grown, reach):
            return reach
        reach = grown


def _tilted(n=48):
    """A plane falling toward +x (slope 0.15, about 8.5 degrees) with 1-cell noise."""
    y, x = np.mgrid[0:n, 0:n].astype(float)
    return 0.15 * (n - x) + fractal_terrain(n, seed=9, relief=1.0)


#: hydrology's rain volume is in m³: use a real cell size (10 m), not 1 m cells
CELL = 10.0


def test_rain_only_inside_a_mask_makes_streams_only_downstream():
    h = _tilted()
    rain = np.zeros(h.shape)
    rain[20:28, 20:26] = 1.0
    procs = {"hydrology": small("hydrology")}
    t = Terrain.from_heights(h, CELL, world_units=False, rain=rain)
    Simulation(t, procs, seed=5, particles=1500).run()
    start = np.zeros(h.shape, bool)
    start[19:29, 19:27] = True  # the squares a rain cell's weight reaches
    down = _downstream(h, start, climb=0.0)
    wet = t.stream > 1e-6
    assert wet.sum() > 20, "the masked rain made streams"
    assert not (wet & ~down).any(), "a stream outside the rain's downstream area"
    changed = t.height() != h
    assert not (changed & ~down).any()
    assert (~down).sum() > 0.4 * h.size, "the check covers much of the map"
    # the same run with rain everywhere wets the rest too (the test can fail)
    u = Terrain.from_heights(h, CELL, world_units=False)
    Simulation(u, procs, seed=5, particles=1500).run()
    assert ((u.stream > 1e-6) & ~down).sum() > 20


def test_rain_mask_must_rain_somewhere():
    with pytest.raises(TerrainError, match="rain"):
        Terrain.from_heights(np.zeros((8, 8)), rain=np.zeros((8, 8)))


# -- erodibility -----------------------------------------------------------------------
@pytest.mark.parametrize("process", ["droplets", "hydrology"])
def test_low_erodibility_erodes_measurably_less(process):
    h = fractal_terrain(48, seed=12, relief=12)
    eroded = {}
    for k in (1.0, 0.1):
        erod = np.ones(h.shape)
        erod[:, :24] = k
        t = Terrain.from_heights(h, CELL, world_units=False, erodibility=erod)
        Simulation(t, {process: small(process)}, seed=2, particles=4000).run()
        eroded[k] = t.eroded[:, :24].sum(), t.eroded[:, 24:].sum()
    hard, soft = eroded[0.1][0], eroded[1.0][0]
    assert hard < 0.5 * soft, (hard, soft)
    assert eroded[0.1][1] > 0.3 * eroded[1.0][1], "the soft half still erodes"


# -- trees -----------------------------------------------------------------------------
def test_trees_take_root_only_where_seeding_allows():
    h = np.zeros((40, 40))
    seeding = np.zeros(h.shape)
    seeding[:, 20:] = 1.0
    params = process_params("trees").replace(spawn_tries=20, spread_chance=0.2,
                                                 spread_distance=4.0, root_distance=2.0)
    t = Terrain.from_heights(h, world_units=False, tree_seeding=seeding)
    Simulation(t, {"trees": params}, seed=3, particles=200).run()
    assert len(t.trees) > 30
    assert t.trees[:, 0].min() >= 19.5
    half = np.where(seeding > 0, 0.5, 0.0)
    u = Terrain.from_heights(h, world_units=False, tree_seeding=half)
    Simulation(u, {"trees": params}, seed=3, particles=200).run()
    assert 0 < len(u.trees) < len(t.trees)
    assert u.trees[:, 0].min() >= 19.5


def test_masks_survive_a_state_file(tmp_path):
    h = fractal_terrain(16, seed=1)
    protect = np.zeros(h.shape)
    protect[3:6, 3:6] = 0.7
    t = Terrain.from_heights(h, world_units=False, protect=protect,
                             tree_seeding=np.full(h.shape, 0.25))
    path = save_state(tmp_path / "s.npz", t, {"seed": 1})
    back, _ = load_state(path)
    assert np.array_equal(back.protect, protect)
    assert np.array_equal(back.tree_seeding, t.tree_seeding)
    with pytest.raises(TerrainError, match="protect"):
        Terrain.from_heights(h, protect=np.full(h.shape, 1.5))
