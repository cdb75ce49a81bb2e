"""Realism report in Blender: the Report button measures the active grid
with simcore's figures in world units (its real size), before its first run and now,
and the panel shows them until the mesh or its rounds change."""

from __future__ import annotations

import types

import bpy
import numpy as np
import pytest
from blender_helpers import PanelRecorder, staged_addon

te = staged_addon()
from terrain_erosion.simcore.analysis.report import landform_figures  # noqa: E402
from terrain_erosion.simcore.generators.noise import upland_terrain  # noqa: E402


def _grid(n=48, width=2.0):
    z = upland_terrain(n, seed=5, cell_size=width / (n - 1))
    obj = te.features.export.make_grid_object("Report", z, width / (n - 1), width / (n - 1))
    bpy.context.view_layer.objects.active = obj
    return obj, z


def _draw(obj) -> list[str]:
    log = []
    context = types.SimpleNamespace(active_object=obj,
                                    window_manager=bpy.context.window_manager)
    te.features.report_ui.TERRAIN_PT_report.draw(types.SimpleNamespace(layout=PanelRecorder(log)),
                                        context)
    return [text for kind, text, _ in log if kind == "label"]


def test_report_measures_before_and_now_in_world_units(blender):
    obj, z = _grid()
    s = obj.terrain_erosion
    s.apply_preset(te.simcore.formats.presets.find_preset("default"))
    assert bpy.ops.terrain.report() == {'FINISHED'}
    fresh = te.features.report_ui.shown_report(obj)
    scale = s.real_scale(48, 48, 2.0 / 47)  # automatic: treated as 5 km
    assert scale.real_size == pytest.approx(5000.0)
    expected = landform_figures(z / scale.height_unit, scale.world_cell)
    assert fresh["before"]["relief"] == pytest.approx(expected["relief"], rel=1e-5)
    assert fresh["before"]["relief"] == pytest.approx(np.ptp(z) * scale.s, rel=1e-5)
    assert fresh["after"]["slope_p50"] == pytest.approx(fresh["before"]["slope_p50"])
    assert "Before" in _draw(obj) and any(t.endswith("°") for t in _draw(obj))
    te.data.job.ErosionJob(obj, 8000).run()
    assert te.features.report_ui.shown_report(obj) is None, "a run makes the last report stale"
    assert "Before" not in _draw(obj)
    assert bpy.ops.terrain.report() == {'FINISHED'}
    done = te.features.report_ui.shown_report(obj)
    assert done["before"]["relief"] == pytest.approx(fresh["before"]["relief"], rel=1e-5), \
        "before: the heights kept from before the first run"
    assert done["after"]["slope_p50"] != done["before"]["slope_p50"]


def test_report_needs_a_grid(blender):
    bpy.ops.mesh.primitive_uv_sphere_add()
    assert not te.features.report_ui.TERRAIN_OT_report.poll(bpy.context)


@pytest.mark.compat
def test_heights_a_script_changes_make_the_report_stale(blender):
    """A script (or sculpt, or an applied modifier) that changes the heights without a
    run: the panel no longer shows the old figures as now."""
    obj, z = _grid()
    assert bpy.ops.terrain.report() == {'FINISHED'}
    assert te.features.report_ui.shown_report(obj) is not None
    co = np.empty(3 * len(obj.data.vertices), np.float32)
    obj.data.vertices.foreach_get("co", co)
    co[2::3] *= 1.5
    obj.data.vertices.foreach_set("co", co)
    obj.data.update()
    assert te.features.report_ui.shown_report(obj) is None
    assert "Before" not in _draw(obj)
