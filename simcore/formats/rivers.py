"""Rivers as data: the ``<name>_rivers.json`` file of a map export.

One JSON object: ``threshold`` (the stream value, 0..1, from which a cell is a channel),
``units`` (``"local"``: the object's local units) and ``rivers``, a list of polylines
from source to mouth, highest heads first, each ``{"points": [[x, y, z], ...],
"flow": [...]}``: a point per channel cell at its water surface (ground plus standing
water), and the stream value (0..1, six decimals) at each point.

:func:`polylines` traces them (simcore.analysis.channels.stream_polylines), :func:`write`
writes the file, :func:`read` reads one back and checks every value. No bpy here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TypeGuard

import numpy as np

from ..analysis.channels import stream_polylines
from ..errors import InputFileError
from ..fileio import atomic_write

UNITS = "local"
#: the shortest river written (points)
MIN_POINTS = 4


def polylines(stream: np.ndarray, surface: np.ndarray, threshold: float, x0: float,
              y0: float, cell_x: float, cell_y: float) -> list[dict]:
    """The rivers of a (rows, cols) ``stream`` grid (row 0 = lowest y) over the water
    ``surface``, as the file's entries: local coordinates of a grid whose vertex (0, 0)
    is at (``x0``, ``y0``)."""
    lines = stream_polylines(stream, surface, threshold, MIN_POINTS, cell_x, cell_y)
    return [{"points": [[x0 + c * cell_x, y0 + r * cell_y, float(surface[r, c])]
                        for r, c in cells],
             "flow": [round(float(f), 6) for f in flow]} for cells, flow in lines]


def dumps(threshold: float, rivers: list[dict]) -> str:
    return json.dumps({"threshold": threshold, "units": UNITS, "rivers": rivers})


def write(path: Path, threshold: float, rivers: list[dict]) -> Path:
    """Write the rivers file (all or nothing)."""
    text = dumps(threshold, rivers)
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def _number(value: object) -> TypeGuard[int | float]:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def read(path: Path) -> tuple[float, list[dict]]:
    """The threshold and the rivers of a rivers file; InputFileError naming the file
    and what is wrong when it is not one (not JSON, a missing key, a point that is not
    three finite numbers, flows that do not match the points)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise InputFileError(f"cannot read the rivers {path}: {exc}") from None

    def bad(why: str) -> InputFileError:
        return InputFileError(f"{path} is not a Terrain Erosion rivers file: {why}")

    if not isinstance(data, dict):
        raise bad("it is not a JSON object")
    threshold, rivers = data.get("threshold"), data.get("rivers")
    if not _number(threshold) or not 0 <= threshold <= 1:
        raise bad(f"'threshold' is {threshold!r}, not a number from 0 to 1")
    if data.get("units") != UNITS:
        raise bad(f"'units' is {data.get('units')!r}, not {UNITS!r}")
    if not isinstance(rivers, list):
        raise bad("'rivers' is not a list")
    for i, river in enumerate(rivers):
        points = river.get("points") if isinstance(river, dict) else None
        flow = river.get("flow") if isinstance(river, dict) else None
        if not isinstance(points, list) or not isinstance(flow, list):
            raise bad(f"river {i} has no 'points' and 'flow' lists")
        if len(points) != len(flow):
            raise bad(f"river {i} has {len(points)} points but {len(flow)} flows")
        if not all(isinstance(p, list) and len(p) == 3 and all(map(_number, p))
                   for p in points):
            raise bad(f"a point of river {i} is not three finite numbers [x, y, z]")
        if not all(_number(f) for f in flow):
            raise bad(f"a flow of river {i} is not a finite number")
    return float(threshold), rivers
