"""Parameter dataclasses: one field helper that carries default, range, unit and doc.

Every process declares a frozen dataclass whose fields are made with :func:`param`.
The metadata is the single source of truth for defaults and ranges: validation,
presets, the CLI's ``--set`` and the Blender add-on's properties all read it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from .errors import UserError

#: Every seed of the project (presets, states, ridges, the command line, the add-on):
#: 64-bit, as the counter-based random streams take them.
SEED_RANGE = (0, 2**63 - 1)


class ParameterError(UserError):
    """A parameter value is unknown, of the wrong type or out of its documented range."""


def param(default: Any, lo: float | None = None, hi: float | None = None,
          unit: str = "", doc: str = "", soft_hi: float | None = None,
          legacy: bool = False, replaces: str | None = None) -> Any:
    """A dataclass field with its allowed range ``[lo, hi]`` (inclusive), unit and doc.

    ``soft_hi`` is the upper end a UI slider should offer; ``hi`` is the hard limit.

    ``legacy``: an old key, kept so that older presets, saved settings and ``--set``
    load (validated like any other) and hidden everywhere else: a UI shows it only where
    it is not at its default (where an old file set it), and neither an error's list of
    allowed keys nor a saved preset names it at its default. ``replaces``: the field a
    legacy value stands in for when set (see :meth:`Params.legacy_override`); implies
    ``legacy``. The one rule for every legacy key: set = not at its default.
    """
    meta = {"lo": lo, "hi": hi, "unit": unit, "doc": doc, "soft_hi": soft_hi,
            "legacy": legacy or replaces is not None, "replaces": replaces}
    return dataclasses.field(default=default, metadata=meta)


def is_legacy(f: dataclasses.Field) -> bool:
    """Whether ``f`` is a legacy parameter (see :func:`param`)."""
    return bool(f.metadata.get("legacy"))


def hidden(f: dataclasses.Field, value: Any) -> bool:
    """Whether field ``f`` holding ``value`` stays out of sight (UI, help, saved
    presets): a legacy parameter at its default."""
    return is_legacy(f) and value == f.default


def describe_range(f: dataclasses.Field) -> str:
    """Human text for a field's allowed values, e.g. ``0 <= Kq <= 100 (int)``."""
    lo, hi = f.metadata.get("lo"), f.metadata.get("hi")
    kind = type(f.default).__name__
    if isinstance(f.default, bool):
        return "true or false"
    parts = []
    if lo is not None:
        parts.append(f"{lo:g} <=")
    parts.append(f.name)
    if hi is not None:
        parts.append(f"<= {hi:g}")
    return " ".join(parts) + f" ({kind})"


def check_value(f: dataclasses.Field, value: Any, where: str = "") -> Any:
    """Validate and coerce one value for field ``f``; raise ParameterError naming it."""
    prefix = f"{where}: " if where else ""
    default = f.default
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ParameterError(f"{prefix}'{f.name}' must be true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ParameterError(
                    f"{prefix}'{f.name}' must be a whole number "
                    f"({describe_range(f)}), got {value!r}")
    elif isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterError(
                f"{prefix}'{f.name}' must be a number ({describe_range(f)}), got {value!r}")
        value = float(value)
        if not math.isfinite(value):
            raise ParameterError(f"{prefix}'{f.name}' must be finite, got {value!r}")
    lo, hi = f.metadata.get("lo"), f.metadata.get("hi")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ParameterError(
            f"{prefix}'{f.name}' = {value!r} is out of range: allowed {describe_range(f)}")
    return value


class Params:
    """Mixin for frozen parameter dataclasses: validation on construction, dict I/O."""

    #: particles (or passes) a batch of the process runs: every process's params
    #: declare it (an annotation only: this mixin is no dataclass, so no field here)
    batch: int

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            object.__setattr__(self, f.name, check_value(f, getattr(self, f.name),
                                                         type(self).__name__))

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = ""):
        """Build from a mapping; unknown keys are errors naming the allowed keys."""
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        values = {}
        for key, value in data.items():
            if key not in fields:
                shown = [n for n, f in fields.items() if not is_legacy(f)]
                raise ParameterError(
                    f"{where}: unknown key '{key}'; allowed keys: {', '.join(shown)}")
            values[key] = check_value(fields[key], value, where)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    def replace(self, **changes: Any):
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def legacy_override(self, name: str) -> Any:
        """The value of the legacy field that replaces field ``name`` when an old file
        set it (it is not at its default), else None: the one place the rule lives."""
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.metadata.get("replaces") == name and getattr(self, f.name) != f.default:
                return getattr(self, f.name)
        return None
