"""What the add-on shows for a process beyond its parameters: the registry of extra
settings and widgets, keyed by process name.

Everything else about a process's settings and sub-panel is generated from its
descriptor (``simcore/process.py``): the enable toggle (on by default where
``Process.enabled_by_default``), one field per parameter, its label and doc. A process
that needs more -- an object to instance, a switch for a helper object, a hint in
words -- adds an entry here and is named nowhere else in the add-on. A process with no
entry needs nothing in ``addon/``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import bpy

from ..simcore.processes import PROCESSES
from .overlay import compass


@dataclasses.dataclass(frozen=True)
class ProcessUI:
    """A process's extras in the add-on."""

    #: settings kept on the object's Terrain Erosion settings, next to the process
    #: groups (name -> ``bpy.props`` property), so scripts read them as
    #: ``obj.terrain_erosion.<name>``
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: ``draw(layout, settings, group)``: widgets below the parameters in the process's
    #: sub-panel (``settings``: the object's Terrain Erosion settings; ``group``: the
    #: process's own settings)
    draw: Callable[[Any, Any, Any], None] | None = None


def _draw_trees(layout, settings, _group) -> None:
    box = layout.box()
    box.prop(settings, "tree_object")
    box.prop(settings, "tree_collection")
    box.prop(settings, "tree_scale")


def _draw_hydrology(layout, settings, _group) -> None:
    layout.prop(settings, "water_surface")


def _draw_wind(layout, _settings, group) -> None:
    layout.label(text=f"Blows towards {compass(group.direction)}", icon='FORCE_WIND')
    layout.label(text="The orange arrow in the viewport shows it")


#: process name -> its extras (only processes that have any)
EXTRAS: dict[str, ProcessUI] = {
    "trees": ProcessUI(settings={
        "tree_object": bpy.props.PointerProperty(
            name="Tree", type=bpy.types.Object,
            description="Object instanced for every tree (empty: a simple built-in tree)"),
        "tree_collection": bpy.props.PointerProperty(
            name="Tree Collection", type=bpy.types.Collection,
            description="Instance a random object of this collection per tree (overrides "
                        "Tree)"),
        "tree_scale": bpy.props.FloatProperty(
            name="Tree Scale", default=0.0, min=0.0, soft_max=100.0, subtype='DISTANCE',
            description="Height of a full-grown tree in local units (0: the Trees "
                        "process' Tree Height, in metres at the object's Real Size)"),
    }, draw=_draw_trees),
    "hydrology": ProcessUI(settings={
        "water_surface": bpy.props.BoolProperty(
            name="Water Surface", default=True,
            description="Show pools (lakes, sea) as a water surface object for rendering"),
    }, draw=_draw_hydrology),
    "wind": ProcessUI(draw=_draw_wind),
}

_unknown = sorted(set(EXTRAS) - set(PROCESSES))
if _unknown:
    raise ValueError(f"addon/ui/process_ui.py has extras for unknown process(es) {_unknown}")


def extra_settings() -> dict[str, Any]:
    """Every process's extra settings (name -> property), for the settings group; a
    name two processes claim, or one that is a process's own name, is refused."""
    out: dict[str, Any] = {}
    for name, ui in EXTRAS.items():
        for key, prop in ui.settings.items():
            if key in out or key in PROCESSES:
                raise ValueError(f"process '{name}': the setting '{key}' is taken")
            out[key] = prop
    return out


def draw_extras(name: str, layout, settings, group) -> None:
    """The extra widgets of process ``name`` (nothing if it has none)."""
    ui = EXTRAS.get(name)
    if ui is not None and ui.draw is not None:
        ui.draw(layout, settings, group)
