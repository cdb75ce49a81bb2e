"""The change per process in real Blender (bpy module): a ``te_change_<process>`` float
layer per process, in local units, written with every frame; the layers add up to the
whole change since the original heights, also across a resumed run; Reset and Apply
remove them; the export writes a signed map per process; a user attribute named like
ours but of another kind does not break a run."""

from __future__ import annotations

import json
import time
import types

import bpy
import numpy as np
import pytest
from blender_helpers import add_grid, positions, registered_addon, staged_addon

te = staged_addon()
N = 48


@pytest.fixture
def blender(tmp_path, monkeypatch):
    monkeypatch.setenv("TERRAIN_EROSION_USER_DIR", str(tmp_path / "user"))
    with registered_addon() as bpy_:
        yield bpy_


def _terrain(name: str = "Terrain"):
    """A 48² Default grid standing for 3 km (62.5 m cells)."""
    obj = add_grid(bpy, n=N, size=4.0, relief=1.2, name=name)
    s = obj.terrain_erosion
    s.apply_preset(te.simcore.formats.presets.find_preset("default"))
    s.real_size = 3000.0
    return obj


def _layer(obj, name):
    g = te.data.grid.detect_grid(obj.data)
    return te.data.grid.read_float_layer(obj.data, name, g)


def _z(obj):
    g = te.data.grid.detect_grid(obj.data)
    return positions(obj.data)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)


def _changes(obj) -> dict[str, np.ndarray]:
    return {a.name[len(te.data.grid.CHANGE_PREFIX):]: _layer(obj, a.name)
            for a in obj.data.attributes if a.name.startswith(te.data.grid.CHANGE_PREFIX)}


def _assert_adds_up(obj) -> dict[str, np.ndarray]:
    """The change layers sum to z - te_original_z within float32 precision."""
    z, original = _z(obj), _layer(obj, te.data.grid.ORIGINAL_Z)
    changes = _changes(obj)
    total = sum(changes.values())
    relief = float(original.max() - original.min())
    err = np.abs(total - (z - original)).max()
    assert err <= 1e-5 * relief, (err, relief)
    assert np.abs(z - original).max() > 1e-3 * relief, "the run moved the ground"
    return changes


def _enabled(obj) -> set[str]:
    return set(obj.terrain_erosion.enabled_params())


def _live_run(obj, particles: int) -> None:
    """A live run: rounds on the worker thread, frames written a slice per tick."""
    job = te.data.job.ErosionJob(obj, particles)
    job.live_update = 0.0
    job.tick_seconds = 0.0  # one item per tick: every frame is written in slices
    rt = types.SimpleNamespace(stop_requested=False, progress=0.0, status="")
    for _ in range(50000):
        state = te.features.operators.tick(job, rt, budget=0.0, on_worker=True)
        if state != "running":
            break
        time.sleep(0.001)
    assert state == "done", rt.status
    job.finish()
    assert job.frames_written >= 1


def test_change_layers_add_up_after_a_run_and_after_a_resumed_live_run(blender):
    obj = _terrain()
    enabled = _enabled(obj)
    assert {"droplets", "hydrology", "thermal", "trees"} <= enabled, enabled  # Default
    job = te.data.job.ErosionJob(obj, 6000)
    job.run()
    first = _assert_adds_up(obj)
    assert set(first) == enabled, "a layer per enabled process, no other"
    for name in first:
        attr = obj.data.attributes[te.data.grid.CHANGE_LAYERS[name]]
        assert (attr.data_type, attr.domain) == ('FLOAT', 'POINT')
    moved = [n for n, c in first.items() if np.abs(c).max() > 0]
    assert "droplets" in moved, "droplets moved the ground"
    # local units: the layer is terrain.changes (cell units) x height_unit
    unit = job.scale.height_unit
    assert unit != pytest.approx(1.0)
    assert np.allclose(first["droplets"], job.sim.terrain.changes["droplets"] * unit,
                       rtol=0, atol=1e-6 * np.abs(first["droplets"]).max())

    _live_run(obj, 6000)  # resumes from the layers and adds on
    assert obj.terrain_erosion.rounds_done > job.sim.rounds_done
    second = _assert_adds_up(obj)
    assert not np.array_equal(second["droplets"], first["droplets"])

    # a process enabled later starts at zero; the earlier layers stay and still add up
    obj.terrain_erosion.thermal.enabled = False
    obj.terrain_erosion.snowball.enabled = True
    te.data.job.ErosionJob(obj, 3000).run()
    third = _assert_adds_up(obj)
    assert set(third) == enabled | {"snowball"}
    assert np.array_equal(third["thermal"], second["thermal"]), "not run: unchanged"


def test_reset_and_apply_remove_the_state_and_change_layers_only(blender):
    obj = _terrain()
    me = obj.data
    mine = me.attributes.new("my_mask", 'FLOAT', 'POINT')
    mine.data.foreach_set("value", np.full(len(me.vertices), 0.25, np.float32))
    te.data.job.ErosionJob(obj, 4000).run()
    assert _changes(obj)
    assert bpy.ops.terrain.apply() == {'FINISHED'}
    assert not _changes(obj) and me.attributes.get(te.data.grid.ORIGINAL_Z) is None
    assert me.attributes.get("te_bedrock") is None, "the heights alone are the base"
    te.data.job.ErosionJob(obj, 4000).run()  # counts from the applied heights
    _assert_adds_up(obj)
    assert bpy.ops.terrain.reset() == {'FINISHED'}
    left = {a.name for a in me.attributes if a.name.startswith("te_")}
    assert not left, left
    assert np.all(_layer(obj, "my_mask") == 0.25), "a user attribute is never touched"


def test_memory_estimate_counts_a_layer_per_process(blender):
    obj = _terrain()
    job = te.data.job.ErosionJob(obj, 1000)
    base = te.data.writeback.bytes_per_vertex(job.outputs, job.write_colors, job.with_water)
    assert job.bytes_per_vertex() == base + 8 * len(_enabled(obj))


@pytest.mark.parametrize("kind", [('INT', 'POINT'), ('FLOAT', 'FACE'),
                                  ('FLOAT_COLOR', 'POINT')])
def test_a_user_attribute_with_our_name_and_another_kind_does_not_break_a_run(
        blender, kind):
    """It is the user's (a kind the add-on never writes): the run refuses to replace
    it, naming it (it was replaced silently before), and runs once it is renamed."""
    obj = _terrain()
    obj.data.attributes.new("te_change_droplets", *kind)
    with pytest.raises(te.simcore.terrain.TerrainError, match="te_change_droplets"):
        te.data.job.ErosionJob(obj, 4000)
    attr = obj.data.attributes["te_change_droplets"]
    assert (attr.data_type, attr.domain) == kind, "the user's attribute is untouched"
    attr.name = "my_change"
    te.data.job.ErosionJob(obj, 4000).run()
    attr = obj.data.attributes["te_change_droplets"]
    assert (attr.data_type, attr.domain) == ('FLOAT', 'POINT')
    _assert_adds_up(obj)
    te.data.job.ErosionJob(obj, 4000).run()  # and resumes
    _assert_adds_up(obj)


def test_a_damaged_change_layer_is_read_as_zero(blender):
    obj = _terrain()
    te.data.job.ErosionJob(obj, 4000).run()
    me = obj.data
    values = np.zeros(len(me.vertices), np.float32)
    me.attributes["te_change_thermal"].data.foreach_get("value", values)
    values[:5] = np.nan
    me.attributes["te_change_thermal"].data.foreach_set("value", values)
    te.data.job.ErosionJob(obj, 4000).run()
    assert all(np.isfinite(c).all() for c in _changes(obj).values())


def test_export_writes_a_signed_map_per_process(blender, tmp_path):
    obj = _terrain("Hills")
    te.data.job.ErosionJob(obj, 6000).run()
    changes = _changes(obj)
    files = {f.name for f in te.features.export.export_maps(obj, tmp_path, "hills")}
    side = json.loads((tmp_path / "hills.json").read_text())
    for name, layer in changes.items():
        key = f"change_{name}"
        assert {f"hills_{key}.png", f"hills_{key}.exr"} <= files, key
        entry = side["maps"][key]
        assert entry["process"] == name and entry["signed"] is True
        assert entry["min"] == -entry["max"], "mid-grey is no change"
        assert entry["value_min"] == pytest.approx(float(layer.min()))
        assert entry["value_max"] == pytest.approx(float(layer.max()))
        assert "mid-grey" in entry["png_decode"] and entry["meaning"]
        exr = te.features.export._load_image(tmp_path / entry["files"]["EXR"])
        assert np.array_equal(exr.astype(np.float32), layer.astype(np.float32))
        png = te.features.export._load_image(tmp_path / entry["files"]["PNG"])
        lo, hi = entry["min"], entry["max"]
        decoded = lo + np.rint(png * 65535) / 65535 * (hi - lo)
        assert np.abs(decoded - layer).max() <= (hi - lo) / 65535 + 1e-7
    # the height map and its sidecar keys are as before
    assert side["png_decode"] and side["maps"]["height"]["files"]["EXR"] == "hills_height.exr"
    assert "original_z" not in side["maps"]


def test_output_panel_names_the_change_layers(blender):
    obj = _terrain()
    bpy.context.view_layer.objects.active = obj
    texts: list[str] = []

    class Layout:
        def column(self, **_):
            return self

        def prop(self, *args, **kwargs):
            pass

        def label(self, text="", **_):
            texts.append(text)

    panel = types.SimpleNamespace(layout=Layout())
    te.features.panels.TERRAIN_PT_output.draw(panel, bpy.context)
    assert any("te_change_" in t for t in texts), texts
