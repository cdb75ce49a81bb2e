"""The rock column of one object (simcore/rock.py): its layers, top down, and the frame
they lie in, saved with the .blend. The frame's settings and the layers' numbers are
generated from simcore's ``Frame`` and ``Layer`` fields (param_props.py).

Lengths (thickness, top, fold and wobble sizes, fault throw and position) are metres of
the real world the simulation runs in -- the object's Real Size -- as the processes'
lengths are, not the object's local units.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import bpy

from ..simcore.rock import MAX_LAYERS, PALETTE, Frame, Layer, RockColumn, RockError
from .param_props import label, param_property, typed_value

#: called with the object whenever the column's colours, its layers or its switch
#: change (the terrain material keeps its layer colours in step: features/material.py)
ROCK_CHANGED: list[Callable[[bpy.types.Object], None]] = []
#: > 0 while many settings change at once (set_column): the hooks run once at the end
_quiet = [0]

#: the labels that differ from the field names
LABELS = {"top": "Top", "noise_amplitude": "Wobble amplitude",
          "noise_wavelength": "Wobble wavelength", "seed": "Wobble seed",
          "repeat": "Repeat"}
NUMBERS = ("thickness", "erodibility", "rock_angle")


def changed(obj) -> None:
    """Tell the hooks that ``obj``'s column changed (unless inside set_column)."""
    if _quiet[0] or not isinstance(obj, bpy.types.Object):
        return
    for hook in ROCK_CHANGED:
        hook(obj)


def _changed(self, _context) -> None:
    changed(self.id_data)


def _named(f: dataclasses.Field) -> str:
    unit = f.metadata.get("unit") or "-"
    name = LABELS.get(f.name, label(f.name))
    return f"{name} ({unit})" if unit != "-" and isinstance(f.default, float) else name


def _layer_annotations() -> dict:
    fields = {f.name: f for f in dataclasses.fields(Layer)}
    ann = {"name": bpy.props.StringProperty(
        name="Name", default="", maxlen=64, description="Name of the layer (shown in the "
        "list; e.g. Sandstone)")}
    for name in NUMBERS:
        # a thickness of 0 can be typed, and is refused with a message by the run
        extra = {"min": 0.0} if name == "thickness" else {}
        ann[name] = param_property(fields[name], name=_named(fields[name]), **extra)
    ann["color"] = bpy.props.FloatVectorProperty(
        name="Color", subtype='COLOR', size=3, min=0.0, max=1.0, default=PALETTE[0],
        update=_changed,
        description="Colour of the layer in the terrain material where it is bare rock")
    return ann


class TERRAIN_PG_rock_layer(bpy.types.PropertyGroup):
    """One layer of the rock column."""

    __annotations__ = _layer_annotations()


def _rock_annotations() -> dict:
    ann = {
        "enabled": bpy.props.BoolProperty(
            name="Rock Layers", default=False, update=_changed,
            description="Erode through a column of rock layers of different hardness "
                        "(tilted, folded, faulted); off: one rock throughout"),
        "layers": bpy.props.CollectionProperty(type=TERRAIN_PG_rock_layer,
                                               name="Layers"),
        "active_layer": bpy.props.IntProperty(name="Active Layer", default=0, min=0),
    }
    for f in dataclasses.fields(Frame):
        ann[f.name] = param_property(f, name=_named(f))
    return ann


class TERRAIN_PG_rock(bpy.types.PropertyGroup):
    """The rock column of one object: layers (top down) and their frame."""

    __annotations__ = _rock_annotations()

    def column_dict(self) -> dict:
        """The column in simcore's mapping form (RockColumn.from_dict), on or off."""
        layers = []
        for layer in self.layers:
            entry = {name: typed_value(Layer.__dataclass_fields__[name],
                                       getattr(layer, name)) for name in NUMBERS}
            entry["name"] = layer.name
            entry["color"] = [float(f"{c:.4g}") for c in layer.color]
            layers.append(entry)
        out: dict = {"layers": layers}
        for f in dataclasses.fields(Frame):
            out[f.name] = typed_value(f, getattr(self, f.name))
        return out

    def to_column(self) -> RockColumn | None:
        """The column a run uses: None when Rock Layers is off; a RockError saying which
        layer and value is wrong (and what is allowed) when it cannot be used."""
        if not self.enabled:
            return None
        if len(self.layers) == 0:
            raise RockError("Rock Layers is on but lists no layer: add one (+) in the Rock "
                            "Layers panel or switch Rock Layers off")
        return RockColumn.from_dict(self.column_dict(), "Rock Layers")

    def set_column(self, column: RockColumn) -> None:
        """Take ``column`` (a preset's [rock] table): its layers replace the list, its
        frame the settings, and Rock Layers is switched on."""
        _quiet[0] += 1
        try:
            self.layers.clear()
            for layer, color in zip(column.layers, column.colors(), strict=True):
                item = self.layers.add()
                item.name = layer.name or f"Layer {len(self.layers)}"
                for name in NUMBERS:
                    setattr(item, name, getattr(layer, name))
                item.color = color
            for f in dataclasses.fields(Frame):
                setattr(self, f.name, getattr(column.frame, f.name))
            self.active_layer = 0
            self.enabled = True
        finally:
            _quiet[0] -= 1
        changed(self.id_data)

    def add_layer(self, index: int | None = None):
        """A new layer (palette colour, default numbers) after ``index`` (None: at the
        end); it becomes the active one. A RockError at MAX_LAYERS."""
        if len(self.layers) >= MAX_LAYERS:
            raise RockError(f"A column lists at most {MAX_LAYERS} layers (a repeating "
                            "column needs only one period)")
        _quiet[0] += 1
        try:
            item = self.layers.add()
            n = len(self.layers)
            item.name = f"Layer {n}"
            item.color = PALETTE[(n - 1) % len(PALETTE)]
            at = n - 1
            if index is not None and 0 <= index < n - 1:
                self.layers.move(n - 1, index + 1)
                at = index + 1
            self.active_layer = at
        finally:
            _quiet[0] -= 1
        changed(self.id_data)
        return self.layers[at]

    def colors(self) -> list[tuple[float, float, float]]:
        """The layers' colours, top down."""
        return [tuple(layer.color) for layer in self.layers]


ROCK_CLASSES = (TERRAIN_PG_rock_layer, TERRAIN_PG_rock)
