"""A coarse-to-fine run from a run's start (``erode --to`` / ``--levels``): the levels
planned and checked, a heightmap start coarsened, the run handed to
:mod:`simcore.engine.schedule` (docs/refine.md)."""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from ..engine.memory import check_grid_run
from ..engine.schedule import ScheduleError, coarse_to_fine, heights_pyramid, plan
from ..engine.simulation import Progress
from ..terrain import Terrain
from .start import Start


def levels_of(start: Start, to: int | None, levels: int | None
              ) -> tuple[list[tuple[int, int]], int]:
    """The levels' shapes (coarsest first) and how many are coarser than the start:
    ScheduleError when they cannot be made, ResourceError when the finest level would
    not fit in memory; both before any work."""
    shapes, coarser = plan(start.terrain.shape, to, levels)
    terrain = start.terrain
    if coarser and (start.rounds_done or terrain.changes or len(terrain.trees)
                    or terrain.pool.any() or terrain.sediment.any()):
        raise ScheduleError(f"--levels {levels}: a saved state cannot be coarsened; "
                            "give a heightmap, or only --to to go finer from the state")
    return shapes, coarser


def run_levels(start: Start, preset: Any, shapes: list[tuple[int, int]], coarser: int,
               on_level: Callable[[int, Terrain, list[str], int], Any] | None = None,
               progress: Callable[[Progress], Any] | None = None
               ) -> tuple[Terrain, dict[str, Any]]:
    """Run ``preset`` from ``start`` over the levels ``shapes`` (:func:`levels_of`): the
    finest terrain and the run's metadata. The rain is the preset's on the finest grid.
    A coarsened start replaces ``start.terrain`` (the input's arrays are not kept)."""
    processes = preset.enabled_params()
    check_grid_run(shapes[-1], processes)
    terrain = start.terrain
    heights = None
    if coarser:
        heights = heights_pyramid(terrain.world_height(), coarser)
        cell = terrain.cell_size * 2 ** coarser
        rock = terrain.rock
        del terrain
        start.terrain = terrain = Terrain.from_heights(heights[0], cell, rock=rock)
    fine_cell = terrain.cell_size / 2 ** (len(shapes) - 1)
    particles = preset.work(SimpleNamespace(shape=shapes[-1], cell_size=fine_cell))
    per_round = sum(int(p.batch) for p in processes.values())
    return coarse_to_fine(terrain, processes, seed=preset.seed,
                          rounds=math.ceil(particles / per_round), shapes=shapes,
                          heights=heights, rounds_done=start.rounds_done,
                          on_level=on_level, progress=progress)
