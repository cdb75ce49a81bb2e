"""Save and load heightmaps (.npy, world units) and whole states (.npz)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .terrain import ALL_FIELDS, Terrain, TerrainError


def save_state(path: str | Path, terrain: Terrain, metadata: dict[str, Any]) -> Path:
    """Write every terrain array by name (cell units), ``height`` in world units and
    ``metadata`` (JSON text) to an .npz, atomically (a failed write leaves no file)."""
    meta = {**metadata, "cell_size": terrain.cell_size, "outflow": terrain.outflow,
            "units": "arrays in cell units (world / cell_size); 'height' in world units"}
    arrays = {**terrain.arrays(), "trees": terrain.trees, "height": terrain.world_height(),
              "metadata": np.array(json.dumps(meta))}
    return _atomic_write(Path(path), lambda f: np.savez_compressed(f, **arrays))


def save_heights(path: str | Path, heights: np.ndarray) -> Path:
    """Write a float64 heightmap .npy atomically."""
    return _atomic_write(Path(path), lambda f: np.save(f, np.asarray(heights, np.float64)))


def _atomic_write(path: Path, write) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_state(path: str | Path) -> tuple[Terrain, dict[str, Any]]:
    """Read an .npz written by :func:`save_state`; returns (terrain, metadata)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            if "metadata" not in data or "bedrock" not in data:
                raise TerrainError(f"{path}: not a Terrain Erosion state (.npz needs "
                                   "'bedrock' and 'metadata'); pass a .npy heightmap instead")
            meta = json.loads(str(data["metadata"]))
            arrays = {n: data[n] for n in ALL_FIELDS if n in data}
            trees = data["trees"] if "trees" in data else np.zeros((0, 3))
    except (OSError, ValueError) as exc:
        raise TerrainError(f"{path}: cannot read state: {exc}") from None
    cell_size = float(meta.get("cell_size", 1.0))
    bedrock = arrays.pop("bedrock")
    terrain = Terrain.from_heights(bedrock, cell_size, world_units=False, **arrays)
    terrain.outflow = float(meta.get("outflow", 0.0))
    terrain.trees = trees
    terrain.validate()
    return terrain, meta


def load_heights(path: str | Path) -> np.ndarray:
    """Read a 2-D heightmap from .npy (world units)."""
    path = Path(path)
    try:
        heights = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise TerrainError(f"{path}: cannot read heightmap: {exc}") from None
    if not isinstance(heights, np.ndarray):
        raise TerrainError(f"{path}: expected one array in a .npy file")
    return heights
