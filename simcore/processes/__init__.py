"""The processes of the terrain model, one module each.

Every module whose name does not start with ``_`` and that defines ``PROCESS`` (a
:class:`simcore.process.Process`) is a process; :data:`PROCESSES` lists them in the
order a round runs them. Generators (``simcore.generators``: noise, DLA ridges,
drained uplands) live beside this package: they make terrain, they are not part of a
round.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..fields import CORE_FIELDS, Field
from ..process import Process


def _discover() -> dict[str, Process]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        proc = getattr(module, "PROCESS", None)
        if proc is not None:
            found.append(proc)
    found.sort(key=lambda p: p.order)
    return {p.name: p for p in found}


#: Every process, in the order a round runs them.
PROCESSES: dict[str, Process] = _discover()


def _fields() -> dict[str, Field]:
    fields = {f.name: f for f in CORE_FIELDS}
    for proc in PROCESSES.values():
        for f in proc.fields:
            if f.name in fields:
                raise ValueError(f"process '{proc.name}' redeclares the array '{f.name}'")
            fields[f.name] = f
    return fields


#: Every terrain array: the core ones, then each process's own, in round order.
FIELDS: dict[str, Field] = _fields()
