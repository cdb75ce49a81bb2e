"""Pictures of a Rebuild after an edit of the base, in real Blender (the bpy module): a
grid with a north-south main ridge is eroded with the Erode operator, then its stored
original heights (the ``te_original_z`` attribute, the base Rebuild starts from) are
changed as a sculpt would, moving the ridge east, and Rebuild replays the same run on
the new base.

    python -m tools.history_pictures [--size 129] [--shift 600] [--output docs/history_rebuild.png]

The base is fractal hills (relief 80 m) on a ridge 400 m high and about 1.2 km wide
whose crest runs a third of the way across, 30 m cells. The three panels (north up,
hillshade): the eroded terrain, the edited base (the ridge ``--shift`` metres east),
and the rebuilt terrain. Prints where the crest is (the median over rows of the
highest cell's x) and the relief of each.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
import bpy  # noqa: E402

from tools.stage import import_staged  # noqa: E402

te = import_staged()
from terrain_erosion.simcore.formats.images import save_png, shaded_relief  # noqa: E402
from terrain_erosion.simcore.formats.presets import find_preset  # noqa: E402
from terrain_erosion.simcore.generators.noise import fractal_terrain  # noqa: E402

CELL = 30.0
PRESET = "default"


def _ridge(x: np.ndarray, crest: float) -> np.ndarray:
    """The main ridge's heights (m) at ``x`` (m) for a crest line at x = ``crest``."""
    return 400.0 * np.exp(-((x - crest) / 600.0) ** 2)


def _grid_z(obj, values: np.ndarray | None = None) -> np.ndarray:
    """The mesh's heights as (rows, cols) metres; ``values``: the stored original's."""
    g = te.data.grid.detect_grid(obj.data)
    z = te.data.grid.read_positions(obj.data)[:, 2] if values is None else values
    return np.asarray(z, np.float64)[g.order].reshape(g.rows, g.cols)


def _original(obj) -> np.ndarray:
    attr = obj.data.attributes[te.data.grid.ORIGINAL_Z]
    z = np.empty(len(attr.data), np.float32)
    attr.data.foreach_get("value", z)
    return z


def _crest(z: np.ndarray) -> float:
    """Where the main ridge's crest is: the median over rows of the highest cell's x (m,
    from the west edge)."""
    return float(np.median(np.argmax(z, axis=1))) * CELL


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=129, help="vertices per side")
    ap.add_argument("--shift", type=float, default=600.0,
                    help="metres the ridge moves east in the edited base")
    ap.add_argument("--particles", type=int, default=60_000)
    ap.add_argument("--output", default=str(ROOT / "docs" / "history_rebuild.png"))
    args = ap.parse_args(argv)
    n, width = args.size, (args.size - 1) * CELL
    bpy.ops.wm.read_factory_settings(use_empty=True)
    te.register()
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=n - 1, y_subdivisions=n - 1,
                                    size=width)
    obj = bpy.context.active_object
    obj.name = "Terrain"
    me = obj.data
    co = te.data.grid.read_positions(me)
    x = co[:, 0].astype(np.float64) + width / 2  # metres from the west edge
    hills = fractal_terrain(n, seed=4, relief=80.0).ravel()  # row-major, x fastest
    co[:, 2] = hills + _ridge(x, width / 3)
    me.attributes["position"].data.foreach_set("vector", co.ravel())
    me.update()
    s = obj.terrain_erosion
    s.real_size = width
    s.apply_preset(find_preset(PRESET))
    assert bpy.ops.terrain.erode(particles=args.particles) == {'FINISHED'}
    eroded = _grid_z(obj)
    # the sculpt: the stored original with the ridge moved east
    base = _original(obj) - _ridge(x, width / 3) + _ridge(x, width / 3 + args.shift)
    me.attributes[te.data.grid.ORIGINAL_Z].data.foreach_set(
        "value", base.astype(np.float32))
    edited = _grid_z(obj, base)
    assert bpy.ops.terrain.rebuild() == {'FINISHED'}
    rebuilt = _grid_z(obj)
    for name, z in (("eroded", eroded), ("edited base", edited), ("rebuilt", rebuilt)):
        print(f"{name}: crest at {_crest(z):.0f} m from the west edge, relief "
              f"{np.ptp(z):.0f} m")
    # rows north up: the grid's row 0 is its south edge
    panels = [shaded_relief(z[::-1] / CELL, exaggeration=1.0)
              .repeat(2, axis=0).repeat(2, axis=1) for z in (eroded, edited, rebuilt)]
    gap = np.full((panels[0].shape[0], 8, 3), 255, np.uint8)
    strip = np.concatenate([panels[0], gap, panels[1], gap, panels[2]], axis=1)
    print("wrote", save_png(args.output, strip))
    te.unregister()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
