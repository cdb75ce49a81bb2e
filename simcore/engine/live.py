"""Live painting: the landscape process (with hillslopes and hydrology's water, when
they are enabled) running round after round while the Uplift, Rain or Erodibility
map changes under it.

A :class:`LiveSimulation` is a :class:`Simulation` whose input maps can be replaced
between two rounds (:meth:`LiveSimulation.paint`, from another thread than the one
running the rounds). A new map takes effect at the start of the next round, and the
simulation keeps every map state it actually used with the round it took effect at
(:attr:`LiveSimulation.states`). The rounds are the Simulation's own, so a session is
deterministic given that sequence: :func:`replay` on the same start gives the same
arrays, bit for bit, however fast the maps changed while it ran live.
"""

from __future__ import annotations

import threading

import numpy as np

from ..algorithms.masks import MaskError, check_rain
from ..kernels.primitives import rain_cdf
from ..params import Params
from ..processes.landscape import LandscapeParams
from ..terrain import Terrain
from .simulation import MAX_CELL_PASSES, Simulation

#: the maps a live session lets the user paint (terrain input maps, 0..1)
LIVE_MAPS = ("uplift", "rain", "erodibility")
#: the processes a live session runs: the landscape, and these when enabled
LIVE_PROCESSES = ("landscape", "thermal", "hydrology")
#: the longest a session may run, in landscape passes (it ends when the user leaves it)
LIVE_PASSES = 100_000
#: seconds of landscape work a round of a live session aims at (updates 4x a second)
ROUND_SECONDS = 0.15
#: a landscape pass's seconds per cell here (simcore.processes.landscape's estimate)
PASS_SECONDS_PER_CELL = 2.0e-7


def live_processes(processes: dict[str, Params], cells: int) -> dict[str, Params]:
    """The processes of a live session from the object's enabled ``processes``: the
    landscape (required) with a batch short enough for about :data:`ROUND_SECONDS` a
    round on ``cells`` cells and an age long enough to run until the session ends,
    plus thermal and hydrology when enabled. MaskError when the landscape is off."""
    if "landscape" not in processes:
        raise MaskError("live painting runs Landscape evolution: enable it (or apply a "
                        "landscape preset such as Young range) first")
    land = processes["landscape"]
    assert isinstance(land, LandscapeParams)
    batch = max(1, min(int(land.batch), int(ROUND_SECONDS
                                           / (PASS_SECONDS_PER_CELL * max(cells, 1)))))
    passes = min(LIVE_PASSES, int(MAX_CELL_PASSES // max(cells, 1)),
                 int(1.0e9 // land.time_step))
    passes -= passes % batch
    out = {name: p for name, p in processes.items() if name in LIVE_PROCESSES}
    out["landscape"] = land.replace(batch=batch, age=land.time_step * passes)
    return out


def check_state(maps: dict[str, np.ndarray], shape: tuple[int, int],
                where: str) -> dict[str, np.ndarray]:
    """``maps`` (name -> (rows, cols) values 0..1) checked and copied as float64; a map
    of another name, size, or with values that are not finite or outside 0..1 is a
    MaskError naming ``where``."""
    out = {}
    for name, values in maps.items():
        if name not in LIVE_MAPS:
            raise MaskError(f"{where}: '{name}' is not a map live painting reads (it "
                            f"reads {', '.join(LIVE_MAPS)})")
        a = np.asarray(values, dtype=np.float64)
        if a.shape != tuple(shape):
            raise MaskError(f"{where}: the {name} mask has shape {a.shape}, the grid is "
                            f"{shape[0]}x{shape[1]}: give one value per vertex")
        if not np.isfinite(a).all():
            raise MaskError(f"{where}: the {name} mask has {int((~np.isfinite(a)).sum())} "
                            "NaN/inf values: give weights 0..1")
        if a.min() < 0.0 or a.max() > 1.0:
            raise MaskError(f"{where}: the {name} mask has values outside 0..1 "
                            f"({a.min():.3g} .. {a.max():.3g}): give weights 0..1")
        if name == "rain":
            check_rain(a, f"({where})")
        out[name] = np.array(a, order="C")
    return out


class LiveSimulation(Simulation):
    """A Simulation whose painted maps change between rounds (:meth:`paint`). Same
    arguments as Simulation."""

    def __init__(self, terrain: Terrain, processes: dict[str, Params], **kwargs) -> None:
        super().__init__(terrain, processes, **kwargs)
        #: (round from the session's start, maps) for every state a round used
        self.states: list[tuple[int, dict[str, np.ndarray]]] = []
        self._pending: dict[str, np.ndarray] | None = None
        self._lock = threading.Lock()

    def paint(self, maps: dict[str, np.ndarray], where: str = "the painted mask") -> None:
        """Use ``maps`` (checked: :func:`check_state`) from the next round on; a later
        call before that round replaces it (only states a round used are kept)."""
        checked = check_state(maps, self.terrain.shape, where)
        with self._lock:
            self._pending = checked

    def run_round(self, rounds: int = 1) -> None:
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is not None:
            changed = {n: m for n, m in pending.items()
                       if not np.array_equal(getattr(self.terrain, n), m)}
            if changed:
                for name, values in changed.items():
                    setattr(self.terrain, name, values.copy())
                if "rain" in changed:  # where particles start
                    self._cdf = rain_cdf(self.terrain.rain)
                self.states.append((self.rounds_done - self.start_rounds, changed))
        super().run_round(rounds)


def replay(sim: LiveSimulation, states: list[tuple[int, dict[str, np.ndarray]]],
           rounds: int) -> None:
    """Run ``rounds`` rounds of ``sim`` with the recorded ``states`` (round from the
    start, maps) taking effect where they did: the live session's result."""
    at = {}
    for when, maps in states:
        if not 0 <= when < max(rounds, 1) or when in at:
            raise MaskError(f"a recorded mask state takes effect at round {when}, outside "
                            f"the session's {rounds} rounds or twice")
        at[when] = maps
    for r in range(rounds):
        if r in at:
            sim.paint(at[r], f"the mask state of round {r}")
        sim.run_round()

