"""Snowball erosion (docs/references.md: the snowball article, "Simulating hydraulic erosion").

A cheap preview mode: each snowball reads the surface normal at a small random offset,
rolls with friction, erodes on steep ground and deposits on flat ground at its
*previous* position. After each batch the change it made is blurred (mass-conserving,
closed edges) so the result stays smooth. Runs on one thread.

World units: the erosion per step is a world volume, the speed, the read-out offset and
the brush world lengths; they are converted with the terrain's cell size (at a cell
size of 1 the numbers are what they were in cell units). ``blur_radius`` (world) is the
blur's standard deviation: three passes of a box with fractional end weights along each
axis (:func:`box_shape`, running sums), whose variances add up to
``(blur_radius / cell)^2``, so the smoothing is the same at any resolution and costs the
same per cell at any width. Only the part of the grid a batch changed (plus the blur's
reach) is blurred and applied.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
from numba import njit

from ..kernels.primitives import (
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


@njit(cache=True, error_model="numpy", inline="always")
def _height_at(height, x, y):
    """Bilinear height at (x, y) (cells, clamped into the grid)."""
    rows, cols = height.shape
    x = min(max(x, 0.0), cols - 1.0)
    y = min(max(y, 0.0), rows - 1.0)
    xi = min(int(x), cols - 2) if cols > 1 else 0
    yi = min(int(y), rows - 2) if rows > 1 else 0
    fx = x - xi
    fy = y - yi
    x1 = min(xi + 1, cols - 1)
    y1 = min(yi + 1, rows - 1)
    return ((height[yi, xi] * (1 - fx) + height[yi, x1] * fx) * (1 - fy)
            + (height[y1, xi] * (1 - fx) + height[y1, x1] * fx) * fy)


@njit(nogil=True, cache=True, error_model="numpy")
def _run_batch(seed, first, count, p, cdf, height, bedrock, sediment, eroded, deposited,
               erodibility, span):
    """Roll snowballs ``first .. first+count-1`` (``p``: a :class:`Kernel`); returns
    (material off the grid, steps). ``span`` (x min, x max, y min, y max, cells) grows
    to hold every place where a snowball took or laid material."""
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
        edge = False
        for i in range(p.max_iterations):
            sx = x + ox
            sy = y + oy
            if sx < 0.0 or sy < 0.0 or sx >= cols - 1 or sy >= rows - 1:
                edge = True  # at the map's edge: its load leaves (no rim of deposits)
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
            span[0] = min(span[0], xp)
            span[1] = max(span[1], xp)
            span[2] = min(span[2], yp)
            span[3] = max(span[3], yp)
            if change >= 0.0 and p.brush > 0.0:
                deposit_tent(xp, yp, change, p.brush, rows, cols, hf, bf, sf, df)
                load -= change
            elif change >= 0.0:
                put_bilinear(xp, yp, change, height, bedrock, sediment, deposited)
                load -= change
            elif p.brush > 0.0:
                # never below where it rolls to (as the droplets): no pits to run away in
                load += erode_brush(xp, yp, -change, _height_at(height, x, y), p.brush, rows,
                                    cols, hf, bf, sf, ef, df, kf)
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
        if edge or x < 0.0 or y < 0.0 or x >= cols - 1 or y >= rows - 1:
            lost += load
        else:
            span[0] = min(span[0], x)
            span[1] = max(span[1], x)
            span[2] = min(span[2], y)
            span[3] = max(span[3], y)
            if p.brush > 0.0:
                deposit_tent(x, y, load, p.brush, rows, cols, hf, bf, sf, df)
            else:
                put_bilinear(x, y, load, height, bedrock, sediment, deposited)
    return lost, nsteps


def box_shape(variance: float) -> tuple[int, float]:
    """(h, a) of the widened box with ``variance`` (cell^2): weights 1 at |i| <= h and
    ``a`` in [0, 1) at |i| = h + 1, over 2h + 1 + 2a (its variance grows smoothly from 0
    with a, and h(h+1)/3 at a = 0)."""
    v = max(float(variance), 0.0)
    h = int((np.sqrt(1.0 + 12.0 * v) - 1.0) / 2.0)  # largest h with h(h+1)/3 <= v
    while h > 0 and h * (h + 1) / 3.0 > v:
        h -= 1
    while (h + 1) * (h + 2) / 3.0 <= v:
        h += 1
    s = h * (h + 1) * (2 * h + 1) / 3.0  # sum of i^2 over |i| <= h
    a = (v * (2 * h + 1) - s) / (2.0 * (h + 1) ** 2 - 2.0 * v)
    return h, min(max(a, 0.0), 1.0)


@njit(cache=True, error_model="numpy")
def _box_line(line, n, h, a, lo_closed, hi_closed, ext):
    """One pass of the widened box (:func:`box_shape`) along ``line[0:n]``, in place.
    A closed end mirrors the line (what would leave folds back in: the sum is kept); an
    open end reads zeros (the caller's region reaches past all the change)."""
    reach = h + 1
    period = 2 * n
    for j in range(-reach, n + reach):
        if 0 <= j < n:
            ext[j + reach] = line[j]
            continue
        if (j < 0 and not lo_closed) or (j >= n and not hi_closed):
            ext[j + reach] = 0.0
            continue
        m = j % period  # half-sample mirror, repeated for reaches beyond the line
        if m >= n:
            m = period - 1 - m
        ext[j + reach] = line[m]
    norm = 1.0 / (2 * h + 1 + 2.0 * a)
    s = 0.0
    for j in range(-h, h + 1):
        s += ext[j + reach]
    for i in range(n):
        line[i] = (s + a * (ext[i - h - 1 + reach] + ext[i + h + 1 + reach])) * norm
        if i + 1 < n:
            s += ext[i + h + 1 + reach] - ext[i - h + reach]


@njit(cache=True, error_model="numpy")
def _box_rows(field, r0, r1, c0, c1, h, a, top_closed, bottom_closed, ext, run):
    """One widened-box pass down the columns of ``field[r0:r1, c0:c1]`` in place, a
    whole row at a time (contiguous): :func:`_box_line` for every column at once."""
    reach = h + 1
    n = r1 - r0
    period = 2 * n
    nc = c1 - c0
    for j in range(-reach, n + reach):
        row = ext[j + reach]
        if 0 <= j < n:
            src = j
        elif (j < 0 and not top_closed) or (j >= n and not bottom_closed):
            row[:] = 0.0
            continue
        else:
            src = j % period
            if src >= n:
                src = period - 1 - src
        for c in range(nc):
            row[c] = field[r0 + src, c0 + c]
    norm = 1.0 / (2 * h + 1 + 2.0 * a)
    run[:] = 0.0
    for j in range(-h, h + 1):
        for c in range(nc):
            run[c] += ext[j + reach, c]
    for i in range(n):
        lo = ext[i - h - 1 + reach]
        hi = ext[i + h + 1 + reach]
        for c in range(nc):
            field[r0 + i, c0 + c] = (run[c] + a * (lo[c] + hi[c])) * norm
        if i + 1 < n:
            out = ext[i - h + reach]
            for c in range(nc):
                run[c] += hi[c] - out[c]


@njit(cache=True, error_model="numpy")
def _blur_box(field, h, a, passes, r0, r1, c0, c1, closed):
    """``passes`` widened-box passes along both axes of ``field[r0:r1, c0:c1]`` in place;
    ``closed`` (top, bottom, left, right): which sides of the box are the grid's edge."""
    reach = h + 1
    nr = r1 - r0
    nc = c1 - c0
    ext = np.empty(nc + 2 * reach)
    for r in range(r0, r1):
        line = field[r, c0:c1]
        for _ in range(passes):
            _box_line(line, nc, h, a, closed[2], closed[3], ext)
    ext2 = np.empty((nr + 2 * reach, nc))
    run = np.empty(nc)
    for _ in range(passes):
        _box_rows(field, r0, r1, c0, c1, h, a, closed[0], closed[1], ext2, run)


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


def blur_width(params: SnowballParams, cell_size: float) -> tuple[int, float, int]:
    """(h, a, passes) of the blur on cells of ``cell_size``: up to three widened boxes
    whose variances add up to ``(blur_radius / cell_size)^2`` cell^2 per axis, the same
    world width at any resolution; ``blur_radius`` 0 = the seed's one 3x3 pass (1/2
    cell^2). Up to 3/2 cell^2 these are 1-3 passes of [a, 1, a] (at a = 1/2 the old 3x3
    binomial, so 1, 2 or 3 of its passes exactly)."""
    sigma = params.blur_radius / cell_size
    variance = sigma * sigma if params.blur_radius > 0 else 0.5
    passes = min(3, max(1, int(np.ceil(2.0 * variance - 1e-9))))
    h, a = box_shape(variance / passes)
    return h, a, passes


def blur_field(change: np.ndarray, h: int, a: float, passes: int,
         box: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """``change`` blurred by ``passes`` widened boxes (:func:`box_shape`) along both axes
    (a copy). The sum is kept: the grid's edges fold back what would leave. ``box``
    (r0, r1, c0, c1): blur only this part, which must hold the change and its blurred
    spread where it is not at the grid's edge (zeros are read past it)."""
    rows, cols = change.shape
    r0, r1, c0, c1 = box if box is not None else (0, rows, 0, cols)
    out = np.array(change, dtype=np.float64)
    part = out[r0:r1, c0:c1].copy()
    blur_part(part, h, a, passes, (r0 == 0, r1 == rows, c0 == 0, c1 == cols))
    out[r0:r1, c0:c1] = part
    return out


def blur_part(part: np.ndarray, h: int, a: float, passes: int,
              closed: tuple[bool, bool, bool, bool]) -> None:
    """Blur ``part`` (a C-ordered cut-out of a grid) in place as :func:`blur_field`
    does: ``closed`` says which of its sides (top, bottom, left, right) are the grid's
    edges, which fold back what would leave; past the others zeros are read."""
    if part.size:
        _blur_box(part, h, a, passes, 0, part.shape[0], 0, part.shape[1],
                  np.array(closed))


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
    kernel = params.kernel(terrain.cell_size)
    span = np.array([np.inf, -np.inf, np.inf, -np.inf])
    lost, nsteps = _run_batch(np.uint64(seed & 0xFFFFFFFFFFFFFFFF), first, count, kernel,
                              cdf, moved, rock, sed, np.zeros_like(height),
                              np.zeros_like(height), terrain.erodibility, span)
    del moved  # scratch: at most 5 grids of it at once (bytes_per_cell)
    terrain.outflow += lost
    if not span[0] <= span[1]:  # nothing taken or laid
        return int(nsteps)
    # the part of the grid the batch changed, and where its blur can reach
    rows, cols = height.shape
    h, a, passes = blur_width(params, terrain.cell_size)
    pad = int(np.ceil(max(kernel.brush, 1.0))) + 2 + (passes * (h + 1) if params.blur > 0
                                                       else 0)
    r0, r1 = max(int(span[2]) - pad, 0), min(int(span[3]) + pad + 1, rows)
    c0, c1 = max(int(span[0]) - pad, 0), min(int(span[1]) + pad + 1, cols)
    part = (slice(r0, r1), slice(c0, c1))
    d_rock = rock[part] - terrain.bedrock[part]
    d_sed = sed[part] - terrain.sediment[part]
    if params.blur > 0:
        closed = (r0 == 0, r1 == rows, c0 == 0, c1 == cols)
        if params.blur >= 1.0:  # all blurred: in place, no blend
            blur_part(d_rock, h, a, passes, closed)
            blur_part(d_sed, h, a, passes, closed)
        else:
            blur_rock, blur_sed = d_rock.copy(), d_sed.copy()
            blur_part(blur_rock, h, a, passes, closed)
            blur_part(blur_sed, h, a, passes, closed)
            d_rock = (1 - params.blur) * d_rock + params.blur * blur_rock
            d_sed = (1 - params.blur) * d_sed + params.blur * blur_sed
    _apply_change(d_rock, d_sed, height[part], terrain.bedrock[part],
                  terrain.sediment[part], terrain.eroded[part], terrain.deposited[part])
    return int(nsteps)


PROCESS = Process(
    "snowball", SnowballParams, run_batch, "Snowball erosion",
    "fast preview erosion with blur (J. Talle's article)", order=20, stream=STREAM_ID,
    reads=("bedrock", "sediment", "erodibility", "rain"), bytes_per_cell=48,
    keyed_starts=True, seconds_per_unit=1.4e-5)
