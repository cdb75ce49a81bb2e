"""The rock column: what lies below the surface, as layers in a tilted, folded and
faulted frame (docs/rock.md).

A column is a list of layers from the top down, each with a thickness (world units,
metres in Blender), an erodibility factor and optionally its own critical angle for
the hillslopes; the list may repeat without end up and down. The layers lie in a
frame:

* ``top``: the world elevation of the first layer's top at the map's centre;
* a **tilt**: the layers dip at ``dip`` degrees towards the azimuth ``dip_direction``
  (degrees clockwise from +y, the map's north), up to upright (90); a layer's thickness
  is measured across it (its true thickness), so tilting keeps it;
* a **fold**: the contacts rise and fall by ``fold_amplitude`` with a wavelength
  ``fold_wavelength`` across a fold axis that trends towards ``fold_axis`` (an
  anticline through the centre);
* a **fault**: a plane whose trace strikes towards ``fault_strike`` through the point
  (``fault_x``, ``fault_y``) from the centre at the elevation ``top``, dipping at
  ``fault_dip`` degrees to the right of its strike; the block above it (the hanging
  wall) is moved down by ``fault_throw`` (up when negative);
* a **wobble**: smooth noise of ``noise_amplitude`` and wavelength ``noise_wavelength``
  moves the contacts up and down (seeded, in world units, so it is the same at any
  resolution).

At each cell the rock is the layer at its bedrock elevation (the top of the rock, under
any sediment) less the rock uplift has raised there so far (the layers rise with the
rock), found again before every process batch as the ground goes down
(:class:`simcore.algorithms.strata.Strata`): its erodibility multiplies the terrain's
erodibility map, and its critical angle (when it has one) is the hillslope process's for
that cell. The ``rock_layer`` array records the layer exposed at each cell: its index
plus how deep inside it the surface lies (2.25: a quarter of the way down layer 2).

Everything is in world units here; the terrain's arrays are in cell units (bedrock x
cell size = world elevation).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from .params import ParameterError, Params, check_value, param

#: the most layers a column lists (a repeating column needs only one period)
MAX_LAYERS = 64
#: thickness limits of a layer, world units (metres)
THICKNESS_RANGE = (1e-3, 1e6)
#: the palette layers get when their colour is not given (sandstone, shale, limestone,
#: red beds, ...): RGB 0..1
PALETTE = (
    (0.78, 0.62, 0.45), (0.45, 0.40, 0.38), (0.85, 0.82, 0.74), (0.66, 0.33, 0.22),
    (0.58, 0.55, 0.47), (0.36, 0.30, 0.27), (0.90, 0.75, 0.55), (0.50, 0.45, 0.52),
)


class RockError(ParameterError):
    """A rock column is malformed (its message says which entry and what is allowed)."""


@dataclasses.dataclass(frozen=True)
class Layer(Params):
    """One layer of a column."""

    thickness: float = param(50.0, *THICKNESS_RANGE, "m", "thickness of the layer")
    erodibility: float = param(1.0, 0.0, 10.0, "factor",
                               "how easily the layer erodes: multiplies the erodibility map "
                               "(1 = as soft as sediment, 0 = never erodes)", soft_hi=4.0)
    rock_angle: float = param(0.0, 0.0, 90.0, "deg",
                              "the steepest slope the layer's bedrock stands at before it "
                              "breaks loose (hillslopes); 0 = the hillslope process's own "
                              "rock angle, steeper where the layer is harder")
    name: str = ""
    color: tuple[float, float, float] = (-1.0, -1.0, -1.0)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name in ("name", "color"):
                continue
            object.__setattr__(self, f.name, check_value(f, getattr(self, f.name), "layer"))
        if not isinstance(self.name, str) or len(self.name) > 63:
            raise RockError(f"layer: 'name' must be text of at most 63 characters, got "
                            f"{self.name!r}")
        color = self.color
        try:
            rgb = tuple(float(v) for v in color)
        except (TypeError, ValueError):
            rgb = ()
        if rgb != (-1.0, -1.0, -1.0) and (len(rgb) != 3 or not all(
                math.isfinite(v) and 0.0 <= v <= 1.0 for v in rgb)):
            raise RockError(f"layer: 'color' must be three numbers from 0 to 1 (red, "
                            f"green, blue), got {color!r}")
        object.__setattr__(self, "color", rgb)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"thickness": self.thickness, "erodibility": self.erodibility}
        if self.rock_angle:
            out["rock_angle"] = self.rock_angle
        if self.name:
            out["name"] = self.name
        if self.color != (-1.0, -1.0, -1.0):
            out["color"] = list(self.color)
        return out


@dataclasses.dataclass(frozen=True)
class Frame(Params):
    """Where the layers lie: tilt, fold, fault and wobble (module doc)."""

    repeat: bool = param(True, doc="the list of layers repeats without end up and down; "
                         "off: the first layer goes on upwards and the last downwards")
    top: float = param(0.0, -1e6, 1e6, "m",
                       "elevation of the first layer's top at the map's centre")
    dip: float = param(0.0, 0.0, 90.0, "deg", "how steeply the layers are tilted (90: "
                       "upright; thicknesses are measured across the layers)")
    dip_direction: float = param(0.0, 0.0, 360.0, "deg",
                                 "azimuth the layers dip towards (clockwise from +Y)")
    fold_amplitude: float = param(0.0, 0.0, 1e5, "m",
                                  "how far the fold lifts and lowers the layers")
    fold_wavelength: float = param(2000.0, 1.0, 1e7, "m", "distance from one fold crest "
                                   "to the next")
    fold_axis: float = param(0.0, 0.0, 360.0, "deg",
                             "azimuth the fold axis (the ridges' strike) points to")
    fault_throw: float = param(0.0, -1e5, 1e5, "m", "how far the block above the fault "
                               "plane is moved down (negative: up); 0 = no fault")
    fault_strike: float = param(0.0, 0.0, 360.0, "deg", "azimuth the fault's trace runs "
                                "along")
    fault_dip: float = param(90.0, 10.0, 90.0, "deg",
                             "how steeply the fault plane dips, to the right of its "
                             "strike (90 = vertical)")
    fault_x: float = param(0.0, -1e7, 1e7, "m", "a point of the fault's trace: X from the "
                           "map's centre")
    fault_y: float = param(0.0, -1e7, 1e7, "m", "a point of the fault's trace: Y from the "
                           "map's centre")
    noise_amplitude: float = param(0.0, 0.0, 1e5, "m",
                                   "how far a smooth wobble moves the contacts up and down")
    noise_wavelength: float = param(500.0, 1.0, 1e7, "m", "size of the wobble's bumps")
    seed: int = param(0, 0, 2**31 - 1, doc="random seed of the wobble")


@dataclasses.dataclass(frozen=True)
class RockColumn:
    """Layers (top down) in a frame; see the module doc. ``from_dict`` / ``to_dict`` are
    the form presets, states and the add-on store."""

    layers: tuple[Layer, ...]
    frame: Frame = Frame()

    def __post_init__(self) -> None:
        if not self.layers:
            raise RockError("rock: a column needs at least one layer")
        if len(self.layers) > MAX_LAYERS:
            raise RockError(f"rock: {len(self.layers)} layers; a column lists at most "
                            f"{MAX_LAYERS} (a repeating column needs only one period)")

    @classmethod
    def from_dict(cls, data: Any, where: str = "rock") -> RockColumn:
        """A column from its mapping form: ``{"layers": [{"thickness": .., ...}, ..],
        "repeat": .., "dip": .., ...}``; every error names the entry."""
        if not isinstance(data, dict):
            raise RockError(f"{where}: must be a table of layers and frame settings, got "
                            f"{type(data).__name__}")
        data = dict(data)
        layers = data.pop("layers", None)
        if not isinstance(layers, (list, tuple)) or not layers:
            raise RockError(f"{where}: 'layers' must be a list of at least one layer "
                            "(each a table with 'thickness' in metres and 'erodibility')")
        if len(layers) > MAX_LAYERS:
            raise RockError(f"{where}: {len(layers)} layers; a column lists at most "
                            f"{MAX_LAYERS} (a repeating column needs only one period)")
        made = []
        for i, entry in enumerate(layers):
            at = f"{where}: layer {i + 1}"
            if not isinstance(entry, dict):
                raise RockError(f"{at}: must be a table (thickness, erodibility, "
                                f"rock_angle, name, color), got {type(entry).__name__}")
            entry = dict(entry)
            name = entry.pop("name", "")
            color = entry.pop("color", (-1.0, -1.0, -1.0))
            try:
                numbers = Layer.from_dict(entry, at)
                made.append(dataclasses.replace(numbers, name=name, color=color))
            except ParameterError as exc:
                raise RockError(str(exc).replace("layer: ", f"{at}: ", 1)) from None
        try:
            frame = Frame.from_dict(data, where)
        except ParameterError as exc:
            raise RockError(f"{exc} (and 'layers')" if "unknown key" in str(exc)
                            else str(exc)) from None
        return cls(tuple(made), frame)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"layers": [layer.to_dict() for layer in self.layers]}
        defaults = Frame()
        for f in dataclasses.fields(Frame):
            if getattr(self.frame, f.name) != getattr(defaults, f.name):
                out[f.name] = getattr(self.frame, f.name)
        return out

    def colors(self) -> list[tuple[float, float, float]]:
        """Each layer's colour (its own, else the palette's)."""
        return [layer.color if layer.color[0] >= 0.0 else PALETTE[i % len(PALETTE)]
                for i, layer in enumerate(self.layers)]

    def period(self) -> float:
        """The column's total thickness (world units)."""
        return float(sum(layer.thickness for layer in self.layers))


def column_from(data: Any, where: str = "rock") -> RockColumn | None:
    """A column from a mapping, None for None or an empty mapping; a column as is."""
    if data is None or isinstance(data, RockColumn):
        return data
    if isinstance(data, dict) and not data:
        return None
    return RockColumn.from_dict(data, where)
