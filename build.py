#!/usr/bin/env python3
"""One entry point for the project; standard library only.

    python build.py setup    make .venv (Blender 5.0 line) and one venv per other Blender line
    python build.py test     the everyday lane: lint (ruff, mypy), then on the 5.0 line every
                             test but the long physics runs (marker `slow`) and the cold-cache
                             compiles (marker `cold`), on 4.2, 4.5, 5.2 the add-on tests
                             marked `compat`
    python build.py test --full
                             everything on every line: lint, every test on 5.0, every add-on
                             test on 4.2, 4.5 and 5.2 (what CI runs)
    python build.py bench    benchmark table, also written to bench-results.json
    python build.py demo     the main job: erode a terrain, write pictures under demo/
    python build.py package  extension zips with the numba/llvmlite wheels, under dist/

`test` and `setup` take ``--lines 4.2,5.0`` to work on some Blender lines only (the
default is all of them: a missing interpreter is an error, never a silent skip). Other
arguments of `test` go to pytest. `python build.py test --help` says more.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
WINDOWS = os.name == "nt"


@dataclass(frozen=True)
class Line:
    """One Blender release line we claim to support, tested with PyPI's bpy module."""

    name: str           # Blender version, e.g. "4.2"
    venv: Path
    requirements: Path
    python: str         # the Python that this Blender (and its bpy wheel) is built for

    @property
    def bin(self) -> Path:
        return self.venv / ("Scripts" if WINDOWS else "bin")

    @property
    def py(self) -> Path:
        return self.bin / ("python.exe" if WINDOWS else "python")


#: The 5.0 line is the primary one: lint, simcore tests, demo, bench and package run in it.
PRIMARY = Line("5.0", ROOT / ".venv", ROOT / "requirements-dev.txt", "3.11")
LINES = (
    Line("4.2", ROOT / ".venv-bpy42", ROOT / "requirements-bpy42.txt", "3.11"),
    Line("4.5", ROOT / ".venv-bpy45", ROOT / "requirements-bpy45.txt", "3.11"),
    PRIMARY,
    Line("5.2", ROOT / ".venv-bpy52", ROOT / "requirements-bpy52.txt", "3.13"),
)

def _say(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def _run(cmd: list[str | Path], **kw) -> int:
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, **kw)


def _candidates(version: str) -> list[list[str]]:
    """Commands that may run Python ``version``, most specific first."""
    found = []
    env = os.environ.get("TE_PYTHON" + version.replace(".", ""))
    if env:
        found.append([env])
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        found.append([sys.executable])
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    exe = "python.exe" if WINDOWS else "bin/python" + version
    found += [[p] for p in sorted(glob.glob(os.path.join(pyenv_root, "versions",
                                                         version + ".*", exe)), reverse=True)]
    found += [[p] for p in (shutil.which("python" + version), shutil.which("python3")) if p]
    if WINDOWS and shutil.which("py"):
        found.append(["py", "-" + version])
    return found


def _version_of(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run([*cmd, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def find_python(version: str, why: str) -> list[str]:
    """A command running Python ``version`` (checked by running it), or exit saying how
    to get one."""
    for cmd in _candidates(version):
        if _version_of(cmd) == version:
            return cmd
    key = "TE_PYTHON" + version.replace(".", "")
    others = ",".join(ln.name for ln in LINES if ln.python != version)
    sys.exit(f"error: Python {version} is needed ({why}) and none was found.\n"
             f"  Looked at ${key}, pyenv ($PYENV_ROOT/versions/{version}.*) and python{version} "
             f"on PATH{' and py -' + version if WINDOWS else ''}.\n"
             f"  Get one with `pyenv install {version}`, your system's packages "
             f"(e.g. apt install python{version}-venv) or python.org, or point {key} at it.\n"
             f"  To test the other lines meanwhile: python build.py test --lines {others}")


def setup_line(line: Line) -> None:
    """Create the line's venv and install its requirements; quick when nothing changed."""
    stamp = line.venv / ".requirements.sha256"
    digest = hashlib.sha256(line.requirements.read_bytes()).hexdigest()
    if line.py.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return
    if not line.py.exists() or _version_of([str(line.py)]) != line.python:
        py = find_python(line.python, f"bpy for Blender {line.name} is built for Python "
                                      f"{line.python} only")
        _say(f"creating {line.venv.name} (Blender {line.name}) with {' '.join(py)}")
        if _run([*py, "-m", "venv", "--clear", line.venv]) != 0:
            sys.exit(f"error: could not create {line.venv.name}")
    _say(f"installing {line.requirements.name} into {line.venv.name} "
         "(bpy is ~300 MB to download once; pip's cache keeps it)")
    if _run([line.py, "-m", "pip", "install", "--disable-pip-version-check", "-q",
             "-r", line.requirements]) != 0:
        sys.exit(f"error: pip install into {line.venv.name} failed; see the messages above")
    stamp.write_text(digest + "\n")
    _say(f"{line.venv.name} ready")


def _pick_lines(argv: list[str]) -> tuple[list[Line], list[str]]:
    """Split ``--lines a,b`` off argv."""
    rest, names = [], None
    it = iter(argv)
    for arg in it:
        if arg == "--lines":
            names = next(it, "")
        elif arg.startswith("--lines="):
            names = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    if names is None:
        return list(LINES), rest
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in {ln.name for ln in LINES}]
    if unknown:
        sys.exit(f"error: unknown Blender line(s) {', '.join(unknown)}; known: "
                 f"{', '.join(ln.name for ln in LINES)}")
    return [ln for ln in LINES if ln.name in wanted], rest


def setup(argv: list[str] | None = None) -> int:
    lines, _ = _pick_lines(argv or [])
    for line in lines:
        setup_line(line)
    return 0


def _counts(junit: Path) -> dict[str, int]:
    c = {"passed": 0, "failed": 0, "skipped": 0}
    if not junit.exists():
        return c
    for suite in ET.parse(junit).getroot().iter("testsuite"):
        tests, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
        failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        c["failed"] += failed
        c["skipped"] += skipped
        c["passed"] += tests - failed - skipped
    return c


TEST_HELP = """usage: python build.py test [--full | --fast] [--lines 4.2,5.0] [pytest arguments]

Lint, then pytest, then a matrix of the results per Blender line and the 15 slowest
tests of each line; fails if anything failed anywhere.

  lint          ruff over simcore, addon, tests, benchmarks, build.py and tools, and mypy
                over simcore (settings in pyproject.toml); a lint failure stops here
  (default)     the everyday lane, at most ten minutes from a warm setup: the 5.0 line
                (.venv) runs every test but the long physics runs and the ones that
                compile the core from an empty cache (-m "not slow and not cold");
                every other line runs the add-on tests marked `compat` (the ones that
                touch what differs between Blender lines) but the cold ones
  --full        everything: every test on the 5.0 line, every add-on test (-m blender)
                on every other line. What CI runs; every physics test is here.
  --fast        the inner loop: lint + the 5.0 line's part of the everyday lane
  --lines A,B   only these Blender lines (without 5.0: no simcore tests)

Other arguments go to pytest, e.g. -k dla, -x. Venvs are made or updated first
(python build.py setup)."""

#: how many of the slowest tests each line prints (pytest --durations)
SLOWEST = 15


def lint() -> int:
    """ruff over the sources and mypy over simcore, in the 5.0 line; 0 if both pass."""
    _say("ruff check")
    if _run([PRIMARY.bin / "ruff", "check", "simcore", "addon", "tests", "benchmarks",
             "build.py", "tools"]) != 0:
        return 1
    _say("mypy (simcore)")
    return 1 if _run([PRIMARY.bin / "mypy"]) != 0 else 0


def test(argv: list[str]) -> int:
    """Lint (always), then pytest per Blender line (module docstring and TEST_HELP for the
    lanes). Prints a matrix; fails if anything failed anywhere."""
    if "-h" in argv or "--help" in argv:
        print(TEST_HELP)
        return 0
    fast, full = "--fast" in argv, "--full" in argv
    if fast and full:
        sys.exit("error: --fast and --full are two lanes; give one")
    argv = [a for a in argv if a not in ("--fast", "--full")]
    lines, extra = _pick_lines(argv)
    if fast:
        if len(argv) != len(extra):
            sys.exit("error: --fast runs the 5.0 line only; leave out --lines")
        lines = [PRIMARY]
    started = time.perf_counter()
    setup_line(PRIMARY)
    for line in lines:
        setup_line(line)
    if lint() != 0:
        _say("lint failed")
        return 1
    results = ROOT / "build" / "test-results"
    results.mkdir(parents=True, exist_ok=True)
    rows, code = [], 0
    for line in sorted(lines, key=lambda ln: ln is not PRIMARY):
        everything = line is PRIMARY
        if everything:
            what, marks = (("all tests", []) if full else
                           ("all but slow and cold", ["-m", "not slow and not cold"]))
        elif full:
            what, marks = "add-on tests (-m blender)", ["-m", "blender"]
        else:
            what, marks = "add-on compat subset", ["-m", "blender and compat and not cold"]
        _say(f"pytest, Blender {line.name} ({line.venv.name}): {what}")
        junit = results / f"bpy{line.name.replace('.', '')}.xml"
        junit.unlink(missing_ok=True)
        t0 = time.perf_counter()
        rc = _run([line.py, "-m", "pytest", "tests", "-p", "no:cacheprovider",
                   f"--junitxml={junit}", f"--durations={SLOWEST}", "--durations-min=0",
                   *marks, *extra])
        if rc == 5:
            _say("pytest collected no tests: that is a failure")
        counts = _counts(junit)
        rows.append((line, what, counts, rc, time.perf_counter() - t0))
        code = code or (1 if rc == 5 else rc)
    _say("matrix")
    print(f"  {'Blender':8} {'venv':12} {'tests':26} {'passed':>6} {'failed':>6} "
          f"{'skipped':>7} {'time':>7}")
    for line, what, c, rc, secs in rows:
        print(f"  {line.name:8} {line.venv.name:12} {what:26} {c['passed']:6d} {c['failed']:6d} "
              f"{c['skipped']:7d} {secs:6.0f}s{'' if rc == 0 else '  FAILED'}")
    total = {k: sum(r[2][k] for r in rows) for k in ("passed", "failed", "skipped")}
    print(f"  {len(rows)} Blender lines in {time.perf_counter() - started:.0f} s")
    print(f"matrix: {total['passed']} passed, {total['failed']} failed, "
          f"{total['skipped']} skipped", flush=True)
    return code


def bench(extra: list[str]) -> int:
    setup_line(PRIMARY)
    return _run([PRIMARY.py, "-m", "benchmarks.bench", *extra])


def demo(extra: list[str]) -> int:
    setup_line(PRIMARY)
    return _run([PRIMARY.py, "-m", "tools.demo", *extra])


def package(extra: list[str]) -> int:
    setup_line(PRIMARY)
    return _run([PRIMARY.py, "-m", "tools.package", *extra])


def main(argv: list[str]) -> int:
    commands = {"setup": setup, "test": test, "bench": bench, "demo": demo,
                "package": package}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    if argv[0] == "setup" and ("-h" in argv or "--help" in argv):
        print(__doc__)  # before any venv is made
        return 0
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
