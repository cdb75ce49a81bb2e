"""The add-on in real Blender (bpy module): registration, grid I/O, runs, cancel,
undo, save/reload."""

from __future__ import annotations

import dataclasses
import time
import types

import bpy
import numpy as np
import pytest
from blender_helpers import (
    PanelLayout,
    add_grid,
    mesh_state,
    positions,
    same_state,
    set_z,
    staged_addon,
)

te = staged_addon()


def poll_message(op) -> str:
    """The message a failed poll() set (raised as RuntimeError on call)."""
    with pytest.raises(RuntimeError) as info:
        op()
    return str(info.value)


def test_register_unregister_register_leaves_blender_as_found():
    bpy.ops.wm.read_factory_settings(use_empty=True)
    before = set(dir(bpy.types))
    te.register()
    assert hasattr(bpy.types.Object, "terrain_erosion")
    assert hasattr(bpy.types, "TERRAIN_OT_erode") and hasattr(bpy.types, "TERRAIN_PT_main")
    te.unregister()
    assert not hasattr(bpy.types.Object, "terrain_erosion")
    assert not hasattr(bpy.types.WindowManager, "terrain_erosion")
    assert set(dir(bpy.types)) == before
    handlers = (list(bpy.app.handlers.load_pre), list(bpy.app.handlers.load_post))
    te.register()
    te.unregister()
    assert set(dir(bpy.types)) == before
    assert handlers == (list(bpy.app.handlers.load_pre), list(bpy.app.handlers.load_post))


def test_operators_poll_false_with_a_reason(blender):
    assert "Select a grid mesh" in poll_message(bpy.ops.terrain.erode)
    bpy.ops.mesh.primitive_uv_sphere_add()
    sphere = bpy.context.active_object
    before = mesh_state(sphere.data)
    for op in (bpy.ops.terrain.erode, bpy.ops.terrain.step, bpy.ops.terrain.reset,
               bpy.ops.terrain.apply):
        assert not op.poll()
        assert "do not form a rectangular grid" in poll_message(op)
    assert same_state(before, mesh_state(sphere.data))
    bpy.ops.object.camera_add()
    assert "not a mesh" in poll_message(bpy.ops.terrain.erode)
    assert "No erosion run" in poll_message(bpy.ops.terrain.stop)


def test_grid_detection_in_any_vertex_order_and_transform(blender):
    obj = add_grid(bpy, n=24)
    g0 = te.data.grid.detect_grid(obj.data)
    z0 = positions(obj.data)[:, 2][g0.order].reshape(g0.rows, g0.cols)
    bpy.ops.object.mode_set(mode='EDIT')
    bpy.ops.mesh.sort_elements(type='RANDOMIZE', elements={'VERT'}, seed=3)
    bpy.ops.object.mode_set(mode='OBJECT')
    obj.location = (3, -2, 1)
    obj.rotation_euler = (0.3, 0.2, 1.1)
    obj.scale = (2, 2, 0.5)
    g = te.data.grid.detect_grid(obj.data)
    assert (g.rows, g.cols) == (24, 24)
    assert not np.array_equal(g.order, g0.order), "vertices really were shuffled"
    z = positions(obj.data)[:, 2][g.order].reshape(g.rows, g.cols)
    assert np.array_equal(z, z0), "the raster is the same whatever the vertex order"
    assert g.cell_x == pytest.approx(2.0 / 23, rel=1e-5)


def test_non_square_cells_are_detected(blender):
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=19, y_subdivisions=9, size=2)
    me = bpy.context.active_object.data
    co = positions(me)
    co[:, 0] *= 3.0
    me.attributes["position"].data.foreach_set("vector", co.ravel())
    me.update()
    g = te.data.grid.detect_grid(me)
    assert (g.rows, g.cols) == (10, 20)
    assert g.cell_x == pytest.approx(6 / 19, rel=1e-5) and g.cell_y == pytest.approx(2 / 9,
                                                                                    rel=1e-5)
    assert not g.square
    assert bpy.ops.terrain.erode.poll()


def _refused(obj, expected: str):
    before = mesh_state(obj.data)
    msg = poll_message(bpy.ops.terrain.erode)
    assert expected in msg, msg
    with pytest.raises(te.data.grid.GridError, match=expected):
        te.data.job.ErosionJob(obj)
    assert same_state(before, mesh_state(obj.data)), "a refused mesh is bit-identical"


def test_refusals_leave_the_mesh_untouched(blender):
    obj = add_grid(bpy, n=12)
    bpy.ops.object.mode_set(mode='EDIT')
    bpy.ops.mesh.select_all(action='SELECT')
    bpy.ops.transform.rotate(value=0.4, orient_axis='Z')
    bpy.ops.object.mode_set(mode='OBJECT')
    _refused(obj, "rotated or sheared in Edit Mode")

    obj = add_grid(bpy, n=12)
    me = obj.data
    me.vertices.add(1)  # a loose vertex
    me.update()
    _refused(obj, "do not form a rectangular grid")

    obj = add_grid(bpy, n=12)
    bpy.ops.object.mode_set(mode='EDIT')
    assert "Edit mode" in poll_message(bpy.ops.terrain.erode)
    bpy.ops.object.mode_set(mode='OBJECT')

    me = bpy.data.meshes.new("empty")
    empty = bpy.data.objects.new("Empty mesh", me)
    bpy.context.collection.objects.link(empty)
    bpy.context.view_layer.objects.active = empty
    assert "has no vertices" in poll_message(bpy.ops.terrain.erode)

    obj = add_grid(bpy, n=12)
    co = positions(obj.data)
    co[5, 2] = np.nan
    obj.data.attributes["position"].data.foreach_set("vector", co.ravel())
    before = mesh_state(obj.data)
    with pytest.raises(RuntimeError, match="NaN/inf vertex heights"):
        bpy.ops.terrain.erode()
    assert same_state(before, mesh_state(obj.data))


def test_run_writes_simcore_heights_and_documented_layers(blender):
    obj = add_grid(bpy, n=40, size=4.0, relief=1.0)
    obj.terrain_erosion.real_size = 4.0  # 1:1, so simcore sees the local numbers
    obj.terrain_erosion.seed = 11
    obj.terrain_erosion.particles = 4000
    g = te.data.grid.detect_grid(obj.data)
    z0 = positions(obj.data)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    assert bpy.ops.terrain.erode() == {'FINISHED'}

    sim_mod = te.simcore.engine.simulation
    terrain = te.simcore.terrain.Terrain.from_heights(z0, g.cell_size)
    droplet_params = te.simcore.processes.droplets.DropletParams
    assert obj.terrain_erosion.enabled_params() == {
        "droplets": droplet_params()}, "UI floats give the exact defaults"
    sim_mod.Simulation(terrain, {"droplets": droplet_params()}, seed=11,
                       particles=4000).run()
    me = obj.data
    z = positions(me)[:, 2][g.order].reshape(g.rows, g.cols)
    expected = (terrain.height() * g.cell_size).astype(np.float32)
    assert np.array_equal(z, expected)
    state = mesh_state(me)
    for name in ("te_sediment", "te_bedrock", "te_sediment_depth", "te_eroded",
                 "te_deposited", "te_original_z"):
        assert name in state, name
    assert "te_streams" not in state and "te_pools" not in state, "not produced yet"
    colors = state["te_sediment"].reshape(-1, 4)
    assert colors.min() >= 0 and colors.max() <= 1 and colors[:, :3].max() > 0
    assert np.allclose(colors[:, 0], colors[:, 1]) and np.all(colors[:, 3] == 1)
    assert state["te_sediment_depth"].min() >= 0 and state["te_eroded"].max() > 0
    assert np.allclose(state["te_bedrock"] + state["te_sediment_depth"], positions(me)[:, 2],
                       atol=1e-5)
    assert np.array_equal(state["te_original_z"], positions_of(z0, g))


def positions_of(raster, g):
    out = np.empty(g.rows * g.cols, np.float32)
    out[g.order] = raster.ravel()
    return out


def test_cancel_restores_heights_and_layers_exactly(blender):
    obj = add_grid(bpy, n=40)
    obj.terrain_erosion.particles = 3000
    assert bpy.ops.terrain.erode() == {'FINISHED'}  # existing layers must come back too
    before = mesh_state(obj.data)
    obj.terrain_erosion.particles = 50000
    job = te.data.job.ErosionJob(obj)
    job.live_update = 0.0  # write the mesh on every tick
    rt = types.SimpleNamespace(stop_requested=False, progress=0.0, status="")
    assert te.features.operators.tick(job, rt, budget=0.0) == "running"
    assert te.features.operators.tick(job, rt, budget=0.0) == "running"
    assert not same_state(before, mesh_state(obj.data)), "the ticks wrote the mesh"
    assert 0 < rt.progress < 1 and "particles" in rt.status
    job.cancel()
    assert same_state(before, mesh_state(obj.data))


def test_stop_keeps_the_result_and_deleting_the_object_ends_cleanly(blender):
    obj = add_grid(bpy, n=32)
    obj.terrain_erosion.particles = 50000
    job = te.data.job.ErosionJob(obj)
    rt = types.SimpleNamespace(stop_requested=False, progress=0.0, status="")
    assert te.features.operators.tick(job, rt, budget=0.0) == "running"
    rt.stop_requested = True
    assert te.features.operators.tick(job, rt) == "stop"
    job.finish()
    assert obj.terrain_erosion.rounds_done == 1
    job2 = te.data.job.ErosionJob(obj)
    bpy.data.objects.remove(obj)
    assert te.features.operators.tick(job2, rt := types.SimpleNamespace(
        stop_requested=False, progress=0.0, status=""), budget=0.0) == "ended"
    assert "deleted" in rt.status
    job2.cancel()  # nothing to restore, and no error


def test_loading_another_file_mid_run_ends_it_cleanly(blender, tmp_path):
    obj = add_grid(bpy, n=24, name="Hills")
    obj.terrain_erosion.particles = 50000
    job = te.data.job.ErosionJob(obj)
    rt = bpy.context.window_manager.terrain_erosion
    rt.running = True
    assert te.features.operators.tick(job, rt, budget=0.0) == "running"
    other = tmp_path / "other.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(other), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    rt = bpy.context.window_manager.terrain_erosion
    assert not rt.running, "the UI is not stuck in 'running'"
    assert te.features.operators.tick(job, rt, budget=0.0) == "ended"
    assert "deleted" in rt.status
    job.cancel()


def test_undo_after_a_run_restores_the_original(blender):
    obj = add_grid(bpy, n=32)
    obj.terrain_erosion.particles = 3000
    original = mesh_state(obj.data)
    bpy.ops.ed.undo_push(message="before erosion")
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    eroded = mesh_state(bpy.data.objects[obj.name].data)
    assert not same_state(original, eroded)
    # in the GUI Blender pushes this step itself when a 'UNDO' operator finishes
    bpy.ops.ed.undo_push(message="Erode")
    bpy.ops.ed.undo()
    assert same_state(original, mesh_state(bpy.data.objects["Grid"].data))
    bpy.ops.ed.redo()
    assert same_state(eroded, mesh_state(bpy.data.objects["Grid"].data))


def test_reset_and_apply(blender):
    obj = add_grid(bpy, n=24)
    obj.terrain_erosion.particles = 2000
    original = positions(obj.data).copy()
    bpy.ops.terrain.erode()
    assert bpy.ops.terrain.reset() == {'FINISHED'}
    assert np.array_equal(positions(obj.data), original)
    assert not [a for a in obj.data.attributes if a.name.startswith("te_")]
    assert obj.terrain_erosion.rounds_done == 0
    bpy.ops.terrain.erode()
    assert bpy.ops.terrain.apply() == {'FINISHED'}
    assert "te_original_z" not in obj.data.attributes
    assert bpy.ops.terrain.reset() == {'CANCELLED'}


def test_save_reload_keeps_settings_and_state_and_runs_on(blender, tmp_path):
    obj = add_grid(bpy, n=32, name="Hills")
    s = obj.terrain_erosion
    s.seed, s.particles = 5, 3000
    s.droplets.Kq = 14.0
    bpy.ops.terrain.erode()
    sediment = mesh_state(obj.data)["te_sediment_depth"]
    rounds = s.rounds_done
    path = str(tmp_path / "terrain.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Hills"]
    s = obj.terrain_erosion
    assert (s.seed, s.particles, s.droplets.Kq, s.rounds_done) == (5, 3000, 14.0, rounds)
    assert np.array_equal(mesh_state(obj.data)["te_sediment_depth"], sediment)
    job = te.data.job.ErosionJob(obj)
    assert job.sim.rounds_done == rounds, "the next run continues the random sequence"
    assert np.allclose(job.sim.terrain.sediment * job.grid.cell_size,
                       sediment[job.grid.order].reshape(job.grid.rows, job.grid.cols),
                       atol=1e-6), "and starts from the stored sediment"
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    assert s.rounds_done == 2 * rounds


def test_vertex_groups_uvs_materials_and_modifiers_survive(blender):
    obj = add_grid(bpy, n=24)
    vg = obj.vertex_groups.new(name="mask")
    vg.add(list(range(0, 200)), 0.7, 'REPLACE')
    mat = bpy.data.materials.new("Ground")
    obj.data.materials.append(mat)
    obj.modifiers.new("Sub", 'SUBSURF')
    me = obj.data
    me.attributes.new("my_layer", 'FLOAT', 'POINT').data.foreach_set(
        "value", np.arange(len(me.vertices), dtype=np.float32))
    uv_before = mesh_state(me)["UVMap"]
    obj.terrain_erosion.particles = 2000
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    after = mesh_state(me)
    assert np.array_equal(after["UVMap"], uv_before)
    assert np.array_equal(after["my_layer"], np.arange(len(me.vertices), dtype=np.float32))
    assert [g.name for g in obj.vertex_groups] == ["mask"]
    assert me.vertices[10].groups[0].weight == pytest.approx(0.7)
    assert me.materials[0] == mat and obj.modifiers[0].name == "Sub"


def test_presets_apply_save_and_delete(blender, tmp_path, monkeypatch):
    monkeypatch.setenv("TERRAIN_EROSION_USER_DIR", str(tmp_path))
    obj = add_grid(bpy, n=12)
    presets = {label: path for label, path, _ in te.ui.presets_ui.all_presets()}
    assert "Quick preview" in presets
    bpy.ops.terrain.preset_apply(filepath=str(presets["Quick preview"]))
    s = obj.terrain_erosion
    assert s.droplets.enabled and not s.snowball.enabled and s.preset == "Quick preview"
    s.snowball.friction = 0.5
    bpy.ops.terrain.preset_save(name="My Sandbox!")
    saved = tmp_path / "presets" / "my_sandbox.toml"
    assert saved.exists()
    s.snowball.friction = 0.9
    bpy.ops.terrain.preset_apply(filepath=str(saved))
    assert s.snowball.friction == pytest.approx(0.5)
    bpy.ops.terrain.preset_delete(filepath=str(saved))
    assert not saved.exists()
    with pytest.raises(RuntimeError, match="Only user presets can be deleted"):
        bpy.ops.terrain.preset_delete(filepath=str(presets["Default"]))
    assert presets["Default"].exists()


def test_bad_settings_give_a_clear_message(blender):
    obj = add_grid(bpy, n=12)
    obj.terrain_erosion.droplets.enabled = False
    before = mesh_state(obj.data)
    with pytest.raises(RuntimeError, match="No process is enabled"):
        bpy.ops.terrain.erode()
    obj.terrain_erosion.droplets.enabled = True
    obj.terrain_erosion.droplets.Kq = 1e12  # beyond the slider: Blender clamps to the range
    assert obj.terrain_erosion.droplets.Kq == 1e9
    assert same_state(before, mesh_state(obj.data))


def test_set_z_helper_roundtrip(blender):
    obj = add_grid(bpy, n=8)
    set_z(obj.data, np.arange(64, dtype=np.float32))
    assert np.array_equal(positions(obj.data)[:, 2], np.arange(64, dtype=np.float32))


@pytest.mark.parametrize("angle, text", [(0, "east (+X)"), (45, "north-east (+X +Y)"),
                                         (90, "north (+Y)"), (-90, "south (-Y)"),
                                         (200, "west (-X)"), (315, "south-east (+X -Y)")])
def test_wind_direction_hint_reads_like_a_compass(angle, text):
    assert te.ui.overlay.compass(angle) == text


def test_wind_arrow_points_along_the_wind():
    pts = np.array(te.ui.overlay.arrow_lines(90.0, (1.0, 2.0), 4.0, 5.0))
    tail, tip = pts[0], pts[1]
    assert np.allclose(tip - tail, [0, 4, 0], atol=1e-9)
    assert np.allclose((tail + tip)[:2] / 2, [1, 2])
    head_ends = pts[[3, 5]]
    assert np.all(head_ends[:, 1] < tip[1]), "the head strokes go back from the tip"


def test_batch_command_erodes_and_saves(blender, tmp_path, capsys):
    obj = add_grid(bpy, n=24, name="Terrain")
    before = positions(obj.data).copy()
    out = tmp_path / "eroded.blend"
    code = te.features.batch.main(["--object", "Terrain", "--preset", "default",
                                   "--particles", "3000", "--seed", "4",
                                   "--set", "droplets.Kq=12", "--save-as", str(out)])
    assert code == 0
    assert "done" in capsys.readouterr().out
    assert not np.array_equal(positions(obj.data), before)
    s = obj.terrain_erosion
    assert (s.seed, s.particles, s.droplets.Kq) == (4, 3000, 12.0)
    assert out.exists()
    assert te.features.batch.main(["--object", "Nope"]) == 2
    assert "no object named 'Nope'; mesh objects: " in capsys.readouterr().err
    assert te.features.batch.main(["--object", "Terrain", "--set", "droplets.Kq=-1"]) == 2
    assert "out of range" in capsys.readouterr().err


def _connected_to_edge(wet: np.ndarray) -> np.ndarray:
    """Wet cells 8-connected to a wet cell on the grid's border."""
    rows, cols = wet.shape
    seen = np.zeros_like(wet)
    todo = [(r, c) for r in range(rows) for c in range(cols)
            if wet[r, c] and (r in (0, rows - 1) or c in (0, cols - 1))]
    for r, c in todo:
        seen[r, c] = True
    while todo:
        r, c = todo.pop()
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                y, x = r + dr, c + dc
                if 0 <= y < rows and 0 <= x < cols and wet[y, x] and not seen[y, x]:
                    seen[y, x] = True
                    todo.append((y, x))
    return seen


def test_rivers_trees_and_water_become_renderable_objects(blender):
    obj = add_grid(bpy, n=48, size=4.0, relief=1.0)
    s = obj.terrain_erosion
    s.apply_preset(te.simcore.formats.presets.find_preset("rivers_and_lakes"))
    s.hydrology.sea = True
    s.hydrology.sea_level = 4.0  # cell units: the low ground becomes sea
    s.trees.spawn_tries = 20
    # the preset's creep is tuned for 30 m cells; on this 4 m grid it flattens the
    # land above the sea in a few passes (and sub-steps for minutes)
    s.thermal.creep = 0.0
    s.particles = 3000
    before = mesh_state(obj.data)
    job = te.data.job.ErosionJob(obj)
    job.live_update = 0.0
    rt = types.SimpleNamespace(stop_requested=False, progress=0.0, status="")
    te.features.operators.tick(job, rt, budget=0.0)
    assert s.trees_object is not None and s.water_object is not None
    job.cancel()
    assert s.trees_object is None and s.water_object is None, "a cancelled run leaves no extras"
    assert same_state(before, mesh_state(obj.data))
    assert [o.name for o in bpy.data.objects if o.name.startswith("Grid ")] == []

    assert bpy.ops.terrain.erode() == {'FINISHED'}
    state = mesh_state(obj.data)
    for name in ("te_streams", "te_pools", "te_trees", "te_stream", "te_pool_depth",
                 "te_vegetation"):
        assert name in state, name
    g = te.data.grid.detect_grid(obj.data)
    cell = g.cell_size
    pool = state["te_pool_depth"]
    assert pool.max() > 0, "the sea fills the low ground"
    trees = s.trees_object
    assert trees.parent == obj and len(trees.data.vertices) > 0
    assert len(trees.data.vertices) == len(te.data.instances.read_trees(obj, g))
    dg = bpy.context.evaluated_depsgraph_get()
    instanced = [i for i in dg.object_instances if i.is_instance and i.parent.name == trees.name]
    assert len(instanced) == len(trees.data.vertices), "one tree instance per simulated tree"
    tree_xyz = positions(trees.data)
    ground = positions(obj.data)
    # trees stand on the ground: their z lies within the local height range around them
    assert tree_xyz[:, 2].min() >= ground[:, 2].min() - 1e-4
    water = positions(s.water_object.data)
    wet = pool > 0
    assert np.allclose(water[wet, 2], ground[wet, 2] + pool[wet], atol=1e-4)
    assert np.all(water[~wet, 2] < ground[~wet, 2])
    # the sea (water connected to the map edge) is flat at sea level and most of the
    # water; separate ponds inland may stand higher, behind their own rims
    sea = _connected_to_edge(wet[g.order].reshape(g.rows, g.cols)).reshape(-1)
    sea_cells = np.zeros_like(wet)
    sea_cells[g.order] = sea
    assert sea_cells.sum() > 0.5 * wet.sum(), "the sea is most of the water"
    assert np.allclose(water[sea_cells, 2], 4.0 * cell, atol=1e-4), "the sea is flat"
    assert bpy.ops.terrain.reset() == {'FINISHED'}
    assert s.trees_object is None and s.water_object is None
    assert "Grid Trees" not in bpy.data.objects and "Grid Water" not in bpy.data.objects


class _FakeContext:
    """What modal() touches: window manager (timer removal, run state), workspace
    status text, screen areas. The bpy module has no event loop to send real events."""

    def __init__(self, rt):
        self.removed, self.status_texts = [], []
        self.window_manager = types.SimpleNamespace(
            terrain_erosion=rt, event_timer_remove=self.removed.append)
        self.workspace = types.SimpleNamespace(status_text_set=self.status_texts.append)
        self.screen = None


def _fake_operator(job):
    methods = {k: v for k, v in te.features.operators.TERRAIN_OT_erode.__dict__.items()
               if k in ("modal", "_end", "_end_or_continue")}
    op = type("FakeErode", (), methods)()
    op._job, op._timer, op.reports = job, object(), []
    op.report = lambda level, text: op.reports.append((level, text))
    return op


def _event(type_, value='PRESS', timer=None, ctrl=False):
    return types.SimpleNamespace(type=type_, value=value, timer=timer, ctrl=ctrl, oskey=False)


def test_a_long_run_reports_its_estimate_before_it_starts_a_short_one_does_not(blender):
    """The estimate (simcore/engine/timing.py) in the operator's report when the job is
    made, and in the status line of every tick; Esc then restores the mesh."""
    obj = add_grid(bpy, n=32)
    obj.terrain_erosion.particles = 500_000_000  # hours of droplets on any grid
    before = mesh_state(obj.data)
    rt = bpy.context.window_manager.terrain_erosion
    rt.running = True
    methods = {k: v for k, v in te.features.operators.TERRAIN_OT_erode.__dict__.items()
               if k in ("_make_job", "modal", "_end", "_end_or_continue")}
    op = type("FakeErode", (), methods)()
    op.particles, op.reports = 0, []
    op.report = lambda level, text: op.reports.append((level, text))
    job = op._make_job(bpy.context)
    assert job.estimate and job.estimate.startswith("estimate: about ")
    assert job.estimate == te.simcore.engine.timing.long_run_note(job.sim)
    assert op.reports == [({'INFO'}, f"Erosion of Grid: {job.estimate}")]
    assert job.rounds_written == 0 and same_state(before, mesh_state(obj.data)), \
        "reported before any work"
    op._job, op._timer = job, object()
    ctx = _FakeContext(rt)
    assert op.modal(ctx, _event('TIMER', timer=op._timer)) == {'RUNNING_MODAL'}
    assert job.estimate in rt.status and job.estimate in ctx.status_texts[-1]
    assert op.modal(ctx, _event('ESC')) == {'CANCELLED'}
    assert same_state(before, mesh_state(obj.data))
    # a short run: no estimate, no report
    obj.terrain_erosion.particles = 500
    op.reports.clear()
    job = op._make_job(bpy.context)
    assert job.estimate is None and op.reports == []
    job.cancel()


def test_modal_translates_events_escape_restores_enter_keeps(blender):
    obj = add_grid(bpy, n=32)
    # far more work than a few ticks can do on any machine (a tick is ~TICK_BUDGET s),
    # so the run is certainly still going when Esc / Enter arrive
    obj.terrain_erosion.particles = 500_000_000
    before = mesh_state(obj.data)
    rt = bpy.context.window_manager.terrain_erosion
    rt.running = True
    job = te.data.job.ErosionJob(obj)
    job.live_update = 0.0
    op = _fake_operator(job)
    ctx = _FakeContext(rt)
    # the rounds run on a worker thread: timer ticks return at once and write the mesh
    # between two rounds
    for _ in range(5000):
        assert op.modal(ctx, _event('TIMER', timer=op._timer)) == {'RUNNING_MODAL'}
        if job.rounds_written > 0:
            break
        time.sleep(0.002)
    assert not same_state(before, mesh_state(obj.data)) and 0 < rt.progress < 1
    assert "Esc cancel" in ctx.status_texts[-1]
    assert op.modal(ctx, _event('TIMER', timer=object())) == {'PASS_THROUGH'}, "other timers"
    assert op.modal(ctx, _event('MOUSEMOVE')) == {'PASS_THROUGH'}
    assert op.modal(ctx, _event('Z', ctrl=True)) == {'RUNNING_MODAL'}, "no undo mid-run"
    assert op.modal(ctx, _event('ESC')) == {'CANCELLED'}
    assert same_state(before, mesh_state(obj.data)), "Esc restores the mesh exactly"
    assert ctx.removed == [op._timer] and ctx.status_texts[-1] is None and not rt.running

    rt.running = True
    job = te.data.job.ErosionJob(obj)
    op, ctx = _fake_operator(job), _FakeContext(rt)
    job.live_update = 0.0
    for _ in range(5000):  # the worker runs; ticks write the mesh between its rounds
        op.modal(ctx, _event('TIMER', timer=op._timer))
        if job.rounds_written > 0:
            break
        time.sleep(0.002)
    shown = mesh_state(obj.data)
    assert op.modal(ctx, _event('RET')) == {'FINISHED'}
    assert not same_state(before, mesh_state(obj.data)), "Enter keeps the result"
    # what the viewport showed, at once (the round under way is not waited for)
    assert same_state(shown, mesh_state(obj.data))
    assert obj.terrain_erosion.rounds_done == job.rounds_written > 0
    assert te.data.job.ErosionJob(obj).sim.rounds_done == job.rounds_written, "resumes there"


def test_modal_runs_to_the_end_and_stops_when_the_object_goes(blender):
    obj = add_grid(bpy, n=24)
    rt = bpy.context.window_manager.terrain_erosion
    rt.running = True
    obj.terrain_erosion.particles = 20000  # 10 rounds: several ticks
    op, ctx = _fake_operator(te.data.job.ErosionJob(obj)), _FakeContext(rt)
    result, ticks = {'RUNNING_MODAL'}, 0
    while result == {'RUNNING_MODAL'} and ticks < 20000:
        result = op.modal(ctx, _event('TIMER', timer=op._timer))
        ticks += 1
        time.sleep(0.002)  # the operator's timer; the rounds run on the worker
    assert result == {'FINISHED'} and not rt.running
    assert obj.terrain_erosion.rounds_done == 10
    rt.running = True
    op, ctx = _fake_operator(te.data.job.ErosionJob(obj)), _FakeContext(rt)
    bpy.data.objects.remove(obj)
    assert op.modal(ctx, _event('TIMER', timer=op._timer)) == {'CANCELLED'}
    assert op.reports and "deleted" in op.reports[-1][1] and not rt.running


def test_linked_library_meshes_are_refused(blender, tmp_path):
    add_grid(bpy, n=12, name="LibGrid")
    lib = tmp_path / "lib.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(lib), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with bpy.data.libraries.load(str(lib), link=True) as (src, dst):
        dst.objects = ["LibGrid"]
    linked = dst.objects[0]
    bpy.context.collection.objects.link(linked)
    bpy.context.view_layer.objects.active = linked
    assert "is linked from a library" in poll_message(bpy.ops.terrain.erode)
    with pytest.raises(te.data.grid.GridError, match="linked from a library"):
        te.data.job.ErosionJob(linked)


def _draw_all_panels(context):
    log = []
    for cls in te.features.panels.classes:
        panel = types.SimpleNamespace(layout=PanelLayout(log))
        if hasattr(cls, "poll") and not cls.poll(context):
            continue
        if hasattr(cls, "draw_header"):
            cls.draw_header(panel, context)
        cls.draw(panel, context)
    return log


def test_panels_draw_every_setting_and_name_real_operators(blender, tmp_path, monkeypatch):
    monkeypatch.setenv("TERRAIN_EROSION_USER_DIR", str(tmp_path))
    obj = add_grid(bpy, n=16)
    context = types.SimpleNamespace(active_object=obj,
                                    window_manager=bpy.context.window_manager)
    log = _draw_all_panels(context)
    props = {name for kind, name in log if kind == "prop"}
    legacy = set()
    for proc, group in te.ui.properties.PROCESS_GROUPS.items():
        params = {f.name: f for f in dataclasses.fields(
            te.simcore.engine.simulation.PROCESSES[proc].params_type)}
        for name in group.__annotations__:
            if name in params and te.simcore.params.is_legacy(params[name]):
                legacy.add((proc, name))
                assert name not in props, f"legacy {proc}.{name} shown at its default"
            else:
                assert name in props, f"{proc}.{name} is not in any panel"
    assert ("hydrology", "max_tries") in legacy and ("trees", "root_radius") in legacy
    # a legacy value an old file set still counts: then it is shown, marked legacy
    obj.terrain_erosion.hydrology.sea_level = 3.0
    log = _draw_all_panels(context)
    assert ("prop", "sea_level") in log
    assert ("operator", "terrain.erode") in log and ("menu", "TERRAIN_MT_presets") in log
    assert ("operator", "terrain.apply_material") in log
    assert any(kind == "label" and "grid" in text for kind, text in log), "status line"
    assert any(kind == "label" and "Blows towards" in text for kind, text in log)
    bpy.context.window_manager.terrain_erosion.running = True
    log = _draw_all_panels(context)
    assert ("operator", "terrain.stop") in log and any(k == "progress" for k, _ in log)
    bpy.context.window_manager.terrain_erosion.running = False
    menu_log = []
    te.ui.presets_ui.TERRAIN_MT_presets.draw(types.SimpleNamespace(layout=PanelLayout(menu_log)),
                                          context)
    assert ("operator", "terrain.preset_apply") in menu_log


def test_a_rain_per_area_that_would_run_for_days_is_a_message_not_a_hang(blender):
    """1e6 particles per square metre on a grid treated as 5 km would be 2.5e13
    particles: the panel says so instead of failing to draw, and Erode refuses it."""
    obj = add_grid(bpy, n=16)
    obj.terrain_erosion.particles_per_area = 1e6
    context = types.SimpleNamespace(active_object=obj,
                                    window_manager=bpy.context.window_manager)
    labels = " ".join(text for kind, text in _draw_all_panels(context) if kind == "label")
    assert "particles, more than 1e+12" in labels, labels
    with pytest.raises(te.simcore.errors.UserError, match="more than 1e"):
        te.data.job.ErosionJob(obj)


# -- rain per area (presets give work per area, tuned for 30 m cells) --------------------
def _target(obj) -> int:
    """Particles the next run on ``obj`` will do (whole batches)."""
    return te.data.job.ErosionJob(obj).sim.target_particles


def test_rain_per_area_sizes_the_run_to_the_grids_world_area(blender):
    small = add_grid(bpy, n=20, size=2.0, name="Small")
    big = add_grid(bpy, n=20, size=4.0, name="Big")  # same cells, twice the spacing
    fine = add_grid(bpy, n=39, size=2.0, name="Fine")  # ~ same extent, 4x the cells
    for obj, size in ((small, 2.0), (big, 4.0), (fine, 2.0)):
        obj.terrain_erosion.real_size = size  # 1:1: rain per square local unit
    preset = te.simcore.formats.presets.find_preset("default")
    assert preset.particles_per_area > 0
    for obj in (small, big, fine):
        obj.terrain_erosion.apply_preset(preset)
        s = obj.terrain_erosion
        assert s.particles_per_area == pytest.approx(preset.particles_per_area, rel=1e-6)
        assert s.particles == preset.particles  # kept as the fallback
    per_area = 500.0  # particles per square local unit: a few thousand per grid here
    for obj in (small, big, fine):
        obj.terrain_erosion.particles_per_area = per_area
    batch = te.data.job.ErosionJob(small).sim.per_round
    for obj in (small, big, fine):
        g = te.data.grid.detect_grid(obj.data)
        area = g.rows * g.cols * g.cell_size ** 2
        expected = round(per_area * area)
        assert obj.terrain_erosion.work(g.rows, g.cols, g.cell_size) == expected
        assert expected <= _target(obj) < expected + batch, obj.name
    assert g.cell_size != te.data.grid.detect_grid(small.data).cell_size
    # twice the spacing: four times the area and the rain; the finer grid of about the
    # same extent gets about the same rain, not four times as much
    w = {o.name: o.terrain_erosion.work(*_extent(o)) for o in (small, big, fine)}
    assert w["Big"] == pytest.approx(4 * w["Small"], rel=0.01)
    assert w["Fine"] == pytest.approx(w["Small"], rel=0.1)


def _extent(obj):
    g = te.data.grid.detect_grid(obj.data)
    return g.rows, g.cols, g.cell_size


def test_particles_field_wins_and_old_files_use_it(blender):
    obj = add_grid(bpy, n=16)
    s = obj.terrain_erosion
    assert s.particles_per_area == 0.0, "default (and .blend files saved before): off"
    s.particles = 5000
    assert 5000 <= _target(obj) < 5000 + te.data.job.ErosionJob(obj).sim.per_round
    s.apply_preset(te.simcore.formats.presets.find_preset("quick_preview"))
    assert s.particles_per_area > 0
    s.particles = 7000  # the artist types a total: it is the amount of work again
    assert s.particles_per_area == 0.0
    assert s.work(*_extent(obj)) == 7000
    # a user preset saved from the object keeps its rain per area
    s.particles_per_area = 0.25
    saved = s.to_preset("mine")
    assert saved.particles_per_area == 0.25 and saved.particles == 7000
    other = add_grid(bpy, n=16, name="Other").terrain_erosion
    other.apply_preset(saved)
    assert other.particles_per_area == pytest.approx(0.25) and other.particles == 7000
    # an explicit particle count of the operator beats both
    assert te.data.job.ErosionJob(obj, 300).sim.target_particles < 300 + 2048


def test_batch_uses_rain_per_area_unless_particles_are_given(blender, capsys):
    obj = add_grid(bpy, n=24, size=40.0, name="Terrain")  # 24 x 24, ~1.74 m cells
    obj.terrain_erosion.real_size = 40.0  # 1:1 (automatic would make it 5 km)
    preset = te.simcore.formats.presets.find_preset("quick_preview")
    g = te.data.grid.detect_grid(obj.data)
    expected = preset.work(types.SimpleNamespace(shape=(g.rows, g.cols),
                                                 cell_size=g.cell_size))
    assert expected != preset.particles
    assert te.features.batch.main(["--object", "Terrain", "--preset", "quick_preview"]) == 0
    s = obj.terrain_erosion
    assert s.particles_per_area == pytest.approx(preset.particles_per_area, rel=1e-6)
    done = int(capsys.readouterr().out.split("done, ")[1].split(" ")[0])
    assert expected <= done < expected + 2048 * 2
    assert te.features.batch.main(["--object", "Terrain", "--preset", "quick_preview",
                          "--particles", "3000"]) == 0
    done = int(capsys.readouterr().out.split("done, ")[1].split(" ")[0])
    assert 3000 <= done < 3000 + 2048, "an explicit total wins"
    assert s.particles == 3000 and s.particles_per_area == 0.0


def test_panel_shows_64bit_seed_and_particles_for_this_grid(blender):
    obj = add_grid(bpy, n=16)
    context = types.SimpleNamespace(active_object=obj,
                                    window_manager=bpy.context.window_manager)
    s = obj.terrain_erosion
    s.real_size = 2.0  # 1:1: rain per square local unit
    log = _draw_all_panels(context)
    assert ("prop", "seed_text") in log and ("prop", "particles_per_area") in log
    assert not any("particles for this grid" in text for kind, text in log if kind == "label")
    s.set_full_seed(2**40 + 7)
    assert s.seed_text == str(2**40 + 7) and s.full_seed() == 2**40 + 7
    s.particles_per_area = 2.0
    log = _draw_all_panels(context)
    labels = [text for kind, text in log if kind == "label" and "for this grid" in text]
    expected = s.work(*_extent(obj))
    assert labels == [f"\u2248 {expected:,} particles for this grid"]
    assert expected == round(2.0 * 16 * 16 * te.data.grid.detect_grid(obj.data).cell_size ** 2)
