"""How long a run will take, said before it starts.

Each process declares what one item of its batch costs (``Process.work``: a pass over
the grid costs its cells, a droplet its step limit, a river particle the map's side,
any other item one unit) and how many seconds a unit takes (``Process.seconds_per_unit``).
A run's estimate is the sum over its processes of items x units x seconds, plus each
round's own cost per cell and process (:data:`ROUND_SECONDS_PER_CELL`).

The constants come from ``python -m benchmarks.bench_timing``: each process alone, its
default parameters, on drained uplands of 30 m cells at 128² and 256², on the 2-core
development machine (2 threads) while other work shared it (wall time, so the load is
in them). Seconds per unit, at 128² / 256², and the value declared (their mean):

==========  ============  ============  ==========  ====================================
process     128²          256²          declared    unit
==========  ============  ============  ==========  ====================================
landscape   2.3e-7        1.7e-7        2.0e-7      a cell of a pass
ice         9.4e-7        8.1e-7        8.8e-7      a cell of a pass
snow        6.3e-7        5.8e-7        6.0e-7      a cell of a pass
thermal     4.9e-7        2.2e-7        3.6e-7      a cell of a pass (less where a round
                                                    brings less rain per area)
droplets    1.2e-8        1.2e-8        1.2e-8      a step of a droplet's step limit
hydrology   3.8e-8        1.3e-7        8.4e-8      a particle x the map's side (cells);
                                                    grows as lakes fill
snowball    1.4e-5        1.5e-5        1.4e-5      a snowball
wind        6.6e-6        7.1e-6        6.8e-6      a particle
trees       3.1e-3        2.3e-3        2.7e-3      a growth cycle
a round     1.8e-8        5.8e-9        1.2e-8      a cell, per enabled process
==========  ============  ============  ==========  ====================================

Checks, whole runs with the presets' rain per area on the same uplands (the benchmark's
``CASES``; measured / estimated seconds, the machine shared): ``default`` at 256² 12.9 /
5.2 and 8.0 / 5.2, ``droplets_only`` at 512² 47.6 / 59.2, ``alpine`` at 256² 2.1 / 3.6,
``young_range`` at 512² 8.5 and 16.4 / 6.2, ice (20,000 years) with snow (200 years) at
128² 11.7 / 6.5: 0.6 to 2.6 times the estimate; ``python -m simcore erode --preset
default`` on the 256² uplands of ``generate --seed 4``: 6.7 s (5.5 s of CPU on both
threads), estimate 5.2 s. The README's performance table, taken on an idle machine, has
that run at 0.86 s and at 2048² (3.75 m cells) at 65.5 s, where the model says 158 s: on
an idle machine runs take less than the estimate, down to a sixth of it. The estimate
covers the simulation's work only (not loading, saving or the add-on's write-back) and
is meant to tell a minute from an hour.
"""

from __future__ import annotations

import math
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


def rounds_seconds(processes: dict[str, Params], shape: tuple[int, int],
                   start_rounds: int, end_rounds: int) -> float:
    """Estimated seconds of rounds ``start_rounds .. end_rounds`` of ``processes`` on a
    ``rows x cols`` grid: their work and the rounds' own cost."""
    rounds = max(0, end_rounds - start_rounds)
    return (sum(run_seconds(processes, shape, start_rounds, end_rounds).values())
            + rounds * shape[0] * shape[1] * len(processes) * ROUND_SECONDS_PER_CELL)


def simulation_seconds(sim: Any) -> float:
    """Estimated seconds of the work a :class:`~simcore.engine.simulation.Simulation`
    has left (its run params: grid passes scaled by the rain per area)."""
    return rounds_seconds(sim._run_params, sim.terrain.shape, sim.rounds_done,
                          sim.target_rounds)


def plan_seconds(processes: dict[str, Params], shape: tuple[int, int], particles: int,
                 rounds_done: int = 0) -> float:
    """Estimated seconds of a run not made yet: ``particles`` of work from round
    ``rounds_done`` on a ``rows x cols`` grid, counted in rounds as the Simulation
    counts them (whole rounds, at least the rounds of a fixed amount of work)."""
    if not processes:
        return 0.0
    per_round = sum(int(p.batch) for p in processes.values())
    fixed = [math.ceil(PROCESSES[n].passes(p) / int(p.batch))  # type: ignore[misc]
             for n, p in processes.items() if PROCESSES[n].passes is not None]
    end = max(rounds_done + math.ceil(particles / per_round), *fixed, 0)
    return rounds_seconds(processes, shape, rounds_done, end)


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
    return note(simulation_seconds(sim), threshold)


def note(seconds: float, threshold: float = LONG_RUN_SECONDS, what: str = "") -> str | None:
    """"estimate: about <seconds> of work<what> at this machine's speed (N threads)" past
    ``threshold`` seconds, else None."""
    if seconds <= threshold:
        return None
    n = parallel.threads()
    return (f"estimate: about {duration(seconds)} of work{what} at this machine's speed "
            f"({n} thread{'s' if n != 1 else ''})")
