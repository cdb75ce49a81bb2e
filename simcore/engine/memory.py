"""How much memory a run needs, checked before it starts.

A run holds the terrain (every array of :mod:`simcore.fields`, float64) plus what each
enabled process keeps per cell while it works. Peak resident memory (``ru_maxrss``) of
``python -m simcore erode`` runs, one process at a time and whole presets, at 512² and
1024² cells of 30 m (``benchmarks/bench_memory.py`` repeats the measurement; the fixed
part, about 145 MB of Python, numpy, numba and compiled kernels, is already in use when
the check runs and drops out of the slope):

============  ============  =========================================================
part          bytes / cell  what
============  ============  =========================================================
base               182      the terrain arrays (8 each: 17, 136), the ground height a
                            round keeps up to date (8), the rain start weights (8),
                            the loaded heightmap and the conversions at the start
                            and at the save (about 22), the ground before each
                            process (8); measured 149.0-149.4 with 14 arrays and
                            without the ground before each process
each process        +8      how much it moved the ground (``Terrain.changes``)
landscape          +92      drainage: receivers, stack, areas, pit routing, the
                            implicit solver's rows; measured +90-93
snowball           +48      copies of rock, sediment and heights and three scratch
                            grids; measured +43
hydrology          +32      the lake search's scratch (stamps, queue keys and cells:
                            28) and three byte maps; measured +2 on hills whose
                            lakes are small, 32 when lakes cover the map
thermal            +63      kept for the whole run (simcore/kernels/scratch.py): scratch
                            grids (+24: talus shares, which the creep's column
                            solve reuses, new heights and each cell's critical
                            rock slope; +16 before that last one, +24 before,
                            measured +23-24), the fine grid's lists of moved cells
                            and marks (+11: two int32 lists, touched only where
                            cells move, and the moved and queued marks) and the
                            multigrid's coarse copies (+28 allocated: seven quarter
                            grids, their state before a pass, lists and marks, 4/3
                            for the levels below; with six grids +25, measured
                            +20-22 in whole default runs); the default preset
                            measured 226 at 1024² and 231 at 2048² before the
                            critical slopes (+11) were kept
wind                +2      the particle track map; measured 0
ice               +113      the pass's grids on the terrain's cells (ground, ice,
                            firn, sliding speed, erosion, debris); peak measured
                            with tracemalloc at 1024² (the flow grid is small)
snow               +42      the pass's scratch grids; peak measured with tracemalloc
                            at 1024²
droplets, trees      0      work per particle, not per cell
============  ============  =========================================================

So the default preset (droplets, hydrology, thermal, trees) is estimated at 309 bytes a
cell (measured 215-229 at 512² and 1024² with the multigrid, before thermal kept its
critical slopes and with two terrain arrays fewer): 1.3 GB at 2048², 5.2 GB at 4096².
A host adds its own copies per cell (``extra_per_cell``): Blender's add-on about 270
more for the default preset's layers, trees and water (addon/data/writeback.py
bytes_per_vertex; a live run measured 372-386 bytes a vertex in all, estimated 454).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .. import fileio
from ..errors import ResourceError
from ..processes import FIELDS, PROCESSES

#: bytes per cell every run needs: the terrain's arrays (8 each) and what the simulation
#: keeps (the ground, the rain weights, the conversions, the ground before the running
#: process: 46)
BASE_BYTES_PER_CELL = 8 * len(FIELDS) + 46
#: bytes per cell for each enabled process: how much it moved the ground (a float64)
CHANGE_BYTES_PER_CELL = 8
#: bytes per cell each process adds while it works (its descriptor's ``bytes_per_cell``)
PROCESS_BYTES_PER_CELL = {name: proc.bytes_per_cell for name, proc in PROCESSES.items()}


def bytes_per_cell(processes: Iterable[str], extra_per_cell: float = 0.0) -> float:
    """Bytes one grid cell needs during a run of ``processes`` (names), plus
    ``extra_per_cell`` (a host's own copies)."""
    processes = set(processes)
    return (BASE_BYTES_PER_CELL + extra_per_cell + CHANGE_BYTES_PER_CELL * len(processes)
            + sum(PROCESS_BYTES_PER_CELL.get(p, 0) for p in processes))


def run_bytes(cells: int, processes: Iterable[str], extra_per_cell: float = 0.0) -> int:
    """Bytes a run of ``processes`` on a grid of ``cells`` (rows x cols) needs (see the
    table above), plus ``extra_per_cell`` for each cell."""
    return int(math.ceil(cells * bytes_per_cell(processes, extra_per_cell)))


def check_run(cells: int, processes: Iterable[str], what: str,
              extra_per_cell: float = 0.0, available: int | None = None) -> None:
    """Refuse a run that would not fit in the memory available now
    (:func:`simcore.fileio.available_memory`, or ``available`` bytes): a
    :class:`ResourceError` saying what it needs, what is free and what to do. Nothing
    is checked when the available memory is unknown."""
    processes = list(processes)
    need = run_bytes(cells, processes, extra_per_cell)
    have = fileio.available_memory() if available is None else available
    if have is None or need <= have:
        return
    per = bytes_per_cell(processes, extra_per_cell)
    side = int(math.sqrt(max(have, 0) / per))
    hint = (f"a grid of about {side}x{side} would fit" if side >= 3 else
            "not even a small grid fits now")
    raise ResourceError(
        f"{what} with {', '.join(processes)} needs about {fileio._mb(need)} of memory but "
        f"only {fileio._mb(have)} is available; use a smaller grid ({hint}) or close other "
        "programs")


def check_grid_run(shape: tuple[int, int], processes: Iterable[str]) -> None:
    """Refuse eroding a ``rows x cols`` grid larger than the core takes
    (``terrain.MAX_SIDE`` a side) or one that would not fit in memory now
    (:func:`check_run`)."""
    from ..terrain import MAX_CELLS, MAX_SIDE
    rows, cols = shape
    if rows * cols > MAX_CELLS:
        raise ResourceError(f"grid {rows}x{cols} is larger than {MAX_SIDE}x{MAX_SIDE}; "
                            "downsample it first")
    check_run(rows * cols, processes, f"eroding a {rows}x{cols} grid")


#: fine grids a refinement keeps beside the refined arrays: the ground surface, one
#: array being interpolated, the coarse ground and water surfaces
REFINE_SCRATCH_GRIDS = 3


def refine_bytes(shape: tuple[int, int], changes: int) -> int:
    """Bytes a refinement of a ``rows x cols`` terrain with ``changes`` change records
    needs: the coarse arrays, the arrays of the grid twice as fine and its scratch."""
    rows, cols = shape
    fine = (2 * rows - 1) * (2 * cols - 1)
    per_grid = len(FIELDS) + changes
    return 8 * (per_grid * rows * cols + (per_grid + REFINE_SCRATCH_GRIDS) * fine)


def check_refine(shape: tuple[int, int], changes: int, available: int | None = None) -> None:
    """Refuse a refinement larger than the core takes or one that would not fit in the
    memory available now (or ``available`` bytes): a ResourceError saying what it
    needs, what is free and what to do. Nothing is checked when the available memory
    is unknown."""
    from ..terrain import MAX_SIDE
    rows, cols = shape
    fine = (2 * rows - 1, 2 * cols - 1)
    if max(fine) > MAX_SIDE:
        raise ResourceError(f"refining a {rows}x{cols} grid makes {fine[0]}x{fine[1]}, larger "
                            f"than {MAX_SIDE}x{MAX_SIDE}; refine a grid of at most "
                            f"{(MAX_SIDE + 1) // 2} a side")
    need = refine_bytes(shape, changes)
    have = fileio.available_memory() if available is None else available
    if have is None or need <= have:
        return
    raise ResourceError(
        f"refining a {rows}x{cols} grid to {fine[0]}x{fine[1]} needs about "
        f"{fileio._mb(need)} of memory but only {fileio._mb(have)} is available; close "
        "other programs or refine a smaller grid")
