"""What a process says about itself: the descriptor every module in
``simcore/processes/`` ends with (``PROCESS = Process(...)``).

The simulation, the presets, the CLI, the add-on's properties, panels and layers, the
.npz units and the docs' attribute table read these descriptors; adding a process
means adding its module (with its descriptor), its preset keys and its tests. Nothing
outside a process's module names it: what is special about a process (it holds
standing water, it is on in a new terrain's settings, ...) is a field of its
descriptor, and the add-on's extra widgets for it are an entry of ``addon/ui/process_ui.py``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Generic, TypeVar

from .fields import Field
from .params import Params

#: a process's own parameter type
P = TypeVar("P", bound=Params)


@dataclasses.dataclass(frozen=True)
class Process(Generic[P]):
    """A process of the terrain model.

    ``run_batch(terrain, params, seed, first, count, height, cdf) -> steps`` runs
    particles (or passes) ``first .. first+count-1`` in place: ``height`` is the
    terrain's bedrock + sediment, kept up to date; ``cdf`` the rain start weights.
    """

    #: key in presets, the CLI's ``--set name.key=value`` and the add-on's settings
    name: str
    params_type: type[P]
    run_batch: Callable[..., int]
    label: str
    doc: str
    #: position in a round (lower runs first)
    order: int
    #: RNG stream id: particle ``k`` draws from ``(seed, stream, k)``; unique per process
    stream: int
    #: terrain arrays the process reads
    reads: tuple[str, ...]
    #: terrain arrays (and ``trees``) it may change; everything else stays bit-identical
    writes: tuple[str, ...] = ("bedrock", "sediment", "eroded", "deposited")
    #: arrays this process adds to the terrain model
    fields: tuple[Field, ...] = ()
    #: for processes whose work is a pass over the grid, not particles (thermal):
    #: ``per_rain(params, share) -> params`` gives the params of a pass when a round
    #: brings ``share`` x the reference rain per area (simulation.REFERENCE_AREA), so
    #: a pass does as much per unit of rain on any map extent; None: params as given
    per_rain: Callable[[P, float], P] | None = None
    #: ``advice(params, cell_size) -> sentence or None``: what the user should know when
    #: this grid cannot show what the params make (dunes smaller than a few cells);
    #: the CLI prints it, the add-on reports it when a run starts
    advice: Callable[[P, float], str | None] | None = None
    #: for processes with a fixed amount of work (landscape: its age in time steps):
    #: ``passes(params) -> int`` passes in all; a run lasts at least the rounds they
    #: need, and passes beyond do nothing. None: the work is the run's particles
    passes: Callable[[P], int] | None = None
    #: what this process does after another one moved ground under standing water:
    #: ``relevel(terrain, params, height)``, called after the batch of every process
    #: that does not move water itself, when there was water, once the simulation kept
    #: the water surfaces where they were (hydrology: no lake above its outlet).
    #: None: nothing
    relevel: Callable[..., object] | None = None
    #: True if the process sets the depth of standing water (``pool``) itself
    #: (hydrology, landscape); around the batches of every other process the
    #: simulation keeps lake and sea surfaces level while ground moves under them
    moves_water: bool = False
    #: on in the settings of a terrain the add-on has not seen yet (droplets); presets
    #: and the CLI say for themselves which processes run
    enabled_by_default: bool = False
    #: where a tiled run (simcore/distributed/tiles.py) runs the process: "map" when what
    #: it does at a cell depends on the whole map (drainage across it, dunes that march
    #: across it): once, on the whole map or a coarse copy of it; "tile" when its reach is
    #: local: in every tile, with overlapping margins
    reach: str = "tile"
    #: where a coarse-to-fine run (simcore/engine/schedule.py, ``erode --to``) runs the
    #: process: "coarse" for whole-map processes (what they make spans the map: drainage,
    #: lakes, a dune field, a landscape's age): at the coarse levels only, its share of
    #: the finest level's rain done on the last coarse one; "every" for the detail
    #: processes: at every level, each level its share of the rain (:data:`LEVELS`)
    levels: str = "every"
    #: its particles start where ``kernels.primitives.start_position`` draws them from
    #: the cdf it is given (droplets, snowball): a tiled run keys them to world blocks,
    #: so a particle that starts in an overlap is the same particle in both tiles
    keyed_starts: bool = False
    #: its ``run_batch`` takes ``world_shape=(rows, cols)``: what depends on the map's
    #: size (the droplets' path limit) follows the world's when it runs on a window
    world_shape_arg: bool = False
    #: ``per_area(params, share) -> params`` for work counted per map (trees' seeding
    #: tries): a window that is ``share`` of the world gets that share, drawn from the
    #: window's own seed; None: the work does not depend on the map's area
    per_area: Callable[[P, float], P] | None = None
    #: bytes a grid cell costs while the process works, beyond the terrain's arrays
    #: (its scratch grids; measured: the table in simcore/engine/memory.py); 0 for work per
    #: particle
    bytes_per_cell: int = 0
    #: parameter changes the warm-up (``simcore prepare``, the add-on's) also runs the
    #: process with, for branches its defaults and the presets do not take (the
    #: landscape's second-order diffusion where D dt / dx² <= 1)
    warmup: tuple[dict, ...] = ()
    #: the time model (simcore/engine/timing.py): ``work(params, shape) -> units`` of
    #: work one item of its batch (a particle, a pass, a cycle) costs on a ``rows x
    #: cols`` grid (a pass over the grid: :func:`cell_pass`); None: one unit an item
    work: Callable[[P, tuple[int, int]], float] | None = None
    #: seconds one unit of its work takes at the reference speed (2 threads of the
    #: machine the table in simcore/engine/timing.py was measured on, by
    #: benchmarks/bench_timing.py); 0: too quick to count
    seconds_per_unit: float = 0.0

    def __post_init__(self) -> None:
        if self.levels not in LEVELS:
            raise ValueError(f"process '{self.name}': levels must be one of {LEVELS}, "
                             f"got {self.levels!r}")


#: the values of ``Process.levels``
LEVELS = ("coarse", "every")


def age_passes(age: float, step: float) -> int:
    """Passes of ``step`` years that add up to ``age`` (the last one shortened): the
    ``passes`` of the processes that run for an age (landscape, ice, snow)."""
    if age <= 0.0:
        return 0
    return max(1, math.ceil(age / step - 1e-9))


def pass_years(age: float, step: float, k: int) -> float:
    """Length of pass ``k`` (0-based) of :func:`age_passes`: ``step``, the last one what
    is left of ``age``."""
    return min(step, age - k * step)


def cell_pass(params: object, shape: tuple[int, int]) -> float:
    """Units of work of one pass over a ``rows x cols`` grid: its cells (the ``work``
    of the processes whose batch counts passes)."""
    return float(shape[0] * shape[1])
