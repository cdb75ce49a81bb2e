"""Process parameters keyed on the timeline, read for a bake.

Every process parameter is an RNA property of the object
(``terrain_erosion.<process>.<field>``), so Blender animates it like any other: the I
key over the field, the Dope Sheet, the Graph Editor. A bake reads the F-curves of the
object's active action at every frame of its range (``FCurve.evaluate``: the scene's
frame is not changed and nothing is written), on the main thread, before anything
changes. A value comes out as Blender would write it into the property (single
precision for a float, as ``to_params`` reads it back; whole numbers and switches as
the animation system sets them), and is checked against the parameter's range: a keyed
value outside it is a message before the bake starts. The rounds that lead to frame f
run with the values at frame f (simcore ``Simulation.set_params``).

What a bake cannot follow is refused with a message, never used silently: a driver on
a parameter, a keyed ``batch`` or age / time step that changes how the run is divided,
a process switched on or off by keys, any other Terrain Erosion setting keyed to
change over the frames, or keys in NLA strips (only the active action is read).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import bpy
import numpy as np

from ..data import compat
from ..simcore.engine.simulation import PROCESSES, check_swap, process_params
from ..simcore.formats.bake_cache import BakeError
from ..simcore.params import ParameterError, Params
from ..ui.param_props import label, typed_value

#: where the settings live on the object (the start of every data path they key)
PREFIX = "terrain_erosion."
_FIX = "move its keyframes (Graph Editor) or remove them, then bake again"


@dataclasses.dataclass
class KeyedFrames:
    """The run's params at every frame of a bake, and what the manifest records."""

    #: the enabled processes' params at each frame (index 0: the first frame)
    frames: list[dict[str, Params]]
    #: every keyed parameter of the enabled processes, as ``process.field``
    keyed: list[str]
    #: those whose value changes over the frames: ``process.field`` -> {frame: value}
    values: dict[str, dict[str, Any]]

    def manifest(self) -> dict:
        """The manifest's ``keyed`` entry."""
        return {"parameters": list(self.keyed), "values": self.values}


def _fields(name: str) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(PROCESSES[name].params_type)}


def title(key: str) -> str:
    """``droplets.Kr`` as the panel shows it: 'Droplet erosion > Kr'."""
    name, _, field = key.partition(".")
    return f"{PROCESSES[name].label} > {label(field)}"


def keyed_parameters(obj: bpy.types.Object) -> dict[str, bpy.types.FCurve]:
    """``process.field`` -> its F-curve, for every process parameter keyed in the
    object's active action (muted curves do nothing in Blender, so none here)."""
    out = {}
    for fc in compat.action_fcurves(obj):
        name, field = _split(fc.data_path)
        if not fc.mute and name in PROCESSES and field in _fields(name):
            out[f"{name}.{field}"] = fc
    return out


def _split(path: str) -> tuple[str, str]:
    """(process, field) of a data path ``terrain_erosion.<process>.<field>``, else
    empty strings."""
    parts = path.split(".")
    if len(parts) == 3 and f"{parts[0]}." == PREFIX:
        return parts[1], parts[2]
    return "", ""


def as_written(f: dataclasses.Field, raw: float) -> Any:
    """An F-curve's value as the animation system writes it into the property of
    field ``f`` (not clamped: a value outside the range is refused by the caller)."""
    if isinstance(f.default, bool):
        return raw > 1.0 - float(np.finfo(np.float32).eps)
    if isinstance(f.default, int):
        return int(raw)
    return typed_value(f, float(np.float32(raw)))  # stored in single precision


def keyed_frames(obj: bpy.types.Object, frame_start: int,
                 frame_end: int) -> KeyedFrames | None:
    """The params of the object's enabled processes at each frame of
    ``frame_start..frame_end`` when any parameter of theirs is keyed (None: nothing
    keyed, the bake runs as set). BakeError, before anything changes, for a keyed value
    outside its range or anything a bake cannot follow (see the module)."""
    settings = obj.terrain_erosion
    current = settings.enabled_params()
    frames = range(frame_start, frame_end + 1)
    driven = sorted(p for p in compat.driven_paths(obj) if _split(p)[0] in current)
    if driven:
        name, field = _split(driven[0])
        raise BakeError(f"{title(f'{name}.{field}')} is set by a driver, which a bake "
                        "cannot follow frame by frame: key its values instead (remove "
                        "the driver)")
    in_strips = sorted(fc.data_path for fc in compat.nla_fcurves(obj)
                       if fc.data_path.startswith(PREFIX))
    if in_strips:
        raise BakeError(f"'{in_strips[0][len(PREFIX):]}' is keyed in an NLA strip, which "
                        "a bake does not follow: keep the keys of Terrain Erosion "
                        "settings in the object's active action")
    _refuse_other_keys(obj, frames)
    curves = {key: fc for key, fc in keyed_parameters(obj).items()
              if key.partition(".")[0] in current}
    if not curves:
        return None
    per_frame = []
    series: dict[str, list[Any]] = {key: [] for key in curves}
    for frame in frames:
        params = {}
        for name, p in current.items():
            fields = _fields(name)
            changes = {}
            for key, fc in curves.items():
                owner, _, field = key.partition(".")
                if owner == name:
                    changes[field] = as_written(fields[field], fc.evaluate(frame))
                    series[key].append(changes[field])
            if not changes:
                params[name] = p
                continue
            try:
                params[name] = process_params(name, {**p.to_dict(), **changes},
                                              f"{PROCESSES[name].label} settings")
            except ParameterError as exc:
                raise BakeError(f"{exc}, as keyed at frame {frame}: {_FIX}") from None
        try:
            check_swap(per_frame[0] if per_frame else params, params)
        except ParameterError as exc:
            raise BakeError(f"{exc}, as keyed at frame {frame}: a bake cannot follow "
                            f"it; {_FIX} (or key one value throughout)") from None
        per_frame.append(params)
    values = {key: {str(f): v for f, v in zip(frames, vs)}
              for key, vs in series.items() if len(set(vs)) > 1}
    return KeyedFrames(per_frame, sorted(curves), values)


def _refuse_other_keys(obj: bpy.types.Object, frames: range) -> None:
    """BakeError when a Terrain Erosion setting that is not a process parameter (a
    process's on/off, Real Size, the seed...) is keyed to change over ``frames``."""
    for fc in compat.action_fcurves(obj):
        path = fc.data_path
        name, field = _split(path)
        if fc.mute or not path.startswith(PREFIX) or (name in PROCESSES
                                                      and field in _fields(name)):
            continue
        first = fc.evaluate(frames[0])
        if any(fc.evaluate(f) != first for f in frames):
            what = (f"{PROCESSES[name].label} on/off" if field == "enabled"
                    and name in PROCESSES else path[len(PREFIX):])
            raise BakeError(f"'{what}' is keyed to change over the frames, but a bake "
                            "follows only keyed process parameters; remove its keyframes "
                            "(or key one value throughout), then bake again")
