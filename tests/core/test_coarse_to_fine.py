"""Coarse to fine (simcore/engine/schedule.py, ``erode --to`` / ``--levels``): the
target size, one result at any thread count, the descriptors deciding what runs where,
bad sizes refused before any work, and a result close to the direct run's."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simcore.analysis.landforms import block_mean, correlation
from simcore.cli.main import main
from simcore.engine import schedule
from simcore.engine.simulation import PROCESSES
from simcore.formats.presets import find_preset
from simcore.formats.states import load_state
from simcore.generators.uplands import drained_uplands
from simcore.kernels import parallel
from simcore.kernels.refine import halve
from simcore.terrain import Terrain


@pytest.fixture(scope="module")
def uplands(tmp_path_factory):
    """Drained uplands, 65² samples of 60 m (3.84 km), as a .npy."""
    path = tmp_path_factory.mktemp("c2f") / "uplands.npy"
    np.save(path, drained_uplands(65, 65, seed=4, cell_size=60.0))
    return path


def erode(src, out, *extra: str) -> int:
    return main(["erode", "--input", str(src), "--cell-size", "60", "--output", str(out),
                 "--quiet", "--particles", "20000", *extra])


def test_to_makes_the_target_size(uplands, tmp_path):
    assert erode(uplands, tmp_path / "fine.npz", "--to", "129") == 0
    fine, meta = load_state(tmp_path / "fine.npz")
    assert fine.shape == (129, 129)
    assert fine.cell_size == pytest.approx(30.0)  # the same 3.84 km
    assert meta["levels"] == [[65, 65], [129, 129]]


def test_same_result_on_one_and_two_threads(uplands, tmp_path):
    old = parallel.threads()
    heights = {}
    try:
        for threads in (1, min(2, parallel.most_threads())):
            parallel.set_threads(threads)
            out = tmp_path / f"t{threads}.npz"
            assert erode(uplands, out, "--to", "129", "--levels", "3") == 0
            fine, _ = load_state(out)
            heights[threads] = (fine.height(), fine.pool, fine.trees)
    finally:
        parallel.set_threads(old)
    (a, b) = heights.values()
    for x, y in zip(a, b):
        assert np.array_equal(x, y)


def test_the_descriptors_decide_what_runs_at_the_coarse_levels(monkeypatch):
    """What runs at each level follows ``Process.levels``; changing a descriptor
    changes the schedule, with no name in it."""
    for name, proc in PROCESSES.items():
        assert schedule.runs_at(name, 0, 3) and schedule.runs_at(name, 1, 3)
        assert schedule.runs_at(name, 2, 3) == (proc.levels == "every")
        assert schedule.runs_at(name, 0, 1)  # a run of one level runs every process
    preset = find_preset("default")
    processes = preset.enabled_params()
    coarse = [n for n in processes if PROCESSES[n].levels == "coarse"]
    assert coarse, "the default preset has a whole-map process"

    def levels_run() -> dict[int, list[list[str]]]:
        seen: dict[int, list[list[str]]] = {}
        t = Terrain.from_heights(drained_uplands(17, 17, seed=4, cell_size=120.0), 120.0)
        schedule.coarse_to_fine(
            t, {n: p.replace(batch=min(int(p.batch), 64)) for n, p in processes.items()},
            seed=1, rounds=6, shapes=[(17, 17), (33, 33)],
            on_level=lambda level, _t, names, _r: seen.setdefault(level, []).append(names))
        return seen

    seen = levels_run()
    assert seen[0][0] == list(processes)
    assert seen[0][1] == coarse  # the finest level's share of the whole-map processes
    assert seen[1] == [[n for n in processes if n not in coarse]]
    first = next(n for n in processes if n not in coarse)
    monkeypatch.setitem(PROCESSES, first, dataclasses.replace(PROCESSES[first],
                                                              levels="coarse"))
    seen = levels_run()
    assert first not in seen[1][0] and first in seen[0][1]


@pytest.mark.parametrize("extra,says", [
    (("--to", "100"), "never 100"),  # not reachable by x2 steps
    (("--to", "33"), "smaller than"),
    (("--to", "99999999"), "more than"),
    (("--to", "129", "--levels", "9"), "at most"),
])
def test_a_bad_size_is_one_line_and_writes_nothing(uplands, tmp_path, capsys, extra, says):
    out = tmp_path / "never.npz"
    assert erode(uplands, out, *extra) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err
    assert not out.exists()


def test_close_to_the_direct_run(tmp_path):
    """Drained uplands of 7.68 km at 60 m cells: two levels against the run on the
    fine grid alone, the height changes correlated after block-averaging."""
    src = tmp_path / "w.npy"
    start = drained_uplands(129, 129, seed=4, cell_size=60.0)
    np.save(src, start)
    assert main(["erode", "--input", str(src), "--cell-size", "60", "--output",
                 str(tmp_path / "d.npz"), "--quiet"]) == 0
    assert main(["erode", "--input", str(src), "--cell-size", "60", "--output",
                 str(tmp_path / "c.npz"), "--quiet", "--levels", "2"]) == 0
    direct, _ = load_state(tmp_path / "d.npz")
    fine, _ = load_state(tmp_path / "c.npz")
    dh_d = direct.world_height() - start
    dh_c = fine.world_height() - start
    assert correlation(block_mean(dh_d, 8), block_mean(dh_c, 8)) >= 0.9
    # as much material moved, within a quarter
    assert np.abs(dh_c).sum() == pytest.approx(np.abs(dh_d).sum(), rel=0.25)


def test_coarsening_keeps_a_plane_and_the_extent():
    y, x = np.mgrid[0:65, 0:33]
    plane = 0.3 * x - 0.2 * y + 5.0
    coarse = halve(plane)
    assert coarse.shape == (33, 17)
    assert np.allclose(coarse, plane[::2, ::2])
    shapes, coarser = schedule.plan((65, 33), 129, 3)
    assert shapes == [(33, 17), (65, 33), (129, 65)] and coarser == 1
