"""The erosion history's entry format (simcore/formats/history.py): every kind round-trips
through its JSON, entries as the add-on has stored them keep loading, and an entry this
version cannot replay is a HistoryError naming it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from simcore.engine.simulation import PROCESSES, process_params
from simcore.formats import history as fmt
from simcore.generators.ridges import RidgeParams


def _run(**changes) -> dict:
    params = {name: process_params(name) for name in ("droplets", "thermal")}
    entry = fmt.run_entry("erode", "default", params, 2**40 + 5, 0, 3, 2400.0, 1.5, None,
                          True, False, False, {"rain": np.linspace(0, 1, 12).reshape(3, 4)})
    entry.update(changes)
    return entry


def test_a_run_round_trips_with_its_masks_and_settings():
    entry = _run()
    recipe = fmt.parse(fmt.dumps(entry), "entry 1")
    assert recipe.kind == "erode" and recipe.replays
    assert recipe.params == {name: process_params(name) for name in ("droplets", "thermal")}
    assert (recipe.seed, recipe.start_round, recipe.rounds) == (2**40 + 5, 0, 3)
    assert (recipe.real_size, recipe.exaggeration) == (2400.0, 1.5)
    assert recipe.write_colors and not recipe.water_surface and not recipe.exact_resume
    assert np.array_equal(recipe.maps["rain"], np.linspace(0, 1, 12).reshape(3, 4))
    assert recipe.label == "Erode default, seed 1099511627781, 3 rounds, masks: rain"


def test_every_process_round_trips():
    params = {name: process_params(name) for name in PROCESSES}
    entry = fmt.run_entry("step", "", params, 1, 2, 1, 0.0, 1.0, None, True, True, True, {})
    recipe = fmt.parse(fmt.dumps(entry), "entry")
    assert recipe.params == params and recipe.kind == "step"
    assert recipe.label.startswith("Step settings, seed 1")


def test_ridges_and_notes_round_trip():
    p = RidgeParams(seed=7)
    start = np.zeros((5, 6), bool)
    start[2, 3] = True
    recipe = fmt.parse(fmt.dumps(fmt.ridges_entry(p, "REPLACE", start, 1000.0, 1.0)), "e")
    assert recipe.ridges == p and recipe.mode == "REPLACE"
    assert recipe.start is not None and np.array_equal(recipe.start, start)
    note = fmt.parse(fmt.dumps(fmt.note_entry("baked frames 1-3")), "e")
    assert note.kind == "note" and not note.replays
    assert note.label == "Note: baked frames 1-3"


def test_an_entry_as_stored_by_earlier_versions_loads():
    """Version 1 as Blender files hold it (the JSON the add-on wrote before the format
    moved to simcore): nothing in it may stop loading."""
    mask = fmt.pack_array(np.full((2, 2), 0.5))
    text = json.dumps({
        "version": 1, "kind": "erode", "preset": "Droplets only", "seed": 3,
        "start_round": 0, "rounds": 2, "real_size": 0.0, "vertical_exaggeration": 1.0,
        "write_colors": True, "water_surface": True, "exact_resume": False,
        "settings": {"droplets": {"enabled": True, "Kq": 12.0}},
        "masks": {"rain": {"dtype": "float32", "shape": [2, 2], "zlib": mask["zlib"]}}})
    recipe = fmt.parse(text, "entry")
    assert recipe.params["droplets"] == process_params("droplets", {"Kq": 12.0})
    assert np.array_equal(recipe.maps["rain"], np.full((2, 2), 0.5))


def test_a_new_kind_is_a_parser_of_its_own_payload(monkeypatch):
    def parse_sculpt(entry, common, where):
        return fmt.Recipe(**common, seed=int(entry["payload"]["seed"]))

    entry = {"version": 1, "kind": "sculpt", "payload": {"seed": 4}, "real_size": 0.0,
             "vertical_exaggeration": 1.0, "preset": "", "seed": 4, "rounds": 1,
             "masks": {}}
    with pytest.raises(fmt.HistoryError, match="'sculpt' entry, which this version does not"):
        fmt.parse_entry(entry, "entry 2")
    monkeypatch.setitem(fmt.PARSERS, "sculpt", parse_sculpt)
    assert fmt.parse_entry(entry, "entry 2").seed == 4


def test_a_live_entry_round_trips_with_its_mask_states():
    states = [(0, {"uplift": np.full((3, 4), 0.25)}), (5, {"uplift": np.eye(3, 4)})]
    recipe = fmt.parse(fmt.dumps(fmt.live_entry(_run(kind="live"), states)), "entry 1")
    assert recipe.kind == "live" and recipe.rounds == 3
    assert [r for r, _ in recipe.states] == [0, 5]
    assert all(np.array_equal(got["uplift"], want["uplift"])
               for (_, got), (_, want) in zip(recipe.states, states, strict=True))


@pytest.mark.parametrize("text, message", [
    ("{not json", "entry 3 is damaged"),
    ("[1, 2]", "entry 3 is damaged"),
    (fmt.dumps(_run(version=2)), "later version.*entry format 2.*reads up to 1"),
    (fmt.dumps(_run(kind="sculpt")), "'sculpt' entry"),
    (fmt.dumps({k: v for k, v in _run().items() if k != "rounds"}), "damaged.*rounds"),
    (fmt.dumps(_run(settings={"lava": {"enabled": True}})), "unknown table"),
    (fmt.dumps(_run(settings={"droplets": {"enabled": True, "Kq": -1.0}})), "Kq"),
    (fmt.dumps(_run(masks={"snow": fmt.pack_array(np.zeros((2, 2)))})), "mask 'snow'"),
    (fmt.dumps(_run(masks={"rain": fmt.pack_array(np.full((2, 2), 3.0))})),
     "outside 0..1"),
    (fmt.dumps(_run(masks={"rain": {"dtype": "float32", "shape": [2], "zlib": "@"}})),
     "mask 'rain'.*damaged"),
    (fmt.dumps(fmt.live_entry(_run(), [(0, {"uplift": np.full((3, 4), 0.5)}),
                                       (2, {"uplift": np.full((3, 4), np.nan)})])),
     "live state 2.*'uplift' mask has values outside 0..1"),
    (fmt.dumps(fmt.live_entry(_run(), [(1, {"snow": np.zeros((3, 4))})])),
     "live state 1.*mask 'snow'"),
])
def test_an_entry_this_version_cannot_replay_names_itself(text, message):
    with pytest.raises(fmt.HistoryError, match=message) as err:
        fmt.parse(text, "entry 3")
    assert "entry 3" in str(err.value) and "\n" not in str(err.value)
