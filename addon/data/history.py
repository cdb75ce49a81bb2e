"""The erosion history of an object: one entry per Erode, Step and ridge generation,
kept in the object's settings (``terrain_erosion.history``) and saved with the .blend.

An entry is a JSON text (:data:`VERSION` in it): what ran, as a preset's tables (the
same keys and checks as a preset file, simcore/formats/presets.py), the seed, the
rounds, the real size, and every painted map the run used with its contents (zlib,
base64; float32 when that holds the values exactly). :func:`parse` turns it back into
a :class:`Recipe` the replay runs; anything it cannot read is a UserError naming the
entry. No bpy here beyond reading and adding entries.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import zlib
from typing import Any

import numpy as np

from ..simcore.errors import UserError
from ..simcore.formats.presets import parse_preset
from ..simcore.generators.ridges import RidgeParams
from ..simcore.params import ParameterError

#: the entry format; an entry of a later format is refused by name
VERSION = 1
#: the terrain input maps an entry may carry (the painted masks; protect includes
#: Selection Only's falloff)
MAPS = ("rain", "erodibility", "protect", "tree_seeding", "uplift")
KINDS = ("erode", "step", "ridges", "live")


class HistoryError(UserError):
    """An entry this version cannot replay (damaged, a later format, an unknown process
    or preset key); the message names the entry."""


@dataclasses.dataclass
class Recipe:
    """One entry, ready to replay."""

    kind: str
    label: str
    real_size: float
    exaggeration: float
    #: erode / step: the enabled processes' params, seed, rounds, rock column, outputs
    params: dict = dataclasses.field(default_factory=dict)
    seed: int = 0
    rounds: int = 0
    start_round: int = 0
    rock: Any = None
    write_colors: bool = True
    water_surface: bool = True
    #: the run continued from the previous run's full-precision state
    exact_resume: bool = False
    maps: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    #: ridges: the generator's params, 'ADD' or 'REPLACE', the painted start (or None)
    ridges: RidgeParams | None = None
    mode: str = "ADD"
    start: np.ndarray | None = None
    #: live: the painted mask states, (round from the session's start, name -> map)
    states: list = dataclasses.field(default_factory=list)


# -- arrays ------------------------------------------------------------------------------
def pack_array(values: np.ndarray) -> dict:
    """A 2-D array as JSON: float32 when that holds it exactly, else float64 (bool:
    uint8), zlib-compressed and base64-encoded."""
    a = np.asarray(values)
    if a.dtype == bool:
        a, dtype = a.astype(np.uint8), "bool"
    else:
        small = a.astype(np.float32)
        a = small if np.array_equal(small, a) else a.astype(np.float64)
        dtype = str(a.dtype)
    data = base64.b64encode(zlib.compress(np.ascontiguousarray(a).tobytes(), 6))
    return {"dtype": dtype, "shape": list(a.shape), "zlib": data.decode("ascii")}


def unpack_array(packed: Any, where: str) -> np.ndarray:
    """The array of :func:`pack_array` (float64, or bool); a damaged one is a
    HistoryError naming ``where``."""
    try:
        dtype = {"float32": np.float32, "float64": np.float64, "bool": np.uint8}[
            packed["dtype"]]
        shape = tuple(int(n) for n in packed["shape"])
        raw = zlib.decompress(base64.b64decode(packed["zlib"], validate=True))
        a = np.frombuffer(raw, dtype).reshape(shape)
    except (KeyError, TypeError, ValueError, zlib.error, binascii.Error) as exc:
        raise HistoryError(f"{where} is damaged ({type(exc).__name__}); switch the entry "
                           "off or remove it to rebuild the rest") from None
    return a.astype(bool) if packed["dtype"] == "bool" else a.astype(np.float64)


# -- making entries ----------------------------------------------------------------------
def run_entry(kind: str, preset: str, params: dict, seed: int, start_round: int,
              rounds: int, real_size: float, exaggeration: float, rock, write_colors: bool,
              water_surface: bool, exact_resume: bool, maps: dict[str, np.ndarray]) -> dict:
    """The record of an Erode or Step that kept ``rounds`` rounds from ``start_round``."""
    tables: dict[str, Any] = {name: {"enabled": True, **p.to_dict()}
                              for name, p in params.items()}
    if rock is not None:
        tables["rock"] = rock.to_dict()
    return {"version": VERSION, "kind": kind, "preset": preset, "seed": seed,
            "start_round": start_round, "rounds": rounds, "real_size": real_size,
            "vertical_exaggeration": exaggeration, "write_colors": write_colors,
            "water_surface": water_surface, "exact_resume": exact_resume,
            "settings": tables, "masks": {n: pack_array(m) for n, m in maps.items()}}


def live_entry(run: dict, states: list[tuple[int, dict[str, np.ndarray]]]) -> dict:
    """The record of a live painting session: ``run`` (:func:`run_entry` of its
    processes, start maps and rounds) and every mask state it used with the round it
    took effect at."""
    return {**run, "kind": "live",
            "states": [{"round": r, "masks": {n: pack_array(m) for n, m in maps.items()}}
                       for r, maps in states]}


def ridges_entry(params: RidgeParams, mode: str, start: np.ndarray | None,
                 real_size: float, exaggeration: float) -> dict:
    """The record of a ridge generation on an existing grid."""
    return {"version": VERSION, "kind": "ridges", "ridges": params.to_dict(), "mode": mode,
            "start": None if start is None else pack_array(start), "real_size": real_size,
            "vertical_exaggeration": exaggeration}


def label(entry: dict) -> str:
    """What the list shows for an entry."""
    if entry["kind"] == "ridges":
        r = entry["ridges"]
        return f"Ridges {entry['mode'].lower()}, seed {r['seed']}"
    if entry["kind"] == "live":
        painted = sorted({n for state in entry["states"] for n in state["masks"]})
        return (f"Live painting {', '.join(painted) or 'nothing'}, {entry['rounds']} "
                f"rounds, {len(entry['states'])} mask states")
    what = "Erode" if entry["kind"] == "erode" else "Step"
    masks = f", masks: {', '.join(entry['masks'])}" if entry["masks"] else ""
    return (f"{what} {entry['preset'] or 'settings'}, seed {entry['seed']}, "
            f"{entry['rounds']} rounds{masks}")


def record(settings, entry: dict) -> None:
    """Append ``entry`` to an object's history (``settings``: its terrain_erosion) and
    select it."""
    item = settings.history.add()
    item.data = json.dumps(entry, separators=(",", ":"))
    item.label = label(entry)
    item.enabled = True
    settings.history_index = len(settings.history) - 1


# -- reading entries -----------------------------------------------------------------------
def parse(text: str, where: str) -> Recipe:
    """The recipe in an entry's JSON ``text``; HistoryError naming ``where`` if this
    version cannot replay it."""
    try:
        entry = json.loads(text)
        if not isinstance(entry, dict):
            raise TypeError("not a JSON object")
        version = entry["version"]
        if not isinstance(version, int) or version > VERSION:
            raise HistoryError(f"{where} was recorded by a later version of the add-on "
                               f"(entry format {version}, this version reads up to "
                               f"{VERSION}): update the add-on, or switch the entry off")
        kind = entry["kind"]
        if kind not in KINDS:
            raise HistoryError(f"{where} is a '{kind}' entry, which this version does not "
                               "know: switch it off or remove it to rebuild the rest")
        common = {"kind": kind, "label": label(entry),
                  "real_size": float(entry["real_size"]),
                  "exaggeration": float(entry["vertical_exaggeration"])}
        if kind == "ridges":
            start = entry["start"]
            return Recipe(**common, ridges=RidgeParams.from_dict(entry["ridges"], where),
                          mode=str(entry["mode"]),
                          start=None if start is None else unpack_array(start, where))
        preset = parse_preset({"simulation": {"seed": entry["seed"], "particles": 1},
                               **entry["settings"]}, where)
        maps = {}
        for name, packed in entry["masks"].items():
            if name not in MAPS:
                raise HistoryError(f"{where} uses a mask '{name}' this version does not "
                                   "know: switch it off or remove it")
            maps[name] = unpack_array(packed, f"{where} (mask '{name}')")
            if not (np.isfinite(maps[name]).all() and 0 <= maps[name].min()
                    and maps[name].max() <= 1):
                raise HistoryError(f"{where} is damaged: its '{name}' mask has values "
                                   "outside 0..1; switch it off or remove it to rebuild "
                                   "the rest")
        states = [(int(state["round"]),
                   {name: unpack_array(packed, f"{where} (live state {i + 1}, '{name}')")
                    for name, packed in state["masks"].items()})
                  for i, state in enumerate(entry.get("states", []))]
        return Recipe(**common, params=preset.enabled_params(), seed=preset.seed,
                      states=states,
                      rounds=int(entry["rounds"]), start_round=int(entry["start_round"]),
                      rock=preset.rock, write_colors=bool(entry["write_colors"]),
                      water_surface=bool(entry["water_surface"]),
                      exact_resume=bool(entry["exact_resume"]), maps=maps)
    except HistoryError:
        raise
    except ParameterError as exc:  # an unknown process, key or value: it names them
        raise HistoryError(f"{exc}; switch the entry off or remove it to rebuild the "
                           "rest") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HistoryError(f"{where} is damaged ({type(exc).__name__}: {exc}); switch it "
                           "off or remove it to rebuild the rest") from None


def entry_name(settings, index: int) -> str:
    """How messages name entry ``index``: its number (from 1) and its label."""
    return f"history entry {index + 1} ('{settings.history[index].label}')"


def enabled_recipes(settings) -> list[Recipe]:
    """Every enabled entry, parsed, in order: the first that cannot be read stops here,
    before anything is changed."""
    return [parse(item.data, entry_name(settings, i))
            for i, item in enumerate(settings.history) if item.enabled]
