"""Generate ridges in real Blender (bpy module): on a grid, on a new grid, from a painted
vertex group; errors leave the scene untouched; undo; the panel section is there."""

from __future__ import annotations

import types

import bpy
import numpy as np
import pytest
from blender_helpers import (
    add_grid,
    mesh_state,
    positions,
    same_state,
    staged_addon,
)

te = staged_addon()


def raster(obj):
    g = te.data.grid.detect_grid(obj.data)
    return positions(obj.data)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)


def test_registered_with_the_panel_under_the_erosion_panel(blender):
    assert hasattr(bpy.types, "TERRAIN_OT_generate_ridges")
    assert bpy.types.TERRAIN_PT_ridges.bl_parent_id == "TERRAIN_PT_main"
    assert bpy.types.TERRAIN_PT_ridges.bl_label == "Generate ridges"
    assert hasattr(bpy.context.scene, "terrain_ridges")


def test_ridges_added_to_the_active_grid_in_world_units(blender):
    obj = add_grid(bpy, n=65, size=2.0, relief=0.0)
    obj.terrain_erosion.real_size = 2000.0  # a 2 km grid in metres: 1 unit = 1 km
    obj.scale = (3.0, 3.0, 0.5)  # the object's transform does not matter
    z0 = raster(obj)
    result = bpy.ops.terrain.generate_ridges(amplitude=200.0, ridge_spacing=150.0, seed=2)
    assert result == {'FINISHED'}
    z = raster(obj)
    added = (z - z0) * 1000.0  # metres
    assert np.isfinite(z).all()
    assert added.min() >= -1e-3 and 100 < added.max() <= 200 + 1e-3
    # slopes in world units stay below the limit (40 degrees, +8% octagonal distance)
    cell = 2000.0 / 64
    gy, gx = np.gradient(added, cell)
    assert np.degrees(np.arctan(np.hypot(gx, gy))).max() < 45


def test_replace_mode_and_a_new_grid(blender):
    obj = add_grid(bpy, n=33, size=2.0, relief=0.5)
    obj.terrain_erosion.real_size = 2.0  # 1:1 (automatic: 5 km)
    bpy.ops.terrain.generate_ridges(mode='REPLACE', amplitude=0.2, ridge_spacing=0.15)
    z = raster(obj)
    assert z.min() == pytest.approx(0.0, abs=1e-5) and z.max() <= 0.2 + 1e-5
    n_objects = len(bpy.data.objects)
    assert bpy.ops.terrain.generate_ridges(new_grid=True, new_size=5000.0,
                                           new_resolution=48) == {'FINISHED'}
    assert len(bpy.data.objects) == n_objects + 1
    new = bpy.context.active_object
    assert new is not obj and new.name.startswith("Ridges")
    g = te.data.grid.detect_grid(new.data)
    assert (g.rows, g.cols) == (48, 48)
    assert raster(new).max() > 300
    assert new.terrain_erosion.real_size == 5000.0, "grown at 5 km: eroded at 5 km"
    assert bpy.ops.terrain.erode.poll(), "the new grid is ready for erosion"


def test_start_from_a_painted_vertex_group(blender):
    obj = add_grid(bpy, n=65, size=2.0, relief=0.0)
    obj.terrain_erosion.real_size = 2.0  # 1:1 (automatic: 5 km)
    group = obj.vertex_groups.new(name="crest")
    g = te.data.grid.detect_grid(obj.data)
    line = g.order.reshape(g.rows, g.cols)[32, 8:56]  # a painted line across the grid
    group.add([int(i) for i in line], 1.0, 'REPLACE')
    assert bpy.ops.terrain.generate_ridges(start='mask', vertex_group="crest",
                                           amplitude=0.3, ridge_spacing=0.12,
                                           seed=1) == {'FINISHED'}
    z = raster(obj)
    assert z[30:35, 8:56].mean() > np.percentile(z, 80), "the painted line is a crest"


def test_errors_leave_the_scene_untouched(blender):
    obj = add_grid(bpy, n=33, size=2.0)
    obj.terrain_erosion.real_size = 2.0  # 1:1 (automatic: 5 km)
    before = mesh_state(obj.data)
    n_objects = len(bpy.data.objects)
    with pytest.raises(RuntimeError, match="no vertex group 'nothing'"):
        bpy.ops.terrain.generate_ridges(start='mask', vertex_group="nothing",
                                        ridge_spacing=0.1)
    with pytest.raises(RuntimeError, match="more than a quarter of the grid's width"):
        bpy.ops.terrain.generate_ridges(ridge_spacing=600.0)  # metres on a 2 m grid
    with pytest.raises(RuntimeError, match="new grid has no painted vertex group"):
        bpy.ops.terrain.generate_ridges(new_grid=True, start='mask')
    assert same_state(before, mesh_state(obj.data))
    assert len(bpy.data.objects) == n_objects
    bpy.ops.mesh.primitive_uv_sphere_add()
    sphere = bpy.context.active_object
    before = mesh_state(sphere.data)
    with pytest.raises(RuntimeError, match="do not form a rectangular grid"):
        bpy.ops.terrain.generate_ridges(ridge_spacing=0.1)
    assert same_state(before, mesh_state(sphere.data))
    bpy.ops.object.mode_set(mode='EDIT')
    assert not bpy.ops.terrain.generate_ridges.poll()


def test_undo_restores_the_heights(blender):
    obj = add_grid(bpy, n=33, size=2.0)
    obj.terrain_erosion.real_size = 2.0  # 1:1 (automatic: 5 km)
    name = obj.name
    bpy.ops.ed.undo_push(message="before ridges")
    before = mesh_state(obj.data)
    assert 'UNDO' in bpy.types.TERRAIN_OT_generate_ridges.bl_options
    assert bpy.ops.terrain.generate_ridges(amplitude=0.3, ridge_spacing=0.12) == {'FINISHED'}
    after = mesh_state(bpy.data.objects[name].data)
    assert not same_state(before, after)
    # in the GUI Blender pushes this step itself when an 'UNDO' operator finishes
    bpy.ops.ed.undo_push(message="Generate Ridges")
    bpy.ops.ed.undo()
    assert same_state(before, mesh_state(bpy.data.objects[name].data))
    bpy.ops.ed.redo()
    assert same_state(after, mesh_state(bpy.data.objects[name].data))


class _Layout:
    """Records what the panel draws; checks every property and operator it names
    (panels cannot be drawn in background mode)."""

    def __init__(self, log):
        self.log = log
        self.use_property_split, self.active = False, True

    def _child(self, *args, **kw):
        return _Layout(self.log)

    box = row = column = _child

    def label(self, text="", icon='NONE'):
        self.log.append(("label", text))

    def prop(self, data, name, text=None, expand=False):
        assert name in data.bl_rna.properties, f"{data!r} has no property {name!r}"
        self.log.append(("prop", name))

    def prop_search(self, data, name, search_data, search_name):
        assert name in data.bl_rna.properties and hasattr(search_data, search_name)
        self.log.append(("prop", name))

    def operator(self, idname, text=None, icon='NONE'):
        module, name = idname.split(".")
        assert hasattr(getattr(bpy.ops, module), name), idname
        op = types.SimpleNamespace(idname=idname)
        self.log.append(("operator", op))
        return op


def test_panel_shows_the_settings_and_its_button_runs_them(blender):
    obj = add_grid(bpy, n=33, size=2.0, relief=0.0)
    obj.terrain_erosion.real_size = 2.0  # 1:1 (automatic: 5 km)
    s = bpy.context.scene.terrain_ridges
    s.amplitude, s.ridge_spacing, s.start, s.points = 0.25, 0.1, 'points', 4
    context = types.SimpleNamespace(scene=bpy.context.scene, active_object=obj)
    log = []
    te.features.ridges.TERRAIN_PT_ridges.draw(types.SimpleNamespace(layout=_Layout(log)), context)
    props = {name for kind, name in log if kind == "prop"}
    assert {"amplitude", "ridge_spacing", "max_slope", "start", "points", "bias",
            "bias_strength", "stickiness", "seed", "new_grid", "mode"} <= props
    ops = [v for kind, v in log if kind == "operator"]
    assert len(ops) == 1 and ops[0].idname == "terrain.generate_ridges"
    kwargs = {k: v for k, v in vars(ops[0]).items() if k != "idname"}
    assert kwargs["amplitude"] == pytest.approx(0.25) and kwargs["start"] == 'points'
    z0 = raster(obj)
    assert bpy.ops.terrain.generate_ridges(**kwargs) == {'FINISHED'}
    assert raster(obj).max() - z0.max() > 0.1
    s.start = 'mask'
    log = []
    te.features.ridges.TERRAIN_PT_ridges.draw(types.SimpleNamespace(layout=_Layout(log)), context)
    assert ("prop", "vertex_group") in log
