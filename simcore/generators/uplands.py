"""Drained uplands: the generator's land, fractal noise evolved by the landscape
process into one drainage network of concave rivers (docs/landscape.md)."""

from __future__ import annotations

import numpy as np

from ..engine.simulation import Simulation, process_params
from ..terrain import Terrain
from .noise import RELIEF_FRACTION, upland_terrain

#: the generator evolves every grid as a world this wide (world units), then scales it
#: to the grid's own extent, so any size and cell size gives the same drained land
GENERATOR_EXTENT = 7680.0
#: the generator's evolution: two million years of uplift shaped by the noise against
#: rivers and hillslopes, from a start of a tenth of the noise's relief
GENERATOR_PARAMS = {"age": 2.0e6, "time_step": 2.0e4, "uplift": 1.0e-3, "k": 3.0e-5,
                    "head_area": 2.0e4, "diffusivity": 0.05, "deposition": 0.5,
                    "batch": 100_000}


def drained_uplands(rows: int, cols: int | None = None, *, seed: int = 0,
                    cell_size: float = 30.0, relief: float | None = None) -> np.ndarray:
    """World heights of drained uplands: fractal noise (:func:`noise.upland_terrain`)
    as a tenth of the start and as the uplift map, evolved for two million years of
    uplift against rivers and hillslopes (then one hillslope pass: no rock steeper than
    its critical angle), so the land drains to its edges through one network of trunk
    valleys and tributaries. ``relief`` (world units) rescales the result; by default
    it is what the evolution made (about 0.09 x the extent: median slope ~23 deg)."""
    cols = rows if cols is None else cols
    noise = upland_terrain(rows, cols, seed=seed, cell_size=1.0, relief=1.0)
    cell = GENERATOR_EXTENT / max(rows, cols)  # evolve at the reference extent
    terrain = Terrain.from_heights(noise * 0.1 * RELIEF_FRACTION * GENERATOR_EXTENT, cell,
                                   uplift=0.25 + 0.75 * noise)
    Simulation(terrain, {"landscape": process_params("landscape", GENERATOR_PARAMS),
                         "thermal": process_params("thermal", {"weathering": 0.0})},
               particles=1).run()
    heights = terrain.height()  # cell units: the same at any cell size
    heights -= heights.min()
    if relief is not None:
        span = float(heights.max())
        return heights * (relief / span if span > 0 else 0.0)
    return heights * cell_size
