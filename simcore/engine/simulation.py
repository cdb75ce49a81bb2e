"""Run enabled processes in a fixed order, sliced by time or by particle count.

The unit of work is a *round*: one batch of every enabled process, in registry order.
Particle indices (and so every random number) follow from the round number, so the
result depends only on (initial terrain, parameters, seed, rounds done) — never on how
the rounds were spread over calls, time budgets or threads. Particle counts are rounded
up to whole rounds.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..algorithms.strata import Strata
from ..kernels import parallel, scratch
from ..kernels.primitives import (
    book_change,
    book_change_under_water,
    copy_span,
    hold_protected,
    rain_cdf,
)
from ..params import ParameterError, Params
from ..processes import FIELDS, PROCESSES
from ..terrain import Terrain, grid


def process_params(name: str, values: dict[str, Any] | None = None,
                   where: str = "") -> Params:
    """Parameters of process ``name`` from a mapping (defaults for missing keys)."""
    if name not in PROCESSES:
        raise ParameterError(f"{where}: unknown process '{name}'; known: "
                             f"{', '.join(PROCESSES)}")
    return PROCESSES[name].params_type.from_dict(values or {}, where or name)


@dataclasses.dataclass
class Progress:
    """Where a run stands after a call to :meth:`Simulation.advance`."""

    rounds: int
    particles: int
    target_particles: int
    steps: int
    seconds: float

    @property
    def fraction(self) -> float:
        return 1.0 if self.target_particles <= 0 else min(
            1.0, self.particles / self.target_particles)

    @property
    def done(self) -> bool:
        return self.particles >= self.target_particles


#: the most work a process with a fixed amount of it (the landscape's age in time steps)
#: may ask for: passes x cells (1e11 is 100,000 steps at 1024², about a day here)
MAX_CELL_PASSES = 1e11

#: a round of a preset rains its particles over the map, so on a bigger map a round is
#: less rain per area. Grid passes (thermal's creep and weathering) are tuned per round
#: on maps of this area, (3.84 km)² (the generated test world, world units²); on bigger
#: maps a pass does less, as the rain of a round is spread thinner.
REFERENCE_AREA = 3840.0 ** 2
#: limits of the rain share: maps smaller than REFERENCE_AREA keep one reference pass
#: a round (tiny Blender grids in local units), and a map 16x the area gets 1/16
RAIN_SHARE_LIMITS = (1.0 / 16.0, 1.0)


def rain_share(terrain: Terrain) -> float:
    """How much rain per area a round brings relative to a round on REFERENCE_AREA:
    REFERENCE_AREA / the map's area, within RAIN_SHARE_LIMITS."""
    rows, cols = terrain.shape
    area = rows * cols * terrain.cell_size ** 2
    lo, hi = RAIN_SHARE_LIMITS
    return float(min(max(REFERENCE_AREA / area, lo), hi)) if area > 0 else hi


_rain_share = rain_share  # the module's function, where a parameter has its name

#: ``batches(name, params, first, count, height) -> steps``: runs process ``name``'s
#: particles ``first .. first + count`` on the terrain (``height``: its surface, kept
#: up to date by the process)
Batches = Callable[[str, Any, int, int, np.ndarray], int]


def _per_rain(name: str, params: Params, share: float) -> Params:
    """The params a batch of process ``name`` runs with when a round brings ``share`` x
    the reference rain per area (its ``per_rain`` hook; as given without one)."""
    hook = PROCESSES[name].per_rain
    return params if hook is None else hook(params, share)


def check_swap(current: dict[str, Params], new: dict[str, Params]) -> None:
    """ParameterError unless ``new`` can take over from ``current`` between two rounds
    (:meth:`Simulation.set_params`): the same processes, each with the same batch and
    the same passes in all (Process.passes), since those divide the run into rounds
    and number its particles."""
    if list(new) != list(current):
        raise ParameterError(f"the processes cannot change during a run: it runs "
                             f"{', '.join(current)}, not {', '.join(new) or 'none'}")
    for name, old in current.items():
        proc = PROCESSES[name]
        if int(new[name].batch) != int(old.batch):
            raise ParameterError(
                f"{proc.label}: 'batch' cannot change during a run ({int(old.batch)} -> "
                f"{int(new[name].batch)}): it sets how the run is divided into rounds")
        if proc.passes is not None and proc.passes(new[name]) != proc.passes(old):
            raise ParameterError(
                f"{proc.label}: its passes in all (age / time step) cannot change during "
                f"a run ({proc.passes(old)} -> {proc.passes(new[name])}): they set how "
                "long it runs")


def particles_per_round(processes: dict[str, Params]) -> int:
    """The particles (passes, cycles) one round of ``processes`` runs: their batches."""
    return sum(int(p.batch) for p in processes.values())


def planned_rounds(processes: dict[str, Params], particles: int, cells: int,
                   rounds_done: int = 0) -> int:
    """The round a run of ``particles`` from round ``rounds_done`` ends at, on a grid
    of ``cells`` cells: the work rounded up to whole rounds, and at least the rounds the
    processes with a fixed amount of work need in all (Process.passes: the landscape's
    age), counted from round 0; refused past MAX_CELL_PASSES."""
    need = 0
    for name, params in processes.items():
        passes = PROCESSES[name].passes
        if passes is not None:
            count = passes(params)
            if count * cells > MAX_CELL_PASSES:
                # the parameter the span is set by (the landscape's and the ice's
                # age, the snow's years)
                span = next((f for f in ("age", "years") if hasattr(params, f)), "age")
                raise ParameterError(
                    f"{name}: {count:,} passes on {cells:,} cells is more than "
                    f"{MAX_CELL_PASSES:.0e} cell passes (days of work): raise its "
                    f"time_step or lower its {span} (or use a smaller grid)")
            need = max(need, math.ceil(count / int(params.batch)))
    return max(rounds_done + math.ceil(particles / particles_per_round(processes)), need)


class Simulation:
    """Drives the enabled processes over one :class:`Terrain`, in place.

    ``processes`` maps process name -> its params (only enabled ones). ``particles`` is
    the total work; it is rounded up to whole rounds. ``rounds_done`` lets a saved state
    resume with the same random sequence.

    A window of a larger world (a tile of a tiled run) gives the world's ``rain_share``
    (else the terrain's own) and ``batches``: what runs a process's particles
    ``first .. first + count`` on the window (:data:`Batches`; by default the process's
    ``run_batch`` with this simulation's seed, starts spread by the rain map), and
    ``rock_centre`` the world's centre in the window's cells (algorithms.strata.Strata), where the
    rock column's frame is.
    """

    def __init__(self, terrain: Terrain, processes: dict[str, Params], *, seed: int = 0,
                 particles: int = 100_000, rounds_done: int = 0,
                 rain_share: float | None = None, batches: Batches | None = None,
                 rock_centre: tuple[float, float] | None = None) -> None:
        if not processes:
            raise ParameterError("no process is enabled; enable at least one")
        unknown = [n for n in processes if n not in PROCESSES]
        if unknown:
            raise ParameterError(f"unknown process(es) {unknown}; known: {list(PROCESSES)}")
        if particles < 0:
            raise ParameterError(f"particles must be >= 0, got {particles}")
        terrain.validate()
        self.terrain = terrain
        self.processes = {n: processes[n] for n in PROCESSES if n in processes}
        self.seed = int(seed)
        self.per_round = particles_per_round(self.processes)
        self.target_rounds = planned_rounds(self.processes, particles, terrain.bedrock.size,
                                            rounds_done)
        self.rounds_done = int(rounds_done)
        self.start_rounds = int(rounds_done)
        self.steps = 0
        self.seconds = 0.0
        self._height = terrain.height()
        #: the ground before the process that is running (what its change is taken from)
        self._before = np.empty_like(self._height)
        for name in self.processes:  # each process's change, kept on the terrain
            terrain.changes.setdefault(name, np.zeros_like(self._height))
            self._change_view(name)  # refused now, not after the first round
        self._cdf = rain_cdf(terrain.rain)
        #: rain a round brings per area, in units of a round on REFERENCE_AREA
        self.rain_share = _rain_share(terrain) if rain_share is None else float(rain_share)
        self._batches = batches
        #: the params each process runs with (grid passes scaled by the rain per area)
        self._run_params: dict[str, Any] = {
            n: _per_rain(n, p, self.rain_share) for n, p in self.processes.items()}
        #: material put back by the protect mask (cell units x cells): the mass budget is
        #: total_material() + outflow - protect_held - (source records' growth, uplift)
        #: == the starting total
        self.protect_held = 0.0
        #: what processes keep from one batch to the next (simcore.kernels.scratch)
        self._scratch: dict[str, Any] = {}
        #: the rock column laid over the grid (None: one rock throughout) and the grids
        #: a batch reads it through (:meth:`_rock_begin`)
        self._strata: Strata | None = None
        if terrain.rock is not None:
            self._strata = Strata(terrain.rock, terrain.shape, terrain.cell_size,
                                  rock_centre)
            self._rock_grids = (grid(terrain.shape, 1), np.empty(terrain.shape),
                                np.empty(terrain.shape))
            self.update_rock_layer()

    def advice(self) -> list[str]:
        """Sentences for the user about what this grid cannot show (Process.advice),
        and about fixed work that earlier runs already did (Process.passes)."""
        out = []
        for name, params in self.processes.items():
            passes = PROCESSES[name].passes
            batch = int(params.batch)
            if passes is not None and self.start_rounds * batch >= passes(params) > 0:
                out.append(f"{name}: earlier runs already did all {passes(params)} of its "
                           f"passes ({PROCESSES[name].label.lower()} to its full "
                           "amount); raise it (the landscape's age) to go further")
        for name, params in self._run_params.items():
            advise = PROCESSES[name].advice
            text = advise(params, self.terrain.cell_size) if advise is not None else None
            if text:
                out.append(text)
        return out

    @property
    def particles_done(self) -> int:
        return (self.rounds_done - self.start_rounds) * self.per_round

    @property
    def target_particles(self) -> int:
        return (self.target_rounds - self.start_rounds) * self.per_round

    def progress(self) -> Progress:
        return Progress(self.rounds_done, self.particles_done, self.target_particles,
                        self.steps, self.seconds)

    def run_round(self, rounds: int = 1) -> None:
        """One batch of every enabled process (each may keep its scratch grids for the
        next round: :mod:`simcore.kernels.scratch`). ``rounds`` > 1: each process runs
        that many rounds' particles in one batch (a tile's epoch of a tiled run)."""
        with scratch.keeping(self._scratch):
            self._run_round(int(rounds))

    def set_params(self, processes: dict[str, Params]) -> None:
        """Run the next rounds with ``processes``' params (a bake's keyed values at the
        frame it runs towards): the same as a new Simulation on this terrain with
        these params and ``rounds_done``. The processes, their batches and their passes
        in all stay as they were (:func:`check_swap`, else ParameterError)."""
        ordered = {n: processes[n] for n in PROCESSES if n in processes}
        check_swap(self.processes, ordered)
        self.processes = ordered
        self._run_params = {n: _per_rain(n, p, self.rain_share) for n, p in ordered.items()}

    def _batch(self, name: str, params: Any, first: int, count: int) -> int:
        """Process ``name``'s particles ``first .. first + count``: steps done."""
        if self._batches is not None:
            return self._batches(name, params, first, count, self._height)
        return PROCESSES[name].run_batch(self.terrain, params, self.seed, first, count,
                                         self._height, self._cdf)

    def _run_round(self, rounds: int) -> None:
        r = self.rounds_done
        height, before = self._height.reshape(-1), self._before.reshape(-1)
        spans = parallel.bands(height.size)  # elementwise: the same on any thread count
        parallel.run(spans, lambda b: copy_span(b[0], b[1], height, before))
        masked = bool(self.terrain.protect.any())  # no process writes the protect map
        for name, params in self._run_params.items():
            batch = int(params.batch)
            own = self._rock_begin()  # the rock column's layers at the bedrock
            # masks: the protect map
            held = protect_begin(self.terrain, protect_sources(name)) if masked else None
            level_in_booking = self._level_in_booking(name, held)
            surface = None if level_in_booking else self._water_surface(name)
            self.steps += self._batch(name, params, r * batch, rounds * batch)
            self.protect_held += protect_end(self.terrain, held, self._height)
            self._rock_end(own)
            change = self._change_view(name)
            if surface is not None:  # the lakes' relevel below changes no ground
                self._keep_water_surface(*surface)
            if level_in_booking:
                # the change booked with the water kept level in one pass; ``before``
                # becomes the next one's ground; then the lakes' relevel (pool only)
                wet: list[int] = []  # wet cells per span
                pool = self.terrain.pool.reshape(-1)  # a view (_level_in_booking)
                parallel.run(spans, functools.partial(_book_under_water, height, before,
                                                      change, pool),
                             functools.partial(_count, wet))
                if sum(wet):
                    self._relevel()
                continue
            # this process's change booked; ``before`` becomes the next one's ground
            parallel.run(spans, functools.partial(_book, height, before, change))
        self.rounds_done += rounds
        self.update_rock_layer()

    def update_rock_layer(self) -> None:
        """Write the exposed layer of the rock column into ``terrain.rock_layer`` (nothing
        without a column)."""
        if self._strata is None:
            return
        t = self.terrain
        scaled, _, _ = self._rock_grids
        self._strata.evaluate(t.bedrock, t.erodibility, scaled, t.rock_layer,
                              uplifted=self._uplifted())

    def _uplifted(self) -> np.ndarray | None:
        """Rock raised from below so far (the source records, Field.source), which
        carried its layers up with it; None when no process raises rock."""
        sources = [name for name, f in FIELDS.items() if f.source]
        if not sources:
            return None
        if len(sources) == 1:
            return getattr(self.terrain, sources[0])
        return self.terrain.sources()

    def _rock_begin(self) -> np.ndarray | None:
        """Before a batch on a rock column: the terrain's erodibility becomes its map x
        the erodibility of each cell's layer at its bedrock, and ``terrain.rock_now``
        gives the layers' critical angles when they have any. Returns the map to put
        back (:meth:`_rock_end`); None without a column."""
        if self._strata is None:
            return None
        t = self.terrain
        own = t.erodibility
        scaled, critical, factor = self._rock_grids
        if self._strata.has_angles:
            self._strata.evaluate(t.bedrock, own, scaled, t.rock_layer, critical, factor,
                                  self._uplifted())
            t.rock_now = (critical, factor)
        else:
            self._strata.evaluate(t.bedrock, own, scaled, t.rock_layer,
                                  uplifted=self._uplifted())
        t.erodibility = scaled
        return own

    def _rock_end(self, own: np.ndarray | None) -> None:
        """Undo :meth:`_rock_begin` after the batch."""
        if own is not None:
            self.terrain.erodibility = own
            self.terrain.rock_now = None

    def _level_in_booking(self, name: str, held: _Held | None) -> bool:
        """Whether the water stays level over process ``name``'s moves in the pass that
        books its change (:func:`book_change_under_water`): it does not move water, no
        protect mask changed the ground for it (``before`` is the ground the water
        stands on) and ``pool`` can be written through a flat view."""
        pool = self.terrain.pool
        return (held is None and not PROCESSES[name].moves_water
                and pool.flags.c_contiguous and pool.flags.writeable
                and pool.dtype == np.float64 and pool.shape == self._height.shape)

    def _change_view(self, name: str) -> np.ndarray:
        """Process ``name``'s change record as a flat view, booked in place
        (book_change): a record a view cannot write through is refused."""
        change = self.terrain.changes[name]
        if (not isinstance(change, np.ndarray) or change.shape != self._height.shape
                or change.dtype != np.float64 or not change.flags.c_contiguous
                or not change.flags.writeable):
            raise ParameterError(
                f"terrain.changes['{name}'] must be a writeable C-contiguous float64 "
                f"array of the grid's shape {self._height.shape}; got "
                f"{getattr(change, 'dtype', type(change).__name__)} "
                f"{getattr(change, 'shape', '')}: pass np.ascontiguousarray(..., "
                "dtype=np.float64) or leave it out")
        return change.reshape(-1)

    def _water_surface(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(wet cells, their water surface) before a process that moves ground but not
        water (``Process.moves_water`` is False), or None where there is no
        standing water."""
        if PROCESSES[name].moves_water:
            return None
        wet = self.terrain.pool > 0.0
        if not wet.any():
            return None
        return wet, self._height[wet] + self.terrain.pool[wet]

    def _keep_water_surface(self, wet: np.ndarray, surface: np.ndarray) -> None:
        """Lakes and the sea keep their level when ground slides into or out of them
        (pool depth = surface - new ground, never below 0); then each enabled process
        that holds water re-levels it (a rim may have moved: no lake above its outlet)."""
        self.terrain.pool[wet] = np.maximum(surface - self._height[wet], 0.0)
        self._relevel()

    def _relevel(self) -> None:
        """Each enabled process that holds water re-levels it (Process.relevel)."""
        for name, params in self.processes.items():
            relevel = PROCESSES[name].relevel
            if relevel is not None:
                relevel(self.terrain, params, self._height)

    def advance(self, seconds: float) -> Progress:
        """Run whole rounds for about ``seconds`` (at least one round unless done)."""
        start = time.perf_counter()
        last = 0.0
        while self.rounds_done < self.target_rounds:
            t0 = time.perf_counter()
            self.run_round()
            last = time.perf_counter() - t0
            elapsed = time.perf_counter() - start
            if elapsed + last > seconds:
                break
        self.seconds += time.perf_counter() - start
        return self.progress()

    def run(self, callback: Callable[[Progress], Any] | None = None,
            report_every: float = 1.0) -> Progress:
        """Run to the target; ``callback(progress)`` about every ``report_every`` s."""
        while self.rounds_done < self.target_rounds:
            progress = self.advance(report_every)
            if callback is not None:
                callback(progress)
        return self.progress()

    def metadata(self) -> dict[str, Any]:
        """Provenance: parameters, seed, work done and versions, JSON-friendly."""
        from .. import __version__
        return {
            "simcore_version": __version__,
            "seed": self.seed,
            "rounds_done": self.rounds_done,
            "particles_per_round": self.per_round,
            "processes": {n: p.to_dict() for n, p in self.processes.items()},
            "cell_size": self.terrain.cell_size,
            "outflow": self.terrain.outflow,
            "protect_held": self.protect_held,
        }



def _book(height: np.ndarray, before: np.ndarray, change: np.ndarray,
          span: tuple[int, int]) -> None:
    """:func:`book_change` on one span of the flat arrays (a task of parallel.run)."""
    book_change(span[0], span[1], height, before, change)


def _count(into: list[int], _span: tuple[int, int], n: int) -> None:
    """Keep a task's count (the ``then`` of parallel.run)."""
    into.append(n)


def _book_under_water(height: np.ndarray, before: np.ndarray, change: np.ndarray,
                      pool: np.ndarray, span: tuple[int, int]) -> int:
    """:func:`book_change_under_water` on one span (a task of parallel.run)."""
    return int(book_change_under_water(span[0], span[1], height, before, change, pool))


_PROTECTED = ("bedrock", "sediment", "eroded", "deposited")


def protect_sources(name: str) -> tuple[str, ...]:
    """The source records (Field.source: uplift) process ``name`` writes."""
    return tuple(f for f in PROCESSES[name].writes if f in FIELDS and FIELDS[f].source)


@dataclasses.dataclass
class _Held:
    """What :func:`protect_begin` changed for one process batch."""

    cells: np.ndarray  # flat indices with protect > 0
    erodibility: np.ndarray  # the terrain's own erodibility map, put back afterwards
    folded: np.ndarray  # sediment folded into the bedrock of those cells
    rock: np.ndarray  # their bedrock before the fold
    before: tuple[np.ndarray, ...]  # copies of _PROTECTED before the batch
    sources: dict[str, np.ndarray]  # copies of the source records the batch may write


def protect_begin(terrain: Terrain, sources: tuple[str, ...] = ()) -> _Held | None:
    """Prepare a process batch on a terrain with a protect mask (None: nothing to do).

    Inside the batch (every process, no process code involved): protected cells dig
    ``1 - protect`` as much (their erodibility is scaled; their sediment is folded into
    the bedrock for the batch so it obeys that scale too), and a fully protected cell
    gives nothing at all, so protected ground never feeds sediment to the rest.
    """
    protect = terrain.protect.reshape(-1)
    if not protect.any():  # no mask (the usual case): one quick scan
        return None
    cells = np.flatnonzero(protect > 0.0)
    if cells.size == 0:
        return None
    before = tuple(getattr(terrain, n).copy() for n in _PROTECTED)
    own = terrain.erodibility
    scaled = own.copy()
    scaled.reshape(-1)[cells] *= 1.0 - protect[cells]
    terrain.erodibility = scaled
    rock = terrain.bedrock.reshape(-1)
    sed = terrain.sediment.reshape(-1)
    held = _Held(cells, own, sed[cells].copy(), rock[cells].copy(), before,
                 {n: getattr(terrain, n).copy() for n in sources})
    rock[cells] += held.folded
    sed[cells] = 0.0
    return held


def protect_end(terrain: Terrain, held: _Held | None, height: np.ndarray) -> float:
    """Undo :func:`protect_begin` after the batch (sediment first: what was dug from a
    folded cell comes out of its sediment before its bedrock), then hold back the part
    ``protect`` of whatever else changed there (deposits, slides, blur), bit-exact where
    protect is 1. Returns the material put back (booked as ``protect_held``)."""
    if held is None:
        return 0.0
    terrain.erodibility = held.erodibility
    rock = terrain.bedrock.reshape(-1)
    sed = terrain.sediment.reshape(-1)
    c = held.cells
    column = rock[c]
    real_rock = np.minimum(column, held.rock)
    rock[c] = real_rock
    sed[c] += column - real_rock
    flat = [a.reshape(-1) for a in held.before]
    now = [getattr(terrain, n).reshape(-1) for n in _PROTECTED]
    put_back = float(hold_protected(  # type: ignore[call-arg]  # numba's compiled signature
        terrain.protect.reshape(-1), *flat, height.reshape(-1), *now))
    # material that entered from below (uplift) is held back like the ground it
    # raised: the record keeps 1 - protect of it, and the part held back is booked
    keep = 1.0 - terrain.protect.reshape(-1)[c]
    for name, old in held.sources.items():
        record = getattr(terrain, name).reshape(-1)
        raw = record[c]
        before = old.reshape(-1)[c]
        kept = before + keep * (raw - before)  # keep 0: exactly ``before``
        record[c] = kept
        put_back += float((raw - kept).sum())
    return put_back
