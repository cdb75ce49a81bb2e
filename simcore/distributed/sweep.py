"""Preset sweeps: every (input, preset, seed) as one dask task.

    python -m simcore sweep --preset default,alpine --seed 1..20 --input maps/*.npy \\
        --cell-size 30 --output sweep/

Each run writes ``NNNN_<input>_<preset>_s<seed>.npz`` (NNNN: the run's number; the
whole state, as ``erode`` writes it) and ``.png`` (its shaded relief, as ``shade`` draws
it) into the output folder; the table ``sweep.csv`` / ``sweep.json`` has one row per
run: its input, preset, seed, particles and parameters, status (``ok`` or ``failed``
with the reason), seconds and the realism report's figures after the run
(simcore.analysis.report). A run that fails (a bad input) is a row saying why; the
others go on. Presets, particles and seeds are checked before a cluster starts
(:func:`check_sweep`).

The files are one set: written into a staging folder inside the output folder and
swapped in for the earlier sweep's set (simcore/formats/staging.py) only when every
run has ended and one succeeded; otherwise the earlier set is left as it was, and the
runs finished before an interruption go to ``<output>.interrupted-<time>``. A run whose
worker dies on every try stops the sweep the same way (cluster.TaskFailed naming it).
The command holds ``sweep.lock`` in the output folder while it runs (one sweep per
folder) and refuses a disk without room for :func:`sweep_bytes` and a margin.

Command-line only (dask): the Blender extension never imports this module.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import io
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from ..analysis.report import ROWS
from ..errors import OutputPathError, UserError
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


TABLES = ("sweep.csv", "sweep.json")  # sweep.json last: the set's manifest
#: held in the output folder while a sweep runs (fileio.output_lock): one at a time
LOCK = "sweep.lock"
PARTIAL_TABLES = ("sweep-partial.csv", "sweep-partial.json")


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl+C during a sweep: the earlier set is as it was; ``message`` says where the
    runs that had finished are (``partial``; None when none had)."""

    def __init__(self, message: str, partial: Path | None) -> None:
        super().__init__(message)
        self.message = message
        self.partial = partial


def check_sweep(presets: list[str], seeds: list[int], particles: int | None = None,
                sets: dict[str, Any] | None = None) -> None:
    """Refuse, before a cluster starts, what would make every run fail the same way:
    an unknown preset (or one that does not load), a particle count or a seed out of
    range, a bad ``--set`` (UserError naming it)."""
    from ..formats.presets import find_preset
    from ..pipeline import arguments

    arguments.particles(particles)
    if not presets:
        raise SweepError("--preset: give at least one preset name")
    for name in presets:
        preset = find_preset(name)
        for seed in {min(seeds, default=0), max(seeds, default=0)}:
            preset.with_overrides({**(sets or {}), "seed": seed,
                                   **({"particles": particles} if particles is not None
                                      else {})})


def check_folder(out_dir: str | Path, estimate: int = 0) -> Path:
    """Create the output folder and make sure a file can be written in it (a read-only
    folder is refused now, not after the runs), and that its disk has room for
    ``estimate`` bytes and a margin (fileio.space_margin; ResourceError)."""
    from ..fileio import check_output, check_space, space_margin

    out = make_folder(out_dir, "--output")
    try:
        check_output(out / TABLES[-1])
    except UserError as exc:
        raise OutputPathError(f"--output: {exc}") from None
    check_space(out, out, estimate, space_margin(estimate))
    return out


#: bytes of a table row (sweep.csv and sweep.json), at most in practice
ROW_BYTES = 4096


def sweep_bytes(inputs: list[str], presets: list[str], seeds: list[int]) -> int:
    """Upper estimate of a sweep's files: each run's state (formats.states.state_bytes,
    with the most processes a preset enables) and preview (RGB, uncompressed) and its
    table rows; an input whose grid cannot be read counts only its rows (its runs
    fail)."""
    from ..formats.presets import find_preset
    from ..formats.states import grid_shape, state_bytes

    most = max((len(find_preset(p).enabled_params()) for p in presets), default=0)
    per_input = len(presets) * len(seeds)
    total = 0
    for path in inputs:
        shape = grid_shape(path)
        run = ROW_BYTES + (state_bytes(shape, most) + 3 * shape[0] * shape[1] + shape[0]
                           if shape is not None else 0)
        total += per_input * run
    return total


def sweep_seconds(inputs: list[str], presets: list[str], seeds: list[int],
                  cell_size: float | None = None, particles: int | None = None,
                  sets: dict[str, Any] | None = None) -> float:
    """Estimated seconds of work of every run of a sweep (simcore/engine/timing.py), each
    run's grid and scale taken as ``_run`` takes them (a state is loaded for its cell
    size and rounds); an input that cannot be read counts nothing (its runs fail)."""
    import types

    from ..engine.timing import plan_seconds
    from ..formats.presets import find_preset
    from ..formats.states import grid_shape, load_state
    from ..pipeline.start import real_scale

    total = 0.0
    for path in inputs:
        try:
            if path.lower().endswith(".npz"):
                state, meta = load_state(path)
                shape, cell = state.shape, state.cell_size
            else:
                found = grid_shape(path)
                if found is None:
                    continue
                shape, cell, meta = found, cell_size or 1.0, {}
            for name in presets:
                for seed in seeds:
                    preset = find_preset(name).with_overrides(
                        {**(sets or {}), "seed": seed,
                         **({"particles": particles} if particles else {})})
                    world = cell * (1.0 if meta else real_scale(preset, shape, cell))
                    done = (int(meta.get("rounds_done", 0))
                            if meta and meta.get("seed") == preset.seed else 0)
                    total += plan_seconds(preset.enabled_params(), shape, preset.work(
                        types.SimpleNamespace(shape=shape, cell_size=world)), done)
        except (UserError, OSError, ValueError, MemoryError):
            continue  # its runs fail and say why
    return total


def earlier_set(out: Path) -> list[str]:
    """The files of the sweep already in ``out``: its table (manifest first) and the
    states and previews its sweep.json names (plain file names only)."""
    from ..formats.staging import listed_names

    return list(dict.fromkeys([*reversed(TABLES),
                               *listed_names(out, TABLES[-1], "runs", ("state", "preview"))]))


def _write_tables(folder: Path, rows: list[dict[str, Any]], names: tuple[str, str]) -> None:
    from ..fileio import atomic_write

    atomic_write(folder / names[0], lambda f: f.write(table_csv(rows)))
    atomic_write(folder / names[1], lambda f: f.write(
        json.dumps({"columns": list(COLUMNS), "runs": rows}, indent=1).encode()))


def _keep_partial(stage_path: Path, out: Path, finished: dict[int, dict[str, Any]]
                  ) -> Path | None:
    """Move the runs that finished before an interruption, with their own table
    (sweep-partial.csv / .json), to ``<output>.interrupted-<time>`` beside the output
    folder (inside it when that cannot be made); None when no run had finished."""
    ok = [finished[k] for k in sorted(finished) if finished[k].get("status") == "ok"]
    if not ok:
        return None
    wanted = {r[key] for r in ok for key in ("state", "preview")}
    for entry in list(stage_path.iterdir()):  # a run cut off mid-way: not in the table
        if entry.name not in wanted:
            with contextlib.suppress(OSError):
                entry.unlink()
    _write_tables(stage_path, [finished[k] for k in sorted(finished)], PARTIAL_TABLES)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    resolved = out.resolve()
    for target in (resolved.with_name(f"{resolved.name}.interrupted-{stamp}"),
                   resolved / f"sweep.interrupted-{stamp}"):
        try:
            if not target.exists():
                os.replace(stage_path, target)
                return target
        except OSError:
            continue
    return None


def sweep(inputs: list[str], presets: list[str], seeds: list[int], out_dir: str | Path,
          client: Any, cell_size: float | None = None, particles: int | None = None,
          sets: dict[str, Any] | None = None, quiet: bool = False) -> list[dict[str, Any]]:
    """Run every (input, preset, seed) as a task on ``client`` and return the rows.

    The states, previews and table (``sweep.csv``, ``sweep.json``) are written into a
    staging folder inside ``out_dir`` and replace the earlier sweep's set there (its
    table and the files it names) in one commit (simcore/formats/staging.py) once every
    run has ended and at least one succeeded. A sweep where every run failed, or that
    fails or is interrupted, leaves the earlier set as it was; the runs that finished
    before an interruption go to ``<output>.interrupted-<time>`` (SweepInterrupted
    says where)."""
    from ..formats.staging import Staging
    from .cluster import TaskFailed, run_tasks

    out = check_folder(out_dir)
    combos = [(i, p, s) for i in inputs for p in presets for s in seeds]
    if not combos:
        raise SweepError("nothing to run: give --input, --preset and --seed")
    if len(combos) > MAX_RUNS:
        raise SweepError(f"{len(combos)} runs: more than {MAX_RUNS}")
    finished: dict[int, dict[str, Any]] = {}
    with Staging(out) as stage:
        items = [(k, i, p, s, str(stage.path.resolve()), cell_size, particles,
                  dict(sets or {})) for k, (i, p, s) in enumerate(combos)]
        try:
            rows = run_tasks(client, run_one, items, "sweep", quiet=quiet,
                             on_result=finished.__setitem__,
                             names=[f"run {k} ({i}, {p}, seed {s})"
                                    for k, (i, p, s) in enumerate(combos)])
        except BaseException as exc:
            partial = _keep_partial(stage.path, out, finished)
            if isinstance(exc, TaskFailed):  # one line: the run, why, where the rest is
                kept = (f"the runs that had finished are in {partial}" if partial else
                        "no run had finished")
                raise TaskFailed(f"{exc}; the sweep stopped; {out} is as it was; {kept}"
                                 ) from None
            if isinstance(exc, KeyboardInterrupt):
                where = (f"the {sum(r['status'] == 'ok' for r in finished.values())} runs "
                         f"that had finished are in {partial}" if partial else
                         "no run had finished")
                raise SweepInterrupted(f"sweep interrupted; {out} is as it was; {where}",
                                       partial) from None
            if partial is not None:
                print(f"sweep stopped; {out} is as it was; the runs that had finished "
                      f"are in {partial}", file=sys.stderr)
            raise
        if not any(r["status"] == "ok" for r in rows):
            return rows  # nothing to show: the earlier set stays
        _write_tables(stage.path, rows, TABLES)
        new = [r[key] for r in rows if r["status"] == "ok" for key in ("state", "preview")]
        stage.commit([*new, *TABLES], earlier_set(out))
    return rows
