"""Particle wind erosion (ALGORITHMS.md §6, seed 000: N. McDonald's particle wind erosion).

Wind particles enter from the upwind edges, fly or slide over the surface
(bedrock + sediment), abrade bare bedrock into sediment, lift sediment into suspension,
drop it again (half on the current cell, half on the next) and trigger a time-delayed
local cascade of *sediment only* wherever they exchange mass. Bedrock is an obstacle:
the cascade never moves it.

Units. The kernel works in cell units (heights / cell spacing). The seed's heights are
in its own unit, ``scale`` cells tall (the article's ``scale = 40`` on a 256² map), and
its roughness, gravity, abrasion and the particle's vertical speed are in that unit.
We keep the published values and the article's dynamics exactly: the particle's
vertical speed stays in the seed's unit (its height moves by ``dt * vz * scale`` cell
units, gravity is ``gravity`` of the seed's unit), the roughness is multiplied by
``scale`` and abrasion divided by it (it is proportional to load x contact force, two
heights). Suspension, settling, dt and horizontal speeds need no conversion. The
normal is computed from cell-unit heights, which is what the article's
``surfaceNormal(..., scale)`` does, and the reflection ``cross(cross(v, n), n)`` mixes
units exactly as the article's does.

Wind direction: ``direction`` is the angle in degrees the wind blows *towards*,
0 = +x (increasing column), counter-clockwise, 90 = +y (increasing row index).
The article's ``pspeed = (1, 0, 1)`` is ``direction = 45``, ``speed = sqrt(2)``.

Deviations from the article's code, each for mass conservation, generality or speed:
- suspension never deletes sediment: when a cell holds less than the lift, the particle
  takes all of it (the article set the cell to zero and dropped the rest);
- the flying drop uses the amount actually lost (the article re-read the reduced load);
- abrasion is scaled by ``terrain.erodibility`` (0 = rock the wind cannot wear); it
  counts as eroded (rock removed) and deposited (sand made) on its cell;
- spawning: particles start uniformly along every upwind edge, each edge weighted by
  the wind flux through it (length x |wind component|); at 45° on a square map this is
  the article's "random point on the two upwind edges";
- the cascade runs after every surface contact (abrasion makes sediment too), and
  compares each neighbour with the cell's height at the start of the cascade (see
  :func:`cascade`);
- everything is float64: the article keeps the particle height in float32 against a
  float64 surface, so right after a lift the particle "flies" or "slides" depending on
  how the surface height rounds (its particles slide less and take ~30 % fewer steps);
- the contact map is a moving average of 0/1 "touched by a sliding particle in this
  batch", updated once per batch like the article's ``windpath`` (rate ``adaptation``);
- a particle ends when it leaves the map (its load is added to ``terrain.outflow``),
  when its speed drops below 0.01, or after ``4 (rows + cols) / (dt speed)`` steps
  (a safety cap); ending inside the map, it lays its load down on its cell.

Runs on one thread, particles in index order: the result depends only on
(terrain, params, seed, first, count).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numba import njit

from .kernels import next_uniform, stream_state
from .params import Params, param
from .terrain import Terrain

STREAM_ID = 3  # RNG stream of this process

_DR = np.array([-1, -1, -1, 0, 0, 1, 1, 1], dtype=np.int64)
_DC = np.array([-1, 0, 1, -1, 1, -1, 0, 1], dtype=np.int64)


@dataclasses.dataclass(frozen=True)
class WindParams(Params):
    """Wind erosion parameters (seed 000 defaults, in the seed's height unit; see module
    doc for the conversion to cell units through ``scale``)."""

    direction: float = param(45.0, -360.0, 360.0, "deg",
                             "direction the wind blows towards: 0 = +x, 90 = +y "
                             "(counter-clockwise)")
    speed: float = param(math.sqrt(2.0), 0.0, 10.0, "cell/time",
                         "prevailing wind speed (the seed's (1, 0, 1) = sqrt 2)", soft_hi=4.0)
    dt: float = param(0.25, 0.01, 1.0, "time", "time step of a particle")
    suspension: float = param(0.0001, 0.0, 1.0, "1/time",
                              "rate of lifting sediment and of dropping the load",
                              soft_hi=0.01)
    abrasion: float = param(0.0001, 0.0, 1.0, "1/time",
                            "rate at which the load sand-blasts bare bedrock", soft_hi=0.01)
    roughness: float = param(0.005, 0.0, 1.0, "height",
                             "largest stable height difference between neighbour cells of "
                             "sediment (x scale = cell units)", soft_hi=0.05)
    settling: float = param(0.01, 0.0, 1.0, "1/time",
                            "fraction of the excess moved per cascade", soft_hi=0.2)
    adaptation: float = param(0.01, 0.0, 1.0, "1/batch",
                              "wind-path adaptation rate of the contact map (moving average)")
    gravity: float = param(0.01, 0.0, 1.0, "height/time^2", "pull on flying particles")
    coupling: float = param(0.1, 0.0, 4.0, "1/time",
                            "how fast a particle's speed returns to the prevailing wind")
    scale: float = param(40.0, 0.01, 10000.0, "cells",
                         "height of the seed's height unit in cell units (its 'scale')",
                         soft_hi=200.0)
    batch: int = param(250, 1, 1_000_000, "particles",
                       "particles per batch; the contact map is updated once per batch",
                       soft_hi=10000)

    def as_array(self) -> np.ndarray:
        a = math.radians(self.direction)
        return np.array([self.speed * math.cos(a), self.speed * math.sin(a), self.dt,
                         self.suspension, self.abrasion / self.scale,
                         self.roughness * self.scale, self.dt * self.settling,
                         self.gravity, self.coupling, self.adaptation, self.scale],
                        dtype=np.float64)


@njit(cache=True, error_model="numpy")
def cascade(r, c, rows, cols, rough, rate, height, bedrock, sediment, eroded, deposited):
    """Time-delayed local cascade at cell (r, c) of the flat arrays: against each of its
    8 neighbours in the grid, move ``rate * min(sediment of the higher cell, excess / 2)``
    downhill, where ``excess = |height difference| - rough``. Only sediment moves.

    Differences are taken against the cell's height when the cascade starts (the
    article re-reads it after every neighbour; with ``rate = dt * settling = 0.0025``
    that changes a transfer by at most a quarter percent, and it removes a serial
    dependency that made the loop 2x slower). What the cell gives away is capped by
    what it has left, so sediment never goes negative for any ``rate <= 1``.

    Masks are booked like kernels.take / kernels.put: a removal first cancels earlier
    deposits on that cell, the rest counts as eroded; every gain counts as deposited."""
    i = r * cols + c
    inside = r >= 1 and c >= 1 and r < rows - 1 and c < cols - 1
    s0 = sediment[i]
    h0 = height[i]
    left = s0  # sediment the cell can still give
    gained = 0.0
    for m in range(8):
        dr = _DR[m]
        dc = _DC[m]
        if not inside:
            rr = r + dr
            cc = c + dc
            if rr < 0 or cc < 0 or rr >= rows or cc >= cols:
                continue
        j = i + dr * cols + dc
        s_j = sediment[j]
        diff = h0 - height[j]
        half = 0.5 * max(abs(diff) - rough, 0.0)
        # branch-free: at most one of give / take is non-zero
        give = min(left, rate * min(s0, half)) * (diff > 0.0)
        take = rate * min(s_j, half) * (diff < 0.0)
        left -= give
        gained += take
        s_j += give - take
        sediment[j] = s_j
        height[j] = bedrock[j] + s_j
        dep_j = deposited[j]
        fd = min(take, dep_j)
        deposited[j] = dep_j - fd + give
        eroded[j] += take - fd
    s = left + gained
    sediment[i] = s
    height[i] = bedrock[i] + s
    gave = s0 - left
    dep_i = deposited[i]
    fd = min(gave, dep_i)
    deposited[i] = dep_i - fd + gained
    eroded[i] += gave - fd


# Settling rates (dt * settling) up to this take the cascade's fast path in _run_batch.
SMALL_RATE = 0.1


@njit(cache=True, error_model="numpy")
def _run_batch(seed, first, count, p, height, bedrock, sediment, eroded, deposited,
               erodibility, wind, rows, cols):
    """Fly particles ``first .. first+count-1``; returns (load carried off the map,
    particle steps). Arrays are flat views of the (rows, cols) grids."""
    px, py, dt, susp, abr, rough, rate, grav, coup, adapt, scale = (
        p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10])
    speed = math.sqrt(px * px + py * py)
    max_steps = int(4.0 * (rows + cols) / (dt * max(speed, 0.01))) + 16
    # upwind edges, weighted by the flux through them
    wx = abs(px) * rows
    wy = abs(py) * cols
    wsum = wx + wy
    if wsum <= 0.0:
        wx = 1.0
        wsum = 1.0
    small = rate <= SMALL_RATE
    gdt = dt * grav  # loop invariants, same rounding as written out in the loop
    cdt = coup * dt
    dts = dt * susp
    dta = dt * abr
    offsets = np.empty(8, dtype=np.int64)  # flat offsets of the 8 neighbours
    for m in range(8):
        offsets[m] = _DR[m] * cols + _DC[m]
    track = np.zeros(rows * cols, dtype=np.uint8)
    lost = 0.0
    nsteps = 0
    for k in range(count):
        st = stream_state(np.uint64(seed), np.uint64(STREAM_ID), np.uint64(first + k))
        st, u = next_uniform(st)
        st, a = next_uniform(st)
        st, b = next_uniform(st)
        if u * wsum < wx:  # enter through the left (px >= 0) or right edge
            x = a if px >= 0.0 else cols - 1.0 + a
            y = b * rows
        else:  # through the top (py >= 0) or bottom edge
            x = b * cols
            y = a if py >= 0.0 else rows - 1.0 + a
        # rounding can give exactly cols or rows (e.g. 49.0 + (1 - 2**-53) == 50.0)
        x = min(x, np.nextafter(cols, 0.0))
        y = min(y, np.nextafter(rows, 0.0))
        vx = px
        vy = py
        vz = 0.0  # vertical speed, in the seed's height unit per time
        z = -np.inf
        load = 0.0
        ix = int(x)
        iy = int(y)
        i = iy * cols + ix
        out = False
        for _ in range(max_steps):
            nsteps += 1
            iu = np.uint64(i)  # unsigned indices: no negative-index wraparound code
            interior = ix >= 1 and iy >= 1 and ix < cols - 1 and iy < rows - 1
            surf = height[iu]
            z = max(z, surf)
            if z <= surf:  # sliding: deflect along the surface, mark the contact
                track[iu] = 1
                # surface normal of bedrock + sediment (central differences, clamped)
                if interior:
                    gx = (height[np.uint64(i + 1)] - height[np.uint64(i - 1)]) * 0.5
                    gy = (height[np.uint64(i + cols)] - height[np.uint64(i - cols)]) * 0.5
                else:
                    cl = max(ix - 1, 0)
                    cr = min(ix + 1, cols - 1)
                    ru = max(iy - 1, 0)
                    rd = min(iy + 1, rows - 1)
                    gx = (height[iy * cols + cr] - height[iy * cols + cl]) * (
                        1.0 if cr - cl == 1 else 0.5)
                    gy = (height[rd * cols + ix] - height[ru * cols + ix]) * (
                        1.0 if rd - ru == 1 else 0.5)
                inv = 1.0 / math.sqrt(gx * gx + gy * gy + 1.0)
                nx = -gx * inv
                ny = -gy * inv
                nz = inv
                vn = vx * nx + vy * ny + vz * nz
                vx += dt * (nx * vn - vx)
                vy += dt * (ny * vn - vy)
                vz += dt * (nz * vn - vz)
            else:  # flying
                vz -= gdt
            vx += cdt * (px - vx)
            vy += cdt * (py - vy)
            vz -= cdt * vz
            x += dt * vx
            y += dt * vy
            z += dt * vz * scale
            if x < 0.0 or y < 0.0 or x >= cols or y >= rows:
                out = True
                break
            jx = int(x)
            jy = int(y)
            j = jy * cols + jx
            ju = np.uint64(j)
            surfn = height[ju]
            vlen = math.sqrt(vx * vx + vy * vy + vz * vz)
            if z <= surfn:  # contact: abrasion of bare rock or suspension of sediment
                force = vlen * (surfn - z)
                s = sediment[iu]
                lift = min(s, dts * force)
                worn = dta * force * load * erodibility[iu] if s <= 0.0 else 0.0
                rock = bedrock[iu] - worn
                s = s - lift + worn
                bedrock[iu] = rock
                sediment[iu] = s
                height[iu] = rock + s
                removed = lift + worn
                dep = deposited[iu]
                fd = min(removed, dep)
                deposited[iu] = dep - fd + worn
                eroded[iu] += removed - fd
                load += lift
                air = False
            else:  # in the air: drop part of the load, half here and half ahead
                drop = dts * load
                load -= drop
                half = 0.5 * drop
                s = sediment[ju] + half
                sediment[ju] = s
                height[ju] = bedrock[ju] + s
                deposited[ju] += half
                s = sediment[iu] + half
                sediment[iu] = s
                height[iu] = bedrock[iu] + s
                deposited[iu] += half
                air = True
            # cascade at the contact cell, or at the next cell and then this one
            cr = jy if air else iy
            cc = jx if air else ix
            for _ in range(2 if air else 1):
                if small and cr >= 1 and cc >= 1 and cr < rows - 1 and cc < cols - 1:
                    # cascade() inlined for an interior cell and rate <= SMALL_RATE, where
                    # the cap "a cell gives at most what it has left" never binds: each
                    # neighbour gets at most rate * s0, and after 7 of them the cell keeps
                    # at least (1 - 7 rate) s0 >= rate s0, so min(left, give) == give
                    # exactly and the result is bit-identical.
                    ci = cr * cols + cc
                    cu = np.uint64(ci)
                    s0 = sediment[cu]
                    h0 = height[cu]
                    left = s0
                    gained = 0.0
                    for m in range(8):
                        nu = np.uint64(ci + offsets[m])
                        s_n = sediment[nu]
                        diff = h0 - height[nu]
                        hx = 0.5 * max(abs(diff) - rough, 0.0)
                        # one of give / take: the higher cell's sediment caps it
                        t = rate * min(s0 if diff > 0.0 else s_n, hx)
                        give = t if diff > 0.0 else 0.0
                        take = t if diff < 0.0 else 0.0
                        left -= give
                        gained += take
                        s_n += give - take
                        sediment[nu] = s_n
                        height[nu] = bedrock[nu] + s_n
                        dep_n = deposited[nu]
                        fd = min(take, dep_n)
                        deposited[nu] = dep_n - fd + give
                        eroded[nu] += take - fd
                    s = left + gained
                    sediment[cu] = s
                    height[cu] = bedrock[cu] + s
                    gave = s0 - left
                    dep = deposited[cu]
                    fd = min(gave, dep)
                    deposited[cu] = dep - fd + gained
                    eroded[cu] += gave - fd
                else:
                    cascade(cr, cc, rows, cols, rough, rate, height, bedrock, sediment,
                            eroded, deposited)
                cr = iy
                cc = ix
            ix = jx
            iy = jy
            i = j
            if vlen < 0.01:
                break
        if out:
            lost += load
        elif load > 0.0:
            s = sediment[i] + load
            sediment[i] = s
            height[i] = bedrock[i] + s
            deposited[i] += load
            cascade(iy, ix, rows, cols, rough, rate, height, bedrock, sediment, eroded,
                    deposited)
    for c in range(rows * cols):
        wind[c] = (1.0 - adapt) * wind[c] + adapt * track[c]
    return lost, nsteps


def flat(a: np.ndarray) -> np.ndarray:
    """A flat view (never a copy) of a C-contiguous float64 grid the kernels write to."""
    if a.dtype != np.float64 or not a.flags.c_contiguous:
        raise ValueError("terrain arrays must be C-contiguous float64 (Terrain.validate)")
    return a.reshape(-1)


def run_batch(terrain: Terrain, params: WindParams, seed: int, first: int, count: int,
              height: np.ndarray | None = None, cdf: np.ndarray | None = None) -> int:
    """Fly wind particles ``first .. first+count-1`` over ``terrain`` in place, then
    update the contact map ``terrain.wind`` once. ``height`` (bedrock + sediment) is
    kept in step when given; ``cdf`` is ignored. Returns the particle steps taken."""
    if height is None:
        height = terrain.height()
    rows, cols = terrain.shape
    lost, nsteps = _run_batch(
        np.uint64(seed & 0xFFFFFFFFFFFFFFFF), first, count, params.as_array(),
        flat(height), flat(terrain.bedrock), flat(terrain.sediment), flat(terrain.eroded),
        flat(terrain.deposited), flat(terrain.erodibility), flat(terrain.wind), rows, cols)
    terrain.outflow += lost
    return int(nsteps)
