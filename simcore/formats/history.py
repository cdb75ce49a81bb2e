"""The erosion history's entry format: one entry per run (Erode, Step), ridge
generation, live painting session or note, as JSON. The Blender add-on keeps the
entries on the object (addon/data/history.py); an export's sidecar carries them as a
``history`` list, and the batch command's ``--history`` replays them in Blender.

An entry is a JSON object with ``version`` (:data:`VERSION`), ``kind`` and the kind's
own payload. A run (``erode``, ``step``): what ran, as a preset's tables (the same keys
and checks as a preset file, simcore/formats/presets.py), the seed, the rounds, the
real size, and every painted map the run used with its contents (zlib, base64; float32
when that holds the values exactly). ``ridges``: the generator's parameters, the mode
and the painted start. ``live``: a run's payload and every mask state a live painting
session used, with the round it took effect at. ``note``: a text the list shows;
nothing to replay (what a bake did, say). :func:`parse` turns an entry into a
:class:`Recipe`; anything it cannot read is a :class:`HistoryError` naming the entry.
A new kind is a parser added to :data:`PARSERS` (its payload its own); entries of a
kind this version does not know are refused by name.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import os
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import InputFileError, UserError, describe_os_error
from ..fileio import check_input
from ..generators.ridges import RidgeParams
from ..params import ParameterError
from .presets import parse_preset

#: the entry format; an entry of a later format is refused by name
VERSION = 1
#: the terrain input maps an entry may carry (the painted masks; protect includes
#: Selection Only's falloff)
MAPS = ("rain", "erodibility", "protect", "tree_seeding", "uplift")
#: the kinds that run the simulation (a preset's tables, seed, rounds, masks)
RUN_KINDS = ("erode", "step")


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
    #: erode / step: the preset the settings came from (its name, as the list shows it)
    preset: str = ""
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

    @property
    def replays(self) -> bool:
        """Whether the entry changes the terrain when replayed (a note does not)."""
        return self.kind != "note"


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


def note_entry(text: str, real_size: float = 0.0, exaggeration: float = 1.0) -> dict:
    """A note in the history (what happened that no entry replays); Rebuild passes it."""
    return {"version": VERSION, "kind": "note", "text": text, "real_size": real_size,
            "vertical_exaggeration": exaggeration}


def label(entry: dict) -> str:
    """What the list shows for an entry."""
    if entry["kind"] == "ridges":
        r = entry["ridges"]
        return f"Ridges {entry['mode'].lower()}, seed {r['seed']}"
    if entry["kind"] == "note":
        return f"Note: {entry['text']}"
    if entry["kind"] == "live":
        painted = sorted({n for state in entry["states"] for n in state["masks"]})
        return (f"Live painting {', '.join(painted) or 'nothing'}, {entry['rounds']} "
                f"rounds, {len(entry['states'])} mask states")
    what = "Erode" if entry["kind"] == "erode" else entry["kind"].title()
    masks = f", masks: {', '.join(entry['masks'])}" if entry["masks"] else ""
    return (f"{what} {entry['preset'] or 'settings'}, seed {entry['seed']}, "
            f"{entry['rounds']} rounds{masks}")


def dumps(entry: dict) -> str:
    """An entry's JSON text as the object keeps it (compact)."""
    return json.dumps(entry, separators=(",", ":"))


# -- reading entries -----------------------------------------------------------------------
def _masks(packed_maps: dict, where: str) -> dict[str, np.ndarray]:
    """The painted maps of an entry (name -> packed array), checked: names this version
    knows, values finite and in 0..1."""
    maps = {}
    for name, packed in packed_maps.items():
        if name not in MAPS:
            raise HistoryError(f"{where} uses a mask '{name}' this version does not "
                               "know: switch it off or remove it")
        maps[name] = unpack_array(packed, f"{where} (mask '{name}')")
        if not (np.isfinite(maps[name]).all() and 0 <= maps[name].min()
                and maps[name].max() <= 1):
            raise HistoryError(f"{where} is damaged: its '{name}' mask has values "
                               "outside 0..1; switch it off or remove it to rebuild "
                               "the rest")
    return maps


def _parse_run(entry: dict, common: dict, where: str) -> Recipe:
    preset = parse_preset({"simulation": {"seed": entry["seed"], "particles": 1},
                           **entry["settings"]}, where)
    maps = _masks(entry["masks"], where)
    return Recipe(**common, preset=str(entry["preset"]), params=preset.enabled_params(),
                  seed=preset.seed,
                  rounds=int(entry["rounds"]), start_round=int(entry["start_round"]),
                  rock=preset.rock, write_colors=bool(entry["write_colors"]),
                  water_surface=bool(entry["water_surface"]),
                  exact_resume=bool(entry["exact_resume"]), maps=maps)


def _parse_live(entry: dict, common: dict, where: str) -> Recipe:
    recipe = _parse_run(entry, common, where)
    for i, state in enumerate(entry["states"]):
        recipe.states.append((int(state["round"]),
                              _masks(state["masks"], f"{where} (live state {i + 1})")))
    return recipe


def _parse_ridges(entry: dict, common: dict, where: str) -> Recipe:
    start = entry["start"]
    return Recipe(**common, ridges=RidgeParams.from_dict(entry["ridges"], where),
                  mode=str(entry["mode"]),
                  start=None if start is None else unpack_array(start, where))


def _parse_note(entry: dict, common: dict, where: str) -> Recipe:
    if not isinstance(entry["text"], str):
        raise TypeError("a note's text is not text")
    return Recipe(**common)


#: kind -> its parser (the entry, the fields every kind has, the entry's name)
PARSERS: dict[str, Callable[[dict, dict, str], Recipe]] = {
    "erode": _parse_run, "step": _parse_run, "ridges": _parse_ridges, "note": _parse_note,
    "live": _parse_live}


def parse_entry(entry: Any, where: str) -> Recipe:
    """The recipe in an entry (its JSON, decoded); HistoryError naming ``where`` if this
    version cannot replay it."""
    try:
        if not isinstance(entry, dict):
            raise TypeError("not a JSON object")
        version = entry["version"]
        if not isinstance(version, int) or version > VERSION:
            raise HistoryError(f"{where} was recorded by a later version of the add-on "
                               f"(entry format {version}, this version reads up to "
                               f"{VERSION}): update the add-on, or switch the entry off")
        kind = entry["kind"]
        if kind not in PARSERS:
            raise HistoryError(f"{where} is a '{kind}' entry, which this version does not "
                               "know: switch it off or remove it to rebuild the rest")
        common = {"kind": kind, "label": label(entry),
                  "real_size": float(entry["real_size"]),
                  "exaggeration": float(entry["vertical_exaggeration"])}
        return PARSERS[kind](entry, common, where)
    except HistoryError:
        raise
    except ParameterError as exc:  # an unknown process, key or value: it names them
        raise HistoryError(f"{exc}; switch the entry off or remove it to rebuild the "
                           "rest") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HistoryError(f"{where} is damaged ({type(exc).__name__}: {exc}); switch it "
                           "off or remove it to rebuild the rest") from None


def parse(text: str, where: str) -> Recipe:
    """The recipe in an entry's JSON ``text`` (see :func:`parse_entry`)."""
    try:
        entry = json.loads(text)
    except ValueError as exc:
        raise HistoryError(f"{where} is damaged ({type(exc).__name__}: {exc}); switch it "
                           "off or remove it to rebuild the rest") from None
    return parse_entry(entry, where)


# -- a history in a file -------------------------------------------------------------------
@dataclasses.dataclass
class FileHistory:
    """The history a file holds: every entry (its JSON object, or the text of one that
    is not an object) with whether it is switched on, and whether it holds all the
    erosion since the original heights."""

    entries: list[tuple[bool, Any]]
    complete: bool = True


def read_file(path: str | os.PathLike) -> FileHistory:
    """The history in ``path``: an export's sidecar (its ``history`` list) or a JSON list
    of entries. An entry with ``"enabled": false`` is switched off. InputFileError when
    the file cannot be read, is not JSON or holds no history; the entries themselves are
    checked by :func:`parse_entry`."""
    shown = check_input(path)
    try:
        data = json.loads(shown.read_text("utf-8"))
    except OSError as exc:
        raise InputFileError(describe_os_error(exc, shown, "read")) from None
    except ValueError as exc:
        raise InputFileError(f"cannot read the history {shown}: it is not JSON ({exc}); "
                             "give an export's sidecar or a JSON list of entries") from None
    complete = True
    if isinstance(data, dict):
        complete = data.get("history_complete", True) is not False
        data = data.get("history")
    if not isinstance(data, list) or not data:
        raise InputFileError(f"{shown} holds no history: give the sidecar of an export "
                             "of an object with a history, or a JSON list of entries")
    out = []
    for entry in data:
        enabled = not (isinstance(entry, dict) and entry.get("enabled", True) is False)
        if isinstance(entry, dict):
            entry = {k: v for k, v in entry.items() if k != "enabled"}
        out.append((enabled, entry))
    return FileHistory(out, complete)
