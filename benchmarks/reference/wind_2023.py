"""Build and run the seed author's 2023 SimpleWindErosion loop as a benchmark comparator.

Their code is not part of this repository. At benchmark time it is taken from, in order:
``$SIMPLE_WIND_EROSION`` (a checkout), a local mirror fetched by the tooling
(``/work/.mirror/weigert+SimpleWindErosion/repo``, a bare git directory), or ``git
clone https://github.com/weigert/SimpleWindErosion``; its ``source/`` folder is copied
into a temp folder, the map side (``quad::tilesize``, a compile-time constant) is set
there, and ``wind_2023_harness.cpp`` (ours: renderer stubs, file I/O, timing) is built
against it with ``g++ -O3 -std=c++20``. Needs g++ and the GLM headers (libglm-dev).

    from benchmarks.reference.wind_2023 import available, run_2023
    info = run_2023(heights_cells, particles, seed=1)  # dict: ms, particles, heights
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

HARNESS = Path(__file__).resolve().with_name("wind_2023_harness.cpp")
MIRROR = Path("/work/.mirror/weigert+SimpleWindErosion/repo")
URL = "https://github.com/weigert/SimpleWindErosion"
MAPSCALE = 80.0  # the 2023 code's height unit in cells (quad::mapscale)
FLAGS = ["-O3", "-std=c++20"]


def _folder() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"wind_2023_{uid}"


def _source(dest: Path) -> None:
    """Copy the 2023 code's ``source/`` folder into ``dest``."""
    env = os.environ.get("SIMPLE_WIND_EROSION")
    if env and (Path(env) / "source").is_dir():
        shutil.copytree(Path(env) / "source", dest / "source", dirs_exist_ok=True)
        return
    if MIRROR.is_dir():
        archive = subprocess.run(["git", f"--git-dir={MIRROR}", "archive", "HEAD", "source"],
                                 capture_output=True, check=True)
        subprocess.run(["tar", "x", "-C", str(dest)], input=archive.stdout, check=True)
        return
    clone = dest / "clone"
    subprocess.run(["git", "clone", "--depth", "1", URL, str(clone)], check=True,
                   capture_output=True)
    shutil.copytree(clone / "source", dest / "source", dirs_exist_ok=True)


def available() -> bool:
    """True when g++ and GLM are present (the source is fetched on first build)."""
    return shutil.which("g++") is not None and Path("/usr/include/glm/glm.hpp").exists()


def build(side: int) -> Path:
    """The harness built against the 2023 code for a ``side``² map (cached)."""
    folder = _folder() / str(side)
    binary = folder / "wind_2023"
    if binary.exists() and binary.stat().st_mtime >= HARNESS.stat().st_mtime:
        return binary
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "source").is_dir():
        _source(folder)
    cellpool = folder / "source" / "cellpool.h"
    text = cellpool.read_text()
    start = text.index("const int tilesize = ")
    end = text.index(";", start)
    cellpool.write_text(text[:start] + f"const int tilesize = {int(side)}" + text[end:])
    tmp = folder / f"wind_2023.{os.getpid()}.tmp"
    result = subprocess.run(["g++", *FLAGS, f"-I{folder}", "-o", str(tmp), str(HARNESS)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"building the 2023 wind code failed:\n{result.stderr[-2000:]}")
    os.replace(tmp, binary)
    return binary


def gaussian_hill(side: int) -> np.ndarray:
    """The 2023 code's own start: a Gaussian sand hill at (side/4, side/2), 0..0.5 of its
    height unit, returned in cell units (x 80), rows along its wind (+x)."""
    x = np.arange(side)[:, None] / side
    y = np.arange(side)[None, :] / side
    g = np.exp(-((x - 0.25) ** 2 + (y - 0.5) ** 2) * side * 0.2)
    return 0.5 * (g - g.min()) / (g.max() - g.min()) * MAPSCALE


def run_2023(heights: np.ndarray, particles: int, seed: int = 1) -> dict:
    """Fly ``particles`` of the 2023 code over a square map of sand ``heights`` (cell
    units; its wind blows towards increasing row, our direction 90°). Returns its
    report plus the final ``heights`` (cell units)."""
    side = heights.shape[0]
    binary = build(side)
    per_frame = 8 * side  # the 2023 app's particles per frame
    frames = max(1, round(particles / per_frame))
    with tempfile.TemporaryDirectory(prefix="wind_2023_") as tmp:
        src, out = Path(tmp) / "h.f32", Path(tmp) / "out.f32"
        (np.asarray(heights) / MAPSCALE).astype("<f4").tofile(src)
        result = subprocess.run([str(binary), str(src), str(side), str(per_frame),
                                 str(frames), str(seed), str(out)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"wind_2023 failed: {result.stderr[-1000:]}")
        info = json.loads(result.stdout.strip().splitlines()[-1])
        info["heights"] = np.fromfile(out, "<f4").reshape(side, side) * MAPSCALE
    return info
