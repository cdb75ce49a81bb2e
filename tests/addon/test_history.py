"""The erosion history in real Blender (bpy module): Erode, Step and Generate Ridges
record entries; Rebuild replays them bit for bit (after a save and reload too), on an
edited original as the same runs by hand, without a switched-off entry as a history
without it; the list's operators; old files and bad entries."""

from __future__ import annotations

import json
import re

import bpy
import numpy as np
import pytest
from blender_helpers import add_grid, mesh_state, positions, same_state, set_z, staged_addon

te = staged_addon()
fmt = te.simcore.formats.history  # the entry format


def _preset(name: str):
    from terrain_erosion.simcore.formats.presets import find_preset
    return find_preset(name)


def state(obj) -> dict:
    """The mesh's every attribute, the trees' and water's vertices, the run bookkeeping."""
    out = mesh_state(obj.data)
    s = obj.terrain_erosion
    for key in ("trees_object", "water_object"):
        extra = getattr(s, key)
        out[key] = positions(extra.data).ravel() if extra is not None else np.zeros(0)
    out["rounds"] = np.array([s.rounds_done, s.stored_state_seed()])
    return out


def _paint(obj, size: int):
    """A rain mask (vertex group, left half) and an erodibility mask (color
    attribute, a gradient)."""
    n = len(obj.data.vertices)
    group = obj.vertex_groups.new(name="rain")
    group.add([i for i in range(n) if i % size < size // 2], 0.8, 'REPLACE')
    color = obj.data.color_attributes.new("hard", 'FLOAT_COLOR', 'POINT')
    gray = np.linspace(0.2, 1.0, n, dtype=np.float32)
    color.data.foreach_set("color", np.repeat(gray, 4))
    s = obj.terrain_erosion
    s.mask_rain_source, s.mask_rain_name = 'VERTEX_GROUP', "rain"
    s.mask_erodibility_source, s.mask_erodibility_name = 'COLOR_ATTRIBUTE', "hard"


def _history(obj, size: int = 24):
    """Ridges, an Erode with the droplets preset and two masks, a Step after it, an
    Erode with another preset and seed."""
    obj.terrain_erosion.real_size = 2400.0
    assert bpy.ops.terrain.generate_ridges(amplitude=60.0, ridge_spacing=300.0,
                                           seed=3) == {'FINISHED'}
    s = obj.terrain_erosion
    s.apply_preset(_preset("droplets_only"))
    _paint(obj, size)
    assert bpy.ops.terrain.erode(particles=400) == {'FINISHED'}
    assert bpy.ops.terrain.step() == {'FINISHED'}
    s.apply_preset(_preset("default"))
    s.mask_rain_source = 'NONE'
    s.seed = 9
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}


def test_runs_and_ridges_are_recorded_with_their_settings_and_masks(blender):
    obj = add_grid(bpy, n=24, name="Hills")
    _history(obj)
    s = obj.terrain_erosion
    assert [e.enabled for e in s.history] == [True] * 4
    entries = [json.loads(e.data) for e in s.history]
    assert [e["kind"] for e in entries] == ["ridges", "erode", "step", "erode"]
    assert all(e["version"] == fmt.VERSION for e in entries)
    ridges, erode, step, last = entries
    assert ridges["ridges"]["seed"] == 3 and ridges["mode"] == "ADD"
    assert erode["preset"] == _preset("droplets_only").name
    assert last["preset"] == _preset("default").name
    assert sorted(erode["masks"]) == ["erodibility", "rain"]
    assert list(last["masks"]) == ["erodibility"], "the rain mask was switched off"
    assert set(erode["settings"]) == set(_preset("droplets_only").enabled_params())
    assert erode["settings"]["droplets"]["enabled"] is True
    assert set(erode["settings"]["droplets"]) == {"enabled",
                                                  *s.droplets.to_params().to_dict()}
    assert step["start_round"] == erode["rounds"] and step["rounds"] == 1
    assert step["exact_resume"] and not erode["exact_resume"]
    assert last["seed"] == 9 and erode["real_size"] == 2400.0
    # the recorded masks are the maps the run used
    recipe = fmt.parse(s.history[1].data, "entry")
    g = te.data.grid.detect_grid(obj.data)
    rain = te.data.masks.vertex_group_weights(obj, "rain")
    assert np.array_equal(recipe.maps["rain"], rain[g.order].reshape(24, 24))
    assert s.history[1].label.startswith(f"Erode {erode['preset']}, seed")


def _scribble(obj) -> None:
    """Change the eroded mesh in a way no entry records (Rebuild must redo it all): the
    heights moved, a layer gone, the trees' object gone."""
    me = obj.data
    set_z(me, positions(me)[:, 2] + 0.05)
    me.attributes.remove(me.attributes["te_sediment_depth"])
    s = obj.terrain_erosion
    if s.trees_object is not None:
        bpy.data.objects.remove(s.trees_object)


def test_rebuild_with_nothing_changed_is_bit_identical_also_after_reload(blender,
                                                                         tmp_path):
    obj = add_grid(bpy, n=24, name="Hills")
    _history(obj)
    before, names = state(obj), sorted(o.name for o in bpy.data.objects)
    assert before["trees_object"].size and before["water_object"].size
    assert {"Hills Trees", "Hills Water"} <= set(names)
    _scribble(obj)
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert same_state(before, state(obj))
    assert len(obj.terrain_erosion.history) == 4, "a Rebuild records nothing"
    # the trees and water objects are the replay's, under the names they had (the
    # trees' object was deleted by _scribble: the replay's takes the free name)
    assert sorted(o.name for o in bpy.data.objects) == names
    path = str(tmp_path / "history.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Hills"]
    bpy.context.view_layer.objects.active = obj
    assert len(obj.terrain_erosion.history) == 4
    assert same_state(before, state(obj))
    _scribble(obj)
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert same_state(before, state(obj))


def test_a_step_after_a_reload_resumes_from_the_layers_and_rebuilds_so(blender,
                                                                      tmp_path):
    obj = add_grid(bpy, n=20, name="Hills")
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    path = str(tmp_path / "step.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Hills"]
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.step() == {'FINISHED'}
    assert not json.loads(obj.terrain_erosion.history[1].data)["exact_resume"]
    before = state(obj)
    _scribble(obj)
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert same_state(before, state(obj))


def _edit_original(obj) -> None:
    """A script's sculpt of the stored original: a bump in the middle."""
    me = obj.data
    z = np.empty(len(me.vertices), np.float32)
    attr = me.attributes["te_original_z"]
    attr.data.foreach_get("value", z)
    xy = positions(me)[:, :2]
    z += (0.3 * np.exp(-(xy ** 2).sum(axis=1) / 0.2)).astype(np.float32)
    attr.data.foreach_set("value", z)


def test_rebuild_on_an_edited_original_equals_the_runs_by_hand(blender):
    obj = add_grid(bpy, n=24, name="Hills")
    _paint(obj, 24)
    s = obj.terrain_erosion
    s.apply_preset(_preset("droplets_only"))
    assert bpy.ops.terrain.erode(particles=400) == {'FINISHED'}
    assert bpy.ops.terrain.step() == {'FINISHED'}
    eroded = state(obj)
    _edit_original(obj)
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    rebuilt = state(obj)
    assert not np.array_equal(rebuilt["position"], eroded["position"])
    # by hand: back to the (edited) original, the same Erode and Step
    assert bpy.ops.terrain.reset() == {'FINISHED'}
    assert not any(e.enabled for e in s.history), "Reset switches the entries off"
    assert bpy.ops.terrain.erode(particles=400) == {'FINISHED'}
    assert bpy.ops.terrain.step() == {'FINISHED'}
    assert same_state(rebuilt, state(obj))


def test_an_entry_switched_off_equals_a_history_without_it(blender):
    obj = add_grid(bpy, n=24, name="Hills")
    s = obj.terrain_erosion
    s.seed = 3
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    s.seed = 4
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    s.history[0].enabled = False
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    rebuilt = state(obj)
    assert bpy.ops.terrain.reset() == {'FINISHED'}
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}  # seed 4 alone
    assert same_state(rebuilt, state(obj))


def test_rebuild_is_one_undo_step(blender):
    obj = add_grid(bpy, n=20, name="Hills")
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    bpy.ops.ed.undo_push(message="eroded")
    before = state(obj)
    obj.terrain_erosion.history[0].enabled = False
    bpy.ops.ed.undo_push(message="entry off")
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert not same_state(before, state(bpy.data.objects["Hills"]))
    bpy.ops.ed.undo_push(message="Rebuild")
    bpy.ops.ed.undo()
    obj = bpy.data.objects["Hills"]
    assert same_state(before, state(obj))
    assert not obj.terrain_erosion.history[0].enabled


def test_list_operators_remove_and_move(blender):
    obj = add_grid(bpy, n=20, name="Hills")
    s = obj.terrain_erosion
    for seed in (1, 2, 3):
        s.seed = seed
        assert bpy.ops.terrain.erode(particles=100) == {'FINISHED'}
    seeds = [json.loads(e.data)["seed"] for e in s.history]
    assert seeds == [1, 2, 3] and s.history_index == 2
    assert bpy.ops.terrain.history_move(direction='UP') == {'FINISHED'}
    assert [json.loads(e.data)["seed"] for e in s.history] == [1, 3, 2]
    assert s.history_index == 1
    assert bpy.ops.terrain.history_move(index=0, direction='UP') == {'CANCELLED'}
    assert bpy.ops.terrain.history_remove(index=0) == {'FINISHED'}
    assert [json.loads(e.data)["seed"] for e in s.history] == [3, 2]
    assert bpy.ops.terrain.apply() == {'FINISHED'}
    assert len(s.history) == 0 and not bpy.ops.terrain.history_remove.poll()
    assert not bpy.ops.terrain.rebuild.poll(), "nothing to rebuild"


def test_reset_sculpt_tick_and_rebuild_replays_on_the_new_base(blender):
    obj = add_grid(bpy, n=24, name="Hills")
    s = obj.terrain_erosion
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    assert bpy.ops.terrain.step() == {'FINISHED'}
    assert bpy.ops.terrain.reset() == {'FINISHED'}
    base = positions(obj.data)[:, 2].copy()
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}, "every entry off: the original"
    assert np.array_equal(positions(obj.data)[:, 2], base)
    xy = positions(obj.data)[:, :2]
    set_z(obj.data, base + 0.2 * np.exp(-(xy ** 2).sum(axis=1) / 0.3))  # a sculpt
    for entry in s.history:
        entry.enabled = True
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    rebuilt = state(obj)
    assert bpy.ops.terrain.reset() == {'FINISHED'}  # by hand on the sculpted base
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    assert bpy.ops.terrain.step() == {'FINISHED'}
    assert same_state(rebuilt, state(obj))


def test_old_file_without_history_works_and_rebuild_refuses_clearly(blender):
    obj = add_grid(bpy, n=20, name="Hills")
    assert bpy.ops.terrain.erode(particles=200) == {'FINISHED'}
    s = obj.terrain_erosion
    s.history.clear()  # as a file saved before the history: runs not recorded
    s.history_from_original = False
    assert bpy.ops.terrain.erode(particles=200) == {'FINISHED'}, "runs as before"
    assert len(s.history) == 1
    before = state(obj)
    with pytest.raises(RuntimeError, match="does not hold all of its erosion"):
        bpy.ops.terrain.rebuild()
    assert same_state(before, state(obj))


@pytest.mark.parametrize("damage, message", [
    (lambda e: e.update(kind="sculpt"), "'sculpt' entry"),
    (lambda e: e["settings"].update(lava={"enabled": True}), "unknown table"),
    (lambda e: e.update(version=99), "later version"),
    (lambda e: e["masks"]["rain"].update(zlib="not base64!"), "damaged"),
    (lambda e: e.pop("seed"), "damaged"),
    (lambda e: e["masks"].update(rain=fmt.pack_array(np.full((20, 20), 2.0))),
     "outside 0..1"),
])
def test_a_bad_entry_is_named_and_nothing_changes(blender, damage, message):
    obj = add_grid(bpy, n=20, name="Hills")
    _paint(obj, 20)
    assert bpy.ops.terrain.erode(particles=200) == {'FINISHED'}
    s = obj.terrain_erosion
    s.mask_rain_source = 'NONE'
    assert bpy.ops.terrain.erode(particles=200) == {'FINISHED'}
    entry = json.loads(s.history[0].data)
    damage(entry)
    s.history[0].data = json.dumps(entry)
    before = state(obj)
    with pytest.raises(RuntimeError, match=message) as err:
        bpy.ops.terrain.rebuild()
    assert "history entry 1" in str(err.value)
    assert same_state(before, state(obj))
    s.history[0].enabled = False  # the rest of the history still rebuilds
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    s.history[0].data = "{not json"
    s.history[0].enabled = True
    with pytest.raises(RuntimeError, match="history entry 1.*damaged"):
        bpy.ops.terrain.rebuild()


def test_the_history_panel_draws_the_list_and_its_operators(blender):
    from blender_helpers import PanelRecorder
    obj = add_grid(bpy, n=20, name="Hills")
    assert bpy.ops.terrain.erode(particles=100) == {'FINISHED'}
    log: list = []
    panel = bpy.types.TERRAIN_PT_history
    panel.draw(type("P", (), {"layout": PanelRecorder(log)})(), bpy.context)
    drawn = {entry[1] for entry in log}
    assert {"terrain.history_remove", "terrain.history_move", "terrain.rebuild",
            "TERRAIN_UL_history"} <= drawn
    rows: list = []
    bpy.types.TERRAIN_UL_history.draw_item(None, bpy.context, PanelRecorder(rows), None,
                                           obj.terrain_erosion.history[0], 0, None, "", 0)
    assert ("prop", "enabled", "") in rows and rows[-1][1].startswith("1. Erode")
    assert obj.terrain_erosion.history[0].label.startswith("Erode")


@pytest.mark.parametrize("preset", ["default", "young_range"])  # young_range: an age
def test_a_live_run_stopped_part_way_records_what_it_kept_and_rebuilds_it(blender, preset):
    import time
    obj = add_grid(bpy, n=24, name="Hills")
    s = obj.terrain_erosion
    s.apply_preset(_preset(preset))
    s.particles = 400_000
    job = te.data.job.ErosionJob(obj, record="erode")
    job.live_update = 0.0
    rt = type("Runtime", (), {"stop_requested": False, "progress": 0.0, "status": ""})()
    for _ in range(20000):  # tick like the modal Erode until two frames are on the mesh
        assert te.features.operators.tick(job, rt, budget=0.0, on_worker=True) == "running"
        if job.frames_written >= 2:
            break
        time.sleep(0.002)
    kept = job.finish(wait=False)  # Stop: what the mesh shows, at once
    entry = json.loads(s.history[0].data)
    assert 0 < entry["rounds"] * job.sim.per_round == kept < job.sim.target_particles
    before = state(obj)
    _scribble(obj)
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert same_state(before, state(obj))


def test_an_entry_whose_masks_do_not_fit_the_grid_is_refused_before_changing(blender):
    obj = add_grid(bpy, n=20, name="Hills")
    _paint(obj, 20)
    assert bpy.ops.terrain.erode(particles=200) == {'FINISHED'}
    s = obj.terrain_erosion
    entry = json.loads(s.history[0].data)
    entry["masks"]["rain"] = fmt.pack_array(np.ones((10, 12)))
    s.history[0].data = json.dumps(entry)
    before = state(obj)
    with pytest.raises(RuntimeError, match="history entry 1.*10x12.*20x20"):
        bpy.ops.terrain.rebuild()
    assert same_state(before, state(obj))


def test_every_process_and_rock_column_round_trips_through_an_entry(blender):
    from terrain_erosion.simcore.engine.simulation import PROCESSES, process_params
    from terrain_erosion.simcore.formats.presets import preset_files
    history = fmt
    params = {name: process_params(name) for name in PROCESSES}
    rocks = [p.rock for p in map(_preset, preset_files()) if p.rock is not None]
    assert rocks, "a shipped preset has a rock column"
    for rock in [None, *rocks]:
        entry = history.run_entry("erode", "x", params, 2**40 + 1, 3, 2, 1500.0, 2.0, rock,
                                  False, True, True, {"uplift": np.eye(4) * 0.3})
        recipe = history.parse(json.dumps(entry), "entry")
        assert recipe.params == params and recipe.rock == rock
        assert (recipe.seed, recipe.start_round, recipe.rounds) == (2**40 + 1, 3, 2)
        assert (recipe.real_size, recipe.exaggeration) == (1500.0, 2.0)
        assert not recipe.write_colors and recipe.exact_resume
        assert np.array_equal(recipe.maps["uplift"], np.eye(4) * 0.3)


def test_the_batch_command_records_its_run_and_the_saved_file_rebuilds_it(blender,
                                                                           tmp_path):
    add_grid(bpy, n=20, name="Terrain")
    out = tmp_path / "eroded.blend"
    assert te.features.batch.main(["--object", "Terrain", "--preset", "droplets_only",
                                   "--particles", "500", "--seed", "6",
                                   "--set", "droplets.Kq=12", "--save-as", str(out)]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(out))
    obj = bpy.data.objects["Terrain"]
    bpy.context.view_layer.objects.active = obj
    (entry,) = [json.loads(e.data) for e in obj.terrain_erosion.history]
    assert entry["seed"] == 6 and entry["settings"]["droplets"]["Kq"] == 12.0
    before = state(obj)
    _scribble(obj)
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert same_state(before, state(obj))


def test_a_replay_that_fails_part_way_puts_everything_back(blender, monkeypatch):
    obj = add_grid(bpy, n=24, name="Hills")
    s = obj.terrain_erosion
    s.apply_preset(_preset("default"))
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    before, names = state(obj), {o.name for o in bpy.data.objects}
    job_type = te.features.history.ErosionJob
    runs = []

    def run_then_fail(job, *args, **kw):  # the second entry fails (e.g. memory ran out)
        runs.append(job)
        if len(runs) == 2:
            raise te.simcore.errors.UserError("not enough memory for the test")
        return original(job, *args, **kw)

    original = job_type.run
    monkeypatch.setattr(job_type, "run", run_then_fail)
    with pytest.raises(RuntimeError, match="not enough memory"):
        bpy.ops.terrain.rebuild()
    assert len(runs) == 2
    assert same_state(before, state(obj))
    assert {o.name for o in bpy.data.objects} == names
    monkeypatch.setattr(job_type, "run", original)
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert same_state(before, state(obj))


@pytest.mark.parametrize("step", ["bake", "refine"])
def test_a_bake_or_a_refine_leaves_a_history_that_rebuild_refuses_clearly(blender, tmp_path,
                                                                          step):
    """Neither an Animation Bake nor Refine x2 is an entry: Rebuild would drop what they
    did (or replay coarse entries on the fine grid), so it refuses and says why."""
    obj = add_grid(bpy, n=16, name="Hills")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))  # the bake's cache
    obj = bpy.data.objects["Hills"]
    assert bpy.ops.terrain.erode(particles=200) == {'FINISHED'}
    s = obj.terrain_erosion
    assert len(s.history) == 1 and s.history_from_original
    if step == "bake":
        b = obj.terrain_bake
        b.frame_start, b.frame_end, b.particles_per_frame = 1, 3, 100
        assert bpy.ops.terrain.bake() == {'FINISHED'}
    else:
        assert bpy.ops.terrain.refine() == {'FINISHED'}
    assert not s.history_from_original
    note = json.loads(s.history[-1].data)
    assert note["kind"] == "note" and s.history[-1].label.startswith(
        "Note: Animation Bake, frames 1-3" if step == "bake" else "Note: Refine x2")
    before = state(obj)
    with pytest.raises(RuntimeError, match="an Animation Bake or a Refine x2"):
        bpy.ops.terrain.rebuild()
    assert same_state(before, state(obj))


def _exported_history(obj, folder) -> dict:
    """The sidecar of an EXR export of ``obj``'s maps."""
    files = te.features.export.export_maps(obj, folder, formats=("EXR",))
    return json.loads((folder / files[-1]).read_text())


def test_an_exported_history_replays_in_the_batch_command_bit_for_bit(blender, tmp_path):
    """The farm's round: the sidecar's history, replayed by the batch command on the
    original heights, gives what Rebuild gives in Blender (and what the runs gave)."""
    obj = add_grid(bpy, n=20, name="Hills")
    s = obj.terrain_erosion
    s.apply_preset(_preset("droplets_only"))
    _paint(obj, 20)
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    assert bpy.ops.terrain.step() == {'FINISHED'}
    s.mask_rain_source, s.seed = 'NONE', 9
    assert bpy.ops.terrain.erode(particles=200) == {'FINISHED'}
    s.seed = 5
    assert bpy.ops.terrain.erode(particles=200) == {'FINISHED'}
    s.history[3].enabled = False
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    rebuilt = state(obj)
    sidecar = _exported_history(obj, tmp_path)
    assert [e.get("enabled", True) for e in sidecar["history"]] == [True] * 3 + [False]
    assert [e["kind"] for e in sidecar["history"]] == ["erode", "step", "erode", "erode"]
    assert sidecar["history_complete"] is True
    path = tmp_path / "farm.json"
    path.write_text(json.dumps(sidecar))
    # the farm's copy: its history lost, the mesh scribbled on, the settings others
    s.history.clear()
    _scribble(obj)
    s.seed = 77
    out = tmp_path / "farm.blend"
    assert te.features.batch.main(["--object", "Hills", "--history", str(path),
                                   "--save-as", str(out)]) == 0
    assert same_state(rebuilt, state(obj))
    assert len(s.history) == 4 and not s.history[3].enabled
    assert s.history[0].label.startswith("Erode")
    bpy.ops.wm.open_mainfile(filepath=str(out))
    obj = bpy.data.objects["Hills"]
    bpy.context.view_layer.objects.active = obj
    assert same_state(rebuilt, state(obj))


@pytest.mark.parametrize("damage, message", [
    (lambda e: e.update(version=2), "later version"),
    (lambda e: e["settings"]["droplets"].update(Kq="lots"), "Kq"),
    (lambda e: e.update(kind="sculpt"), "'sculpt' entry"),
])
def test_the_batch_command_names_a_bad_entry_and_writes_nothing(blender, tmp_path, capsys,
                                                                 damage, message):
    obj = add_grid(bpy, n=16, name="Hills")
    obj.terrain_erosion.apply_preset(_preset("droplets_only"))
    assert bpy.ops.terrain.erode(particles=100) == {'FINISHED'}
    assert bpy.ops.terrain.step() == {'FINISHED'}
    sidecar = _exported_history(obj, tmp_path)
    damage(sidecar["history"][1])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(sidecar))
    before, labels = state(obj), [e.label for e in obj.terrain_erosion.history]
    out = tmp_path / "never.blend"
    capsys.readouterr()
    assert te.features.batch.main(["--object", "Hills", "--history", str(path),
                                   "--save-as", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"history entry 2 of {path}" in err
    assert re.search(message, err)
    assert not out.exists()
    assert same_state(before, state(obj))
    assert [e.label for e in obj.terrain_erosion.history] == labels


def test_the_batch_command_refuses_a_history_that_is_not_all_the_erosion(blender,
                                                                        tmp_path, capsys):
    obj = add_grid(bpy, n=16, name="Hills")
    assert bpy.ops.terrain.erode(particles=100) == {'FINISHED'}
    sidecar = _exported_history(obj, tmp_path)
    sidecar["history_complete"] = False
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(sidecar))
    assert te.features.batch.main(["--object", "Hills", "--history", str(path)]) == 2
    assert "does not hold all of the erosion" in capsys.readouterr().err
    assert te.features.batch.main(["--object", "Hills", "--history", str(path),
                                   "--seed", "3"]) == 2
    assert "leave out --seed" in capsys.readouterr().err
    assert te.features.batch.main(["--object", "Hills", "--history", str(path),
                                   "--seed", "0", "--real-size", "0"]) == 2
    assert "leave out --seed, --real-size" in capsys.readouterr().err
    path.write_text("{}")
    assert te.features.batch.main(["--object", "Hills", "--history", str(path)]) == 2
    assert "holds no history" in capsys.readouterr().err


def test_an_entry_changed_through_the_settings_rebuilds_as_the_runs_by_hand(blender):
    obj = add_grid(bpy, n=20, name="Hills")
    s = obj.terrain_erosion
    s.apply_preset(_preset("droplets_only"))
    s.seed = 3
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    s.apply_preset(_preset("default"))
    s.seed = 4
    assert bpy.ops.terrain.erode(particles=200) == {'FINISHED'}
    recorded = json.loads(s.history[0].data)
    s.history_index = 0
    assert bpy.ops.terrain.history_load() == {'FINISHED'}
    assert s.full_seed() == 3 and s.preset == _preset("droplets_only").name
    assert sorted(s.enabled_params()) == sorted(recorded["settings"])
    assert bpy.ops.terrain.history_store() == {'FINISHED'}
    assert json.loads(s.history[0].data) == recorded, "stored unchanged: the same entry"
    s.seed = 8
    assert bpy.ops.terrain.history_store() == {'FINISHED'}
    assert json.loads(s.history[0].data) == {**recorded, "seed": 8}
    assert ", seed 8," in s.history[0].label
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    rebuilt = state(obj)
    assert bpy.ops.terrain.reset() == {'FINISHED'}  # by hand, with seed 8 first
    s.apply_preset(_preset("droplets_only"))
    s.seed = 8
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    s.apply_preset(_preset("default"))
    s.seed = 4
    assert bpy.ops.terrain.erode(particles=200) == {'FINISHED'}
    assert same_state(rebuilt, state(obj))


def test_load_and_store_refuse_an_entry_that_is_no_run(blender):
    obj = add_grid(bpy, n=20, name="Hills")
    obj.terrain_erosion.real_size = 2400.0
    assert bpy.ops.terrain.generate_ridges(amplitude=60.0, ridge_spacing=300.0,
                                           seed=3) == {'FINISHED'}
    with pytest.raises(RuntimeError, match="history entry 1 .*is no Erode or Step"):
        bpy.ops.terrain.history_load()
    with pytest.raises(RuntimeError, match="is no Erode or Step"):
        bpy.ops.terrain.history_store()


def test_apply_starts_a_history_that_rebuilds_bit_for_bit(blender):
    obj = add_grid(bpy, n=20, name="Hills")
    s = obj.terrain_erosion
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}
    assert bpy.ops.terrain.apply() == {'FINISHED'}
    assert len(s.history) == 0 and s.rounds_done == 0
    assert obj.data.attributes.get("te_bedrock") is None
    assert bpy.ops.terrain.erode(particles=300) == {'FINISHED'}  # the same seed again
    assert json.loads(s.history[0].data)["start_round"] == 0
    before = state(obj)
    _scribble(obj)
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert same_state(before, state(obj))


def test_a_mixed_history_with_live_painting_rebuilds_bit_for_bit_also_after_reload(
        blender, tmp_path):
    """Ridges, Erodes with two presets (one with a painted rain mask), a scripted Live
    Painting session with a young_range preset: a Rebuild with nothing changed gives
    back every height and layer, before and after a save and reload."""
    n, cell = 33, 60.0
    obj = add_grid(bpy, n=n, size=(n - 1) * cell, relief=30.0, name="Range")
    s = obj.terrain_erosion
    s.real_size = (n - 1) * cell
    assert bpy.ops.terrain.generate_ridges(amplitude=120.0, ridge_spacing=240.0,
                                           seed=5) == {'FINISHED'}
    s.apply_preset(_preset("droplets_only"))
    _paint(obj, n)
    assert bpy.ops.terrain.erode(particles=600) == {'FINISHED'}
    s.mask_rain_source, s.mask_erodibility_source = 'NONE', 'NONE'
    s.apply_preset(_preset("young_range"))
    s.landscape.uplift = 3e-3
    x = positions(obj.data)[:, 0].astype(np.float64)
    band = np.exp(-(x / 300.0) ** 2)
    states = tmp_path / "states.npz"
    np.savez(states, rounds=np.array([0, 2]), uplift=np.array([band, 0.5 * band]))
    assert bpy.ops.terrain.live_paint(states=str(states), rounds=4) == {'FINISHED'}
    s.apply_preset(_preset("default"))
    s.seed = 11
    assert bpy.ops.terrain.erode(particles=400) == {'FINISHED'}
    entries = [json.loads(e.data) for e in s.history]
    assert [e["kind"] for e in entries] == ["ridges", "erode", "live", "erode"]
    assert len({entries[1]["preset"], entries[3]["preset"]}) == 2
    assert sorted(entries[1]["masks"]) == ["erodibility", "rain"]
    assert entries[3]["masks"] == {}
    before = state(obj)
    assert {"te_stream", "te_sediment_depth"} <= set(before)
    _scribble(obj)
    assert not same_state(before, state(obj))
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert same_state(before, state(obj))
    path = str(tmp_path / "mixed.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Range"]
    bpy.context.view_layer.objects.active = obj
    assert same_state(before, state(obj))
    _scribble(obj)
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    assert same_state(before, state(obj))
