"""The erosion history of an object: its entries, kept in the object's settings
(``terrain_erosion.history``, one JSON text each) and saved with the .blend. The
entry format (what an entry holds, how it is read back into a recipe) is
simcore/formats/history.py; here only adding entries to an object and reading them."""

from __future__ import annotations

import json

from ..simcore.formats import history as entries


def record(settings, entry: dict) -> None:
    """Append ``entry`` to an object's history (``settings``: its terrain_erosion) and
    select it."""
    item = settings.history.add()
    item.data = entries.dumps(entry)
    item.label = entries.label(entry)
    item.enabled = True
    settings.history_index = len(settings.history) - 1


def replace(settings, items: list[tuple[bool, object]]) -> None:
    """Make ``items`` (switched on?, entry: its JSON object, or a text) the object's
    history, in order; an entry whose label cannot be made is listed as damaged."""
    settings.history.clear()
    for enabled, entry in items:
        item = settings.history.add()
        item.data = entry if isinstance(entry, str) else entries.dumps(entry)
        try:
            item.label = entries.label(json.loads(item.data))
        except (ValueError, KeyError, TypeError, AttributeError):
            item.label = "damaged entry"
        item.enabled = enabled
    settings.history_index = max(len(settings.history) - 1, 0)


def entry_name(settings, index: int) -> str:
    """How messages name entry ``index``: its number (from 1) and its label."""
    return f"history entry {index + 1} ('{settings.history[index].label}')"


def enabled_recipes(settings) -> list[entries.Recipe]:
    """Every enabled entry, parsed, in order: the first that cannot be read stops here,
    before anything is changed."""
    return [entries.parse(item.data, entry_name(settings, i))
            for i, item in enumerate(settings.history) if item.enabled]


def exported(settings) -> list:
    """The object's history as an export's sidecar lists it: every entry's JSON object,
    a switched-off one with ``"enabled": false`` (an entry that is not JSON is kept as
    its text, so a replay names it damaged)."""
    out: list = []
    for item in settings.history:
        try:
            entry = json.loads(item.data)
        except ValueError:
            entry = item.data
        if isinstance(entry, dict) and not item.enabled:
            entry = {**entry, "enabled": False}
        out.append(entry)
    return out
