"""Dunes that ignore the grid and come in families, with the desert preset's
wind on fixed seeds: the preset as shipped on the starts its description names; the same
dunes turned with the wind at 0, 22.5 and 45 degrees to the grid; barchans from a thin
patchy sand cover, transverse ridges from a thick one, linear dunes from two winds.
Figures from ``simcore.analysis.landforms``.

A run's work is rounded up to whole rounds (the preset's 25,000 wind particles and one
thermal pass): on a 128 m map a share of 1/8 of the preset's wind runs one round, 1/2
two, 5/8 two, 4 thirteen: each test below shows what it shows at that number of
rounds."""

import dataclasses

import numpy as np
import pytest

from simcore.analysis.landforms import (
    crest_orientation,
    crest_trend,
    dune_spacing,
    sand_bodies,
    streaks,
)
from simcore.engine.simulation import Simulation
from simcore.formats.presets import find_preset
from simcore.kernels import parallel
from simcore.processes.wind import WindParams, measure_dunes, run_batch
from simcore.terrain import Terrain


def sand_sea(n=128, seed=2):
    """Flat bedrock under 0-12 m of uniform random sand, 1 m cells."""
    sed = np.random.default_rng(seed).uniform(0.0, 12.0, (n, n))
    return Terrain.from_heights(np.zeros((n, n)), 1.0, world_units=True, sediment=sed)


def patchy_sand(n=128, mean=0.3, seed=3):
    """Flat bedrock with sand in patches (smooth noise, about 6 m across, cut at zero)
    averaging ``mean`` metres: a thin cover, bare rock between."""
    f = np.random.default_rng(seed).standard_normal((n, n))
    k = np.fft.fftfreq(n)
    f = np.real(np.fft.ifft2(np.fft.fft2(f) * np.exp(-(np.hypot(k[:, None], k[None, :])
                                                        * 6.0) ** 2)))
    sed = np.maximum((f - f.mean()) / f.std() + 0.5, 0.0)
    return Terrain.from_heights(np.zeros((n, n)), 1.0, world_units=True,
                                sediment=sed * mean / sed.mean())


def sand_piles(n=128, cell=1.0, relief=24.0, cover=2.0, seed=5):
    """Large noise over a sand cover: ``cover`` metres of sand everywhere under
    0-``relief`` m more in smooth piles (Gaussian noise filtered over 40 m: wavelengths of
    60 m and more, several times the desert preset's dunes). ``n`` cells of 1 m; with
    ``cell`` > 1 the block mean of that world on ``n / cell`` cells."""
    f = np.random.default_rng(seed).standard_normal((n, n))
    k = np.fft.fftfreq(n)
    f = np.real(np.fft.ifft2(np.fft.fft2(f) * np.exp(-(np.hypot(k[:, None], k[None, :])
                                                        * 40.0) ** 2)))
    sed = cover + relief * (f - f.min()) / (f.max() - f.min())
    b, m = int(cell), int(n // cell)
    sed = sed.reshape(m, b, m, b).mean(axis=(1, 3)) / cell
    return Terrain.from_heights(np.zeros((m, m)), cell, world_units=True, sediment=sed)


def sand_sheet(n=160, depth=4.0, noise=0.1, seed=2):
    """A flat sand sheet: ``depth`` metres of sand on flat bedrock, roughened by 0 to
    ``noise`` metres of uniform random sand, 1 m cells."""
    sed = depth + np.random.default_rng(seed).uniform(0.0, noise, (n, n))
    return Terrain.from_heights(np.zeros((n, n)), 1.0, world_units=True, sediment=sed)


def sand_on_rock(n=160, cover=2.0, seed=4):
    """Sand over a rock plain: 0-1 m of random rock relief under ``cover`` to
    ``cover`` + 0.2 m of sand, 1 m cells (the dunes' troughs reach the rock)."""
    rng = np.random.default_rng(seed)
    rock = rng.uniform(0.0, 1.0, (n, n))
    return Terrain.from_heights(rock, 1.0, world_units=True,
                                sediment=cover + rng.uniform(0.0, 0.2, (n, n)))


def desert(t, wind_share=1.0, **wind):
    """The desert preset on ``t`` (``wind_share`` x its wind per area), wind settings
    overridden by ``wind``; checks the sand books and returns the wind's params."""
    preset = find_preset("desert_dunes")
    params = preset.enabled_params()
    params["wind"] = dataclasses.replace(params["wind"], **wind)
    total0 = t.total_material()
    Simulation(t, params, seed=preset.seed,
               particles=int(preset.work(t) * wind_share)).run()
    assert params["wind"].wrap and t.outflow == 0.0
    assert abs(t.total_material() - total0) < 1e-9 * total0, "the sand sea keeps its sand"
    return params["wind"]


@pytest.mark.parametrize("start", [
    sand_sea, sand_sheet, pytest.param(sand_on_rock, marks=pytest.mark.slow)])
def test_the_desert_preset_as_shipped_makes_dunes_on_the_starts_it_names(start):
    """The preset with its own wind per area (4.6 particles of 0.4 m³ per m²) and wind
    direction, on 160 m maps of 1 m cells (five rounds: 1.06x its work, where a 128 m
    map would get 1.33x): 0-12 m of random sand, a flat 4 m sand sheet with 0.1 m of
    noise, 2 m of sand over a rough rock plain. Each becomes transverse dunes with slip
    faces at the angle of repose; the sheet and the rock plain start without any."""
    n = 160
    t = start(n=n)
    preset = find_preset("desert_dunes")
    direction = preset.params["wind"].direction
    before = measure_dunes(t.height(), direction, 1.0, DUNE_WAVELENGTHS)
    total0 = t.total_material()
    sim = Simulation(t, preset.enabled_params(), seed=preset.seed,
                     particles=preset.work(t))
    assert preset.work(t) == round(preset.particles_per_area * n * n)
    assert sim.target_particles <= 1.1 * preset.work(t), "the preset's work, not more"
    sim.run()
    assert t.outflow == 0.0 and abs(t.total_material() - total0) < 1e-9 * total0
    h = t.height()
    m = measure_dunes(h, direction, 1.0, DUNE_WAVELENGTHS)
    assert before["lee_stoss"] < 1.2, before
    assert m["spectral_share"] >= 0.3 and m["lee_stoss"] >= 1.5, m
    assert 26.0 <= m["lee_p50_deg"] <= 34.0, m
    assert 20.0 <= dune_spacing(h, direction) <= 60.0, m
    assert abs(crest_orientation(h, direction)["normal_deg"]) <= 15.0


def test_dunes_turn_with_the_wind_and_ignore_the_grid():
    """Thick sand, an eighth of the preset's wind (one round on the 128 m map, a third
    of its wind per area): transverse dunes whose crests stand square to the wind and whose
    spacing stays the same at 0, 22.5 and 45 degrees to the grid, without streaks along
    the wind or crest segments snapped to the grid's axes."""
    normals, spacings = [], []
    for direction in (0.0, 22.5, 45.0):
        t = sand_sea()
        desert(t, wind_share=0.125, direction=direction)
        h = t.height()
        o = crest_orientation(h, direction)
        m = measure_dunes(h, direction, band=(5.0, 64.0))
        normals.append(o["normal_deg"])
        spacings.append(dune_spacing(h, direction))
        assert abs(o["normal_deg"]) <= 8.0, (direction, o)  # transverse
        assert o["axis_excess"] <= 1.3, (direction, o)  # no steps along rows/columns
        assert streaks(h, direction) <= 1.2, direction  # no grooves along the wind
        trend = crest_trend(h)["trend_deg"]  # crests run across the wind
        assert abs((trend - direction - 90.0 + 90.0) % 180.0 - 90.0) <= 15.0, (direction,
                                                                              trend)
        assert m["lee_stoss"] >= 1.5 and 26.0 <= m["lee_p50_deg"] <= 34.0, (direction, m)
        assert (t.sediment > 0.05).mean() > 0.95, "a sand sea: no bare rock"
    assert max(normals) - min(normals) <= 10.0, normals
    assert 15.0 <= min(spacings) and max(spacings) <= 1.15 * min(spacings), spacings


def test_without_the_splash_rows_of_cells_streak_along_the_wind():
    """The streak figure sees the grid's marks: without reptation neighbouring rows of
    cells evolve apart (grooves along a wind blowing along the rows)."""
    t = sand_sea()
    desert(t, wind_share=0.125, direction=0.0, splash=0.0)
    assert streaks(t.height(), 0.0) >= 2.0


def test_thin_patchy_sand_makes_barchans():
    """A thin patchy cover (0.3 m on average) on bare rock: isolated crescents, horns
    downwind, with half the preset's sand. The preset's dunes at half size to fit
    several on 128 m: the saturation length (1.5 m) and the ground the crest speed-up
    compares with (fetch and lookahead, 17.5 m) halved, and the parcel a particle
    carries with them (0.2 m³, twice the particles: with the preset's 0.4 m³ the horns
    lead by 0.048, just short)."""
    t = patchy_sand()
    before = sand_bodies(t.sediment, 0.0)
    desert(t, wind_share=1.0, direction=0.0, saturation_length=1.5, fetch=17.5,
           lookahead=17.5, capacity=0.2)
    b = sand_bodies(t.sediment, 0.0)
    assert b["bare"] >= 0.5, b  # isolated bodies on bare rock
    assert b["bodies"] >= 2.0, b  # at least 4 on the 128 x 128 map
    assert b["horns"] >= 0.6 and b["horn_lead"] >= 0.05, (before, b)
    assert not before["horn_lead"] >= 0.05, before  # the patches were no crescents


#: the desert preset's dune wavelengths, metres: 5 m to 48 m (its dunes stand 42-45 m
#: apart on flat sand, 128/3 = 42.7 m the spectral peak on a 128 m map; the map's
#: longest waves, 64 and 128 m, are out)
DUNE_WAVELENGTHS = (5.0, 48.0)
@pytest.mark.parametrize("cell,wind_share", [
    (1.0, 1.0), (2.0, 1.0), pytest.param(1.0, 4.0, marks=pytest.mark.slow)])
def test_dunes_from_any_start(cell, wind_share):
    """24 m of smooth sand piles over 2 m of sand (the dunes stand 5-7 m): the
    preset's wind (4.6 particles of 0.4 m³ per m²) reorganises them into transverse
    dunes 32-43 m apart, the same on 1 and 2 m cells, and 4x keeps them so (their size
    is bounded by the preset's centred reference, ``lookahead = fetch``): at least 30%
    of the along-wind energy at dune wavelengths where the piles had 17%, slip faces
    (lee/stoss >= 1.5), several dunes on the 128 m map."""
    t = sand_piles(cell=cell)
    h0 = t.height()
    band = (DUNE_WAVELENGTHS[0] / cell, DUNE_WAVELENGTHS[1] / cell)  # cells
    before = measure_dunes(h0, 0.0, cell, band)
    desert(t, wind_share=wind_share, direction=0.0)
    h = t.height()
    m = measure_dunes(h, 0.0, cell, band)
    assert before["spectral_share"] < 0.2 and before["lee_stoss"] < 1.2, before
    assert m["spectral_share"] >= 0.3 and m["lee_stoss"] >= 1.5, m
    assert 20.0 <= dune_spacing(h, 0.0, cell) <= 48.0  # several dunes, not one map-long
    assert 20.0 <= m["wavelength_m"] <= 48.0, m
    assert np.ptp(h0) >= 3.0 * np.ptp(h), (np.ptp(h0), np.ptp(h))  # relief: several dunes'


def test_without_a_bound_on_their_size_sand_piles_merge_into_one_dune():
    """The same piles and wind with the crest speed-up measured against the ground
    upwind only (``lookahead = 0``, the wind before the bound): every long wave grows,
    and the piles end as one dune as long as the map."""
    t = sand_piles(cell=1.0)
    desert(t, direction=0.0, lookahead=0.0)
    m = measure_dunes(t.height(), 0.0, 1.0, DUNE_WAVELENGTHS)
    assert m["spectral_share"] < 0.1 and m["wavelength_m"] > 64.0, m


@pytest.mark.slow
def test_two_winds_make_linear_dunes_along_their_resultant():
    """Two winds of equal share 120 degrees apart (towards -60 and +60 degrees), 5/8 of
    the preset's wind: linear dunes along their resultant (+x), where one wind makes
    crests across it."""
    t = sand_sea()
    desert(t, wind_share=0.625, direction=-60.0, direction2=60.0, share2=0.5)
    c = crest_trend(t.height())
    assert min(c["trend_deg"], 180.0 - c["trend_deg"]) <= 15.0, c  # along x
    assert c["coherence"] >= 0.3, c
    assert crest_trend(sand_sea().height())["coherence"] < 0.1  # the start had no trend


def test_two_winds_splash_and_lookahead_keep_mass_and_are_deterministic_at_any_thread_count():
    n = 48
    yy, xx = np.mgrid[0:n, 0:n]
    hills = 3.0 * np.sin(xx / 5.0) * np.cos(yy / 7.0) + 0.1 * xx
    p = WindParams(direction=200.0, direction2=80.0, share2=0.3, splash=0.5, lookahead=6.0,
                   batch=200)
    ts = [Terrain.from_heights(hills, world_units=False, sediment=np.full((n, n), 0.5))
          for _ in range(2)]
    threads = parallel.threads()
    try:
        for t, k in zip(ts, (1, parallel.most_threads())):
            parallel.set_threads(k)
            total0 = t.total_material()
            for b in range(5):
                run_batch(t, p, 7, b * p.batch, p.batch)
            assert t.outflow > 0
            assert abs((total0 - t.total_material()) - t.outflow) < 1e-10 * total0
            assert abs((t.eroded.sum() - t.deposited.sum()) - t.outflow) < 1e-10 * total0
            assert t.sediment.min() >= 0.0
    finally:
        parallel.set_threads(threads)
    for name in ("bedrock", "sediment", "eroded", "deposited", "wind"):
        assert np.array_equal(getattr(ts[0], name), getattr(ts[1], name))
    one = Terrain.from_heights(hills, world_units=False, sediment=np.full((n, n), 0.5))
    for b in range(5):
        run_batch(one, dataclasses.replace(p, share2=0.0), 7, b * p.batch, p.batch)
    assert not np.array_equal(one.sediment, ts[0].sediment), "the second wind blows"


@pytest.mark.slow
def test_the_draa_preset_makes_kilometre_dunes_on_30_m_cells():
    """A 3.84 km sand sea (60-72 m of sand) on 30 m cells: the desert_draa preset (the
    desert preset's lengths x 30) makes draa 0.5-2 km apart with slip faces."""
    n, cell = 128, 30.0
    sed = 60.0 + np.random.default_rng(2).uniform(0.0, 12.0, (n, n))
    t = Terrain.from_heights(np.zeros((n, n)), cell, world_units=True, sediment=sed / cell)
    preset = find_preset("desert_draa")
    params = preset.enabled_params()
    direction = params["wind"].direction
    total0 = t.total_material()
    Simulation(t, params, seed=preset.seed, particles=preset.work(t)).run()
    assert abs(t.total_material() - total0) < 1e-9 * total0 and t.outflow == 0.0
    h = t.height()
    spacing = dune_spacing(h, direction, cell)
    m = measure_dunes(h, direction, cell, band=(5.0, 64.0))
    assert 500.0 <= spacing <= 2000.0, spacing
    assert 500.0 <= m["wavelength_m"] <= 2000.0, m
    assert m["lee_stoss"] >= 1.5 and m["lee_p50_deg"] >= 25.0, m
    assert abs(crest_orientation(h, direction)["normal_deg"]) <= 10.0
