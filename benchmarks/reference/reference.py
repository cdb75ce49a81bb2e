"""Run the C port of the article's droplet loop (droplet_ref.c) as a benchmark comparator.

stdlib + numpy only. The binary is built with ``gcc -O3 -march=native`` into a
per-user folder under the system temp directory, once per version of the C source.

    from benchmarks.reference.reference import reference_available, run_reference
    if reference_available():
        info = run_reference(heights, droplets=100_000, seed=1)
        info["ns_per_step"], info["steps"] / info["droplets"]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .compile import compile_cached

SOURCE = Path(__file__).resolve().with_name("droplet_ref.c")
CFLAGS = ["-O3", "-march=native", "-std=c99"]


def reference_available() -> bool:
    """True when gcc is on PATH (the C comparator can be built)."""
    return shutil.which("gcc") is not None


def build_reference() -> Path:
    """Compile droplet_ref.c unless this version of it is already built."""
    return compile_cached(SOURCE, "gcc", CFLAGS)


def run_reference(heights: np.ndarray, droplets: int, seed: int = 1, *,
                  return_heights: bool = False) -> dict:
    """Run ``droplets`` droplets of the C port on ``heights`` and return its JSON report.

    ``heights`` is a (size, size) array in cell units (one unit = one cell spacing);
    size must be a power of two (the article wraps indices with a mask). It is not
    modified. The report has size, droplets, steps (total droplet steps), seconds
    (wall time of the droplet loop only), ns_per_step, plus long_paths, random_dirs,
    removed, deposited (sums of the per-cell erosion record) and finite. With
    ``return_heights=True`` the eroded float32 heights are added as "heights".
    """
    heights = np.asarray(heights)
    if heights.ndim != 2 or heights.shape[0] != heights.shape[1]:
        raise ValueError(f"heights must be square, got shape {heights.shape}")
    size = heights.shape[0]
    if size < 2 or size & (size - 1):
        raise ValueError(f"size must be a power of two, got {size}")
    binary = build_reference()
    with tempfile.TemporaryDirectory(prefix="droplet_ref_") as tmpdir:
        src = Path(tmpdir) / "heights.f32"
        out = Path(tmpdir) / "eroded.f32"
        np.ascontiguousarray(heights, dtype="<f4").tofile(src)
        cmd = [str(binary), str(src), str(size), str(int(droplets)), str(int(seed))]
        if return_heights:
            cmd.append(str(out))
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"droplet_ref failed ({result.returncode}): {result.stderr}")
        info = json.loads(result.stdout.strip().splitlines()[-1])
        if return_heights:
            info["heights"] = np.fromfile(out, dtype="<f4").reshape(size, size)
    return info
