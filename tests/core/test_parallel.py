"""simcore.kernels.parallel: the thread cap and the task runner the kernels' threads use."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.kernels import parallel


@pytest.fixture(autouse=True)
def _restore_threads():
    old = parallel.threads()
    yield
    parallel.set_threads(old)


def test_the_cap_is_clamped_and_holds_on_every_thread():
    most = parallel.most_threads()
    assert parallel.set_threads(0) == most
    assert parallel.set_threads(10_000) == most
    assert parallel.set_threads(1) == 1
    seen = []
    worker = threading.Thread(target=lambda: seen.append(parallel.threads()))
    worker.start()
    worker.join()
    assert seen == [1], "numba's own cap is per thread; ours is not"


@settings(max_examples=40, deadline=None)
@given(roots=st.integers(0, 6), depth=st.integers(0, 5), fan=st.integers(1, 3),
       count=st.integers(1, 5))
def test_every_task_and_every_task_it_makes_runs_once(roots, depth, fan, count):
    """A task (path) makes ``fan`` children until ``depth``; each runs exactly once,
    after its parent, on any number of threads."""
    ran, order = [], {}
    lock = threading.Lock()

    def do(task):
        with lock:
            order[task] = len(ran)
            ran.append(task)
        return len(task)

    def then(task, result):
        assert result == len(task)
        return [task + (i,) for i in range(fan)] if len(task) <= depth else []

    parallel.run([(r,) for r in range(roots)], do, then, count=count)
    expected = roots * sum(fan ** d for d in range(depth + 1))
    assert len(ran) == len(set(ran)) == expected
    for task in ran:
        if len(task) > 1:
            assert order[task[:-1]] < order[task], "a child ran before its parent"


def test_tasks_run_on_several_threads_at_once_when_allowed():
    barrier = threading.Barrier(2, timeout=10)
    parallel.run(range(2), lambda _: barrier.wait(), count=2)  # would time out on one thread


def test_an_exception_reaches_the_caller_and_stops_new_tasks():
    started = []

    def do(i):
        started.append(i)
        if i == 0:
            raise ValueError("task 0 failed")
        time.sleep(0.001)

    with pytest.raises(ValueError, match="task 0 failed"):
        parallel.run(range(50), do, count=1)
    assert started == [0]
    with pytest.raises(ValueError, match="task 0 failed"):
        parallel.run(range(50), do, count=2)
    assert len(started) < 51, "tasks kept starting after the failure"
    with pytest.raises(RuntimeError, match="bookkeeping"):
        parallel.run([1], lambda i: i, lambda t, r: (_ for _ in ()).throw(
            RuntimeError("bookkeeping")), count=2)


def test_runs_from_two_threads_at_once_both_finish():
    """The add-on's live run and a batch run may overlap: the second runs alone."""
    results: dict[str, list] = {"a": [], "b": []}
    errors = []

    def runner(name):
        try:
            parallel.run(range(200), lambda i: results[name].append(i) or time.sleep(1e-4),
                         count=2)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=runner, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert sorted(results["a"]) == sorted(results["b"]) == list(range(200))


def test_chunks_cover_the_range_in_order():
    assert parallel.chunks(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert parallel.chunks(2, 8) == [(0, 1), (1, 2)]
    assert parallel.chunks(0, 4) == [(0, 0)]
