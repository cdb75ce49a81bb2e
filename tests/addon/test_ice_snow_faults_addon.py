"""Hostile inputs for the ice and snow processes and the Ice Surface object in real
Blender (bpy module), like the bake and export suite (test_bake_export_faults.py):
undo and file reload after an ice and snow run and after Ice Surface, NaN in their
layers, a run of absurd length refused before any work, a full disk while a set of maps
holding te_ice and te_snow is written. After every failure the mesh, its layers and
the earlier files (sha256) are as they were."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import bpy
import numpy as np
import pytest
from blender_helpers import add_grid, mesh_state, positions, same_state, staged_addon
from test_bake_export_faults import full_disk_at

te = staged_addon()
UserError = te.simcore.errors.UserError


def snowy_peak(name="Peak", n=16):
    """A grid whose upper part lies above the equilibrium line and the snow line,
    eroded by ice (2,000 years in 100-year passes) and snow (20 yearly passes): it
    holds te_ice and te_snow, each with some ice or snow."""
    obj = add_grid(bpy, n=n, size=2.0, relief=0.6, name=name)
    bpy.context.view_layer.objects.active = obj
    s = obj.terrain_erosion
    s.droplets.enabled = False
    s.ice.enabled, s.snow.enabled = True, True
    s.ice.age, s.ice.time_step, s.ice.ela_fraction = 2000.0, 100.0, 0.3
    s.snow.years, s.snow.time_step = 20.0, 1.0
    s.particles = 1
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    state = mesh_state(obj.data)
    assert state["te_ice"].max() > 0.0 and state["te_snow"].max() > 0.0
    return obj


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir())}


def layers_consistent(me) -> None:
    """The stored state agrees with the mesh: ground = bedrock + sediment, no
    negative or non-finite ice or snow."""
    state = mesh_state(me)
    z = positions(me)[:, 2]
    assert np.allclose(state["te_bedrock"] + state["te_sediment_depth"], z, atol=1e-4)
    for name in ("te_ice", "te_snow"):
        assert np.isfinite(state[name]).all() and state[name].min() >= 0.0, name


def test_undo_and_redo_of_an_ice_and_snow_run(blender):
    obj = add_grid(bpy, n=16, size=2.0, relief=0.6, name="Peak")
    bpy.context.view_layer.objects.active = obj
    original = mesh_state(obj.data)
    bpy.ops.ed.undo_push(message="before erosion")
    bpy.data.objects.remove(obj)
    obj = snowy_peak()
    eroded = mesh_state(obj.data)
    bpy.ops.ed.undo_push(message="Erode")  # the GUI pushes it when an 'UNDO' op ends
    bpy.ops.ed.undo()
    # the step before the run: the grid as made, no ice or snow layer
    back = mesh_state(bpy.data.objects["Peak"].data)
    assert same_state(original, back) and "te_ice" not in back and "te_snow" not in back
    bpy.ops.ed.redo()
    again = bpy.data.objects["Peak"]
    assert same_state(eroded, mesh_state(again.data))
    layers_consistent(again.data)


def test_reload_after_an_ice_and_snow_run_keeps_the_layers_and_runs_on(blender, tmp_path):
    obj = snowy_peak()
    state, rounds = mesh_state(obj.data), obj.terrain_erosion.rounds_done
    path = str(tmp_path / "peak.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Peak"]
    assert same_state(state, mesh_state(obj.data))
    layers_consistent(obj.data)
    s = obj.terrain_erosion
    assert s.ice.enabled and s.snow.enabled and s.rounds_done == rounds
    # the next run starts from the stored ice and snow
    job = te.data.job.ErosionJob(obj)
    g = job.grid
    for field, layer in (("ice", "te_ice"), ("snow", "te_snow")):
        stored = state[layer][g.order].reshape(g.rows, g.cols)
        assert np.array_equal(getattr(job.sim.terrain, field) > 0.0, stored > 0.0), field
    job.cancel()
    assert same_state(state, mesh_state(obj.data))


@pytest.mark.parametrize("layer", ["te_ice", "te_snow"])
def test_nan_in_an_ice_or_snow_layer_is_refused_and_the_mesh_stays(blender, layer):
    obj = snowy_peak()
    me = obj.data
    values = mesh_state(me)[layer].copy()
    values[len(values) // 2] = np.nan
    me.attributes[layer].data.foreach_set("value", values)
    before = mesh_state(me)
    with pytest.raises(RuntimeError) as info:
        bpy.ops.terrain.erode()
    message = str(info.value)
    assert "Traceback" not in message and ("NaN" in message or "not a number" in message
                                           or "finite" in message), message
    assert same_state(before, mesh_state(me))


def test_a_run_of_absurd_length_is_refused_before_any_work(blender):
    obj = add_grid(bpy, n=64, size=2.0, relief=0.6, name="Peak")
    bpy.context.view_layer.objects.active = obj
    s = obj.terrain_erosion
    s.snow.enabled = True
    s.snow.years, s.snow.time_step = 1.0e6, 1 / 64  # 6.4e7 passes x 4096 cells
    assert (s.snow.years, s.snow.time_step) == (1.0e6, 1 / 64), "not clamped"
    before = mesh_state(obj.data)
    with pytest.raises(RuntimeError, match=r"snow: 64,000,000 passes .* raise its "
                                           r"time_step or lower its years"):
        bpy.ops.terrain.erode()
    assert same_state(before, mesh_state(obj.data))
    assert s.rounds_done == 0


def test_an_ice_surface_is_undone_and_survives_a_reload(blender, tmp_path):
    obj = snowy_peak()
    terrain = mesh_state(obj.data)
    objects = sorted(bpy.data.objects.keys())
    bpy.ops.ed.undo_push(message="before ice surface")
    assert bpy.ops.terrain.ice_surface() == {'FINISHED'}
    made = obj.terrain_ice.ice_object
    co = positions(made.data).copy()
    bpy.ops.ed.undo_push(message="Ice Surface")
    bpy.ops.ed.undo()
    obj = bpy.data.objects["Peak"]
    assert sorted(bpy.data.objects.keys()) == objects and obj.terrain_ice.ice_object is None
    assert same_state(terrain, mesh_state(obj.data)), "the terrain is untouched"
    bpy.ops.ed.redo()
    obj = bpy.data.objects["Peak"]
    made = obj.terrain_ice.ice_object
    assert made is not None and np.array_equal(positions(made.data), co)
    # saved and loaded again: the same ice object, parented, made again in place
    path = str(tmp_path / "ice.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Peak"]
    made = obj.terrain_ice.ice_object
    assert made is not None and made.parent == obj
    assert np.array_equal(positions(made.data), co)
    assert same_state(terrain, mesh_state(obj.data))
    count = len(bpy.data.objects)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.ice_surface() == {'FINISHED'}
    assert obj.terrain_ice.ice_object == made and len(bpy.data.objects) == count
    assert np.array_equal(positions(made.data), co)


def test_ice_surface_refuses_nan_ice_and_changes_nothing(blender):
    obj = snowy_peak()
    me = obj.data
    values = mesh_state(me)["te_ice"].copy()
    values[::7] = np.nan
    me.attributes["te_ice"].data.foreach_set("value", values)
    objects, meshes = sorted(bpy.data.objects.keys()), sorted(bpy.data.meshes.keys())
    with pytest.raises(RuntimeError, match="37 vertices have a te_ice value that is not a "
                                           "finite number"):
        bpy.ops.terrain.ice_surface()
    assert obj.terrain_ice.ice_object is None
    assert (sorted(bpy.data.objects.keys()), sorted(bpy.data.meshes.keys())) == (objects,
                                                                                meshes)


def test_maps_with_ice_and_snow_on_a_full_disk_keep_the_previous_set(blender, tmp_path,
                                                                      monkeypatch):
    obj = snowy_peak()
    out = tmp_path / "maps"
    out.mkdir()
    formats = ("PNG", "EXR", "MULTI_EXR")
    written = te.features.export.export_maps(obj, out, "peak", formats)
    side = json.loads((out / "peak.json").read_text())
    channels = side["multilayer_exr"]["channels"]
    assert {"ice", "snow"} <= set(channels), channels
    assert {"peak_ice.exr", "peak_snow.exr"} <= {p.name for p in written}
    files, mesh = digests(out), mesh_state(obj.data)
    s = obj.terrain_erosion
    s.ice.age = 2100.0  # a little more ice: a re-export writes different bytes
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    mesh = mesh_state(obj.data)
    for k in range(len(files) + 2):
        with full_disk_at(monkeypatch, k, budget=64) as opened:
            try:
                te.features.export.export_maps(obj, out, "peak", formats)
            except UserError as exc:
                assert "No space left" in str(exc), exc
            else:
                assert k == len(opened) == len(files)
                break
        assert digests(out) == files, f"file {k}: the previous set exactly (sha256)"
        assert same_state(mesh, mesh_state(obj.data))
    else:
        pytest.fail("the export never succeeded")
    new = digests(out)
    assert all(new[k] != files[k] for k in ("peak_layers.exr", "peak_ice.exr"))
