"""Rivers and concavity: on drained generated uplands (3.84 km; 128² cells of 30 m and
256² of 15 m, concavity theta 0.43 and 0.36 at the start) a preset that carves rivers
should leave the channels' slope-area fit S ~ A^-theta with theta in 0.2-0.7, r² >= 0.6
and theta no more than 0.1 below the start's. The shipped presets that do not yet are
listed (strict: one that comes within the bound fails until its entry goes). The
droplet presets keep them through the droplets' gathering flow (docs/hillslopes.md).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from simcore.analysis.landforms import slope_area
from simcore.engine.simulation import Simulation
from simcore.formats.presets import find_preset
from simcore.generators.uplands import drained_uplands
from simcore.terrain import Terrain

SIZES = {"30m": (128, 30.0), "15m": (256, 15.0)}
#: the article's droplets (gather 0): every droplet carries its own capacity
WITHOUT_GATHER = {"droplets.gather": 0.0, "droplets.Kq": 1500.0}
#: shipped presets that do not keep the rivers concave, where, and why
KNOWN = {
    ("rivers_and_lakes", "30m"): "hydrology's theta falls with the volume it moves: heads "
    "flatten, trunks steepen under its deposits (0.43 -> 0.28)",
    **{("snowball_preview", z): "the snowballs flatten the heads and fill the trunks; their "
       "erosion is capped by the drop ahead, so it cannot grow downstream (0.43 -> 0.20, "
       "0.36 -> 0.19)" for z in SIZES},
    **{("landscape_detail", z): "landscape evolution's head_area: every hollow under 0.1 "
       "km² incises as one that size, so all reach one slope (the stage alone: 0.43 -> "
       "0.15); with the droplets 0.43 -> 0.26, 0.36 -> 0.18" for z in SIZES},
}
CARVING = ("default", "droplets_only", "canyons", "alpine", "quick_preview",
           "rivers_and_lakes", "snowball_preview", "landscape_detail")


@functools.cache
def start(size: str) -> tuple[np.ndarray, float]:
    n, cell = SIZES[size]
    return drained_uplands(n, seed=3, cell_size=cell), cell


def fit(heights: np.ndarray, cell: float) -> dict[str, float]:
    """theta and r² of world ``heights`` on cells of ``cell``."""
    return slope_area(heights / cell, cell)


def test_the_starts_are_concave():
    for size in SIZES:
        f = fit(*start(size))
        assert 0.35 <= f["theta"] <= 0.5 and f["r2"] >= 0.9, (size, f)


def _carved(name: str, size: str, overrides: dict) -> tuple[dict, dict]:
    heights, cell = start(size)
    before = fit(heights, cell)
    preset = find_preset(name).with_overrides(overrides)
    terrain = Terrain.from_heights(heights, cell, rock=preset.rock)
    Simulation(terrain, preset.enabled_params(), seed=preset.seed,
               particles=preset.work(terrain)).run()
    after = slope_area(terrain.height(), cell)
    print(f"{name} {size} {overrides}: theta {before['theta']:.3f} -> "
          f"{after['theta']:.3f}, r2 {after['r2']:.2f}")
    return before, after


def _concave(before: dict, after: dict) -> None:
    assert 0.2 <= after["theta"] <= 0.7, after
    assert after["r2"] >= 0.6, after
    assert after["theta"] >= before["theta"] - 0.1, (before, after)


@pytest.mark.parametrize("name,size", [pytest.param(
    n, z, id=f"{n}-{z}", marks=[pytest.mark.xfail(strict=True, reason=KNOWN[n, z])]
    if (n, z) in KNOWN else []) for n in CARVING for z in SIZES])
def test_shipped_carving_presets_keep_rivers_concave(name, size):
    _concave(*_carved(name, size, {}))


def test_hydrology_loses_concavity_with_the_volume_it_moves():
    """rivers_and_lakes on 30 m cells loses theta along one line with the volume its
    particles move, whichever parameter sets it: with a third of its capacity (half the
    volume) it keeps theta within 0.1 of the start; with three times its deposition
    rate (nearly twice the volume) it loses more than 0.2."""
    before, less = _carved("rivers_and_lakes", "30m", {"hydrology.capacity": 0.1})
    _, more = _carved("rivers_and_lakes", "30m", {"hydrology.deposition": 0.3})
    assert less["theta"] >= before["theta"] - 0.1, (before, less)
    assert more["theta"] < before["theta"] - 0.2, (before, more)


def test_without_gathering_flow_the_default_straightens_rivers():
    """The default with the article's droplets (their own capacity, gather 0): the
    rivers straighten (theta falls by more than 0.15)."""
    before, after = _carved("default", "30m", WITHOUT_GATHER)
    assert after["theta"] < before["theta"] - 0.15, (before, after)
