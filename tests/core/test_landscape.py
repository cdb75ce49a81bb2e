"""Landscape evolution (simcore/processes/landscape.py): steady state, concavity,
drained land with lakes at their spill levels, books, age, resolution, bad input.
The contract every process keeps (mass, determinism at any thread count, protect,
untouched arrays) is tests/core/test_contract.py."""

from __future__ import annotations

import numpy as np
import pytest
from test_drainage import reference_fill

from simcore.analysis import landforms
from simcore.engine.simulation import Simulation, process_params
from simcore.formats.presets import load_preset, preset_files
from simcore.generators.noise import upland_terrain
from simcore.params import ParameterError
from simcore.processes import landscape
from simcore.terrain import Terrain, TerrainError


def _noise(size: int, seed: int = 1) -> np.ndarray:
    h = np.random.default_rng(seed).random((size, size))
    h[0, :] = h[-1, :] = h[:, 0] = h[:, -1] = 0.0
    return h


@pytest.mark.parametrize("m,n,k", [(0.45, 1.0, 2e-5), (0.6, 1.5, 2e-6)])
def test_uniform_uplift_reaches_steady_state_with_concavity_m_over_n(m, n, k):
    """Pure stream power under uniform uplift: erosion balances uplift everywhere, and
    channel slope falls with drainage area as A^-(m/n)."""
    t = Terrain.from_heights(_noise(48), 100.0)
    p = landscape.LandscapeParams(uplift=1e-3, k=k, m=m, n=n, diffusivity=0.0,
                                  deposition=0.0, time_step=2e4, head_area=0.0)
    height = t.height()
    relief = []
    for step in range(1200):
        landscape.evolve(t, p, p.time_step, height, rows_first=step % 2 == 0)
        relief.append(np.ptp(height))
    before = t.world_height()
    landscape.evolve(t, p, p.time_step, height)
    rate = (t.world_height() - before)[1:-1, 1:-1] / (p.uplift * p.time_step)
    assert np.abs(rate).max() <= 0.01, "uplift = erosion everywhere within 1%"
    assert relief[-1] == pytest.approx(relief[-100], rel=1e-3), "relief stopped growing"
    fit = landforms.slope_area(t.height(), 100.0, min_cells=1)
    assert fit["theta"] == pytest.approx(m / n, abs=0.05)
    assert fit["r2"] > 0.99


def test_uplift_and_the_age_add_up_exactly():
    """The passes add up to the age (the last one shortened); interior rock rises by
    uplift x age x the uplift map, the edges (base level) not at all."""
    h = upland_terrain(24, seed=3)
    lift_map = np.linspace(0.0, 2.0, 24)[None, :].repeat(24, 0)
    t = Terrain.from_heights(h, 30.0, uplift=lift_map)
    p = process_params("landscape", {"age": 95_000.0, "time_step": 10_000.0, "batch": 3,
                                     "uplift": 2e-3})
    assert landscape.steps(p) == 10
    sim = Simulation(t, {"landscape": p}, particles=1)
    sim.run()
    assert sim.rounds_done == 4  # ceil(10 passes / 3 a round), not the 1 particle
    want = 2e-3 * 95_000.0 * lift_map / 30.0
    want[0, :] = want[-1, :] = want[:, 0] = want[:, -1] = 0.0
    assert np.allclose(t.uplifted, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("open_edges", [False, True])
def test_books_close_step_by_step(open_edges):
    """What goes out at the edges is what the rivers carried there plus what the
    hillslopes diffused across them (plus, with open edges, what the edges lost
    sinking to the land inside); uplift in, outflow out, the rest is the ground."""
    t = Terrain.from_heights(upland_terrain(40, seed=5), 30.0)
    p = landscape.LandscapeParams(deposition=1.0, diffusivity=0.5, k=5e-5,
                                  open_edges=open_edges)
    height = t.height()
    filled = 0.0
    for step in range(12):
        total0, out0 = t.total_material(), t.outflow
        books = landscape.evolve(t, p, p.time_step, height, rows_first=step % 2 == 0)
        # what the rivers cut went out, onto valley floors or into lakes
        assert books["incised"] == pytest.approx(
            books["rivers_out"] + books["floors"] + books["lakes"], rel=1e-9)
        filled += books["lakes"]
        gone = t.outflow - out0
        assert gone == pytest.approx(books["rivers_out"] + books["hillslopes_out"]
                                     + books["edges_out"], rel=1e-9, abs=1e-9)
        assert books["edges_out"] >= 0.0 and (open_edges or books["edges_out"] == 0.0)
        assert t.total_material() - total0 == pytest.approx(books["uplift"] - gone,
                                                            rel=1e-9, abs=1e-6)
        assert books["rivers_out"] >= 0.0
    assert filled > 0.0 and books["floors"] > 0.0, "lakes filled, floors built"
    assert np.array_equal(t.height(), height)


def test_drained_land_has_lakes_only_at_their_spill_levels():
    """On the generated uplands (a fifth of the map in closed basins deeper than 1 m),
    the young range drains the land through one network: what basins remain hold
    lakes, each surface at its spill level (an independent priority-flood)."""
    h = upland_terrain(96, seed=4)
    t = Terrain.from_heights(h, 30.0)
    assert landforms.closed_basin_share(t.height(), 30.0) > 0.1
    preset = load_preset(preset_files()["young_range"])
    Simulation(t, {"landscape": preset.params["landscape"]}, particles=1).run()
    height = t.height()
    assert landforms.closed_basin_share(height, 30.0) < 0.01
    assert np.allclose(t.pool, reference_fill(height) - height, rtol=0.0, atol=1e-9)
    # the rivers: channels draining more than 1 km² (stream >= 0.25, the rivers export's
    # threshold), the trunk rivers the strongest
    assert t.stream.max() == pytest.approx(0.25 + 0.25 * np.log10(
        96 * 96 * 900.0 / 1e6), abs=0.3)
    assert 0.001 < (t.stream >= 0.25).mean() < 0.1
    water = t.pool > 0
    assert water.mean() < 0.01
    assert np.all(np.isclose((height + t.pool)[water], reference_fill(height)[water]))


@pytest.mark.slow
def test_the_same_world_at_two_resolutions_evolves_alike():
    """256² at 30 m and 512² at 15 m, one world, the process's defaults: the height
    changes agree after block-averaging (r >= 0.9) and the relief within 5%."""
    p = process_params("landscape", {"time_step": 2e4, "batch": 50})
    out = {}
    for size, cell in ((256, 30.0), (512, 15.0)):
        h = upland_terrain(size, seed=4, cell_size=cell, relief=900.0)
        t = Terrain.from_heights(h, cell)
        Simulation(t, {"landscape": p}, particles=1).run()
        out[size] = (h, t.world_height())
    (h1, a1), (h2, a2) = out[256], out[512]
    r = landforms.correlation(a1 - h1, landforms.block_mean(a2 - h2))
    assert r >= 0.9
    assert np.ptp(a2) == pytest.approx(np.ptp(a1), rel=0.05)


@pytest.mark.parametrize("key,value", [
    ("k", -1e-5), ("k", float("nan")), ("m", -0.1), ("n", 0.0), ("n", 50.0),
    ("uplift", -1e-3), ("uplift", 5.0), ("age", -1.0), ("age", float("inf")),
    ("time_step", 0.0), ("diffusivity", -1.0), ("deposition", -0.5)])
def test_absurd_parameters_are_refused_with_their_range(key, value):
    with pytest.raises(ParameterError, match=key):
        process_params("landscape", {key: value})


def test_a_nan_in_the_uplift_map_is_refused_before_anything_runs():
    uplift = np.ones((8, 8))
    uplift[2, 3] = np.nan
    with pytest.raises(TerrainError, match="uplift.*NaN"):
        Terrain.from_heights(np.zeros((8, 8)), 30.0, uplift=uplift)
    with pytest.raises(TerrainError, match="at least 3x3"):
        Terrain.from_heights(np.zeros((2, 8)), 30.0)


def test_generate_makes_drained_land_and_raw_noise_on_request(tmp_path):
    """``generate`` drains the noise by default (no closed basin deeper than 1 m, slopes
    of real uplands, concave rivers); ``--raw`` keeps the old noise."""
    from simcore.cli.main import main
    drained, raw = tmp_path / "d.npy", tmp_path / "r.npy"
    assert main(["generate", "--size", "96", "--seed", "4", "--output", str(drained)]) == 0
    assert main(["generate", "--size", "96", "--seed", "4", "--raw", "--output",
                 str(raw)]) == 0
    h, noise = np.load(drained) / 30.0, np.load(raw) / 30.0
    assert landforms.closed_basin_share(noise, 30.0) > 0.1
    assert landforms.closed_basin_share(h, 30.0) == 0.0
    s = landforms.slope_stats(h)
    assert 10.0 <= s["p50"] <= 25.0 and s["pct45"] == 0.0
    fit = landforms.slope_area(h, 30.0)
    assert 0.2 <= fit["theta"] <= 0.6 and fit["r2"] > 0.8
    assert main(["generate", "--size", "96", "--relief", "500", "--output",
                 str(drained)]) == 0
    assert np.ptp(np.load(drained)) == pytest.approx(500.0)


def test_age_is_the_landscapes_total_age_across_runs():
    """A run that resumes after the age was reached says so and does nothing; raising
    the age continues from there (the same land as one run to the higher age). (An
    empty run's rounds count: their passes are spent; an Erode after the age is
    reached moves later raises on by those passes.)"""
    def params(age):
        return process_params("landscape", {"age": age, "time_step": 1e4, "batch": 2})

    h = upland_terrain(24, seed=3)
    t = Terrain.from_heights(h, 30.0)
    first = Simulation(t, {"landscape": params(4e4)}, particles=1)
    assert first.advice() == []
    first.run()
    done = first.rounds_done
    spare = t.copy()
    again = Simulation(spare, {"landscape": params(4e4)}, particles=1, rounds_done=done)
    assert "raise it" in again.advice()[0]
    again.run()
    assert np.array_equal(spare.height(), t.height())
    more = Simulation(t, {"landscape": params(8e4)}, particles=1, rounds_done=done)
    more.run()
    once = Terrain.from_heights(h, 30.0)
    Simulation(once, {"landscape": params(8e4)}, particles=1).run()
    assert np.array_equal(t.uplifted, once.uplifted)
    assert np.allclose(t.height(), once.height(), rtol=0, atol=1e-12)


def test_a_grid_of_centimetre_cells_is_told_its_real_size_matters():
    p = process_params("landscape")
    t = Terrain.from_heights(upland_terrain(16, seed=1, cell_size=0.02), 0.02)
    assert "real size" in Simulation(t, {"landscape": p}, particles=1).advice()[0]
    t = Terrain.from_heights(upland_terrain(16, seed=1), 30.0)
    assert Simulation(t, {"landscape": p}, particles=1).advice() == []


def test_open_edges_leave_no_rim_around_worn_land():
    """Without uplift the interior wears down; fixed edges stand above it as a rim,
    open edges sink with it (never above their lowest inner neighbour)."""
    h = upland_terrain(48, seed=2)
    out = {}
    for open_edges in (False, True):
        t = Terrain.from_heights(h, 30.0)
        p = process_params("landscape", {"age": 2e6, "time_step": 5e4, "uplift": 0.0,
                                         "diffusivity": 0.05, "open_edges": open_edges,
                                         "batch": 100})
        Simulation(t, {"landscape": p}, particles=1).run()
        out[open_edges] = t.world_height()
    edge = np.zeros(h.shape, bool)
    edge[0, :] = edge[-1, :] = edge[:, 0] = edge[:, -1] = True
    assert np.allclose(out[False][edge], h[edge], rtol=1e-12), "fixed edges stay"
    rim = out[False][0, 1:-1] - out[False][1, 1:-1]
    assert rim.max() > 10.0, "a rim stands above the worn land"
    opened = out[True]
    row = opened[1].copy()
    row[0] = row[-1] = np.inf  # (1, 0) and (1, cols-1) are edge cells themselves
    inner = np.minimum(np.minimum(row[:-2], row[1:-1]), row[2:])
    assert (opened[0, 1:-1] <= inner + 1e-9).all()


@pytest.mark.parametrize("alpha", [0.5, 4.0, 10.0])
def test_diffusion_decays_a_fourier_mode_as_the_heat_equation_at_any_step(alpha):
    """Diffusion alone (edges fixed at 0) on one Fourier mode, sin(4 pi x / L) sin(2 pi y
    / L): it decays as exp(-D k² t) (k² as the grid's Laplacian sees it, 4 sin²(k dx / 2)
    a direction) to 0.1% over four steps, whether D dt / dx² is below 1 (ADI) or far
    above (SDIRK2); backward Euler x then y is 0.3% off at 4 and 2% at 10. The shortest
    wave (a checkerboard), which ADI would leave ringing at long steps, loses 90% of
    itself in one step."""
    size = 129
    x = np.arange(size) / (size - 1)
    mode = np.outer(np.sin(4.0 * np.pi * x), np.sin(2.0 * np.pi * x))
    h = 100.0 * mode
    steps = 4
    for _ in range(steps):
        landscape._diffuse(h, alpha)
    k2 = 4.0 * (np.sin(4.0 * np.pi / (2 * (size - 1))) ** 2
                + np.sin(2.0 * np.pi / (2 * (size - 1))) ** 2)  # per cell²
    amplitude = (h * mode).sum() / (mode * mode).sum() / 100.0
    assert amplitude == pytest.approx(np.exp(-alpha * k2 * steps), rel=1e-3)
    assert np.allclose(h, 100.0 * amplitude * mode, rtol=0.0, atol=1e-9)
    checker = np.zeros((size, size))
    checker[1:-1, 1:-1] = (-1.0) ** np.add.outer(np.arange(size - 2), np.arange(size - 2))
    landscape._diffuse(checker, alpha)
    assert np.abs(checker).max() < 0.1  # ADI at D dt / dx² = 10 would keep 0.89


@pytest.mark.parametrize("diffusivity", [0.02, 0.5])
def test_a_step_is_the_same_on_one_thread_and_two(diffusivity):
    """ADI (D dt / dx² = 0.2) and SDIRK2 (5): bands of rows and of columns on the pooled
    threads, each row and column solved alone, so any thread count gives the same bits."""
    from simcore.kernels import parallel
    h = upland_terrain(37, 53, seed=6)
    out = []
    old = parallel.threads()
    try:
        for threads in (1, 2):
            parallel.set_threads(threads)
            t = Terrain.from_heights(h, 10.0)
            p = landscape.LandscapeParams(diffusivity=diffusivity, time_step=1e3)
            height = t.height()
            for step in range(3):
                landscape.evolve(t, p, p.time_step, height, rows_first=step % 2 == 0)
            out.append(t.height())
    finally:
        parallel.set_threads(old)
    assert np.array_equal(out[0], out[1])


@pytest.mark.parametrize("alpha", [2.0, 10.0])
def test_a_gaussian_hill_spreads_as_the_heat_equation_beyond_alpha_one(alpha):
    """Diffusion alone on a round Gaussian hill (sigma 4 cells, far from the fixed edges):
    after four steps of D dt / dx² = 2 or 10 it is the analytic hill, sigma² grown by
    2 D t and its peak lowered by as much, to 0.5% of the peak everywhere, and its volume
    is kept."""
    size, sigma2 = 97, 16.0
    y, x = np.mgrid[0:size, 0:size] - size // 2
    r2 = x * x + y * y
    h = 100.0 * np.exp(-r2 / (2.0 * sigma2))
    volume = h.sum()
    steps = 4
    for step in range(steps):
        landscape._diffuse(h, alpha, rows_first=step % 2 == 0)
    spread = sigma2 + 2.0 * alpha * steps
    exact = 100.0 * sigma2 / spread * np.exp(-r2 / (2.0 * spread))
    assert np.abs(h - exact).max() < 0.005 * exact.max()
    assert h.sum() == pytest.approx(volume, rel=1e-4)
