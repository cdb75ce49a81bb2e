"""A dask.distributed client for the command line's tiles and sweeps.

Command-line only: the Blender extension never imports this module (nor dask). A local
cluster of worker *processes* by default (``workers``), or any running scheduler
(``scheduler`` = its address, e.g. ``tcp://10.0.0.5:8786``). Each worker runs one task
at a time with ``threads`` numba threads; the results never depend on the thread count.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import UserError


class ClusterError(UserError):
    """The scheduler cannot be reached, or dask is not installed."""


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ClusterError("tiles and sweeps run on dask.distributed, which is not "
                           "installed: pip install 'distributed' 'zarr<3' (python build.py "
                           "setup installs them into .venv)") from None
    return distributed


@contextmanager
def client(workers: int = 2, scheduler: str | None = None, threads: int = 1,
           quiet: bool = False, memory_limit: str | int = "auto") -> Iterator[Any]:
    """A ``distributed.Client``: connected to ``scheduler``, else to a new
    LocalCluster of ``workers`` processes (closed on exit). Prints the dashboard link."""
    distributed = _distributed()
    if workers < 1 or workers > 1024:
        raise ClusterError(f"--workers must be 1..1024, got {workers}")
    if threads < 1:
        raise ClusterError(f"--threads must be >= 1, got {threads}")
    cluster = None
    if scheduler:
        try:
            c = distributed.Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"--scheduler {scheduler}: cannot connect ({exc}); start "
                               "one with 'dask scheduler' or leave --scheduler out for a "
                               "local cluster") from None
    else:
        # numba threads of each worker process (its own pool: tasks never share it)
        env = {"NUMBA_NUM_THREADS": str(threads)}
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True,
            dashboard_address=":0", memory_limit=memory_limit,
            silence_logs=50, env=env)
        c = distributed.Client(cluster)
    try:
        if not quiet:
            where = scheduler or f"local cluster of {workers} worker processes"
            print(f"dask: {where}; dashboard {c.dashboard_link}", file=sys.stderr,
                  flush=True)
        yield c
    finally:
        c.close()
        if cluster is not None:
            cluster.close()


def run_tasks(c: Any, fn: Callable[..., Any], items: Iterable[tuple], label: str,
              quiet: bool = False) -> list[Any]:
    """Submit ``fn(*item)`` for every item as one task each (pure: a re-run after a
    lost worker computes the same thing), print a progress line as each ends, and
    return the results in the order of ``items``."""
    distributed = _distributed()
    items = list(items)
    futures = [c.submit(fn, *item, pure=False, retries=2) for item in items]
    index = {f.key: i for i, f in enumerate(futures)}
    results: list[Any] = [None] * len(futures)
    done = 0
    for fut in distributed.as_completed(futures):
        results[index[fut.key]] = fut.result()
        done += 1
        if not quiet:
            print(f"  {label}: {done}/{len(futures)} done", file=sys.stderr, flush=True)
    return results
