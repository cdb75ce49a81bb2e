"""Scratch a process keeps from one batch to the next while a simulation runs.

A process whose batch needs large scratch grids (thermal: about 37 MB a batch at 1024²)
would allocate them anew each batch. The C library may map such blocks fresh from the
system and hand them back when they are freed; then every batch pays a page fault for
each 4 KiB it touches, and each unmapping interrupts the other threads of the process
to flush their address caches. In the resolution bench's protocol (a small run first in
the same process) a whole default run at 1024² had 740k page faults and 2.8 s of system
time; keeping thermal's scratch took one pair of runs from 28.0 to 24.0 s on 2 threads
and from 43.0 to 39.3 s on 1.

A :class:`~simcore.engine.simulation.Simulation` keeps a store for its run and sets it for
the length of each round (:func:`keeping`). A process :func:`take` s what it left
there under its name, if the key (the grid's shape, the thread count, ...) is the
same, and :func:`give` s it back when its batch ends well: an object is never
shared by two batches at once, and one left half-written by an error is dropped.
Outside a round (a direct ``run_batch`` call, a tile), :func:`take` finds nothing and
the process makes a new one each batch, as it would without a store. A process keeps
only what cannot change its next batch's result (it is overwritten before it is read,
or the process says why what is left does not matter). The store lives and dies with
its simulation object: once that is dropped, nothing of it is held.
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
