"""Thermal erosion and hillslopes (ALGORITHMS.md §7, docs/hillslopes.md).

Seed 000 suggests "an abrasive force making sediment, which then cascades". We extend
that with the threshold-hillslope model of geomorphology, so that bedrock too gives
way when it is too steep. One *pass* over the whole grid does:

1. Weathering (soil production, Heimsath et al. 1997): bedrock turns into sediment in
   place, ``weathering * erodibility * exp(-sediment / soil_depth)`` per pass.
2. Soil creep (nonlinear hillslope diffusion, Roering et al. 1999): the surface flows
   to every lower neighbour at ``creep * S / (1 - (S / S_c)^2)`` with S the slope
   towards it and S_c = tan(talus_angle) (the factor is capped at 4). Creep is
   transport-limited (soil-mantled slopes): it moves sediment first, then rock, scaled
   by the erodibility (at most 1); what arrives is sediment.
3. Relaxation sweeps, repeated until nothing is too steep (or ``relax_sweeps`` ran):

   * Landslides (threshold hillslopes, Burbank et al. 1996, Montgomery & Brandon
     2002): where bedrock rises above a neighbour by more than
     ``tan(rock_angle) * distance``, half the largest excess (times the erodibility,
     at most 1) breaks loose: bedrock turns into sediment in place.
   * Talus (Musgrave et al. 1989): loose material steeper than its angle of repose
     slides: the excess over ``tan(talus_angle) * distance`` against each of the 8
     neighbours is ``d``; the cell sends ``min(sediment, settling * max(d) / 2)`` to
     its lower neighbours in proportion to ``d``.

   The sweeps stop when one moves no more than ``TOLERANCE`` (cell units) anywhere,
   i.e. loose material rests at its talus angle and rock at its critical angle to
   within a fraction of a degree. The cells are sorted by height every
   ``RESORT_EVERY`` sweeps, not every sweep (a sweep barely reorders them).

Angles are geometric, so the landforms they bound are the same at any resolution;
``weathering`` and ``soil_depth`` are world lengths per pass and ``creep`` world length
squared per pass, converted with the terrain's cell size. At a cell size of 1 a pass
is what it was before these became world units.

All cells are updated together from the state before each sweep (what every cell
sends, then what every cell receives), so the result depends only on the input state
and the number of passes: the same on 1 or N threads; the seed is not used. Edges are
closed: nothing leaves the grid, so bedrock + sediment is conserved exactly up to
rounding, and ``terrain.outflow`` is not changed.

``run_batch`` runs ``count`` passes (``batch`` passes per round of a Simulation; in
its progress a pass counts as one particle) and returns the cell updates done.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .. import parallel
from ..kernels import exchange, put_at, transfer
from ..params import Params, param
from ..process import Process
from ..terrain import Terrain

STREAM_ID = 4  # reserved RNG stream; the passes need no random numbers

_SQRT2 = math.sqrt(2.0)
#: the relaxation ends after a sweep that moved no more than this anywhere (cell units)
TOLERANCE = 0.005
#: relaxation sweeps between two sorts of the cells by height
RESORT_EVERY = 8
_CREEP_CAP = 4.0  # largest nonlinear creep factor 1 / (1 - (S/Sc)^2)
_CREEP_STABLE = 0.03  # largest creep coefficient per sub-step (cells^2): with the
# factor capped at 4 and stencil weights summing to 10/3, a cell sends at most 0.4 of a drop
#: most creep sub-steps per pass. Creep in cells² grows as 1 / cell², so on a grid of
#: centimetre cells a preset tuned for 30 m cells asked for ~800k sweeps a pass (Erode on
#: Blender's default 2 m grid never finished); beyond this many (cells under ~3.7 m
#: with creep 25 m²) a pass creeps only 64 x the stable amount
MAX_CREEP_SUBSTEPS = 64


@dataclasses.dataclass(frozen=True)
class ThermalParams(Params):
    """Thermal erosion and hillslope parameters (ours: the seed only suggests the
    process). Lengths are world units; angles degrees."""

    talus_angle: float = param(33.0, 0.0, 89.0, "deg",
                               "angle of repose: loose material slides on steeper slopes")
    weathering: float = param(0.0005, 0.0, 1000.0, "world/pass",
                              "bedrock turned into sediment per pass where it is bare",
                              soft_hi=0.1)
    soil_depth: float = param(0.5, 0.001, 1e6, "world",
                              "weathering slows by e for each soil_depth of cover",
                              soft_hi=10.0)
    settling: float = param(0.5, 0.0, 1.0, "-",
                            "fraction of half the largest excess moved per sweep")
    rock_angle: float = param(40.0, 1.0, 90.0, "deg",
                              "bedrock steeper than this breaks loose (landslides); "
                              "90 = rock never fails")
    creep: float = param(0.0, 0.0, 1e6, "world^2/pass",
                         "soil creep diffusivity: rounds hilltops (0 = off)", soft_hi=100.0)
    relax_sweeps: int = param(64, 0, 100_000, "sweeps",
                              "most landslide/talus sweeps per pass (stops earlier once "
                              "nothing is too steep)", soft_hi=1000)
    batch: int = param(1, 1, 100_000, "passes", "grid passes per batch", soft_hi=100)


class _Kernel(NamedTuple):
    """Per-sweep constants in cell units."""

    talus: float  # tan(talus angle)
    rock: float  # tan(rock angle); inf = no landslides
    weathering: float  # cell units per pass (0 in relaxation-only sweeps)
    soil_depth: float  # cell units
    settling: float
    creep: float  # cells^2 per sub-step (0 = off)


def _kernel_params(p: ThermalParams, cell: float) -> tuple[_Kernel, int]:
    """Cell-unit constants for the first sweep of a pass and its creep sub-steps."""
    creep = p.creep / (cell * cell)
    sub = min(max(1, math.ceil(creep / _CREEP_STABLE)), MAX_CREEP_SUBSTEPS) if creep > 0 else 1
    rock = math.tan(math.radians(p.rock_angle)) if p.rock_angle < 90.0 else math.inf
    return _Kernel(math.tan(math.radians(p.talus_angle)), rock, p.weathering / cell,
                   p.soil_depth / cell, p.settling, min(creep / sub, _CREEP_STABLE)), sub


@njit(cache=True, error_model="numpy")
def _critical(rock, erodibility):
    """Critical rock slope (cell units per cell) of a cell: ``tan(rock_angle)`` divided
    by its erodibility (at most 1), so hard rock stands steeper and erodibility 0 never
    fails. A partially protected cell (the protect mask scales its erodibility) stands
    steeper in the same way, so repeated relaxation cannot wear it down to the bare
    critical slope of its unprotected neighbours."""
    e = min(erodibility, 1.0)
    return rock / e if e > 0.0 else math.inf


@njit(cache=True, error_model="numpy")
def _creep_factor(drop, dist, talus):
    """Nonlinear creep weight towards a neighbour ``drop`` lower at ``dist`` cells:
    isotropic 9-point stencil weight x S / (1 - (S/Sc)^2) capped, times dist (so that
    weight x drop is the flux)."""
    s = drop / dist
    ratio = s / talus if talus > 0.0 else 1.0
    f = 1.0 / max(1.0 - ratio * ratio, 1.0 / _CREEP_CAP)
    w = 4.0 / 6.0 if dist == 1.0 else 1.0 / 6.0
    return w * f


@njit(nogil=True, cache=True, error_model="numpy")
def _send(k, first, last, height, bedrock, sediment, eroded, deposited, erodibility,
          talus_share, creep_share, row_excess):
    """Weather rows ``first .. last - 1`` and work out what each of their cells sends:
    ``talus_share`` (per unit of talus excess towards a neighbour) and ``creep_share``
    (scale of the creep flux). ``row_excess[r]``: the largest excess in row r. Rows are
    independent (a cell writes only itself), so row bands may run on several threads."""
    rows, cols = height.shape
    for r in range(first, last):
        r0 = max(r - 1, 0)
        r1 = min(r + 1, rows - 1)
        worst = 0.0
        for c in range(cols):
            c0 = max(c - 1, 0)
            c1 = min(c + 1, cols - 1)
            h = height[r, c]
            if k.weathering > 0.0:  # rock turns into soil in place; neighbours read height
                w = k.weathering * erodibility[r, c] * math.exp(-sediment[r, c] / k.soil_depth)
                transfer((np.int64(r), c), 0.0, w, w, None, bedrock, sediment, eroded, deposited)
            rmax = 0.0
            crit = _critical(k.rock, erodibility[r, c])
            for rr in range(r0, r1 + 1):
                for cc in range(c0, c1 + 1):
                    dist = _SQRT2 if (rr != r and cc != c) else 1.0
                    rmax = max(rmax, bedrock[r, c] - height[rr, cc] - crit * dist)
            if rmax > 0.0:
                worst = max(worst, rmax)
                loose = 0.5 * rmax * min(erodibility[r, c], 1.0)
                transfer((np.int64(r), c), 0.0, loose, loose, None, bedrock, sediment, eroded,
                         deposited)
            dmax = 0.0
            dsum = 0.0
            csum = 0.0
            for rr in range(r0, r1 + 1):
                for cc in range(c0, c1 + 1):
                    dist = _SQRT2 if (rr != r and cc != c) else 1.0
                    drop = h - height[rr, cc]  # 0 for the cell itself
                    d = max(drop - k.talus * dist, 0.0)
                    dmax = max(dmax, d)
                    dsum += d
                    if k.creep > 0.0 and drop > 0.0:
                        csum += k.creep * _creep_factor(drop, dist, k.talus) * drop
            s = sediment[r, c]
            if s > 1e-12:
                worst = max(worst, dmax)
            want_talus = min(s, k.settling * 0.5 * dmax)  # only loose material slides
            talus_share[r, c] = want_talus / dsum if dsum > 0.0 else 0.0
            # creep is transport-limited (soil-mantled slopes): the regolith it moves is
            # sediment first, then rock; hard rock (erodibility < 1) creeps slower
            creep_share[r, c] = min(erodibility[r, c], 1.0) if csum > 0.0 else 0.0
        row_excess[r] = worst


@njit(nogil=True, cache=True, error_model="numpy")
def _receive(k, first, last, height, bedrock, sediment, eroded, deposited, talus_share,
             creep_share, new_height):
    """Apply one sweep to rows ``first .. last - 1``: every cell loses what it sent and
    gains its share of what each higher neighbour sent. Reads ``height`` (state before
    the sweep) and the shares, writes its own cells only."""
    rows, cols = height.shape
    for r in range(first, last):
        r0 = max(r - 1, 0)
        r1 = min(r + 1, rows - 1)
        for c in range(cols):
            c0 = max(c - 1, 0)
            c1 = min(c + 1, cols - 1)
            h = height[r, c]
            gain = 0.0
            out = 0.0
            for rr in range(r0, r1 + 1):
                for cc in range(c0, c1 + 1):
                    dist = _SQRT2 if (rr != r and cc != c) else 1.0
                    up = height[rr, cc] - h  # > 0: neighbour above sends to us
                    if up > 0.0:
                        gain += talus_share[rr, cc] * max(up - k.talus * dist, 0.0)
                        if k.creep > 0.0:
                            gain += (creep_share[rr, cc] * k.creep
                                     * _creep_factor(up, dist, k.talus) * up)
                    elif up < 0.0:
                        out += talus_share[r, c] * max(-up - k.talus * dist, 0.0)
                        if k.creep > 0.0:
                            out += (creep_share[r, c] * k.creep
                                    * _creep_factor(-up, dist, k.talus) * -up)
            from_sed = min(out, sediment[r, c])  # creep beyond the soil takes rock
            # the new surface goes to the scratch: the neighbours still read ``height``
            transfer((np.int64(r), c), from_sed, out - from_sed, gain, new_height, bedrock,
                     sediment, eroded, deposited)


@njit(nogil=True, cache=True, error_model="numpy")
def _relax(k, order, height, bedrock, sediment, eroded, deposited, erodibility):
    """One relaxation sweep in descending height order (``order``: flat indices), each
    cell seeing its higher neighbours' updates, so a slide runs down a whole slope in
    one sweep: rock above the critical slope breaks loose, then loose material above
    the talus slope moves to the lower neighbours in proportion to their excess, as
    much as brings the steepest one to the talus slope (all of it where the rock alone
    is steeper than that: nothing rests there). Returns the largest amount
    loosened or moved by one cell (cell units): 0 once nothing is too steep."""
    rows, cols = height.shape
    hf, bf, sf = height.reshape(-1), bedrock.reshape(-1), sediment.reshape(-1)
    ef, df, kf = eroded.reshape(-1), deposited.reshape(-1), erodibility.reshape(-1)
    worst = 0.0
    nb = np.empty(8, dtype=np.int64)
    ex = np.empty(8)
    for j in range(order.size):
        i = order[j]
        r = i // cols
        c = i - r * cols
        h = hf[i]
        rmax = 0.0
        bare = 0.0  # > 0: the rock alone is above the talus slope, nothing can rest
        dmax = 0.0
        dsum = 0.0
        n = 0
        crit = _critical(k.rock, kf[i])
        for rr in range(max(r - 1, 0), min(r + 2, rows)):
            for cc in range(max(c - 1, 0), min(c + 2, cols)):
                if rr == r and cc == c:
                    continue
                m = rr * cols + cc
                dist = _SQRT2 if (rr != r and cc != c) else 1.0
                rmax = max(rmax, bf[i] - hf[m] - crit * dist)
                d = h - hf[m] - k.talus * dist
                bare = max(bare, bf[i] - hf[m] - k.talus * dist)
                if d > 0.0:
                    nb[n] = m
                    ex[n] = d
                    n += 1
                    dmax = max(dmax, d)
                    dsum += d
        if rmax > 0.0:  # the wedge above the critical plane breaks loose
            loose = rmax * min(kf[i], 1.0)
            worst = max(worst, loose)
            transfer(i, 0.0, loose, loose, hf, bf, sf, ef, df)  # the same surface
        if n == 0 or sf[i] <= 1e-12:
            continue
        # the amount that brings the steepest neighbour exactly to the talus slope
        want = sf[i] if bare > 0.0 else min(sf[i], dmax * dsum / (dsum + dmax))
        out = exchange(i, want, 0.0, hf, bf, sf, ef, df, kf)
        worst = max(worst, out)
        for q in range(n):
            put_at(nb[q], out * ex[q] / dsum, hf, bf, sf, df)
    return worst


def run_batch(terrain: Terrain, params: ThermalParams, seed: int, first: int, count: int,
              height: np.ndarray | None = None, cdf: np.ndarray | None = None) -> int:
    """Run ``count`` passes on ``terrain`` in place (``seed``, ``first`` and ``cdf`` are
    not needed: the passes are deterministic). ``height`` (bedrock + sediment) is kept
    in step when given. Returns the cell updates done (sweeps x cells)."""
    if height is None:
        height = terrain.height()
    first_sweep, substeps = _kernel_params(params, terrain.cell_size)
    creep_only = first_sweep._replace(weathering=0.0, settling=0.0)
    talus_share = np.empty_like(height)
    creep_share = np.empty_like(height)
    scratch = np.empty_like(height)
    row_excess = np.zeros(height.shape[0])
    sweeps = 0

    threads = parallel.threads()
    bands = parallel.bands(height.shape[0])

    def send(k: _Kernel, band: tuple[int, int]) -> None:
        _send(k, band[0], band[1], height, terrain.bedrock, terrain.sediment,
              terrain.eroded, terrain.deposited, terrain.erodibility, talus_share,
              creep_share, row_excess)

    def receive(k: _Kernel, band: tuple[int, int]) -> None:
        _receive(k, band[0], band[1], height, terrain.bedrock, terrain.sediment,
                 terrain.eroded, terrain.deposited, talus_share, creep_share, scratch)

    def sweep(k: _Kernel) -> float:
        parallel.run(bands, lambda band: send(k, band), count=threads)
        parallel.run(bands, lambda band: receive(k, band), count=threads)
        height[...] = scratch
        return float(row_excess.max())

    for _ in range(count):
        excess = sweep(first_sweep)
        sweeps += 1
        for _ in range(substeps - 1):
            sweep(creep_only)
            sweeps += 1
        if first_sweep.creep > 0.0 or first_sweep.weathering > 0.0:
            excess = math.inf  # creep and new soil may rest too steep: always relax
        for j in range(params.relax_sweeps):
            if excess <= TOLERANCE:
                break
            if j % RESORT_EVERY == 0:  # a sweep barely reorders the heights, and sorting
                # 512² cells cost more than the sweep (1.4 of 2.3 s a pass, every sweep)
                order = np.argsort(-height, axis=None, kind="stable")
            excess = _relax(first_sweep, order, height, terrain.bedrock, terrain.sediment,
                            terrain.eroded, terrain.deposited, terrain.erodibility)
            sweeps += 1
    return sweeps * height.size


def per_rain(params: ThermalParams, share: float) -> ThermalParams:
    """A pass's params when a round brings ``share`` x the reference rain per area:
    creep and weathering (rates per pass) scale with it; the angles are limits and
    hold after every pass whatever the rain."""
    if share == 1.0:
        return params
    return params.replace(creep=params.creep * share, weathering=params.weathering * share)


def advice(params: ThermalParams, cell_size: float) -> str | None:
    """A sentence when a pass cannot creep as much as asked on these cells."""
    creep = params.creep / (cell_size * cell_size)
    needed = math.ceil(creep / _CREEP_STABLE) if creep > 0 else 1
    if needed <= MAX_CREEP_SUBSTEPS:
        return None
    return (f"thermal: creep {params.creep:.3g} world units² a pass is meant for coarser "
            f"cells; on these {cell_size:.3g} cells a pass creeps "
            f"{100 * MAX_CREEP_SUBSTEPS / needed:.2g}% of it (lower creep for this grid, or "
            "scale the object up)")


# last of the processes that move ground, so every round ends with bounded slopes
PROCESS = Process(
    "thermal", ThermalParams, run_batch, "Thermal erosion and hillslopes",
    "rock weathers and steep rock slides; loose material rests at its angle of repose "
    "(docs/hillslopes.md)", order=50, stream=STREAM_ID,
    reads=("bedrock", "sediment", "erodibility"), per_rain=per_rain, advice=advice)
