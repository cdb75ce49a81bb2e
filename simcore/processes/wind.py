"""Wind-blown sand: particles that saturate, shadow and avalanche into dunes.

Follows the idea of the wind article author's 2023 rewrite (github weigert/SimpleWindErosion,
docs/references.md): a wind particle carries sand towards a *capacity* set by
how exposed it is, exchanging with the ground at a finite rate, and flow that has
separated at a crest carries less. Written in world units, so the same world at two
resolutions makes the same dunes. Each particle walks along the wind one cell
(``cell_size`` metres) per step:

- **capacity**: ``capacity`` m³ on flat ground, times a speed-up: on stoss slopes
  ``1 + speedup * slope`` (the slope counted up to ``stoss_angle``; lee slopes lower
  it) and over raised ground ``+ crest_speedup * (height - reference ground)``, the
  reference being a running mean over ``fetch`` metres of the ground ``lookahead``
  metres ahead of the particle (0: the ground it passed); the gain is capped at
  ``max_gain``. The slope term makes flat sand unstable and sets the dune spacing (a
  few saturation lengths); the crest term lets the whole stoss side erode, so dunes
  migrate downwind with a gentle stoss and don't steepen into symmetric ridges (compare
  the Jackson-Hunt / Kroy shear-stress perturbation: a slope part and a height part);
- **what bounds a dune's size** (``lookahead``): the height part of that perturbation is
  the flow's response to the ground around a point, downwind as well as upwind (the
  pressure field feels the ground ahead). A reference of upwind ground only shifts the
  whole height term upwind: on relief longer than ``fetch`` it acts as a stoss speed-up
  of ``crest_speedup * fetch`` per unit slope with no cap (24 at 0.6/m and 40 m, eight
  times the slope term), so every long wave grows and dunes merge until one fills the
  map. Reading the ground ``lookahead = fetch`` ahead centres the reference on the
  particle: relief much longer than the fetch gets no speed-up, only dunes of about
  the fetch and shorter grow, and large piles of sand break up into dunes of that size
  (in nature the depth of the atmospheric boundary layer bounds the largest dunes the
  same way: the wind stops responding to longer relief);
- **saturation**: the load relaxes to the capacity over ``saturation_length`` m: per
  step of ``ds`` metres the gap shrinks by ``1 - exp(-ds / saturation_length)``; a
  positive gap lifts sand (never more than the cell holds), a negative one lays it down;
- **wind shadow** (the 2023 code's boundary layer and flight): the particle's height
  never falls faster than the separated flow's glide (``shadow_angle`` below the
  horizontal). Where the ground drops away faster (a lee face) the particle is
  airborne: its capacity fades with the clearance over ``boundary_layer`` m and it
  drops its load over ``fallout_length`` m, just past the brink. A new particle looks
  ``shadow_reach`` m upwind to know whether it starts in a shadow;
- **avalanches**: every cell the wind changes is relaxed so no loose sand rests steeper
  than ``repose_angle`` against any of its 8 neighbours (a stack-driven cascade: a cell
  that receives sand is checked in turn); an avalanche stops ``hysteresis`` degrees
  below the angle (static vs dynamic angle of repose). Slip faces stand between the two;
- **abrasion**: on bare rock a loaded particle wears ``abrasion`` x load per metre of
  bedrock into sand in place (scaled by ``terrain.erodibility``).

Where the sand comes from: the terrain's loose sediment (an initial sand cover: give
the terrain sediment) and rock the wind abrades; in the desert preset the thermal
process also weathers exposed rock into sand.

Particles start at uniformly random points of the map (as the 2023 code does) heading
within ``spread`` degrees of the wind. After ``reach`` metres their capacity drops to
zero and they settle their load over the saturation length. Sand carried off the map
is added to ``terrain.outflow``, or with ``wrap`` the map is periodic: a particle
leaving one edge enters at the opposite one with its load (a sand sea fed from upwind;
no sand is lost). ``terrain.wind`` is a moving average (rate ``adaptation`` per batch)
of "a particle touched the ground here".

Wind direction: ``direction`` is the angle in degrees the wind blows *towards*,
0 = +x (increasing column), counter-clockwise, 90 = +y (increasing row index).

Runs on one thread, particles in index order: the result depends only on
(terrain, params, seed, first, count), whatever numba's thread count.

Kernel units: heights are cell units (world height / cell size), volumes cell units x
cells; :meth:`WindParams.kernel` converts the world-unit parameters into a
:class:`Kernel` named tuple.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from ..fields import Field
from ..kernels.primitives import exchange, next_uniform, stream_state
from ..kernels.sampling import sample_bilinear
from ..params import Params, param
from ..process import Process
from ..terrain import Terrain

STREAM_ID = 3  # RNG stream of this process

_DR = np.array([-1, -1, -1, 0, 0, 1, 1, 1], dtype=np.int64)
_DC = np.array([-1, 0, 1, -1, 1, -1, 0, 1], dtype=np.int64)
_DIST = np.array([math.sqrt(2.0), 1.0, math.sqrt(2.0), 1.0, 1.0,
                  math.sqrt(2.0), 1.0, math.sqrt(2.0)])
_SPLASH_W = np.array([math.sqrt(2.0) / 6.0, 2.0 / 3.0, math.sqrt(2.0) / 6.0, 2.0 / 3.0,
                      2.0 / 3.0, math.sqrt(2.0) / 6.0, 2.0 / 3.0, math.sqrt(2.0) / 6.0])
#: cells an avalanche may have waiting: a full stack drops the cells it holds twice
#: (:func:`_unique_cells`); only more distinct cells than this are left for a later visit
STACK = 4096
AVALANCHE_TOL = 1e-10  # slope (cell units per cell) a pair may exceed the repose by

#: keys of the 2020 particle model, still accepted in presets and ignored
LEGACY_KEYS = frozenset({"speed", "dt", "suspension", "roughness", "settling", "gravity",
                         "coupling", "scale"})


@dataclasses.dataclass(frozen=True)
class WindParams(Params):
    """Wind-blown sand, in world units (metres, degrees)."""

    direction: float = param(45.0, -360.0, 360.0, "deg",
                             "direction the wind blows towards: 0 = +x, 90 = +y "
                             "(counter-clockwise)")
    capacity: float = param(0.05, 0.0, 1e6, "m³",
                            "sand one particle carries when saturated on flat ground",
                            soft_hi=1.0)
    saturation_length: float = param(3.0, 0.01, 1000.0, "m",
                                     "distance over which the load adapts to the capacity",
                                     soft_hi=50.0)
    speedup: float = param(3.0, 0.0, 50.0, "",
                           "capacity gain per unit of stoss slope (wind speeds up "
                           "climbing a dune)", soft_hi=10.0)
    stoss_angle: float = param(6.0, 0.0, 89.0, "deg",
                               "slope beyond which climbing speeds the wind up no more "
                               "(sets how gentle stoss sides stay)")
    crest_speedup: float = param(0.6, 0.0, 100.0, "1/m",
                                 "capacity gain per metre the ground stands above the "
                                 "ground the wind passed over (wind is faster over crests)",
                                 soft_hi=2.0)
    fetch: float = param(40.0, 0.01, 10000.0, "m",
                         "length of upwind ground the wind compares a crest with",
                         soft_hi=200.0)
    lookahead: float = param(0.0, 0.0, 10000.0, "m",
                             "the ground the crest speed-up compares with is read this "
                             "far ahead of the particle (0: only the ground it passed; "
                             "= fetch: centred, which bounds the dunes' size near the "
                             "fetch)", soft_hi=200.0)
    max_gain: float = param(6.0, 1.0, 100.0, "",
                            "largest capacity gain from speed-ups", soft_hi=10.0)
    shadow_angle: float = param(15.0, 0.0, 89.0, "deg",
                                "glide angle of the flow behind a crest: steeper drops "
                                "are in the wind shadow")
    shadow_reach: float = param(30.0, 0.0, 10000.0, "m",
                                "how far upwind a new particle looks for a crest that "
                                "shadows it", soft_hi=200.0)
    boundary_layer: float = param(0.5, 0.001, 100.0, "m",
                                  "clearance over which an airborne particle's capacity "
                                  "fades", soft_hi=5.0)
    fallout_length: float = param(0.5, 0.001, 100.0, "m",
                                  "distance over which a particle in the wind shadow "
                                  "drops its load", soft_hi=10.0)
    repose_angle: float = param(32.0, 1.0, 89.0, "deg",
                                "steepest angle loose sand rests at (slip faces)")
    hysteresis: float = param(2.0, 0.0, 30.0, "deg",
                              "an avalanche stops this much below the angle of repose "
                              "(sand's static vs dynamic angle)", soft_hi=5.0)
    reach: float = param(100.0, 0.0, 1e6, "m",
                         "distance a particle blows before it settles its load",
                         soft_hi=1000.0)
    spread: float = param(5.0, 0.0, 90.0, "deg",
                          "particle directions vary this much around the wind")
    splash: float = param(0.2, 0.0, 1000.0, "",
                          "reptation: sand a particle's impacts splash down the slope to "
                          "the neighbouring cells, per unit slope, as a share of its load "
                          "(evens the sand out across the wind as well as along it, so "
                          "neighbouring rows of cells join into one dune)", soft_hi=5.0)
    direction2: float = param(0.0, -360.0, 360.0, "deg",
                              "direction of a second wind (towards: 0 = +x, 90 = +y)")
    share2: float = param(0.0, 0.0, 1.0, "",
                          "share of the particles blown by the second wind (0: one wind)")
    abrasion: float = param(0.001, 0.0, 1.0, "1/m",
                            "fraction of its load a particle wears off bare rock per metre",
                            soft_hi=0.05)
    wrap: bool = param(False, doc="sand blown off one edge comes back at the opposite "
                       "edge (a sand sea fed from upwind); off: it leaves the map")
    adaptation: float = param(0.01, 0.0, 1.0, "1/batch",
                              "rate of the contact map's moving average")
    batch: int = param(250, 1, 1_000_000, "particles",
                       "particles per batch; the contact map is updated once per batch",
                       soft_hi=10000)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = ""):
        """As Params.from_dict; keys of the 2020 model (LEGACY_KEYS) are ignored so old
        presets and scripts still load."""
        return super().from_dict({k: v for k, v in data.items() if k not in LEGACY_KEYS},
                                 where)

    def kernel(self, cell_size: float = 1.0) -> Kernel:
        """Parameters in kernel units for a grid of ``cell_size`` metres."""
        a = math.radians(self.direction)
        a2 = math.radians(self.direction2)
        cs = float(cell_size)
        return Kernel(
            ux=math.cos(a), uy=math.sin(a),
            ux2=math.cos(a2), uy2=math.sin(a2), share2=self.share2,
            splash=self.splash,
            capacity=self.capacity / cs**3,
            rate=-math.expm1(-cs / self.saturation_length),
            speedup=self.speedup,
            stoss=math.tan(math.radians(self.stoss_angle)),
            crest=self.crest_speedup * cs,
            fetch_rate=-math.expm1(-cs / self.fetch),
            look_ahead=self.lookahead / cs * resolved_share(self, cs),
            max_gain=self.max_gain,
            fall_rate=-math.expm1(-cs / self.fallout_length),
            glide=math.tan(math.radians(self.shadow_angle)),
            look_back=int(math.ceil(self.shadow_reach / cs)),
            inv_layer=cs / self.boundary_layer,
            repose=math.tan(math.radians(self.repose_angle)),
            rest=math.tan(math.radians(max(self.repose_angle - self.hysteresis, 0.0))),
            reach_steps=int(math.floor(self.reach / cs)),
            reach_frac=self.reach / cs - math.floor(self.reach / cs),
            max_steps=int(math.ceil(self.reach / cs)) + min(
                int(8.0 * self.saturation_length / cs) + 2, 100_000),
            spread=math.radians(self.spread),
            abrasion=min(self.abrasion * cs, 1.0),
            wrap=self.wrap,
            adaptation=self.adaptation)


class Kernel(NamedTuple):
    """WindParams in kernel units (lengths in cells, volumes in cell units x cells)."""

    ux: float  # unit wind vector
    uy: float
    ux2: float  # unit vector of the second wind
    uy2: float
    share2: float  # share of the particles the second wind blows
    splash: float  # reptation: share of the load per unit slope splashed to a neighbour
    capacity: float  # saturated load on flat ground
    rate: float  # fraction of the load-capacity gap closed per one-cell step
    speedup: float  # capacity gain per unit stoss slope
    stoss: float  # tan(stoss angle): steeper slopes add no further gain
    crest: float  # capacity gain per cell unit of height above the upwind ground
    fetch_rate: float  # weight of the newest cell in the running reference ground height
    look_ahead: float  # cells ahead of the particle the running ground height reads
    max_gain: float  # cap of the speed-up
    fall_rate: float  # fraction of the load dropped per step in the wind shadow
    glide: float  # tan(shadow angle): fall of the separated flow per cell
    look_back: int  # cells upwind a new particle checks for a shadowing crest
    inv_layer: float  # 1 / boundary layer
    repose: float  # tan(repose angle): steeper sand avalanches
    rest: float  # tan(angle an avalanche stops at)
    reach_steps: int  # whole steps with capacity before the particle settles
    reach_frac: float  # capacity share of the step after them (reach in metres exactly)
    max_steps: int  # after these it lays down what it still carries
    spread: float  # radians either side of the wind
    abrasion: float  # fraction of the load worn off bare rock per step
    wrap: bool  # leaving one edge = entering the opposite one
    adaptation: float


@njit(cache=True)
def _unique_cells(stack, n):
    """Keep each cell of ``stack[:n]`` once (in cell order); returns the new count."""
    cells = np.unique(stack[:n])
    stack[:cells.size] = cells
    return cells.size


@njit(cache=True)
def avalanche(start, rows, cols, repose, rest, stack, height, bedrock, sediment, eroded,
              deposited, erodibility):
    """Relax loose sand around flat cell ``start`` until no sediment rests steeper than
    ``repose`` (height difference per cell of distance) against any of its 8 neighbours.
    A pair steeper than ``repose`` is brought to ``rest`` (<= repose: sand's dynamic
    angle, so the next grain does not start a new avalanche at once) by moving half the
    difference, capped by the higher cell's sediment; both cells are checked again, so
    the cascade runs on down the slope. Bedrock never moves. Returns the moves made."""
    stack[0] = start
    n = 1
    moves = 0
    while n > 0:
        n -= 1
        i = stack[n]
        r = i // cols
        c = i - r * cols
        inside = r >= 1 and c >= 1 and r < rows - 1 and c < cols - 1
        moved = False
        hi_ = height[i]
        for m in range(8):
            rr = r + _DR[m]
            cc = c + _DC[m]
            if not inside and (rr < 0 or cc < 0 or rr >= rows or cc >= cols):
                continue
            j = rr * cols + cc
            diff = hi_ - height[j]
            if abs(diff) <= (repose + AVALANCHE_TOL) * _DIST[m]:
                continue
            hi = i if diff > 0.0 else j
            lo = j if diff > 0.0 else i
            t = min(sediment[hi], 0.5 * (abs(diff) - rest * _DIST[m]))
            if t <= 0.0:
                continue
            exchange(hi, t, 0.0, height, bedrock, sediment, eroded, deposited, erodibility)
            exchange(lo, 0.0, t, height, bedrock, sediment, eroded, deposited, erodibility)
            moves += 1
            moved = True
            hi_ = height[i]
            if n >= stack.size - 1:
                n = _unique_cells(stack, n)
            if n < stack.size - 1:
                stack[n] = j
                n += 1
        if moved and n < stack.size:
            stack[n] = i
            n += 1
    return moves


@njit(cache=True)
def _target(k, back, here, ahead, upwind, clearance, step):
    """Load the wind can carry over ground ``here`` between ``back`` and ``ahead`` (one
    cell up- and downwind), ``upwind`` the reference ground (running mean of the ground
    ``look_ahead`` cells ahead of the cells passed over): capacity x
    speed-up (on stoss slopes, over ground raised above the upwind ground) x the shadow's
    fade with ``clearance``."""
    cap = k.capacity
    if step >= k.reach_steps:
        if step > k.reach_steps or k.reach_frac <= 0.0:
            return 0.0
        cap *= k.reach_frac  # the last, partial step: ``reach`` metres, not whole cells
    slope = min(0.5 * (ahead - back), k.stoss)
    gain = min(max(1.0 + k.speedup * slope + k.crest * (here - upwind), 0.0), k.max_gain)
    if clearance <= 0.0:
        return cap * gain
    return cap * gain * math.exp(-clearance * k.inv_layer)


@njit(cache=True)
def _cell(x, y, rows, cols, wrap):
    """Flat index of the cell under (x, y) in cells; -1 off the map (without wrap)."""
    if x < 0.0 or y < 0.0 or x >= cols or y >= rows:
        if not wrap:
            return -1
        x = x % cols
        y = y % rows
        if x >= cols:  # x % cols rounds up to cols for tiny negative x
            x = 0.0
        if y >= rows:
            y = 0.0
    return int(y) * cols + int(x)


@njit(cache=True)
def _shadow_height(k, height, x, y, vx, vy, rows, cols):
    """Height of the wind at (x, y): the ground, or higher where a crest up to
    ``look_back`` cells upwind shadows it (its height minus the glide per cell)."""
    z = height[_cell(x, y, rows, cols, np.bool_(True))]
    for d in range(1, k.look_back + 1):
        j = _cell(x - d * vx, y - d * vy, rows, cols, k.wrap)
        if j < 0:
            break
        z = max(z, height[j] - d * k.glide)
    return z


@njit(cache=True)
def _start(st, k, rows, cols):
    """Random start point (x, y) and direction (vx, vy, a unit vector in cells)."""
    st, a = next_uniform(st)
    st, b = next_uniform(st)
    st, u = next_uniform(st)
    ux, uy = k.ux, k.uy
    if k.share2 > 0.0:
        st, w = next_uniform(st)
        if w < k.share2:
            ux, uy = k.ux2, k.uy2
    turn = k.spread * (2.0 * u - 1.0)
    vx = ux * math.cos(turn) - uy * math.sin(turn)
    vy = ux * math.sin(turn) + uy * math.cos(turn)
    return min(a * cols, cols - 1e-9), min(b * rows, rows - 1e-9), vx, vy


@njit(cache=True)
def _trade(k, i, gap, load, clearance, height, bedrock, sediment, eroded, deposited,
           erodibility):
    """Close ``gap`` (capacity - load, already scaled by the rate) at flat cell ``i``:
    lift sand (never more than the cell holds) or lay it down; a loaded particle on
    bare rock sand-blasts it. Returns the new load."""
    bare = sediment[i] <= 0.0
    if gap > 0.0:
        load += exchange(i, min(gap, sediment[i]), 0.0, height, bedrock, sediment,
                         eroded, deposited, erodibility)
    else:
        exchange(i, 0.0, -gap, height, bedrock, sediment, eroded, deposited, erodibility)
        load += gap
    if bare and clearance <= 0.0 and load > 0.0:  # rock worn into sand, in place
        worn = exchange(i, k.abrasion * load, 0.0, height, bedrock, sediment, eroded,
                        deposited, erodibility)  # scaled by erodibility in exchange
        exchange(i, 0.0, worn, height, bedrock, sediment, eroded, deposited, erodibility)
    return load


@njit(cache=True)
def _steep(i, rows, cols, crit, offsets, height):
    """True if flat cell ``i`` might rest steeper than ``crit`` (per neighbour) against a
    neighbour: an edge cell, or an interior one with such a pair."""
    r = i // cols
    c = i - r * cols
    if r < 1 or c < 1 or r >= rows - 1 or c >= cols - 1:
        return True
    h = height[i]
    for m in range(8):
        if abs(h - height[i + offsets[m]]) > crit[m]:
            return True
    return False


@njit(cache=True)
def _splash(k, i, rows, cols, load, height, bedrock, sediment, eroded, deposited,
            erodibility, stack, crit, offsets):
    """Reptation at flat cell ``i``: the particle's impacts splash sand down the slope to
    each of the 8 neighbours, ``splash`` x load x slope x an isotropic weight (the 9-point
    Laplacian's 2/3 and 1/6), never more than a quarter of the difference nor more sand
    than the higher cell holds. Evens out the ground across the wind as well as along it. A
    neighbour it changes is relaxed to the angle of repose (cell ``i`` is by the
    caller)."""
    r = i // cols
    c = i - r * cols
    for m in range(8):
        rr = r + _DR[m]
        cc = c + _DC[m]
        if rr < 0 or cc < 0 or rr >= rows or cc >= cols:
            if not k.wrap:
                continue
            rr %= rows
            cc %= cols
        j = rr * cols + cc
        diff = height[i] - height[j]
        hi = i if diff > 0.0 else j
        lo = j if diff > 0.0 else i
        w = _SPLASH_W[m]
        t = min(k.splash * load * w * abs(diff) / _DIST[m], 0.25 * abs(diff), sediment[hi])
        if t <= 0.0:
            continue
        exchange(hi, t, 0.0, height, bedrock, sediment, eroded, deposited, erodibility)
        exchange(lo, 0.0, t, height, bedrock, sediment, eroded, deposited, erodibility)
        if _steep(j, rows, cols, crit, offsets, height):
            avalanche(j, rows, cols, k.repose, k.rest, stack, height, bedrock, sediment,
                      eroded, deposited, erodibility)


@njit(cache=True)
def _fly(st, k, rows, cols, height, bedrock, sediment, eroded, deposited, erodibility,
         track, stack, crit, offsets):
    """One particle from a random start: returns (load carried off the map, steps)."""
    x, y, vx, vy = _start(st, k, rows, cols)
    i = _cell(x, y, rows, cols, np.bool_(True))
    j = _cell(x - vx, y - vy, rows, cols, k.wrap)
    back = height[j if j >= 0 else i]
    z = _shadow_height(k, height, x, y, vx, vy, rows, cols)
    upwind = z  # running mean of the ground (or the shadowing crest) passed over, or
    # of the ground look_ahead cells ahead of it
    load = 0.0
    floor = 1e-6 * k.capacity
    step = np.int64(0)  # not a literal 0: one signature of _target
    while True:
        here = height[i]
        z = max(z, here)
        clearance = z - here
        j = _cell(x + vx, y + vy, rows, cols, k.wrap)
        ahead = height[j] if j >= 0 else here
        if clearance <= 0.0:
            track[i] = 1
        ref = here
        if k.look_ahead > 0.0:
            ja = _cell(x + k.look_ahead * vx, y + k.look_ahead * vy, rows, cols, k.wrap)
            if ja >= 0:
                ref = height[ja]
        upwind += (ref - upwind) * k.fetch_rate
        gap = _target(k, back, here, ahead, upwind, clearance, step) - load
        gap *= k.rate if clearance <= 0.0 else k.fall_rate
        load = _trade(k, i, gap, load, clearance, height, bedrock, sediment, eroded,
                      deposited, erodibility)
        if k.splash > 0.0 and clearance <= 0.0 and load > 0.0:
            _splash(k, i, rows, cols, load, height, bedrock, sediment, eroded, deposited,
                    erodibility, stack, crit, offsets)
        if _steep(i, rows, cols, crit, offsets, height):
            avalanche(i, rows, cols, k.repose, k.rest, stack, height, bedrock, sediment,
                      eroded, deposited, erodibility)
        step += 1
        if j < 0:
            return load, step
        if (step >= k.reach_steps and load <= floor) or step >= k.max_steps:
            break
        back = height[i]
        x += vx
        y += vy
        z -= k.glide
        i = j
    exchange(i, 0.0, load, height, bedrock, sediment, eroded, deposited, erodibility)
    avalanche(i, rows, cols, k.repose, k.rest, stack, height, bedrock, sediment, eroded,
              deposited, erodibility)
    return 0.0, step


@njit(nogil=True, cache=True)
def _run_batch(seed, first, count, k, height, bedrock, sediment, eroded, deposited,
               erodibility, wind, rows, cols):
    """Fly particles ``first .. first+count-1``, then update the contact map; returns
    (load carried off the map, particle steps). Arrays are flat views of the grids."""
    track = np.zeros(rows * cols, dtype=np.uint8)
    stack = np.empty(STACK, dtype=np.int64)
    crit = (k.repose + AVALANCHE_TOL) * _DIST
    offsets = _DR * cols + _DC
    lost = 0.0
    steps = 0
    for p in range(count):
        st = stream_state(np.uint64(seed), np.uint64(STREAM_ID), np.uint64(first + p))
        out, n = _fly(st, k, rows, cols, height, bedrock, sediment, eroded, deposited,
                      erodibility, track, stack, crit, offsets)
        lost += out
        steps += n
    a = k.adaptation
    for c in range(rows * cols):
        wind[c] = (1.0 - a) * wind[c] + a * track[c]
    return lost, steps


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
        np.uint64(seed & 0xFFFFFFFFFFFFFFFF), first, count,
        params.kernel(terrain.cell_size), flat(height), flat(terrain.bedrock),
        flat(terrain.sediment), flat(terrain.eroded), flat(terrain.deposited),
        flat(terrain.erodibility), flat(terrain.wind), rows, cols)
    terrain.outflow += lost
    return int(nsteps)


# --- measuring dunes (numpy; used by the tests, the benchmark and docs/wind.md) -------

def measure_dunes(height: np.ndarray, direction: float, cell_size: float = 1.0,
                  band: tuple[float, float] = (5.0, 40.0)) -> dict[str, float]:
    """Landform figures of a dune field (``height`` in cell units, wind ``direction`` in
    degrees, towards):

    - ``spectral_share``: share of the power of along-wind height profiles (linear trend
      removed, Hann window) at wavelengths ``band`` (cells);
    - ``wavelength_m``: the dominant along-wind wavelength in metres;
    - ``lee_stoss``: mean |slope| where the ground falls downwind over mean slope where
      it rises (cells flatter than 1° ignored);
    - ``lee_p50_deg``, ``lee_p90_deg``, ``lee_max_deg``: steepness of slip faces (cells
      falling downwind steeper than 15°), degrees;
    - ``crest_angle_deg``: angle between the crest-normal (the power-weighted wave vector
      of the 2-D spectrum in ``band``) and the wind; 0 = crests across the wind.
    """
    h = np.asarray(height, dtype=np.float64)
    rows, cols = h.shape
    a = math.radians(direction)
    ux, uy = math.cos(a), math.sin(a)
    gy, gx = np.gradient(h)
    along = gx * ux + gy * uy
    steep = np.degrees(np.arctan(np.hypot(gx, gy)))
    flat_ = np.abs(along) < math.tan(math.radians(1.0))
    lee = (along < 0) & ~flat_
    stoss = (along > 0) & ~flat_
    lee_stoss = float(-along[lee].mean() / along[stoss].mean()) if lee.any() and \
        stoss.any() else float("nan")
    faces = steep[(along < 0) & (steep > 15.0)]
    if faces.size == 0:
        faces = np.zeros(1)
    # 2-D spectrum: orientation of the dune band
    hd = h - h.mean()
    win = np.outer(np.hanning(rows), np.hanning(cols))
    power = np.abs(np.fft.fft2(hd * win)) ** 2
    ky = np.fft.fftfreq(rows)[:, None] * np.ones((1, cols))
    kx = np.fft.fftfreq(cols)[None, :] * np.ones((rows, 1))
    kk = np.hypot(kx, ky)
    with np.errstate(divide="ignore"):
        lam = np.where(kk > 0, 1.0 / np.where(kk > 0, kk, 1.0), np.inf)
    inb = (lam >= band[0]) & (lam <= band[1])
    phi = np.arctan2(ky, kx) - a
    w = power * inb
    crest = 0.5 * math.atan2(float((w * np.sin(2 * phi)).sum()),
                             float((w * np.cos(2 * phi)).sum()))
    # along-wind profiles (axis directions only; diagonals via sampling)
    share, wavelength = _profile_spectrum(h, ux, uy, band)
    return {"spectral_share": share, "wavelength_m": wavelength * cell_size,
            "lee_stoss": lee_stoss, "lee_p50_deg": float(np.percentile(faces, 50)),
            "lee_p90_deg": float(np.percentile(faces, 90)),
            "lee_max_deg": float(faces.max()),
            "crest_angle_deg": abs(math.degrees(crest))}


def _profile_spectrum(h: np.ndarray, ux: float, uy: float,
                      band: tuple[float, float]) -> tuple[float, float]:
    """(power share in ``band``, dominant wavelength) of straight profiles along (ux, uy)
    sampled bilinearly across the map, in cells."""
    rows, cols = h.shape
    n = int(min(rows, cols) * (1.0 if abs(ux) < 1e-9 or abs(uy) < 1e-9 else 0.7))
    t = np.arange(n) - (n - 1) / 2.0
    cy, cx = (rows - 1) / 2.0, (cols - 1) / 2.0
    offs = np.arange(n) - (n - 1) / 2.0
    # sample points: along the wind (t) and across it (offs)
    xs = cx + t[None, :] * ux - offs[:, None] * uy
    ys = cy + t[None, :] * uy + offs[:, None] * ux
    p = sample_bilinear(h, ys, xs)
    s = np.arange(n)
    coef = np.polyfit(s, p.T, 1)
    p = p - (coef[0][:, None] * s[None, :] + coef[1][:, None])
    spec = (np.abs(np.fft.rfft(p * np.hanning(n)[None, :], axis=1)) ** 2).mean(axis=0)
    k = np.arange(spec.size)
    lam = np.where(k > 0, n / np.maximum(k, 1), np.inf)
    spec[0] = 0.0
    inb = (lam >= band[0]) & (lam <= band[1])
    total = spec.sum()
    share = float(spec[inb].sum() / total) if total > 0 else 0.0
    return share, float(lam[int(np.argmax(spec))])


#: dunes come about this many saturation lengths apart (desert preset at 3 m: 30 m, 33 m
#: with the splash, 42-45 m with its 35 m lookahead, 33-38 m from large sand piles;
#: desert_draa: 1.1 km at 90 m)
DUNE_SPACING_LENGTHS = 14.0
#: cells a dune needs to keep its slip face (on 4 m cells, 11 a dune, lee faces sank
#: from 30 to 17 degrees)
CELLS_PER_DUNE = 15.0


def resolved_share(params: WindParams, cell_size: float) -> float:
    """How much of ``lookahead`` the wind uses on cells of ``cell_size`` metres: all of
    it where the cells resolve the dunes (at most 1/CELLS_PER_DUNE of their spacing),
    none on cells twice as coarse, linear between. The centred reference bounds a
    dune's size; on cells that cannot show dunes it reads one or two cells and turns
    into a curvature at the grid's own scale (the same upland then changed differently
    at 15 and 30 m cells, r 0.73), so there the wind keeps the upwind reference and
    makes sand sheets, as :func:`advice` says."""
    finest = DUNE_SPACING_LENGTHS * params.saturation_length / CELLS_PER_DUNE
    return min(1.0, max(0.0, 2.0 - cell_size / finest))


def advice(params: WindParams, cell_size: float) -> str | None:
    """A sentence when the cells are too coarse for the dunes these params build."""
    spacing = DUNE_SPACING_LENGTHS * params.saturation_length
    finest = spacing / CELLS_PER_DUNE
    if cell_size <= finest:
        return None
    return (f"wind: dunes from these settings are about {spacing:.3g} m apart and need "
            f"cells of {finest:.2g} m or less; on these {cell_size:.3g} m cells the wind "
            "makes sand sheets, not dunes (use a smaller world or more vertices, or the "
            "desert_draa preset: the same dunes 30 times larger, draa about 1 km apart)")


PROCESS = Process(
    "wind", WindParams, run_batch, "Wind erosion",
    "wind particles move sand into dunes, abrade rock (N. McDonald's article)", order=30,
    stream=STREAM_ID, reads=("bedrock", "sediment", "erodibility", "wind"),
    writes=("bedrock", "sediment", "eroded", "deposited", "wind"),
    fields=(Field("wind", "fraction", "time-averaged wind-surface contact", lo=0.0, hi=1.0,
                  color="te_wind", exact="te_wind_contact",
                  refine="map"),), advice=advice,
    bytes_per_cell=2, reach="map", levels="coarse", seconds_per_unit=6.8e-6)
