"""Benchmark table: ``python build.py bench [--quick] [--only NAME]``.

Every ``benchmarks/bench_*.py`` module provides ``run(quick: bool) -> list[dict]``;
each dict is one row (``name`` plus measured figures). The table is printed and
written to ``bench-results.json`` at the repository root.

A module listed in ``WITH_OPTIONS`` also takes options of its own: it provides
``add_arguments(group)`` and ``run(quick, options)`` gets the parsed arguments, e.g.
``python build.py bench --only resolution --sizes 256,512``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: benchmarks with options of their own (``add_arguments``, ``run(quick, options)``)
WITH_OPTIONS = ("bench_resolution",)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller grids and counts")
    ap.add_argument("--only", help="run only bench_NAME")
    ap.add_argument("--output", default=str(ROOT / "bench-results.json"))
    for name in WITH_OPTIONS:
        group = ap.add_argument_group(f"{name} options")
        importlib.import_module(f"benchmarks.{name}").add_arguments(group)
    args = ap.parse_args(argv)
    modules = sorted(p.stem for p in (ROOT / "benchmarks").glob("bench_*.py"))
    if args.only:
        modules = [m for m in modules if m == f"bench_{args.only}"]
    results: dict[str, list[dict]] = {}
    for name in modules:
        print(f"== {name}", flush=True)
        t0 = time.perf_counter()
        module = importlib.import_module(f"benchmarks.{name}")
        rows = module.run(args.quick, args) if name in WITH_OPTIONS else module.run(args.quick)
        results[name] = rows
        for row in rows:
            print("  " + "  ".join(f"{k}={_fmt(v)}" for k, v in row.items()), flush=True)
        print(f"   ({time.perf_counter() - t0:.0f} s)", flush=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "processor": platform.processor(), "time": time.strftime("%Y-%m-%d %H:%M")}
    Path(args.output).write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    print(f"wrote {args.output}")
    return 0


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


if __name__ == "__main__":
    sys.exit(main())
