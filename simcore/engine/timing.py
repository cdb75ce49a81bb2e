"""How long a run will take, said before it starts.

Each process declares what one item of its batch costs (``Process.work``: a pass over
the grid costs its cells, a particle one unit, a droplet its step limit) and how many
seconds a unit takes (``Process.seconds_per_unit``). A run's estimate is the sum over
its processes of items x units x seconds. The constants were measured on the machine
the project is developed on (2 cores, 2 threads) by ``benchmarks/bench_timing.py``,
each process alone with its default parameters on drained uplands of 30 m cells at
128² and 256²: the seconds per unit are the mean of the two sizes (the spread between
them is in the benchmark's table). The estimate covers the simulation's work only
(not loading, saving or the add-on's write-back), is for the thread count of the
measurement, and is meant to tell a minute from an hour: it came within a factor of
three of measured runs (docs/usage.md lists them).
"""

from __future__ import annotations

from typing import Any

from ..kernels import parallel
from ..params import Params
from ..processes import PROCESSES

#: runs estimated at more than this many seconds are announced before they start
LONG_RUN_SECONDS = 30.0
#: seconds a round costs per cell and enabled process beyond the processes' own work
#: (the ground kept up to date, each process's change booked), measured alike
ROUND_SECONDS_PER_CELL = 1.2e-8


def items(name: str, params: Params, start_rounds: int, end_rounds: int) -> int:
    """Items (particles, passes, cycles) process ``name`` works through in rounds
    ``start_rounds .. end_rounds``: ``batch`` a round, but no more than what is left
    of a fixed amount of work (``Process.passes``: passes beyond it do nothing)."""
    batch = int(params.batch)
    count = max(0, end_rounds - start_rounds) * batch
    passes = PROCESSES[name].passes
    if passes is not None:
        count = min(count, max(0, passes(params) - start_rounds * batch))
    return count


def units(name: str, params: Params, shape: tuple[int, int], count: int) -> float:
    """Units of work of ``count`` items of process ``name`` on a ``shape`` grid."""
    work = PROCESSES[name].work
    return float(count) * (1.0 if work is None else float(work(params, shape)))


def run_seconds(processes: dict[str, Params], shape: tuple[int, int],
                start_rounds: int, end_rounds: int) -> dict[str, float]:
    """Estimated seconds of each process's work in rounds ``start_rounds ..
    end_rounds`` on a ``rows x cols`` grid, at the reference speed."""
    return {name: units(name, params, shape, items(name, params, start_rounds, end_rounds))
            * PROCESSES[name].seconds_per_unit for name, params in processes.items()}


def simulation_seconds(sim: Any) -> float:
    """Estimated seconds of the work a :class:`~simcore.engine.simulation.Simulation`
    has left (its run params: grid passes scaled by the rain per area)."""
    rows, cols = sim.terrain.shape
    rounds = max(0, sim.target_rounds - sim.rounds_done)
    return (sum(run_seconds(sim._run_params, sim.terrain.shape, sim.rounds_done,
                            sim.target_rounds).values())
            + rounds * rows * cols * len(sim.processes) * ROUND_SECONDS_PER_CELL)


def duration(seconds: float) -> str:
    """``seconds`` rounded as a person says it: 40 s, 6 min, 2.5 h, 3 days."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        hours = seconds / 3600
        return f"{hours:.1f} h" if hours < 10 else f"{hours:.0f} h"
    return f"{seconds / 86400:.1f} days"


def long_run_note(sim: Any, threshold: float = LONG_RUN_SECONDS) -> str | None:
    """The line a front end shows before a run estimated past ``threshold`` seconds
    ("estimate: about 6 min of work at this machine's speed (2 threads)"); None for a
    shorter run."""
    seconds = simulation_seconds(sim)
    if seconds <= threshold:
        return None
    n = parallel.threads()
    return (f"estimate: about {duration(seconds)} of work at this machine's speed "
            f"({n} thread{'s' if n != 1 else ''})")
