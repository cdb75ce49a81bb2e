"""The rock column: what lies below the surface, as layers in a tilted, folded and
faulted frame (docs/rock.md).

A column is a list of layers from the top down, each with a thickness (world units,
metres in Blender), an erodibility factor and optionally its own critical angle for
the hillslopes; the list may repeat without end up and down. The layers lie in a
frame:

* ``top``: the world elevation of the first layer's top at the map's centre;
* a **tilt**: the layers dip at ``dip`` degrees towards the azimuth ``dip_direction``
  (degrees clockwise from +y, the map's north);
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
(:class:`Strata`): its erodibility multiplies the terrain's erodibility map, and its
critical angle (when it has one) is the hillslope process's for that cell. The
``rock_layer`` array records the layer exposed at each cell: its index plus how deep
inside it the surface lies (2.25: a quarter of the way down layer 2).

Everything is in world units here; the terrain's arrays are in cell units (bedrock x
cell size = world elevation).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numba import njit

from .kernels import parallel
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
    dip: float = param(0.0, 0.0, 80.0, "deg", "how steeply the layers are tilted")
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


# --- evaluation ------------------------------------------------------------------------

def _azimuth(deg: float) -> tuple[float, float]:
    """(x, y) of the unit vector at azimuth ``deg`` (clockwise from +y)."""
    a = math.radians(deg)
    return math.sin(a), math.cos(a)


def _wobble(frame: Frame, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Smooth noise in world units: eight plane waves (four at the wavelength, four at
    half of it, half as strong) in seeded directions and phases, scaled so it never
    exceeds the amplitude."""
    rng = np.random.default_rng(frame.seed)
    total = np.zeros(np.broadcast(x, y).shape)
    weights = 0.0
    for k in range(8):
        wavelength = frame.noise_wavelength * (1.0 if k < 4 else 0.5)
        weight = 1.0 if k < 4 else 0.5
        angle, phase = rng.uniform(0.0, 2.0 * math.pi, 2)
        wave = 2.0 * math.pi / wavelength
        total += weight * np.sin(wave * (x * math.cos(angle) + y * math.sin(angle)) + phase)
        weights += weight
    return total * (frame.noise_amplitude / weights)


class Strata:
    """A column laid over one grid: the structural maps (the first layer's top and the
    fault plane at each cell, world units) worked out once, and :meth:`evaluate` that
    finds the layer at each cell's bedrock.

    ``centre`` (row, column: fractional cell indices of this grid) is where the map's
    centre lies, the frame's origin: the grid's own centre by default; a window of a
    larger map (a tile) or a coarse copy of it gives the world's, so that its layers are
    the world's.
    """

    def __init__(self, column: RockColumn, shape: tuple[int, int], cell_size: float,
                 centre: tuple[float, float] | None = None) -> None:
        self.column = column
        self.shape = (int(shape[0]), int(shape[1]))
        self.cell_size = float(cell_size)
        frame = column.frame
        if centre is None:
            centre = (0.5 * (self.shape[0] - 1), 0.5 * (self.shape[1] - 1))
        r = (np.arange(self.shape[0]) - centre[0]) * self.cell_size
        c = (np.arange(self.shape[1]) - centre[1]) * self.cell_size
        x, y = c[None, :], r[:, None]
        dx, dy = _azimuth(frame.dip_direction)
        top = frame.top - math.tan(math.radians(frame.dip)) * (x * dx + y * dy)
        if frame.fold_amplitude > 0.0:
            ax, ay = _azimuth(frame.fold_axis)
            across = x * ay - y * ax  # distance across the axis
            top = top + frame.fold_amplitude * np.cos(
                2.0 * math.pi * across / frame.fold_wavelength)
        if frame.noise_amplitude > 0.0:
            top = top + _wobble(frame, x, y)
        self.top = np.ascontiguousarray(np.broadcast_to(top, self.shape), dtype=np.float64)
        self.fault = frame.fault_throw != 0.0
        if self.fault:
            sx, sy = _azimuth(frame.fault_strike)
            # distance from the trace towards the side the plane dips to (right of strike)
            d = (x - frame.fault_x) * sy - (y - frame.fault_y) * sx
            d = np.broadcast_to(d, self.shape)
            if frame.fault_dip >= 90.0:
                plane = np.where(d > 0.0, -np.inf, np.inf)
            else:
                plane = frame.top - d * math.tan(math.radians(frame.fault_dip))
            self.plane = np.ascontiguousarray(plane, dtype=np.float64)
        else:
            self.plane = np.zeros((1, 1))
        layers = column.layers
        thick = np.array([layer.thickness for layer in layers])
        self.bounds = np.concatenate(([0.0], np.cumsum(thick)))
        self.erodibility = np.array([layer.erodibility for layer in layers])
        self.critical = np.array([math.tan(math.radians(layer.rock_angle))
                                  if 0.0 < layer.rock_angle < 90.0
                                  else (math.inf if layer.rock_angle >= 90.0 else math.nan)
                                  for layer in layers])
        self.has_angles = bool(np.isfinite(self.critical).any()
                               or np.isinf(self.critical).any())

    def evaluate(self, bedrock: np.ndarray, erodibility: np.ndarray,
                 erodibility_out: np.ndarray, layer_out: np.ndarray,
                 critical_out: np.ndarray | None = None,
                 layer_erodibility_out: np.ndarray | None = None,
                 uplifted: np.ndarray | None = None) -> None:
        """For every cell: the layer at its bedrock (cell units); ``erodibility_out`` =
        ``erodibility`` x the layer's, ``layer_out`` = index + depth fraction inside it,
        ``critical_out`` (when given) the tangent of the layer's critical angle (NaN: the
        hillslope process's own), ``layer_erodibility_out`` the layer's factor alone.
        ``uplifted`` (cell units): rock raised from below so far; the layers rose with
        it, so a cell's rock is the layer at its bedrock minus that."""
        n = bedrock.size
        crit = critical_out if critical_out is not None else np.empty(0)
        own = layer_erodibility_out if layer_erodibility_out is not None else np.empty(0)
        rise = uplifted if uplifted is not None else np.empty(0)
        flat = (bedrock.reshape(-1), rise.reshape(-1), erodibility.reshape(-1),
                erodibility_out.reshape(-1), layer_out.reshape(-1), crit.reshape(-1),
                own.reshape(-1))
        f = self.column.frame

        def band(span: tuple[int, int]) -> None:
            _evaluate(span[0], span[1], self.cell_size, self.top.reshape(-1),
                      self.plane.reshape(-1), self.fault, f.fault_throw, self.bounds,
                      self.erodibility, self.critical, f.repeat, *flat)

        parallel.run(parallel.bands(n), band)


@njit(nogil=True, cache=True, error_model="numpy")
def _evaluate(first, last, cell, top, plane, fault, throw, bounds, erod, crit, repeat,
              bedrock, uplifted, erodibility, erodibility_out, layer_out, critical_out,
              layer_erodibility_out):
    """:meth:`Strata.evaluate` on cells ``first .. last - 1`` (flat arrays)."""
    n = erod.size
    period = bounds[n]
    risen = uplifted.size > 0
    for i in range(first, last):
        z = (bedrock[i] - uplifted[i] if risen else bedrock[i]) * cell
        depth = top[i] - z
        if fault and z > plane[i]:
            depth -= throw
        if repeat:
            depth -= period * math.floor(depth / period)
            if depth >= period:  # rounding of a depth just below a multiple
                depth = 0.0
        if depth < 0.0:  # above the first layer (no repeat): it goes on upwards
            k = 0
            frac = 0.0
        elif depth >= period:  # below the last: it goes on downwards
            k = n - 1
            frac = min((depth - bounds[k]) / (bounds[n] - bounds[k]), 0.999)
        else:
            lo = 0
            hi = n
            while hi - lo > 1:  # bounds[lo] <= depth < bounds[hi]
                mid = (lo + hi) >> 1
                if bounds[mid] <= depth:
                    lo = mid
                else:
                    hi = mid
            k = lo
            frac = min((depth - bounds[k]) / (bounds[k + 1] - bounds[k]), 0.999)
        erodibility_out[i] = erodibility[i] * erod[k]
        layer_out[i] = k + frac
        if critical_out.size:
            critical_out[i] = crit[k]
        if layer_erodibility_out.size:
            layer_erodibility_out[i] = erod[k]
