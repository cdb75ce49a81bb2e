"""Ice flow by the shallow-ice approximation (docs/ice.md): the numerics of the ice
process, on plain arrays in metres and years.

Ice of thickness ``H`` >= 0 lies on a bed ``b``; its surface is ``s = b + H``. It
gains and loses ice by a mass balance ``M(s) = min(beta (s - ela), m_max)`` (metres of
ice a year; the gain scaled by a precipitation map) and flows down its surface with
the flux ``q = -D grad s``,

    D = (rho g)^3 |grad s|^2 H^4 (2A/5 H + C_s)

(Glen's law with n = 3 for the deformation, a Weertman law ``u_b = C_s tau_b^3``
with ``tau_b = rho g H |grad s|`` for the sliding).

A step of ``dt`` years:

1. The mass balance: the gain added, the melt taken (never more than the ice there).
2. The flow, split by axis (x then y, the order alternating step by step): along each
   row (then column) a backward-Euler solve of ``ds/dt = d/dx (D ds/dx)`` with ``D``
   taken from the state before the solve (a tridiagonal system per line, stable at
   any step), then the fluxes through the cell faces from the solved surface. ``D``
   at a face takes the ice thickness of its upstream side, reconstructed with the
   superbee limiter (the MUSCL scheme of Jarosch, Schoof & Anslow 2013): ice on a cliff
   top does not flow through the rock below it, and no ice flows out of a cell that
   has none. Each cell's outgoing fluxes are scaled down, if needed, to the ice it
   holds, so the update is conservative to rounding and never leaves negative ice.
3. Ice that reaches the map's edge leaves it (an open boundary), booked as outflow.

The step length adapts: it grows by half each step up to ``max_step`` and shrinks so
that no cell's thickness changes by more than ``change`` metres in one step.

All of it runs serially in one compiled loop (a pass is thousands of short steps on
a grid coarser than the terrain's; threads would spend more on waiting than they save),
so the result is the same on any number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit

RHO_G = 910.0 * 9.81  # Pa per metre of ice
#: books of :func:`advance` (metres³ are metres x cell areas: divide by nothing,
#: multiply by the cell area for volumes)
GAINED, MELTED, OUT, STEPS, SMALLEST, LARGEST = range(6)
#: the share of its melt's share of the debris a cell under the ice keeps (till)
LODGED = 0.1
BOOKS = 6


@njit(cache=True, nogil=True, error_model="numpy")
def _superbee(r):
    return max(0.0, min(2.0 * r, 1.0), min(r, 2.0))


@njit(cache=True, nogil=True, error_model="numpy")
def _face_thickness(h_up, h_upup, h_down):
    """Thickness at a face from its upstream cell (MUSCL, superbee-limited slope)."""
    back = h_up - h_upup
    if back == 0.0:
        return h_up
    r = (h_down - h_up) / back
    return max(h_up + 0.5 * _superbee(r) * back, 0.0)


@njit(cache=True, nogil=True, error_model="numpy")
def _sweep(bed, h, axis, dx, dt, deform, slide, flux_sum, slide_sum, face_sum,
           work):
    """One linearly implicit flow step along ``axis`` (1: rows, x; 0: columns, y) on
    the whole grid, then the conservative, limited update of ``h``. ``flux_sum[axis]``
    gathers the ice that crossed each face (metres x cell width / cell width = metres
    of thickness over one cell, + towards the higher index)."""
    rows, cols = h.shape
    lines = rows if axis == 1 else cols
    n = cols if axis == 1 else rows
    s_line, h_line = work[0], work[1]
    f_old, g_face, p_face = work[2], work[3], work[4]
    a, b, c, d, sol = work[5], work[6], work[7], work[8], work[9]
    flux = work[10]  # ice through face j+1/2 of the line in this step, + towards j+1
    up = work[11]  # the upstream cell of face j+1/2: 0 = j, 1 = j+1
    share = work[12]  # the sliding share of the flux through face j+1/2
    thick = work[13]  # the ice thickness at face j+1/2
    r = dt / dx
    inv4dx = 1.0 / (4.0 * dx)
    rg3 = RHO_G * RHO_G * RHO_G
    for line in range(lines):
        for j in range(n):
            if axis == 1:
                h_line[j] = h[line, j]
                s_line[j] = bed[line, j] + h_line[j]
            else:
                h_line[j] = h[j, line]
                s_line[j] = bed[j, line] + h_line[j]
        any_ice = False
        lm = max(line - 1, 0)
        lp = min(line + 1, lines - 1)
        for j in range(n - 1):
            # the cross slope at the face: centred differences of the neighbouring lines
            if axis == 1:
                cross = (bed[lp, j] + h[lp, j] + bed[lp, j + 1] + h[lp, j + 1]
                         - bed[lm, j] - h[lm, j] - bed[lm, j + 1] - h[lm, j + 1])
            else:
                cross = (bed[j, lp] + h[j, lp] + bed[j + 1, lp] + h[j + 1, lp]
                         - bed[j, lm] - h[j, lm] - bed[j + 1, lm] - h[j + 1, lm])
            if lp - lm == 1:
                cross *= 2.0
            cross *= inv4dx
            drop = s_line[j] - s_line[j + 1]
            edge = n >= 3 and (j == 0 or j == n - 2)
            if edge:
                # into an edge cell (where the ice leaves the map): the surface goes on
                # as it falls inside (free outflow), explicit; never out of it
                if j == 0:
                    drop = min(s_line[1] - s_line[2], 0.0)
                else:
                    drop = max(s_line[n - 3] - s_line[n - 2], 0.0)
            along = -drop / dx
            if drop >= 0.0:  # flows from j to j + 1
                hf = _face_thickness(h_line[j], h_line[max(j - 1, 0)], h_line[j + 1])
                up[j] = 0.0
            else:
                hf = _face_thickness(h_line[j + 1], h_line[min(j + 2, n - 1)], h_line[j])
                up[j] = 1.0
            grad2 = along * along + cross * cross
            h3 = hf * hf * hf
            dface = rg3 * grad2 * h3 * hf * (deform * hf + slide)
            share[j] = slide / (deform * hf + slide) if hf > 0.0 else 0.0
            thick[j] = hf
            if dface > 0.0:
                any_ice = True
                # flux (m²/yr) and its derivatives: by the surface drop (Glen's n = 3
                # along the flow) and by the upstream thickness (the kinematic wave)
                f_old[j] = dface * drop / dx
                if edge:
                    g_face[j] = 0.0
                    p_face[j] = 0.0
                else:
                    g_face[j] = dface * (1.0 + 2.0 * along * along / grad2) / dx
                    p_face[j] = (rg3 * grad2 * h3 * (5.0 * deform * hf + 4.0 * slide)
                                 * drop / dx)
            else:
                f_old[j] = 0.0
                g_face[j] = 0.0
                p_face[j] = 0.0
        if not any_ice:
            for j in range(n - 1):
                flux[j] = 0.0
        else:
            # cell j: delta_j = r (f_new[j-1/2] - f_new[j+1/2]), the new fluxes
            # f_old + g (delta_j - delta_j+1) + p delta_upstream
            for j in range(n):
                a[j] = 0.0
                b[j] = 1.0
                c[j] = 0.0
                d[j] = 0.0
            for j in range(n - 1):
                g, p = r * g_face[j], r * p_face[j]
                d[j] -= r * f_old[j]
                d[j + 1] += r * f_old[j]
                b[j] += g
                c[j] -= g
                b[j + 1] += g
                a[j + 1] -= g
                if up[j] == 0.0:  # p delta_j leaves j, enters j + 1
                    b[j] += p
                    a[j + 1] -= p
                else:  # p delta_j+1 (p < 0: flow towards j)
                    c[j] += p
                    b[j + 1] -= p
            for j in range(1, n):
                m = a[j] / b[j - 1]
                b[j] -= m * c[j - 1]
                d[j] -= m * d[j - 1]
            sol[n - 1] = d[n - 1] / b[n - 1]
            for j in range(n - 2, -1, -1):
                sol[j] = (d[j] - c[j] * sol[j + 1]) / b[j]
            for j in range(n - 1):
                upd = sol[j] if up[j] == 0.0 else sol[j + 1]
                flux[j] = r * (f_old[j] + g_face[j] * (sol[j] - sol[j + 1])
                               + p_face[j] * upd)
            # limit each cell's outflow to the ice it holds
            for j in range(n):
                out = 0.0
                if j < n - 1 and flux[j] > 0.0:
                    out += flux[j]
                if j > 0 and flux[j - 1] < 0.0:
                    out -= flux[j - 1]
                sol[j] = 1.0 if out <= h_line[j] else h_line[j] / out
            for j in range(n - 1):
                if flux[j] > 0.0:
                    flux[j] *= sol[j]
                else:
                    flux[j] *= sol[j + 1]
        for j in range(n):
            new = h_line[j]
            if j < n - 1:
                new -= flux[j]
            if j > 0:
                new += flux[j - 1]
            new = max(new, 0.0)  # rounding only: the outflow was limited to the ice
            if axis == 1:
                h[line, j] = new
            else:
                h[j, line] = new
        for j in range(n - 1):
            if axis == 1:
                flux_sum[1, line, j] += flux[j]
                slide_sum[1, line, j] += flux[j] * share[j]
                face_sum[1, line, j] += thick[j] * dt
            else:
                flux_sum[0, j, line] += flux[j]
                slide_sum[0, j, line] += flux[j] * share[j]
                face_sum[0, j, line] += thick[j] * dt


@njit(cache=True, nogil=True, error_model="numpy")
def _balance(bed, h, rain, ela, beta, m_max, dt, melt_sum, books):
    """The mass balance of one step on ``h`` in place (gain scaled by ``rain``)."""
    rows, cols = h.shape
    for i in range(rows):
        for j in range(cols):
            m = beta * (bed[i, j] + h[i, j] - ela)
            if m > m_max:
                m = m_max
            if m >= 0.0:
                add = m * dt * rain[i, j]
                h[i, j] += add
                books[GAINED] += add
            elif h[i, j] > 0.0:
                melt = min(-m * dt, h[i, j])
                h[i, j] -= melt
                books[MELTED] += melt
                melt_sum[i, j] += melt


@njit(cache=True, nogil=True, error_model="numpy")
def _edges_out(h, books):
    """Ice in the map's edge cells leaves the map."""
    rows, cols = h.shape
    for i in range(rows):
        for j in range(cols):
            if i == 0 or j == 0 or i == rows - 1 or j == cols - 1:
                if h[i, j] > 0.0:
                    books[OUT] += h[i, j]
                    h[i, j] = 0.0


@njit(cache=True, nogil=True, error_model="numpy")
def advance(bed, h, rain, dx, years, ela, beta, m_max, deform, slide, max_step, change,
            first_step, flux_sum, slide_sum, face_sum, thick_sum, melt_sum, books):
    """Run the ice on ``bed`` (m) for ``years``: ``h`` (m) in place. ``deform`` is
    2A/5 (Pa^-3 yr^-1), ``slide`` C_s (m yr^-1 Pa^-3). ``flux_sum`` and
    ``slide_sum`` (2, rows, cols: through the faces towards +y, +x) gather the ice
    that flowed and its sliding part, ``face_sum`` the faces' thickness x time,
    ``thick_sum`` the thickness x time (m yr),
    ``melt_sum`` the melt; ``books`` the gained, melted and outgoing ice (m x cells),
    the step count and the shortest and longest steps. Returns the length of the last
    full step (a good first step for the next call)."""
    rows, cols = h.shape
    size = max(rows, cols)
    work = np.empty((14, size))
    before = np.empty_like(h)
    t = 0.0
    dt = min(first_step, max_step)
    last = dt
    k = 0
    while t < years * (1.0 - 1e-12):
        step = min(dt, years - t)
        before[:, :] = h
        _balance(bed, h, rain, ela, beta, m_max, step, melt_sum, books)
        if k % 2 == 0:
            _sweep(bed, h, 1, dx, step, deform, slide, flux_sum, slide_sum, face_sum, work)
            _sweep(bed, h, 0, dx, step, deform, slide, flux_sum, slide_sum, face_sum, work)
        else:
            _sweep(bed, h, 0, dx, step, deform, slide, flux_sum, slide_sum, face_sum, work)
            _sweep(bed, h, 1, dx, step, deform, slide, flux_sum, slide_sum, face_sum, work)
        _edges_out(h, books)
        biggest = 0.0
        for i in range(rows):
            for j in range(cols):
                thick_sum[i, j] += 0.5 * (h[i, j] + before[i, j]) * step
                # the edge cells and their neighbours pour ice out of the map (explicit,
                # limited): they do not set the step
                if 1 < i < rows - 2 and 1 < j < cols - 2:
                    biggest = max(biggest, abs(h[i, j] - before[i, j]))
        books[STEPS] += 1.0
        if books[SMALLEST] == 0.0 or step < books[SMALLEST]:
            books[SMALLEST] = step
        books[LARGEST] = max(books[LARGEST], step)
        t += step
        k += 1
        if step == dt:
            last = dt
        grow = 1.5 if biggest <= 0.0 else min(1.5, max(0.2, change / biggest))
        dt = min(max(dt * grow, 1e-6), max_step)
    return last


@njit(cache=True, nogil=True, error_model="numpy")
def sliding_speed(slide_sum, face_sum, dx, speed):
    """The mean sliding speed of each cell (m/yr) from what :func:`advance` gathered:
    at each face the sliding flux over the thickness there (both x time), at a cell
    the mean of its two faces on each axis."""
    rows, cols = speed.shape
    for i in range(rows):
        for j in range(cols):
            ux = 0.0
            uy = 0.0
            if j > 0 and face_sum[1, i, j - 1] > 0.0:
                ux += 0.5 * slide_sum[1, i, j - 1] / face_sum[1, i, j - 1]
            if j < cols - 1 and face_sum[1, i, j] > 0.0:
                ux += 0.5 * slide_sum[1, i, j] / face_sum[1, i, j]
            if i > 0 and face_sum[0, i - 1, j] > 0.0:
                uy += 0.5 * slide_sum[0, i - 1, j] / face_sum[0, i - 1, j]
            if i < rows - 1 and face_sum[0, i, j] > 0.0:
                uy += 0.5 * slide_sum[0, i, j] / face_sum[0, i, j]
            # fluxes are metres of thickness over one cell: x dx = m² of flow
            speed[i, j] = np.sqrt(ux * ux + uy * uy) * dx
    return speed


@njit(cache=True, nogil=True, error_model="numpy")
def couple(speed, thick, dx, length, most, out):
    """Sliding speeds averaged as their driving stresses couple: at each cell with ice
    (``thick`` > 0, metres), ``out`` is ``C tau^3`` of the mean ``tau`` (the cube root
    of ``speed``) over the cells with ice within ``length`` x its thickness (a square,
    at most ``most`` cells from it); cells without ice get 0. The shallow-ice
    approximation balances each column's stress alone, so the thin ice on a valley's
    walls would barely slide while the thick ice in the middle slid fast; the ice's
    stiffness spreads the stress over a few thicknesses (Kamb & Echelmeyer 1986)."""
    rows, cols = speed.shape
    for i in range(rows):
        for j in range(cols):
            if thick[i, j] <= 0.0:
                out[i, j] = 0.0
                continue
            r = min(int(length * thick[i, j] / dx + 0.5), most)
            total = 0.0
            count = 0
            for a in range(max(i - r, 0), min(i + r + 1, rows)):
                for b in range(max(j - r, 0), min(j + r + 1, cols)):
                    if thick[a, b] > 0.0:
                        total += np.cbrt(speed[a, b])
                        count += 1
            mean = total / count
            out[i, j] = mean * mean * mean
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def carry_debris(surface, ground, load, flux_sum, melt_sum, h, cap, laid):
    """Carry the rock the ice took (``load``, any volume unit per cell) with the ice
    and lay it where the ice melts: cells are visited from the highest ice surface
    down; each keeps the share of what it holds that its melt is of its melt plus its
    outflow (``flux_sum``), and passes the rest on through its outflowing faces in
    proportion to their flux; a cell that ends without ice, or sends nothing on, keeps
    all. Away from the ice's margins (a cell whose four neighbours all hold ice) only
    ``LODGED`` of that share is laid (till under the ice); at the margins all of it
    (the front's and the sides' moraines). A cell holds at most ``cap``: meltwater
    carries the rest down the ``ground`` (to the lowest of the eight neighbours, each
    cell on the way filling up to its cap, a closed hollow keeping all: outwash plains
    and proglacial lakes). What reaches the map's edge leaves it. ``laid`` gets what
    each cell keeps; returns what left the map."""
    rows, cols = h.shape
    order = np.argsort(-surface.ravel(), kind="mergesort")
    carried = load.copy()
    gone = 0.0
    for idx in order:
        i, j = idx // cols, idx % cols
        held = carried[i, j]
        if held <= 0.0:
            continue
        if i == 0 or j == 0 or i == rows - 1 or j == cols - 1:
            gone += held
            continue
        east = max(flux_sum[1, i, j], 0.0)
        west = max(-flux_sum[1, i, j - 1], 0.0)
        south = max(flux_sum[0, i, j], 0.0)
        north = max(-flux_sum[0, i - 1, j], 0.0)
        # only downhill on the final surface: the order is a topological one
        if surface[i, j + 1] >= surface[i, j]:
            east = 0.0
        if surface[i, j - 1] >= surface[i, j]:
            west = 0.0
        if surface[i + 1, j] >= surface[i, j]:
            south = 0.0
        if surface[i - 1, j] >= surface[i, j]:
            north = 0.0
        out = east + west + south + north
        if out <= 0.0 or h[i, j] <= 0.0:
            laid[i, j] += held
            continue
        keep = held * melt_sum[i, j] / (melt_sum[i, j] + out)
        margin = (h[i - 1, j] <= 0.0 or h[i + 1, j] <= 0.0 or h[i, j - 1] <= 0.0
                  or h[i, j + 1] <= 0.0)
        if not margin:  # under the ice only a little is lodged; the rest rides on
            keep *= LODGED
        laid[i, j] += keep
        rest = held - keep
        carried[i, j + 1] += rest * east / out
        carried[i, j - 1] += rest * west / out
        carried[i + 1, j] += rest * south / out
        carried[i - 1, j] += rest * north / out
    # meltwater: what a cell cannot hold runs down the ground
    order = np.argsort(-ground.ravel(), kind="mergesort")
    for idx in order:
        i, j = idx // cols, idx % cols
        extra = laid[i, j] - cap[i, j]
        if extra <= 0.0:
            continue
        if i == 0 or j == 0 or i == rows - 1 or j == cols - 1:
            laid[i, j] = cap[i, j]
            gone += extra
            continue
        low, li, lj = ground[i, j], -1, -1
        for di in range(-1, 2):
            for dj in range(-1, 2):
                if ground[i + di, j + dj] < low:
                    low, li, lj = ground[i + di, j + dj], i + di, j + dj
        if li < 0:
            continue  # a closed hollow keeps it all
        laid[i, j] = cap[i, j]
        laid[li, lj] += extra
    return gone
