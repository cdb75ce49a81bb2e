"""The mask states of a scripted live painting session, in a .npz file: ``rounds``
(k,) the round each state takes effect at, and per painted mask (``uplift``, ``rain``,
``erodibility``) a (k, vertices) array of weights in the mesh's vertex order."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..algorithms.masks import MaskError
from ..engine.live import LIVE_MAPS


def load_states(path: str, rounds: int) -> tuple[list[tuple[int, dict]], int]:
    """The mask states of a .npz file: ``rounds`` (k,) the round each state takes
    effect at, and per painted mask (``uplift``, ``rain``, ``erodibility``) a (k,
    vertices) array of weights in the mesh's vertex order. Returns the states and the
    session's rounds (``rounds``, or 0: one past the last state)."""
    file = Path(path)
    try:
        with np.load(file) as data:
            arrays = {key: np.array(data[key]) for key in data.files}
    except (OSError, ValueError) as exc:
        raise MaskError(f"cannot read the mask states '{file}' ({exc}): give a .npz "
                        "with 'rounds' and an array per painted mask") from None
    when = arrays.pop("rounds", None)
    unknown = sorted(set(arrays) - set(LIVE_MAPS))
    if when is None or when.ndim != 1 or unknown or not arrays:
        raise MaskError(f"'{file}' must hold 'rounds' (one round per state) and one "
                        f"(states, vertices) array per painted mask ({', '.join(LIVE_MAPS)})"
                        + (f"; it has {', '.join(unknown)}" if unknown else ""))
    for name, values in arrays.items():
        if values.ndim != 2 or len(values) != len(when):
            raise MaskError(f"'{file}': '{name}' must be ({len(when)} states, vertices), "
                            f"it is {values.shape}")
    states = [(int(r), {name: values[i] for name, values in arrays.items()})
              for i, r in enumerate(when)]
    return states, rounds or (int(when.max()) + 1 if len(when) else 0)
