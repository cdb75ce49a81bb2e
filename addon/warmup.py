"""Prepare the simulation core without freezing Blender.

numba compiles each kernel on its first call (25-30 s for all of them with an empty
cache, about 1 s to load them from the cache). In the UI the add-on starts that work on a
background thread when it is enabled: each process runs one round on a tiny terrain
through the public :class:`Simulation` API, so the kernels and signatures compiled are
the ones a real run uses, whatever the kernels look like inside. The panel shows
"Preparing the simulation core…" with progress and offers Erode once it is ready.

Scripts and ``blender -b`` never start it (a batch run compiles what it needs on first
use), and nothing here touches bpy data: the thread only runs numpy/numba code.
"""

from __future__ import annotations

import dataclasses
import gc
import threading
import time
from collections.abc import Callable

IDLE, PREPARING, READY, FAILED = "idle", "preparing", "ready", "failed"
THREAD_NAME = "terrain_erosion warm-up"


@dataclasses.dataclass(frozen=True)
class Status:
    """Where the warm-up stands (a snapshot: safe to read from any thread)."""

    state: str = IDLE
    done: int = 0
    total: int = 0
    current: str = ""
    seconds: float = 0.0
    error: str = ""

    @property
    def fraction(self) -> float:
        return 0.0 if self.total == 0 else self.done / self.total

    @property
    def busy(self) -> bool:
        return self.state == PREPARING

    def text(self) -> str:
        if self.state == PREPARING:
            what = f": {self.current}" if self.current else ""
            return f"Preparing the simulation core… {self.done}/{self.total}{what}"
        if self.state == READY:
            return f"Simulation core ready ({self.seconds:.1f} s)"
        if self.state == FAILED:
            return f"Preparing the simulation core failed: {self.error}"
        return ""


_status = Status()
_lock = threading.Lock()
_thread: threading.Thread | None = None


def status() -> Status:
    return _status


def _set(**changes) -> None:
    global _status
    with _lock:
        _status = dataclasses.replace(_status, **changes)


def steps() -> list[tuple[str, Callable[[], None]]]:
    """(label, job) for every piece of the core a run uses, in the order compiled."""
    import numpy as np

    from .simcore.layers import gray_to_rgba, to_vertices
    from .simcore.noise import fractal_terrain
    from .simcore.simulation import PROCESSES, Simulation, process_params
    from .simcore.terrain import Terrain

    heights = fractal_terrain(12, seed=1, relief=4.0)

    def run_process(name: str) -> Callable[[], None]:
        def job() -> None:
            params = process_params(name)
            terrain = Terrain.from_heights(heights.copy(), 1.0)
            Simulation(terrain, {name: params}, seed=0, particles=1).run_round()
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

    jobs = [(PROCESSES[n].label, run_process(n)) for n in PROCESSES]
    return jobs + [("Mesh write-back", write_back)]


def _work() -> None:
    start = time.perf_counter()
    # Compiling makes a lot of long-lived objects, so Python's full (generation 2)
    # collections come often and each holds the GIL for 0.4-0.8 s: the UI thread would
    # stall. Young generations are still collected (<20 ms each); the full collections
    # resume with the old thresholds afterwards.
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], 1_000_000_000)
    try:
        # a warm-up of an earlier load of this add-on (disabled and enabled again while
        # compiling) may still run: never launch parallel kernels from two threads
        for other in threading.enumerate():
            if other.name == THREAD_NAME and other is not threading.current_thread():
                other.join()
        jobs = steps()
        _set(total=len(jobs))
        for i, (label, job) in enumerate(jobs):
            _set(current=label, done=i)
            job()
        _set(state=READY, done=len(jobs), current="", seconds=time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - shown in the panel; a run would say more
        _set(state=FAILED, error=f"{type(exc).__name__}: {exc}",
             seconds=time.perf_counter() - start)
    finally:
        gc.set_threshold(*thresholds)


def start() -> bool:
    """Start preparing on a daemon thread; False if it already started (or finished)."""
    global _thread
    with _lock:
        if _status.state != IDLE:
            return False
    _set(state=PREPARING, done=0, total=0, current="", error="")
    _thread = threading.Thread(target=_work, name=THREAD_NAME, daemon=True)
    _thread.start()
    return True


def wait(timeout: float | None = None) -> Status:
    """Block until the warm-up ends (tests and benchmarks only, never the UI)."""
    if _thread is not None:
        _thread.join(timeout)
    return _status


def reset() -> None:
    """Forget the state (tests); a running thread is waited for first."""
    wait()
    _set(state=IDLE, done=0, total=0, current="", seconds=0.0, error="")


# -- UI glue: redraw the sidebar while preparing (bpy.app.timers run only in the UI) --------

def _redraw() -> float | None:
    import bpy
    for window in getattr(bpy.context.window_manager, "windows", ()):
        for area in window.screen.areas if window.screen else ():
            if area.type == 'VIEW_3D':
                area.tag_redraw()
    return 0.25 if _status.busy else None


def register() -> None:
    import bpy
    if bpy.app.background:
        return
    if start():
        bpy.app.timers.register(_redraw, first_interval=0.25, persistent=True)


def unregister() -> None:
    import bpy
    if bpy.app.timers.is_registered(_redraw):
        bpy.app.timers.unregister(_redraw)
