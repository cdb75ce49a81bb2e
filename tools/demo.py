"""The main job without Blender: make a fractal terrain, erode it with the default
preset, write heightmaps, the whole state and a before/after picture under demo/."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcore.image import save_png, shaded_relief  # noqa: E402
from simcore.noise import fractal_terrain  # noqa: E402
from simcore.presets import find_preset  # noqa: E402
from simcore.simulation import Simulation  # noqa: E402
from simcore.state_io import save_heights, save_state  # noqa: E402
from simcore.terrain import Terrain  # noqa: E402


def main() -> int:
    out = ROOT / "demo"
    out.mkdir(exist_ok=True)
    size, cell_size = 512, 2.0  # 512 x 512 samples, 2 m apart: a 1 km square
    heights = fractal_terrain(size, seed=3) * cell_size
    preset = find_preset("default")
    terrain = Terrain.from_heights(heights, cell_size)
    sim = Simulation(terrain, preset.enabled_params(), seed=preset.seed,
                     particles=preset.particles)
    print(f"demo: eroding {size}x{size} with preset '{preset.name}', "
          f"{sim.target_particles} particles", flush=True)
    t0 = time.perf_counter()
    sim.run(lambda p: print(f"  {100 * p.fraction:5.1f}%", flush=True))
    print(f"demo: eroded in {time.perf_counter() - t0:.1f} s", flush=True)
    save_heights(out / "heightmap_before.npy", heights)
    save_heights(out / "heightmap_after.npy", terrain.world_height())
    save_state(out / "state.npz", terrain, {**sim.metadata(), "preset": preset.name})
    before = shaded_relief(heights / cell_size)
    after = shaded_relief(terrain.height(), terrain.sediment)
    gap = np.full((size, 8, 3), 255, np.uint8)
    save_png(out / "before_after.png", np.concatenate([before, gap, after], axis=1))
    print(f"demo: wrote {out}/before_after.png, heightmap_*.npy, state.npz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
