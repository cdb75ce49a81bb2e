"""Landscape evolution: uplift against river incision and hillslope transport, over
geological time (docs/landscape.md).

One *pass* is one time step of ``time_step`` years (the last one shortened so the
passes add up to ``age``):

1. Uplift: rock rises by ``uplift * uplift map * dt`` everywhere but at the outlets
   (the grid's edges: base level, fixed; with ``open_edges`` an edge sinks to its
   lowest inner neighbour, as if the land went on beyond the map).
2. Drainage (:mod:`simcore.algorithms.drainage`): D8 receivers, pits routed over the spill
   points of their basins, the stack and the drainage area (world units² x the rain
   map), so rivers cross closed basins.
3. River incision, stream power ``E = K A^m S^n`` (K scaled by the erodibility map),
   solved implicitly along the stack from the outlets up (Braun & Willett 2013; Newton
   iterations for n != 1), so any time step is stable. Cells under a lake (below their
   spill level) do not incise; a river entering a lake incises down to its surface.
4. Sediment (transport-length model of Davy & Lague 2009, as in Yuan et al. 2019):
   the material a river carries, ``Qs``, is passed downstream; a cell keeps
   ``G Qs / Q`` of it per unit of its area (Q: the water discharge, here the weighted
   drainage area), so rivers drop sediment where they slow on gentle, wide floors
   (fans, flat valley floors); lakes trap what enters them up to their spill level
   (deltas fill them from the shore). ``deposition = 0`` is pure stream power.
   After a batch, ``pool`` holds the lakes: every closed depression filled with water
   to its spill level; ``stream`` the rivers: channels draining more than 1 km².
5. Hillslope diffusion ``dh/dt = D lap(h)``, tridiagonal solves along the rows and
   the columns (no transposes), the grid's edges fixed. While ``D dt / dx²`` <= 1:
   Peaceman-Rachford ADI (second order, as fastscapelib). Beyond: SDIRK2 (two
   implicit stages, second order and L-stable) along x then y (the order alternating
   every pass). ADI is unconditionally stable but at long steps on fine cells leaves
   the shortest waves ringing (a checkerboard that hardly decays: 0.9 of it kept a
   step at 10); SDIRK2 damps them and stays second order for the longer ones.

The ground changes through the mass primitives: uplift through
:func:`kernels.uplift_at` (booked in ``uplifted``), erosion takes sediment first then
rock, deposits are sediment; what leaves at the outlets is ``terrain.outflow``. Every
part of a step is either serial or computed per cell (the diffusion per row and per
column), so the result is the same on any number of threads; the seed is not used.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numba import njit

from ..algorithms import drainage
from ..fields import Field
from ..kernels import parallel
from ..kernels.primitives import apply_change, uplift_at
from ..params import Params, param
from ..process import Process, age_passes, cell_pass, pass_years
from ..terrain import Terrain

STREAM_ID = 8  # reserved RNG stream; the passes need no random numbers
_NEWTON_TOL = 1e-10  # world units
_NEWTON_STEPS = 60


@dataclasses.dataclass(frozen=True)
class LandscapeParams(Params):
    """Landscape evolution parameters, physical units (m = world units, yr = years)."""

    age: float = param(1.0e6, 0.0, 1.0e9, "yr",
                       "years of evolution the run adds up to", soft_hi=1.0e7)
    time_step: float = param(1.0e4, 1.0, 1.0e7, "yr",
                             "years per pass (any step is stable; shorter is more exact)",
                             soft_hi=1.0e5)
    uplift: float = param(1.0e-3, 0.0, 0.1, "m/yr",
                          "rock uplift rate (x the uplift map); 1e-3 = 1 mm/yr, an active "
                          "range", soft_hi=0.01)
    k: float = param(1.0e-5, 0.0, 1.0, "m^(1-2m)/yr",
                     "stream power erodibility K in E = K A^m S^n (x the erodibility map)",
                     soft_hi=1.0e-3)
    m: float = param(0.45, 0.0, 2.0, "-", "drainage area exponent m")
    n: float = param(1.0, 0.5, 4.0, "-", "slope exponent n (1 = linear; m/n is the "
                     "concavity of river profiles)")
    diffusivity: float = param(0.01, 0.0, 100.0, "m^2/yr",
                               "hillslope diffusivity D: rounds ridges and hilltops",
                               soft_hi=1.0)
    head_area: float = param(1.0e5, 0.0, 1e9, "m^2",
                             "smallest drainage area the stream law sees: hollows smaller "
                             "than this incise like it, so finer cells do not steepen the "
                             "hilltops (the same land at any cell size)", soft_hi=1e5)
    deposition: float = param(1.0, 0.0, 100.0, "-",
                              "G of the transport-length model: how readily rivers drop "
                              "their load on gentle floors (0 = none)", soft_hi=10.0)
    open_edges: bool = param(False, doc="the land goes on beyond the map, no higher than "
                             "inside it: an edge cell sinks to its lowest inner neighbour "
                             "(no rim around worn land); off: the edges keep their heights "
                             "(fixed base level)")
    batch: int = param(10, 1, 100_000, "passes", "time steps per batch", soft_hi=200)


def steps(params: LandscapeParams) -> int:
    """Passes (time steps) the run takes to reach ``age``."""
    return age_passes(params.age, params.time_step)


def _step_years(params: LandscapeParams, k: int) -> float:
    """Length of pass ``k`` (0-based)."""
    return pass_years(params.age, params.time_step, k)


@njit(cache=True, nogil=True)
def _lifted(height, uplift, is_outlet, cell, rise, lift, h, h_start, lo, hi):
    """The flat cells ``lo .. hi-1`` after uplift: ``lift`` = ``rise`` x the uplift map
    (0 at the outlets), ``h`` and ``h_start`` the heights in world units plus it.
    Returns the sum of ``lift``."""
    total = 0.0
    for k in range(lo, hi):
        lift[k] = 0.0 if is_outlet[k] else rise * uplift[k]
        h[k] = height[k] * cell + lift[k]
        h_start[k] = h[k]
        total += lift[k]
    return total


@njit(cache=True, nogil=True)
def _stream_factor(erodibility, kdt, area, head_area, distance, m, n, level, h, is_outlet,
                   lake, factor, lo, hi):
    """For the flat cells ``lo .. hi-1``: ``lake`` 1 where the cell lies under its lake
    surface ``level``, and ``factor`` = K dt A^m / L^n (K = ``kdt`` x the erodibility
    map, A at least ``head_area``), 0 where a cell does not incise: outlets and cells
    under a lake."""
    for i in range(lo, hi):
        lake[i] = level[i] > h[i]
        if lake[i] or is_outlet[i]:
            factor[i] = 0.0
            continue
        a = max(area[i], head_area) ** m
        if n == 1.0:
            factor[i] = kdt * erodibility[i] * a / distance[i]
        else:
            factor[i] = kdt * erodibility[i] * a / distance[i] ** n


@njit(cache=True, nogil=True)
def _incise(h, level, lake, receiver, stack, factor, n):
    """Implicit stream power along the stack (outlets first): h is changed in place
    (world units); ``factor`` from :func:`_stream_factor`; ``level`` the lake surfaces
    before the step, ``lake`` 1 where a cell is under one."""
    for t in range(stack.size):
        i = stack[t]
        f = factor[i]
        if f <= 0.0:  # an outlet, a lake, no erodibility
            continue
        r = receiver[i]
        h0 = h[i]
        # a river entering a lake incises to its surface, else to its receiver's new
        # height (receivers come first in the stack)
        base = level[r] if lake[r] else h[r]
        if base >= h0:
            continue
        if n == 1.0:
            h[i] = (h0 + f * base) / (1.0 + f)
        else:  # Newton on x - h0 + f (x - base)^n = 0, base < x <= h0
            x = h0
            for _ in range(_NEWTON_STEPS):
                d = x - base
                g = x - h0 + f * d ** n
                dg = 1.0 + n * f * d ** (n - 1.0)
                nx = x - g / dg
                if nx <= base:
                    nx = base + 0.5 * (x - base)
                if abs(nx - x) <= _NEWTON_TOL:
                    x = nx
                    break
                x = nx
            h[i] = x


@njit(cache=True, nogil=True)
def _drop(before, after):
    """The sum of ``before - after`` (flat arrays), without a temporary array."""
    total = 0.0
    for k in range(before.size):
        total += before[k] - after[k]
    return total


@njit(cache=True, nogil=True)
def _deposit(h, h_before, level, lake, receiver, stack, discharge, cell_area, g,
             is_outlet):
    """Carry what each cell eroded this step downstream (sources first) and lay part
    of it down: a lake cell (``lake`` 1, never incised) keeps what fits below its spill
    level ``level``, any other cell
    ``G Qs / Q`` per unit area (transport-length model). Changes ``h`` in place;
    returns the volumes (world units³) that left through the outlets, settled on
    floors and filled lakes."""
    qs = np.zeros(h.size)
    out = 0.0
    floors = 0.0
    lakes = 0.0
    for t in range(stack.size - 1, -1, -1):
        i = stack[t]
        r = receiver[i]
        load = qs[i] + (h_before[i] - h[i]) * cell_area  # what arrives + eroded here
        if is_outlet[i] or r == i:
            out += load
            continue
        if load <= 0.0:
            qs[r] += load
            continue
        if lake[i]:  # fill it from the shore up to its spill level
            lay = min(load, (level[i] - h[i]) * cell_area)
            h[i] += lay / cell_area
            lakes += lay
            qs[r] += load - lay
            continue
        if g > 0.0:
            keep = g * cell_area / discharge[i]
            passed = load / (1.0 + keep)
            h[i] += (load - passed) / cell_area
            floors += load - passed
            qs[r] += passed
        else:
            qs[r] += load
    return out, floors, lakes


@njit(cache=True, nogil=True)
def _thomas(count, a):
    """Coefficients of the Thomas algorithm for ``count`` unknowns of
    (1 + 2a) x_j - a (x_{j-1} + x_{j+1}) = r_j: ``inv[j]`` the reciprocal of the
    eliminated diagonal, ``up[j]`` = -a inv[j] (the eliminated upper diagonal). One
    pair serves every row and column of the grid (the coefficients are constant)."""
    inv = np.empty(count)
    up = np.empty(count)
    b = 1.0 + 2.0 * a
    prev = 0.0
    for j in range(count):
        inv[j] = 1.0 / (b + a * prev)
        prev = -a * inv[j]
        up[j] = prev
    return inv, up


@njit(cache=True, nogil=True)
def _solve_rows(src, out, implicit, explicit, inv, up, lo, hi):
    """Rows ``lo .. hi-1`` (interior ones) of one diffusion half step: implicit along
    the row with weight ``implicit``, explicit across the rows with ``explicit``:
    (1 + 2 i) x_j - i (x_{j-1} + x_{j+1}) = s_j + e (s_up - 2 s_j + s_down), the first
    and last cell of a row fixed. Writes the interior of ``out``, which may be ``src``
    when ``explicit`` is 0. ``inv``, ``up``: :func:`_thomas` of (cols - 2, implicit)."""
    rows, cols = src.shape
    last = cols - 2
    for i in range(max(lo, 1), min(hi, rows - 1)):
        d = 0.0
        for j in range(1, cols - 1):
            rhs = src[i, j]
            if explicit != 0.0:
                rhs += explicit * (src[i - 1, j] - 2.0 * src[i, j] + src[i + 1, j])
            if j == 1:
                rhs += implicit * src[i, 0]
            if j == last:
                rhs += implicit * src[i, cols - 1]
            d = (rhs + implicit * d) * inv[j - 1]
            out[i, j] = d
        x = d
        for j in range(last - 1, 0, -1):
            x = out[i, j] - up[j - 1] * x
            out[i, j] = x


@njit(cache=True, nogil=True)
def _solve_cols(src, out, implicit, explicit, inv, up, lo, hi):
    """Columns ``lo .. hi-1`` (interior ones) of one diffusion half step: implicit along
    the column, explicit across the columns (as :func:`_solve_rows` transposed), the
    columns solved side by side row after row so memory is read in its order. Writes
    the interior of ``out``, which may be ``src`` when ``explicit`` is 0. ``inv``,
    ``up``: :func:`_thomas` of (rows - 2, implicit)."""
    rows, cols = src.shape
    last = rows - 2
    j0 = max(lo, 1)
    j1 = min(hi, cols - 1)
    for i in range(1, rows - 1):
        w = inv[i - 1]
        for j in range(j0, j1):
            rhs = src[i, j]
            if explicit != 0.0:
                rhs += explicit * (src[i, j - 1] - 2.0 * src[i, j] + src[i, j + 1])
            if i == 1:
                rhs += implicit * src[0, j]
            else:
                rhs += implicit * out[i - 1, j]
            if i == last:
                rhs += implicit * src[rows - 1, j]
            out[i, j] = rhs * w
    for i in range(last - 1, 0, -1):
        u = up[i - 1]
        for j in range(j0, j1):
            out[i, j] -= u * out[i + 1, j]


#: largest D dt / dx² diffused by Peaceman-Rachford ADI (second order, as fastscapelib);
#: a longer step is diffused by the L-stable SDIRK2 along x then y
ADI_MOST = 1.0
#: SDIRK2's diagonal, 1 - 1/sqrt(2): second order and L-stable (Alexander 1977)
_GAMMA = 1.0 - 1.0 / math.sqrt(2.0)


@njit(cache=True, nogil=True)
def _sdirk_rows(h, s, a, blend, inv, up, lo, hi):
    """SDIRK2 along the rows ``lo .. hi-1`` of ``h`` (in place), row by row: solve
    (1 - g a d²) y1 = h, then (1 - g a d²) h' = h + blend (y1 - h), with ``inv``,
    ``up`` from :func:`_thomas` of (cols - 2, g a); ``s`` is scratch holding the
    grid's edges."""
    rows, cols = h.shape
    for i in range(max(lo, 1), min(hi, rows - 1)):
        _solve_rows(h, s, a, 0.0, inv, up, i, i + 1)
        for j in range(1, cols - 1):
            s[i, j] = h[i, j] + blend * (s[i, j] - h[i, j])
        _solve_rows(s, h, a, 0.0, inv, up, i, i + 1)


@njit(cache=True, nogil=True)
def _sdirk_cols(h, s, a, blend, inv, up, lo, hi):
    """:func:`_sdirk_rows` along the columns ``lo .. hi-1``."""
    rows, cols = h.shape
    _solve_cols(h, s, a, 0.0, inv, up, lo, hi)
    for i in range(1, rows - 1):
        for j in range(max(lo, 1), min(hi, cols - 1)):
            s[i, j] = h[i, j] + blend * (s[i, j] - h[i, j])
    _solve_cols(s, h, a, 0.0, inv, up, lo, hi)


def _diffuse(h: np.ndarray, alpha: float, rows_first: bool = True,
             scratch: np.ndarray | None = None) -> None:
    """Diffusion over one step of ``alpha`` = D dt / dx² on ``h`` (2-D, world units,
    in place), the grid's edges fixed: one Peaceman-Rachford ADI step (implicit along
    the rows and explicit across them, then the other way round) up to ADI_MOST, else
    SDIRK2 along the rows and along the columns (the rows first with ``rows_first``).
    Bands of rows, then of columns, run on the pooled threads. ``scratch``: an array
    of h's shape to use (any contents), else one is made."""
    rows, cols = h.shape
    if alpha <= 0.0 or min(rows, cols) < 3:
        return
    scratch = np.empty_like(h) if scratch is None else scratch
    scratch[0] = h[0]
    scratch[-1] = h[-1]
    scratch[:, 0] = h[:, 0]
    scratch[:, -1] = h[:, -1]
    if alpha <= ADI_MOST:
        half = 0.5 * alpha
        inv, up = _thomas(cols - 2, half)
        parallel.run(parallel.bands(rows), lambda b: _solve_rows(
            h, scratch, half, half, inv, up, b[0], b[1]))
        inv, up = _thomas(rows - 2, half)
        parallel.run(parallel.bands(cols), lambda b: _solve_cols(
            scratch, h, half, half, inv, up, b[0], b[1]))
        return
    a = _GAMMA * alpha
    blend = (1.0 - _GAMMA) / _GAMMA
    inv_r, up_r = _thomas(cols - 2, a)
    inv_c, up_c = _thomas(rows - 2, a)
    for sweep in ((0, 1) if rows_first else (1, 0)):
        if sweep == 0:
            parallel.run(parallel.bands(rows), lambda b: _sdirk_rows(
                h, scratch, a, blend, inv_r, up_r, b[0], b[1]))
        else:
            parallel.run(parallel.bands(cols), lambda b: _sdirk_cols(
                h, scratch, a, blend, inv_c, up_c, b[0], b[1]))


@njit(cache=True, nogil=True)
def _apply(h_new, h_start, lift, cell, height, bedrock, sediment, eroded, deposited,
           uplifted, lo, hi):
    """Write one step into the flat cells ``lo .. hi-1`` of the terrain (cell units)
    through the primitives: uplift, then the net change (erosion takes sediment first,
    deposits are sediment). Returns the sum of the change of ``height``."""
    total = 0.0
    for k in range(lo, hi):
        before = height[k]
        if lift[k] != 0.0:
            uplift_at(k, lift[k] / cell, height, bedrock, uplifted)
        apply_change(k, (h_new[k] - h_start[k]) / cell, height, bedrock, sediment, eroded,
                     deposited)
        total += height[k] - before
    return total


def _lower_edges(h: np.ndarray, edge: np.ndarray) -> None:
    """Open edges: every edge cell of ``h`` (2-D, in place) sinks to its lowest inner
    (non-edge) neighbour when it stands higher."""
    rows, cols = h.shape
    inner = np.full((rows + 2, cols + 2), np.inf)
    inner[1:rows + 1, 1:cols + 1] = np.where(edge, np.inf, h)
    low = np.full((rows, cols), np.inf)
    for dr in (0, 1, 2):
        for dc in (0, 1, 2):
            low = np.minimum(low, inner[dr:dr + rows, dc:dc + cols])
    np.minimum(h, low, out=h, where=edge)


def evolve(terrain: Terrain, params: LandscapeParams, years: float, height: np.ndarray,
           rows_first: bool = True, work: dict | None = None) -> dict[str, float]:
    """One time step of ``years`` on ``terrain`` in place (``height`` kept as bedrock +
    sediment, cell units). Returns the step's books in cell units x cells: ``uplift``
    (rock raised), ``incised`` (what the rivers cut), ``floors`` and ``lakes`` (what
    they laid on valley floors and in lakes), ``rivers_out`` (what they carried out at
    the outlets), ``hillslopes_out`` (what diffusion carried across the edges) and
    ``edges_out`` (what open edges lost sinking to the land inside); the terrain's
    ``outflow`` grows by the last three. ``work``, a dict kept across the steps of a
    batch, lends the step's arrays (fresh ones each step would be fresh memory mapped,
    a third of the time of a step at 2048²)."""
    work = {} if work is None else work
    cell = terrain.cell_size
    shape = terrain.shape
    outlet = drainage.edge_outlets(shape)
    is_outlet = outlet.reshape(-1)
    lift = drainage.buffer(work, "lift", height.size)
    h = drainage.buffer(work, "h", height.size)  # world units, after uplift
    h_start = drainage.buffer(work, "h_start", height.size)
    # this pass and _apply are bound by memory: serial (threads gain little and wait
    # for each other when another program holds a core)
    lifted = _lifted(height.reshape(-1), terrain.uplift.reshape(-1), is_outlet, cell,
                     params.uplift * years, lift, h, h_start, 0, h.size)
    flow = drainage.route(h.reshape(shape), cell, outlet=outlet, weight=terrain.rain,
                          work=work)
    level = flow.level.reshape(-1)
    lake = drainage.buffer(work, "lake", h.size, np.uint8)
    factor = drainage.buffer(work, "factor", h.size)
    erodibility, area = terrain.erodibility.reshape(-1), flow.area.reshape(-1)
    parallel.run(parallel.bands(h.size), lambda b: _stream_factor(
        erodibility, params.k * years, area, params.head_area, flow.distance, params.m,
        params.n, level, h, is_outlet, lake, factor, b[0], b[1]))
    _incise(h, level, lake, flow.receiver, flow.stack, factor, params.n)
    cut = _drop(h_start, h) * cell * cell  # what the rivers cut, world units³
    if params.deposition > 0.0 or lake.any():
        out, floors, lakes = _deposit(h, h_start, level, lake, flow.receiver, flow.stack,
                                      flow.area.reshape(-1), cell * cell,
                                      params.deposition, is_outlet)
    else:  # no floor keeps anything and no lake traps it: all of it leaves
        out, floors, lakes = cut, 0.0, 0.0
    before_diffusion = float(h.sum())
    _diffuse(h.reshape(shape), params.diffusivity * years / (cell * cell), rows_first,
             drainage.buffer(work, "scratch", shape))
    before_edges = after = float(h.sum())
    if params.open_edges:
        _lower_edges(h.reshape(shape), outlet.astype(bool))
        after = float(h.sum())
    vol = cell ** 3  # world units³ of one cell unit x cell
    books = {"uplift": lifted / cell, "incised": cut / vol,
             "floors": floors / vol, "lakes": lakes / vol, "rivers_out": out / vol,
             "hillslopes_out": (before_diffusion - before_edges) / cell,
             "edges_out": (before_edges - after) / cell}
    # the edges never change (base level): what reached them left the grid; the outflow
    # is booked from the totals, so the budget closes to rounding
    change = _apply(h, h_start, lift, cell, height.reshape(-1), terrain.bedrock.reshape(-1),
                    terrain.sediment.reshape(-1), terrain.eroded.reshape(-1),
                    terrain.deposited.reshape(-1), terrain.uplifted.reshape(-1), 0, h.size)
    terrain.outflow += books["uplift"] - change
    return books


def run_batch(terrain: Terrain, params: LandscapeParams, seed: int, first: int, count: int,
              height: np.ndarray, cdf: np.ndarray | None = None) -> int:
    """Passes ``first .. first+count-1`` (time steps); passes past ``age`` do nothing.
    Returns the cell updates done."""
    del seed, cdf  # deterministic, no rain sampling
    total = steps(params)
    done = 0
    work: dict = {}  # the steps' arrays, for this batch only
    for k in range(first, min(first + count, total)):
        evolve(terrain, params, _step_years(params, k), height, rows_first=k % 2 == 0,
               work=work)
        done += height.size
    if done:
        _show_water(terrain, height, work)
    return done


#: drainage area (world units²) where the rivers shown start: ``stream`` 0.25 there (the
#: rivers export's threshold), +0.25 for every tenfold area, 1 from 1000x
RIVER_HEAD_AREA = 1.0e6


def _show_water(terrain: Terrain, height: np.ndarray, work: dict | None = None) -> None:
    """Lakes and rivers of the evolved land: ``pool`` fills every closed depression to
    its spill level; ``stream`` marks the channels draining more than RIVER_HEAD_AREA
    (0.25 there, rising with the log of the area), so the layers, the rivers curve and
    the lakes mesh show them. ``work``: the batch's arrays, lent to the routing."""
    cell = terrain.cell_size
    flow = drainage.route(height * cell, cell, weight=terrain.rain, work=work)
    terrain.pool[...] = flow.lake_depth / cell
    river = np.log10(np.maximum(flow.area, 1e-300) / RIVER_HEAD_AREA)
    terrain.stream[...] = np.where(flow.area >= RIVER_HEAD_AREA,
                                   np.clip(0.25 + 0.25 * river, 0.0, 1.0), 0.0)


def advice(params: LandscapeParams, cell_size: float) -> str | None:
    """A sentence when the cells are far smaller than the landscapes the parameters
    (metres and years) are meant for: on a Blender grid a few units wide the rivers
    drain areas of square metres and barely cut."""
    if cell_size >= 1.0:
        return None
    return (f"landscape: uplift, k and head_area are in metres and years, meant for land "
            f"kilometres across; on these {cell_size:.3g} m cells rivers drain tiny areas "
            "and barely cut (scale the object to its real size, e.g. 30 m a cell)")


FIELDS = (
    Field("uplift", "factor", "relative rock uplift rate (x the landscape's uplift)",
          default=1.0, lo=0.0, hi=100.0, input=True, refine="map"),
    Field("uplifted", "length", "rock raised by tectonic uplift here so far", lo=0.0,
          exact="te_uplifted", source=True, refine="amount"),
)

# first in a round: the large-scale valleys, then particles add the detail
PROCESS = Process(
    "landscape", LandscapeParams, run_batch, "Landscape evolution",
    "uplift against river incision and hillslope diffusion over geological time: "
    "trunk valleys, tributaries, drained basins, lakes and fans (docs/landscape.md)",
    order=5, stream=STREAM_ID,
    reads=("bedrock", "sediment", "erodibility", "rain", "uplift"),
    writes=("bedrock", "sediment", "eroded", "deposited", "uplifted", "pool", "stream"),
    fields=FIELDS, passes=steps, advice=advice, moves_water=True, bytes_per_cell=92,
    # D dt / dx² <= 1 takes ADI, beyond SDIRK2: the warm-up compiles both
    warmup=({"diffusivity": 1e-5},),
    reach="map", levels="coarse",
    work=cell_pass, seconds_per_unit=2.0e-7)
