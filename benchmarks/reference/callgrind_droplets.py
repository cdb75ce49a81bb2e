"""Instructions per droplet step, ours against the C port, counted by valgrind callgrind.

    python -m benchmarks.reference.callgrind_droplets SIZE DROPLETS

prints one JSON line. Valgrind has no AVX-512, so both sides are built for ``haswell``
(numba: NUMBA_CPU_NAME/NUMBA_CPU_FEATURES and a cache folder of their own, warmed
outside valgrind first; C: -march=haswell). Each side is counted as (run - the same
run with 0 droplets per batch) / steps, so start-up, imports and cache loading cancel.
One thread; same terrain and droplets as bench_droplets.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FEATURES = ("+64bit,+avx,+avx2,+bmi,+bmi2,+cmov,+cx16,+cx8,+f16c,+fma,+fxsr,+lzcnt,+mmx,"
            "+movbe,+popcnt,+sahf,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+xsave")


def _child(mode: str, size: int, droplets: int) -> None:
    from benchmarks.reference.port import library, port_batch
    from simcore.formats.presets import find_preset
    from simcore.generators.noise import upland_terrain
    from simcore.processes.droplets import run_batch
    from simcore.terrain import Terrain
    params = find_preset("default").params["droplets"]
    terrain = Terrain.from_heights(upland_terrain(size, seed=3), 30.0)
    height = terrain.height()
    library()
    fn = run_batch if mode.startswith("ours") else port_batch
    # one droplet on a copy first, in every mode: every kernel is loaded from numba's
    # cache (the 0-droplet runs would otherwise skip loading the strip kernel)
    fn(Terrain.from_heights(upland_terrain(64, seed=3), 30.0), params, 1, 0, 1)
    steps = 0
    for first in range(0, droplets, params.batch):
        count = min(params.batch, droplets - first) if mode in ("ours", "C") else 0
        steps += fn(terrain, params, 1, first, count, height=height)
    print("STEPS", steps)


def main(size: int, droplets: int) -> dict:
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "PYTHONHASHSEED": "0",
           "NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": FEATURES,
           "NUMBA_CACHE_DIR": str(Path(tempfile.gettempdir()) / "te_numba_haswell"),
           "DROPLET_PORT_MARCH": "haswell"}
    me = [sys.executable, "-m", "benchmarks.reference.callgrind_droplets", "--child"]
    for mode in ("ours", "C"):  # warm both caches outside valgrind
        subprocess.run([*me, mode, "64", "64"], env=env, check=True, capture_output=True,
                       cwd=ROOT)
    counts, steps = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("ours0", "ours", "C0", "C"):
            out = subprocess.run(
                ["valgrind", "--tool=callgrind",
                 f"--callgrind-out-file={tmp}/cg.{mode}", *me, mode, str(size),
                 str(droplets)], env=env, capture_output=True, text=True, cwd=ROOT)
            if out.returncode != 0:
                raise RuntimeError(f"{mode} under valgrind failed:\n{out.stderr[-2000:]}")
            counts[mode] = int(re.search(r"Collected : (\d+)", out.stderr).group(1))
            steps[mode] = int(re.search(r"STEPS (\d+)", out.stdout).group(1))
    if steps["ours"] != steps["C"]:
        raise AssertionError(f"step counts differ: {steps}")
    ours = (counts["ours"] - counts["ours0"]) / steps["ours"]
    c = (counts["C"] - counts["C0"]) / steps["C"]
    return {"cg_steps": steps["ours"], "ours_instr_per_step": round(ours, 1),
            "C_instr_per_step": round(c, 1), "instr_ours_over_C": round(ours / c, 3)}


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        _child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))))
