"""Pictures of a live painting session: uplift painted along a line in three strokes
while the young_range landscape runs, and the land, rivers and lakes answering.

    python -m tools.live_pictures [--size 129] [--output docs/live_painting.png]

The start is the generator's drained uplands (seed 3, 60 m cells) lowered to 60 m of
relief; the Uplift mask starts at 0.15 everywhere. Stroke 1 paints the northern third
of a north-south line (a soft brush about 1.5 km wide) at round 0, stroke 2 the middle third at
round 8, stroke 3 the rest at round 16; the session runs 40 rounds. The panels show
the land after rounds 4, 12, 24 and 40 (hillshade, rows down the picture; rivers
draining more than 1 km² and lakes in blue). The session is run with
simcore's LiveSimulation, the same rounds the add-on runs on its worker thread. Prints
the relief and the rivers' share of the cells per panel. Needs only numpy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcore.engine.live import LiveSimulation, live_processes  # noqa: E402
from simcore.formats.images import save_png, shaded_relief  # noqa: E402
from simcore.formats.presets import find_preset  # noqa: E402
from simcore.generators.noise import upland_terrain  # noqa: E402
from simcore.terrain import Terrain  # noqa: E402

CELL = 60.0
STROKES = {0: (0.0, 1 / 3), 8: (1 / 3, 2 / 3), 16: (2 / 3, 1.0)}
PANELS = (4, 12, 24, 40)
#: the uplift of the land around the painted line (the mask's 0 painted up a little)
BASE = 0.15


def _mask(n: int, upto: float) -> np.ndarray:
    """The uplift painted so far: a soft line along x = the middle, rows < upto x n."""
    cols = np.arange(n) * CELL
    across = np.exp(-((cols - cols.mean()) / 900.0) ** 2)
    rows = np.arange(n)[:, None] < upto * n
    return np.where(rows, BASE + (1 - BASE) * across[None, :], BASE)


def _picture(t: Terrain) -> np.ndarray:
    rgb = shaded_relief(t.height(), pool=t.pool if t.pool.any() else None).astype(float)
    river = np.clip(t.stream, 0, 1)[..., None]
    rgb = rgb * (1 - river) + np.array([40, 90, 200]) * river
    return np.clip(rgb, 0, 255).astype(np.uint8)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=129)
    ap.add_argument("--output", default=str(ROOT / "docs" / "live_painting.png"))
    args = ap.parse_args(argv)
    n = args.size
    h = upland_terrain(n, n, seed=3, cell_size=CELL)
    h = (h - h.min()) / np.ptp(h) * 60.0
    t = Terrain.from_heights(h / CELL, CELL, uplift=np.full((n, n), BASE))
    params = find_preset("young_range").enabled_params()
    sim = LiveSimulation(t, live_processes(params, n * n), particles=0)
    upto, panels = 0.0, []
    for r in range(max(PANELS)):
        if r in STROKES:
            upto = STROKES[r][1]
            sim.paint({"uplift": _mask(n, upto)})
        sim.run_round()
        if r + 1 in PANELS:
            z = t.height() * CELL
            print(f"round {r + 1}: relief {np.ptp(z):.0f} m, rivers on "
                  f"{100 * (t.stream > 0).mean():.1f}% of the cells, lakes on "
                  f"{100 * (t.pool > 0).mean():.1f}%")
            panels.append(_picture(t))
    panels = [p.repeat(2, axis=0).repeat(2, axis=1) for p in panels]  # 2 px a cell
    gap = np.full((2 * n, 6, 3), 255, np.uint8)
    strip = np.concatenate(sum(([p, gap] for p in panels), [])[:-1], axis=1)
    print("wrote", save_png(args.output, strip))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
