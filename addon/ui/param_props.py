"""Blender properties generated from simcore's parameter dataclasses (``param(...)``
metadata: default, range, unit, doc), so defaults, ranges and descriptions live in one
place: the process settings and the rock column's frame and layers use them."""

from __future__ import annotations

import dataclasses

import bpy

from ..simcore.params import describe_range

INT32_MAX = 2**31 - 1


def label(name: str) -> str:
    """A field's name as a label: 'fold_amplitude' -> 'Fold amplitude'."""
    return name if len(name) <= 2 else name.replace("_", " ").capitalize()


def param_property(f: dataclasses.Field, **extra):
    """The ``bpy.props`` property of one parameter field (Bool, Int or Float by its
    default's type; its range and doc from the metadata); ``extra`` overrides."""
    md = f.metadata
    unit = f" [{md['unit']}]" if md.get("unit") and md["unit"] != "-" else ""
    desc = f"{md['doc'][:1].upper()}{md['doc'][1:]}{unit}. Allowed: {describe_range(f)}"
    kw = {"name": label(f.name), "description": desc, "default": f.default}
    if isinstance(f.default, bool):
        return bpy.props.BoolProperty(**{**kw, **extra})
    lo, hi, soft = md.get("lo"), md.get("hi"), md.get("soft_hi")
    if isinstance(f.default, int):
        kw.update(min=int(lo if lo is not None else -INT32_MAX),
                  max=int(min(hi if hi is not None else INT32_MAX, INT32_MAX)))
        if soft is not None:
            kw["soft_max"] = int(soft)
        return bpy.props.IntProperty(**{**kw, **extra})
    kw.update(min=float(lo if lo is not None else -1e30), max=float(hi if hi is not None
                                                                  else 1e30), precision=4)
    if soft is not None:
        kw["soft_max"] = float(soft)
    return bpy.props.FloatProperty(**{**kw, **extra})


def typed_value(f: dataclasses.Field, value):
    """A property's value as the field wants it: floats to seven significant digits
    (Blender stores single precision: 0.001 comes back as 0.0010000000475)."""
    return float(f"{value:.7g}") if isinstance(f.default, float) else value
