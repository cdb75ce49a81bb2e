"""Prepare the simulation core without freezing Blender.

numba compiles each kernel on its first call (10-30 s for all of them with an empty
cache, well under a second to load them from the cache). In the UI the add-on starts that
work on a background thread when it is enabled: the jobs of simcore/cli/prepare.py run one
round of each process on a tiny terrain through the public API, so the kernels and
signatures compiled are the ones a real run uses. The default preset's processes come
first: Erode is offered for an object as soon as the processes it has enabled (and the
mesh write-back) are ready, while the rest keeps compiling. The panel shows "Preparing
the simulation core…" with progress meanwhile.

With two or more CPU threads allowed (the add-on's Threads preference), the kernels
compile in helper processes, in parallel, into numba's on-disk cache, and the thread
here loads each job from the cache as soon as a helper has done it; if the helpers
cannot start (no Python to run, a sandbox) or fail, the jobs compile on the thread as
before. Helpers end with Blender, with the add-on (unregister) and when their work is
done (simcore/cli/prepare.py).

Scripts and ``blender -b`` never start it (a batch run compiles what it needs on first
use), and nothing here touches bpy data: the thread only runs numpy/numba code.
"""

from __future__ import annotations

import dataclasses
import gc
import threading
import time
from collections.abc import Callable, Iterable

IDLE, PREPARING, READY, FAILED = "idle", "preparing", "ready", "failed"
WRITE_BACK = "write-back"  # simcore.cli.prepare.WRITE_BACK (not imported: numba may be missing)
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
    #: keys of the jobs done (process names, "write-back", "ridges")
    ready: frozenset = frozenset()
    #: helper processes compiling in parallel (0: all on the warm-up thread)
    helpers: int = 0

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

    def ready_for(self, processes: Iterable[str]) -> bool:
        """Can a run of ``processes`` start without compiling on the caller's thread?"""
        if self.state in (READY, FAILED, IDLE):  # failed/never started: a run compiles
            return True
        return {*processes, WRITE_BACK} <= self.ready


_status = Status()
_lock = threading.Lock()
_thread: threading.Thread | None = None
_cancel = threading.Event()


def status() -> Status:
    return _status


def _set(**changes) -> None:
    global _status
    with _lock:
        _status = dataclasses.replace(_status, **changes)


def poll_ready(cls, obj) -> bool:
    """An operator's poll: whether the core is compiled for ``obj``'s ticked processes;
    if not, says so in the poll message (the warm-up runs on another thread)."""
    core = status()
    if not core.ready_for(enabled_processes(obj)):
        cls.poll_message_set(core.text())
        return False
    return True


def enabled_processes(obj) -> list[str]:
    """Names of the processes ticked in ``obj``'s erosion settings (none for an object
    without them): what a run on it needs prepared."""
    from ..simcore.engine.simulation import PROCESSES
    settings = getattr(obj, "terrain_erosion", None)
    if settings is None:
        return []
    return [n for n in PROCESSES if getattr(settings, n).enabled]


def steps() -> list[tuple[str, str, Callable[[], None]]]:
    """(key, label, job) for every piece of the core, the default preset's first."""
    from ..simcore.cli.prepare import steps as core_steps
    from ..simcore.formats.presets import find_preset
    return core_steps(first=find_preset("default").params)


def helper_count(cap: int = 0, load: float | None = None) -> int:
    """Helper processes for a warm-up under the Threads preference ``cap`` (0 = all):
    one per allowed thread, at most simcore.cli.prepare.MOST_HELPERS, and no more than the
    cores other programs leave free (``load``: the 1-minute load average, read from
    the OS where it has one); fewer than 2 means none (compile on the warm-up thread,
    which on a busy machine beats several processes competing for one core)."""
    import os

    from ..simcore.cli.prepare import MOST_HELPERS, python_executable
    from .threads import thread_count
    if python_executable() is None:
        return 0
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):  # Windows has no load average
            load = 0.0
    free = (os.cpu_count() or 1) - load
    n = min(MOST_HELPERS, thread_count(cap), int(free + 0.7))
    return n if n >= 2 else 0


def _work(helpers: int) -> None:
    from ..simcore.cli.prepare import run
    start = time.perf_counter()
    # Compiling makes a lot of long-lived objects, so Python's full (generation 2)
    # collections come often and each holds the GIL for 0.4-0.8 s: the UI thread would
    # stall. Young generations are still collected (<20 ms each); the full collections
    # resume with the old thresholds afterwards.
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], 1_000_000_000)

    def progress(key: str | None, doing: str) -> None:
        if key is None:
            _set(current=doing)
        else:
            _set(ready=_status.ready | {key}, done=_status.done + 1)

    try:
        # a warm-up of an earlier load of this add-on (disabled and enabled again while
        # compiling) may still run: never launch parallel kernels from two threads
        for other in threading.enumerate():
            if other.name == THREAD_NAME and other is not threading.current_thread():
                other.join()
        jobs = steps()
        _set(total=len(jobs), helpers=helpers)
        if run(jobs, helpers, progress, _cancel.is_set):
            _set(state=READY, current="", seconds=time.perf_counter() - start)
        else:
            _set(state=IDLE, current="", seconds=time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - shown in the panel; a run would say more
        _set(state=FAILED, error=f"{type(exc).__name__}: {exc}",
             seconds=time.perf_counter() - start)
    finally:
        gc.set_threshold(*thresholds)


def start(helpers: int | None = None) -> bool:
    """Start preparing on a daemon thread; False if it already started (or finished).
    ``helpers``: helper processes to compile in (None: :func:`helper_count` under the
    Threads preference; 0: all on the thread)."""
    global _thread
    with _lock:
        if _status.state != IDLE:
            return False
    if helpers is None:
        from .threads import preferences
        prefs = preferences()
        helpers = helper_count(prefs.threads if prefs is not None else 0)
    _cancel.clear()
    _set(state=PREPARING, done=0, total=0, current="", error="", ready=frozenset())
    _thread = threading.Thread(target=_work, args=(helpers,), name=THREAD_NAME, daemon=True)
    _thread.start()
    return True


def stop() -> None:
    """Stop a warm-up under way without waiting for it: helper processes end within a
    tenth of a second; a job compiling on the thread itself (no helpers) ends first."""
    _cancel.set()


def wait(timeout: float | None = None) -> Status:
    """Block until the warm-up ends (tests and benchmarks only, never the UI)."""
    if _thread is not None:
        _thread.join(timeout)
    return _status


def reset() -> None:
    """Forget the state (tests); a running thread is waited for first."""
    wait()
    _set(state=IDLE, done=0, total=0, current="", seconds=0.0, error="", ready=frozenset(),
         helpers=0)


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
    stop()  # helper processes end with the add-on
    if bpy.app.timers.is_registered(_redraw):
        bpy.app.timers.unregister(_redraw)
