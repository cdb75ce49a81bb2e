"""One erosion run on one object, as plain code the operators (and tests) drive:
start -> tick(budget)... -> finish() or cancel(). No events, no timers here."""

from __future__ import annotations

import threading
import time

import bpy
import numpy as np

from . import grid as gridio
from . import instances, masks
from .simcore import __version__ as simcore_version
from .simcore.errors import UserError
from .simcore.fileio import check_memory
from .simcore.simulation import PROCESSES, Progress, Simulation
from .simcore.terrain import BYTES_PER_CELL, Terrain, TerrainError


class JobEnded(UserError):
    """The run cannot go on (object deleted, renamed, mode changed, mesh edited); the
    message says what happened and whether the result so far was kept."""


def _produced(processes) -> list[str]:
    """Grid layers the enabled processes write (trees are instances, not a layer)."""
    names: list[str] = []
    for name in processes:
        for out in PROCESSES[name].writes:
            if out in gridio.FLOAT_LAYERS and out not in names:
                names.append(out)
    return names


class _Runner:
    """Rounds on a background thread, so the viewport keeps drawing and Esc is seen
    while a round runs (a round of the default preset takes seconds at 512²; the
    kernels release the GIL). The main thread touches the terrain only while the
    worker is parked between rounds (:meth:`parked`) or has ended, so a write-back
    never sees half a round. Rounds are the same as on the main thread, so the result
    is bit-identical."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._want = threading.Event()  # the main thread wants the terrain
        self._parked = threading.Event()  # the worker waits between rounds
        self._resume = threading.Event()
        self.thread = threading.Thread(target=self._work, name=RUNNER_THREAD, daemon=True)
        _runners.add(self)
        self.thread.start()

    def _work(self) -> None:
        try:
            while not self._stop.is_set() and self.sim.rounds_done < self.sim.target_rounds:
                if self._want.is_set():
                    self._parked.set()
                    self._resume.wait()
                    self._resume.clear()
                    self._parked.clear()
                    continue
                self.sim.run_round()
        except BaseException as exc:  # handed to the main thread by the next tick
            self.error = exc
        finally:
            _runners.discard(self)

    def parked(self) -> bool:
        """Ask the worker to wait after its round; True once it does (or has ended):
        then the terrain is the main thread's until :meth:`release`."""
        self._want.set()
        return self._parked.is_set() or not self.thread.is_alive()

    def release(self) -> None:
        self._want.clear()
        self._resume.set()

    def halt(self, wait: bool = True) -> None:
        """Stop after the current round; ``wait`` for it (at most one round) when the
        terrain is still needed (a kept result), not when it is thrown away."""
        self._stop.set()
        self._resume.set()
        if wait:
            self.thread.join()


#: the name of a live run's worker thread
RUNNER_THREAD = "terrain_erosion run"
#: workers still running (loading a file or disabling the add-on halts them)
_runners: set[_Runner] = set()


def halt_all_runs() -> None:
    """Stop every live run's worker (a file is loaded, the add-on is disabled)."""
    for runner in list(_runners):
        runner.halt()


class ErosionJob:
    """Reads the grid and its stored state, runs the simulation, writes back."""

    def __init__(self, obj: bpy.types.Object, particles: int | None = None) -> None:
        problem = gridio.object_problem(obj)
        if problem:
            raise gridio.GridError(problem)
        settings = obj.terrain_erosion
        me = obj.data
        check_memory(len(me.vertices) * BYTES_PER_CELL,
                     f"eroding '{obj.name}' ({len(me.vertices):,} vertices)")
        self.positions = gridio.read_positions(me)
        self.grid = gridio.detect_grid(me, self.positions)
        self.obj_name = obj.name
        self.obj_uid = obj.session_uid
        self.mesh_name = me.name
        self.vertex_count = len(me.vertices)
        seed = settings.full_seed()
        self.settings_seed = seed
        self.live_update = settings.live_update
        self.write_colors = settings.write_colors
        params = settings.enabled_params()
        self.outputs = _produced(params)
        g = self.grid
        z = self.positions[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
        if not np.isfinite(z).all():
            raise TerrainError(f"'{obj.name}' has NaN/inf vertex heights: fix the mesh "
                               "(e.g. Mesh > Clean Up) before eroding")
        self.snapshot = gridio.MeshSnapshot.take(me)
        self.original_missing = me.attributes.get(gridio.ORIGINAL_Z) is None
        terrain, resumed = self._read_state(me, z)
        self.masks_used = masks.apply_masks(obj, self.grid, terrain)  # painted masks
        self.with_trees = "trees" in params
        if self.with_trees and resumed:
            terrain.trees = instances.read_trees(obj, self.grid)
        self.with_water = "pool" in self.outputs and settings.water_surface
        self.extras_before = {key: _extra_state(getattr(settings, key))
                              for key in ("trees_object", "water_object")}
        #: helper objects (trees, water) the run must find again: key -> session uid
        self.extras_uid = {key: getattr(settings, key).session_uid
                           for key in ("trees_object", "water_object")
                           if getattr(settings, key) is not None}
        rounds = (settings.rounds_done
                  if resumed and settings.stored_state_seed() == seed else 0)
        work = (settings.work(g.rows, g.cols, g.cell_size) if particles is None
                else particles)  # rain per area x the grid's area, else Particles
        self.sim = Simulation(terrain, params, seed=seed, particles=work, rounds_done=rounds)
        #: what this grid cannot show (dunes smaller than its cells...): reported at start
        self.advice = self.sim.advice()
        #: rounds whose result is on the mesh (what Stop or an edit keeps)
        self.rounds_written = rounds
        self.start_rounds = rounds
        self.started = time.perf_counter()
        self.last_write = self.started
        self._buffers: tuple[np.ndarray, np.ndarray] | None = None
        self._runner: _Runner | None = None

    # -- state ---------------------------------------------------------------------
    def _read_state(self, me: bpy.types.Mesh, z: np.ndarray) -> tuple[Terrain, bool]:
        """Terrain from the stored float layers when they still match the mesh (a saved
        .blend resumes); otherwise fresh from the heights."""
        g, cell = self.grid, self.grid.cell_size
        layers = {name: gridio.read_float_layer(me, attr, g)
                  for name, attr in gridio.FLOAT_LAYERS.items()}
        bedrock, sediment = layers["bedrock"], layers["sediment"]
        resumed = (bedrock is not None and sediment is not None
                   and np.allclose(bedrock + sediment, z, rtol=0,
                                   atol=1e-4 * max(1.0, float(np.abs(z).max()))))
        if not resumed:
            return Terrain.from_heights(z, cell), False
        arrays = {}
        for name, values in layers.items():
            if values is None or name in ("bedrock", "sediment"):
                continue
            length = name in gridio.LENGTH_LAYERS
            arrays[name] = np.maximum(values / cell if length else np.clip(values, 0, 1), 0.0)
        sediment = np.maximum(sediment, 0.0)
        terrain = Terrain.from_heights(z - sediment, cell, sediment=sediment / cell, **arrays)
        return terrain, True

    def find_object(self) -> bpy.types.Object | None:
        """The object again (references die on undo and file loads): by name, else by
        its session id (it was renamed), else None (deleted)."""
        obj = bpy.data.objects.get(self.obj_name)
        if obj is not None and obj.session_uid == self.obj_uid:
            return obj
        return next((o for o in bpy.data.objects if o.session_uid == self.obj_uid), None)

    def object(self, vertices: bool = False) -> bpy.types.Object:
        """The object, checked to be as the run left it (with ``vertices``, every
        vertex too: done before each write, when it matters); otherwise the run ends
        (JobEnded), keeping the result and progress already on the mesh."""
        obj = self.find_object()
        if obj is None or obj.type != 'MESH':
            raise JobEnded(f"'{self.obj_name}' was deleted; the run stopped")
        problem = self._edited(obj, vertices)
        if problem:
            kept = self.keep_progress(obj)
            raise JobEnded(f"{problem}; the run stopped" + (
                f" and kept the result so far ({kept:,} particles)" if kept else
                ", nothing was changed"))
        return obj

    def _edited(self, obj: bpy.types.Object, vertices: bool) -> str | None:
        """What the user changed under the run, or None."""
        if obj.name != self.obj_name:
            return f"'{self.obj_name}' was renamed to '{obj.name}'"
        if obj.mode != 'OBJECT':
            return f"'{self.obj_name}' left Object Mode"
        me = obj.data
        if me.name != self.mesh_name or len(me.vertices) != self.vertex_count:
            return f"the mesh of '{self.obj_name}' changed"
        if vertices and not np.array_equal(gridio.read_positions(me), self.positions):
            return (f"the vertices of '{self.obj_name}' were moved (a transform applied or "
                    "the mesh edited)")
        settings = obj.terrain_erosion
        for key, uid in self.extras_uid.items():
            extra = getattr(settings, key)
            if extra is None or extra.session_uid != uid:
                return f"the {key.split('_')[0]} object of '{self.obj_name}' was deleted"
        return None

    def keep_progress(self, obj: bpy.types.Object) -> int:
        """Record the rounds whose result is on the mesh, so the next run continues
        from there; returns the particles kept."""
        kept = (self.rounds_written - self.start_rounds) * self.sim.per_round
        if kept > 0:
            s = obj.terrain_erosion
            s.rounds_done = self.rounds_written
            s.set_state_seed(self.sim.seed)
        return kept

    # -- running -------------------------------------------------------------------
    def tick(self, budget: float, background: bool = False) -> Progress:
        """Advance about ``budget`` seconds; write the mesh when due or done. With
        ``background`` the rounds run on a worker thread (started by the first tick)
        and a tick only checks the object, hands over errors and writes between two
        rounds: it returns at once whatever the grid size."""
        try:
            self.object()  # cheap checks every tick; the vertices before each write
            if not background:
                progress = self.sim.advance(budget)
                if progress.done or time.perf_counter() - self.last_write >= self.live_update:
                    self.write(self.object(vertices=True))
                    self.last_write = time.perf_counter()
                return progress
            return self._background_tick()
        except BaseException:  # the run ends: what is on the mesh is what it keeps
            self.halt(wait=False)
            raise

    def _background_tick(self) -> Progress:
        runner = self._runner
        if runner is None:
            runner = self._runner = _Runner(self.sim)
        if runner.error is not None:
            raise runner.error
        progress = self.sim.progress()
        if progress.done:
            runner.halt()
            if runner.error is not None:
                raise runner.error
            if self.rounds_written != self.sim.rounds_done:
                self.write(self.object(vertices=True))
            return progress
        if time.perf_counter() - self.last_write >= self.live_update and runner.parked():
            try:
                if self.rounds_written != self.sim.rounds_done:
                    self.write(self.object(vertices=True))
                self.last_write = time.perf_counter()
            finally:
                runner.release()
        return self.sim.progress()

    def halt(self, wait: bool = True) -> None:
        """Stop the background worker, if any, after its current round (``wait``: and
        wait for that round, so the terrain is whole)."""
        if self._runner is not None:
            self._runner.halt(wait)

    def run(self, report=None, every: float = 1.0) -> Progress:
        """Synchronous run to the end (scripts, background mode)."""
        self.object()
        progress = self.sim.run(report, report_every=every)
        self.finish()
        return progress

    def write(self, obj: bpy.types.Object) -> None:
        """Heights plus every layer the enabled processes produce, in local units."""
        me, g, t = obj.data, self.grid, self.sim.terrain
        cell = g.cell_size
        if self.original_missing:
            gridio.write_float_layer(me, gridio.ORIGINAL_Z, g,
                                     self.snapshot.positions[:, 2][g.order].reshape(
                                         g.rows, g.cols))
            self.original_missing = False
        gridio.write_heights(me, g, self.positions, t.height(), cell)
        if self._buffers is None:
            n = g.rows * g.cols
            self._buffers = (np.empty(n, np.float32), np.empty((n, 4), np.float32))
        values_buf, rgba = self._buffers
        for name in self.outputs:
            values = getattr(t, name)
            gridio.write_float_layer(me, gridio.FLOAT_LAYERS[name], g, values,
                                     cell if name in gridio.LENGTH_LAYERS else 1.0, values_buf)
            if self.write_colors and name in gridio.COLOR_LAYERS:
                gridio.write_color_layer(me, gridio.COLOR_LAYERS[name], g, name, values, rgba)
        me.update()
        if self.with_trees:
            self.extras_uid["trees_object"] = instances.update_trees(
                obj, g, t.trees, t.height()).session_uid
        if self.with_water:
            self.extras_uid["water_object"] = instances.update_water(
                obj, g, t.height(), t.pool).session_uid
        self.rounds_written = self.sim.rounds_done

    def finish(self, wait: bool = True) -> int:
        """Keep the result: final write and the bookkeeping that lets a run resume.
        Without ``wait``, while a background round is under way (Stop, Enter), keep
        what the mesh shows, the rounds of the last write, at once instead of waiting
        for that round. Returns the particles kept."""
        running = self._runner is not None and self._runner.thread.is_alive()
        if wait or not running:
            self.halt()
            obj = self.object(vertices=True)
            self.write(obj)
        else:
            self.halt(wait=False)  # its round is thrown away; the mesh is whole
            obj = self.object(vertices=True)
        rounds = self.rounds_written
        s = obj.terrain_erosion
        s.rounds_done = rounds
        s.set_state_seed(self.sim.seed)
        s.provenance = (f"preset {s.preset}, seed {self.sim.seed}, {rounds} rounds x "
                        f"{self.sim.per_round} particles, simcore {simcore_version}")
        obj["terrain_erosion_provenance"] = s.provenance
        return (rounds - self.start_rounds) * self.sim.per_round

    def cancel(self) -> str | None:
        """Put the mesh and its trees and water objects back exactly as they were
        before the run. Returns None, or a sentence saying what could not be restored.
        Does not wait for a background round under way: its terrain is thrown away, and
        the worker never touches the mesh."""
        self.halt(wait=False)
        obj = self.find_object()
        if obj is None or obj.type != 'MESH':
            return None
        if obj.mode != 'OBJECT':
            return (f"'{obj.name}' is in {obj.mode.title()} mode: it was not restored; "
                    "use Undo")
        if len(obj.data.vertices) != self.vertex_count:
            return (f"the mesh of '{obj.name}' changed its vertex count during the run: it "
                    "was not restored; use Undo")
        self.snapshot.restore(obj.data)
        settings = obj.terrain_erosion
        for key, before in self.extras_before.items():
            current = getattr(settings, key)
            if before is None:  # made by this run: remove it
                if current is not None:
                    setattr(settings, key, None)
                    instances.remove_object(current)
            elif current is not None and current.session_uid == before[0]:
                gridio.MeshSnapshot.restore_vertices(current.data, before[1])
        return None


def _extra_state(obj: bpy.types.Object | None):
    """(session uid, vertex snapshot) of a trees/water object, or None."""
    if obj is None or obj.type != 'MESH':
        return None
    return obj.session_uid, gridio.MeshSnapshot.take_vertices(obj.data)


def reset_to_original(obj: bpy.types.Object) -> bool:
    """Heights back to the stored original, our layers removed. False if none stored."""
    me = obj.data
    g = gridio.detect_grid(me)
    original = gridio.read_float_layer(me, gridio.ORIGINAL_Z, g)
    if original is None:
        return False
    if not np.isfinite(original).all():
        bad = int((~np.isfinite(original)).sum())
        raise TerrainError(f"the stored original heights of '{obj.name}' are damaged ({bad} "
                           "NaN/inf values); nothing was changed. Use Undo, or Apply to "
                           "keep the current heights as the new original")
    gridio.write_heights(me, g, gridio.read_positions(me), original)
    gridio.remove_layers(me)
    me.update()
    for key in ("trees_object", "water_object"):
        extra = getattr(obj.terrain_erosion, key)
        setattr(obj.terrain_erosion, key, None)
        instances.remove_object(extra)
    obj.terrain_erosion.rounds_done = 0
    obj.terrain_erosion.set_state_seed(-1)
    return True
