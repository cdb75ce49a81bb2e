"""Realism report: the landform figures a geomorphologist would check,
computed from the arrays of a state: slopes, closed basins, lakes and their spill
levels, the channels' slope-area exponent, relief; before and after a run.

Real eroded land at 10-100 m cells has a median slope of 10-20 degrees and almost
nothing above 45 outside cliffs; it drains through one network (closed basins are
rare and hold lakes, each at or below its spill level); channel slope falls with
drainage area as ``S ~ A^-theta`` with theta about 0.3-0.7 (Flint's law).
"""

from __future__ import annotations

import numpy as np

from ..algorithms import components
from ..algorithms.drainage import depression_depth
from ..terrain import Terrain
from . import landforms

#: closed depressions shallower than this (world units) do not count as basins
BASIN_DEPTH = 1.0
#: lakes smaller than this many cells are puddles, not lakes
LAKE_CELLS = 4

#: (key, label, format) of the report's rows, in order
ROWS = (
    ("relief", "relief (max - min)", "{:,.1f} m"),
    ("slope_p50", "slope, median", "{:.1f}°"),
    ("slope_p90", "slope, 90th percentile", "{:.1f}°"),
    ("slope_p99", "slope, 99th percentile", "{:.1f}°"),
    ("steeper_45", "cells steeper than 45°", "{:.2f}%"),
    ("closed_basins", "map in closed basins outside lakes", "{:.2f}%"),
    ("lakes", f"lakes (>= {LAKE_CELLS} cells)", "{:d}"),
    ("lake_area", "map under lakes", "{:.2f}%"),
    ("spill_error", "highest lake surface above its spill level", "{:.3f} m"),
    ("theta", "channel concavity theta (S ~ A^-theta)", "{:.3f}"),
    ("theta_r2", "  its fit r²", "{:.3f}"),
)


def landform_figures(height: np.ndarray, cell_size: float,
                     pool: np.ndarray | None = None) -> dict[str, float]:
    """The report's figures for one surface: ``height`` and ``pool`` (water depth) in
    cell units, ``cell_size`` world units. Lengths in the result are world units,
    shares in percent of the map."""
    height = np.asarray(height, dtype=np.float64)
    pool = np.zeros_like(height) if pool is None else np.asarray(pool, dtype=np.float64)
    slopes = landforms.slope_degrees(height)
    wet = pool > 0.0
    surface = height + pool
    # the ground's spill levels; a lake surface above them would overflow
    spill = height + depression_depth(height)
    sizes = _lake_sizes(wet)
    fit = landforms.slope_area(height, cell_size)
    return {
        "relief": float(np.ptp(height)) * cell_size,
        "slope_p50": float(np.percentile(slopes, 50)),
        "slope_p90": float(np.percentile(slopes, 90)),
        "slope_p99": float(np.percentile(slopes, 99)),
        "steeper_45": 100.0 * float((slopes > 45.0).mean()),
        "closed_basins": 100.0 * float(
            (depression_depth(surface) * cell_size > BASIN_DEPTH).mean()),
        "lakes": int(sum(1 for s in sizes if s >= LAKE_CELLS)),
        "lake_area": 100.0 * float(wet.mean()),
        "spill_error": (float(np.max(surface[wet] - spill[wet])) * cell_size if wet.any()
                        else 0.0),
        "theta": fit["theta"],
        "theta_r2": fit["r2"],
    }


def _lake_sizes(wet: np.ndarray) -> list[int]:
    return [int(s) for s in components.sizes(wet)]


def start_heights(terrain: Terrain) -> np.ndarray:
    """The heights a state started from (cell units), from its books: every change of
    the ground is booked as eroded or deposited, and rock uplift in ``uplifted``."""
    return terrain.height() + terrain.eroded - terrain.deposited - terrain.uplifted


def report(terrain: Terrain, before: np.ndarray | None = None) -> dict[str, dict]:
    """{"before": figures, "after": figures} of a state; ``before`` (cell units) is the
    start's heights, else reconstructed from the state's books (:func:`start_heights`)."""
    start = start_heights(terrain) if before is None else before
    return {"before": landform_figures(start, terrain.cell_size),
            "after": landform_figures(terrain.height(), terrain.cell_size, terrain.pool)}


def format_report(figures: dict[str, dict]) -> str:
    """The report as a text table: one row per figure, before and after."""
    lines = [f"{'':46s} {'before':>12s} {'after':>12s}"]
    for key, label, fmt in ROWS:
        cells = []
        for side in ("before", "after"):
            value = figures[side][key]
            cells.append("-" if isinstance(value, float) and not np.isfinite(value)
                         else fmt.format(value))
        lines.append(f"{label:46s} {cells[0]:>12s} {cells[1]:>12s}")
    return "\n".join(lines)
