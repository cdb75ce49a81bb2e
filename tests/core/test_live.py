"""Live painting in simcore: maps changed between rounds take effect at the next round,
the states a session used are recorded, and replaying them gives the same arrays bit
for bit; bad states are clear messages."""

from __future__ import annotations

import numpy as np
import pytest

from simcore.algorithms.masks import MaskError
from simcore.engine.live import LiveSimulation, check_state, live_processes, replay
from simcore.generators.noise import fractal_terrain
from simcore.processes.landscape import LandscapeParams
from simcore.processes.thermal import ThermalParams
from simcore.terrain import Terrain

N = 33


def _start() -> Terrain:
    return Terrain.from_heights(fractal_terrain(N, seed=2, relief=5.0), 60.0)


def _processes() -> dict:
    return live_processes({"landscape": LandscapeParams(uplift=2e-3, time_step=2e4, batch=4),
                           "thermal": ThermalParams()}, N * N)


def test_live_processes_run_until_ended_and_keep_only_live_ones():
    from simcore.processes.droplets import DropletParams
    procs = live_processes({"landscape": LandscapeParams(batch=10),
                            "droplets": DropletParams()}, 512 * 512)
    assert list(procs) == ["landscape"]
    land = procs["landscape"]
    assert 1 <= land.batch <= 10 and land.age >= 1000 * land.time_step
    with pytest.raises(MaskError, match="enable it"):
        live_processes({"droplets": DropletParams()}, 100)


def test_a_painted_session_equals_its_replay_bit_for_bit():
    band = np.zeros((N, N))
    band[:, N // 2 - 1:N // 2 + 2] = 1.0
    wider = np.zeros((N, N))
    wider[:, N // 2 - 3:N // 2 + 4] = 0.7
    live = LiveSimulation(_start(), _processes(), particles=0)
    live.run_round()  # the default map (1 everywhere) for a round
    live.paint({"uplift": band})
    live.paint({"uplift": wider})  # replaced before any round used it: not recorded
    live.paint({"uplift": band})
    live.run_round()
    live.run_round()
    live.paint({"uplift": band})  # the same as in use: no new state
    live.run_round()
    live.paint({"uplift": wider, "erodibility": np.full((N, N), 0.5)})
    live.run_round()
    assert [r for r, _ in live.states] == [1, 4]
    assert list(live.states[1][1]) == ["uplift", "erodibility"]

    again = LiveSimulation(_start(), _processes(), particles=0)
    replay(again, live.states, 5)
    for name, values in live.terrain.arrays().items():
        assert np.array_equal(values, again.terrain.arrays()[name]), name
    # the maps mattered: a run without the states differs
    plain = LiveSimulation(_start(), _processes(), particles=0)
    replay(plain, [], 5)
    assert not np.array_equal(plain.terrain.bedrock, live.terrain.bedrock)


@pytest.mark.parametrize("maps, message", [
    ({"uplift": np.zeros((N, N - 1))}, "shape"),
    ({"uplift": np.full((N, N), np.nan)}, "NaN"),
    ({"erodibility": np.full((N, N), 1.5)}, "outside 0..1"),
    ({"protect": np.zeros((N, N))}, "not a map"),
    ({"rain": np.zeros((N, N))}, "zero everywhere"),
])
def test_bad_states_are_refused_with_a_clear_message(maps, message):
    with pytest.raises(MaskError, match=message):
        check_state(maps, (N, N), "state 1")
    live = LiveSimulation(_start(), _processes(), particles=0)
    before = live.terrain.uplift.copy()
    with pytest.raises(MaskError, match=message):
        live.paint(maps)
    live.run_round()
    assert live.states == [] and np.array_equal(live.terrain.uplift, before)


def test_replay_refuses_states_outside_the_session():
    live = LiveSimulation(_start(), _processes(), particles=0)
    with pytest.raises(MaskError, match="outside"):
        replay(live, [(3, {"uplift": np.zeros((N, N))})], 2)
