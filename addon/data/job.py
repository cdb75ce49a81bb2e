"""One erosion run on one object, as plain code the operators (and tests) drive:
start -> tick(budget)... -> finish() or cancel(). No events, no timers here."""

from __future__ import annotations

import threading
import time
import weakref
import zlib
from collections.abc import Callable

import bpy
import numpy as np

from ..simcore import __version__ as simcore_version
from ..simcore.engine.memory import check_run
from ..simcore.engine.simulation import PROCESSES, Progress, Simulation
from ..simcore.engine.timing import long_run_note
from ..simcore.errors import UserError
from ..simcore.fileio import available_memory
from ..simcore.formats import history as entries
from ..simcore.terrain import Terrain, TerrainError
from . import grid as gridio
from . import history, instances, masks, writeback
from .objects import remove_object
from .scale import RealScale

#: a live run asks for the next frame no sooner than this many times the time Blender
#: took after the last frame's writes (normals, redraw: about 0.7 s at 2048²), so
#: redrawing the mesh takes at most about a fifth of the time
REDRAW_FACTOR = 4.0
#: seconds of mesh writes a live run's timer tick plans for (one item at least: a single
#: layer write cannot be split; at 2048² a color layer takes 25-130 ms here)
TICK_SECONDS = 0.05


#: Called with the terrain whenever a run is kept or cancelled, or Reset puts the heights
#: back: which layers the mesh has may have changed (the terrain material follows them:
#: features/material.py). A hook must not raise.
LAYERS_CHANGED: list[Callable[[bpy.types.Object], None]] = []


def layers_changed(obj: bpy.types.Object) -> None:
    """Tell the :data:`LAYERS_CHANGED` hooks about ``obj``."""
    for hook in LAYERS_CHANGED:
        hook(obj)


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
    kernels release the GIL). Between two rounds, when the main thread asks for one,
    the worker prepares a write-back frame (``prepare()``: the per-vertex buffers, no
    bpy) and goes on; the main thread then writes it onto the mesh a slice per tick
    and asks for the next one only once it is written, so the worker never fills a
    buffer the main thread reads. Rounds are the same as on the main thread, so the
    result is bit-identical. After the last round the worker waits for the request of
    the final frame, or to be halted."""

    def __init__(self, sim: Simulation, prepare: Callable[[], writeback.Frame]) -> None:
        self.sim = sim
        self.prepare = prepare
        self.error: BaseException | None = None
        #: a prepared frame the main thread has not taken yet
        self.frame: writeback.Frame | None = None
        #: a frame was asked for and not taken yet
        self.requested = False
        self._stop = threading.Event()
        self._want = threading.Event()  # the main thread wants a frame
        self._wake = threading.Event()  # something to do after the last round
        self.thread = threading.Thread(target=self._work, name=RUNNER_THREAD, daemon=True)
        _runners.add(self)
        self.thread.start()

    def _work(self) -> None:
        try:
            while not self._stop.is_set():
                if self._want.is_set():
                    self._want.clear()
                    self.frame = self.prepare()
                elif self.sim.rounds_done < self.sim.target_rounds:
                    self.sim.run_round()
                else:
                    self._wake.wait()
                    self._wake.clear()
        except BaseException as exc:  # handed to the main thread by the next tick
            self.error = exc
        finally:
            _runners.discard(self)

    def request_frame(self) -> None:
        """Ask for a frame of the terrain after the round under way."""
        self.requested = True
        self._want.set()
        self._wake.set()

    def take_frame(self) -> writeback.Frame | None:
        """The frame asked for, once it is ready (else None)."""
        frame = self.frame
        if frame is not None:
            self.frame, self.requested = None, False
        return frame

    def halt(self, wait: bool = True) -> None:
        """Stop after the current round; ``wait`` for it (at most one round) when the
        terrain is still needed (a kept result), not when it is thrown away."""
        self._stop.set()
        self._wake.set()
        if wait:
            self.thread.join()


#: the name of a live run's worker thread
RUNNER_THREAD = "terrain_erosion run"
#: workers still running (loading a file or disabling the add-on halts them)
_runners: set[_Runner] = set()


#: jobs that may still write the mesh (Undo and Redo end them)
_jobs: weakref.WeakSet[ErosionJob] = weakref.WeakSet()
UNDONE = ("Undo (or Redo) was used during the run: the run stopped; the mesh and its "
          "settings are as Undo left them")


def end_runs_on_undo() -> None:
    """Undo or Redo during a live run (Edit > Undo; Ctrl+Z itself is swallowed by the
    modal Erode): the step restored holds the mesh together with its bookkeeping
    (round count, state seed, layers), so the run must neither write the mesh again
    nor record progress, keep or cancel anything: it ends at its next tick."""
    for job in list(_jobs):
        job.undone = True
        job.halt(wait=False)


def halt_all_runs() -> None:
    """Stop every live run's worker (a file is loaded, the add-on is disabled)."""
    for runner in list(_runners):
        runner.halt()


def read_changes(me: bpy.types.Mesh, grid: gridio.Grid, unit: float,
                 terrain: Terrain) -> None:
    """Each process's change so far from its ``te_change_<process>`` layer (local
    units -> cell units: ``unit`` local units a cell), so a run adds on and the layers
    keep adding up to the change since the original heights -- also when the state was
    not resumed (the mesh was edited since: the edit is no process's). Without original
    heights every change layer starts at zero (a run writes the originals now, and a
    layer of a process not in the run is rewritten as zeros). Values that are not
    finite read as 0. A layer of another type (a user attribute with our name) is not
    read; a run replaces it if it writes it."""
    since = me.attributes.get(gridio.ORIGINAL_Z) is not None
    for name, attr in gridio.CHANGE_LAYERS.items():
        values = gridio.read_float_layer(me, attr, grid)
        if values is not None:
            finite = np.isfinite(values)
            terrain.changes[name] = (np.where(finite, values, 0.0) / unit if since
                                     else np.zeros_like(values))


def read_state(me: bpy.types.Mesh, grid: gridio.Grid, z: np.ndarray,
               scale) -> tuple[Terrain, bool]:
    """Terrain from the stored float layers when they still match the mesh (a saved
    .blend resumes); otherwise fresh from the heights. The layers are in local units:
    lengths / height_unit are simcore's cell units, on world cells of the real size."""
    g, unit, world_cell = grid, scale.height_unit, scale.world_cell
    layers = {name: gridio.read_float_layer(me, attr, g)
              for name, attr in gridio.FLOAT_LAYERS.items()}
    bedrock, sediment = layers["bedrock"], layers["sediment"]
    resumed = (bedrock is not None and sediment is not None
               and np.allclose(bedrock + sediment, z, rtol=0,
                               atol=1e-4 * max(1.0, float(np.abs(z).max()))))
    if not resumed:
        return Terrain.from_heights(z / unit, world_cell, world_units=False), False
    arrays = {}
    for name, values in layers.items():
        # the rock layer is the column's at the bedrock: the Simulation works it out
        if values is None or name in ("bedrock", "sediment", "rock_layer"):
            continue
        length = name in gridio.LENGTH_LAYERS
        arrays[name] = np.maximum(values / unit if length else np.clip(values, 0, 1), 0.0)
    sediment = np.maximum(sediment, 0.0)
    terrain = Terrain.from_heights((z - sediment) / unit, world_cell, world_units=False,
                                   sediment=sediment / unit, **arrays)
    return terrain, True


def running_on(obj: bpy.types.Object) -> bool:
    """True while a run (modal or batch) works on ``obj``."""
    return any(j.obj_uid == obj.session_uid for j in list(_jobs))


def _refuse_bad_mesh(obj: bpy.types.Object, z: np.ndarray) -> None:
    """Refuse a run on NaN/inf heights ``z`` or on attributes named like the add-on's
    layers but of another kind (the run would replace them)."""
    if not np.isfinite(z).all():
        raise TerrainError(f"'{obj.name}' has NaN/inf vertex heights: fix the mesh "
                           "(e.g. Mesh > Clean Up) before eroding")
    foreign = gridio.foreign_namesakes(obj.data)
    if foreign:
        raise TerrainError(f"'{obj.name}' has attributes named like the add-on's layers "
                           f"but of another kind: {', '.join(foreign)}; rename them "
                           "(a run would replace them)")


class ErosionJob:
    """Reads the grid and its stored state, runs the simulation, writes back."""

    #: the object's modes the run goes on in (a live painting session adds the paint
    #: modes)
    MODES: tuple[str, ...] = ('OBJECT',)
    #: the next frame waits this many times Blender's time after the last one
    redraw_factor = REDRAW_FACTOR

    def __init__(self, obj: bpy.types.Object, particles: int | None = None,
                 params: dict | None = None, record: str | None = None,
                 recipe: entries.Recipe | None = None) -> None:
        """``record``: 'erode' or 'step' adds an entry to the object's history when the
        run keeps something; ``recipe``: a history entry replayed (its settings, seed,
        rounds, real size and masks instead of the object's)."""
        problem = gridio.object_problem(obj)
        if problem:
            raise gridio.GridError(problem)
        #: Undo or Redo happened during the run (end_runs_on_undo)
        self.undone = False
        self._runner: _Runner | None = None
        settings = obj.terrain_erosion
        me = obj.data
        # ``params``: the run's own (a bake's keyed values at its first frame)
        if recipe is not None:
            params = recipe.params
        params = settings.enabled_params() if params is None else params
        self.record_kind = record
        self.params = params
        #: the object's rock column (None: Rock Layers off); a bad layer stops here
        self.rock = settings.rock.to_column() if recipe is None else recipe.rock
        self.outputs = _produced(params)
        if self.rock is not None:  # the exposed layer, for the material and scripts
            self.outputs.append("rock_layer")
        self.write_colors = settings.write_colors if recipe is None else recipe.write_colors
        self.water_surface = (settings.water_surface if recipe is None
                              else recipe.water_surface)
        self.with_water = "pool" in self.outputs and self.water_surface
        #: processes whose change layer the run writes: the enabled ones and those
        #: whose layer the mesh holds (read back by read_changes)
        self.change_count = len(set(params) | {
            name for name, attr in gridio.CHANGE_LAYERS.items()
            if me.attributes.get(attr) is not None})
        check_run(len(me.vertices), params, f"eroding '{obj.name}' ({len(me.vertices):,} "
                  "vertices)", extra_per_cell=self.bytes_per_vertex())
        positions = gridio.read_positions(me)
        self.grid = gridio.detect_grid(me, positions)
        self.obj_name = obj.name
        self.obj_uid = obj.session_uid
        self.mesh_name = me.name
        self.vertex_count = len(me.vertices)
        seed = settings.full_seed() if recipe is None else recipe.seed
        self.settings_seed = seed
        self.live_update = settings.live_update
        g = self.grid
        #: local units <-> the real world the simulation runs in (addon/data/scale.py)
        #: the Real Size (0: automatic) and Vertical Exaggeration the run uses
        self.size_settings = (settings.size_settings() if recipe is None
                              else (recipe.real_size, recipe.exaggeration))
        self.scale = RealScale.of(g.rows, g.cols, g.cell_size, *self.size_settings)
        z = positions[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
        _refuse_bad_mesh(obj, z)
        self.snapshot = gridio.MeshSnapshot.take(me)
        #: an enabled process grows trees (the terrain's tree table: instances, no layer)
        self.with_trees = any("trees" in PROCESSES[name].writes for name in params)
        terrain, resumed = self._start_terrain(obj, z, seed)
        terrain.rock = self.rock  # the Simulation lays it over the grid
        if recipe is None:
            self.masks_used = masks.apply_masks(obj, self.grid, terrain)  # painted masks
        else:  # the maps the recorded run used, as they were
            for name, raster in recipe.maps.items():
                setattr(terrain, name, raster.copy())
            terrain.validate()
            self.masks_used = list(recipe.maps)
        #: the input maps this run uses (what its history entry keeps)
        self.maps = {name: getattr(terrain, name) for name in entries.MAPS
                     if name in self.masks_used
                     or (name == "protect" and "selection" in self.masks_used)}
        self.extras_before = {key: _extra_state(getattr(settings, key))
                              for key in ("trees_object", "water_object")}
        #: helper objects (trees, water) the run must find again: key -> session uid
        self.extras_uid = {key: getattr(settings, key).session_uid
                           for key in ("trees_object", "water_object")
                           if getattr(settings, key) is not None}
        rounds = (settings.rounds_done
                  if resumed and settings.stored_state_seed() == seed else 0)
        work = (settings.work(g.rows, g.cols, g.cell_size) if particles is None
                else particles)  # rain per area x the grid's real area, else Particles
        self.sim = Simulation(terrain, params, seed=seed,
                              particles=work if recipe is None else 0, rounds_done=rounds)
        if recipe is not None:  # exactly the rounds the recorded run kept (a run
            self.sim.target_rounds = rounds + recipe.rounds  # stopped early too)
        #: what this grid cannot show (dunes smaller than its cells...): reported at start
        self.advice = self.sim.advice()
        #: "estimate: about 6 min of work ..." for a long run (simcore/engine/timing.py),
        #: None for a short one: reported when the run starts
        self.estimate = long_run_note(self.sim)
        original = (np.ascontiguousarray(self.snapshot.positions[:, 2])
                    if me.attributes.get(gridio.ORIGINAL_Z) is None else None)
        #: the run stores the original heights: the mesh held them when it started
        self.writer_wrote_original = original is not None
        #: the per-vertex buffers and the write-back (addon/data/writeback.py)
        self.writer = writeback.Writer(g, self.scale, positions, self.outputs,
                                       self.write_colors, self.with_trees, self.with_water,
                                       original, tuple(self.sim.terrain.changes))
        self._start_writing(rounds)
        _jobs.add(self)

    def _start_terrain(self, obj: bpy.types.Object, z: np.ndarray,
                       seed: int) -> tuple[Terrain, bool]:
        """The terrain the run starts from, and whether it resumes an earlier run's: the
        last run's full-precision state when the mesh still holds exactly what it wrote
        (``exact_resume``), else the mesh's layers (heights ``z``, world units)."""
        #: resumed from the last run's full-precision state (see _EXACT), not the layers
        self.exact_resume = False
        exact = _exact_state(obj, self.scale, seed)
        if exact is not None:
            self.exact_resume = True
            # the masks are read again after, as for a run from the layers: a mask
            # switched off since then must not live on in the remembered input maps
            fresh = Terrain.from_heights(np.zeros(exact.shape), exact.cell_size)
            for name in masks.MASKS:
                setattr(exact, name, getattr(fresh, name))
            return exact, True
        terrain, resumed = self._read_state(obj.data, z)
        read_changes(obj.data, self.grid, self.scale.height_unit, terrain)
        if self.with_trees and resumed:
            terrain.trees = instances.read_trees(obj, self.grid)
        return terrain, resumed

    def _start_writing(self, rounds: int) -> None:
        """The write-back's bookkeeping at the start of a run that holds ``rounds``."""
        #: rounds whose result is on the mesh, a whole frame (what Stop keeps)
        self.rounds_written = rounds
        #: rounds whose state (layers, trees, heights) is on the mesh: what a run that
        #: ends mid-frame keeps (the colors and water may still show the frame before)
        self.rounds_kept = rounds
        self.start_rounds = rounds
        self.started = time.perf_counter()
        self.last_write = self.started
        self._frame: writeback.Frame | None = None  # a frame being written, a tick at a time
        self._check_buffer: np.ndarray | None = None
        #: frames written (each a whole write-back)
        self.frames_written = 0
        #: Blender's time after our writes (see _note_gap), and what it gives to wait
        self._tick_end: float | None = None
        self._quiet = float("inf")
        self._wrote = False
        self.redraw_seconds = 0.0
        self.frame_interval = self.live_update
        #: what a background tick writes at most: float32 values (writeback.TICK_VALUES)
        #: and seconds (TICK_SECONDS; the writer predicts each item's time by the last
        #: write of its kind)
        self.tick_values = writeback.TICK_VALUES
        self.tick_seconds = TICK_SECONDS

    @property
    def positions(self) -> np.ndarray:
        """(n, 3) float32: the vertex positions the mesh holds (what the vertex check
        compares it with)."""
        return self.writer.shown

    def bytes_per_vertex(self) -> float:
        """Memory this job needs per vertex beyond the simulation's (simcore.engine.memory):
        the positions it keeps, the write-back's buffers and the layers it adds to the
        mesh (writeback.bytes_per_vertex)."""
        return writeback.bytes_per_vertex(self.outputs, self.write_colors, self.with_water,
                                          self.change_count)

    # -- state ---------------------------------------------------------------------
    def _read_state(self, me: bpy.types.Mesh, z: np.ndarray) -> tuple[Terrain, bool]:
        """Terrain from the stored float layers (:func:`read_state`)."""
        return read_state(me, self.grid, z, self.scale)


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
        (JobEnded), keeping the result and progress already on the mesh -- except
        after Undo, which put the mesh and its bookkeeping back together."""
        if self.undone:
            raise JobEnded(UNDONE)
        obj = self.find_object()
        if obj is None or obj.type != 'MESH':
            raise JobEnded(f"'{self.obj_name}' was deleted; the run stopped")
        problem = self._edited(obj, vertices)
        if problem:
            kept = self.keep_progress(obj)
            if not kept:
                self._discard_unwritten(obj)
            raise JobEnded(f"{problem}; the run stopped" + (
                f" and kept the result so far ({kept:,} particles)" if kept else
                ", nothing was changed"))
        return obj

    def _edited(self, obj: bpy.types.Object, vertices: bool) -> str | None:
        """What the user changed under the run, or None."""
        if obj.name != self.obj_name:
            return f"'{self.obj_name}' was renamed to '{obj.name}'"
        if obj.mode not in self.MODES:
            return f"'{self.obj_name}' left Object Mode"
        me = obj.data
        if me.name != self.mesh_name or len(me.vertices) != self.vertex_count:
            return f"the mesh of '{self.obj_name}' changed"
        if vertices and not self._vertices_as_written(me):
            return (f"the vertices of '{self.obj_name}' were moved (a transform applied or "
                    "the mesh edited)")
        settings = obj.terrain_erosion
        for key, uid in self.extras_uid.items():
            extra = getattr(settings, key)
            if extra is None or extra.session_uid != uid:
                return f"the {key.split('_')[0]} object of '{self.obj_name}' was deleted"
        return None

    def _vertices_as_written(self, me: bpy.types.Mesh) -> bool:
        """True if the mesh's positions are exactly those the run last wrote (read into
        a buffer kept for it: no 50 MB allocation per check at 2048²)."""
        if self._check_buffer is None:
            self._check_buffer = np.empty(self.vertex_count * 3, np.float32)
        return bool(np.array_equal(gridio.read_positions(me, self._check_buffer),
                                   self.positions))

    def keep_progress(self, obj: bpy.types.Object) -> int:
        """Record the rounds whose result is on the mesh, so the next run continues
        from there; returns the particles kept."""
        kept = (self.rounds_kept - self.start_rounds) * self.sim.per_round
        if kept > 0:
            s = obj.terrain_erosion
            s.rounds_done = self.rounds_kept
            s.set_state_seed(self.sim.seed)
        return kept

    # -- running -------------------------------------------------------------------
    def tick(self, budget: float, on_worker: bool = False) -> Progress:
        """Advance about ``budget`` seconds; write the mesh when due or done. With
        ``on_worker`` the rounds run on a worker thread (started by the first tick)
        and a tick only checks the object, hands over errors and writes a slice of the
        latest frame (at most :attr:`tick_values` float32 values): it returns quickly
        whatever the grid size."""
        try:
            self.object()  # cheap checks every tick; the vertices before each write
            if not on_worker:
                progress = self.sim.advance(budget)
                if progress.done or time.perf_counter() - self.last_write >= self.live_update:
                    self.write(self.object(vertices=True))
                return progress
            return self._worker_tick()
        except BaseException:  # the run ends: what is on the mesh is what it keeps
            self.halt(wait=False)
            raise

    @property
    def up_to_date(self) -> bool:
        """True when the mesh shows the simulation's latest round in full (a live run
        is done only then)."""
        return self._frame is None and self.rounds_written == self.sim.rounds_done

    def _worker_tick(self) -> Progress:
        now = time.perf_counter()
        self._note_gap(now)
        runner = self._runner
        if runner is None:
            self.prepare_live()
            runner = self._runner = _Runner(
                self.sim, lambda: self.writer.prepare(self.sim.terrain, self.sim.rounds_done))
        if runner.error is not None:
            raise runner.error
        if self._frame is None:
            self._frame = runner.take_frame()
        self._wrote = False
        if self._frame is not None:
            self._write_frame(self._frame, self.find_object(), self.tick_values,
                              self.tick_seconds)
        elif not runner.requested and self._frame_due(now):
            runner.request_frame()
        self._tick_end = time.perf_counter()
        return self.sim.progress()

    def _note_gap(self, now: float) -> None:
        """Blender's own time after a tick that wrote the mesh (normals, redraw): the
        gap since that tick beyond the quietest gap between ticks (the timer's
        period). Summed over the ticks of a frame into :attr:`redraw_seconds`."""
        if self._tick_end is None:
            return
        gap = now - self._tick_end
        self._quiet = min(self._quiet, gap)
        if self._wrote:
            self.redraw_seconds += max(0.0, gap - self._quiet)

    def _frame_due(self, now: float) -> bool:
        """Ask for the next frame? When rounds were done since the last one and the
        Viewport Update interval has passed -- or :data:`REDRAW_FACTOR` x Blender's time
        after the last frame, if longer (large grids) -- or at once for the last
        round."""
        if self.sim.rounds_done == self.rounds_written:
            return False
        self.frame_interval = max(self.live_update, self.redraw_factor * self.redraw_seconds)
        if (now - self.last_write < self.frame_interval
                and self.sim.rounds_done < self.sim.target_rounds):
            return False
        self.redraw_seconds = 0.0
        return True

    def _ensure_extras(self, obj: bpy.types.Object) -> None:
        if self.with_water:
            self.extras_uid["water_object"] = instances.ensure_water(obj, self.grid).session_uid

    def prepare_live(self) -> None:
        """What a live run does once before its first tick (the modal Erode calls it
        when it starts): make the water object, a copy of the mesh (0.3 s at 2048²),
        and the new layers (0.1 s each), so no tick has to."""
        obj = self.object()
        self._ensure_extras(obj)
        self.writer.make_layers(obj.data)

    def _write_frame(self, frame: writeback.Frame, obj: bpy.types.Object,
                     cap: int | None = None, seconds: float | None = None,
                     check: bool = True) -> None:
        """Write ``frame``, or a slice of it (``cap`` values, ``seconds``: see
        Writer.write); with ``check`` the vertices are checked before its first item
        and before the heights."""
        self.writer.write(frame, obj, (lambda: self.object(vertices=True)) if check else None,
                          cap, seconds)
        self.extras_uid.update(self.writer.extras)
        self._wrote = True
        if frame.state_written:
            self.rounds_kept = frame.rounds
        if not frame.items:
            self.rounds_written = frame.rounds
            self._frame = None
            self.frames_written += 1
            self.last_write = time.perf_counter()

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
        """Heights plus every layer the enabled processes produce, in local units, all
        at once (the caller checked ``obj``; no worker is running rounds)."""
        if self._frame is not None:  # the rest of a frame a live run began
            self._write_frame(self._frame, obj, check=False)
        self._ensure_extras(obj)
        frame = self.writer.prepare(self.sim.terrain, self.sim.rounds_done, everything=True)
        self._write_frame(frame, obj, check=False)

    def finish(self, wait: bool = True) -> int:
        """Keep the result: final write and the bookkeeping that lets a run resume.
        Without ``wait``, while a background round is under way (Stop, Enter), keep
        what the mesh shows, the rounds of the last write, at once instead of waiting
        for that round. Returns the particles kept."""
        running = self._runner is not None and self._runner.thread.is_alive()
        waited = wait or not running
        self.halt(wait=waited)  # not waiting: its round is thrown away; the mesh is whole
        obj = self.object(vertices=True)
        if self._frame is not None:  # half written: the rest of it (its buffers are whole)
            self._write_frame(self._frame, obj, check=False)
        if waited and not (self.frames_written and self.up_to_date):
            self.write(obj)
        elif not waited:  # if no frame reached the mesh yet: the mesh as it was
            self._discard_unwritten(obj)
        rounds = self.rounds_written
        s = obj.terrain_erosion
        s.rounds_done = rounds
        s.set_state_seed(self.sim.seed)
        s.provenance = (f"preset {s.preset}, seed {self.sim.seed}, {rounds} rounds x "
                        f"{self.sim.per_round} particles, simcore {simcore_version}")
        obj["terrain_erosion_provenance"] = s.provenance
        _EXACT.clear()
        if waited and self.up_to_date and self.frames_written:
            _remember_exact(obj, self.scale, self.sim)
        if self.record_kind is not None and rounds > self.start_rounds:
            self._record(s, rounds)
        layers_changed(obj)
        return (rounds - self.start_rounds) * self.sim.per_round

    def _record(self, settings, rounds: int) -> None:
        """Add this run to the object's history (addon/data/history.py)."""
        if self.writer_wrote_original:  # the history starts at the original heights
            settings.history_from_original = True
        history.record(settings, self._entry(settings.preset, rounds))

    def _entry(self, preset: str, rounds: int) -> dict:
        """The history entry of this run, ``rounds`` its last round."""
        return entries.run_entry(
            self.record_kind, preset, self.params, self.sim.seed, self.start_rounds,
            rounds - self.start_rounds, *self.size_settings, self.rock, self.write_colors,
            self.water_surface, self.exact_resume, self.maps)

    def cancel(self) -> str | None:
        """Put the mesh and its trees and water objects back exactly as they were
        before the run. Returns None, or a sentence saying what could not be restored.
        Does not wait for a background round under way: its terrain is thrown away, and
        the worker never touches the mesh. After Undo it does nothing: the mesh is as
        Undo left it."""
        self.halt(wait=False)
        if self.undone:
            return None
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
        self._restore_extras(obj)
        layers_changed(obj)
        return None

    def _restore_extras(self, obj: bpy.types.Object, made_only: bool = False) -> None:
        """Remove the trees and water objects this run made; put the others back as they
        were (unless ``made_only``)."""
        settings = obj.terrain_erosion
        for key, before in self.extras_before.items():
            current = getattr(settings, key)
            if before is None:  # made by this run: remove it
                if current is not None:
                    setattr(settings, key, None)
                    remove_object(current)
            elif not made_only and current is not None and current.session_uid == before[0]:
                gridio.MeshSnapshot.restore_vertices(current.data, before[1])

    def _discard_unwritten(self, obj: bpy.types.Object) -> None:
        """A run that ends before any frame reached the mesh leaves it as it was: the
        layers and the water object :meth:`prepare_live` made are removed again (the
        heights were never written)."""
        if (self.frames_written or (self._frame is not None and self._frame.started)
                or obj.mode != 'OBJECT'):
            return
        me = obj.data
        for name in [a.name for a in me.attributes if a.name in gridio.OUR_ATTRIBUTES
                     and a.name not in self.snapshot.attributes]:
            me.attributes.remove(me.attributes[name])
        self._restore_extras(obj, made_only=True)


#: The full-precision (float64) state of the last run kept whole, so that the next run
#: on the same mesh continues from it rather than from the float32 layers (rounding them
#: changes where later droplets go): Step after Step, or Erode after a finished Erode,
#: equals one uninterrupted run bit for bit. Used only while the mesh holds exactly
#: what that run wrote (a checksum of the heights, every float layer of ours and the
#: trees), for the same object, real scale, seed and round count; one entry (the
#: latest run), in memory only: a reopened .blend resumes from the layers.
_EXACT: dict[tuple, tuple[int, Terrain]] = {}


def forget_exact() -> None:
    """Drop the remembered full-precision state (a file load, unregistering): it holds
    a float64 copy of the whole terrain."""
    _EXACT.clear()


def _mesh_checksum(obj: bpy.types.Object) -> int:
    """CRC-32 of what a resumed run reads: vertex heights, our float layers, trees."""
    me = obj.data
    crc = zlib.crc32(np.ascontiguousarray(gridio.read_positions(me)[:, 2]).tobytes())
    n = len(me.vertices)
    for name in sorted(set(gridio.FLOAT_LAYERS.values()) | set(gridio.CHANGE_LAYERS.values())
                       | {gridio.ORIGINAL_Z}):
        attr = me.attributes.get(name)
        if attr is None or attr.data_type != 'FLOAT' or attr.domain != 'POINT':
            continue
        values = np.empty(n, np.float32)
        attr.data.foreach_get("value", values)
        crc = zlib.crc32(values.tobytes(), zlib.crc32(name.encode(), crc))
    trees = obj.terrain_erosion.trees_object
    if trees is not None and trees.type == 'MESH':
        crc = zlib.crc32(gridio.read_positions(trees.data).tobytes(), crc)
    return crc


def _exact_key(obj: bpy.types.Object, scale, seed: int) -> tuple:
    return (obj.session_uid, obj.data.session_uid, len(obj.data.vertices),
            scale.world_cell, scale.height_unit, seed, obj.terrain_erosion.rounds_done)


def _remember_exact(obj: bpy.types.Object, scale, sim: Simulation) -> None:
    terrain = sim.terrain
    need = sum(a.nbytes for a in terrain.arrays().values()) \
        + sum(a.nbytes for a in terrain.changes.values())
    have = available_memory()
    if have is not None and need > have // 4:  # not at the cost of the machine
        return
    copy = terrain.copy()
    copy.changes = {name: change.copy() for name, change in terrain.changes.items()}
    _EXACT[_exact_key(obj, scale, sim.seed)] = (_mesh_checksum(obj), copy)


def _exact_state(obj: bpy.types.Object, scale, seed: int) -> Terrain | None:
    """A copy of the remembered full-precision state when the mesh still holds exactly
    what that run wrote, else None (edited, undone, another object, another scale)."""
    hit = _EXACT.get(_exact_key(obj, scale, seed))
    if hit is None or obj.terrain_erosion.stored_state_seed() != seed \
            or _mesh_checksum(obj) != hit[0]:
        return None
    terrain = hit[1].copy()
    terrain.changes = {name: change.copy() for name, change in hit[1].changes.items()}
    return terrain


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
        remove_object(extra)
    obj.terrain_erosion.rounds_done = 0
    obj.terrain_erosion.set_state_seed(-1)
    layers_changed(obj)
    return True
