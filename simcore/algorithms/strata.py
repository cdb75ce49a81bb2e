"""The rock column laid over a grid (the column: :mod:`simcore.rock`, docs/rock.md):
the structural maps worked out once, and the layer at each cell's bedrock found before
every process batch."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..kernels import parallel
from ..rock import Frame, RockColumn


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
        top = np.full((1, 1), frame.top)
        if frame.fold_amplitude > 0.0:
            ax, ay = _azimuth(frame.fold_axis)
            across = x * ay - y * ax  # distance across the axis
            top = top + frame.fold_amplitude * np.cos(
                2.0 * math.pi * across / frame.fold_wavelength)
        if frame.noise_amplitude > 0.0:
            top = top + _wobble(frame, x, y)
        # tilted: the depth across the layers (their true thickness) of a point at
        # elevation z is (top - z) cos(dip) - sin(dip) x (its distance along the dip
        # direction); kept as ``top`` = the part without z, and ``cos_dip``
        dip = math.radians(frame.dip)
        self.cos_dip = 0.0 if frame.dip >= 90.0 else math.cos(dip)
        top = top * self.cos_dip - math.sin(dip) * (x * dx + y * dy)
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
            _evaluate(span[0], span[1], self.cell_size, self.cos_dip, self.top.reshape(-1),
                      self.plane.reshape(-1), self.fault, f.fault_throw, self.bounds,
                      self.erodibility, self.critical, f.repeat, *flat)

        parallel.run(parallel.bands(n), band)


@njit(nogil=True, cache=True, error_model="numpy")
def _evaluate(first, last, cell, cos_dip, top, plane, fault, throw, bounds, erod, crit,
              repeat,
              bedrock, uplifted, erodibility, erodibility_out, layer_out, critical_out,
              layer_erodibility_out):
    """:meth:`Strata.evaluate` on cells ``first .. last - 1`` (flat arrays)."""
    n = erod.size
    period = bounds[n]
    risen = uplifted.size > 0
    for i in range(first, last):
        z = (bedrock[i] - uplifted[i] if risen else bedrock[i]) * cell
        if fault and z > plane[i]:  # the block above the plane moved down by the throw
            z += throw
        depth = top[i] - cos_dip * z
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
