#!/usr/bin/env python3
"""One entry point for the project; standard library only.

    python build.py setup    make .venv (Python 3.11) with the pinned tools
    python build.py test     lint + pytest (runs setup when needed)
    python build.py bench    benchmark table, also written to bench-results.json
    python build.py demo     the main job: erode a terrain, write pictures under demo/
    python build.py package  extension zips with the numba/llvmlite wheels, under dist/
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
REQUIREMENTS = ROOT / "requirements-dev.txt"
STAMP = VENV / ".requirements.sha256"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")


def _say(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def _run(cmd: list[str | Path], **kw) -> int:
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, **kw)


def _find_python311() -> str:
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    for name in ("python3.11", "py -3.11"):
        found = shutil.which(name.split()[0])
        if found:
            return found
    sys.exit("error: Python 3.11 is needed (bpy 5.0.1 wheels are built for 3.11 only); "
             "install it and run this script with it")


def setup() -> None:
    """Create .venv and install requirements-dev.txt; quick when nothing changed."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if PY.exists() and STAMP.exists() and STAMP.read_text().strip() == digest:
        return
    if not PY.exists():
        py = _find_python311()
        _say(f"creating {VENV.name} with {py}")
        if py == sys.executable:
            venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
        elif _run([py, "-m", "venv", "--clear", VENV]) != 0:
            sys.exit("error: could not create the virtual environment")
    _say("installing pinned packages (bpy is ~1 GB on a fresh machine; cached later)")
    if _run([PY, "-m", "pip", "install", "--disable-pip-version-check", "-q",
             "-r", REQUIREMENTS]) != 0:
        sys.exit("error: pip install failed; see the messages above")
    STAMP.write_text(digest + "\n")
    _say("environment ready")


def test(extra: list[str]) -> int:
    setup()
    _say("ruff check")
    if _run([BIN / "ruff", "check", "simcore", "addon", "tests", "benchmarks",
             "build.py"]) != 0:
        _say("lint failed")
        return 1
    _say("pytest")
    code = _run([PY, "-m", "pytest", "tests", *extra])
    if code == 5:
        _say("pytest collected no tests: that is a failure")
        return 1
    return code


def bench(extra: list[str]) -> int:
    setup()
    return _run([PY, ROOT / "benchmarks" / "bench.py", *extra])


def demo(extra: list[str]) -> int:
    setup()
    return _run([PY, ROOT / "tools" / "demo.py", *extra])


def package(extra: list[str]) -> int:
    setup()
    return _run([PY, ROOT / "tools" / "package.py", *extra])


def main(argv: list[str]) -> int:
    commands = {"setup": lambda a: setup() or 0, "test": test, "bench": bench, "demo": demo,
                "package": package}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
