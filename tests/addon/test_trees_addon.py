"""Trees in real Blender (bpy module): a full-grown tree is ``tree_height`` world units
tall whatever the grid's cell size; Tree Scale still overrides it."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from blender_helpers import add_grid, staged_addon

te = staged_addon()


def grow_trees(n: int, extent: float):
    """A gentle grid ``extent`` local units wide with ``n`` x ``n`` vertices; trees only."""
    obj = add_grid(bpy, n=n, size=extent, relief=0.0)
    s = obj.terrain_erosion
    s.real_size = extent  # 1:1 (automatic would treat 960 units as 5 km)
    for name in te.simcore.engine.simulation.PROCESSES:
        getattr(s, name).enabled = name == "trees"
    s.trees.spawn_tries = 20
    s.particles = 40
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    return obj


def instance_heights(obj) -> np.ndarray:
    """Height (z scale) of every tree instance over the tree's own size attribute."""
    trees = obj.terrain_erosion.trees_object
    size = np.empty(len(trees.data.vertices), np.float32)
    trees.data.attributes["size"].data.foreach_get("value", size)
    dg = bpy.context.evaluated_depsgraph_get()
    scales = sorted(i.matrix_world.to_scale().z for i in dg.object_instances
                    if i.is_instance and i.parent.name == trees.name)
    assert len(scales) == len(size) > 0
    return np.array(scales) / np.sort(size)


def test_a_full_grown_tree_is_tree_height_tall_at_any_cell_size(blender):
    fine = grow_trees(33, 960.0)  # 30 m cells
    coarse = grow_trees(17, 960.0)  # 60 m cells: the same world
    for obj in (fine, coarse):
        s = obj.terrain_erosion
        assert s.trees.tree_height == pytest.approx(20.0)
        assert np.allclose(instance_heights(obj), 20.0, rtol=1e-3)
    # the user's override wins, in local units; else the Trees panel's height (a preset
    # sets it in world units)
    s = fine.terrain_erosion
    g = te.data.grid.detect_grid(fine.data)
    for scale, height, expected in ((7.5, 20.0, 7.5), (0.0, 12.0, 12.0)):
        s.tree_scale, s.trees.tree_height = scale, height
        te.data.instances.update_trees(fine, g, te.data.instances.read_trees(fine, g),
                                  np.zeros((g.rows, g.cols)))
        assert np.allclose(instance_heights(fine), expected, rtol=1e-3)
