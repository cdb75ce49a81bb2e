"""A dask.distributed client for the command line's tiles and sweeps.

Command-line only: the Blender extension never imports this module (nor dask). A local
cluster of worker *processes* by default (``workers``), or any running scheduler
(``scheduler`` = its address, e.g. ``tcp://10.0.0.5:8786``). Each worker runs one task
at a time with ``threads`` numba threads; the results never depend on the thread count.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from ..errors import UserError


class ClusterError(UserError):
    """The scheduler cannot be reached, or dask is not installed."""


class TaskFailed(ClusterError):
    """A task failed on every try (its worker died each time, or it raised): the
    message names the task and why; the run's earlier output is left as it was."""


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ClusterError("tiles and sweeps run on dask.distributed, which is not "
                           "installed: pip install 'distributed' 'zarr<3' (python build.py "
                           "setup installs them into .venv)") from None
    return distributed


#: the transports a dask scheduler address may name (``tcp://`` when none is given)
TRANSPORTS = ("tcp", "tls", "inproc", "ucx", "ws", "wss")
MAX_WORKERS = 1024


def most_threads() -> int:
    """The most numba threads a local worker may have: this machine's cores."""
    return max(1, os.cpu_count() or 1)


def check_scheduler(address: str) -> str:
    """``--scheduler``: ``[TRANSPORT://]HOST:PORT`` (TRANSPORT one of
    :data:`TRANSPORTS`, default tcp; an IPv6 host in brackets); ClusterError saying
    what is wrong, before anything connects."""
    text = str(address).strip()
    said = f"--scheduler {address!r}"
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    if scheme.lower() not in TRANSPORTS:
        raise ClusterError(f"{said}: unknown transport '{scheme}://'; use one of "
                           f"{', '.join(t + '://' for t in TRANSPORTS)} (e.g. "
                           "tcp://10.0.0.5:8786)")
    if scheme.lower() == "inproc":
        if not rest:
            raise ClusterError(f"{said}: an inproc:// address names its scheduler")
        return text
    host, colon, port = rest.rpartition(":")
    if not colon or not port or (host.startswith("[") is not host.endswith("]")):
        raise ClusterError(f"{said}: give HOST:PORT, e.g. tcp://10.0.0.5:8786 (no port)")
    bare = host[1:-1] if host.startswith("[") else host
    if not bare or any(c.isspace() or c in "/?#@[]" for c in bare):
        raise ClusterError(f"{said}: {'empty' if not bare else 'malformed'} host; give "
                           "HOST:PORT, e.g. tcp://10.0.0.5:8786")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ClusterError(f"{said}: the port must be a number from 1 to 65535, got "
                           f"'{port}'")
    return text


def check_cluster_args(workers: int = 2, scheduler: str | None = None,
                       threads: int = 1) -> None:
    """``--workers``, ``--scheduler``, ``--threads`` checked before a cluster starts
    (ClusterError naming the flag and its range). ``--threads`` is numba threads per
    local worker: 1 up to this machine's cores (0 does not mean "all": it is refused)."""
    if scheduler is not None:
        check_scheduler(scheduler)
    if not 1 <= workers <= MAX_WORKERS:
        raise ClusterError(f"--workers must be 1..{MAX_WORKERS}, got {workers}")
    most = most_threads()
    if not 1 <= threads <= most:
        raise ClusterError(f"--threads must be 1..{most} (this machine's cores), got "
                           f"{threads}")


@contextmanager
def client(workers: int = 2, scheduler: str | None = None, threads: int = 1,
           quiet: bool = False, memory_limit: str | int = "auto") -> Iterator[Any]:
    """A ``distributed.Client``: connected to ``scheduler``, else to a new
    LocalCluster of ``workers`` processes (closed on exit). Prints the dashboard link."""
    check_cluster_args(workers, scheduler, threads)
    distributed = _distributed()
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
              quiet: bool = False,
              on_result: Callable[[int, Any], None] | None = None,
              names: list[str] | None = None) -> list[Any]:
    """Submit ``fn(*item)`` for every item as one task each (pure: a re-run after a
    lost worker computes the same thing), print a progress line as each ends, and
    return the results in the order of ``items``. ``on_result(i, result)`` is called
    as item ``i`` ends (so a caller interrupted mid-way knows what finished); on any
    exception (Ctrl+C) the tasks not yet finished are cancelled. A task that fails on
    every try -- Dask gives up on it (KilledWorker) when its worker died each time it
    ran it, or it raised each time -- ends the run with :class:`TaskFailed` naming it
    (``names[i]``, else its label and number) and why."""
    distributed = _distributed()
    items = list(items)
    futures = [c.submit(fn, *item, pure=False, retries=RETRIES) for item in items]
    index = {f.key: i for i, f in enumerate(futures)}
    results: list[Any] = [None] * len(futures)
    done = 0
    try:
        for fut in distributed.as_completed(futures):
            i = index[fut.key]
            try:
                results[i] = fut.result()
            except Exception as exc:  # noqa: BLE001 - said in one line, not a traceback
                what = names[i] if names else f"{label} task {i + 1} of {len(items)}"
                raise TaskFailed(f"{what} failed: {task_failure(exc)}") from None
            if on_result is not None:
                on_result(i, results[i])
            done += 1
            if not quiet:
                print(f"  {label}: {done}/{len(futures)} done", file=sys.stderr,
                      flush=True)
    except BaseException:
        with suppress(Exception):
            c.cancel(futures)
        raise
    return results


#: times Dask runs a task again after it raised (a lost worker's tasks are re-run as
#: well, up to the scheduler's ``allowed-failures``)
RETRIES = 2


def task_failure(exc: BaseException) -> str:
    """Why a task failed, in one line: a worker that died each time it ran the task
    (Dask's KilledWorker), or what the task raised on its last try."""
    if type(exc).__name__ == "KilledWorker":
        return ("its worker process died each time it ran it (killed, or out of memory: "
                "give the workers more memory, or run fewer --workers or smaller tiles)")
    text = " ".join(str(exc).split()) or "no message"
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__} on every try ({RETRIES + 1}): {text}"
