"""Hydrology: streams and pools (ALGORITHMS.md §4, seeds 002/004, N. McDonald's
"procedural hydrology: dynamic rivers and lakes").

Water particles alternate between two algorithms:

* **descend** — a droplet with volume rolls over the surface (ground + pool), pushed by
  the surface normal, slowed by friction, evaporating; it exchanges sediment with the
  ground (``kernels.take``/``kernels.put``, so the sediment layer, erodibility and the
  eroded/deposited masks stay consistent) and marks every cell it visits in a per-batch
  ``track`` mask. The stream map lowers friction and evaporation; vegetation lowers the
  mass exchange. A descent ends off the map (the water is gone, its sediment goes to
  ``terrain.outflow``), on entering a pool, or when it idles on a strong stream; then
  the remaining volume floods.
* **flood** — a test plane rises from the water surface at the particle. Each try fills
  the 8-connected set of cells whose surface is under the plane; cells below the current
  water level are drains. With a drain the lake is lowered slowly toward it, the particle
  moves there with the overflow and 10 % of its sediment, and descends again. Without
  one, the volume under the plane is poured in if the particle has it, else the plane is
  lowered; a bounded number of failed tries.

Our changes to the article's flood (documented, tested):

* The fill is an explicit stack over a per-shape scratch whose cells are stamped with a
  generation number, so one try costs the pool's area (plus its rim), never the map's
  area, and nothing recurses.
* The lowest drain is kept (the article's comparison kept the highest); a failed try no
  longer raises the water level (the article set it to the failed plane, which later
  made the start cell its own "drain": the jumping levels the author reports); the
  first try at the water level itself is not counted as a failure.
* Sea level (optional): cells below it that connect to a map edge are ocean; they are
  filled to sea level in the pool map before every batch, and a particle or a flood that
  reaches the ocean drains away. Without it the map edges are walls, as in the article.
* Mass: sediment a particle carries is never lost silently. Off the map it is counted in
  ``terrain.outflow``; when water goes into a pool, the sediment in that water settles
  where the particle entered (a delta); what a drain does not keep settles there too.
  Material laid down in a pool displaces water, so the pool's surface stays flat.

Heights, pool depths and sea level are in cell units; a pool depth ``d`` on ``n`` cells
holds ``volume_factor * d * n`` particle volumes (a new particle has volume 1).

Runs on one thread, particles in index order; particle ``k`` draws its random numbers
from ``(seed, STREAM_ID, k)``, so the result depends only on (terrain, params, seed,
first, count).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit, objmode

from .kernels import exchange, put, rain_cdf, start_position, stream_state
from .params import Params, param
from .terrain import Terrain

STREAM_ID = 5

#: The article's fixed thresholds: a descent on a stream (> STREAM_STOP) whose
#: acceleration is below ACC_STOP ends and floods.
STREAM_STOP = 0.5
ACC_STOP = 0.01

#: relative tolerance under which two water surfaces count as the same level
LEVEL_TOL = 1e-9

_U1 = np.uint64(1)  # unsigned index arithmetic stays unsigned (no float promotion)

# descend outcomes
_OUT, _EVAPORATED, _FLOOD = 0, 1, 2
# flood outcomes: water all in the pool (or dropped), overflow to a drain, into the sea
_DONE, _DRAINED, _SEA = 0, 1, 2


@dataclasses.dataclass(frozen=True)
class HydrologyParams(Params):
    """Streams and pools (article defaults). Heights and sea level are in cell units."""

    dt: float = param(1.2, 0.01, 1.9, "step", "time step of a descending particle")
    density: float = param(1.0, 0.01, 100.0, "-", "water density; higher = more inertia",
                           soft_hi=10.0)
    evaporation: float = param(0.001, 1e-4, 0.5, "1/step", "fraction of volume lost per step",
                               soft_hi=0.05)
    deposition: float = param(0.1, 0.0, 1.0, "1/step",
                              "mass exchange rate toward the equilibrium concentration")
    min_volume: float = param(0.01, 1e-4, 1.0, "volume", "a particle ends below this volume")
    friction: float = param(0.05, 0.0, 0.5, "1/step", "speed lost per step")
    volume_factor: float = param(100.0, 1.0, 1e4, "volume/cell",
                                 "particle volume that makes one cell unit of pool depth "
                                 "on one cell", soft_hi=1000.0)
    drainage: float = param(0.001, 0.0, 1.0, "-",
                            "how fast a draining pool sinks toward its drain, per particle")
    spill: int = param(5, 1, 100, "times", "descend-flood cycles a particle may do")
    stream_rate: float = param(0.01, 0.0, 1.0, "1/batch",
                               "stream map adaptation rate per batch")
    drain_sediment: float = param(0.1, 0.0, 1.0, "-",
                                  "fraction of its sediment a draining particle keeps")
    max_tries: int = param(10, 1, 100, "tries", "failed flood tries before a particle "
                           "gives up (its water is dropped)")
    max_steps: int = param(20000, 1, 10_000_000, "steps",
                           "safety cap on the steps of one descent (defaults end by "
                           "evaporation within ~4800)", soft_hi=100000)
    sea: bool = param(False, doc="enable the sea: below sea_level, map edges drain and "
                      "connected low ground is ocean")
    sea_level: float = param(0.0, -1e6, 1e6, "cell units",
                             "sea surface height (world height / cell size)")
    batch: int = param(250, 1, 1_000_000, "particles",
                       "particles per batch; the stream map is updated after each",
                       soft_hi=10000)

    def as_array(self) -> np.ndarray:
        return np.array([self.dt, self.density, self.evaporation, self.deposition,
                         self.min_volume, self.friction, self.volume_factor, self.drainage,
                         self.spill, self.drain_sediment, self.max_tries, self.max_steps,
                         float(self.sea), self.sea_level], dtype=np.float64)


# ---------------------------------------------------------------------------- scratch

def _scratch(terrain: Terrain) -> tuple[np.ndarray, ...]:
    """Work arrays for the fill, kept with the terrain (freed with it): visit stamps
    (with the generation counter in ``gen[0]``), an explicit stack and the fill set.
    Never cleared: a new generation number marks every cell unvisited in O(1)."""
    found = terrain.__dict__.get("_fill_scratch")
    if found is None or found[0].shape != terrain.shape:
        n = terrain.bedrock.size
        found = (np.zeros(terrain.shape, dtype=np.int32), np.zeros(1, dtype=np.int64),
                 np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))
        terrain.__dict__["_fill_scratch"] = found
    return found


# ---------------------------------------------------------------------------- kernels

@njit(cache=True, inline="always")
def _settle(r, c, amount, height, bedrock, sediment, deposited, pool):
    """Lay sediment down at (r, c); in a pool it displaces water (the surface stays)."""
    if amount > 0.0:
        put(r, c, amount, height, bedrock, sediment, deposited)
        pool[r, c] = max(pool[r, c] - amount, 0.0)


@njit(cache=True, error_model="numpy")
def mark_ocean(sea_level, height, pool, ocean, stack):
    """Mark cells below ``sea_level`` connected (8-neighbour) to a map edge as ocean and
    fill them to sea level in the pool map. Returns the number of ocean cells."""
    rows, cols = height.shape
    ocean[:, :] = 0
    top = 0
    for r in range(rows):
        for c in range(cols):
            if (r == 0 or c == 0 or r == rows - 1 or c == cols - 1) and \
                    height[r, c] < sea_level:
                ocean[r, c] = 1
                stack[top] = r * cols + c
                top += 1
    count = 0
    while top > 0:
        top -= 1
        i = stack[top]
        r = i // cols
        c = i - r * cols
        pool[r, c] = sea_level - height[r, c]
        count += 1
        for dr in range(-1, 2):
            for dc in range(-1, 2):
                nr = r + dr
                nc = c + dc
                if 0 <= nr < rows and 0 <= nc < cols and ocean[nr, nc] == 0 and \
                        height[nr, nc] < sea_level:
                    ocean[nr, nc] = 1
                    stack[top] = nr * cols + nc
                    top += 1
    return count


@njit(cache=True, error_model="numpy")
def _fill(start, plane, level, height, pool, ocean, stamp, gen, stack, members):
    """Connected set (8-neighbour) of cells from ``start`` whose surface is within
    [``level``, ``plane``]; cells below ``level`` (and ocean cells) are drains and are
    not entered. Costs the set plus its rim. ``members`` receives flat indices; the
    stack holds (row << 32) | col. Returns (set size, lowest drain or -1, drain
    surface)."""
    rows, cols = height.shape
    low = level - LEVEL_TOL * max(1.0, abs(level))  # rounding in a flat pool is no drain
    g = gen[0] + 1
    if g >= 2147483647:  # stamps are int32: start over once in 2**31 fills
        stamp[:, :] = 0
        g = 1
    gen[0] = g
    r0 = start // cols
    c0 = start - r0 * cols
    stamp[r0, c0] = g
    stack[0] = (r0 << 32) | c0
    top = 1
    n = 0
    drain = -1
    dsurf = np.inf
    while top > 0:
        top -= 1
        packed = stack[top]
        r = packed >> 32
        c = packed & 0xFFFFFFFF
        s = height[r, c] + pool[r, c]
        if ocean[r, c] != 0 or s < low:
            if s < dsurf:
                dsurf = s
                drain = r * cols + c
            continue
        if s > plane:
            continue
        members[n] = r * cols + c
        n += 1
        for nr in range(max(r - 1, 0), min(r + 2, rows)):
            for nc in range(max(c - 1, 0), min(c + 2, cols)):
                if stamp[nr, nc] != g:
                    stamp[nr, nc] = g
                    stack[top] = (nr << 32) | nc
                    top += 1
    return n, drain, dsurf


@njit(cache=True, error_model="numpy")
def _flood(r0, c0, volume, sed, p, height, bedrock, sediment, deposited, pool, ocean, stamp,
           gen, stack, members):
    """Flood from cell (r0, c0) with a particle of ``volume`` carrying concentration
    ``sed``. Returns (outcome, volume left, concentration, drain row, drain col, tries)."""
    vf, drainage, keep, max_tries = p[6], p[7], p[9], int(p[10])
    min_vol = p[4]
    rows, cols = height.shape
    hf = height.reshape(rows * cols)  # flat views for the loops over the set
    pf = pool.reshape(rows * cols)
    settle = 0.0  # sediment mass to lay down at (r0, c0) when done here
    if ocean[r0, c0] != 0:
        _settle(r0, c0, volume * sed, height, bedrock, sediment, deposited, pool)
        return _SEA, volume, 0.0, r0, c0, 0
    start = r0 * cols + c0
    level = height[r0, c0] + pool[r0, c0]
    plane = level
    fails = 0
    tries = 0
    while volume > min_vol and fails < max_tries and tries < max_tries + 64:
        tries += 1
        n, drain, dsurf = _fill(start, plane, level, height, pool, ocean, stamp, gen, stack,
                                members)
        if drain >= 0 and plane > level and n > 0:
            # the plane may have overshot the rim: if the particle could not even fill
            # the set under it, lower the plane to what it holds and try again
            under = 0.0
            for j in range(n):
                i = members[j]
                under += plane - (hf[i] + pf[i])
            under *= vf
            if under > volume * (1.0 + 1e-9) and fails + 1 < max_tries:
                fails += 1
                plane -= (under - volume) / n / vf
                if plane <= level:
                    plane = level + 0.5 * volume / n / vf
                continue
        if drain >= 0:
            dr = drain // cols
            dc = drain - dr * cols
            new_level = level - drainage * max(level - dsurf, 0.0)
            for j in range(n):
                i = members[j]
                pf[i] = max(new_level - hf[i], 0.0)
            settle += (1.0 - keep) * volume * sed
            sed *= keep
            _settle(r0, c0, settle, height, bedrock, sediment, deposited, pool)
            if ocean[dr, dc] != 0:  # into the sea: the particle is gone
                _settle(dr, dc, volume * sed, height, bedrock, sediment, deposited, pool)
                return _SEA, volume, 0.0, dr, dc, tries
            return _DRAINED, volume, sed, dr, dc, tries
        if n == 0:
            break
        under = 0.0
        for j in range(n):
            i = members[j]
            under += plane - (hf[i] + pf[i])
        under *= vf
        if plane > level and under <= volume * (1.0 + 1e-9):
            for j in range(n):
                i = members[j]
                pf[i] = plane - hf[i]
            settle += min(under, volume) * sed
            volume = max(volume - under, 0.0)
            level = plane
            plane += 0.5 * volume / n / vf  # the article's approach from below
        else:
            if tries > 1:
                fails += 1
            # too high: the plane that holds exactly the volume over this set (the
            # article's half step approaches from above and may never fit)
            plane -= (under - volume) / n / vf
            if plane <= level:
                plane = level + 0.5 * volume / n / vf
    # the water that is left (below min volume, or after too many failed tries) is dropped
    settle += volume * sed
    _settle(r0, c0, settle, height, bedrock, sediment, deposited, pool)
    return _DONE, 0.0, 0.0, r0, c0, tries


@njit(cache=True, error_model="numpy")
def _descend(x, y, vx, vy, volume, sed, p, rows, cols, flat, tf):
    """Roll a particle until it leaves the map, evaporates or must flood.
    Returns (outcome, x, y, vx, vy, volume, sed, steps).

    ``flat`` holds 1-d views of the grids (see ``_flat``), ``tf`` of the track mask.
    Each step depends on the one before, so this is written for the latency of a step:
    unsigned flat indices (numba adds no negative-index wraparound), interior gradients
    multiply by 0.5 instead of dividing by 2 (exact), and erosion/deposition go through
    the branch-free ``kernels.exchange``."""
    dt, density, evap, deposition, min_vol, friction = p[0], p[1], p[2], p[3], p[4], p[5]
    max_steps = int(p[11])
    hf, bf, sedf, ef, df, erf, pf, strf, vgf = flat
    steps = 0
    ucols = np.uint64(cols)
    while volume > min_vol and steps < max_steps:
        r = int(y)
        c = int(x)
        # unsigned flat indices: numba adds no negative-index wraparound to the loads
        # (fewer instructions and registers on the step's critical path)
        i = np.uint64(r * cols + c)
        tf[i] = 1
        # central differences inside, one-sided at the edges; x / 2 == x * 0.5 exactly
        if c > 0 and c < cols - 1:
            il = i - _U1
            ir = i + _U1
            fx = 0.5
        else:
            c0 = max(c - 1, 0)
            c1 = min(c + 1, cols - 1)
            il = np.uint64(r * cols + c0)
            ir = np.uint64(r * cols + c1)
            fx = 1.0 / (c1 - c0)
        if r > 0 and r < rows - 1:
            iu = i - ucols
            idn = i + ucols
            fy = 0.5
        else:
            r0 = max(r - 1, 0)
            r1 = min(r + 1, rows - 1)
            iu = np.uint64(r0 * cols + c)
            idn = np.uint64(r1 * cols + c)
            fy = 1.0 / (r1 - r0)
        gx = ((hf[ir] + pf[ir]) - (hf[il] + pf[il])) * fx
        gy = ((hf[idn] + pf[idn]) - (hf[iu] + pf[iu])) * fy
        scale = 1.0 / (np.sqrt(1.0 + gx * gx + gy * gy) * volume * density)
        ax = -gx * scale
        ay = -gy * scale
        here = strf[i]
        eff_d = deposition * max(0.0, 1.0 - vgf[i])
        eff_f = friction * (1.0 - 0.5 * here)
        eff_r = evap * (1.0 - 0.2 * here)
        vx += dt * ax
        vy += dt * ay
        x += dt * vx
        y += dt * vy
        slow = max(0.0, 1.0 - dt * eff_f)
        vx *= slow
        vy *= slow
        steps += 1
        if not (x >= 0.0 and y >= 0.0 and x < cols and y < rows):
            return _OUT, x, y, vx, vy, volume, sed, steps
        j = np.uint64(int(y) * cols + int(x))
        if strf[j] > STREAM_STOP and np.sqrt(ax * ax + ay * ay) < ACC_STOP:
            return _FLOOD, x, y, vx, vy, volume, sed, steps
        if pf[j] > 0.0:
            return _FLOOD, x, y, vx, vy, volume, sed, steps
        if pf[i] <= 0.0:  # water standing in a pool exchanges nothing
            speed = np.sqrt(vx * vx + vy * vy)
            drop = hf[i] - hf[j]
            c_eq = max(0.0, volume * speed * drop)
            # a rate above 1 would overshoot the equilibrium (negative load)
            change = min(dt * eff_d, 1.0) * (c_eq - sed)
            mass = volume * change
            # branch-free (the sign of ``mass`` is unpredictable): at most one of dig /
            # lay is non-zero; never dig a cell below the next one on the path
            dig = max(min(mass, max(0.99 * drop, 0.0)), 0.0)
            lay = max(-mass, 0.0)
            removed = exchange(i, dig, lay, hf, bf, sedf, ef, df, erf)
            sed += removed / volume + (change if mass < 0.0 else 0.0)
        keep = 1.0 - dt * eff_r
        sed /= keep
        volume *= keep
    return _EVAPORATED, x, y, vx, vy, volume, sed, steps


@njit(cache=True, error_model="numpy")
def _particle(x, y, volume, sed, flood_first, p, height, bedrock, sediment, eroded,
              deposited, erodibility, pool, stream, vegetation, track, ocean, stamp, gen,
              stack, members, timing, stats, flat, flat_track):
    """Cycle one particle through descend and flood (at most ``spill`` times). Returns
    (sediment carried off the map, water volume that left the map or reached the sea).

    ``stats``: [descend steps, flood calls, flood tries, descend s, flood s] (times only
    when ``timing``)."""
    spill = int(p[8])
    vx = 0.0
    vy = 0.0
    t0 = 0.0
    t1 = 0.0
    for _ in range(spill):
        if not flood_first:
            if timing:
                with objmode(t0="f8"):
                    t0 = _clock()
            outcome, x, y, vx, vy, volume, sed, steps = _descend(
                x, y, vx, vy, volume, sed, p, height.shape[0], height.shape[1], flat,
                flat_track)
            stats[0] += steps
            if timing:
                with objmode(t1="f8"):
                    t1 = _clock()
                stats[3] += t1 - t0
            r = min(max(int(y), 0), height.shape[0] - 1)
            c = min(max(int(x), 0), height.shape[1] - 1)
            if outcome == _OUT:
                return volume * sed, volume
            if outcome == _EVAPORATED:
                _settle(r, c, volume * sed, height, bedrock, sediment, deposited, pool)
                return 0.0, 0.0
        flood_first = False
        r = int(y)
        c = int(x)
        if timing:
            with objmode(t0="f8"):
                t0 = _clock()
        outcome, volume, sed, dr, dc, tries = _flood(
            r, c, volume, sed, p, height, bedrock, sediment, deposited, pool, ocean, stamp,
            gen, stack, members)
        stats[1] += 1
        stats[2] += tries
        if timing:
            with objmode(t1="f8"):
                t1 = _clock()
            stats[4] += t1 - t0
        if outcome == _SEA:
            return 0.0, volume
        if outcome == _DONE:
            return 0.0, 0.0
        x = dc + 0.5
        y = dr + 0.5
    # out of spills: what is left settles where the particle stands
    _settle(int(y), int(x), volume * sed, height, bedrock, sediment, deposited, pool)
    return 0.0, 0.0


def _clock() -> float:
    import time
    return time.perf_counter()


@njit(cache=True)
def _flat(height, bedrock, sediment, eroded, deposited, erodibility, pool, stream,
          vegetation):
    """1-d views of the grids, in the order ``_descend`` unpacks them."""
    n = height.size
    return (height.reshape(n), bedrock.reshape(n), sediment.reshape(n), eroded.reshape(n),
            deposited.reshape(n), erodibility.reshape(n), pool.reshape(n), stream.reshape(n),
            vegetation.reshape(n))


@njit(cache=True, error_model="numpy")
def _run_batch(seed, first, count, p, cdf, height, bedrock, sediment, eroded, deposited,
               erodibility, pool, stream, vegetation, track, ocean, stamp, gen, stack,
               members, timing, stats):
    rows, cols = height.shape
    flat = _flat(height, bedrock, sediment, eroded, deposited, erodibility, pool, stream,
                 vegetation)
    flat_track = track.reshape(rows * cols)
    lost = 0.0
    for k in range(count):
        st = stream_state(np.uint64(seed), np.uint64(STREAM_ID), np.uint64(first + k))
        st, x, y = start_position(st, cdf, rows, cols)
        out, _ = _particle(x, y, 1.0, 0.0, False, p, height, bedrock, sediment, eroded,
                           deposited, erodibility, pool, stream, vegetation, track, ocean,
                           stamp, gen, stack, members, timing, stats, flat, flat_track)
        lost += out
    return lost


@njit(cache=True, error_model="numpy")
def _adapt_stream(stream, track, rate):
    """``stream = clip((1 - rate) * stream + rate * track, 0, 1)`` in one pass (the same
    operations as the numpy form, without its temporaries and slow clip)."""
    rows, cols = stream.shape
    decay = 1.0 - rate
    for r in range(rows):
        for c in range(cols):
            v = stream[r, c] * decay + rate * track[r, c]
            if v < 0.0:
                v = 0.0
            elif v > 1.0:
                v = 1.0
            stream[r, c] = v


# ---------------------------------------------------------------------------- Python API

def _prepare(terrain: Terrain, params: HydrologyParams, height: np.ndarray):
    """Scratch arrays and the ocean mask (filled to sea level when the sea is on)."""
    stamp, gen, stack, members = _scratch(terrain)
    ocean = np.zeros(terrain.shape, dtype=np.uint8)
    if params.sea:
        mark_ocean(params.sea_level, height, terrain.pool, ocean, stack)
    return ocean, stamp, gen, stack, members


def run_batch(terrain: Terrain, params: HydrologyParams, seed: int, first: int, count: int,
              height: np.ndarray | None = None, cdf: np.ndarray | None = None,
              stats: np.ndarray | None = None, timing: bool = False) -> int:
    """Run particles ``first .. first+count-1`` in place, then update the stream map.

    ``height`` (bedrock + sediment) is kept in step when given. ``stats`` (5 floats,
    accumulated): descend steps, flood calls, flood tries, and with ``timing`` the
    seconds spent in descend and in flood. Returns the number of descend steps."""
    if height is None:
        height = terrain.height()
    if cdf is None:
        cdf = rain_cdf(terrain.rain)
    own = np.zeros(5) if stats is None else stats
    before = own[0]
    ocean, stamp, gen, stack, members = _prepare(terrain, params, height)
    track = np.zeros(terrain.shape, dtype=np.uint8)
    lost = _run_batch(np.uint64(seed & 0xFFFFFFFFFFFFFFFF), first, count, params.as_array(),
                      cdf, height, terrain.bedrock, terrain.sediment, terrain.eroded,
                      terrain.deposited, terrain.erodibility, terrain.pool, terrain.stream,
                      terrain.vegetation, track, ocean, stamp, gen, stack, members,
                      bool(timing), own)
    terrain.outflow += lost
    _adapt_stream(terrain.stream, track, params.stream_rate)
    return int(own[0] - before)


def pour(terrain: Terrain, params: HydrologyParams, row: int, col: int, volume: float,
         height: np.ndarray | None = None) -> float:
    """Pour a particle of ``volume`` (clean water) into cell (row, col): it floods there
    first, then descends from any drain as a normal particle would. The track of its
    descents is not added to the stream map. Returns the water volume that left the map
    or reached the sea (the rest is in pools, evaporated, or dropped below min volume)."""
    if height is None:
        height = terrain.height()
    rows, cols = terrain.shape
    if not (0 <= row < rows and 0 <= col < cols):
        raise ValueError(f"cell ({row}, {col}) is outside the {rows}x{cols} grid")
    if not volume >= 0:
        raise ValueError(f"volume must be >= 0, got {volume!r}")
    ocean, stamp, gen, stack, members = _prepare(terrain, params, height)
    track = np.zeros(terrain.shape, dtype=np.uint8)
    out, gone = _particle(col + 0.5, row + 0.5, float(volume), 0.0, True, params.as_array(),
                          height, terrain.bedrock, terrain.sediment, terrain.eroded,
                          terrain.deposited, terrain.erodibility, terrain.pool,
                          terrain.stream, terrain.vegetation, track, ocean, stamp, gen, stack,
                          members, False, np.zeros(5),
                          _flat(height, terrain.bedrock, terrain.sediment, terrain.eroded,
                                terrain.deposited, terrain.erodibility, terrain.pool,
                                terrain.stream, terrain.vegetation),
                          track.reshape(track.size))
    terrain.outflow += out
    return float(gone)


def pool_volume(terrain: Terrain, params: HydrologyParams) -> float:
    """Water standing in pools, in particle volumes (``volume_factor`` x depth x cells)."""
    return float(params.volume_factor * terrain.pool.sum())
