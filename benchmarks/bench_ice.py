"""What a glaciation costs: 100,000 years of ice on the 7.68 km uplands (raised to
1800 m of relief, equilibrium line at 0.7 of it, the last fifth a retreat) at 512²
and 1024² (15 and 7.5 m cells; --quick: 256² and 512²), the same world: the time, the
solver's steps and their mean length, and the cost per simulated year per cell."""

from __future__ import annotations

import time

from simcore.generators.uplands import drained_uplands
from simcore.processes import ice
from simcore.terrain import Terrain

EXTENT = 7680.0
PARAMS = {"age": 1.0e5, "time_step": 1000.0, "ela_fraction": 0.7, "retreat": 0.2}


def glaciate(n: int) -> dict:
    cell = EXTENT / n
    z = drained_uplands(n, seed=3, cell_size=cell, relief=1800.0)
    t = Terrain.from_heights(z, cell)
    p = ice.IceParams(**PARAMS)
    height = t.height()
    steps = 0.0
    t0 = time.perf_counter()
    for k in range(ice.steps(p)):  # as run_batch does, and keeping the books
        steps += ice.glaciate(t, p, k, ice._pass_years(p, k), height)["steps"]
    seconds = time.perf_counter() - t0
    flowed = p.age / p.acceleration
    return {"name": f"ice, 100 kyr, {n}² ({cell:g} m cells, flow grid "
                    f"{-(-n // ice.flow_factor(p, cell))}²)",
            "s": seconds, "solver steps": int(steps), "mean step yr": flowed / steps,
            "ns per cell-year": 1e9 * seconds / (p.age * n * n)}


def run(quick: bool) -> list[dict]:
    sizes = (256, 512) if quick else (512, 1024)
    glaciate(64)  # compile
    return [glaciate(n) for n in sizes]
