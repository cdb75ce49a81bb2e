"""Arguments every front end takes, checked in one place: ``--set KEY=VALUE`` items
and their shorthands, cell sizes, seeds, extents and vertical exaggerations. Each
check raises :class:`~simcore.errors.CliError` with the flag's name and its range."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import NamedTuple

from ..errors import CliError, UserError
from ..fileio import check_output
from ..params import SEED_RANGE
from ..terrain import CELL_SIZE_RANGE

#: --extent: the world size a map may stand for (1 mm to 100,000 km)
EXTENT_RANGE = (1e-3, 1e8)
#: --vertical-exaggeration
VERTICAL_RANGE = (1e-3, 1e3)


def parse_set(items: list[str]) -> dict[str, object]:
    """``--set KEY=VALUE`` items as a mapping; a value is read as TOML (``5``, ``true``,
    ``"text"``), else kept as the text given."""
    out: dict[str, object] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--set {item!r}: expected KEY=VALUE, e.g. droplets.Kq=5")
        try:
            value = tomllib.loads(f"v = {text.strip()}")["v"]
        except (tomllib.TOMLDecodeError, RecursionError, KeyError):
            value = text.strip()
        out[key.strip()] = value
    return out


def overrides(items: list[str] | None, **flags: object) -> dict[str, object]:
    """The overrides of a command line: its ``--set KEY=VALUE`` items, then the flags
    that are shorthands for simulation keys (``seed``, ``particles``, ``real_size``;
    None: not given), which win."""
    out = parse_set(items or [])
    out.update({key: value for key, value in flags.items() if value is not None})
    return out


def cell_size(value: float | None, default: float = 1.0) -> float:
    """``--cell-size`` (``default`` when not given), within the terrain's range."""
    lo, hi = CELL_SIZE_RANGE
    value = default if value is None else value
    if not lo <= value <= hi:  # also refuses NaN
        raise CliError(f"--cell-size must be a positive number from {lo:g} to {hi:g}, "
                       f"got {value!r}")
    return value


def seed(value: int) -> int:
    lo, hi = SEED_RANGE
    if not lo <= value <= hi:
        raise CliError(f"--seed must be a whole number from {lo} to {hi} (64-bit), got "
                       f"{value}")
    return value


def particles(value: int | None) -> int | None:
    """``--particles`` (None: not given): 0 up to the presets' limit."""
    from ..formats.presets import SIMULATION_KEYS

    _, lo, hi, _doc = SIMULATION_KEYS["particles"]
    if value is not None and not lo <= value <= hi:
        raise CliError(f"--particles must be a whole number from {lo} to {hi:.0e} (the "
                       f"total particle count), got {value}")
    return value


def extent(value: float) -> float:
    lo, hi = EXTENT_RANGE
    if not lo <= value <= hi:  # also refuses NaN
        raise CliError(f"--extent must be a positive number of world units from {lo:g} to "
                       f"{hi:g} (the map's longer side, e.g. 5000 for 5 km), got "
                       f"{value!r}")
    return value


def vertical(value: float) -> float:
    lo, hi = VERTICAL_RANGE
    if not lo <= value <= hi:  # also refuses NaN
        raise CliError(f"--vertical-exaggeration must be a number from {lo:g} to {hi:g} "
                       "(how much the map's heights are exaggerated; 1 = true), got "
                       f"{value!r}")
    return value


class Tiles(NamedTuple):
    """``--tiles``: how many tiles across (columns) and down (rows)."""

    across: int
    down: int


def tiles(text: str) -> Tiles:
    """``--tiles XxY`` (columns x rows, e.g. 3x2: 3 across, 2 down) or ``N`` (N x N), as
    ``tile`` and ``engine-tiles`` both read it."""
    a, sep, b = str(text).lower().partition("x")
    try:
        x, y = int(a), int(b if sep else a)
    except ValueError:
        raise CliError(f"--tiles: use N (N x N tiles) or XxY (columns x rows, e.g. 3x2), "
                       f"got '{text}'") from None
    return Tiles(x, y)


def output(path: str, allowed: tuple[str, ...], estimate: int = 0, flag: str = "--output"
           ) -> Path:
    """Refuse a bad output path before any work: suffix, folder, writable, free space
    for ``estimate`` bytes."""
    try:
        return check_output(path, estimate, allowed)
    except UserError as exc:
        raise CliError(f"{flag}: {exc}") from None
