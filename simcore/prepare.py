"""Compile (or load from numba's cache) the kernels a run uses, ahead of the run.

numba compiles a kernel on its first call: 10-30 s for the whole core with an empty
cache, well under a second to load it from the cache. :func:`steps` lists that work as
small jobs, one per process plus the helpers a host application calls around a run, so
a caller can do it on a background thread (addon/warmup.py) or measure it
(benchmarks/bench_warmup.py). Each job runs the public API on a tiny terrain, so the
signatures compiled are exactly the ones a real run uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

#: key of the job for the per-vertex write-back helpers (simcore.layers)
WRITE_BACK = "write-back"
#: key of the job for the DLA ridge generator (not a process of a run)
RIDGES = "ridges"
#: the grid the jobs run on (cells a side): small enough to run in milliseconds
SIDE = 12


def steps(first: Iterable[str] = ()) -> list[tuple[str, str, Callable[[], None]]]:
    """(key, label, job) for every piece of the core, in the order to prepare them.

    Keys are process names, :data:`WRITE_BACK` and :data:`RIDGES`. The processes named
    in ``first`` (those of the preset about to be used) come first, then the write-back
    helpers, so that a run of that preset is ready as early as possible; the other
    processes and the ridge generator follow."""
    from .layers import gray_to_rgba, to_vertices
    from .noise import fractal_terrain
    from .simulation import PROCESSES, Simulation, process_params
    from .terrain import Terrain

    heights = fractal_terrain(SIDE, seed=1, relief=4.0)

    def run_process(name: str) -> Callable[[], None]:
        def job() -> None:
            terrain = Terrain.from_heights(heights.copy(), 1.0)
            terrain.protect[0, 0] = 0.5  # a painted protect mask has a kernel of its own
            Simulation(terrain, {name: process_params(name)}, seed=0,
                       particles=1).run_round()
        return job

    def write_back() -> None:  # what the add-on calls to write mesh attributes
        values = heights.astype(np.float64)
        out = np.empty(values.size, np.float32)
        rgba = np.empty((values.size, 4), np.float32)
        order = np.arange(values.size, dtype=np.int64)[::-1].copy()
        for o in (None, order):
            for dtype in (np.float64, np.float32):  # layers; original heights
                to_vertices(values.astype(dtype), out, 1.0, o)
            gray_to_rgba("sediment", values, rgba, o)

    def ridges() -> None:  # the Generate Ridges operator
        from .processes import dla
        dla.ridge_terrain((SIDE, SIDE), 100.0, dla.RidgeParams())

    first = [n for n in first if n in PROCESSES]
    rest = [n for n in PROCESSES if n not in first]
    jobs = [(n, PROCESSES[n].label, run_process(n)) for n in first]
    jobs.append((WRITE_BACK, "Mesh write-back", write_back))
    jobs += [(n, PROCESSES[n].label, run_process(n)) for n in rest]
    jobs.append((RIDGES, "Ridges", ridges))
    return jobs
