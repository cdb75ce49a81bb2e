"""Realism report (simcore.analysis.report, `python -m simcore report`): figures that match
surfaces whose answers are known, a start rebuilt exactly from a state's books."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from simcore.algorithms.drainage import depression_depth
from simcore.analysis import report
from simcore.cli.main import main
from simcore.engine.simulation import Simulation
from simcore.formats.presets import find_preset
from simcore.generators.noise import upland_terrain
from simcore.terrain import Terrain


def test_a_tilted_plane_has_its_slope_and_no_basins():
    cell = 10.0
    rows, cols = 40, 50
    rise = math.tan(math.radians(30.0))  # per unit of distance
    height = np.tile(np.arange(cols) * rise, (rows, 1))  # cell units: rise per cell
    f = report.landform_figures(height, cell)
    assert f["slope_p50"] == pytest.approx(30.0, abs=0.5)
    assert f["steeper_45"] == 0.0 and f["closed_basins"] == 0.0 and f["lakes"] == 0
    assert f["relief"] == pytest.approx((cols - 1) * rise * cell)



def test_a_cone_has_its_slope_everywhere():
    """A cone of 25 degrees over the whole map: the slope percentiles are the cone's
    (the apex and the cells' discretisation aside), no basin, its relief."""
    cell = 20.0
    y, x = np.mgrid[-40:41, -40:41]
    r = np.hypot(x, y)
    rise = math.tan(math.radians(25.0))
    height = (r.max() - r) * rise  # cell units
    f = report.landform_figures(height, cell)
    assert f["slope_p50"] == pytest.approx(25.0, abs=0.5)
    assert f["slope_p90"] == pytest.approx(25.0, abs=0.5)
    assert f["steeper_45"] == 0.0 and f["closed_basins"] == 0.0
    assert f["relief"] == pytest.approx(r.max() * rise * cell)


def test_a_valley_with_a_known_slope_area_law():
    """A trunk valley fed evenly from both sides: its drainage area grows linearly
    downstream, and its bed is built to fall at S = k A^-0.5; steep side slopes drain
    into it. The report's concavity is that 0.5, on a straight log-log line."""
    cell, side, length, theta = 10.0, 6, 200, 0.5
    rows = 2 * side + 1
    area = (length - np.arange(length)) * rows * cell * cell  # m², outlet at column 0
    slope = 3.6 * area ** -theta  # rise per run: 0.1 at the head, 0.007 at the outlet
    bed = np.concatenate([[0.0], np.cumsum(slope[1:])])  # cell units: rise per cell
    height = bed[None, :] + 0.5 * np.abs(np.arange(rows) - side)[:, None]
    f = report.landform_figures(height, cell)
    assert f["theta"] == pytest.approx(theta, abs=0.05)
    assert f["theta_r2"] > 0.95

def test_a_dry_bowl_is_a_closed_basin_and_a_lake_above_its_rim_is_an_error():
    cell = 5.0
    y, x = np.mgrid[-20:21, -20:21]
    bowl = 0.02 * (x * x + y * y) + 1.0  # cell units; the map's edge is its rim
    dry = report.landform_figures(bowl, cell)
    assert dry["closed_basins"] > 50.0, "the bowl holds water: a closed basin"
    # fill it to its spill level: no basin outside the lake, no error
    spill = bowl + depression_depth(bowl)
    pool = spill - bowl
    full = report.landform_figures(bowl, cell, pool)
    assert full["closed_basins"] == 0.0 and full["lakes"] == 1
    assert abs(full["spill_error"]) < 1e-9
    over = report.landform_figures(bowl, cell, np.where(pool > 0, pool + 0.1, 0.0))
    assert over["spill_error"] == pytest.approx(0.1 * cell)


@pytest.mark.parametrize("name", ["default", "landscape_detail"])
def test_the_start_is_rebuilt_exactly_from_a_states_books(name):
    """Every change of the ground is booked (eroded, deposited, uplifted), so a state
    knows the heights it started from, whatever its processes."""
    start = upland_terrain(48, seed=2, cell_size=30.0)
    t = Terrain.from_heights(start, 30.0)
    preset = find_preset(name)
    Simulation(t, preset.enabled_params(), seed=1, particles=4000).run()
    assert not np.allclose(t.world_height(), start)
    assert np.allclose(report.start_heights(t) * 30.0, start, rtol=0, atol=1e-9 * np.ptp(start))


def test_report_command_before_and_after(tmp_path, capsys):
    h = tmp_path / "h.npy"
    assert main(["generate", "--size", "48", "--seed", "3", "--output", str(h)]) == 0
    state = tmp_path / "s.npz"
    assert main(["erode", "--input", str(h), "--cell-size", "30", "--particles", "4000",
                 "--output", str(state), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(state)]) == 0
    text = capsys.readouterr().out
    assert "slope, median" in text and "before" in text and "after" in text
    assert main(["report", str(state), "--before", str(h), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    rebuilt = report.report(*_state(state))
    for key in ("relief", "slope_p50", "closed_basins", "theta"):
        got = figures["before"][key]
        assert (math.nan if got is None else got) == pytest.approx(
            rebuilt["before"][key], rel=1e-9, nan_ok=True)
    np.save(tmp_path / "small.npy", np.zeros((10, 10)))
    assert main(["report", str(state), "--before", str(tmp_path / "small.npy")]) == 2
    assert "its grid is 10x10, the state's 48x48" in capsys.readouterr().err
    assert main(["report", str(h)]) == 2
    assert "the report reads an .npz state" in capsys.readouterr().err
    for bad, words in ((np.full((48, 48), np.nan), "NaN/inf"),
                       (np.full((48, 48), 1e15), "allowed range")):
        np.save(tmp_path / "bad.npy", bad)
        assert main(["report", str(state), "--before", str(tmp_path / "bad.npy")]) == 2
        assert words in capsys.readouterr().err


def test_report_json_is_standard_json_with_null_for_undefined_figures(tmp_path, capsys):
    """A flat map has no channels: its concavity is undefined, written as null (JSON
    readers refuse NaN tokens)."""
    from simcore.formats.states import save_state
    from simcore.terrain import Terrain
    state = save_state(tmp_path / "flat.npz", Terrain.from_heights(np.zeros((24, 24)), 10.0),
                       {})
    capsys.readouterr()
    assert main(["report", str(state), "--json"]) == 0
    text = capsys.readouterr().out

    def refuse(token):
        raise AssertionError(f"non-standard JSON token {token}")

    figures = json.loads(text, parse_constant=refuse)
    assert figures["after"]["theta"] is None

def _state(path):
    from simcore.formats.states import load_state
    return load_state(path)[0], None
