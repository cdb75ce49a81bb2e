"""Snowball erosion (docs/references.md: the snowball article, "Simulating hydraulic erosion").

A cheap preview mode: each snowball reads the surface normal at a small random offset,
rolls with friction, erodes on steep ground and deposits on flat ground at its
*previous* position. After each batch the change it made is blurred (mass-conserving
3x3 kernel) so the low-resolution result stays smooth. Runs on one thread.

World units: the erosion per step is a world volume, the speed and the read-out
offset world lengths; they are converted with the terrain's cell size (at a cell size
of 1 the numbers are what they were in cell units). ``blur_radius`` (world) sets the
blur's width: the 3x3 kernel (variance 1/2 cell^2 per axis) is applied
``max(1, round(2 r^2 / cell^2))`` times, so the smoothing is the same at any
resolution; 0 = one pass, as before.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
from numba import njit

from ..kernels import (
    deposit_tent,
    erode_brush,
    next_uniform,
    put_bilinear,
    rain_cdf,
    start_position,
    stream_state,
    take,
    transfer,
)
from ..params import Params, param
from ..process import Process
from ..terrain import Terrain

STREAM_ID = 2


class Kernel(NamedTuple):
    """Snowball constants in cell units (see :class:`SnowballParams`)."""

    erosion_rate: float  # cell volume per step at full steepness
    deposition_rate: float  # fraction of the load per step
    speed: float  # cells per step^2
    friction: float
    radius: float  # read-out offset, cells (at most 4)
    max_iterations: int
    iteration_scale: float
    min_slope: float
    brush: float  # erosion brush and deposit reach, cells (0: the 4 cells around)


@dataclasses.dataclass(frozen=True)
class SnowballParams(Params):
    """Snowball parameters. The seed leaves defaults open; these are ours (world units:
    at a cell size of 1 the same as cell units)."""

    erosion_rate: float = param(0.05, 0.0, 1e9, "world^3/step",
                                "volume eroded per step at full steepness", soft_hi=1000.0)
    deposition_rate: float = param(0.1, 0.0, 1.0, "1/step",
                                   "fraction of the load dropped per step on flat ground")
    speed: float = param(0.3, 0.0, 1e6, "world/step^2", "acceleration along the slope",
                         soft_hi=100.0)
    friction: float = param(0.7, 0.0, 1.0, "-", "velocity kept from one step to the next")
    radius: float = param(0.8, 0.0, 1e6, "world", "random offset where the normal is read",
                          soft_hi=100.0)
    max_iterations: int = param(80, 1, 10000, "steps", "steps per snowball", soft_hi=500)
    iteration_scale: float = param(0.04, 0.0, 1.0, "1/step",
                                   "erosion ramps up over the first 1/scale steps")
    min_slope: float = param(0.001, 0.0, 1.0, "cell/cell", "a snowball stops below this slope")
    brush_radius: float = param(0.0, 0.0, 1e6, "world",
                                "radius over which a snowball erodes and deposits (1 to 8 "
                                "cells); 0 = the 4 cells around it, as the seed",
                                soft_hi=200.0)
    blur: float = param(0.5, 0.0, 1.0, "-", "blend of the blurred change after each batch")
    blur_radius: float = param(0.0, 0.0, 1e6, "world",
                               "width (std. dev.) of the blur; 0 = one 3x3 pass",
                               soft_hi=200.0)
    batch: int = param(4096, 1, 1_000_000, "snowballs", "snowballs per batch",
                       soft_hi=65536)

    def kernel(self, cell_size: float = 1.0) -> Kernel:
        """Kernel constants in cell units for a grid of ``cell_size`` world units."""
        c = float(cell_size)
        return Kernel(float(self.erosion_rate) / c ** 3, float(self.deposition_rate),
                       float(self.speed) / c, float(self.friction),
                       min(float(self.radius) / c, 4.0), int(self.max_iterations),
                       float(self.iteration_scale), float(self.min_slope),
                       min(max(float(self.brush_radius) / c, 1.0), 8.0)
                       if self.brush_radius > 0 else 0.0)


@njit(nogil=True, cache=True, error_model="numpy")
def _run_batch(seed, first, count, p, cdf, height, bedrock, sediment, eroded, deposited,
               erodibility):
    """Roll snowballs ``first .. first+count-1`` (``p``: a :class:`Kernel`); returns
    (material off the grid, steps)."""
    rows, cols = height.shape
    hf, bf, sf = height.reshape(-1), bedrock.reshape(-1), sediment.reshape(-1)
    ef, df, kf = eroded.reshape(-1), deposited.reshape(-1), erodibility.reshape(-1)
    lost = 0.0
    nsteps = 0
    for k in range(count):
        st = stream_state(np.uint64(seed), np.uint64(STREAM_ID), np.uint64(first + k))
        st, x, y = start_position(st, cdf, rows, cols)
        st, u = next_uniform(st)
        ox = (2.0 * u - 1.0) * p.radius
        st, u = next_uniform(st)
        oy = (2.0 * u - 1.0) * p.radius
        xp, yp, vx, vy, load = x, y, 0.0, 0.0, 0.0
        for i in range(p.max_iterations):
            sx = x + ox
            sy = y + oy
            if sx < 0.0 or sy < 0.0 or sx >= cols - 1 or sy >= rows - 1:
                break
            xi = int(sx)
            yi = int(sy)
            fx = sx - xi
            fy = sy - yi
            gx = ((height[yi, xi + 1] - height[yi, xi]) * (1 - fy)
                  + (height[yi + 1, xi + 1] - height[yi + 1, xi]) * fy)
            gy = ((height[yi + 1, xi] - height[yi, xi]) * (1 - fx)
                  + (height[yi + 1, xi + 1] - height[yi, xi + 1]) * fx)
            slope2 = gx * gx + gy * gy
            if slope2 < p.min_slope * p.min_slope:
                break
            inv = 1.0 / np.sqrt(slope2 + 1.0)
            ny = inv
            deposit = load * p.deposition_rate * ny
            erosion = p.erosion_rate * (1.0 - ny) * min(1.0, i * p.iteration_scale)
            change = deposit - erosion
            if change >= 0.0 and p.brush > 0.0:
                deposit_tent(xp, yp, change, p.brush, rows, cols, hf, bf, sf, df)
                load -= change
            elif change >= 0.0:
                put_bilinear(xp, yp, change, height, bedrock, sediment, deposited)
                load -= change
            elif p.brush > 0.0:
                load += erode_brush(xp, yp, -change, -np.inf, p.brush, rows, cols, hf, bf,
                                     sf, ef, df, kf)
            else:
                want = -change
                pxi = int(xp)
                pyi = int(yp)
                pfx = xp - pxi
                pfy = yp - pyi
                got = take(pyi, pxi, want * (1 - pfx) * (1 - pfy), height, bedrock,
                           sediment, eroded, deposited, erodibility)
                got += take(pyi, pxi + 1, want * pfx * (1 - pfy), height, bedrock,
                            sediment, eroded, deposited, erodibility)
                got += take(pyi + 1, pxi, want * (1 - pfx) * pfy, height, bedrock,
                            sediment, eroded, deposited, erodibility)
                got += take(pyi + 1, pxi + 1, want * pfx * pfy, height, bedrock,
                            sediment, eroded, deposited, erodibility)
                load += got
            vx = p.friction * vx - gx * inv * p.speed
            vy = p.friction * vy - gy * inv * p.speed
            xp = x
            yp = y
            x += vx
            y += vy
            nsteps += 1
            if x < 0.0 or y < 0.0 or x >= cols - 1 or y >= rows - 1:
                break
        if x < 0.0 or y < 0.0 or x >= cols - 1 or y >= rows - 1:
            lost += load
        elif p.brush > 0.0:
            deposit_tent(x, y, load, p.brush, rows, cols, hf, bf, sf, df)
        else:
            put_bilinear(x, y, load, height, bedrock, sediment, deposited)
    return lost, nsteps


def blur_change(change: np.ndarray) -> np.ndarray:
    """3x3 binomial blur that keeps the sum: what would leave the grid folds back in."""
    rows, cols = change.shape
    out = np.zeros((rows + 2, cols + 2))
    for dy, wy in ((-1, 0.25), (0, 0.5), (1, 0.25)):
        for dx, wx in ((-1, 0.25), (0, 0.5), (1, 0.25)):
            out[1 + dy:1 + dy + rows, 1 + dx:1 + dx + cols] += (wy * wx) * change
    out[1, :] += out[0, :]
    out[-2, :] += out[-1, :]
    out[:, 1] += out[:, 0]
    out[:, -2] += out[:, -1]
    return out[1:-1, 1:-1]


@njit(cache=True)
def _apply_change(d_rock, d_sed, height, bedrock, sediment, eroded, deposited):
    """Apply the (blurred) change of a batch to the ground it started from, cell by
    cell with :func:`kernels.transfer`: ``-d_rock`` >= 0 of bedrock goes, sediment
    changes by ``d_sed``, and a removal beyond the sediment a cell holds comes out of
    its bedrock."""
    rows, cols = d_rock.shape
    for r in range(rows):
        for c in range(cols):
            lay = max(d_sed[r, c], 0.0)
            dig = max(-d_sed[r, c], 0.0)
            from_sed = min(dig, sediment[r, c])
            transfer((r, c), from_sed, -d_rock[r, c] + (dig - from_sed), lay, height,
                     bedrock, sediment, eroded, deposited)


def run_batch(terrain: Terrain, params: SnowballParams, seed: int, first: int, count: int,
              height: np.ndarray | None = None, cdf: np.ndarray | None = None) -> int:
    """Roll ``count`` snowballs, then blur what they changed; returns steps taken.

    The snowballs roll on working copies; the blended change is then applied to the
    terrain with :func:`kernels.transfer`. ``height`` must equal bedrock + sediment when
    given and is kept in step."""
    if height is None:
        height = terrain.height()
    if cdf is None:
        cdf = rain_cdf(terrain.rain)
    rock, sed = terrain.bedrock.copy(), terrain.sediment.copy()
    moved = height.copy()
    lost, nsteps = _run_batch(np.uint64(seed & 0xFFFFFFFFFFFFFFFF), first, count,
                              params.kernel(terrain.cell_size), cdf, moved, rock, sed,
                              np.zeros_like(height), np.zeros_like(height),
                              terrain.erodibility)
    terrain.outflow += lost
    d_rock = rock - terrain.bedrock
    d_sed = sed - terrain.sediment
    if params.blur > 0:
        passes = max(1, round(2.0 * (params.blur_radius / terrain.cell_size) ** 2))
        blur_rock, blur_sed = d_rock, d_sed
        for _ in range(min(passes, 1000)):
            blur_rock = blur_change(blur_rock)
            blur_sed = blur_change(blur_sed)
        d_rock = (1 - params.blur) * d_rock + params.blur * blur_rock
        d_sed = (1 - params.blur) * d_sed + params.blur * blur_sed
    _apply_change(d_rock, d_sed, height, terrain.bedrock, terrain.sediment, terrain.eroded,
                  terrain.deposited)
    return int(nsteps)


PROCESS = Process(
    "snowball", SnowballParams, run_batch, "Snowball erosion",
    "fast preview erosion with blur (J. Talle's article)", order=20, stream=STREAM_ID,
    reads=("bedrock", "sediment", "erodibility", "rain"), bytes_per_cell=48)
