"""Small numba helpers shared by the process kernels: random numbers and layered cells.

Every change of bedrock, sediment and the eroded/deposited records made by a process
goes through :func:`transfer` (directly or through :func:`exchange`, :func:`take`,
:func:`put_at` and the ``put*`` helpers), so mass bookkeeping is written, and tested,
once (tests/core/test_contract.py).

Random numbers are counter based: every particle gets its own stream from
``(seed, stream id, particle index)``, so a result never depends on how the work
was sliced or which thread ran it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import numba_cache  # noqa: F401 - a failing cache write is a warning

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_INV53 = 1.0 / 9007199254740992.0  # 2**-53


@njit(cache=True)
def mix64(x):
    """splitmix64 finaliser: a well-spread 64-bit hash of ``x`` (uint64)."""
    z = x + _GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@njit(cache=True)
def stream_state(seed, stream, index):
    """Initial RNG state for particle ``index`` of ``stream`` under ``seed`` (all uint64)."""
    return mix64(mix64(mix64(seed) ^ stream) ^ index)


@njit(cache=True)
def next_uniform(state):
    """Advance a splitmix64 state; return (new state, uniform float in [0, 1))."""
    state = state + _GOLDEN
    z = (state ^ (state >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z = z ^ (z >> _S31)
    return state, float(z >> _S11) * _INV53


@njit(cache=True)
def transfer(k, from_sed, from_rock, lay, height, bedrock, sediment, eroded, deposited):
    """The one place where material moves between the ground and the masks.

    At cell ``k`` (an ``(r, c)`` tuple on 2-D grids, or a flat index on 1-D views) take
    ``from_sed`` (0 <= from_sed <= sediment[k]) of sediment and ``from_rock`` of bedrock
    away and lay ``lay`` >= 0 of sediment down; all amounts cell units, used exactly as
    given. Books the removed part in ``eroded`` (net of what was laid here before, which
    ``deposited`` gives back first) and the laid part in ``deposited``, so per cell
    eroded - deposited changes by exactly removed - lay. Writes ``height[k]`` = bedrock
    + sediment unless ``height`` is None (a parallel sweep whose neighbours read the old
    surface writes it later); ``eroded`` may be None when nothing is removed.
    Branch-free: a zero part changes no value. Returns the material removed."""
    new_sed = (sediment[k] - from_sed) + lay
    new_rock = bedrock[k] - from_rock
    sediment[k] = new_sed
    bedrock[k] = new_rock
    if height is not None:
        height[k] = new_rock + new_sed
    removed = from_sed + from_rock
    dep = deposited[k]
    from_dep = min(removed, dep)
    deposited[k] = (dep - from_dep) + lay
    if eroded is not None:
        eroded[k] += removed - from_dep
    return removed


@njit(cache=True)
def uplift_at(k, amount, height, bedrock, uplifted):
    """Raise the bedrock of cell ``k`` by ``amount`` >= 0 (cell units) from below the
    grid (tectonic uplift): the one way material enters the ground, booked in
    ``uplifted``. ``height`` is kept as bedrock + sediment."""
    bedrock[k] += amount
    height[k] += amount
    uplifted[k] += amount


@njit(cache=True)
def exchange(k, dig, lay, height, bedrock, sediment, eroded, deposited, erodibility):
    """At cell ``k`` remove up to ``dig`` >= 0 (sediment first, then bedrock scaled by
    erodibility, at most 1: rock never gives more than loose sediment would, or a
    particle would dig beyond what it asked for, into a pit that deepens without end)
    and lay ``lay`` >= 0 of sediment down (:func:`transfer`, height written). Returns
    the material removed."""
    from_sed = min(dig, sediment[k])
    rock = (dig - from_sed) * min(erodibility[k], 1.0)
    return transfer(k, from_sed, rock, lay, height, bedrock, sediment, eroded, deposited)


@njit(cache=True)
def apply_change(k, change, height, bedrock, sediment, eroded, deposited):
    """Move the surface at cell ``k`` by ``change`` (cell units, :func:`transfer`,
    height written): a fall takes sediment first, then bedrock; a rise is sediment."""
    if change < 0.0:
        from_sed = min(-change, sediment[k])
        transfer(k, from_sed, -change - from_sed, 0.0, height, bedrock, sediment, eroded,
                 deposited)
    elif change > 0.0:
        transfer(k, 0.0, 0.0, change, height, bedrock, sediment, eroded, deposited)


@njit(cache=True)
def take(r, c, amount, height, bedrock, sediment, eroded, deposited, erodibility):
    """Remove up to ``amount`` at (r, c): sediment first, then bedrock scaled by
    erodibility. Updates masks and height; returns the material actually removed."""
    return exchange((r, c), amount, 0.0, height, bedrock, sediment, eroded, deposited,
                    erodibility)


@njit(cache=True)
def put_at(k, amount, height, bedrock, sediment, deposited):
    """Lay ``amount`` (>= 0) of sediment down at cell ``k`` (an ``(r, c)`` tuple on 2-D
    grids, a flat index on 1-D views) and record it in the mask (:func:`transfer`)."""
    transfer(k, 0.0, 0.0, amount, height, bedrock, sediment, None, deposited)


@njit(cache=True)
def put(r, c, amount, height, bedrock, sediment, deposited):
    """Lay ``amount`` (>= 0) of sediment down at (r, c) and record it in the mask."""
    put_at((r, c), amount, height, bedrock, sediment, deposited)


@njit(cache=True)
def put_bilinear(x, y, amount, height, bedrock, sediment, deposited):
    """Spread a deposit over the 4 cells around (x, y) with bilinear weights."""
    xi = int(np.floor(x))
    yi = int(np.floor(y))
    fx = x - xi
    fy = y - yi
    put(yi, xi, amount * (1 - fx) * (1 - fy), height, bedrock, sediment, deposited)
    put(yi, xi + 1, amount * fx * (1 - fy), height, bedrock, sediment, deposited)
    put(yi + 1, xi, amount * (1 - fx) * fy, height, bedrock, sediment, deposited)
    put(yi + 1, xi + 1, amount * fx * fy, height, bedrock, sediment, deposited)


@njit(cache=True)
def put_bilinear_flat(x, y, amount, cols, height, bedrock, sediment, deposited):
    """:func:`put_bilinear` on 1-D views of (rows, cols) grids; needs x, y >= 0."""
    xi = int(x)
    yi = int(y)
    fx = x - xi
    fy = y - yi
    k = np.uint64(yi * cols + xi)
    below = k + np.uint64(cols)
    one = np.uint64(1)
    put_at(k, amount * (1 - fx) * (1 - fy), height, bedrock, sediment, deposited)
    put_at(k + one, amount * fx * (1 - fy), height, bedrock, sediment, deposited)
    put_at(below, amount * (1 - fx) * fy, height, bedrock, sediment, deposited)
    put_at(below + one, amount * fx * fy, height, bedrock, sediment, deposited)


@njit(cache=True)
def _first_above(sorted_values, value):
    """Index of the first element > ``value`` in ascending ``sorted_values`` (its size
    if none): ``np.searchsorted(..., side="right")``, whose numba version compiles
    string and complex-number helpers (about 1.5 s on a cold cache)."""
    lo = 0
    hi = sorted_values.size
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_values[mid] <= value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def start_position(state, rain_cdf, rows, cols):
    """Random start inside the grid's interior squares: uniform, or weighted by
    ``rain_cdf`` (cumulative weights of the (rows-1)*(cols-1) squares; empty = uniform)."""
    state, u = next_uniform(state)
    state, a = next_uniform(state)
    state, b = next_uniform(state)
    if rain_cdf.size == 0:
        return state, a * (cols - 1), b * (rows - 1)
    k = _first_above(rain_cdf, u * rain_cdf[-1])
    if k >= rain_cdf.size:
        k = rain_cdf.size - 1
    r = k // (cols - 1)
    c = k - r * (cols - 1)
    return state, c + a, r + b


def rain_cdf(rain: np.ndarray) -> np.ndarray:
    """Cumulative start weights per interior square (mean of its 4 corners); empty if
    rain is uniform, which selects the cheaper uniform sampling."""
    if np.all(rain == rain.flat[0]):
        return np.empty(0)
    squares = 0.25 * (rain[:-1, :-1] + rain[:-1, 1:] + rain[1:, :-1] + rain[1:, 1:])
    return np.cumsum(squares.ravel())


@njit(cache=True, error_model="numpy")
def heap_push(keys, cells, top, key, cell):
    """Push (key, cell) on the binary min-heap held in keys/cells[:top]; returns top."""
    j = top
    while j > 0:
        parent = (j - 1) >> 1
        if keys[parent] <= key:
            break
        keys[j] = keys[parent]
        cells[j] = cells[parent]
        j = parent
    keys[j] = key
    cells[j] = cell
    return top + 1


@njit(cache=True, error_model="numpy")
def heap_pop(keys, cells, top):
    """Remove the heap's lowest entry; returns (key, cell, new top)."""
    key = keys[0]
    cell = cells[0]
    top -= 1
    last_key = keys[top]
    last_cell = cells[top]
    j = 0
    while True:
        child = 2 * j + 1
        if child >= top:
            break
        if child + 1 < top and keys[child + 1] < keys[child]:
            child += 1
        if keys[child] >= last_key:
            break
        keys[j] = keys[child]
        cells[j] = cells[child]
        j = child
    keys[j] = last_key
    cells[j] = last_cell
    return key, cell, top


@njit(cache=True)
def hold_protected(protect, bedrock0, sediment0, eroded0, deposited0, height, bedrock,
                   sediment, eroded, deposited):
    """Hold back the part ``protect`` (0..1 per cell) of every change a process made
    since the ``*0`` copies were taken: ``new = old + (1 - protect) * (new - old)``;
    cells with protect 1 get their old values back bit for bit. Refreshes ``height``.
    Returns the material (cell units x cells) put back into the ground, which the
    caller books so the mass budget stays exact. All arrays are 1-D views (``.reshape(-1)``)."""
    held = 0.0
    for k in range(protect.size):
        p = protect[k]
        if p <= 0.0:
            continue
        rock = bedrock[k]
        sed = sediment[k]
        if p >= 1.0:
            new_rock = bedrock0[k]
            new_sed = sediment0[k]
            eroded[k] = eroded0[k]
            deposited[k] = deposited0[k]
        else:
            keep = 1.0 - p
            new_rock = bedrock0[k] + keep * (rock - bedrock0[k])
            new_sed = max(sediment0[k] + keep * (sed - sediment0[k]), 0.0)
            eroded[k] = eroded0[k] + keep * (eroded[k] - eroded0[k])
            deposited[k] = deposited0[k] + keep * (deposited[k]
                                                              - deposited0[k])
        held += (new_rock - rock) + (new_sed - sed)
        bedrock[k] = new_rock
        sediment[k] = new_sed
        height[k] = new_rock + new_sed
    return held


@njit(nogil=True, cache=True)
def copy_span(first, last, src, dst):
    """``dst[first:last] = src[first:last]`` (1-D views): a slice of a copy for the
    pooled threads."""
    for k in range(first, last):
        dst[k] = src[k]


@njit(nogil=True, cache=True)
def book_change(first, last, height, before, change):
    """``change += height - before`` over ``first .. last - 1`` of the 1-D views (the
    same two roundings as numpy's subtract then add), then ``before = height``: a
    process's change booked and the next one's starting ground taken in one pass."""
    for k in range(first, last):
        h = height[k]
        change[k] += h - before[k]
        before[k] = h


@njit(nogil=True, cache=True)
def book_change_under_water(first, last, height, before, change, pool):
    """:func:`book_change`, and first the standing water kept level over ground that
    moved under it: a wet cell's depth becomes its surface before the process (``before
    + pool``) minus the new ground, never below 0 (the process did not touch ``pool``).
    Returns the wet cells of the span (before the update)."""
    wet = 0
    for k in range(first, last):
        h = height[k]
        b = before[k]
        p = pool[k]
        if p > 0.0:
            wet += 1
            d = (b + p) - h
            pool[k] = d if d > 0.0 else 0.0
        change[k] += h - b
        before[k] = h
    return wet


# -- brushes: where a particle takes and lays material (droplets, snowballs) ----------

@njit(cache=True, error_model="numpy", inline="always")
def brush_weights(xp, yp, radius, rows, cols):
    """The brush around (xp, yp): its cell box inside the grid (x0, x1, y0, y1), 1/r^2
    and the sum of its weights ``max(1 - d^2/r^2, 0)`` over the box."""
    inv_r2 = 1.0 / (radius * radius)
    x0 = max(int(np.floor(xp - radius)) + 1, 0)
    x1 = min(int(np.floor(xp + radius)), cols - 1)
    y0 = max(int(np.floor(yp - radius)) + 1, 0)
    y1 = min(int(np.floor(yp + radius)), rows - 1)
    total = 0.0
    for y in range(y0, y1 + 1):
        for x in range(x0, x1 + 1):
            total += max(1.0 - ((x - xp) * (x - xp) + (y - yp) * (y - yp)) * inv_r2, 0.0)
    return x0, x1, y0, y1, inv_r2, total


@njit(cache=True, error_model="numpy", inline="always")
def erode_brush(xp, yp, amount, floor, radius, rows, cols, height, bedrock, sediment,
                 eroded, deposited, erodibility):
    """Remove ``amount`` around (xp, yp) with weights 1 - d^2/r^2, normalised over the
    cells inside the grid, never taking a cell below ``floor`` (the next height on the
    path: no pits, no runaway at outlets). Returns what was actually removed (hard
    bedrock and the floor give less). Arrays are 1-D views of the (rows, cols) grids."""
    x0, x1, y0, y1, inv_r2, total = brush_weights(xp, yp, radius, rows, cols)
    removed = 0.0
    if total <= 0.0:
        return removed
    scale = amount / total
    for y in range(y0, y1 + 1):
        row = np.uint64(y * cols)  # unsigned: no negative-index wraparound per access
        for x in range(x0, x1 + 1):
            k = row + np.uint64(x)
            wgt = 1.0 - ((x - xp) * (x - xp) + (y - yp) * (y - yp)) * inv_r2
            if wgt > 0.0:  # a zero share would change nothing: skip the cell
                share = min(wgt * scale, height[k] - floor)
                if share > 0.0:
                    removed += exchange(k, share, 0.0, height, bedrock, sediment, eroded,
                                        deposited, erodibility)
    return removed


@njit(cache=True, error_model="numpy", inline="always")
def tent_span(p, reach, n):
    """First cell, last cell and weight sum of the 1-D tent ``max(1 - |i - p| / reach,
    0)`` over cells 0 .. n-1 (reach >= 1 cell)."""
    i0 = max(int(np.floor(p - reach)) + 1, 0)
    i1 = min(int(np.floor(p + reach)), n - 1)
    inv = 1.0 / reach
    total = 0.0
    for i in range(i0, i1 + 1):
        total += max(1.0 - abs(i - p) * inv, 0.0)
    return i0, i1, inv, total


@njit(cache=True, error_model="numpy", inline="always")
def deposit_tent(xp, yp, amount, reach, rows, cols, height, bedrock, sediment, deposited):
    """Lay ``amount`` (cell³) down around (xp, yp) with the separable tent weights
    ``(1 - |dx|/reach)(1 - |dy|/reach)``, normalised over the cells inside the grid.
    ``reach`` is a world length in cells (at least 1): at 1 cell this is the article's
    bilinear deposit on the 4 cells around the droplet; on finer grids the load still
    covers the same world area instead of stacking into towers a cell wide. Arrays are
    1-D views of the (rows, cols) grids."""
    if reach <= 1.0:  # the same weights, without the loops
        put_bilinear_flat(xp, yp, amount, cols, height, bedrock, sediment, deposited)
        return
    x0, x1, inv, sx = tent_span(xp, reach, cols)
    y0, y1, _, sy = tent_span(yp, reach, rows)
    scale = amount / (sx * sy)
    for y in range(y0, y1 + 1):
        wy = max(1.0 - abs(y - yp) * inv, 0.0) * scale
        row = np.uint64(y * cols)
        for x in range(x0, x1 + 1):
            wgt = max(1.0 - abs(x - xp) * inv, 0.0) * wy
            put_at(row + np.uint64(x), wgt, height, bedrock, sediment, deposited)
