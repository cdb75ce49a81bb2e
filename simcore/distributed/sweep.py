"""Preset sweeps: every (input, preset, seed) as one dask task.

    python -m simcore sweep --preset default,alpine --seed 1..20 --input maps/*.npy \\
        --cell-size 30 --output sweep/

Each run writes ``NNNN_<input>_<preset>_s<seed>.npz`` (NNNN: the run's number; the
whole state, as ``erode`` writes it) and ``.png`` (its shaded relief, as ``shade`` draws
it) into the output folder; the table ``sweep.csv`` / ``sweep.json`` has one row per
run: its input, preset, seed, particles and parameters, status (``ok`` or ``failed``
with the reason), seconds and the realism report's figures after the run
(simcore.analysis.report). A run that fails (a bad input, a preset that does not load) is a row
saying why; the others go on.

Command-line only (dask): the Blender extension never imports this module.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import re
import time
from pathlib import Path
from typing import Any

from ..analysis.report import ROWS
from ..errors import UserError
from ..fileio import make_folder
from ..params import SEED_RANGE


class SweepError(UserError):
    """A sweep's arguments are wrong (nothing was run)."""


#: the realism figures in the table (simcore.analysis.report.ROWS), after the run
FIGURES = tuple(key for key, _, _ in ROWS)
COLUMNS = ("run", "input", "preset", "seed", "status", "error", "seconds", "particles",
           "rows", "cols", "cell_size", "state", "preview") + FIGURES + ("params",)
MAX_RUNS = 100_000


def parse_seeds(text: str) -> list[int]:
    """``1..20``, ``1,4,9``, ``3`` or a mix (``1..4,10``) -> the seeds, in order."""
    seeds: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)\.\.(\d+)", part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo or hi - lo >= MAX_RUNS:
                raise SweepError(f"--seed {text}: a range is LOW..HIGH with LOW <= HIGH "
                                 f"(at most {MAX_RUNS} seeds), got {part}")
            seeds.extend(range(lo, hi + 1))
        elif re.fullmatch(r"\d+", part):
            seeds.append(int(part))
        else:
            raise SweepError(f"--seed {text}: use seeds and ranges such as 1..20 or 1,4,9 "
                             f"(non-negative integers), got '{part}'")
    if any(s > SEED_RANGE[1] for s in seeds):
        raise SweepError(f"--seed {text}: seeds must be at most {SEED_RANGE[1]}")
    return list(dict.fromkeys(seeds))


def expand_inputs(patterns: list[str]) -> list[str]:
    """Input paths: each argument as given, or the files its glob pattern matches
    (quoted patterns); a pattern matching nothing stays as it is, to be reported."""
    out: list[str] = []
    for p in patterns:
        matched = sorted(glob.glob(p)) if glob.has_magic(p) else []
        out.extend(matched or [p])
    return list(dict.fromkeys(out))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "run"


def run_one(index: int, input_path: str, preset_name: str, seed: int, out_dir: str,
            cell_size: float | None, particles: int | None,
            sets: dict[str, Any]) -> dict[str, Any]:
    """One run of the sweep (a dask task; deterministic: a re-run writes the same
    files). Never raises: a failure is a row with status 'failed' and the reason."""
    row: dict[str, Any] = {"run": index, "input": input_path, "preset": preset_name,
                           "seed": seed, "status": "failed", "error": ""}
    t0 = time.perf_counter()
    try:
        row.update(_run(input_path, preset_name, seed, Path(out_dir), cell_size,
                        particles, sets, index))
        row["status"] = "ok"
    except (UserError, OSError, ValueError, MemoryError) as exc:
        row["error"] = str(exc) or type(exc).__name__
    except Exception as exc:  # noqa: BLE001 - one bad run must not stop the sweep
        row["error"] = f"{type(exc).__name__}: {exc}"
    row["seconds"] = round(time.perf_counter() - t0, 3)
    return row


def _run(input_path: str, preset_name: str, seed: int, out: Path, cell_size: float | None,
         particles: int | None, sets: dict[str, Any], index: int) -> dict[str, Any]:
    from ..analysis.report import landform_figures
    from ..engine.simulation import Simulation
    from ..formats.images import save_png, shaded_relief
    from ..formats.presets import find_preset
    from ..formats.states import save_state
    from ..pipeline.start import INPUT_SUFFIXES, load_start

    preset = find_preset(preset_name).with_overrides(
        {**sets, "seed": seed, **({"particles": particles} if particles else {})})
    if not input_path.lower().endswith(INPUT_SUFFIXES):
        raise SweepError(f"{input_path}: use a .npy heightmap or an .npz state")
    # as erode makes it; --cell-size is for the .npy inputs among them
    heightmap = input_path.lower().endswith(".npy")
    start = load_start(input_path, preset, cell_size=cell_size if heightmap else None)
    terrain, rounds_done = start.terrain, start.rounds_done
    rows, cols = terrain.shape
    sim = Simulation(terrain, preset.enabled_params(), seed=preset.seed,
                     particles=preset.work(terrain), rounds_done=rounds_done)
    sim.run()
    meta = sim.metadata()
    meta["preset"] = preset.name
    base = f"{index:04d}_{_slug(Path(input_path).stem)}_{_slug(preset_name)}_s{seed}"
    state = out / f"{base}.npz"
    preview = out / f"{base}.png"
    save_state(state, terrain, meta)
    pool = terrain.pool if terrain.pool.any() else None
    save_png(preview, shaded_relief(terrain.height(), pool=pool))
    figures = landform_figures(terrain.height(), terrain.cell_size, terrain.pool)
    return {"particles": sim.particles_done, "rows": rows, "cols": cols,
            "cell_size": terrain.cell_size, "state": state.name, "preview": preview.name,
            **figures, "params": meta["processes"]}


def table_csv(rows: list[dict[str, Any]]) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for row in rows:
        flat = {k: row.get(k, "") for k in COLUMNS}
        flat["params"] = json.dumps(row.get("params", {}), sort_keys=True)
        for k in FIGURES:
            v = flat[k]
            if isinstance(v, float):
                flat[k] = f"{v:.6g}"
        w.writerow(flat)
    return buf.getvalue().encode()


def sweep(inputs: list[str], presets: list[str], seeds: list[int], out_dir: str | Path,
          client: Any, cell_size: float | None = None, particles: int | None = None,
          sets: dict[str, Any] | None = None, quiet: bool = False) -> list[dict[str, Any]]:
    """Run every (input, preset, seed) as a task on ``client``; write the table
    (``sweep.csv``, ``sweep.json``) into ``out_dir`` and return its rows."""
    from ..fileio import atomic_write
    from .cluster import run_tasks

    out = make_folder(out_dir, "--output")
    combos = [(i, p, s) for i in inputs for p in presets for s in seeds]
    if not combos:
        raise SweepError("nothing to run: give --input, --preset and --seed")
    if len(combos) > MAX_RUNS:
        raise SweepError(f"{len(combos)} runs: more than {MAX_RUNS}")
    items = [(k, i, p, s, str(out.resolve()), cell_size, particles, dict(sets or {}))
             for k, (i, p, s) in enumerate(combos)]
    rows = run_tasks(client, run_one, items, "sweep", quiet=quiet)
    atomic_write(out / "sweep.csv", lambda f: f.write(table_csv(rows)))
    atomic_write(out / "sweep.json", lambda f: f.write(
        json.dumps({"columns": list(COLUMNS), "runs": rows}, indent=1).encode()))
    return rows
