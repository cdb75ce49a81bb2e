"""Snow: snowfall above a snow line, melt below it, wind drift and avalanches
(docs/snow.md).

Snow lies *on* the ground (bedrock + sediment) in the array ``snow`` (depth of snow,
cell units like every length); it never changes the ground. One *pass* is
``time_step`` years (the last one shortened so the passes add up to ``years``):

1. **Balance** (degree-day style, Hock 2003). At altitude z (m; the ground in world
   units) snow falls at ``P(z) = snowfall + snowfall_gradient (z - line) / 100``,
   clamped to 0 .. ``max_snowfall`` (m of snow a year), and melts at
   ``M(z) = P_line + melt_gradient (line - z) / 100`` (>= 0), ``P_line`` the fall at
   the line: so at the snow line the year's fall and melt balance, above it snow
   builds up, below it melts away. On sun-facing slopes melt is
   ``1 + aspect * e`` times more, ``e = sin(slope) cos(facing - sun)`` where it is
   positive (the sun's extra beam on the slope); shaded slopes melt as flat ground.
   The pass lays ``P dt`` on every cell, then melts ``min(snow, M dt)``: melt never
   takes more than the snow there. The line is ``snow_line`` metres, or with
   ``relative_line`` the ground's lowest point plus ``snow_line_fraction`` of its
   relief (at 1 the line is the summit: no snow lies).
2. **Wind drift** (scour of exposed cells, loading of sheltered ones: Liston et al.
   2007, Lehning et al. 2008, Blöschl 1999). Each cell's *exposure* is the bend of the
   ground around it at ``drift_length`` (the mean over 4 directions of
   ``(z - (z_a + z_b) / 2) / d`` for the cells a and b at that distance on either
   side, ``d`` their distance), divided by ``BEND`` and clamped to -1 .. 1: ridges and
   knolls near 1, hollows near -1. A cell of positive exposure ``x`` loses
   ``(1 - exp(-wind_exposure dt)) x`` of its snow (at most ``MOST_BLOWN``) to its
   neighbours of lower exposure, in proportion to how much lower. Nothing crosses the
   grid's edge: the drift conserves the snow exactly (to rounding). Computed from the
   state before the drift in row bands, each cell writing only itself.
3. **Avalanches** (gravitational redistribution as in SnowSlide, Bernhardt & Schulz
   2010; the talus idea of Musgrave et al. 1989). Where the snow surface (ground +
   snow) stands above a lower neighbour by more than ``tan(repose_angle) x distance``,
   snow slides. A sweep visits the cells highest snow surface first (as it stood
   before the first sweep); a cell keeps what rests at the repose slope above the
   lowest of its lower neighbours and spreads the rest over them by water-filling (the
   ones furthest below get the most, none is raised above the level the others reach),
   so a slide runs down a whole slope in one sweep. Sweeps repeat (at most
   ``AVALANCHE_SWEEPS`` + 2 (rows + cols)) until none moves more than ``TOLERANCE`` at
   a cell. Only snow moves, never ground: on ground steeper than the repose angle a
   cell keeps at most what its lower neighbours' snow holds up at that angle, so a
   bare steep face keeps none. Beyond the grid's edge the ground goes on at the edge
   cell's slope (its inner neighbour mirrored) under as much snow: where that ground
   is steeper than repose the edge cell's snow slides off the grid (its share as by
   the excesses), the pass's ``out``. Serial sweeps in a fixed order: the same on any
   number of threads.

Melt comes before the drift and the avalanches: they move only snow that outlasted
the year's balance, so a snow line above the summits is an exact no-op (nothing lies)
and snow slid below the line shows until the next pass melts it.

Per pass (:func:`snow_pass`) the books close to rounding:
``fallen = depth change + melted + out`` (cell units x cells). The ground's mass and
``terrain.outflow`` (which counts ground) are not touched; the seed is not used.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numba import njit

from ..fields import Field
from ..kernels import parallel
from ..params import Params, param
from ..process import Process, age_passes, cell_pass, pass_years
from ..terrain import Terrain

STREAM_ID = 10  # reserved RNG stream; the passes need no random numbers
PROCESS_NAME = "snow"

_SQRT2 = math.sqrt(2.0)
#: a bend (height over distance, dimensionless) of this much counts as fully exposed
#: (or, negative, fully sheltered) to the wind
BEND = 0.1
#: the most of its snow a cell may lose to the wind in one pass
MOST_BLOWN = 0.999
#: most avalanche sweeps a pass makes, plus 2 a row and a column of the grid (it stops
#: once nothing moves: 10-40 sweeps a pass on mountains; snow draining through a gap
#: in a rim relaxes a cell further from it each sweep)
AVALANCHE_SWEEPS = 64
#: an avalanche sweep in which no cell gave more than this (cell units) is the last
TOLERANCE = 1e-9
#: snow this little (cell units) above its repose slope counts as resting
SLACK = 1e-12


@dataclasses.dataclass(frozen=True)
class SnowParams(Params):
    """Snow parameters, physical units (m = world units, yr = years). Snow depths are
    depths of lying snow (not water equivalent)."""

    years: float = param(50.0, 0.0, 1.0e6, "yr",
                         "years of snow climate the run adds up to", soft_hi=1000.0)
    time_step: float = param(1.0, 0.01, 1000.0, "yr",
                             "years per pass (1 = a pass a year)", soft_hi=10.0)
    relative_line: bool = param(True, doc="place the snow line by the ground's relief "
                                "(snow_line_fraction); off: at snow_line metres")
    snow_line_fraction: float = param(0.5, 0.0, 1.0, "-",
                                      "with relative_line: the snow line's height above "
                                      "the lowest ground as a fraction of the relief "
                                      "(1 = the summit: no snow lies)")
    snow_line: float = param(2500.0, -1.0e4, 1.0e5, "m",
                             "without relative_line: altitude (world units) where the "
                             "year's snowfall and melt balance; above the summits no "
                             "snow lies", soft_hi=9000.0)
    snowfall: float = param(1.0, 0.0, 20.0, "m/yr",
                            "snow that falls in a year at the snow line", soft_hi=5.0)
    snowfall_gradient: float = param(0.1, 0.0, 10.0, "m/yr per 100 m",
                                     "more snowfall for every 100 m above the line (less "
                                     "below it)", soft_hi=1.0)
    max_snowfall: float = param(3.0, 0.0, 50.0, "m/yr",
                                "the most snow that falls in a year anywhere", soft_hi=10.0)
    melt_gradient: float = param(0.5, 0.0, 20.0, "m/yr per 100 m",
                                 "more melt for every 100 m below the line (less above "
                                 "it; degree-day melt with a lapse rate)", soft_hi=5.0)
    aspect: float = param(0.5, 0.0, 1.0, "-",
                          "how much more sun-facing slopes melt: melt x (1 + aspect x "
                          "sin(slope) cos(facing - sun))")
    sun_azimuth: float = param(180.0, 0.0, 360.0, "deg",
                               "direction of the sun, clockwise from +y (rows grow "
                               "towards +y): 180 = -y, the south of a map whose +y is "
                               "north, for the northern hemisphere")
    wind_exposure: float = param(0.5, 0.0, 1.0, "1/yr",
                                 "rate at which exposed cells (ridges, knolls) lose snow "
                                 "to sheltered ones (hollows); 0 = no drift")
    drift_length: float = param(100.0, 0.0, 1.0e5, "m",
                                "distance over which the wind sees the ground's shape "
                                "(at least a cell)", soft_hi=1000.0)
    repose_angle: float = param(38.0, 25.0, 60.0, "deg",
                                "angle of repose of snow: steeper snow avalanches")
    batch: int = param(10, 1, 100_000, "passes", "passes (time steps) per batch",
                       soft_hi=200)


def steps(params: SnowParams) -> int:
    """Passes the run takes to reach ``years``."""
    return age_passes(params.years, params.time_step)


def _step_years(params: SnowParams, k: int) -> float:
    """Length of pass ``k`` (0-based)."""
    return pass_years(params.years, params.time_step, k)


def snow_line(params: SnowParams, height: np.ndarray, cell_size: float) -> float:
    """The snow line's altitude (world units) over the ground ``height`` (cell units):
    ``snow_line``, or with ``relative_line`` the lowest ground plus
    ``snow_line_fraction`` of the relief."""
    if not params.relative_line:
        return float(params.snow_line)
    lo = float(height.min()) * cell_size
    hi = float(height.max()) * cell_size
    return lo + params.snow_line_fraction * (hi - lo)


def above_summits(params: SnowParams, height: np.ndarray, cell_size: float) -> bool:
    """True when the snow line lies at or above the highest ground: then no snow lies
    after a pass (a no-op, whatever the other parameters)."""
    return snow_line(params, height, cell_size) >= float(height.max()) * cell_size


@njit(cache=True, nogil=True)
def _balance(height, snow, cell, line, p0, pgrad, pmax, mgrad, aspect, sun_x, sun_y, dt,
             fell, melted, lo, hi):
    """Snowfall and melt of one pass of ``dt`` years on rows ``lo .. hi-1`` (in place on
    ``snow``, cell units); ``fell[r]``, ``melted[r]`` the row's totals. Each cell
    writes only itself."""
    rows, cols = height.shape
    p_line = min(p0, pmax)
    for r in range(lo, hi):
        r0 = max(r - 1, 0)
        r1 = min(r + 1, rows - 1)
        f_row = 0.0
        m_row = 0.0
        for c in range(cols):
            z = height[r, c] * cell
            fall = min(max(p0 + pgrad * (z - line) / 100.0, 0.0), pmax)
            melt = max(p_line + mgrad * (line - z) / 100.0, 0.0)
            if aspect > 0.0 and melt > 0.0:
                c0 = max(c - 1, 0)
                c1 = min(c + 1, cols - 1)
                gx = (height[r, c1] - height[r, c0]) / max(c1 - c0, 1)
                gy = (height[r1, c] - height[r0, c]) / max(r1 - r0, 1)
                # sin(slope) x cos(downhill direction - sun direction)
                e = -(gx * sun_x + gy * sun_y) / math.sqrt(1.0 + gx * gx + gy * gy)
                if e > 0.0:
                    melt *= 1.0 + aspect * e
            add = fall * dt / cell
            d = snow[r, c] + add
            gone = min(d, melt * dt / cell)
            snow[r, c] = d - gone
            f_row += add
            m_row += gone
        fell[r] = f_row
        melted[r] = m_row


@njit(cache=True, nogil=True)
def _exposure(height, reach, out, lo, hi):
    """Wind exposure of rows ``lo .. hi-1`` (module docs): the ground's bend at
    ``reach`` cells (nearer where the grid's edge is nearer, the same distance on both
    sides, so a plane has none), averaged over the row, the column and the two
    diagonals, / BEND, clamped to -1 .. 1. Each cell writes only itself."""
    rows, cols = height.shape
    for r in range(lo, hi):
        up = min(r, rows - 1 - r, reach)
        for c in range(cols):
            side = min(c, cols - 1 - c, reach)
            diag = min(up, side)
            h = height[r, c]
            bend = 0.0
            ways = 0
            if side > 0:
                bend += (h - 0.5 * (height[r, c - side] + height[r, c + side])) / side
                ways += 1
            if up > 0:
                bend += (h - 0.5 * (height[r - up, c] + height[r + up, c])) / up
                ways += 1
            if diag > 0:
                d = diag * _SQRT2
                bend += (h - 0.5 * (height[r - diag, c - diag]
                                    + height[r + diag, c + diag])) / d
                bend += (h - 0.5 * (height[r - diag, c + diag]
                                    + height[r + diag, c - diag])) / d
                ways += 2
            x = bend / (ways * BEND) if ways else 0.0
            out[r, c] = min(max(x, -1.0), 1.0)


@njit(cache=True, nogil=True)
def _drift_send(snow, exposure, blown, share, lo, hi):
    """What each cell of rows ``lo .. hi-1`` sends with the wind: ``share`` per unit of
    exposure its lower-exposure neighbours lie below it (0 when it sends nothing)."""
    rows, cols = snow.shape
    for r in range(lo, hi):
        for c in range(cols):
            x = exposure[r, c]
            d = snow[r, c]
            share[r, c] = 0.0
            if x <= 0.0 or d <= 0.0:
                continue
            total = 0.0
            for rr in range(max(r - 1, 0), min(r + 2, rows)):
                for cc in range(max(c - 1, 0), min(c + 2, cols)):
                    total += max(x - exposure[rr, cc], 0.0)
            if total > 0.0:
                share[r, c] = blown * x * d / total


@njit(cache=True, nogil=True)
def _drift_receive(snow, exposure, share, out, lo, hi):
    """Rows ``lo .. hi-1`` after the drift into ``out``: each cell loses what it sent and
    gains its part of what each neighbour of higher exposure sent."""
    rows, cols = snow.shape
    for r in range(lo, hi):
        for c in range(cols):
            x = exposure[r, c]
            gain = 0.0
            lose = 0.0
            for rr in range(max(r - 1, 0), min(r + 2, rows)):
                for cc in range(max(c - 1, 0), min(c + 2, cols)):
                    y = exposure[rr, cc]
                    if y > x:
                        gain += share[rr, cc] * (y - x)
                    elif y < x:
                        lose += share[r, c] * (x - y)
            out[r, c] = snow[r, c] - lose + gain


@njit(cache=True, nogil=True, inline="always")
def _sort(ex, at, n):
    """``ex[:n]`` largest first, ``at`` alongside (insertion sort: ties keep their
    order)."""
    for a in range(1, n):
        e = ex[a]
        j = at[a]
        b = a - 1
        while b >= 0 and ex[b] < e:
            ex[b + 1] = ex[b]
            at[b + 1] = at[b]
            b -= 1
        ex[b + 1] = e
        at[b + 1] = j


@njit(cache=True, nogil=True, inline="always")
def _level(ex, n, amount):
    """Water-filling: the level ``lam`` with sum(max(ex[k] - lam, 0)) = ``amount`` over
    the ``n`` > 0 excesses ``ex`` (sorted, largest first; ``lam`` < 0 when ``amount``
    is more than all of them); ``amount`` < 0: the level that gives away as much as
    it drops (sum = lam > 0)."""
    total = 0.0
    lam = 0.0
    for j in range(n):
        total += ex[j]
        lam = total / (j + 2) if amount < 0.0 else (total - amount) / (j + 1)
        if j + 1 == n or lam >= ex[j + 1]:
            break
    return lam


@njit(cache=True, nogil=True, inline="always")
def _excesses(g, s, i, rows, cols, tan, ex, at):
    """How far cell ``i``'s snow surface stands above the repose slope towards each
    lower neighbour, > SLACK only: ``ex[:n]``, the neighbours in ``at[:n]`` (-1: beyond
    the grid's edge, where the ground goes on at the edge cell's slope, the inner
    neighbour mirrored, under as much snow as here). Returns n."""
    r = i // cols
    c = i - r * cols
    top = g[i] + s[i]
    n = 0
    for rr in range(max(r - 1, 0), min(r + 2, rows)):
        for cc in range(max(c - 1, 0), min(c + 2, cols)):
            j = rr * cols + cc
            if j == i:
                continue
            dist = _SQRT2 if (rr != r and cc != c) else 1.0
            e = top - g[j] - s[j] - tan * dist
            if e > SLACK:
                ex[n] = e
                at[n] = j
                n += 1
    for k in range(4):
        if k == 0 and r == 0 and rows > 1:
            inner = i + cols
        elif k == 1 and r == rows - 1 and rows > 1:
            inner = i - cols
        elif k == 2 and c == 0 and cols > 1:
            inner = i + 1
        elif k == 3 and c == cols - 1 and cols > 1:
            inner = i - 1
        else:
            continue
        e = g[inner] - g[i] - tan
        if e > SLACK:
            ex[n] = e
            at[n] = -1
            n += 1
    return n


@njit(cache=True, nogil=True, inline="always")
def _mark(flags, i, rows, cols):
    """Set ``flags`` of cell ``i`` and its 8 neighbours."""
    r = i // cols
    c = i - r * cols
    for rr in range(max(r - 1, 0), min(r + 2, rows)):
        for cc in range(max(c - 1, 0), min(c + 2, cols)):
            flags[rr * cols + cc] = 1


@njit(cache=True, nogil=True)
def _slide(ground, snow, order, tan, now, later):
    """One avalanche sweep in place on ``snow`` (module docs): the flat cells in
    ``order`` (highest snow surface first); a cell whose snow stands above the repose
    slope ``tan`` towards a lower neighbour keeps what rests at that slope above the
    lowest of them (none where the ground beyond the grid's edge is steeper than
    repose) and spreads the rest over them by water-filling (each gets
    ``max(excess - lam, 0)``), so a slide runs down a whole slope in one sweep.
    Only the cells flagged in ``now`` (uint8, flat) are looked at: the ones next to a
    cell whose snow changed since they were last looked at (the others rest as they
    did); each change flags the cell and its neighbours in ``now`` and ``later`` (for
    the next sweep), and a cell's flag in ``now`` is cleared when it is looked at.
    Returns (snow that slid off the grid, snow moved, the most a cell gave)."""
    rows, cols = ground.shape
    g = ground.reshape(-1)
    s = snow.reshape(-1)
    ex = np.empty(12)  # the 8 neighbours and up to 2 beyond the edge
    at = np.empty(12, dtype=np.int64)
    off = 0.0
    moved = 0.0
    worst = 0.0
    for t in range(order.size):
        i = order[t]
        if not now[i]:
            continue
        now[i] = 0
        d = s[i]
        if d <= 0.0:
            continue
        n = _excesses(g, s, i, rows, cols, tan, ex, at)
        if n == 0:
            continue
        keep = d
        edge = 0.0
        for k in range(n):
            if at[k] < 0:
                keep = 0.0
                edge += ex[k]
            else:
                keep = min(keep, d - ex[k])  # at the slope above this neighbour
        keep = max(keep, 0.0)
        m = d - keep
        if m <= 0.0:
            continue
        s[i] = keep
        moved += m
        worst = max(worst, m)
        _mark(now, i, rows, cols)
        _mark(later, i, rows, cols)
        now[i] = 0  # rests now
        if edge > 0.0:  # off the grid, its share as by the excesses
            inside = _inside(ex, at, n)
            out = m if inside <= 0.0 else m * edge / (edge + inside)
            off += out
            m -= out
            if m <= 0.0:
                continue
        _sort(ex, at, n)
        inner = 0  # the cells of the grid below, largest excess first
        for k in range(n):
            if at[k] >= 0:
                ex[inner] = ex[k]
                at[inner] = at[k]
                inner += 1
        lam = _level(ex, inner, m)
        given = 0.0
        for k in range(inner):
            part = ex[k] - lam
            if part <= 0.0:
                break
            if k + 1 == inner or ex[k + 1] - lam <= 0.0:
                part = m - given  # the last one takes what rounding left over
            s[at[k]] += part
            given += part
            _mark(now, at[k], rows, cols)
            _mark(later, at[k], rows, cols)
    return off, moved, worst


@njit(cache=True, nogil=True, inline="always")
def _inside(ex, at, n):
    """The sum of the excesses towards cells of the grid."""
    total = 0.0
    for k in range(n):
        if at[k] >= 0:
            total += ex[k]
    return total


def _avalanche(height: np.ndarray, snow: np.ndarray, tan: float, work: dict
               ) -> tuple[float, float]:
    """Sweeps of :func:`_slide`, all in the order of the snow surface before the
    first (sorting again each sweep took 3x the time for the same number of sweeps),
    until one moves no more than TOLERANCE at any cell, or AVALANCHE_SWEEPS + 2 (rows
    + cols) ran.
    Returns (snow that slid off the grid, snow moved)."""
    surface = _buffer(work, "surface", snow.shape)
    np.add(height, snow, out=surface)
    np.negative(surface, out=surface)
    order = np.argsort(surface, axis=None, kind="stable")  # highest first
    now = _buffer(work, "now", (snow.size,), np.uint8)
    later = _buffer(work, "later", (snow.size,), np.uint8)
    now[...] = 1  # the first sweep looks at every cell
    later[...] = 0
    off = moved = 0.0
    rows, cols = snow.shape
    for _ in range(AVALANCHE_SWEEPS + 2 * (rows + cols)):
        o, m, worst = _slide(height, snow, order, tan, now, later)
        off += o
        moved += m
        if worst <= TOLERANCE:
            break
        now[...] = 0  # flags left on cells the sweep had passed are in ``later`` too
        now, later = later, now
    return off, moved


def _buffer(work: dict, name: str, shape: tuple[int, ...], dtype: type = np.float64
            ) -> np.ndarray:
    """The batch's array ``name`` (made on first use); contents undefined."""
    a = work.get(name)
    if a is None or a.shape != shape or a.dtype != dtype:
        a = work[name] = np.empty(shape, dtype=dtype)
    return a


def _reach(params: SnowParams, cell_size: float, shape: tuple[int, int]) -> int:
    """``drift_length`` in cells: at least 1, less than the grid's longer side."""
    return int(min(max(round(params.drift_length / cell_size), 1), max(max(shape) - 1, 1)))


def snow_pass(terrain: Terrain, params: SnowParams, years: float, height: np.ndarray,
              work: dict | None = None) -> dict[str, float]:
    """One pass of ``years`` on ``terrain.snow`` in place (``height``: bedrock +
    sediment, cell units; the ground is only read). Returns the pass's books in cell
    units x cells: ``fallen``, ``melted``, ``out`` (slid off the grid), ``change``
    (the snow's total after minus before; fallen = change + melted + out to
    rounding), and ``blown``, ``slid`` (snow moved by the wind and by avalanches).
    ``work``: a dict kept across the passes of a batch, lending their arrays."""
    work = {} if work is None else work
    cell = terrain.cell_size
    snow = terrain.snow
    shape = terrain.shape
    rows = shape[0]
    before = float(snow.sum())
    fell = _buffer(work, "fell", (rows,))
    melted = _buffer(work, "melted", (rows,))
    az = math.radians(params.sun_azimuth)
    line = snow_line(params, height, cell)
    row_bands = parallel.bands(rows)
    parallel.run(row_bands, lambda b: _balance(
        height, snow, cell, line, params.snowfall, params.snowfall_gradient,
        params.max_snowfall, params.melt_gradient, params.aspect, math.sin(az),
        math.cos(az), years, fell, melted, b[0], b[1]))
    books = {"fallen": float(fell.sum()), "melted": float(melted.sum()), "out": 0.0,
             "blown": 0.0, "slid": 0.0}
    if not snow.any():
        books["change"] = float(snow.sum()) - before
        return books
    blown = min(1.0 - math.exp(-params.wind_exposure * years), MOST_BLOWN)
    if blown > 0.0:
        exposure = work.get("exposure")
        if exposure is None:  # the ground does not change during a batch
            exposure = work["exposure"] = np.empty(shape)
            reach = _reach(params, cell, shape)
            parallel.run(row_bands, lambda b: _exposure(height, reach, exposure, b[0], b[1]))
        share = _buffer(work, "share", shape)
        drifted = _buffer(work, "drifted", shape)
        parallel.run(row_bands, lambda b: _drift_send(snow, exposure, blown, share,
                                                      b[0], b[1]))
        parallel.run(row_bands, lambda b: _drift_receive(snow, exposure, share, drifted,
                                                         b[0], b[1]))
        books["blown"] = float(np.maximum(snow - drifted, 0.0).sum())
        snow[...] = drifted
    tan = math.tan(math.radians(params.repose_angle))
    off, slid = _avalanche(height, snow, tan, work)
    books["out"] = float(off)
    books["slid"] = float(slid)
    books["change"] = float(snow.sum()) - before
    return books


def run_batch(terrain: Terrain, params: SnowParams, seed: int, first: int, count: int,
              height: np.ndarray | None = None, cdf: np.ndarray | None = None) -> int:
    """Passes ``first .. first+count-1``; passes past ``years`` do nothing. Returns the
    cell updates done."""
    del seed, cdf  # deterministic, no rain sampling
    if height is None:
        height = terrain.height()
    total = steps(params)
    done = 0
    work: dict = {}  # the passes' arrays, for this batch only
    for k in range(first, min(first + count, total)):
        snow_pass(terrain, params, _step_years(params, k), height, work)
        done += height.size
    return done


def advice(params: SnowParams, cell_size: float) -> str | None:
    """A sentence when the parameters make no snow lie at all (the line at the summit),
    or when the cells are far smaller than the metres and years of the climate."""
    if params.relative_line and params.snow_line_fraction >= 1.0:
        return ("snow: snow_line_fraction 1 puts the snow line at the highest ground: "
                "nothing lies (lower it for snow)")
    if cell_size >= 1.0:
        return None
    return (f"snow: snowfall, melt and the snow line are in metres a year, meant for "
            f"mountains; on these {cell_size:.3g} m cells a year's snow is many cells "
            "deep (scale the object to its real size, e.g. 30 m a cell)")


FIELDS = (
    Field("snow", "depth", "depth of lying snow", lo=0.0, exact="te_snow", refine="amount"),
)

# after the processes that move ground (so it lies on the round's ground), before trees
PROCESS = Process(
    PROCESS_NAME, SnowParams, run_batch, "Snow",
    "snow falls above a snow line and melts below it, drifts from ridges into hollows "
    "and avalanches off slopes steeper than its angle of repose (docs/snow.md)",
    order=55, stream=STREAM_ID,
    reads=("bedrock", "sediment", "snow"), writes=("snow",), fields=FIELDS,
    passes=steps, advice=advice, bytes_per_cell=42,
    work=cell_pass, seconds_per_unit=6.0e-7)
