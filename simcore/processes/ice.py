"""Glaciers: ice that gathers above the equilibrium line, flows down the valleys by
the shallow-ice approximation and erodes its bed where it slides (docs/ice.md).

One *pass* is ``time_step`` years of climate (the last one shortened so the passes
add up to ``age``):

1. Snow deeper than ``firn_depth`` (where the snow process runs) turns into ice.
2. The ice flows on a grid of cells about ``flow_cell`` across (block means of the
   ground; the ice is smooth, and a pass is thousands of solver steps): the mass
   balance ``min(beta (s - ela), max_accumulation)`` (the gain x the rain map, relative
   to its mean) and the flow (:mod:`simcore.algorithms.glacier`). With
   ``acceleration`` a the ice moves for ``time_step / a`` years and the bed erodes for
   the whole ``time_step``: the ice comes close to balance with its climate within
   decades, the bed changes over millennia (a morphological acceleration factor, as
   coastal models use for tides and sand).
3. The bed erodes under sliding ice, ``K_g |u_b|^l`` a year (``erosion``,
   ``erosion_exponent``; Herman et al. 2015), x the erodibility (sediment first, then
   rock, :func:`kernels.primitives.exchange`). ``u_b`` is the pass's mean sliding
   speed from the ice that actually flowed, its driving stress averaged over the ice
   within COUPLING of the cell's thicknesses (so the thin ice on a valley's walls slides
   with the stress of the ice beside it). The ice wears the bed at right angles to
   it, so a wall lowers by ``sqrt(1 + slope^2)`` times that (at most MAX_NORMAL).
4. The rock taken rides with the ice and is laid down where it melts (moraines at the
   front and the sides); what reaches the map's edge leaves it.
5. The ice thickness is carried back to the terrain's cells: the flow grid's surface
   interpolated, less the ground, each block scaled to hold the block's ice exactly.

With ``retreat`` r the equilibrium line rises over the last r of the age to above the
summits, so the ice melts back and leaves its troughs, cirques and moraines.

Everything is serial or per cell: the same result on any number of threads.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from ..algorithms import glacier
from ..fields import Field
from ..kernels.primitives import exchange, put_at
from ..params import ParameterError, Params, param
from ..process import Process, age_passes, cell_pass, pass_years
from ..terrain import Terrain

STREAM_ID = 9  # reserved RNG stream; the passes need no random numbers
YEAR = 365.25 * 86400.0
#: metres of ice a metre of old snow (firn) makes
FIRN_TO_ICE = 0.5
#: the solver's step shrinks so that no cell's ice changes by more than this (m)
STEP_CHANGE = 10.0
#: and never exceeds this (years)
MAX_SOLVER_STEP = 10.0
#: the most a cell's ground rises a year under the debris the ice lays (m/yr): what
#: more reaches it runs on with the meltwater
MORAINE_RATE = 0.002
#: the most driving stress the erosion counts, in units of 100 kPa
MAX_STRESS = 2.0
#: the driving stress a cell's sliding feels is the mean over ice within this many of
#: its thicknesses (the stress coupling of Kamb & Echelmeyer 1986)
COUPLING = 2.0
#: and within at most this many flow cells
MAX_COUPLING = 8
#: the most the ground lowers per metre the ice wears its bed (at right angles to the
#: bed): the factor of a 60 degree wall; steeper walls are the hillslopes' to break
MAX_NORMAL = 2.0
#: bed slopes against the flow steeper than this x the ice surface slope do not erode
ADVERSE = 1.5
#: how far above the summits the equilibrium line ends a retreat (m)
RETREAT_MARGIN = 200.0


@dataclasses.dataclass(frozen=True)
class IceParams(Params):
    """Glacier parameters, physical units (m = world units, yr = years)."""

    age: float = param(2.0e4, 0.0, 1.0e7, "yr", "years of glaciation the run adds up to",
                       soft_hi=2.0e5)
    time_step: float = param(1000.0, 1.0, 1.0e5, "yr",
                             "years per pass: the bed erodes and the climate is set once "
                             "a pass", soft_hi=1.0e4)
    acceleration: float = param(10.0, 1.0, 1000.0, "-",
                                "the ice flows time_step / acceleration years a pass while "
                                "the bed erodes for the whole pass (1 = every year "
                                "flowed; larger is faster and less exact)", soft_hi=100.0)
    ela: float = param(2000.0, -1.0e4, 1.0e5, "m",
                       "equilibrium-line altitude: ice gathers above it, melts below",
                       soft_hi=6000.0)
    ela_fraction: float = param(0.0, 0.0, 1.0, "-",
                                "when above 0: the equilibrium line at this fraction of "
                                "the ground's relief (lowest + f x (highest - lowest)), "
                                "in place of ela")
    balance_gradient: float = param(0.007, 0.0, 0.1, "1/yr",
                                    "metres of ice a year gained (or melted) per metre "
                                    "above (or below) the equilibrium line", soft_hi=0.02)
    max_accumulation: float = param(1.5, 0.0, 20.0, "m/yr",
                                    "most ice a year gains, however high", soft_hi=5.0)
    softness: float = param(7.6e-17, 0.0, 1.0e-14, "Pa^-3/yr",
                            "Glen's rate factor A (7.6e-17: temperate ice)",
                            soft_hi=1.0e-15)
    sliding: float = param(30.0, 0.0, 1.0e4, "m/yr",
                           "basal sliding speed under a driving stress of 100 kPa (a "
                           "Weertman law, u_b = C tau^3)", soft_hi=500.0)
    erosion: float = param(1.0e-4, 0.0, 0.1, "m^(1-l) yr^(l-1)",
                           "K_g of the bed's erosion K_g |u_b|^l", soft_hi=1.0e-3)
    erosion_exponent: float = param(1.0, 1.0, 2.0, "-", "l of the bed's erosion")
    retreat: float = param(0.0, 0.0, 1.0, "-",
                           "the last fraction of the age over which the equilibrium line "
                           "rises above the summits: the ice melts back and leaves its "
                           "landforms (0 = the ice stays)")
    firn_depth: float = param(5.0, 0.0, 1000.0, "m",
                              "snow deeper than this turns into ice (where snow is "
                              "simulated)", soft_hi=50.0)
    flow_cell: float = param(150.0, 0.0, 1.0e4, "m",
                             "the ice flows on cells about this size (a whole number of "
                             "the terrain's cells; 0 = the terrain's own cells)",
                             soft_hi=1000.0)
    batch: int = param(2, 1, 10_000, "passes", "passes per batch", soft_hi=100)


def steps(params: IceParams) -> int:
    """Passes the run takes to reach ``age``."""
    return age_passes(params.age, params.time_step)


def _pass_years(params: IceParams, k: int) -> float:
    """Length of pass ``k`` (0-based)."""
    return pass_years(params.age, params.time_step, k)


def flow_factor(params: IceParams, cell: float) -> int:
    """Terrain cells along one side of a flow cell."""
    if params.flow_cell <= cell:
        return 1
    return max(1, int(round(params.flow_cell / cell)))


def _coarse(grid: np.ndarray, f: int) -> np.ndarray:
    """Block means of ``f`` x ``f`` cells (the last blocks may be smaller)."""
    if f == 1:
        return grid.copy()
    rows, cols = grid.shape
    r0, c0 = np.arange(0, rows, f), np.arange(0, cols, f)
    sums = np.add.reduceat(np.add.reduceat(grid, r0, axis=0), c0, axis=1)
    counts = np.outer(np.diff(np.append(r0, rows)), np.diff(np.append(c0, cols)))
    return sums / counts


def _fine_positions(n: int, f: int) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``n`` fine cells: the coarse cell below it (lower neighbour in the
    interpolation) and the weight of the next one."""
    blocks = -(-n // f)
    centres = np.array([min(b * f + (f - 1) / 2.0, (b * f + min(n, b * f + f) - 1) / 2.0)
                        for b in range(blocks)])
    x = np.arange(n, dtype=float)
    lo = np.clip(np.searchsorted(centres, x, side="right") - 1, 0, max(blocks - 2, 0))
    if blocks == 1:
        return np.zeros(n, dtype=np.int64), np.zeros(n)
    w = np.clip((x - centres[lo]) / (centres[lo + 1] - centres[lo]), 0.0, 1.0)
    return lo.astype(np.int64), w


def _interpolate(coarse: np.ndarray, shape: tuple[int, ...], f: int) -> np.ndarray:
    """Bilinear interpolation of block values to the fine cells' centres."""
    if f == 1:
        return coarse.copy()
    ri, rw = _fine_positions(shape[0], f)
    ci, cw = _fine_positions(shape[1], f)
    ri1 = np.minimum(ri + 1, coarse.shape[0] - 1)
    ci1 = np.minimum(ci + 1, coarse.shape[1] - 1)
    rows = coarse[ri] * (1 - rw)[:, None] + coarse[ri1] * rw[:, None]
    return rows[:, ci] * (1 - cw)[None, :] + rows[:, ci1] * cw[None, :]


def _spread(total: np.ndarray, weight: np.ndarray, f: int) -> np.ndarray:
    """Amounts per block (``total``: cell units x cells) put on the fine cells in
    proportion to ``weight`` >= 0 (a smooth field: no steps at the blocks' edges),
    scaled so the grid holds exactly what the blocks held; no weight anywhere: each
    block spread evenly."""
    if f == 1:
        return total.copy()
    counts = _block_counts(weight.shape, f)
    have = float(weight.sum())
    want = float(total.sum())
    if have <= 0.0:
        return _blocks(total / counts, weight.shape, f)
    return weight * (want / have)


def _blocks(coarse: np.ndarray, shape: tuple[int, ...], f: int) -> np.ndarray:
    """Each block's value on each of its cells."""
    return np.repeat(np.repeat(coarse, f, axis=0), f, axis=1)[:shape[0], :shape[1]]


def _fine_ice(h_c: np.ndarray, surface: np.ndarray, bed: np.ndarray, f: int) -> np.ndarray:
    """The flow grid's ice on the terrain's cells: its ``surface`` (interpolated to
    them), less the ground, scaled to hold exactly the flow grid's ice."""
    if f == 1:
        return h_c.copy()
    weight = np.maximum(surface - bed, 0.0)
    weight[_interpolate(h_c, bed.shape, f) <= 0.0] = 0.0
    return _spread(h_c * _block_counts(bed.shape, f), weight, f)


@njit(cache=True, nogil=True)
def _erode(dig, height, bedrock, sediment, eroded, deposited, erodibility, taken):
    """Take ``dig`` (cell units) at every cell: sediment first, then rock x the
    erodibility (:func:`exchange`); ``taken`` gets what left each cell."""
    for k in range(dig.size):
        if dig[k] > 0.0:
            taken[k] = exchange(k, dig[k], 0.0, height, bedrock, sediment, eroded,
                                deposited, erodibility)
        else:
            taken[k] = 0.0


@njit(cache=True, nogil=True)
def _lay(amount, height, bedrock, sediment, deposited):
    for k in range(amount.size):
        if amount[k] > 0.0:
            put_at(k, amount[k], height, bedrock, sediment, deposited)


def equilibrium_line(params: IceParams, ground: np.ndarray, k: int) -> float:
    """The equilibrium-line altitude (m) of pass ``k`` over ``ground`` (m)."""
    lo, hi = float(ground.min()), float(ground.max())
    ela = lo + params.ela_fraction * (hi - lo) if params.ela_fraction > 0.0 else params.ela
    if params.retreat > 0.0:
        start = params.age * (1.0 - params.retreat)
        mid = k * params.time_step + 0.5 * _pass_years(params, k)
        if mid > start:
            top = hi + RETREAT_MARGIN
            ela += (top - ela) * min((mid - start) / (params.age - start), 1.0) \
                if top > ela else 0.0
    return ela


def glaciate(terrain: Terrain, params: IceParams, k: int, years: float,
             height: np.ndarray, first_step: float = 0.1) -> dict[str, float]:
    """Pass ``k`` of ``years`` on ``terrain`` in place (``height`` kept as bedrock +
    sediment). Returns the pass's books: ice ``gained``, ``melted``, ``out`` (m³),
    rock ``taken`` and ``laid`` and debris ``debris_out`` (m³), the solver's
    ``steps``, ``smallest`` and ``largest`` step (yr) and ``last_step``."""
    cell = terrain.cell_size
    f = flow_factor(params, cell)
    ground = height * cell
    ice = terrain.ice * cell
    # old snow (firn) deeper than firn_depth becomes ice
    firn = np.maximum(terrain.snow * cell - params.firn_depth, 0.0)
    ice += firn * FIRN_TO_ICE
    bed_c = _coarse(ground, f)
    h_c = _coarse(ice, f)
    rain = terrain.rain
    rain_c = _coarse(rain / max(float(rain.mean()), 1e-300), f)
    dx = cell * f
    area = dx * dx
    flow_years = years / params.acceleration
    flux_sum = np.zeros((2,) + h_c.shape)
    slide_sum = np.zeros_like(flux_sum)
    face_sum = np.zeros_like(flux_sum)
    thick_sum = np.zeros_like(h_c)
    melt_sum = np.zeros_like(h_c)
    books = np.zeros(glacier.BOOKS)
    deform = 2.0 * params.softness / 5.0
    slide = params.sliding / 1.0e15  # u_b = C tau^3, 30 m/yr at 1e5 Pa: C = 30 / 1e15
    ela = equilibrium_line(params, ground, k)
    last = glacier.advance(bed_c, h_c, rain_c, dx, flow_years, ela,
                           params.balance_gradient, params.max_accumulation, deform, slide,
                           MAX_SOLVER_STEP, STEP_CHANGE, first_step, flux_sum, slide_sum,
                           face_sum, thick_sum, melt_sum, books)
    if not (np.isfinite(h_c).all() and np.isfinite(last)):
        # the terrain is untouched: the flow ran on copies
        raise ParameterError(
            "ice: the ice flow broke down on this ground (thickness not finite); lower "
            "'sliding' or 'acceleration', or raise 'flow_cell'")
    terrain.snow -= firn / cell
    taken_total = laid_total = gone = 0.0
    surface = _interpolate(bed_c + h_c, ground.shape, f)  # the ice's, on the cells
    if params.erosion > 0.0 and slide > 0.0 and flow_years > 0.0:
        speed_c = glacier.sliding_speed(slide_sum, face_sum, dx, np.zeros_like(h_c))
        # beds bear at most about 200 kPa (50-150 kPa under most glaciers): faster
        # sliding, where the shallow-ice approximation fails on steep walls, counts as
        # that stress's
        np.minimum(speed_c, params.sliding * MAX_STRESS ** 3, out=speed_c)
        # the walls' thin ice slides with the stress of the ice around it; the edge
        # cells only pass the ice out of the map (no bed of theirs is known): no
        # sliding of theirs counts
        thick = thick_sum / flow_years
        thick[0, :] = thick[-1, :] = 0.0
        thick[:, 0] = thick[:, -1] = 0.0
        speed_c = glacier.couple(speed_c, thick, dx, COUPLING, MAX_COUPLING,
                                 np.empty_like(speed_c))
        speed = _interpolate(speed_c, ground.shape, f)
        # the share of the flow cells around with ice: no step at the ice's edge
        under = _interpolate((thick_sum > 0.0).astype(float), ground.shape, f)
        by, bx = np.gradient(ground, cell)
        under[_adverse(surface, by, bx, cell)] = 0.0
        under *= _normal(by, bx)
        dig = under * (params.erosion * speed ** params.erosion_exponent * years / cell)
        flat = terrain.bedrock.reshape(-1)
        taken = np.zeros(flat.size)
        _erode(dig.reshape(-1), height.reshape(-1), flat, terrain.sediment.reshape(-1),
               terrain.eroded.reshape(-1), terrain.deposited.reshape(-1),
               terrain.erodibility.reshape(-1), taken)
        taken_total = float(taken.sum())
        counts = _block_counts(ground.shape, f)
        load = _coarse(taken.reshape(ground.shape), f) * counts  # cell units x cells
        laid_c = np.zeros_like(h_c)
        cap = MORAINE_RATE * years / cell * counts  # cell units x cells
        gone = glacier.carry_debris(bed_c + h_c, bed_c, load, flux_sum, melt_sum, h_c,
                                    cap, laid_c)
        # smoothly across the blocks: the amounts per cell interpolated, scaled to
        # what was laid
        per_cell = _spread(laid_c, _smooth(_interpolate(laid_c / counts, ground.shape, f),
                                           f), f)
        _lay(np.ascontiguousarray(per_cell).reshape(-1), height.reshape(-1), flat,
             terrain.sediment.reshape(-1), terrain.deposited.reshape(-1))
        laid_total = float(per_cell.sum())
        terrain.outflow += gone
    new_ground = height * cell
    terrain.ice[...] = _fine_ice(h_c, surface, new_ground, f) / cell
    vol = cell ** 3
    return {"gained": books[glacier.GAINED] * area, "melted": books[glacier.MELTED] * area,
            "out": books[glacier.OUT] * area, "taken": taken_total * vol,
            "laid": laid_total * vol, "debris_out": gone * vol,
            "steps": books[glacier.STEPS], "smallest": books[glacier.SMALLEST],
            "largest": books[glacier.LARGEST], "last_step": last, "ela": ela}


def _smooth(grid: np.ndarray, f: int) -> np.ndarray:
    """Two box filters ``f`` cells wide along each axis (a smooth bump of about two
    flow cells); the edges repeat."""
    if f == 1:
        return grid
    out = grid
    for axis in (0, 1):
        for _ in range(2):
            pad = [(0, 0), (0, 0)]
            pad[axis] = (f // 2 + 1, f - f // 2)
            c = np.cumsum(np.pad(out, pad, mode="edge"), axis=axis)
            n = out.shape[axis]  # cell i sums the padded cells i+1 .. i+f
            hi = np.take(c, np.arange(f, f + n), axis=axis)
            lo = np.take(c, np.arange(n), axis=axis)
            out = (hi - lo) / f
    return out


def _normal(by: np.ndarray, bx: np.ndarray) -> np.ndarray:
    """Metres the ground lowers per metre the ice wears its bed, which it wears at
    right angles to the bed: ``sqrt(1 + |grad b|^2)``, at most MAX_NORMAL. On a valley's
    walls the ice takes more height than on its floor, which widens the floor (the
    cross-section models of Harbor 1992). ``by``, ``bx``: the bed's gradient."""
    return np.minimum(np.sqrt(1.0 + bx * bx + by * by), MAX_NORMAL)


def _adverse(surface: np.ndarray, by: np.ndarray, bx: np.ndarray,
             cell: float) -> np.ndarray:
    """Where the bed rises against the ice flow more steeply than ADVERSE x the ice
    surface falls: meltwater climbing such a slope freezes onto the bed, which stops
    the erosion there (Alley et al. 2003; the bound on overdeepenings of Egholm et
    al. 2012). ``by``, ``bx``: the bed's gradient."""
    sy, sx = np.gradient(surface, cell)
    slope = np.hypot(sx, sy)
    rise = -(bx * sx + by * sy) / np.where(slope > 0.0, slope, 1.0)  # bed rise along flow
    return (slope > 0.0) & (rise > ADVERSE * slope)


def _block_counts(shape: tuple[int, ...], f: int) -> np.ndarray:
    rows, cols = shape
    r = np.diff(np.append(np.arange(0, rows, f), rows))
    c = np.diff(np.append(np.arange(0, cols, f), cols))
    return np.outer(r, c).astype(float)


def run_batch(terrain: Terrain, params: IceParams, seed: int, first: int, count: int,
              height: np.ndarray, cdf: np.ndarray | None = None) -> int:
    """Passes ``first .. first+count-1``; passes past ``age`` do nothing. Returns the
    cell updates done."""
    del seed, cdf  # deterministic, no random numbers
    total = steps(params)
    done = 0
    for k in range(first, min(first + count, total)):
        glaciate(terrain, params, k, _pass_years(params, k), height)
        done += height.size
    return done


def advice(params: IceParams, cell_size: float) -> str | None:
    """A sentence when the grid cannot show glaciers."""
    if cell_size < 1.0:
        return (f"ice: the climate is in metres and years, meant for mountains "
                f"kilometres across; on these {cell_size:.3g} m cells no glacier forms "
                "(scale the object to its real size, e.g. 30 m a cell)")
    return None


PROCESS = Process(
    "ice", IceParams, run_batch, "Glaciers",
    "ice that gathers above the equilibrium line, flows by the shallow-ice "
    "approximation and grinds its bed where it slides: U-shaped troughs, cirques, "
    "overdeepened basins, hanging valleys and moraines (docs/ice.md)",
    order=6, stream=STREAM_ID,
    reads=("bedrock", "sediment", "erodibility", "rain", "ice", "snow"),
    writes=("bedrock", "sediment", "eroded", "deposited", "ice", "snow"),
    fields=(Field("ice", "depth", "thickness of glacier ice", lo=0.0, exact="te_ice",
                  refine="amount"),),
    passes=steps, advice=advice, bytes_per_cell=113, reach="map", levels="coarse",
    work=cell_pass, seconds_per_unit=8.8e-7)
