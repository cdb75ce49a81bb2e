"""Compile (or load from numba's cache) the kernels a run uses, ahead of the run.

numba compiles a kernel on its first call: 10-30 s for the whole core with an empty
cache, well under a second to load it from the cache. :func:`steps` lists that work as
small jobs, one per process plus the helpers a host application calls around a run, so
a caller can do it on a background thread (addon/data/warmup.py) or measure it
(benchmarks/bench_warmup.py). Each job runs the public API on a tiny terrain, so the
signatures compiled are exactly the ones a real run uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

#: key of the job for the per-vertex write-back helpers (simcore.analysis.layers)
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
    from ..analysis.layers import to_vertices, vertex_gray, vertex_values, water_vertices
    from ..engine.simulation import PROCESSES, Simulation, process_params
    from ..formats.presets import find_preset
    from ..generators.noise import fractal_terrain
    from ..rock import RockColumn
    from ..terrain import Terrain

    heights = fractal_terrain(SIDE, seed=1, relief=4.0)

    # a process runs with its defaults and with the Default preset's values, whose
    # branches may differ (a creep of 0 by default, 25 m² in the preset)
    preset = find_preset("default").enabled_params()
    column = RockColumn.from_dict({"top": 2.0, "dip": 5.0, "fault_throw": 0.5, "layers": [
        {"thickness": 1.0, "erodibility": 0.5, "rock_angle": 50.0}, {"thickness": 1.5}]})

    def run_process(name: str) -> Callable[[], None]:
        def job() -> None:
            ours = preset.get(name, process_params(name))
            variants = [process_params(name), ours]
            variants += [process_params(name, extra) for extra in PROCESSES[name].warmup]
            for params in dict.fromkeys(variants):
                # a painted protect mask has kernels of its own, and so has a run without;
                # the masked run also reads a rock column (layers with angles)
                for masked in (True, False):
                    terrain = Terrain.from_heights(heights.copy(), 1.0,
                                                   rock=column if masked else None)
                    terrain.protect[0, 0] = 0.5 if masked else 0.0
                    Simulation(terrain, {name: params}, seed=0, particles=1).run_round()
        return job

    def write_back() -> None:  # what the add-on calls to write mesh attributes
        values = heights.astype(np.float64)
        out = np.empty(values.size, np.float32)
        rgba = np.empty(4 * values.size, np.float32)
        order = np.arange(values.size, dtype=np.int64)[::-1].copy()
        co = np.zeros(3 * values.size, np.float32)
        for o in (None, order):
            for dtype in (np.float64, np.float32):  # layers; original heights
                to_vertices(values.astype(dtype), out, 1.0, o)
            vertex_gray("sediment", values, rgba, o)
            vertex_values(values, co, 1.0, o, 3, 2)  # heights into positions
            water_vertices(values, values, 1.0, co, out, o)

    def ridges() -> None:  # the Generate Ridges operator
        from ..generators import ridges as dla
        dla.ridge_terrain((SIDE, SIDE), 100.0, dla.RidgeParams())

    first = [n for n in first if n in PROCESSES]
    rest = [n for n in PROCESSES if n not in first]
    jobs = [(n, PROCESSES[n].label, run_process(n)) for n in first]
    jobs.append((WRITE_BACK, "Mesh write-back", write_back))
    jobs += [(n, PROCESSES[n].label, run_process(n)) for n in rest]
    jobs.append((RIDGES, "Ridges", ridges))
    return jobs


# -- compiling in helper processes ------------------------------------------------------
#
# Every kernel is ``cache=True``: a helper process that runs a job leaves what it compiled
# in numba's on-disk cache, and the same job then runs here in well under a second. With
# two or more helpers the jobs compile in parallel. Helpers are plain child processes of
# the same Python (no bpy, one numba thread each) that read job keys on stdin and answer
# on stdout; they end when their stdin closes, at once even in the middle of a job, so
# they never outlive the process that started them.

#: the most helper processes a warm-up starts: beyond that the longest job (hydrology,
#: about a third of the whole) bounds the time, and each helper costs an interpreter
MOST_HELPERS = 4

_BOOT = r"""
import json, sys, types
package, folder, path = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path[:0] = [p for p in path if p not in sys.path]
if package:  # the add-on's package, without running its __init__ (which needs bpy)
    parts = package.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [folder] if i == len(parts) else []
            sys.modules[name] = module
import importlib
importlib.import_module((package + "." if package else "") + "simcore.cli.prepare").serve()
"""


def serve() -> None:
    """A helper's loop: run the job of each key read on stdin and answer ``done KEY
    CPU`` (CPU: this helper's CPU seconds so far) or ``fail KEY message`` on stdout;
    exit as soon as stdin closes."""
    import os
    import queue
    import sys
    import threading
    import time

    keys: queue.Queue = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            keys.put(line.strip())
        os._exit(0)  # the parent closed the pipe or ended: stop now, even mid-job

    threading.Thread(target=read, daemon=True).start()
    jobs = {key: job for key, _, job in steps()}
    while True:
        key = keys.get()
        try:
            jobs[key]()
            answer = f"done {key} {time.process_time():.3f}"
        except Exception as exc:  # noqa: BLE001 - the parent runs it again and sees it
            answer = f"fail {key} {type(exc).__name__}: {exc}".replace("\n", " ")
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


def python_executable() -> str | None:
    """The interpreter helpers run on: this process's own Python (Blender 4.2 and later
    bundle one and name it in ``sys.executable``), or None when ``sys.executable`` is not
    a Python (an embedding application's own binary)."""
    import os
    import sys
    exe = sys.executable or ""
    if os.path.basename(exe).lower().startswith("python") and os.path.isfile(exe):
        return exe
    return None


class Helpers:
    """Helper processes compiling jobs (by key, in the order given) into numba's cache.

    :meth:`finished` waits for the next key a helper has done; a helper that fails to
    start or dies is dropped, and once none is left every call answers None (the caller
    then compiles in its own process)."""

    def __init__(self, keys: Iterable[str], count: int, executable: str | None = None,
                 env: dict | None = None) -> None:
        import atexit
        import json
        import os
        import queue
        import subprocess
        import sys
        import threading
        from pathlib import Path

        self._todo = list(keys)
        self._events: queue.Queue = queue.Queue()
        self._procs: list = []
        self.working: dict = {}  # process -> key it compiles
        #: key -> (helper number, that helper's CPU seconds when it had done the job)
        self.cpu: dict = {}
        # simcore's own package ("simcore", or the add-on's "<add-on>.simcore") holds
        # this module's folder (cli); the helpers import it from the folder above it
        core = __package__.rpartition(".")[0]
        package = core.rpartition(".")[0] if core != "simcore" else ""
        folder = str(Path(__file__).resolve().parents[2])
        path = [p for p in sys.path if p and os.path.isdir(p)] + [folder]
        command = [executable or python_executable() or "", "-c", _BOOT, package, folder,
                   json.dumps(path)]
        env = {**os.environ, "NUMBA_NUM_THREADS": "1", **(env or {})}
        for _ in range(min(count, len(self._todo))):
            try:
                proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env, text=True,
                                        bufsize=1)
            except OSError:  # no interpreter, no process allowed (a sandbox)
                break
            self._procs.append(proc)
            threading.Thread(target=self._listen, args=(proc,), daemon=True).start()
            self._give(proc)
        atexit.register(self.close)

    def _listen(self, proc) -> None:
        try:
            for line in proc.stdout:
                self._events.put((proc, line.rstrip("\n")))
        except (OSError, ValueError):  # closed by close()
            pass
        self._events.put((proc, None))

    def _give(self, proc) -> None:
        try:
            if self._todo:
                key = self._todo.pop(0)
                self.working[proc] = key
                proc.stdin.write(key + "\n")
                proc.stdin.flush()
            else:
                self.working.pop(proc, None)
                proc.stdin.close()  # nothing more: the helper exits
        except (OSError, ValueError):  # it died or was closed meanwhile; _listen reports it
            pass

    @property
    def alive(self) -> bool:
        return bool(self.working)

    def finished(self, timeout: float) -> tuple[str | None, bool]:
        """(key, ok) of the next job a helper ended, ok False if it failed there;
        (None, True) after ``timeout`` seconds without news."""
        import queue
        try:
            proc, line = self._events.get(timeout=timeout)
        except queue.Empty:
            return None, True
        if line is None:  # the helper ended: its job (if any) stays with the caller
            self.working.pop(proc, None)
            return None, True
        word, _, rest = line.partition(" ")
        key, _, more = rest.partition(" ")
        if word == "done":
            try:
                self.cpu[key] = (self._procs.index(proc), float(more))
            except ValueError:
                pass
        if self.working.get(proc) == key:
            self._give(proc)
        return key, word == "done"

    def close(self) -> None:
        """End every helper now (it may be in the middle of a job) and reap it."""
        import atexit
        atexit.unregister(self.close)
        self._todo = []
        self.working = {}
        for proc in self._procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass


def _marker():
    """The file that says a run of every job completed with numba's cache on, for these
    sources, this numba and this Python: next to the cached kernels (None if numba
    caches nowhere)."""
    import hashlib
    import sys
    from pathlib import Path

    import numba

    from ..kernels import numba_cache
    from ..processes import droplets
    try:
        folder = Path(droplets._run_strip._cache._cache_path)  # type: ignore[attr-defined]
    except AttributeError:  # numba internals moved
        return None
    stamp = hashlib.sha1(f"{numba.__version__} {sys.version}".encode())
    stamp.update(numba_cache.sources_digest().encode())  # what the kernels' stamps hold
    return folder / f"prepared-{stamp.hexdigest()[:16]}"


def cached() -> bool:
    """Did every job already run with these sources, so numba's on-disk cache holds
    their kernels? (Then they load here in well under a second, and helper processes
    would only cost their start.)"""
    marker = _marker()
    return marker is not None and marker.exists()


def _mark_cached() -> None:
    marker = _marker()
    if marker is not None:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
        except OSError:  # a read-only cache: next time helpers start again
            pass


def run(jobs: list[tuple[str, str, Callable[[], None]]], helpers: int = 0,
        progress: Callable[[str | None, str], None] = lambda key, doing: None,
        cancelled: Callable[[], bool] = lambda: False, executable: str | None = None,
        helper_cpu: dict | None = None) -> bool:
    """Run every job once in this process, in the order given or, with ``helpers`` >= 2
    helper processes, in the order the helpers finish compiling them (each then just
    loads from numba's cache here). Without helpers, when numba's cache already holds
    every kernel (:func:`cached`), or when the helpers cannot start or die, the jobs
    left run (compile or load) here. ``progress(key, doing)`` is called when a job starts
    (key None, ``doing`` says what) and ends (its key). Returns False if ``cancelled()``
    turned true (checked between jobs and while waiting). ``helper_cpu``, if given, gets
    :attr:`Helpers.cpu` (benchmarks: the CPU critical path of the helpers)."""
    by_key = {key: (label, job) for key, label, job in jobs}
    pending = [key for key, _, _ in jobs]
    cold = helpers >= 2 and not cached()
    pool = Helpers(pending, helpers, executable) if cold else None
    try:
        while pending:
            if cancelled():
                return False
            key = None
            if pool is not None and pool.alive:
                working = [by_key[k][0] for k in pool.working.values()]
                progress(None, ", ".join(working))
                key, _ = pool.finished(0.1)
                if key not in pending:
                    continue  # news of a helper's end, a timeout, or a job done here
            elif pool is not None:
                pool.close()  # all helpers ended: what is left compiles here
            if key is None:
                key = pending[0]
            label, job = by_key[key]
            progress(None, label)
            job()
            pending.remove(key)
            progress(key, "")
        if set(by_key) >= {key for key, _, _ in steps()}:  # every kernel is cached now
            _mark_cached()
        return True
    finally:
        if pool is not None:
            pool.close()
            if helper_cpu is not None:
                helper_cpu.update(pool.cpu)
