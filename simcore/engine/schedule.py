"""A coarse-to-fine run (docs/refine.md): a preset run from a coarse grid up to a fine
one, the terrain refined x2 (simcore/engine/refine.py) between levels.

The levels are grids of ``n, 2n - 1, 4n - 3, ...`` samples a side over the same extent.
A heightmap start finer than the coarsest level is coarsened to it first
(:func:`heights_pyramid`: full weighting, the real size kept) and, at each refine, the
detail of the start that the coarser grid could not hold is put back into the ground.
The rain of the run is split over the levels, each getting :data:`FINER_SHARE` of the
rain of the next coarser one (1: the same rain on every level; at half the coarse
levels' rain the fine slopes stayed steeper than the direct run's, as the hillslopes
had too little of their work where the slopes are resolved). What runs where is each
process's descriptor (``Process.levels``): the detail processes ("every") at every
level with its share; the whole-map ones ("coarse") at the coarse levels, the finest
level's share done on the last coarse one. Rounds are numbered on across the levels,
so no particle of a process runs twice and the result is the same at any thread count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import UserError
from ..kernels.refine import double, halve
from ..params import Params
from ..terrain import MAX_SIDE, Terrain
from .refine import refine
from .simulation import PROCESSES, Progress, Simulation

#: the rain of a level as a share of the rain of the next coarser one (module doc)
FINER_SHARE = 1.0
#: the coarsest level a heightmap start is coarsened to has at least this many samples
#: on its shorter side
MIN_LEVEL_SIDE = 17


class ScheduleError(UserError):
    """The levels asked for cannot be made from the start's grid."""


def _side(n: int, steps: int) -> int:
    """``n`` samples refined ``steps`` times (negative: coarsened)."""
    return (n - 1) * 2 ** steps + 1 if steps >= 0 else (n - 1) // 2 ** -steps + 1


def plan(shape: tuple[int, int], to: int | None = None, levels: int | None = None
         ) -> tuple[list[tuple[int, int]], int]:
    """The levels' shapes, coarsest first, of a run from a ``shape`` start up to ``to``
    samples on the longer side (default: the start's) in ``levels`` levels (default:
    the start's grid and the refinements up to ``to``), and how many of them are
    coarser than the start. ScheduleError with what to give instead."""
    rows, cols = shape
    side = max(rows, cols)
    to = side if to is None else to
    if not isinstance(to, int) or to < side:
        raise ScheduleError(f"--to {to}: smaller than the input's {side} samples on its "
                            f"longer side; give {side} or more")
    if to > MAX_SIDE:
        raise ScheduleError(f"--to {to}: more than the {MAX_SIDE} samples a side the core "
                            "takes")
    steps = 0
    while _side(side, steps) < to:
        steps += 1
    if _side(side, steps) != to:
        below = _side(side, steps - 1) if steps else side
        raise ScheduleError(
            f"--to {to}: {side} samples refined x2 make {_side(side, 1)}, "
            f"{_side(side, 2)}, ... (2n - 1 each time), never {to}; give {below} or "
            f"{_side(side, steps)}")
    if levels is None:
        levels = steps + 1
    if not isinstance(levels, int) or levels < steps + 1:
        raise ScheduleError(f"--levels {levels}: from {side} to {to} samples takes "
                            f"{steps + 1} levels; give {steps + 1} or more")
    coarser = levels - steps - 1
    fine = 2 ** coarser
    if coarser and ((rows - 1) % fine or (cols - 1) % fine
                    or (min(rows, cols) - 1) // fine + 1 < MIN_LEVEL_SIDE):
        most = 0
        while ((rows - 1) % 2 ** (most + 1) == 0 and (cols - 1) % 2 ** (most + 1) == 0
               and (min(rows, cols) - 1) // 2 ** (most + 1) + 1 >= MIN_LEVEL_SIDE):
            most += 1
        raise ScheduleError(
            f"--levels {levels}: a {rows}x{cols} input coarsens x2 only {most} time(s) "
            f"(rows and columns each 2n - 1 of a grid of at least {MIN_LEVEL_SIDE} "
            f"samples); give at most {steps + 1 + most} levels")
    shapes = [(_side(rows, k), _side(cols, k)) for k in range(-coarser, steps + 1)]
    return shapes, coarser


def heights_pyramid(heights: np.ndarray, coarser: int) -> list[np.ndarray]:
    """``heights`` and its ``coarser`` coarsenings (kernels.refine.halve), coarsest
    first."""
    out = [np.asarray(heights, dtype=np.float64)]
    for _ in range(coarser):
        out.insert(0, halve(out[0]))
    return out


def level_rounds(total: int, levels: int) -> list[int]:
    """``total`` rounds split over ``levels`` levels, coarsest first, each
    :data:`FINER_SHARE` of the one before (whole rounds adding up to ``total``)."""
    weights = np.array([FINER_SHARE ** k for k in range(levels)])
    ends = np.rint(total * np.cumsum(weights) / weights.sum()).astype(np.int64)
    ends[-1] = total
    return [int(x) for x in np.diff(ends, prepend=0)]


def runs_at(name: str, level: int, levels: int) -> bool:
    """Whether process ``name`` runs at ``level`` (0: coarsest) of ``levels``: its
    descriptor's ``levels`` (module doc); every process runs in a run of one level."""
    return PROCESSES[name].levels == "every" or level < levels - 1 or levels == 1


def _put_back(terrain: Terrain, detail: np.ndarray) -> None:
    """Add ``detail`` (world units) to the ground of ``terrain`` with standing water
    kept at its level (its depth less what the ground rose)."""
    d = detail / terrain.cell_size
    terrain.bedrock += d
    wet = terrain.pool > 0.0
    if wet.any():
        terrain.pool[wet] = np.maximum(terrain.pool[wet] - d[wet], 0.0)


def coarse_to_fine(terrain: Terrain, processes: dict[str, Params], *, seed: int,
                   rounds: int, shapes: list[tuple[int, int]],
                   heights: list[np.ndarray] | None = None, rounds_done: int = 0,
                   on_level: Callable[[int, Terrain, list[str], int], Any] | None = None,
                   progress: Callable[[Progress], Any] | None = None
                   ) -> tuple[Terrain, dict[str, Any]]:
    """Run ``processes`` on ``terrain`` (the coarsest level, ``shapes[0]``) up to
    ``shapes[-1]``: ``rounds`` rounds in all, split by :func:`level_rounds`, from
    round ``rounds_done``. ``heights`` are the start's world heights at the first
    levels (:func:`heights_pyramid`; their detail is put back at each refine).
    ``on_level(level, terrain, names, rounds)`` before a level's run, ``progress`` as
    :meth:`Simulation.run`'s callback. Returns the finest terrain and the run's
    metadata (as :meth:`Simulation.metadata`, with the levels' shapes)."""
    k = len(shapes)
    split = level_rounds(rounds, k)
    done = int(rounds_done)
    sim: Simulation | None = None

    def run(level: int, names: list[str], count: int, first: int) -> int:
        """``count`` rounds of ``names`` from round ``first``: the rounds done after."""
        nonlocal sim
        if not names:
            return first + count
        chosen = {n: processes[n] for n in names}
        if on_level is not None:
            on_level(level, terrain, names, count)
        per_round = sum(int(p.batch) for p in chosen.values())
        sim = Simulation(terrain, chosen, seed=seed, particles=count * per_round,
                         rounds_done=first)
        sim.run(progress)
        return max(first + count, sim.rounds_done)

    for level in range(k):
        if level:
            terrain = refine(terrain)
            if heights is not None and level < len(heights):
                detail = heights[level] - double(heights[level - 1])
                _put_back(terrain, detail)
                del detail
        first = done
        done = run(level, [n for n in processes if runs_at(n, level, k)], split[level],
                   first)
        if level == k - 2:  # the whole-map processes' share of the finest level, here;
            # its rounds are numbered as the finest level's (a process's particles differ)
            run(level, [n for n in processes if not runs_at(n, k - 1, k)], split[-1], done)
    meta: dict[str, Any] = sim.metadata() if sim is not None else {"seed": seed}
    meta["rounds_done"] = done
    meta["processes"] = {n: p.to_dict() for n, p in processes.items()}
    meta["cell_size"] = terrain.cell_size
    meta["outflow"] = terrain.outflow
    meta["levels"] = [list(s) for s in shapes]
    return terrain, meta
