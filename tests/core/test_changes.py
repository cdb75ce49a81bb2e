"""Change per process: a run records how much each process raised or
lowered every cell (Terrain.changes, ``change_<process>`` in .npz states, world units),
and the changes add up to the whole change of the ground."""

from __future__ import annotations

import json

import numpy as np
import pytest

from simcore.cli.main import main
from simcore.engine.simulation import Simulation
from simcore.formats.presets import find_preset, preset_files
from simcore.formats.states import load_state, save_state
from simcore.generators.noise import upland_terrain
from simcore.terrain import Terrain


def _run(name: str, particles: int = 4000, sand: float = 0.0) -> tuple[Terrain, np.ndarray]:
    """The preset on 48² uplands of 30 m cells (under ``sand`` world units of loose
    material); the terrain after and its heights before (cell units)."""
    start = upland_terrain(48, seed=2, cell_size=30.0)
    t = Terrain.from_heights(start, 30.0, sediment=np.full(start.shape, sand / 30.0))
    before = t.height()
    Simulation(t, find_preset(name).enabled_params(), seed=1, particles=particles).run()
    return t, before


@pytest.mark.parametrize("name", sorted(preset_files()))
def test_the_changes_add_up_to_the_whole_change(name):
    t, start = _run(name, sand=3.0)  # sand for the wind to blow
    enabled = list(find_preset(name).enabled_params())
    assert sorted(t.changes) == sorted(enabled)
    total = sum(t.changes.values())
    whole = t.height() - start
    assert np.abs(whole).max() > 0.01
    assert np.allclose(total, whole, rtol=0, atol=1e-9 * np.ptp(start))



def test_every_process_together_adds_up():
    """Every process at once (snowballs too, which no preset runs): one change array
    each, adding up to the whole change."""
    from simcore.engine.simulation import PROCESSES, process_params
    start = upland_terrain(48, seed=2, cell_size=30.0)
    t = Terrain.from_heights(start, 30.0, sediment=np.full(start.shape, 0.02))
    procs = {name: process_params(name) for name in PROCESSES}
    Simulation(t, procs, seed=1, particles=3000).run()
    assert sorted(t.changes) == sorted(PROCESSES)
    whole = t.height() - start / 30.0 - 0.02
    assert np.allclose(sum(t.changes.values()), whole, rtol=0, atol=1e-9 * np.ptp(start))

def test_each_process_is_seen_where_it_acts():
    t, _ = _run("default")
    c = t.changes
    assert c["droplets"].min() < -0.01, "droplets cut valleys"
    assert np.abs(c["thermal"]).max() > 1e-3, "slopes relax"
    # hillslopes move material within the map (closed edges): they make none
    assert abs(c["thermal"].sum()) < 1e-9 * np.abs(c["thermal"]).sum()
    assert not c["trees"].any(), "trees hold soil but move none"


def test_states_keep_the_changes_in_world_units_and_a_resume_adds_on(tmp_path):
    t, _ = _run("default", 2000)
    path = save_state(tmp_path / "s.npz", t, {"seed": 1})
    with np.load(path) as data:
        meta = json.loads(str(data["metadata"]))
        assert meta["units"]["change_droplets"] == "world"
        assert np.allclose(data["change_droplets"], t.changes["droplets"] * 30.0)
    back, _ = load_state(path)
    for name, change in t.changes.items():
        assert np.allclose(back.changes[name], change, rtol=1e-12, atol=1e-12)
    h = tmp_path / "h.npy"
    np.save(h, upland_terrain(40, seed=3, cell_size=30.0))
    common = ["--preset", "default", "--set", "droplets.batch=1000", "--quiet"]
    assert main(["erode", "--input", str(h), "--cell-size", "30", "--particles", "3000",
                 "--output", str(tmp_path / "a.npz"), *common]) == 0
    assert main(["erode", "--input", str(tmp_path / "a.npz"), "--particles", "3000",
                 "--output", str(tmp_path / "b.npz"), *common]) == 0
    assert main(["erode", "--input", str(h), "--cell-size", "30", "--particles", "6000",
                 "--output", str(tmp_path / "c.npz"), *common]) == 0
    resumed, straight = load_state(tmp_path / "b.npz")[0], load_state(tmp_path / "c.npz")[0]
    assert np.array_equal(resumed.height(), straight.height())
    for name in straight.changes:
        assert np.allclose(resumed.changes[name], straight.changes[name], rtol=0,
                           atol=1e-9), name


def test_a_state_with_a_bad_change_array_is_refused(tmp_path):
    t, _ = _run("default", 500)
    t.changes["droplets"] = np.zeros((3, 3))
    save_state(tmp_path / "bad.npz", t, {"seed": 1})
    assert main(["shade", "--input", str(tmp_path / "bad.npz"), "--output",
                 str(tmp_path / "x.png")]) == 2
