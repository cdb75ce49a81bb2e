"""The add-on names no process outside its registry of extras (addon/ui/process_ui.py), and
its operators report user errors through one boundary (addon/ui/boundary.py): real
Blender (bpy module)."""

from __future__ import annotations

import types

import bpy
import pytest
from blender_helpers import add_grid, staged_addon

te = staged_addon()
PROCESSES = te.simcore.processes.PROCESSES


class _Layout:
    """Records what a panel draws: ``props`` (owner, name), ``labels``."""

    def __init__(self, record=None):
        self.record = record if record is not None else {"props": [], "labels": []}

    def prop(self, owner, name, **_kw):
        self.record["props"].append((owner, name))

    def label(self, text="", **_kw):
        self.record["labels"].append(text)

    def _child(self, *_args, **_kw):
        return _Layout(self.record)

    box = column = row = _child


def _draw(name: str, obj) -> dict:
    panel = getattr(bpy.types, f"TERRAIN_PT_{name}")
    layout = _Layout()
    context = types.SimpleNamespace(active_object=obj)
    panel.draw(types.SimpleNamespace(layout=layout), context)
    return layout.record


def test_every_process_panel_draws_its_parameters_and_its_extras(blender):
    obj = add_grid(bpy, n=8)
    s = obj.terrain_erosion
    assert set(te.ui.process_ui.EXTRAS) <= set(PROCESSES)
    for name, proc in PROCESSES.items():
        group = getattr(s, name)
        assert group.enabled == proc.enabled_by_default, name  # a new terrain's settings
        record = _draw(name, obj)
        extras = [key for owner, key in record["props"] if owner == s]
        ui = te.ui.process_ui.EXTRAS.get(name)
        assert extras == list(ui.settings if ui else ()), name
        for key in extras:  # the extra settings live on the object's settings
            assert hasattr(s, key), key
        assert all(owner in (s, group) for owner, _ in record["props"]), name
    s.wind.direction = 90.0
    assert any("towards" in text for text in _draw("wind", obj)["labels"])


def test_the_output_panel_lists_every_layer_of_the_descriptors(blender):
    obj = add_grid(bpy, n=8)
    layout = _Layout()
    bpy.types.TERRAIN_PT_output.draw(types.SimpleNamespace(layout=layout),
                                     types.SimpleNamespace(active_object=obj))
    fields = te.simcore.processes.FIELDS.values()
    shown = " ".join(layout.record["labels"])
    tooltip = type(obj.terrain_erosion).bl_rna.properties["write_colors"].description
    for f in fields:
        for attr in (f.color, f.exact):
            if attr:
                assert attr in shown, attr
        if f.color:
            assert f.color in tooltip, f.color  # te_wind was missing


def test_every_operator_reports_any_user_error(blender, monkeypatch):
    """The ridges operator caught grid and parameter errors only: a memory error from
    the generator ended in a traceback; now it is reported like every other one."""
    obj = add_grid(bpy, n=17)

    def no_memory(*_args, **_kw):
        raise te.simcore.errors.ResourceError("not enough memory for these ridges")

    monkeypatch.setattr(te.features.ridges.dla, "ridge_terrain", no_memory)
    # a report, not a traceback (whose text would hold the message too)
    with pytest.raises(RuntimeError, match=r"^Error: not enough memory for these ridges\n$"):
        bpy.ops.terrain.generate_ridges(amplitude=0.2, ridge_spacing=0.15)
    assert obj.name in bpy.data.objects

    def bad(*_args, **_kw):
        raise te.simcore.errors.UserError("a message that says what to do")

    # the same boundary, the same report, for an operator of another module
    monkeypatch.setattr(te.features.report_ui, "object_report", bad)
    with pytest.raises(RuntimeError, match=r"^Error: a message that says what to do\n$"):
        bpy.ops.terrain.report()
    # and a bug is still a bug: not swallowed as a user error
    monkeypatch.setattr(te.features.report_ui, "object_report", lambda _obj: 1 / 0)
    with pytest.raises(RuntimeError, match="Traceback(.|\n)*ZeroDivisionError"):
        bpy.ops.terrain.report()
