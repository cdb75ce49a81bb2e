"""Landforms after every shipped preset, measured in world units.

One generated world, 3.84 km square (``upland_terrain``: relief 0.12 x extent), at two
resolutions: 256^2 cells of 15 m and its 2x2 block mean, 128^2 cells of 30 m; for the
next halving of the cell size, a 1.92 km world at 7.5 and 15 m cells. Every
preset made for such cells (PRESETS) runs once on each (cached for the module); the tests check
bounded hillslopes, resolution independence, distinct presets and exact mass books.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from simcore.analysis import landforms
from simcore.engine.simulation import PROCESSES, Simulation
from simcore.formats.presets import find_preset, preset_files
from simcore.generators.noise import upland_terrain
from simcore.terrain import Terrain

FINE, FINE_CELL = 256, 15.0


def _made_for_these_cells(name: str) -> bool:
    """Whether the preset's processes can show what they make on this world's 15 and
    30 m cells (no Process.advice): desert_dunes' dunes need cells under 3 m, and on
    these cells its rain of sand makes sand sheets only (its landforms are checked at
    its own scale in test_dunes.py)."""
    preset = find_preset(name)
    return not any(PROCESSES[n].advice is not None and PROCESSES[n].advice(p, cell)
                   for n, p in preset.enabled_params().items()
                   for cell in (FINE_CELL, 2 * FINE_CELL))


#: every shipped erosion preset made for cells of this world's size; a preset with a
#: [ridges] table first raises DLA mountains, so its landforms are checked on its own
#: ridge terrain in test_dla.py (test_ridges_eroded_leaves_land_not_spikes), not on
#: this fBm world
PRESETS = sorted(n for n in preset_files()
                 if find_preset(n).ridges is None and _made_for_these_cells(n))


@functools.cache
def world(size: int) -> tuple[np.ndarray, float]:
    """World heights and cell size: the 256^2 terrain or its 2x2 block mean."""
    heights = upland_terrain(FINE, seed=4, cell_size=FINE_CELL)
    if size == FINE:
        return heights, FINE_CELL
    assert size == FINE // 2
    return landforms.block_mean(heights), 2 * FINE_CELL


@functools.cache
def eroded(name: str, size: int, small: bool = False) -> tuple[Terrain, float]:
    """Terrain after preset ``name`` on the world (``small``: the 1.92 km one) at
    ``size``^2, and its total material before (cell units x cells)."""
    heights, cell = (small_world if small else world)(size)
    preset = find_preset(name)
    terrain = Terrain.from_heights(heights, cell, rock=preset.rock)  # as the CLI runs it
    total0 = terrain.total_material()
    Simulation(terrain, preset.enabled_params(), seed=preset.seed,
               particles=preset.work(terrain)).run()
    return terrain, total0


def rock_angle(name: str) -> float:
    thermal = find_preset(name).enabled_params().get("thermal")
    return thermal.rock_angle if thermal is not None else 40.0


def talus_angle(name: str) -> float:
    preset = find_preset(name)
    thermal = preset.enabled_params().get("thermal")
    return thermal.talus_angle if thermal is not None else 33.0


def test_the_generated_world_looks_like_uplands():
    for size in (FINE, FINE // 2):
        heights, cell = world(size)
        st = landforms.slope_stats(heights / cell)
        assert 12.0 <= st["p50"] <= 22.0
        assert st["p99"] <= 45.0
        assert st["pct45"] <= 1.0
        assert 300.0 <= np.ptp(heights) <= 1200.0  # metres over 3.84 km


@pytest.mark.slow
@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("size", [FINE // 2, FINE])
def test_hillslopes_stay_hillslopes(name, size):
    heights, cell = world(size)
    terrain, _ = eroded(name, size)
    before = landforms.slope_stats(heights / cell)
    after = landforms.slope_stats(terrain.height())
    rock = find_preset(name).rock
    if rock is not None and min(layer.erodibility for layer in rock.layers) < 1.0:
        # hard layers of a rock column stand as cliffs (that is what they are for): no
        # steeper than the hillslope process lets its hardest rock stand
        hardest = min(layer.erodibility for layer in rock.layers)
        cliff = np.degrees(np.arctan(np.tan(np.radians(rock_angle(name))) / hardest))
        assert after["p99"] <= cliff
    else:
        assert after["pct45"] <= max(before["pct45"], 0.1), "cells steeper than 45 deg grew"
        assert after["p99"] <= before["p99"] + 5.0
    assert after["pct45"] <= 10.0
    assert after["peaks"] <= 1.5 * before["peaks"], "erosion made pinnacles"
    # no loose material steeper than its angle of repose (to within a degree)
    excess = landforms.max_loose_excess(terrain.height(), terrain.sediment,
                                        talus_angle(name) + 1.0, min_sediment=1e-9)
    assert excess == 0.0, f"loose material {excess:.3g} cell units above its talus"


@functools.cache
def small_world(size: int) -> tuple[np.ndarray, float]:
    """A 1.92 km world at 256^2 cells of 7.5 m, or its 2x2 block mean (15 m cells): the
    next halving of the cell size after the 30 -> 15 m of ``world``."""
    heights = upland_terrain(FINE, seed=4, cell_size=FINE_CELL / 2)
    return (heights, FINE_CELL / 2) if size == FINE else (landforms.block_mean(heights),
                                                          FINE_CELL)


@pytest.mark.slow
@pytest.mark.parametrize("cells", ["30-15m", "15-7.5m"])
@pytest.mark.parametrize("name", PRESETS)
def test_the_same_landforms_at_two_resolutions(name, cells):
    """The same world at two resolutions: 3.84 km at 128^2 and 256^2 (30 and 15 m
    cells), and 1.92 km at 128^2 and 256^2 (15 and 7.5 m cells)."""
    if cells == "30-15m":
        coarse, _ = eroded(name, FINE // 2)
        fine, _ = eroded(name, FINE)
        (h_coarse, c_coarse), (h_fine, c_fine) = world(FINE // 2), world(FINE)
    else:
        coarse, _ = eroded(name, FINE // 2, small=True)
        fine, _ = eroded(name, FINE, small=True)
        (h_coarse, c_coarse), (h_fine, c_fine) = small_world(FINE // 2), small_world(FINE)
    dh_coarse = coarse.world_height() - h_coarse
    dh_fine = fine.world_height() - h_fine
    r = landforms.correlation(dh_coarse, landforms.block_mean(dh_fine))
    assert r >= 0.8, f"height change correlates at r = {r:.2f} across resolutions"
    vol_coarse = _removed(coarse, dh_coarse) * c_coarse ** 2
    vol_fine = _removed(fine, dh_fine) * c_fine ** 2
    assert vol_coarse > 0
    assert 0.8 <= vol_fine / vol_coarse <= 1.2, "eroded volume depends on the grid"


def _removed(terrain: Terrain, dh: np.ndarray) -> float:
    """World volume / cell area the erosion took away: where ground was only lowered,
    the lowering; where uplift raised rock (the landscape presets), what was raised
    and is gone again (uplift - change, summed over cells)."""
    raised = terrain.sources() * terrain.cell_size
    if raised.any():
        return float((raised - dh).sum())
    return float(np.maximum(-dh, 0).sum())


#: pairs where one preset previews the other's valleys with another process: alike by
#: design, but not copies (snowballs found the droplets' valleys at r = 0.90)
PREVIEWS = {("droplets_only", "snowball_preview")}


@pytest.mark.slow
def test_presets_make_different_landforms():
    """Every pair of shipped presets changes the same world differently: height changes
    correlate at r <= 0.85 (the ridge presets raise their own ridges first); a preview
    and the preset it previews (:data:`PREVIEWS`) at r <= 0.95."""
    size = FINE // 2
    heights, _ = world(size)
    dh = {n: eroded(n, size)[0].world_height() - heights for n in PRESETS}
    for i, a in enumerate(PRESETS):
        for b in PRESETS[i + 1:]:
            r = landforms.correlation(dh[a], dh[b])
            bound = 0.95 if (a, b) in PREVIEWS else 0.85
            assert r <= bound, f"{a} and {b} change the land alike (r = {r:.2f})"


@pytest.mark.slow
@pytest.mark.parametrize("name", PRESETS)
def test_mass_bookkeeping_is_exact(name):
    terrain, total0 = eroded(name, FINE // 2)
    lost = total0 - terrain.total_material() + terrain.sources().sum()  # + uplift
    assert abs(lost - terrain.outflow) <= 1e-9 * (abs(total0) + terrain.sources().sum())
    assert terrain.sediment.min() >= 0.0


def test_particles_per_area_gives_the_same_rain_at_any_resolution():
    preset = find_preset("default")
    assert preset.particles_per_area > 0
    coarse = Terrain.from_heights(world(FINE // 2)[0], 2 * FINE_CELL)
    fine = Terrain.from_heights(world(FINE)[0], FINE_CELL)
    assert preset.work(coarse) == preset.work(fine)
    assert preset.work(fine) == round(preset.particles_per_area * FINE ** 2 * FINE_CELL ** 2)
    # an explicit total wins; a preset without a per-area value uses its total
    explicit = preset.with_overrides({"particles": 1234})
    assert explicit.particles_per_area == 0.0 and explicit.work(fine) == 1234
    old = preset.with_overrides({"particles_per_area": 0.0})
    assert old.work(fine) == old.particles == preset.particles
