"""Threads for the simulation: the cap of the add-on's preferences (0 = every CPU
thread) applied to every run, and the stored preferences themselves."""

from __future__ import annotations

import os

import bpy

from .package import PACKAGE


def cpu_count() -> int:
    return os.cpu_count() or 1


def thread_count(cap: int) -> int:
    """Threads for a cap (0 = every CPU thread, or NUMBA_NUM_THREADS when set)."""
    from ..simcore.kernels import parallel
    most = parallel.most_threads()
    return most if cap <= 0 else max(1, min(cap, most))


def apply_thread_cap(cap: int) -> int:
    """Use at most ``cap`` threads for every run from now on (the live run's worker
    thread included)."""
    from ..simcore.kernels import parallel
    return parallel.set_threads(thread_count(cap))


def preferences():
    """The stored preferences, or None when the add-on is not enabled through Blender's
    preferences (e.g. imported by a test)."""
    addon = bpy.context.preferences.addons.get(PACKAGE)
    return None if addon is None else addon.preferences
