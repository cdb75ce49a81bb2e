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


class ParameterError(UserError):
    """A parameter value is unknown, of the wrong type or out of its documented range."""


def param(default: Any, lo: float | None = None, hi: float | None = None,
          unit: str = "", doc: str = "", soft_hi: float | None = None,
          legacy: bool = False) -> Any:
    """A dataclass field with its allowed range ``[lo, hi]`` (inclusive), unit and doc.

    ``soft_hi`` is the upper end a UI slider should offer; ``hi`` is the hard limit.
    ``legacy``: kept so that older presets and files load (validated like any other);
    a UI shows it only where it is not at its default, i.e. where an old file set it.
    """
    meta = {"lo": lo, "hi": hi, "unit": unit, "doc": doc, "soft_hi": soft_hi,
            "legacy": legacy}
    return dataclasses.field(default=default, metadata=meta)


def is_legacy(f: dataclasses.Field) -> bool:
    """Whether ``f`` is a legacy parameter (see :func:`param`)."""
    return bool(f.metadata.get("legacy"))


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
                raise ParameterError(
                    f"{where}: unknown key '{key}'; allowed keys: {', '.join(fields)}")
            values[key] = check_value(fields[key], value, where)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    def replace(self, **changes: Any):
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]
