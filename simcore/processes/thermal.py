"""Thermal erosion and hillslopes (docs/hillslopes.md, docs/references.md).

Seed 000 suggests "an abrasive force making sediment, which then cascades". We extend
that with the threshold-hillslope model of geomorphology, so that bedrock too gives
way when it is too steep. One *pass* over the whole grid does:

1. A parallel sweep, every cell updated from the state before it:

   * Weathering (soil production, Heimsath et al. 1997): bedrock turns into sediment
     in place, ``weathering * erodibility * exp(-sediment / soil_depth)`` per pass.
   * Landslides (threshold hillslopes, Burbank et al. 1996, Montgomery & Brandon
     2002): where bedrock rises above a neighbour by more than
     ``tan(rock_angle) * distance``, half the largest excess (times the erodibility,
     at most 1) breaks loose: bedrock turns into sediment in place.
   * Talus (Musgrave et al. 1989): loose material steeper than its angle of repose
     slides: the excess over ``tan(talus_angle) * distance`` against each of the 8
     neighbours is ``d``; the cell sends ``min(sediment, settling * max(d) / 2)`` to
     its lower neighbours in proportion to ``d``.

2. Soil creep (nonlinear hillslope diffusion, Roering et al. 1999): the surface flows
   to each lower row or column neighbour at ``creep * S / (1 - (S / S_c)^2)`` with S
   the slope towards it and S_c = tan(talus_angle) (the factor is capped at 4). Creep
   is transport-limited (soil-mantled slopes): it moves sediment first, then rock, and
   hard rock (erodibility < 1) creeps slower; what arrives is sediment. It is solved
   implicitly (backward Euler, the nonlinear factor taken from the heights before the
   step), split by axis as in alternating-direction schemes: half the step along the
   rows, the whole along the columns, half along the rows (Strang), each a tridiagonal
   solve per line of cells. The work is O(cells) a pass and the creep a pass does is
   the creep asked for, at any cell size (an explicit scheme needs a sub-step per
   ~0.03 cells² of creep: ~800 a pass at 1 m cells with creep 25 m²).

3. Relaxation sweeps, repeated until nothing is too steep (or ``relax_sweeps`` ran):
   landslides (the whole wedge above the critical plane) and talus slides, highest
   cell first so that a slide runs down a whole slope in one sweep, visiting only the
   cells next to one that moved (:func:`_relax_band`); what a cell on a talus slope
   receives it passes on in the same sweep (it can hold nothing), each cell taken at
   most once a sweep. The grid is cut into bands of ``RELAX_BAND_ROWS`` rows; the even
   bands relax together on the pooled threads, and each odd one as soon as the even
   bands on both sides of it have ended (the same result as all odd bands after all
   even ones, without waiting for the slowest even band). The sweeps stop when
   one moves no more than ``TOLERANCE`` (cell units) anywhere, i.e. loose material
   rests at its talus angle and rock at its critical angle to within a fraction of a
   degree.

   Multigrid: on one grid a slope that must flatten does so from its foot up, a cell a
   sweep (each cell drops against its lower neighbour before that one has dropped):
   O(L) sweeps over an L-cell slope. So before its sweeps a grid of at least
   ``MULTIGRID_CELLS`` cells relaxes a 2x-coarsened copy of itself (:func:`_coarsen`:
   block means of bedrock and sediment in the coarse cell units, so slopes and angles
   are the same), recursively down to about 32², where a slope is a few cells long;
   each coarse grid's change is carried back to the finer one mass-exactly
   (:func:`_prolong`), whose sweeps then fix what the coarse grid could not see. The
   long moves are made on the small grids.

Each cell's critical rock slope is worked out once a batch (:func:`_critical_grid`):
``tan(rock_angle)`` over its erodibility (at most 1; erodibility 0 never fails). On a
rock column (:mod:`simcore.rock`) whose layers have critical angles of their own
(``terrain.rock_now``, set by the Simulation for the batch), a cell in such a layer
takes that angle instead, steepened only by the erodibility map and the protect mask,
not again by the layer's own factor (its hardness is in its angle); the coarse grids of
the multigrid take each block's steepest critical slope. Weathering, loosening and creep
scale with the erodibility (the layer's factor included) in either case.

Angles are geometric, so the landforms they bound are the same at any resolution;
``weathering`` and ``soil_depth`` are world lengths per pass and ``creep`` world length
squared per pass, converted with the terrain's cell size. At a cell size of 1 a pass
is what it was before these became world units.

The result depends only on the input state and the number of passes: the same on 1 or
N threads (no step's outcome depends on how its rows, lines or bands are shared out);
the seed is not used. Edges are closed: nothing leaves the grid, so bedrock + sediment
is conserved exactly up to rounding, and ``terrain.outflow`` is not changed.

``run_batch`` runs ``count`` passes (``batch`` passes per round of a Simulation; in
its progress a pass counts as one particle) and returns the cell updates done.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..kernels import parallel, scratch
from ..kernels.primitives import (
    apply_change,
    copy_span,
    exchange,
    heap_pop,
    heap_push,
    put_at,
    transfer,
)
from ..params import Params, param
from ..process import Process, cell_pass
from ..terrain import Terrain

STREAM_ID = 4  # reserved RNG stream; the passes need no random numbers
PROCESS_NAME = "thermal"

_SQRT2 = math.sqrt(2.0)
#: the relaxation ends after a sweep that moved no more than this anywhere (cell units)
TOLERANCE = 0.005
#: relaxation counts a cell this little (cell units) above its talus or critical slope
#: as resting: a slide leaves its lower neighbour at the talus slope, and rounding alone
#: could otherwise pass crumbs to and fro for ever
SLACK = 1e-9
_CREEP_CAP = 4.0  # largest nonlinear creep factor 1 / (1 - (S/Sc)^2)
#: rows of a relaxation band: bands of one parity relax together on the pooled threads
#: (two bands of a parity are a band apart, so they never touch the same cell); the
#: bands do not depend on the thread count, so neither does the result
RELAX_BAND_ROWS = 16
#: relaxation first relaxes a 2x-coarsened copy of a grid of at least this many cells
#: (sides of 8 or more), recursively, so that long slopes settle on coarse grids first
MULTIGRID_CELLS = 64 * 64
#: the coarsest grid may sweep this many times ``relax_sweeps`` (it is small and
#: carries the longest moves)
COARSEST_SWEEPS = 4
_NONE = np.empty(0)  # no rock column's angles (_critical_grid)


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


class Kernel(NamedTuple):
    """Per-pass constants in cell units."""

    talus: float  # tan(talus angle)
    rock: float  # tan(rock angle); inf = no landslides
    weathering: float  # cell units per pass (0 in relaxation-only sweeps)
    soil_depth: float  # cell units
    settling: float
    creep: float  # cells^2 per pass (0 = off)


def _kernel_params(p: ThermalParams, cell: float) -> Kernel:
    """Cell-unit constants of a pass."""
    rock = math.tan(math.radians(p.rock_angle)) if p.rock_angle < 90.0 else math.inf
    return Kernel(math.tan(math.radians(p.talus_angle)), rock, p.weathering / cell,
                   p.soil_depth / cell, p.settling, p.creep / (cell * cell))


@njit(cache=True, error_model="numpy")
def _critical(rock, erodibility):
    """Critical rock slope (cell units per cell) of a cell: ``tan(rock_angle)`` divided
    by its erodibility (at most 1), so hard rock stands steeper and erodibility 0 never
    fails. A partially protected cell (the protect mask scales its erodibility) stands
    steeper in the same way, so repeated relaxation cannot wear it down to the bare
    critical slope of its unprotected neighbours."""
    e = min(erodibility, 1.0)
    return rock / e if e > 0.0 else math.inf


@njit(nogil=True, cache=True, error_model="numpy")
def _critical_grid(rock, first, last, erodibility, layer_critical, layer_factor, out):
    """Each cell's critical rock slope, cells ``first .. last - 1`` (flat arrays):
    :func:`_critical` of ``rock`` and its erodibility, except on a rock column
    (``layer_critical`` not empty) where its layer has an angle of its own (its
    tangent, inf for 90 degrees; NaN: none): that tangent divided by the erodibility
    without the layer's factor ``layer_factor`` (the map and the protect mask, at most
    1), so that the layer's own hardness is in its angle and not counted twice.
    Elementwise: any bands."""
    if layer_critical.size == 0:
        for i in range(first, last):
            out[i] = _critical(rock, erodibility[i])
        return
    for i in range(first, last):
        tan = layer_critical[i]
        if math.isnan(tan):
            out[i] = _critical(rock, erodibility[i])
        else:
            f = layer_factor[i]
            out[i] = _critical(tan, erodibility[i] / f if f > 0.0 else 0.0)


@njit(cache=True, error_model="numpy", inline="always")
def _conductance(creep, upper, lower, erodibility, talus):
    """Creep conductance between neighbours at heights ``upper`` >= ``lower`` (cell
    units): ``creep`` x S / (1 - (S/Sc)^2) / S (the factor capped), scaled by the upper
    cell's ``erodibility`` (at most 1: hard rock creeps slower), so that conductance x
    drop is the flux."""
    s = upper - lower
    ratio = s / talus if talus > 0.0 else 1.0
    return creep * min(erodibility, 1.0) / max(1.0 - ratio * ratio, 1.0 / _CREEP_CAP)


@njit(cache=True, error_model="numpy", inline="always")
def _send_scan(talus, crit, height, r, c, r0, r1, c0, c1, h, b):
    """The largest excess of bedrock ``b`` over its critical slope towards the
    neighbours ``r0 .. r1`` x ``c0 .. c1`` of cell (r, c) at height ``h``, and the
    largest and summed excess of ``h`` over the talus slope (0 for the cell itself)."""
    rmax = 0.0
    dmax = 0.0
    dsum = 0.0
    for rr in range(r0, r1 + 1):
        for cc in range(c0, c1 + 1):
            dist = _SQRT2 if (rr != r and cc != c) else 1.0
            hm = height[rr, cc]
            rmax = max(rmax, b - hm - crit * dist)
            d = max(h - hm - talus * dist, 0.0)
            dmax = max(dmax, d)
            dsum += d
    return rmax, dmax, dsum


@njit(nogil=True, cache=True, error_model="numpy")
def _send(k, first, last, height, bedrock, sediment, eroded, deposited, erodibility,
          critical, talus_share, row_excess):
    """Weather rows ``first .. last - 1``, loosen rock above its critical slope (each
    cell's in ``critical``: :func:`_critical_grid`) and work out what each of their
    cells sends down its talus: ``talus_share`` (per unit of talus excess towards a
    neighbour). ``row_excess[r]``: the largest excess in row r.
    Rows are independent (a cell writes only itself), so row bands may run on several
    threads."""
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
            # one scan of the neighbours for both tests: the loosening below keeps the
            # surface, and no cell's height is written in this sweep
            crit = critical[r, c]
            rmax, dmax, dsum = _send_scan(k.talus, crit, height, r, c, r0, r1, c0, c1, h,
                                          bedrock[r, c])
            if rmax > 0.0:
                worst = max(worst, rmax)
                loose = 0.5 * rmax * min(erodibility[r, c], 1.0)
                transfer((np.int64(r), c), 0.0, loose, loose, None, bedrock, sediment, eroded,
                         deposited)
            s = sediment[r, c]
            if s > 1e-12:
                worst = max(worst, dmax)
            want_talus = min(s, k.settling * 0.5 * dmax)  # only loose material slides
            talus_share[r, c] = want_talus / dsum if dsum > 0.0 else 0.0
        row_excess[r] = worst


@njit(cache=True, error_model="numpy", inline="always")
def _any_share(talus_share, r0, r1, c0, c1):
    """Whether a cell of rows ``r0 .. r1`` x columns ``c0 .. c1`` sends anything."""
    sends = False
    for rr in range(r0, r1 + 1):
        for cc in range(c0, c1 + 1):
            sends |= talus_share[rr, cc] != 0.0
    return sends


@njit(nogil=True, cache=True, error_model="numpy")
def _receive(k, first, last, height, bedrock, sediment, eroded, deposited, talus_share,
             new_height):
    """Apply the talus sweep to rows ``first .. last - 1``: every cell loses what it
    sent and gains its share of what each higher neighbour sent. Reads ``height``
    (state before the sweep) and the shares, writes its own cells only. A cell that
    neither sends nor has a neighbour that sends (most cells) only gets its new surface
    (its material changed by weathering and loosening alone; a record of -0.0 stays
    -0.0 there, which the full step would write as +0.0)."""
    rows, cols = height.shape
    for r in range(first, last):
        r0 = max(r - 1, 0)
        r1 = min(r + 1, rows - 1)
        for c in range(cols):
            c0 = max(c - 1, 0)
            c1 = min(c + 1, cols - 1)
            if r0 < r < r1 and c0 < c < c1:  # inside: a fixed three by three, no clamps
                sends = _any_share(talus_share, r - 1, r + 1, c - 1, c + 1)
            else:
                sends = _any_share(talus_share, r0, r1, c0, c1)
            if not sends:  # nothing moves here: what transfer() would write, unchanged
                new_height[r, c] = bedrock[r, c] + sediment[r, c]
                continue
            h = height[r, c]
            gain = 0.0
            out = 0.0
            for rr in range(r0, r1 + 1):
                for cc in range(c0, c1 + 1):
                    dist = _SQRT2 if (rr != r and cc != c) else 1.0
                    up = height[rr, cc] - h  # > 0: neighbour above sends to us
                    if up > 0.0:
                        gain += talus_share[rr, cc] * max(up - k.talus * dist, 0.0)
                    elif up < 0.0:
                        out += talus_share[r, c] * max(-up - k.talus * dist, 0.0)
            from_sed = min(out, sediment[r, c])  # out exceeds the soil by rounding only
            # the new surface goes to the scratch: the neighbours still read ``height``
            transfer((np.int64(r), c), from_sed, out - from_sed, gain, new_height, bedrock,
                     sediment, eroded, deposited)


@njit(cache=True, error_model="numpy", inline="always")
def _edge(creep, talus, a, b, ea, eb):
    """Creep conductance between cells of heights ``a`` and ``b`` (erodibilities
    ``ea``, ``eb``); the higher cell's erodibility counts."""
    if a >= b:
        return _conductance(creep, a, b, ea, talus)
    return _conductance(creep, b, a, eb, talus)


@njit(nogil=True, cache=True, error_model="numpy")
def _creep_rows(creep, talus, first, last, height, erodibility):
    """Implicit creep along rows ``first .. last - 1``, in place on ``height`` (cell
    units): backward Euler of the flux conductance x drop between row neighbours,
    conductances from the heights before the step, closed ends, so each row keeps its
    material (Thomas algorithm). ``creep``: cells² for this step. Rows are disjoint:
    bands may run on threads."""
    cols = height.shape[1]
    cp = np.empty(cols)
    for r in range(first, last):
        h = height[r]
        e = erodibility[r]
        # forward: (1 + L + R) x_c - L x_{c-1} - R x_{c+1} = h_c, d' kept in h
        left = 0.0
        prev_c = 0.0
        prev_d = 0.0
        for c in range(cols):
            right = _edge(creep, talus, h[c], h[c + 1], e[c], e[c + 1]) if c + 1 < cols else 0.0
            den = 1.0 + left + right - left * prev_c
            prev_c = right / den
            prev_d = (h[c] + left * prev_d) / den
            cp[c] = prev_c
            h[c] = prev_d
            left = right
        for c in range(cols - 2, -1, -1):  # back substitution
            h[c] += cp[c] * h[c + 1]


@njit(nogil=True, cache=True, error_model="numpy")
def _creep_columns(creep, talus, first, last, height, erodibility, cp, left):
    """Implicit creep along columns ``first .. last - 1`` (as :func:`_creep_rows`),
    swept a row at a time so that memory is read in order: ``cp`` (the grid's shape)
    and ``left`` (a row) are scratch. Columns are disjoint: bands may run on threads."""
    rows = height.shape[0]
    for c in range(first, last):
        left[c] = 0.0
    for r in range(rows):
        h = height[r]
        e = erodibility[r]
        for c in range(first, last):
            right = (_edge(creep, talus, h[c], height[r + 1, c], e[c], erodibility[r + 1, c])
                     if r + 1 < rows else 0.0)
            lft = left[c]
            above_c = cp[r - 1, c] if r > 0 else 0.0
            above_d = height[r - 1, c] if r > 0 else 0.0
            den = 1.0 + lft + right - lft * above_c
            cp[r, c] = right / den
            h[c] = (h[c] + lft * above_d) / den
            left[c] = right
    for r in range(rows - 2, -1, -1):  # back substitution
        for c in range(first, last):
            height[r, c] += cp[r, c] * height[r + 1, c]


@njit(nogil=True, cache=True, error_model="numpy")
def _apply_change(first, last, new_height, height, bedrock, sediment, eroded, deposited):
    """Write the surface ``new_height`` into rows ``first .. last - 1`` of the terrain:
    a cell that fell loses sediment first, then rock; one that rose gains sediment."""
    cols = height.shape[1]
    hf, nf = height.reshape(-1), new_height.reshape(-1)
    bf, sf = bedrock.reshape(-1), sediment.reshape(-1)
    ef, df = eroded.reshape(-1), deposited.reshape(-1)
    for i in range(first * cols, last * cols):
        apply_change(i, nf[i] - hf[i], hf, bf, sf, ef, df)


@njit(cache=True, error_model="numpy", inline="always")
def _mark(m, nowf, marks, at, count):
    """Mark cell ``m`` as moved in this sweep (once: ``nowf``), appending it to the
    band's list ``marks[at:]`` of ``count`` entries; returns the new count."""
    if not nowf[m]:
        nowf[m] = 1
        marks[at + count] = m
        count += 1
    return count


@njit(cache=True, error_model="numpy", inline="always")
def _queue_near(k, m, lo, hi, cols, rows, hf, bf, sf, cf, qf, stamp, keys, cells, top):
    """Push the cells next to ``m`` (and ``m``) that lie in flat range ``lo .. hi - 1``,
    were not looked at yet in this sweep (``qf`` below its ``stamp``) and would move now
    (:func:`_unstable`) on the band's heap (highest first), marking them ``stamp``; the
    others are marked ``stamp + 1`` (resting: not looked at again while the heap is
    filled, but a slide may still feed them); returns the heap's top."""
    r = m // cols
    c = m - r * cols
    for rr in range(max(r - 1, 0), min(r + 2, rows)):
        for cc in range(max(c - 1, 0), min(c + 2, cols)):
            i = rr * cols + cc
            if lo <= i < hi and qf[i] < stamp:  # not looked at yet in this sweep
                if _unstable(k, i, rows, cols, hf, bf, sf, cf):
                    qf[i] = stamp
                    top = heap_push(keys, cells, top, -hf[i], i)
                else:  # resting (nothing moves while the heap is filled): once is enough
                    qf[i] = stamp + 1
    return top


@njit(cache=True, error_model="numpy", inline="always")
def _unstable(k, i, rows, cols, hf, bf, sf, cf):
    """Whether relaxation would move cell ``i`` now: rock above its critical slope
    (``cf[i]``), or loose material above its talus slope."""
    r = i // cols
    c = i - r * cols
    crit = cf[i]
    loose = sf[i] > 1e-12
    for rr in range(max(r - 1, 0), min(r + 2, rows)):
        for cc in range(max(c - 1, 0), min(c + 2, cols)):
            m = rr * cols + cc
            dist = _SQRT2 if (rr != r and cc != c) else 1.0
            if (bf[i] - hf[m] - crit * dist > SLACK
                    or (loose and hf[i] - hf[m] - k.talus * dist > SLACK)):
                return True
    return False


@njit(cache=True, error_model="numpy", inline="always")
def _unstable_row(k, r, height, bedrock, sediment, critical, flags):
    """``flags[c]`` = :func:`_unstable` of cell (r, c) for every column but the first
    and last, for a row ``r`` inside the grid: the same tests of the same numbers, but
    every neighbour tested (no early return), so the loop runs on the vector units
    (3.5x faster than :func:`_unstable` cell by cell on a 2048² grid)."""
    cols = height.shape[1]
    up, mid, down = height[r - 1], height[r], height[r + 1]
    b, s, cr = bedrock[r], sediment[r], critical[r]
    talus = k.talus
    slope = talus * _SQRT2
    for c in range(1, cols - 1):
        crit = cr[c]
        diag = crit * _SQRT2
        rock = b[c]
        h = mid[c]
        loose = s[c] > 1e-12
        u = (rock - up[c - 1] - diag > SLACK) | (loose & (h - up[c - 1] - slope > SLACK))
        u |= (rock - up[c] - crit > SLACK) | (loose & (h - up[c] - talus > SLACK))
        u |= (rock - up[c + 1] - diag > SLACK) | (loose & (h - up[c + 1] - slope > SLACK))
        u |= (rock - mid[c - 1] - crit > SLACK) | (loose & (h - mid[c - 1] - talus > SLACK))
        u |= (rock - mid[c] - crit > SLACK) | (loose & (h - mid[c] - talus > SLACK))
        u |= (rock - mid[c + 1] - crit > SLACK) | (loose & (h - mid[c + 1] - talus > SLACK))
        u |= (rock - down[c - 1] - diag > SLACK) | (loose & (h - down[c - 1] - slope > SLACK))
        u |= (rock - down[c] - crit > SLACK) | (loose & (h - down[c] - talus > SLACK))
        u |= (rock - down[c + 1] - diag > SLACK) | (loose & (h - down[c + 1] - slope > SLACK))
        flags[c] = u


@njit(cache=True, error_model="numpy", inline="always")
def _headroom(k, m, rows, cols, hf):
    """How far cell ``m`` can rise before it is above its talus slope towards a
    neighbour (cell units, >= 0)."""
    r = m // cols
    c = m - r * cols
    room = math.inf
    for rr in range(max(r - 1, 0), min(r + 2, rows)):
        for cc in range(max(c - 1, 0), min(c + 2, cols)):
            if rr != r or cc != c:
                dist = _SQRT2 if (rr != r and cc != c) else 1.0
                room = min(room, k.talus * dist - (hf[m] - hf[rr * cols + cc]))
    return max(room, 0.0)


@njit(nogil=True, cache=True, error_model="numpy")
def _push_unstable(k, first, last, stamp, queued, height, bedrock, sediment, critical,
                   keys, cells):
    """Push every cell of rows ``first .. last - 1`` that would move now
    (:func:`_unstable`) on an empty heap (highest first), in order, marking it
    ``stamp``; returns the heap's top. (Its own function: inlined, its vector loop
    made the rest of :func:`_relax_band` slower.)"""
    rows, cols = height.shape
    hf, bf, sf = height.reshape(-1), bedrock.reshape(-1), sediment.reshape(-1)
    cf, qf = critical.reshape(-1), queued.reshape(-1)
    flags = np.zeros(cols, dtype=np.bool_)
    top = 0
    for r in range(first, last):
        inside = 0 < r < rows - 1
        if inside:
            _unstable_row(k, r, height, bedrock, sediment, critical, flags)
        for c in range(cols):
            i = r * cols + c
            if inside and 0 < c < cols - 1:
                unstable = flags[c]
            else:
                unstable = _unstable(k, i, rows, cols, hf, bf, sf, cf)
            if unstable:
                qf[i] = stamp
                top = heap_push(keys, cells, top, -hf[i], i)
    return top


@njit(nogil=True, cache=True, error_model="numpy")
def _relax_band(k, first, last, ylo, yhi, own, everything, odd, stamp, before, now, starts,
                counts, moved, queued, height, bedrock, sediment, eroded, deposited,
                erodibility, critical):
    """One relaxation sweep over rows ``first .. last - 1`` (band ``own``), highest cell
    first, each cell seeing its higher neighbours' updates, so a slide runs down a whole
    slope in one sweep: rock above the critical slope breaks loose, then loose material
    above the talus slope moves to the lower neighbours in proportion to their excess,
    as much as brings the steepest one to the talus slope (all of it where the rock
    alone is steeper than that: nothing rests there).

    Only cells that can move are visited (every cell when ``everything``): those next
    to a cell that moved in the previous sweep (the lists ``before[starts[b]:]`` of
    ``counts[0, b]`` cells of bands ``ylo .. yhi - 1``: this one and its neighbours) or,
    in an ``odd`` band, in this sweep (``now``, the other bands' lists, ``counts[1, b]``
    cells) and would move now, and every cell a slide feeds, taken in height order from a
    heap. A cell that moves is listed in ``now[starts[own]:]``, with the cells it feeds
    (``moved`` dedupes them). Writes the band's cells and the rows next to it. Returns
    the largest amount loosened or moved by one cell (cell units): 0 once nothing is
    too steep."""
    rows, cols = height.shape
    hf, bf, sf = height.reshape(-1), bedrock.reshape(-1), sediment.reshape(-1)
    ef, df, kf = eroded.reshape(-1), deposited.reshape(-1), erodibility.reshape(-1)
    cf, mf, qf = critical.reshape(-1), moved.reshape(-1), queued.reshape(-1)
    lo, hi = first * cols, last * cols
    keys = np.empty(hi - lo)
    cells = np.empty(hi - lo, dtype=np.int64)
    top = 0
    if everything:  # every cell that would move now
        top = _push_unstable(k, first, last, stamp, queued, height, bedrock, sediment,
                             critical, keys, cells)
    else:
        for y in range(ylo, yhi):
            for j in range(counts[0, y]):
                top = _queue_near(k, before[starts[y] + j], lo, hi, cols, rows, hf, bf, sf,
                                  cf, qf, stamp, keys, cells, top)
            if odd and y != own:
                for j in range(counts[1, y]):
                    top = _queue_near(k, now[starts[y] + j], lo, hi, cols, rows, hf, bf,
                                      sf, cf, qf, stamp, keys, cells, top)
    at = starts[own]
    count = 0
    worst = 0.0
    nb = np.empty(8, dtype=np.int64)
    ex = np.empty(8)
    while top > 0:
        # a cell is taken once a sweep (its stamp stays): what comes back to it, the next
        # sweep moves, so a sweep ends even where material could pass to and fro
        _, i, top = heap_pop(keys, cells, top)
        r = i // cols
        c = i - r * cols
        h = hf[i]
        rmax = 0.0
        bare = 0.0  # > 0: the rock alone is above the talus slope, nothing can rest
        dmax = 0.0
        dsum = 0.0
        n = 0
        steepest = i
        crit = cf[i]
        for rr in range(max(r - 1, 0), min(r + 2, rows)):
            for cc in range(max(c - 1, 0), min(c + 2, cols)):
                if rr == r and cc == c:
                    continue
                m = rr * cols + cc
                dist = _SQRT2 if (rr != r and cc != c) else 1.0
                rmax = max(rmax, bf[i] - hf[m] - crit * dist)
                d = h - hf[m] - k.talus * dist
                bare = max(bare, bf[i] - hf[m] - k.talus * dist)
                if d > SLACK:
                    nb[n] = m
                    ex[n] = d
                    n += 1
                    if d > dmax:
                        dmax = d
                        steepest = m
                    dsum += d
        if rmax > SLACK:  # the wedge above the critical plane breaks loose
            loose = rmax * min(kf[i], 1.0)
            worst = max(worst, loose)
            transfer(i, 0.0, loose, loose, hf, bf, sf, ef, df)  # the same surface
            count = _mark(i, mf, now, at, count)
        if n == 0 or sf[i] <= 1e-12:
            continue
        # the amount that brings the steepest neighbour exactly to the talus slope, where
        # that neighbour can hold its share; where it cannot (it lies on a talus slope
        # itself), it passes the rest on later in this sweep, and this cell comes to rest
        # at the talus slope above the height it can hold (but no lower than it: nothing
        # comes back up)
        if bare > 0.0:
            want = sf[i]
        else:
            share = dmax / dsum  # of what leaves, the steepest neighbour's part
            reach = _headroom(k, steepest, rows, cols, hf)
            want = min(sf[i], max(dmax / (1.0 + share),
                                  min(dmax - reach, (h - hf[steepest]) / (1.0 + share))))
        out = exchange(i, want, 0.0, hf, bf, sf, ef, df, kf)
        worst = max(worst, out)
        count = _mark(i, mf, now, at, count)
        for q in range(n):
            m = nb[q]
            put_at(m, out * ex[q] / dsum, hf, bf, sf, df)
            count = _mark(m, mf, now, at, count)
            if lo <= m < hi and qf[m] != stamp:  # it may be too steep now
                qf[m] = stamp
                top = heap_push(keys, cells, top, -hf[m], m)
    counts[1, own] = count
    return worst


@njit(nogil=True, cache=True, error_model="numpy")
def _relax_bands(k, ids, edges, everything, stamp, before, now, starts, counts, moved, queued,
                 height, bedrock, sediment, eroded, deposited, erodibility, critical):
    """:func:`_relax_band` for each band in ``ids`` (all even or all odd: they never
    touch the same cell), in turn; returns the largest amount moved."""
    bands = edges.size - 1
    worst = 0.0
    for b in ids:
        worst = max(worst, _relax_band(k, edges[b], edges[b + 1], max(b - 1, 0),
                                       min(b + 2, bands), b, everything, b % 2 == 1, stamp,
                                       before, now, starts, counts, moved, queued, height,
                                       bedrock, sediment, eroded, deposited, erodibility,
                                       critical))
    return worst


@njit(cache=True)
def _unmark(now, starts, counts, moved):
    """Clear ``moved`` for every cell listed in this sweep's lists."""
    mf = moved.reshape(-1)
    for b in range(starts.size):
        for j in range(counts[1, b]):
            mf[now[starts[b] + j]] = 0


@njit(nogil=True, cache=True, error_model="numpy")
def _coarsen(first, last, bedrock, sediment, erodibility, critical, cb, cs, ch, ck, cc):
    """Rows ``first .. last - 1`` of a 2x-coarsened copy: each coarse cell is the mean
    of a 2x2 block in the coarse cell units (half the fine ones, so slopes and angles
    are the same): ``cb`` bedrock, ``cs`` sediment, ``ch`` = cb + cs; ``ck`` the
    block's lowest erodibility and ``cc`` its steepest critical slope (a block with
    unbreakable rock never fails; without a rock column's angles that is
    :func:`_critical` of the lowest erodibility, as it was)."""
    cols = cb.shape[1]
    for y in range(first, last):
        r = 2 * y
        for x in range(cols):
            c = 2 * x
            b = 0.125 * ((bedrock[r, c] + bedrock[r, c + 1])
                         + (bedrock[r + 1, c] + bedrock[r + 1, c + 1]))
            s = 0.125 * ((sediment[r, c] + sediment[r, c + 1])
                         + (sediment[r + 1, c] + sediment[r + 1, c + 1]))
            cb[y, x] = b
            cs[y, x] = s
            ch[y, x] = b + s
            ck[y, x] = min(min(erodibility[r, c], erodibility[r, c + 1]),
                           min(erodibility[r + 1, c], erodibility[r + 1, c + 1]))
            cc[y, x] = max(max(critical[r, c], critical[r, c + 1]),
                           max(critical[r + 1, c], critical[r + 1, c + 1]))


@njit(cache=True, error_model="numpy", inline="always")
def _limited(lower, mid, upper, first, last):
    """Slope (per coarse cell) of a change ``mid`` between its neighbours' ``lower`` and
    ``upper`` (monotonized central limiter: the central slope, at most twice either
    one-sided one, 0 at an extremum, so the fine values stay between the neighbours');
    0 at a grid edge (``first``/``last``: no lower/upper neighbour): a one-sided slope
    there would carry the block's outer cells beyond its change, e.g. dig a trench
    along the map's edge under a block that did not change."""
    if first or last:
        return 0.0
    a = mid - lower
    b = upper - mid
    if a * b <= 0.0:
        return 0.0
    central = 0.5 * (a + b)
    if a > 0.0:
        return min(central, 2.0 * a, 2.0 * b)
    return max(central, 2.0 * a, 2.0 * b)


@njit(nogil=True, cache=True, error_model="numpy")
def _prolong(first, last, cb0, ch0, cb, ch, height, bedrock, sediment, eroded, deposited):
    """Carry the coarse relaxation of rows ``first .. last - 1`` (``cb0``/``ch0``
    before, ``cb``/``ch`` after, coarse units) to their 2x2 fine blocks, mass-exactly
    (fine units: twice the coarse ones). The rock a block loosened turns into sediment
    in place on its four cells alike. Its surface change is spread over its cells as a
    plane through the block's mean change, with the gradient of the coarse change
    limited so that it makes no new extremum (:func:`_limited`; a plane change comes back as that
    plane, so a coarse ramp is a fine ramp, not a staircase); the four changes sum to
    the block's. A rise is sediment; a fall takes sediment. Where a cell would fall by
    more than its sediment, the block moves by the same amount on each cell instead,
    the fall taken evenly from the cells that have sediment and the rest from those
    that have more (the block lost no more than its sediment), bedrock only for a
    rounding shortfall."""
    rows, cols = cb.shape
    change = np.empty(4)
    have = np.empty(4)
    for y in range(first, last):
        for x in range(cols):
            loose = 2.0 * (cb0[y, x] - cb[y, x])
            mean = ch[y, x] - ch0[y, x]
            up = ch[y - 1, x] - ch0[y - 1, x] if y > 0 else mean
            down = ch[y + 1, x] - ch0[y + 1, x] if y + 1 < rows else mean
            left = ch[y, x - 1] - ch0[y, x - 1] if x > 0 else mean
            right = ch[y, x + 1] - ch0[y, x + 1] if x + 1 < cols else mean
            if loose <= 0.0 and mean == 0.0 and up == 0.0 and down == 0.0 and left == 0.0 \
                    and right == 0.0:
                continue
            # slopes of the change per coarse cell, halved: fine centres are a quarter
            # of a coarse cell off the block's centre
            sy = 0.5 * _limited(up, mean, down, y == 0, y + 1 == rows)
            sx = 0.5 * _limited(left, mean, right, x == 0, x + 1 == cols)
            feasible = True
            for j in range(4):
                k = (2 * y + (j >> 1), 2 * x + (j & 1))
                if loose > 0.0:  # rock breaks loose: the same surface
                    transfer(k, 0.0, loose, loose, height, bedrock, sediment, eroded,
                             deposited)
                change[j] = 2.0 * (mean + sy * ((j >> 1) - 0.5) + sx * ((j & 1) - 0.5))
                have[j] = sediment[k]
                if -change[j] > have[j]:
                    feasible = False
            if feasible:
                for j in range(4):
                    k = (2 * y + (j >> 1), 2 * x + (j & 1))
                    if change[j] < 0.0:
                        transfer(k, -change[j], 0.0, 0.0, height, bedrock, sediment, eroded,
                                 deposited)
                    elif change[j] > 0.0:
                        transfer(k, 0.0, 0.0, change[j], height, bedrock, sediment, eroded,
                                 deposited)
                continue
            if mean >= 0.0:  # the same rise on each cell
                for j in range(4):
                    k = (2 * y + (j >> 1), 2 * x + (j & 1))
                    transfer(k, 0.0, 0.0, 2.0 * mean, height, bedrock, sediment, eroded,
                             deposited)
                continue
            # the same fall on each cell, taken where the sediment is: cells give
            # min(sediment, level), summing to the block's fall
            need = -8.0 * mean
            order = np.argsort(have)
            level = math.inf
            rest = need
            for n in range(4):
                s = have[order[n]]
                if s * (4 - n) >= rest:
                    level = rest / (4 - n)
                    break
                rest -= s
            short = 0.0 if level < math.inf else rest / 4.0  # rounding: from the rock
            for j in range(4):
                k = (2 * y + (j >> 1), 2 * x + (j & 1))
                transfer(k, min(have[j], level), short, 0.0, height, bedrock, sediment,
                         eroded, deposited)


def relax_bands(rows: int) -> np.ndarray:
    """Row edges of the relaxation bands (at least RELAX_BAND_ROWS rows each, or one
    band): independent of the threads."""
    bands = max(1, rows // RELAX_BAND_ROWS)
    return np.array([rows * b // bands for b in range(bands + 1)], dtype=np.int64)


def _sweep_tasks(count_bands: int, threads: int
                 ) -> tuple[list[np.ndarray], list[int], list[list[int]]]:
    """The tasks of a relaxation sweep over ``count_bands`` bands: runs of neighbouring
    bands of one parity, a few per thread (``tasks``: band ids). An even task needs
    nothing (``needs``: 0); an odd one the even tasks holding the bands on both sides
    of its own (``needs``: how many; ``frees[t]``: the odd tasks waiting for task t).
    Two bands of a parity are a band apart and an odd band starts only after the even
    bands next to it have ended, so no two tasks that run together touch the same cell
    and each band sees what it would see with all even bands before all odd ones."""
    runs = [[ids for ids in np.array_split(np.arange(p, count_bands, 2), 2 * threads)
             if ids.size] for p in (0, 1)]
    tasks = runs[0] + runs[1]
    holder = {int(b): t for t, ids in enumerate(runs[0]) for b in ids}
    needs = [0] * len(tasks)
    frees: list[list[int]] = [[] for _ in tasks]
    for t in range(len(runs[0]), len(tasks)):
        sides = {holder[int(b) + d] for b in tasks[t] for d in (-1, 1)
                 if 0 <= int(b) + d < count_bands}
        needs[t] = len(sides)
        for e in sorted(sides):
            frees[e].append(t)
    return tasks, needs, frees


class _Level:
    """One grid of the relaxation: its arrays (the terrain's, or a coarsened copy's)
    and the bookkeeping of its sweeps (bands, lists of moved cells, stamps).
    ``critical``: each cell's critical rock slope (:func:`_critical_grid`)."""

    def __init__(self, height: np.ndarray, bedrock: np.ndarray, sediment: np.ndarray,
                 eroded: np.ndarray, deposited: np.ndarray, erodibility: np.ndarray,
                 critical: np.ndarray) -> None:
        self.height, self.bedrock, self.sediment = height, bedrock, sediment
        self.eroded, self.deposited, self.erodibility = eroded, deposited, erodibility
        self.critical = critical
        rows, cols = height.shape
        if rows * cols >= 2**31:  # the lists are int32 (terrain.MAX_CELLS is 2**28)
            raise ValueError(f"a {rows}x{cols} grid is too large to relax; downsample it")
        self.edges = relax_bands(rows)
        # each band lists the cells that moved in a sweep (its rows and the next ones)
        starts = np.array([(e + 2 * b - 1) * cols for b, e in enumerate(self.edges[:-1])])
        starts[0] = 0
        self.starts = starts
        self.lists = [np.empty(self.edges[-1] * cols + 2 * len(starts) * cols,
                               dtype=np.int32) for _ in range(2)]
        self.counts = np.zeros((2, len(starts)), dtype=np.int64)  # [last sweep, this one]
        self.moved = np.zeros(height.shape, dtype=np.uint8)
        self.queued = np.zeros(height.shape, dtype=np.uint16)  # sweep marks (next_stamp)
        self.stamp = 0
        self.tasks, self.needs, self.frees = _sweep_tasks(len(starts), parallel.threads())
        self.coarse: _Level | None = None
        if rows * cols >= MULTIGRID_CELLS and min(rows, cols) >= 8:
            shape = (rows // 2, cols // 2)
            self.before = (np.empty(shape), np.empty(shape))  # coarse bedrock, height
            self.coarse = _Level(*(np.zeros(shape) for _ in range(7)))

    def rebind(self, height: np.ndarray, bedrock: np.ndarray, sediment: np.ndarray,
               eroded: np.ndarray, deposited: np.ndarray, erodibility: np.ndarray,
               critical: np.ndarray) -> None:
        """Relax these arrays (of this grid's shape) from now on: a kept grid's next
        batch. No level carries a sweep's lists over (``moved`` is clear after every
        sweep; the coarse grids are filled anew before they relax)."""
        self.height, self.bedrock, self.sediment = height, bedrock, sediment
        self.eroded, self.deposited, self.erodibility = eroded, deposited, erodibility
        self.critical = critical
        level: _Level | None = self
        while level is not None:
            level.counts[...] = 0
            level = level.coarse

    def next_stamp(self) -> int:
        self.stamp += 2  # a sweep marks ``stamp`` (queued) and ``stamp + 1`` (resting)
        if self.stamp + 1 > np.iinfo(self.queued.dtype).max:  # wrap: no old mark may match
            self.queued[...] = 0
            self.stamp = 1
        return self.stamp

    def next_sweep(self) -> None:
        _unmark(self.lists[1], self.starts, self.counts, self.moved)
        self.lists.reverse()  # this sweep's lists are the next one's "before"
        self.counts[0] = self.counts[1]
        self.counts[1] = 0

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (self.height, self.bedrock, self.sediment, self.eroded, self.deposited,
                self.erodibility, self.critical)

    def sweep(self, k: Kernel, everything: bool) -> float:
        """One relaxation sweep: the even bands together, each odd one as soon as the
        even bands on both sides of it have ended (:func:`_sweep_tasks`); returns the
        largest amount moved (cell units)."""
        worst = [0.0]
        stamp = self.next_stamp()
        waiting = list(self.needs)
        tasks = self.tasks

        def bands(task: int) -> float:
            return _relax_bands(k, tasks[task], self.edges, everything, stamp,
                                self.lists[0], self.lists[1], self.starts, self.counts,
                                self.moved, self.queued, *self.arrays())

        def then(task: int, moved_most: float) -> list[int]:
            worst[0] = max(worst[0], moved_most)
            ready = []
            for odd in self.frees[task]:
                waiting[odd] -= 1
                if waiting[odd] == 0:
                    ready.append(odd)
            return ready

        parallel.run([i for i, n in enumerate(self.needs) if n == 0], bands, then)
        self.next_sweep()
        return worst[0]

    def finish(self, k: Kernel) -> None:
        """The cells next to the last sweep's moves, all in one heap (on this thread):
        what the odd bands laid on the even ones' cells slides on, and none of it
        waits on a slope steeper than it can rest on."""
        rows = self.height.shape[0]
        _relax_band(k, 0, rows, 0, len(self.starts), 0, False, False, self.next_stamp(),
                    self.lists[0], self.lists[1], self.starts, self.counts, self.moved,
                    self.queued, *self.arrays())
        self.next_sweep()

    def relax(self, k: Kernel, most: int) -> int:
        """Relax this grid: first its coarse copy (recursively), carried back to it,
        then up to ``most`` sweeps here until one moves no more than TOLERANCE.
        Returns the sweeps done on this grid."""
        coarse = self.coarse
        if coarse is not None and most > 0:
            cb0, ch0 = self.before
            crow = parallel.bands(cb0.shape[0])
            parallel.run(crow, lambda b: _coarsen(b[0], b[1], self.bedrock, self.sediment,
                                                  self.erodibility, self.critical,
                                                  coarse.bedrock, coarse.sediment,
                                                  coarse.height, coarse.erodibility,
                                                  coarse.critical))
            cb0[...] = coarse.bedrock
            ch0[...] = coarse.height
            coarse.relax(k, most if coarse.coarse is not None else COARSEST_SWEEPS * most)
            parallel.run(crow, lambda b: _prolong(b[0], b[1], cb0, ch0, coarse.bedrock,
                                                  coarse.height, *self.arrays()[:5]))
        relaxed = 0
        excess = math.inf
        while relaxed < most and excess > TOLERANCE:
            # the first sweep visits every cell: creep, new soil and the coarse grids
            # moved them all
            excess = self.sweep(k, relaxed == 0)
            relaxed += 1
        if relaxed:
            self.finish(k)
        return relaxed


def run_batch(terrain: Terrain, params: ThermalParams, seed: int, first: int, count: int,
              height: np.ndarray | None = None, cdf: np.ndarray | None = None) -> int:
    """Run ``count`` passes on ``terrain`` in place (``seed``, ``first`` and ``cdf`` are
    not needed: the passes are deterministic). ``height`` (bedrock + sediment) is kept
    in step when given. Returns the cell updates done (sweeps x cells, a creep solve
    counting as one sweep)."""
    if height is None:
        height = terrain.height()
    k = _kernel_params(params, terrain.cell_size)
    t = terrain
    key = (height.shape, parallel.threads(), k.creep > 0.0)
    work = scratch.take(PROCESS_NAME, key)
    if work is None:
        work = _Scratch(height, t, k.creep > 0.0)
    else:
        work.grid.rebind(height, t.bedrock, t.sediment, t.eroded, t.deposited,
                         t.erodibility, work.critical)
    # each cell's critical slope, from its erodibility and its rock layer's angle (the
    # Simulation's ``rock_now``): neither changes during the batch
    layers = t.rock_now if t.rock_now is not None else (_NONE, _NONE)
    flat = (t.erodibility.reshape(-1), layers[0].reshape(-1),
            layers[1].reshape(-1), work.critical.reshape(-1))
    parallel.run(parallel.bands(height.size),
                 lambda b: _critical_grid(k.rock, b[0], b[1], *flat))
    sweeps = _run_passes(k, params, t, height, work, count)
    scratch.give(PROCESS_NAME, key, work)  # not after an error: it may be half-written
    return sweeps * height.size


class _Scratch:
    """What a batch of passes works in, kept for the next batch while a simulation
    runs (:mod:`simcore.kernels.scratch`): the sweep's and the creep's scratch grids, the
    critical slopes on a rock column (written at the start of each batch) and the
    relaxation's levels. Nothing left in them changes a result: the scratch grids are
    written before they are read; a level's lists are read only after the first sweep
    of a relaxation (which visits every cell) wrote them, its ``moved`` marks are clear
    after every sweep and its stamps only go up; the coarse grids are filled anew
    before they relax (their eroded/deposited records, which nothing reads, run on)."""

    def __init__(self, height: np.ndarray, t: Terrain, creep: bool) -> None:
        rows, cols = height.shape
        self.critical = np.empty_like(height)  # written at the start of each batch
        self.talus_share = np.empty_like(height)
        self.new_height = np.empty_like(height)
        self.row_excess = np.zeros(rows)
        # the column solve's scratch: the talus shares, whose sweep has ended by then
        self.columns = (self.talus_share, np.empty(cols)) if creep else None
        self.grid = _Level(height, t.bedrock, t.sediment, t.eroded, t.deposited,
                           t.erodibility, self.critical)


def _run_passes(k: Kernel, params: ThermalParams, t: Terrain, height: np.ndarray,
                work: _Scratch, count: int) -> int:
    """``count`` passes (:func:`run_batch`) in ``work``; returns the sweeps done."""
    rows, cols = height.shape
    talus_share, new_height, row_excess = work.talus_share, work.new_height, work.row_excess
    sweeps = 0
    row_bands = parallel.bands(rows)

    def copy(dst: np.ndarray, src: np.ndarray) -> None:
        """``dst[...] = src`` on the pooled threads (row bands of the flat grids)."""
        if not (dst.flags.c_contiguous and src.flags.c_contiguous):  # no flat views
            dst[...] = src
            return
        d, s = dst.reshape(-1), src.reshape(-1)
        parallel.run(row_bands, lambda b: copy_span(b[0] * cols, b[1] * cols, s, d))

    def talus_sweep() -> float:
        """Weathering, landslides and one talus sweep, all cells together."""
        parallel.run(row_bands, lambda b: _send(k, b[0], b[1], height, t.bedrock, t.sediment,
                                            t.eroded, t.deposited, t.erodibility,
                                            work.critical, talus_share, row_excess))
        parallel.run(row_bands, lambda b: _receive(k, b[0], b[1], height, t.bedrock, t.sediment,
                                               t.eroded, t.deposited, talus_share, new_height))
        copy(height, new_height)
        return float(row_excess.max())

    col_bands = parallel.bands(cols)
    col_scratch = work.columns

    def creep() -> None:
        """Implicit creep, split by axis (Strang): half the step along the rows, the
        whole along the columns, half along the rows, on ``new_height`` (right after
        :func:`talus_sweep`, which leaves it equal to ``height``); the terrain written
        once from the change."""
        assert col_scratch is not None
        cp, left = col_scratch

        def along_rows(c: float, b: tuple[int, int]) -> None:
            _creep_rows(c, k.talus, b[0], b[1], new_height, t.erodibility)

        def along_columns(c: float, b: tuple[int, int]) -> None:
            _creep_columns(c, k.talus, b[0], b[1], new_height, t.erodibility, cp, left)

        # ``new_height`` equals ``height`` here: the talus sweep just copied it over
        for rows_first, share in ((True, 0.5), (False, 1.0), (True, 0.5)):
            if rows_first:
                parallel.run(row_bands, functools.partial(along_rows, share * k.creep))
            else:
                parallel.run(col_bands, functools.partial(along_columns, share * k.creep))
        parallel.run(row_bands, lambda b: _apply_change(b[0], b[1], new_height, height,
                                                        t.bedrock, t.sediment, t.eroded,
                                                        t.deposited))

    grid = work.grid
    for _ in range(count):
        excess = talus_sweep()
        sweeps += 1
        if k.creep > 0.0:
            creep()
            sweeps += 1
        if k.creep > 0.0 or k.weathering > 0.0:
            excess = math.inf  # creep and new soil may rest too steep: always relax
        if excess > TOLERANCE:
            sweeps += grid.relax(k, params.relax_sweeps)
    return sweeps


def per_rain(params: ThermalParams, share: float) -> ThermalParams:
    """A pass's params when a round brings ``share`` x the reference rain per area:
    creep and weathering (rates per pass) scale with it; the angles are limits and
    hold after every pass whatever the rain."""
    if share == 1.0:
        return params
    return params.replace(creep=params.creep * share, weathering=params.weathering * share)


# last of the processes that move ground, so every round ends with bounded slopes
PROCESS = Process(
    PROCESS_NAME, ThermalParams, run_batch, "Thermal erosion and hillslopes",
    "rock weathers and steep rock slides; loose material rests at its angle of repose "
    "(docs/hillslopes.md)", order=50, stream=STREAM_ID,
    reads=("bedrock", "sediment", "erodibility"), per_rain=per_rain, bytes_per_cell=63,
    work=cell_pass, seconds_per_unit=3.6e-7)
