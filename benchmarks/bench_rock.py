"""What the rock column costs: a preset's run with a column against the same run
without, alternately, on the 7.68 km uplands (1024², 7.5 m cells; --quick: 256²).

The column's layers are all as soft as the map (erodibility 1, no angles of their own),
tilted, folded, faulted and wobbled: the run does exactly the same work and gives the
same terrain bit for bit, so the ratio is the price of finding every cell's layer
before every process batch. A row also gives the layer lookup alone (ns per cell)."""

from __future__ import annotations

import statistics
import time

import numpy as np

from simcore.algorithms.strata import Strata
from simcore.engine.simulation import Simulation
from simcore.formats.presets import find_preset
from simcore.generators.uplands import drained_uplands
from simcore.rock import RockColumn
from simcore.terrain import Terrain

EXTENT = 7680.0
#: share of each preset's work run (a whole default run at 1024² is minutes)
SHARE = {"default": 0.1, "young_range": 0.25}


def column() -> RockColumn:
    return RockColumn.from_dict({
        "layers": [{"thickness": 30.0}, {"thickness": 55.0}, {"thickness": 12.0}],
        "top": 400.0, "dip": 4.0, "dip_direction": 40.0, "fold_amplitude": 60.0,
        "fold_wavelength": 2500.0, "fault_throw": 35.0, "fault_dip": 70.0,
        "noise_amplitude": 10.0, "noise_wavelength": 600.0})


def _run(z: np.ndarray, cell: float, name: str, rock) -> tuple[float, Terrain]:
    preset = find_preset(name)
    t = Terrain.from_heights(z, cell, rock=rock)
    sim = Simulation(t, preset.enabled_params(), seed=preset.seed,
                     particles=max(1, int(preset.work(t) * SHARE[name])))
    t0 = time.perf_counter()
    sim.run()
    return time.perf_counter() - t0, t


def run(quick: bool) -> list[dict]:
    n = 256 if quick else 1024
    cell = EXTENT / n
    z = drained_uplands(n, seed=3, cell_size=cell)
    rows = []
    for name in SHARE:
        _run(z[:64, :64].copy(), cell, name, column())  # compile
        plain, layered, same = [], [], True
        for _ in range(3):
            a, ta = _run(z, cell, name, None)
            b, tb = _run(z, cell, name, column())
            plain.append(a)
            layered.append(b)
            same = same and all(np.array_equal(x, tb.arrays()[k])
                                for k, x in ta.arrays().items() if k != "rock_layer")
        ratios = [b / a for a, b in zip(plain, layered)]
        rows.append({"name": f"rock column, {name} {n}²", "without s": statistics.median(plain),
                     "with s": statistics.median(layered),
                     "ratio": statistics.median(ratios), "identical": same})
    strata = Strata(column(), z.shape, cell)
    out, layer = np.empty(z.shape), np.empty(z.shape)
    crit, factor = np.empty(z.shape), np.empty(z.shape)
    bed, ones = z / cell, np.ones(z.shape)
    strata.evaluate(bed, ones, out, layer, crit, factor)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        strata.evaluate(bed, ones, out, layer, crit, factor)
        times.append(time.perf_counter() - t0)
    rows.append({"name": f"layer lookup {n}²", "ns per cell": 1e9 * min(times) / z.size})
    return rows
