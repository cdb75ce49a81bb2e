"""``python -m simcore sweep``: every (input, preset, seed) as one task on a dask
cluster (simcore/distributed/sweep.py)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..pipeline import arguments
from .cluster import add_cluster_flags


def add_parser(sub) -> None:
    w = sub.add_parser(
        "sweep", help="every combination of presets, seeds and inputs as tasks on "
        "dask.distributed: states, shaded previews and a table (CSV, JSON)",
        description="Run every (input, preset, seed) as one task on a dask cluster. "
        "Writes NNNN_<input>_<preset>_s<seed>.npz and .png into --output, and sweep.csv "
        "/ sweep.json: each run's parameters, status, seconds and realism figures after "
        "the run. A failed run (a bad input) is a row with its reason; the others go "
        "on; the exit code is then 1. The results replace the earlier sweep's in "
        "--output (its table and the files it names) only once every run has ended "
        "and one succeeded; an interrupted sweep leaves them as they were and puts "
        "the runs it finished in <output>.interrupted-<time>.")
    w.add_argument("--preset", required=True, help="preset names or .toml paths, comma "
                   "separated (default,alpine)")
    w.add_argument("--seed", required=True, help="seeds: 1..20, 1,4,9 or a mix")
    w.add_argument("--input", required=True, nargs="+",
                   help=".npy heightmaps or .npz states (globs such as 'maps/*.npy')")
    w.add_argument("--output", required=True, help="folder for the results and table")
    w.add_argument("--cell-size", type=float, help="cell size of .npy inputs (1)")
    w.add_argument("--particles", type=int, help="override the total particle count")
    w.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a parameter of every run, e.g. droplets.Kq=5")
    add_cluster_flags(w)
    w.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..distributed.cluster import check_cluster_args, client
    from ..distributed.sweep import (
        LOCK,
        SweepInterrupted,
        check_folder,
        check_sweep,
        expand_inputs,
        parse_seeds,
        sweep,
        sweep_bytes,
        sweep_seconds,
    )
    from ..engine.timing import note
    from ..fileio import output_lock

    # every argument before a cluster starts: one line and exit 2 for a mistake
    presets = [p.strip() for p in args.preset.split(",") if p.strip()]
    seeds = parse_seeds(args.seed)
    inputs = expand_inputs(args.input)
    if args.cell_size is not None:
        arguments.cell_size(args.cell_size)
    sets = arguments.overrides(args.set)
    check_sweep(presets, seeds, args.particles, sets)
    check_cluster_args(args.workers, args.scheduler, args.threads)
    out = check_folder(args.output, sweep_bytes(inputs, presets, seeds))
    runs = len(inputs) * len(presets) * len(seeds)
    estimate = note(sweep_seconds(inputs, presets, seeds, args.cell_size, args.particles,
                                  sets), what=f" in {runs} run{'s' if runs != 1 else ''}")
    if estimate and not args.quiet:  # before the cluster starts
        print(estimate, file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:  # one sweep per --output at a time: the lock file sweep.lock inside it
        with output_lock(out, lock_path=out / LOCK), \
                client(workers=args.workers, scheduler=args.scheduler,
                       threads=args.threads, quiet=args.quiet) as c:
            rows = sweep(inputs, presets, seeds, out, c, cell_size=args.cell_size,
                         particles=args.particles, sets=sets, quiet=args.quiet)
    except SweepInterrupted as exc:
        print(exc.message, file=sys.stderr)
        return 130
    failed = [r for r in rows if r["status"] != "ok"]
    for r in failed:
        print(f"failed: run {r['run']} ({r['input']}, {r['preset']}, seed {r['seed']}): "
              f"{r['error']}", file=sys.stderr)
    if len(failed) == len(rows):
        print(f"no run succeeded; {out} is left as it was", file=sys.stderr)
    elif not args.quiet:
        print(f"{len(rows) - len(failed)} of {len(rows)} runs done in "
              f"{time.perf_counter() - t0:.1f}s; table: {Path(out) / 'sweep.csv'}",
              file=sys.stderr)
    return 0 if not failed else 1
