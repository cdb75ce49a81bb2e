"""Threads for the kernels: a process-wide cap and a small pool of worker threads.

The kernels are numba functions compiled with ``nogil=True``, so plain Python threads
run them truly in parallel. A process cuts its work into tasks whose results never
depend on which thread ran them or when (droplet strips, rows of a grid sweep) and hands
them to :func:`run`; the calling thread works along with ``threads() - 1`` pooled
workers, each taking the next ready task, so a thread slowed down by another program
(a render, a browser) simply takes fewer tasks. Idle workers sleep on a lock: nothing
spins.

This replaces numba's ``prange``: no threading layer to load (OpenMP is missing on
macOS), no parallel regions to compile (about 3.5 s of a cold start), and the thread
cap applies to every thread that runs a simulation, the add-on's worker included
(numba's ``set_num_threads`` is per thread).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

_lock = threading.Lock()  # guards _threads and the pool's creation
_threads: int | None = None


def most_threads() -> int:
    """The most threads a run may use: the CPU count, or ``NUMBA_NUM_THREADS`` when set
    (the usual way to cap numba from the environment, kept for pipelines that do)."""
    env = os.environ.get("NUMBA_NUM_THREADS", "")
    cpus = os.cpu_count() or 1
    return max(1, int(env)) if env.isdigit() and int(env) > 0 else cpus


def threads() -> int:
    """Threads a run uses now (:func:`set_threads`; all of :func:`most_threads` until
    then)."""
    return most_threads() if _threads is None else _threads


def set_threads(n: int) -> int:
    """Use ``n`` threads from now on, for runs on any thread (clamped to 1 ..
    :func:`most_threads`; 0 or less means all). Returns the count in use."""
    global _threads
    most = most_threads()
    with _lock:
        _threads = most if n <= 0 else max(1, min(int(n), most))
        return _threads


class _Pool:
    """Worker threads (daemons, started on first need) that join :func:`run` calls."""

    def __init__(self) -> None:
        self.busy = threading.Lock()  # one run at a time uses the workers
        self.cond = threading.Condition()
        self.job: _Job | None = None
        self.generation = 0
        self.workers = 0

    def grow(self, n: int) -> None:
        while self.workers < n:
            self.workers += 1
            threading.Thread(target=self._serve, name=f"terrain-erosion-{self.workers}",
                             daemon=True).start()

    def _serve(self) -> None:
        seen = 0
        while True:
            with self.cond:
                while self.generation == seen:
                    self.cond.wait()
                seen = self.generation
                job = self.job
            if job is not None:
                job.work()


class _Job:
    """Tasks of one :func:`run` call: a queue of ready tasks that ending tasks extend."""

    def __init__(self, tasks: Iterable[Any], do: Callable[[Any], Any],
                 then: Callable[[Any, Any], Iterable[Any] | None] | None,
                 helpers: int) -> None:
        self.ready = deque(tasks)
        self.do = do
        self.then = then
        self.cond = threading.Condition()
        self.running = 0
        self.helpers = helpers  # pool workers that may still join
        self.error: BaseException | None = None

    def work(self) -> None:
        with self.cond:
            if self.helpers <= 0:  # a worker woken for an earlier run, or one too many
                return
            self.helpers -= 1
        self.loop()

    def loop(self) -> None:
        cond = self.cond
        with cond:
            while True:
                while not self.ready and self.running and self.error is None:
                    cond.wait()
                if not self.ready or self.error is not None:
                    return
                task = self.ready.popleft()
                self.running += 1
                cond.release()
                try:
                    result = self.do(task)
                except BaseException as exc:  # noqa: BLE001 - raised by run()
                    result = exc
                cond.acquire()
                self.running -= 1
                try:
                    if isinstance(result, BaseException):
                        raise result
                    if self.then is not None:
                        self.ready.extend(self.then(task, result) or ())
                except BaseException as exc:  # noqa: BLE001 - raised by run()
                    self.error = self.error or exc
                cond.notify_all()

    def wait_done(self) -> None:
        with self.cond:
            self.helpers = 0  # workers not yet arrived leave at once
            while self.running:
                self.cond.wait()


_pool = _Pool()


def run(tasks: Iterable[Any], do: Callable[[Any], Any],
        then: Callable[[Any, Any], Iterable[Any] | None] | None = None,
        count: int | None = None) -> None:
    """Run ``do(task)`` for every task on up to ``count`` (default :func:`threads`)
    threads, this one included, without any lock held: tasks handed out together must
    not touch the same data. ``then(task, result)``, if given, runs after each task with
    the run's lock held (one at a time, for bookkeeping) and may return new tasks, ready
    to run now (e.g. droplet strips whose neighbours have ended their pass). The call
    returns when no task is left or running. The first exception raised by a task is
    raised here once the running tasks have ended (no new task starts after it). While
    another thread's run has the workers, this one runs on its own thread."""
    n = threads() if count is None else max(1, count)
    job = _Job(tasks, do, then, n - 1)
    if n > 1 and _pool.busy.acquire(blocking=False):
        try:
            with _lock:
                _pool.grow(n - 1)
            with _pool.cond:
                _pool.job = job
                _pool.generation += 1
                _pool.cond.notify_all()
            job.loop()
            job.wait_done()
        finally:
            with _pool.cond:
                _pool.job = None
            _pool.busy.release()
    else:
        job.helpers = 0
        job.loop()
    if job.error is not None:
        raise job.error


def bands(size: int) -> list[tuple[int, int]]:
    """Slices of ``range(size)`` for a per-cell or per-row pass on the pooled threads:
    the whole range on 1 thread, else 4 slices a thread (a slow slice does not hold
    the others up)."""
    count = threads()
    return chunks(size, 1 if count == 1 else 4 * count)


def chunks(size: int, parts: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of ``parts`` near-equal consecutive slices of ``range(size)``
    (fewer when ``size`` is smaller), in order."""
    parts = max(1, min(parts, size))
    return [(size * i // parts, size * (i + 1) // parts) for i in range(parts)]
