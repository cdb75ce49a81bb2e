"""Droplet hydraulic erosion (docs/references.md: the droplets article).

Deterministic on any number of threads: the grid is cut into horizontal strips of
``STRIP_ROWS`` rows. A droplet belongs to the strip its cell is in and may wander
``margin`` rows beyond it; when it leaves that band it is handed to the neighbour strip.
Even strips run together, then odd strips, and so on until every droplet of the batch
has ended (a strip's pass starts as soon as its two neighbours have ended theirs, on
pooled threads: simcore/kernels/parallel.py). Strips running together never touch the same
cells, and each strip runs its droplets in ascending index order, so the result is the
same on 1 or N threads. On one thread, or for a batch of under ``SERIAL_BELOW`` droplets,
the same passes run one after another in one numba loop (``_run_passes``).

World units (resolution independence, docs/hillslopes.md): a droplet steps one cell,
i.e. ``cell_size`` world units. Rates are per world unit travelled, so a step applies
``1 - (1 - K)^cell_size`` of them (evaporation Kw, erosion Kr, deposition Kd, inertia
Ki keeps ``Ki^cell_size`` of the old direction). The speed grows with the world height
drop (``v^2 += 2 g dh``). The capacity ``Kq * max(slope, min_slope) * v * w`` is a world
volume, so in the grid's cell units it is divided by ``cell_size^3``; its slope is read
over the brush radius ahead (a world length up to the 8-cell cap) where the brush is 3
cells or wider, over one step (the article) where it is 2 or less, blended between
(``slope_cells``), and over one step where that point is off the map. The brush radius is
a world length (1 to ``MAX_BRUSH_CELLS`` cells), and a droplet lays its excess load
down over a tent half that wide, and at least a cell (the article: always the 4 cells
around it, which on fine grids stacked the load into towers a cell wide). A step digs
at most 0.99 x its height drop times the brush area (the article: times one cell,
which made the dug volume per metre shrink with the cell size), and a droplet that
fills a pit keeps its speed (the article stops it, and finer grids resolve more small
pits, so droplets there carried less). Otherwise, at a cell size of 1 every number is
what the article uses.

**Gathering flow** (``gather``, 0 in the article): a droplet's capacity grows with the
world length it has run, ``(1 + run / gather_length)^gather``. In the article every
droplet carries its own capacity, so a channel's load is the number of droplets through
it (its drainage area A) times one droplet's: transport ~ A S, whose steady profile has
the same slope at every area (concavity theta = 0), and the droplets straighten concave
rivers (theta 0.38 -> 0.16 on the drained uplands with the article's capacity). A droplet's
run stands for the flow it belongs to (Hack's law: the area drained grows with the
length of the longest path, A ~ L^1.7), so with ``gather`` the load grows faster than
the area (transport ~ A^(1 + 0.6 gather) S), headwaters dig less than trunks, and
rivers keep their concavity; the shipped droplet presets use 0.75 over 100 m
(docs/hillslopes.md).
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..kernels import parallel
from ..kernels.primitives import (
    deposit_tent,
    erode_brush,
    next_uniform,
    put_at,
    put_bilinear_flat,
    rain_cdf,
    start_position,
    stream_state,
)
from ..params import Params, param
from ..process import Process
from ..terrain import Terrain

STRIP_ROWS = 32
STREAM_ID = 1  # RNG stream of this process
#: batches of fewer droplets run their strips' passes on one thread (_run_passes): a
#: Python call per strip and pass costs more than such droplets (the tiles' blocks)
SERIAL_BELOW = 64
#: the brush covers 1 .. this many cells of radius, whatever its world radius
MAX_BRUSH_CELLS = 8.0
#: the deposit's tent reaches this share of the brush radius (docs/hillslopes.md)
DEPOSIT_SHARE = 0.5
#: a step digs at most this share of its height drop over the brush's area
DIG_SHARE = 0.99

# droplet state columns
X, Y, DX, DY, V, W, S = range(7)


class Kernel(NamedTuple):
    """What the droplet kernel reads, per step and in cell units."""

    Kq: float  # capacity factor, cell³
    Kw: float  # water evaporated per step
    Kr: float  # fraction of the free capacity dug per step
    Kd: float  # fraction of the excess laid down per step
    Ki: float  # share of the old direction kept per step
    min_slope: float  # capacity floor on flats (rise/run)
    Kg: float  # 2 g: v² grows by Kg × the height drop (cells)
    radius: float  # brush radius, cells
    max_steps: int  # steps before a droplet lays its load down
    dig_area: float  # a step digs at most the drop × this area (cells)
    deposit_reach: float  # half-width of the deposit's tent, cells (>= 1)
    slope_run: float  # run of the capacity's slope, cells (>= 1; 1 = one step)
    gather: float  # exponent of the capacity's growth with the path run (0: none)
    gather_step: float  # one step as a share of gather_length


@dataclasses.dataclass(frozen=True)
class DropletParams(Params):
    """Droplet erosion parameters (the article's defaults, per world unit: the same as the
    article's per-step values at a cell size of 1)."""

    Kq: float = param(10.0, 0.0, 1e9, "world^3", "sediment capacity factor (world volume "
                      "per unit slope x speed x water)", soft_hi=1000.0)
    Kw: float = param(0.001, 0.0, 1.0, "1/world", "water evaporated per world unit "
                      "travelled", soft_hi=0.1)
    Kr: float = param(0.9, 0.0, 1.0, "1/world",
                      "erosion speed: fraction of free capacity taken per world unit")
    Kd: float = param(0.02, 0.0, 1.0, "1/world",
                      "deposition speed: fraction of the excess dropped per world unit")
    Ki: float = param(0.1, 0.0, 1.0, "-", "direction inertia kept over one world unit; "
                      "higher = smoother turns")
    min_slope: float = param(0.05, 0.0, 10.0, "-", "capacity floor on flats (rise/run)",
                             soft_hi=1.0)
    gravity: float = param(20.0, 0.0, 1000.0, "world/step^2", "acceleration of the flow",
                           soft_hi=100.0)
    brush_radius: float = param(2.0, 0.0, 1e6, "world",
                                "radius of the erosion brush (1 to 8 cells)", soft_hi=200.0)
    max_path_factor: float = param(4.0, 0.1, 64.0, "x side",
                                   "a droplet stops after this many grid sides of steps")
    gather: float = param(0.0, 0.0, 3.0, "-", "capacity grows downstream as (1 + run / "
                          "gather_length)^gather, as the flow gathers water: keeps rivers "
                          "concave (0: the article, every droplet alone)", soft_hi=2.0)
    gather_length: float = param(100.0, 1e-3, 1e9, "world", "run of a droplet over which "
                                 "its capacity grows by 2^gather", soft_hi=10000.0)
    batch: int = param(2048, 1, 1_000_000, "droplets",
                       "droplets per batch; the unit of work and of determinism",
                       soft_hi=65536)

    def max_steps(self, shape: tuple[int, int]) -> int:
        return max(1, int(self.max_path_factor * max(shape)))

    def brush_cells(self, cell_size: float = 1.0) -> float:
        """Brush radius in cells on a grid of ``cell_size`` world units."""
        return min(max(self.brush_radius / cell_size, 1.0), MAX_BRUSH_CELLS)

    def brush_area(self, cell_size: float = 1.0) -> float:
        """Area (cells) under the brush's weights ``1 - d^2/r^2``: pi r^2 / 2, at least 1.
        A step digs at most the height drop times this area, a world volume that does
        not depend on the cell size."""
        return max(0.5 * math.pi * self.brush_cells(cell_size) ** 2, 1.0)

    def deposit_cells(self, cell_size: float = 1.0) -> float:
        """Half-width (cells) of the tent a droplet lays its load down with: half the
        brush radius, a world length, and at least one cell (the article's bilinear
        deposit)."""
        return min(max(DEPOSIT_SHARE * self.brush_radius / cell_size, 1.0), MAX_BRUSH_CELLS)

    def slope_cells(self, cell_size: float = 1.0) -> float:
        """Run (cells) over which the capacity reads the slope ahead: the brush radius, a
        world length, where the brush is 3 cells or wider; one step where it is 2 cells
        or less (the article; 30 m cells with a 45 m brush); a straight blend between,
        so that it changes smoothly with the cell size. Within the brush's reach, so
        strips stay apart (``strip_margin``)."""
        brush = self.brush_cells(cell_size)
        return min(brush, max(1.0, 2.0 * brush - 3.0))

    def kernel(self, shape: tuple[int, int], cell_size: float = 1.0) -> Kernel:
        """Per-step kernel constants in cell units for a grid of ``cell_size``."""
        c = float(cell_size)

        def per_step(rate: float) -> float:  # exact at c = 1
            return float(rate) if c == 1.0 else float(1.0 - (1.0 - rate) ** c)

        return Kernel(Kq=float(self.Kq / c ** 3), Kw=per_step(self.Kw),
                      Kr=per_step(self.Kr), Kd=per_step(self.Kd), Ki=float(self.Ki ** c),
                      min_slope=float(self.min_slope), Kg=float(2.0 * self.gravity * c),
                      radius=float(self.brush_cells(c)), max_steps=int(self.max_steps(shape)),
                      dig_area=float(DIG_SHARE * self.brush_area(c)),
                      deposit_reach=float(self.deposit_cells(c)),
                      slope_run=float(self.slope_cells(c)), gather=float(self.gather),
                      gather_step=float(c / self.gather_length))


def strip_margin(brush_radius: float) -> int:
    """Rows a droplet may stray beyond its strip so that strips two apart never touch
    the same cells (reach = rows a step can read or write around the droplet)."""
    reach = int(math.ceil(brush_radius)) + 1
    return (STRIP_ROWS - 2 * reach) // 2


@njit(cache=True, error_model="numpy")
def _lay_down(xp, yp, amount, radius, rows, cols, height, bedrock, sediment, deposited):
    """Lay the load ``amount`` (cell³) of a droplet that ran out of steps down where it
    can stay: on the 4 cells around (xp, yp) (bilinear, as the article) when that
    raises none of them above the highest ground within ``radius`` cells (at least
    1.5); otherwise as a level fill of the lowest ground within that radius, the way a
    pond fills its hollow, whose level rises above the highest of those cells only when
    the load is more than the hollow holds, and then as one flat layer over all of
    them: never a tower a cell wide. Writes no row farther than ``ceil(radius) + 1``
    from the droplet's (the strips' margin). Arrays are 1-D views of the (rows, cols)
    grids; xp, yp >= 0 inside the grid's last row and column."""
    if amount <= 0.0:
        return
    reach = max(radius, 1.5)
    x0 = max(int(np.ceil(xp - reach)), 0)
    x1 = min(int(np.floor(xp + reach)), cols - 1)
    y0 = max(int(np.ceil(yp - reach)), 0)
    y1 = min(int(np.floor(yp + reach)), rows - 1)
    size = (x1 - x0 + 1) * (y1 - y0 + 1)
    cells = np.empty(size, dtype=np.uint64)
    levels = np.empty(size)
    n = 0
    top = -np.inf
    for y in range(y0, y1 + 1):
        row = np.uint64(y * cols)
        for x in range(x0, x1 + 1):
            if (x - xp) * (x - xp) + (y - yp) * (y - yp) <= reach * reach:
                cells[n] = row + np.uint64(x)
                levels[n] = height[cells[n]]
                top = max(top, levels[n])
                n += 1
    xi, yi = int(xp), int(yp)
    fx, fy = xp - xi, yp - yi
    k = np.uint64(yi * cols + xi)
    below = k + np.uint64(cols)
    one = np.uint64(1)
    if max(height[k] + amount * (1 - fx) * (1 - fy), height[k + one] + amount * fx * (1 - fy),
           height[below] + amount * (1 - fx) * fy,
           height[below + one] + amount * fx * fy) <= top:
        put_bilinear_flat(xp, yp, amount, cols, height, bedrock, sediment, deposited)
        return
    order = np.argsort(levels[:n])
    # the level L with sum(max(L - h, 0)) = amount: raise the lowest j + 1 cells together
    # until they reach the next one, or the load is used up
    below_sum = 0.0
    level = 0.0
    filled = n
    for j in range(n):
        below_sum += levels[order[j]]
        level = (amount + below_sum) / (j + 1)
        if j + 1 == n or level <= levels[order[j + 1]]:
            filled = j + 1
            break
    for j in range(filled):
        c = cells[order[j]]
        put_at(c, level - height[c], height, bedrock, sediment, deposited)


@njit(cache=True, error_model="numpy")
def _droplet_segment(d, lo, hi, state, rng, steps, p, rows, cols, height, bedrock, sediment,
                     eroded, deposited, erodibility):
    """Run droplet ``d`` while its row stays in [lo, hi).

    Returns -1 when the droplet ended (its sediment laid down), -2 when it left the
    grid (the caller books ``state[d, S]`` as outflow), or the row it stepped onto
    outside the band (to hand it over). Grids come as 1-D views (flat unsigned indices
    spare numba's negative-index handling on every access)."""
    Kq, Kw, Kr, Kd, Ki, min_slope = p.Kq, p.Kw, p.Kr, p.Kd, p.Ki, p.min_slope
    Kg, radius, max_steps, dig_area = p.Kg, p.radius, p.max_steps, p.dig_area
    reach = p.deposit_reach
    run = p.slope_run
    gather, gather_step = p.gather, p.gather_step
    # a brush's volume changes the ground under the droplet by about volume / area
    inv_area = DIG_SHARE / dig_area
    ucols = np.uint64(cols)
    one = np.uint64(1)
    xp, yp, dx, dy = state[d, X], state[d, Y], state[d, DX], state[d, DY]
    v, w, s = state[d, V], state[d, W], state[d, S]
    st = rng[d]
    n = steps[d]
    result = -1
    # corner heights of the current cell; like the article, they are carried over
    # from the previous step's look-ahead (sampled before that step's erosion)
    xi = int(xp)
    yi = int(yp)
    k = np.uint64(yi * cols + xi)
    h00 = height[k]
    h10 = height[k + one]
    h01 = height[k + ucols]
    h11 = height[k + ucols + one]
    fx = xp - xi
    fy = yp - yi
    h = (h00 * (1 - fx) + h10 * fx) * (1 - fy) + (h01 * (1 - fx) + h11 * fx) * fy
    while True:
        if n >= max_steps:
            _lay_down(xp, yp, s, radius, rows, cols, height, bedrock, sediment, deposited)
            s = 0.0
            break
        if yi < lo or yi >= hi:
            result = yi
            break
        gx = h00 + h01 - h10 - h11
        gy = h00 + h10 - h01 - h11
        dx = (dx - gx) * Ki + gx
        dy = (dy - gy) * Ki + gy
        dl = np.sqrt(dx * dx + dy * dy)
        if dl <= 1e-12:
            st, u = next_uniform(st)
            a = u * 2.0 * np.pi
            dx = np.cos(a)
            dy = np.sin(a)
        else:
            dx /= dl
            dy /= dl
        nxp = xp + dx
        nyp = yp + dy
        if nxp < 0.0 or nyp < 0.0 or nxp >= cols - 1 or nyp >= rows - 1:
            result = -2  # off the grid: the carried sediment leaves with it
            break
        nxi = int(nxp)  # truncation = floor: positions are >= 0 here
        nyi = int(nyp)
        nfx = nxp - nxi
        nfy = nyp - nyi
        nk = np.uint64(nyi * cols + nxi)
        n00 = height[nk]
        n10 = height[nk + one]
        n01 = height[nk + ucols]
        n11 = height[nk + ucols + one]
        nh = (n00 * (1 - nfx) + n10 * nfx) * (1 - nfy) + (n01 * (1 - nfx) + n11 * nfx) * nfy
        if nh >= h:  # uphill: fill the pit (keeping the speed), stop if the load is used up
            ds = (nh - h) + 0.001
            if ds >= s:  # the pit holds the load: it rises no higher than the next step
                put_bilinear_flat(xp, yp, s, cols, height, bedrock, sediment, deposited)
                s = 0.0
                n += 1
                break
            put_bilinear_flat(xp, yp, ds, cols, height, bedrock, sediment, deposited)
            h += ds
            s -= ds
        dh = h - nh
        slope = dh
        if run > 1.0:  # the slope over ``run`` cells ahead (one step off the map)
            fxp = xp + dx * run
            fyp = yp + dy * run
            if fxp >= 0.0 and fyp >= 0.0 and fxp < cols - 1 and fyp < rows - 1:
                fxi = int(fxp)
                fyi = int(fyp)
                ffx = fxp - fxi
                ffy = fyp - fyi
                fk = np.uint64(fyi * cols + fxi)
                fh = ((height[fk] * (1 - ffx) + height[fk + one] * ffx) * (1 - ffy)
                      + (height[fk + ucols] * (1 - ffx) + height[fk + ucols + one] * ffx)
                      * ffy)
                slope = (h - fh) / run
        q = max(slope, min_slope) * v * w * Kq
        if gather > 0.0:
            q *= (1.0 + n * gather_step) ** gather
        ds = s - q
        if ds >= 0.0:
            ds *= Kd
            deposit_tent(xp, yp, ds, reach, rows, cols, height, bedrock, sediment,
                          deposited)
            dh += ds * inv_area
            s -= ds
        else:
            ds = min(-ds * Kr, dh * dig_area)  # at most the drop over the brush area
            got = erode_brush(xp, yp, ds, nh, radius, rows, cols, height, bedrock, sediment,
                               eroded, deposited, erodibility)
            dh -= got * inv_area
            s += got
        v = np.sqrt(max(v * v + Kg * dh, 0.0))
        w *= 1.0 - Kw
        xp, yp, xi, yi = nxp, nyp, nxi, nyi
        h, h00, h10, h01, h11 = nh, n00, n10, n01, n11
        n += 1
    state[d, X], state[d, Y], state[d, DX], state[d, DY] = xp, yp, dx, dy
    state[d, V], state[d, W], state[d, S] = v, w, s
    rng[d] = st
    steps[d] = n
    return result


@njit(nogil=True, cache=True, error_model="numpy")
def _start(seed, first, cdf, rows, cols, state, rng, strip, pending):
    """Droplets ``first ..`` (one per row of ``state``) at their rain-weighted start
    cells of a ``rows`` x ``cols`` grid: state, RNG state and strip; ``pending[s]``
    counts the droplets of strip s."""
    for k in range(state.shape[0]):
        st = stream_state(seed, np.uint64(STREAM_ID), np.uint64(first + k))
        st, x, y = start_position(st, cdf, rows, cols)
        state[k, X] = x
        state[k, Y] = y
        state[k, W] = 1.0
        rng[k] = st
        s = int(np.floor(y)) // STRIP_ROWS
        strip[k] = s
        pending[s] += 1


@njit(nogil=True, cache=True, error_model="numpy")
def _run_strip(s, margin, p, state, rng, steps, strip, lost, height, bedrock, sediment,
               eroded, deposited, erodibility):
    """Run the droplets now in strip ``s``, in ascending index order, until each ends or
    leaves the strip's band (``margin`` rows beyond it); ``lost[s]`` gains what leaves
    the grid. Returns how many moved on to strip s - 1, to s + 1, and elsewhere (never).

    Other strips' tasks may run meanwhile and write ``strip`` for their own droplets;
    they never write the value ``s`` nor touch this band's cells (see run_batch)."""
    rows, cols = height.shape
    lo = max(s * STRIP_ROWS - margin, 0)
    hi = min((s + 1) * STRIP_ROWS + margin, rows)
    hf, bf, sf = height.reshape(-1), bedrock.reshape(-1), sediment.reshape(-1)
    ef, df, kf = eroded.reshape(-1), deposited.reshape(-1), erodibility.reshape(-1)
    up = 0
    down = 0
    stray = 0
    for k in range(strip.size):
        if strip[k] != s:
            continue
        res = _droplet_segment(k, lo, hi, state, rng, steps, p, rows, cols, hf, bf, sf, ef,
                               df, kf)
        if res == -1:
            strip[k] = -1
        elif res == -2:
            lost[s] += state[k, S]
            state[k, S] = 0.0
            strip[k] = -1
        else:
            t = res // STRIP_ROWS
            strip[k] = t
            if t == s - 1:
                up += 1
            elif t == s + 1:
                down += 1
            else:
                stray += 1
    return up, down, stray


@njit(nogil=True, cache=True, error_model="numpy")
def _run_passes(nstrips, last_pass, margin, p, state, rng, steps, strip, pending, lost,
                height, bedrock, sediment, eroded, deposited, erodibility):
    """The strips' passes one after another on this thread: pass q runs the strips of
    q's parity that hold droplets, in ascending order, each handing the droplets that
    left it to its neighbours' next pass. That is the schedule :func:`_run_batch`'s
    threads reproduce, so the result is the same, without a Python call per strip and
    pass (on one thread, or for a few droplets, those calls cost more than the
    droplets). Returns 0, or -1 if a droplet skipped a strip, -2 if the passes ran
    past ``last_pass`` (bugs, raised by the caller)."""
    live = 0
    for s in range(nstrips):
        live += pending[s]
    q = 0
    while live > 0:
        if q > last_pass:
            return -2
        for s in range(q % 2, nstrips, 2):
            if pending[s] == 0:
                continue
            up, down, stray = _run_strip(s, margin, p, state, rng, steps, strip, lost,
                                         height, bedrock, sediment, eroded, deposited,
                                         erodibility)
            if stray:
                return -1
            live -= pending[s] - up - down
            pending[s] = 0
            if up:
                pending[s - 1] += up
            if down:
                pending[s + 1] += down
        q += 1
    return 0


def _run_batch(seed: int, first: int, count: int, p: Kernel, cdf: np.ndarray, margin: int,
               height: np.ndarray, bedrock: np.ndarray, sediment: np.ndarray,
               eroded: np.ndarray, deposited: np.ndarray, erodibility: np.ndarray,
               threads: int | None = None) -> tuple[float, int]:
    """Run droplets ``first .. first+count-1`` on ``threads`` threads (default
    :func:`parallel.threads`); returns (material carried off the grid, steps taken).

    The strips run in passes: even strips in even passes, odd strips in odd ones, and a
    strip's pass runs the droplets its neighbours handed it in their previous pass. A
    strip's pass ``q`` can start as soon as the strip ended pass ``q - 2`` and both
    neighbours ended pass ``q - 1``: it then sees exactly the droplets and cells it sees
    when every pass waits for the whole grid, and strips running together are two or
    more apart, whose bands never share a cell. So the result is the same on any number
    of threads, and a thread never waits for a pass of the whole grid to end (only for
    its neighbours)."""
    rows, cols = height.shape
    nstrips = (rows + STRIP_ROWS - 1) // STRIP_ROWS
    state = np.zeros((count, 7))
    rng = np.empty(count, dtype=np.uint64)
    steps = np.zeros(count, dtype=np.int64)
    strip = np.empty(count, dtype=np.int64)
    pending = np.zeros(nstrips, dtype=np.int64)
    lost = np.zeros(nstrips)
    _start(np.uint64(seed), first, cdf, rows, cols, state, rng, strip, pending)
    done = [s % 2 - 2 for s in range(nstrips)]  # the last pass each strip has ended
    queued = [False] * nstrips
    live = [count]
    never = 1 << 62  # a missing neighbour is always ahead
    # a droplet's segments are one pass apart and take a step or more each, and a
    # strip with no droplet runs at most one pass a strip ahead of the nearest with one:
    # twice that bound still ends a run the scheduler got wrong (a bug) instead of a hang
    last_pass = 2 * (p.max_steps + nstrips) + 8

    if (parallel.threads() if threads is None else threads) <= 1 or count < SERIAL_BELOW:
        error = _run_passes(nstrips, last_pass, margin, p, state, rng, steps, strip,
                            pending, lost, height, bedrock, sediment, eroded, deposited,
                            erodibility)
        if error == -1:
            raise RuntimeError("a droplet skipped a strip")  # cannot happen: one-cell steps
        if error == -2:
            raise RuntimeError("droplet strips out of step")  # a bug: not a hang
        return _lost_total(lost), int(steps.sum())

    def ended(s: int) -> int:
        return done[s] if 0 <= s < nstrips else never

    def do(task: tuple[int, int]) -> tuple[int, int, int]:
        s = task[0]
        if pending[s] == 0:
            return 0, 0, 0
        return _run_strip(s, margin, p, state, rng, steps, strip, lost, height, bedrock,
                          sediment, eroded, deposited, erodibility)

    def then(task: tuple[int, int], moved: tuple[int, int, int]) -> list[tuple[int, int]]:
        up, down, stray = moved
        if stray:
            raise RuntimeError("a droplet skipped a strip")  # cannot happen: one-cell steps
        todo = [task]
        ready: list[tuple[int, int]] = []
        while todo:  # strips with no droplet end their pass here, in one go
            s, q = todo.pop()
            if (s, q) == task:
                live[0] -= int(pending[s]) - up - down
                pending[s] = 0
                if up:
                    pending[s - 1] += up
                if down:
                    pending[s + 1] += down
            done[s] = q
            queued[s] = False
            if live[0] == 0:
                continue
            for t in (s - 1, s + 1):
                nxt = ended(t) + 2
                if (0 <= t < nstrips and not queued[t] and ended(t - 1) >= nxt - 1
                        and ended(t + 1) >= nxt - 1):
                    if nxt > last_pass:
                        raise RuntimeError("droplet strips out of step")  # a bug: not a hang
                    queued[t] = True
                    (ready if pending[t] else todo).append((t, nxt))
        return ready

    first_tasks = []
    for s in range(0, nstrips, 2):
        queued[s] = True
        first_tasks.append((s, 0))
    parallel.run(first_tasks, do, then, threads)
    return _lost_total(lost), int(steps.sum())


def _lost_total(lost: np.ndarray) -> float:
    """What the strips' droplets carried off the grid, summed strip by strip."""
    total = 0.0
    for s in range(lost.size):
        total += float(lost[s])
    return total


def run_batch(terrain: Terrain, params: DropletParams, seed: int, first: int, count: int,
              height: np.ndarray | None = None, cdf: np.ndarray | None = None,
              world_shape: tuple[int, int] | None = None) -> int:
    """Run droplets ``first .. first+count-1`` on ``terrain`` in place.

    ``height`` (bedrock + sediment, kept in step) and ``cdf`` may be passed in to avoid
    recomputing them for every batch; ``world_shape``: the map this terrain is a window
    of (a tile), whose size sets the path limit. Returns the number of droplet steps
    taken."""
    if height is None:
        height = terrain.height()
    if cdf is None:
        cdf = rain_cdf(terrain.rain)
    lost, nsteps = _run_batch(
        seed & 0xFFFFFFFFFFFFFFFF, first, count,
        params.kernel(world_shape or terrain.shape, terrain.cell_size), cdf,
        strip_margin(params.brush_cells(terrain.cell_size)), height, terrain.bedrock,
        terrain.sediment, terrain.eroded, terrain.deposited, terrain.erodibility)
    terrain.outflow += lost
    return nsteps


PROCESS = Process(
    "droplets", DropletParams, run_batch, "Droplet erosion",
    "rain droplets carve channels (after the Arcane Worlds article)", order=10, stream=STREAM_ID,
    reads=("bedrock", "sediment", "erodibility", "rain"), enabled_by_default=True,
    keyed_starts=True, world_shape_arg=True,
    # a droplet's cost follows its step limit (max_path_factor x the map's side)
    work=lambda p, shape: p.max_steps(shape), seconds_per_unit=1.2e-8)
