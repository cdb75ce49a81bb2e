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


def closed_basin_share(height: np.ndarray, cell_size: float, min_depth: float = 1.0) -> float:
    """Share of the map (0..1) inside closed depressions deeper than ``min_depth`` world
    units (``height`` in cell units; the grid's edges are outlets)."""
    from .drainage import depression_depth
    return float((depression_depth(height) * cell_size > min_depth).mean())


def slope_area(height: np.ndarray, cell_size: float, min_cells: float = 10.0,
               bins: int = 12) -> dict[str, float]:
    """Channel steepness against drainage area: the fit ``S = k A^-theta`` over the
    cells draining at least ``min_cells`` cells (D8 on the depression-filled surface),
    log-binned (median slope per bin). Returns theta (the concavity), the fit's r²
    and the number of bins used. ``height`` in cell units."""
    from .drainage import route
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
