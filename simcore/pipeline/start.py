"""The starting terrain of a run, made one way for every front end.

* an ``.npz`` state resumes: its own world units and cell size (a flag that would
  rescale it is refused), and its rounds when the seed is the preset's;
* a ``.npy`` heightmap is in its own units with ``cell_size`` between samples; the
  world it stands for is ``extent`` along its longer side (else the preset's
  ``real_size``, as in Blender; else its units are world units), its heights divided
  by the vertical exaggeration; then the preset's ``[ridges]`` are raised on it.

Sizes and memory are checked from the file's headers before it is loaded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..engine.memory import check_grid_run
from ..errors import CliError
from ..fileio import check_input
from ..formats.states import grid_shape, load_heights, load_state
from ..terrain import Terrain
from . import arguments

#: what a run can start from, by suffix
INPUT_SUFFIXES = (".npy", ".npz")


@dataclasses.dataclass
class Start:
    """A run's starting terrain (world units), the rounds it already holds (a resumed
    state with the same seed) and ``back``: what turns its world heights back into the
    input's units (``vertical / scale`` of a ``.npy`` input; 1 for a state)."""

    terrain: Terrain
    rounds_done: int = 0
    back: float = 1.0


def check_input_run(path: str, processes: Iterable[str]) -> bool:
    """The grid of a ``.npy``/``.npz`` input checked from its headers, before it is
    loaded (after, the loaded terrain would count twice: in what the run needs and in
    what is no longer available). False when the headers do not tell: the caller
    checks the loaded grid."""
    shape = grid_shape(path)
    if shape is not None:
        check_grid_run(shape, processes)
    return shape is not None


def real_scale(preset: Any, shape: tuple[int, ...], cell: float,
               extent: float | None = None) -> float:
    """World units per unit of a ``.npy`` map (heights and cells alike): ``extent``
    (else the preset's ``real_size`` when it gives one) over the map's own extent
    (``(longer side - 1) x cell``), else 1."""
    if extent is None and getattr(preset, "real_size", None):
        extent = preset.real_size
    if extent is None:
        return 1.0
    scale = arguments.extent(extent) / ((max(shape) - 1) * cell)
    arguments.cell_size(cell * scale)  # the world cell it gives must be usable too
    return scale


def start_from_heights(heights: np.ndarray, preset: Any, cell: float,
                       extent: float | None = None, vertical: float = 1.0) -> Start:
    """A heightmap already in memory (its own units, ``cell`` between samples) made a
    run's start: scaled to the world it stands for, the preset's ridges raised."""
    scale = real_scale(preset, heights.shape, cell, extent)
    if scale != 1.0 or vertical != 1.0:
        heights = heights * (scale / vertical)
        cell *= scale
    if getattr(preset, "ridges", None) is not None:  # [ridges]: DLA mountains first
        from ..generators.ridges import add_ridges
        heights = add_ridges(heights, cell, preset.ridges)
    return Start(Terrain.from_heights(heights, cell, rock=getattr(preset, "rock", None)), 0,
                 vertical / scale)


def load_start(path: str, preset: Any, *, cell_size: float | None = None,
               extent: float | None = None, vertical: float = 1.0) -> Start:
    """The start of a run of ``preset`` from the file at ``path`` (module docstring);
    ``cell_size``, ``extent`` and ``vertical`` are the command line's flags (None / 1:
    not given). Everything is checked before the map is loaded."""
    check_input(path)
    processes = preset.enabled_params()
    name = str(path).lower()
    if name.endswith(".npz"):
        given = [flag for flag, used in (("--cell-size", cell_size is not None),
                                         ("--extent", extent is not None),
                                         ("--vertical-exaggeration", vertical != 1.0))
                 if used]
        if given:
            raise CliError(f"{given[0]} cannot change the scale of a saved state (it holds "
                           "world units)")
        checked = check_input_run(path, processes)
        terrain, meta = load_state(path)
        if not checked:
            check_grid_run(terrain.shape, processes)
        rounds_done = int(meta.get("rounds_done", 0)) if meta.get("seed") == preset.seed else 0
        if getattr(preset, "rock", None) is not None:  # the preset's layers replace the state's
            terrain.rock = preset.rock
        return Start(terrain, rounds_done, 1.0)
    if name.endswith(".npy"):
        cell = arguments.cell_size(cell_size)
        vertical = arguments.vertical(vertical)
        if extent is not None:
            arguments.extent(extent)
        checked = check_input_run(path, processes)
        heights = load_heights(path)
        if not checked:
            check_grid_run((heights.shape[0], heights.shape[1]), processes)
        return start_from_heights(heights, preset, cell, extent, vertical)
    raise CliError(f"--input {path}: use a .npy heightmap or an .npz state")
