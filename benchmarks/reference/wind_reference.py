"""Run the C++ port of the article's wind loop (wind_ref.cpp) as a benchmark comparator.

stdlib + numpy only. Built with ``g++ -O3`` into a per-user folder under the system temp
directory, rebuilt only when the source is newer than the binary.

    from reference.wind_reference import reference_available, run_reference
    if reference_available():
        info = run_reference(heights, sediment, particles=250, batches=1, seed=1)
        info["ms"], info["steps"]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .compile import compile_cached

SOURCE = Path(__file__).resolve().with_name("wind_ref.cpp")
CXXFLAGS = ["-O3", "-std=c++17"]


def reference_available() -> bool:
    """True when g++ is on PATH (the C++ comparator can be built)."""
    return shutil.which("g++") is not None


def build_reference() -> Path:
    """Compile wind_ref.cpp if the binary is missing or older than the source."""
    return compile_cached(SOURCE, "g++", CXXFLAGS)


def run_reference(heights: np.ndarray, sediment: np.ndarray, particles: int,
                  batches: int = 1, seed: int = 1) -> dict:
    """Run ``batches`` x ``particles`` wind particles of the C++ port on a square map
    (bedrock ``heights`` and ``sediment`` in cell units; not modified). Returns its JSON
    report: size, particles, batches, steps, ms (erosion loop only), finite."""
    heights = np.asarray(heights)
    if heights.ndim != 2 or heights.shape[0] != heights.shape[1]:
        raise ValueError(f"heights must be square, got shape {heights.shape}")
    binary = build_reference()
    with tempfile.TemporaryDirectory(prefix="wind_ref_") as tmpdir:
        paths = []
        for name, arr in (("h.f32", heights), ("s.f32", sediment)):
            path = Path(tmpdir) / name
            np.ascontiguousarray(arr, dtype="<f4").tofile(path)
            paths.append(str(path))
        cmd = [str(binary), *paths, str(heights.shape[0]), str(int(particles)),
               str(int(batches)), str(int(seed))]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"wind_ref failed ({result.returncode}): {result.stderr}")
        return json.loads(result.stdout.strip().splitlines()[-1])
