"""simcore.cli.prepare: the jobs that compile the core ahead of a run (the add-on's warm-up)
cover every kernel and signature a real run uses, in fresh processes; and the small
kernel helpers that replaced numpy calls to keep the compile short."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.cli.prepare import RIDGES, WRITE_BACK, steps
from simcore.engine.simulation import PROCESSES
from simcore.kernels.primitives import _first_above

ROOT = Path(__file__).resolve().parents[2]

# Prepare the jobs named on the command line (all: "*"), then run presets for real on a
# 40x40 terrain with a painted protect mask and non-uniform rain; print what the runs
# compiled beyond the jobs.
CHILD = r"""
import json, sys
import numba
import numpy as np
from simcore.formats.presets import find_preset, preset_files
from simcore.generators.noise import fractal_terrain
from simcore.cli.prepare import steps
from simcore.engine.simulation import Simulation
from simcore.terrain import Terrain

def compiled():
    return {(d.py_func.__module__ + "." + d.__name__, str(sig))
            for name, m in list(sys.modules.items()) if name.startswith("simcore")
            for d in vars(m).values()
            if isinstance(d, numba.core.registry.CPUDispatcher) for sig in d.signatures}

wanted, presets = json.loads(sys.argv[1]), json.loads(sys.argv[2])
first = find_preset("default").params
for key, label, job in steps(first):
    if wanted == "*" or key in wanted:
        job()
before = compiled()
names = sorted(preset_files()) if presets == "*" else presets
for name in names:
    preset = find_preset(name)
    for masked in (True, False):  # with a painted protect mask and without
        terrain = Terrain.from_heights(fractal_terrain(40, seed=3, relief=30.0), 10.0)
        if masked:
            terrain.protect[5:9, 5:20] = 1.0
            terrain.protect[20:30, 10:12] = 0.4
        terrain.rain[:, :20] = 2.0
        Simulation(terrain, dict(preset.params), seed=7, particles=3000).run()
print("NEW " + json.dumps(sorted(compiled() - before)))
"""


def _compiled_by_runs(jobs, presets) -> list:
    run = subprocess.run([sys.executable, "-c", CHILD, json.dumps(jobs), json.dumps(presets)],
                         capture_output=True, text=True, cwd=ROOT)
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("NEW ")]
    assert line, run.stdout[-2000:] + run.stderr[-3000:]
    return json.loads(line[0][4:])


def test_the_default_presets_jobs_cover_a_default_run():
    """Erode is offered once these are done: the run must compile nothing more."""
    jobs = [*steps_keys_until_write_back()]
    assert set(jobs) == {"droplets", "hydrology", "thermal", "trees", WRITE_BACK}
    assert _compiled_by_runs(jobs, ["default"]) == []


def test_all_jobs_cover_a_run_of_every_shipped_preset():
    assert _compiled_by_runs("*", "*") == []


def test_a_run_without_its_jobs_compiles_kernels():
    """The check above can fail: with no job done, a run compiles its kernels."""
    new = _compiled_by_runs([], ["droplets_only"])
    assert any("droplets" in name for name, _ in new), new


def steps_keys_until_write_back() -> list[str]:
    from simcore.formats.presets import find_preset
    keys = [key for key, _, _ in steps(find_preset("default").params)]
    return keys[:keys.index(WRITE_BACK) + 1]


def test_steps_order_named_processes_first_then_write_back_then_the_rest():
    keys = [key for key, _, _ in steps(["thermal", "droplets", "no-such-process"])]
    assert keys[:3] == ["thermal", "droplets", WRITE_BACK]
    assert keys[-1] == RIDGES
    assert sorted(keys[3:-1]) == sorted(set(PROCESSES) - {"thermal", "droplets"})
    assert [k for k, _, _ in steps()][0] == WRITE_BACK


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), max_size=40), st.floats(-2e6, 2e6),
       st.integers(0, 3))
def test_first_above_is_searchsorted_right(values, value, pick):
    cdf = np.sort(np.array(values, dtype=np.float64))
    if pick and cdf.size:  # values equal to an element (and its duplicates)
        value = float(cdf[(pick * 7) % cdf.size])
    assert _first_above(cdf, value) == np.searchsorted(cdf, value, side="right")


# Run some jobs through simcore.cli.prepare.run in a fresh process with its own numba cache;
# print which jobs ran here, in what order, and what this process compiled itself
# (numba cache misses) rather than loaded from the cache.
RUN = r"""
import json, sys
import numba
from simcore.cli import prepare
keys, helpers, exe = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3] or None
jobs = [j for j in prepare.steps() if j[0] in keys]
done = []
ok = prepare.run(jobs, helpers, lambda key, doing: key and done.append(key), executable=exe)
misses = sorted({d.__name__ for name, m in list(sys.modules.items())
                 if name.startswith("simcore") for d in vars(m).values()
                 if isinstance(d, numba.core.registry.CPUDispatcher) and d._cache_misses})
print("RUN " + json.dumps({"ok": ok, "done": done, "misses": misses,
                           "cached": prepare.cached()}))
"""


def _run_jobs(keys, helpers, cache, executable="") -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    run = subprocess.run([sys.executable, "-c", RUN, json.dumps(keys), str(helpers),
                          executable], capture_output=True, text=True, cwd=ROOT, env=env)
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("RUN ")]
    assert line, run.stdout[-2000:] + run.stderr[-3000:]
    return json.loads(line[0][4:])


@pytest.mark.cold
def test_helpers_compile_into_the_cache_and_this_process_only_loads(tmp_path):
    keys = [WRITE_BACK, "trees"]
    out = _run_jobs(keys, 2, tmp_path)
    assert out["ok"] and sorted(out["done"]) == sorted(keys)
    assert out["misses"] == [], "the helpers compiled, this process loaded from the cache"
    # the check above can fail: without helpers this process compiles them itself
    alone = _run_jobs(keys, 0, tmp_path / "alone")
    assert alone["ok"] and alone["done"] == keys and alone["misses"]


@pytest.mark.cold
def test_a_complete_run_marks_the_cache_so_the_next_starts_no_helpers(tmp_path):
    keys = [key for key, _, _ in steps()]
    assert _run_jobs([WRITE_BACK], 0, tmp_path)["cached"] is False, "not every job ran"
    first = _run_jobs(keys, 0, tmp_path)
    assert first["cached"] and first["done"] == keys
    # a missing interpreter would make helpers fail loudly: none is started
    again = _run_jobs(keys, 2, tmp_path, executable="/nonexistent/python")
    assert again["ok"] and again["done"] == keys and again["misses"] == []


@pytest.mark.cold
def test_without_working_helpers_the_jobs_compile_here(tmp_path):
    keys = [WRITE_BACK, "trees"]
    for exe in ("/nonexistent/python", "/bin/false"):  # cannot start; exits at once
        out = _run_jobs(keys, 2, tmp_path / Path(exe).name, executable=exe)
        assert out["ok"] and out["done"] == keys and out["misses"], (exe, out)
