"""Scratch a process keeps from one batch to the next while a simulation runs.

A process whose batch needs large scratch grids (thermal: about 37 MB a batch at 1024²)
would allocate them anew each batch. The C library maps such blocks fresh from the
system and hands them back when they are freed, so every batch pays a page fault for
each 4 KiB it touches, and each unmapping interrupts the other threads of the process
to flush their address caches. In a whole default run at 1024² that was 740k page
faults and 2.8 s of system time, and it cost two threads far more than one (measured:
25.5 -> 21.8 s on 2 threads, 37.7 -> 37.6 s on 1, with the C library keeping the
memory).

A :class:`~simcore.simulation.Simulation` keeps a store for its run and sets it for
the length of each round (:func:`keeping`). A process :func:`take` s what it left
there under its name, if the key (the grid's shape, the thread count, ...) is the
same, and :func:`give` s it back when its batch ends well: an object is never
shared by two batches at once, and one left half-written by an error is dropped.
Outside a round (a direct ``run_batch`` call, a tile), :func:`take` finds nothing and
the process makes a new one each batch, as it would without a store. Whatever is kept
is overwritten or reset before use, so results never depend on it. The store lives
and dies with its simulation: a finished run holds no memory for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator
from contextvars import ContextVar
from typing import Any

#: the running round's store: process name -> (key, object); None outside a round
_store: ContextVar[dict[str, tuple[Hashable, Any]] | None] = ContextVar(
    "terrain_erosion_scratch", default=None)


@contextlib.contextmanager
def keeping(store: dict[str, tuple[Hashable, Any]]) -> Iterator[None]:
    """Let processes keep their scratch in ``store`` for the length of the ``with``
    (on this thread)."""
    token = _store.set(store)
    try:
        yield
    finally:
        _store.reset(token)


def take(name: str, key: Hashable) -> Any | None:
    """What process ``name`` gave back under ``key``, taken out of the store (None
    when nothing is kept, the key differs or no store is set)."""
    store = _store.get()
    if store is None or name not in store:
        return None
    kept_key, obj = store.pop(name)
    return obj if kept_key == key else None


def give(name: str, key: Hashable, obj: Any) -> None:
    """Keep ``obj`` for process ``name``'s next batch under ``key`` (replacing what
    it kept before), if a store is set."""
    store = _store.get()
    if store is not None:
        store[name] = (key, obj)
