"""Landform measures in world units: slope statistics, peaks, resolution comparisons.

Heights are in cell units (world height / cell size), so the slope of a cell is
``atan(|grad h|)`` with the gradient taken per cell (central differences inside the
grid, one-sided at its edges). These are the figures the landform
tests and benchmarks check.
"""

from __future__ import annotations

import numpy as np


def slope_degrees(height: np.ndarray) -> np.ndarray:
    """Slope of every cell in degrees (``height`` in cell units)."""
    gy, gx = np.gradient(height)
    return np.degrees(np.arctan(np.hypot(gx, gy)))


def peaks_per_1000(height: np.ndarray) -> float:
    """Strict local maxima of the interior cells (higher than all 8 neighbours), per
    1000 interior cells."""
    c = height[1:-1, 1:-1]
    is_max = np.ones(c.shape, dtype=bool)
    rows, cols = height.shape
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if dr or dc:
                is_max &= c > height[1 + dr:rows - 1 + dr, 1 + dc:cols - 1 + dc]
    return 1000.0 * float(is_max.sum()) / c.size


def slope_stats(height: np.ndarray) -> dict[str, float]:
    """Median and 99th-percentile slope (deg), percentage of cells steeper than 45 deg
    and local maxima per 1000 cells."""
    s = slope_degrees(height)
    return {"p50": float(np.percentile(s, 50)), "p99": float(np.percentile(s, 99)),
            "pct45": 100.0 * float((s > 45.0).mean()), "peaks": peaks_per_1000(height)}


def max_loose_excess(height: np.ndarray, sediment: np.ndarray, talus_angle: float,
                     min_sediment: float = 1e-6) -> float:
    """Largest rise (cell units) of a cell holding loose material above any of its 8
    neighbours beyond the talus slope ``tan(talus_angle) * distance``: 0 when all
    loose material rests at or below its angle of repose."""
    t = np.tan(np.radians(talus_angle))
    rows, cols = height.shape
    worst = 0.0
    loose = sediment > min_sediment
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if not (dr or dc):
                continue
            dist = np.hypot(dr, dc)
            r0, r1 = max(dr, 0), rows + min(dr, 0)
            c0, c1 = max(dc, 0), cols + min(dc, 0)
            here = height[r0:r1, c0:c1]
            there = height[r0 - dr:r1 - dr, c0 - dc:c1 - dc]
            excess = np.where(loose[r0:r1, c0:c1], here - there - t * dist, 0.0)
            worst = max(worst, float(excess.max(initial=0.0)))
    return worst


def block_mean(a: np.ndarray, k: int = 2) -> np.ndarray:
    """Mean over k x k blocks (the grid is cut to a multiple of k)."""
    rows, cols = (a.shape[0] // k) * k, (a.shape[1] // k) * k
    return a[:rows, :cols].reshape(rows // k, k, cols // k, k).mean(axis=(1, 3))


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two equally shaped arrays (0 if either is constant)."""
    a = a.ravel() - a.mean()
    b = b.ravel() - b.mean()
    den = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum()) / den if den > 0 else 0.0


def band_power(height: np.ndarray, shortest: float, longest: float) -> float:
    """Mean power of ``height``'s spectrum at wavelengths of ``shortest`` to
    ``longest`` cells (any unit; compare surfaces of one grid): the plane of best fit
    removed and a Hann window applied, so the map's edges add no power."""
    rows, cols = height.shape
    y, x = np.mgrid[0:rows, 0:cols]
    a = np.column_stack([np.ones(height.size), x.ravel(), y.ravel()])
    fit = np.linalg.lstsq(a, height.ravel(), rcond=None)[0]
    detrended = height - (fit[0] + fit[1] * x + fit[2] * y)
    del x, y, a
    detrended *= np.outer(np.hanning(rows), np.hanning(cols))
    power = np.abs(np.fft.rfft2(detrended)) ** 2
    k = np.hypot(np.fft.fftfreq(rows)[:, None], np.fft.rfftfreq(cols)[None, :])
    band = (k >= 1.0 / longest) & (k <= 1.0 / shortest)
    return float(power[band].mean())


def closed_basin_share(height: np.ndarray, cell_size: float, min_depth: float = 1.0) -> float:
    """Share of the map (0..1) inside closed depressions deeper than ``min_depth`` world
    units (``height`` in cell units; the grid's edges are outlets)."""
    from ..algorithms.drainage import depression_depth
    return float((depression_depth(height) * cell_size > min_depth).mean())


def slope_area(height: np.ndarray, cell_size: float, min_cells: float = 10.0,
               bins: int = 12) -> dict[str, float]:
    """Channel steepness against drainage area: the fit ``S = k A^-theta`` over the
    cells draining at least ``min_cells`` cells (D8 on the depression-filled surface),
    log-binned (median slope per bin). Returns theta (the concavity), the fit's r²
    and the number of bins used. ``height`` in cell units."""
    from ..algorithms.drainage import route
    world = height * cell_size
    flow = route(world, cell_size)
    h = world.reshape(-1)
    area = flow.area.reshape(-1)
    slope = (h - h[flow.receiver]) / flow.distance
    use = (flow.receiver != np.arange(h.size)) & (slope > 0) & (
        area >= min_cells * cell_size * cell_size) & (flow.lake_depth.reshape(-1) <= 0)
    if use.sum() < 10:
        return {"theta": float("nan"), "r2": float("nan"), "bins": 0}
    la, ls = np.log10(area[use]), np.log10(slope[use])
    edges = np.linspace(la.min(), la.max() + 1e-9, bins + 1)
    xs, ys = [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (la >= lo) & (la < hi)
        if sel.sum() >= 3:
            xs.append(float(np.median(la[sel])))
            ys.append(float(np.median(ls[sel])))
    if len(xs) < 3:
        return {"theta": float("nan"), "r2": float("nan"), "bins": len(xs)}
    fit = np.polyfit(xs, ys, 1)
    pred = np.polyval(fit, xs)
    ss = float(((np.array(ys) - np.mean(ys)) ** 2).sum())
    r2 = 1.0 - float(((np.array(ys) - pred) ** 2).sum()) / ss if ss > 0 else 0.0
    return {"theta": float(-fit[0]), "r2": r2, "bins": len(xs)}


# --- dunes: crest orientation and spacing, free of the grid's axes ---------------------

def _gradient_iso(height: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(d/dx, d/dy) per cell with 3x3 Scharr weights (3-10-3), periodic at the edges:
    its direction has almost no bias towards the grid's axes."""
    h = np.asarray(height, dtype=np.float64)

    def sh(dr, dc):
        return np.roll(np.roll(h, -dr, axis=0), -dc, axis=1)  # h[r + dr, c + dc]
    gx = (3 * (sh(-1, 1) - sh(-1, -1)) + 10 * (sh(0, 1) - sh(0, -1))
          + 3 * (sh(1, 1) - sh(1, -1))) / 32.0
    gy = (3 * (sh(1, -1) - sh(-1, -1)) + 10 * (sh(1, 0) - sh(-1, 0))
          + 3 * (sh(1, 1) - sh(-1, 1))) / 32.0
    return gx, gy


def slip_faces(height: np.ndarray, direction: float,
               min_slope_deg: float = 20.0) -> np.ndarray:
    """Downhill directions (degrees, 0 = +x, 90 = +y, as the wind) of the lee slip-face
    cells of a dune field: cells steeper than ``min_slope_deg`` whose ground falls
    downwind (``height`` in cell units, periodic). A slip face's downhill direction is
    its crest's normal."""
    gx, gy = _gradient_iso(height)
    a = np.radians(direction)
    steep = np.hypot(gx, gy) > np.tan(np.radians(min_slope_deg))
    lee = (gx * np.cos(a) + gy * np.sin(a)) < 0
    sel = steep & lee
    return np.degrees(np.arctan2(-gy[sel], -gx[sel]))


def crest_orientation(height: np.ndarray, direction: float,
                      min_slope_deg: float = 20.0) -> dict[str, float]:
    """Where the crests of a dune field point, from its slip faces (see
    :func:`slip_faces`):

    - ``normal_deg``: mean angle of the crest normals to the wind (signed, degrees;
      0 = crests square across the wind, transverse dunes);
    - ``spread_deg``: their circular standard deviation (sinuous crests spread more);
    - ``axis_excess``: density of crest normals within 4° of a grid axis (0/90/180/270°)
      over their density 4–16° off the axes: about 1 when the crests ignore the grid,
      well above 1 when crest segments snap to the grid's rows and columns (steps);
    - ``faces``: share of the map that is slip face.
    """
    th = slip_faces(height, direction, min_slope_deg)
    if th.size < 10:
        return {"normal_deg": float("nan"), "spread_deg": float("nan"),
                "axis_excess": float("nan"), "faces": th.size / np.size(height)}
    rel = np.radians(th - direction)
    c, s = np.cos(rel).mean(), np.sin(rel).mean()
    r = min(float(np.hypot(c, s)), 1.0)
    off = np.abs((th + 45.0) % 90.0 - 45.0)  # degrees from the nearest grid axis
    near = (off <= 4.0).sum() / 4.0
    ring = ((off > 4.0) & (off <= 16.0)).sum() / 12.0
    return {"normal_deg": float(np.degrees(np.arctan2(s, c))),
            "spread_deg": float(np.degrees(np.sqrt(-2.0 * np.log(max(r, 1e-12))))),
            "axis_excess": float(near / ring) if ring > 0 else float("inf"),
            "faces": th.size / np.size(height)}


def dune_spacing(height: np.ndarray, direction: float, cell_size: float = 1.0,
                 min_slope_deg: float = 20.0) -> float:
    """Mean distance (world units) between slip faces crossed along the wind: straight
    along-wind profiles through the (periodic) map, sampled bilinearly every half cell,
    counting each entry into a lee face steeper than ``min_slope_deg``."""
    h = np.asarray(height, dtype=np.float64)
    rows, cols = h.shape
    a = np.radians(direction)
    ux, uy = np.cos(a), np.sin(a)
    step = 0.5
    n = int(4 * max(rows, cols) / step)  # 4 map lengths per profile
    t = np.arange(n) * step
    offs = np.arange(0.0, max(rows, cols), 2.0)  # a profile every 2 cells across
    xs = (offs[:, None] * -uy + t[None, :] * ux) % cols
    ys = (offs[:, None] * ux + t[None, :] * uy) % rows
    x0, y0 = np.floor(xs).astype(int), np.floor(ys).astype(int)
    fx, fy = xs - x0, ys - y0
    x1, y1 = (x0 + 1) % cols, (y0 + 1) % rows
    p = (h[y0, x0] * (1 - fx) * (1 - fy) + h[y0, x1] * fx * (1 - fy)
         + h[y1, x0] * (1 - fx) * fy + h[y1, x1] * fx * fy)
    fall = (p[:, :-2] - p[:, 2:]) / (2 * step)  # downwind fall per cell
    lee = fall > np.tan(np.radians(min_slope_deg))
    entries = int((lee[:, 1:] & ~lee[:, :-1]).sum())
    if entries == 0:
        return float("inf")
    return float(lee.shape[0] * (lee.shape[1] - 1) * step * cell_size / entries)


def streaks(height: np.ndarray, direction: float,
            band: tuple[float, float] = (2.0, 8.0), width_deg: float = 10.0) -> float:
    """Streakiness of a dune field: density (per degree of wave-vector direction) of the
    height spectrum's power at short wavelengths ``band`` (cells) in wave vectors within
    ``width_deg`` of square across the wind — ridges and grooves running along the wind,
    the mark of neighbouring rows of cells that evolve apart — over the density at all
    directions. About 1 for isotropic roughness; well above 1 for streaks."""
    h = np.asarray(height, dtype=np.float64)
    rows, cols = h.shape
    power = np.abs(np.fft.fft2(h - h.mean())) ** 2
    ky = np.fft.fftfreq(rows)[:, None] * np.ones((1, cols))
    kx = np.fft.fftfreq(cols)[None, :] * np.ones((rows, 1))
    kk = np.hypot(kx, ky)
    inb = (kk >= 1.0 / band[1]) & (kk <= 1.0 / band[0])
    a = np.radians(direction)
    phi = np.degrees(np.arctan2(ky, kx) - a)
    off = np.abs((phi % 180.0) - 90.0)  # 0 = wave vector square across the wind
    near = inb & (off <= width_deg)
    total = float(power[inb].sum())
    if total <= 0:
        return float("nan")
    return float(power[near].sum() / total) / (width_deg / 90.0)


def sand_bodies(sediment: np.ndarray, direction: float, min_depth: float = 0.05,
                min_cells: int = 30) -> dict[str, float]:
    """Barchan figures of a patchy sand cover (``sediment`` in any unit, periodic map,
    wind ``direction`` in degrees, towards):

    - ``bare``: share of the map with less than ``min_depth`` of sand;
    - ``bodies``: sand bodies (connected parts, at least ``min_cells`` cells), per
      10,000 cells;
    - ``horns``: share of the bodies whose flanks reach further downwind than their
      middle — crescents with horns downwind: each body's cells in wind coordinates
      (along s, across n, from its centre), the downwind-most s of its outer thirds
      across the wind (each side) against that of its middle third;
    - ``horn_lead``: median over the bodies of (mean horn tip s - middle's s) / the
      body's length along the wind.
    """
    sed = np.asarray(sediment, dtype=np.float64)
    rows, cols = sed.shape
    from ..algorithms import components  # numba: loaded by the one measure that needs it
    lab = components.label(sed >= min_depth, wrap=True)[0] - 1  # -1: no sand
    a = np.radians(direction)
    ux, uy = np.cos(a), np.sin(a)
    rr, cc = np.mgrid[0:rows, 0:cols]
    ids, counts = np.unique(lab[lab >= 0], return_counts=True)
    leads = []
    for i in ids[counts >= min_cells]:
        sel = lab == i
        y, x = rr[sel].astype(float), cc[sel].astype(float)
        # centre on the circle (the part may wrap round the map's edges)
        cy = np.angle(np.exp(2j * np.pi * y / rows).mean()) * rows / (2 * np.pi)
        cx = np.angle(np.exp(2j * np.pi * x / cols).mean()) * cols / (2 * np.pi)
        dy = (y - cy + rows / 2) % rows - rows / 2
        dx = (x - cx + cols / 2) % cols - cols / 2
        s = dx * ux + dy * uy
        n = -dx * uy + dy * ux
        lo, hi = n.min(), n.max()
        third = (hi - lo) / 3.0
        if third < 1.0:
            continue
        left, right = n < lo + third, n > hi - third
        mid = ~left & ~right
        if not (left.any() and right.any() and mid.any()):
            continue
        tips = 0.5 * (s[left].max() + s[right].max())
        length = max(s.max() - s.min(), 1.0)
        leads.append((tips - s[mid].max()) / length)
    leads = np.array(leads)
    return {"bare": float((sed < min_depth).mean()),
            "bodies": 1e4 * leads.size / sed.size,
            "horns": float((leads > 0).mean()) if leads.size else float("nan"),
            "horn_lead": float(np.median(leads)) if leads.size else float("nan")}


def crest_trend(height: np.ndarray, min_slope_deg: float = 10.0) -> dict[str, float]:
    """Which way the crests of a dune field run, whatever side their slip faces are on
    (linear dunes have them on both): the mean axis of the gradients of the cells
    steeper than ``min_slope_deg`` (doubled angles, weighted by the squared gradient),
    turned by 90 degrees. ``trend_deg`` in 0..180 (0 = crests along +x, 90 = along +y);
    ``coherence`` 0..1 (1: all crests parallel)."""
    gx, gy = _gradient_iso(height)
    g2 = gx * gx + gy * gy
    sel = g2 > np.tan(np.radians(min_slope_deg)) ** 2
    c = float(((gx * gx - gy * gy) * sel).sum())
    s = float((2 * gx * gy * sel).sum())
    w = float((g2 * sel).sum())
    if w <= 0:
        return {"trend_deg": float("nan"), "coherence": 0.0}
    normal = 0.5 * np.degrees(np.arctan2(s, c))
    return {"trend_deg": float((normal + 90.0) % 180.0), "coherence": float(np.hypot(c, s) / w)}
