"""Bake to the timeline in real Blender (bpy module): exact playback per frame, renders
of baked frames, moved/missing caches, Free Cache."""

from __future__ import annotations

import random
import shutil

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


def saved_terrain(tmp_path, n=24, name="Dunes"):
    obj = add_grid(bpy, n=n, size=4.0, relief=1.0, name=name)
    s = obj.terrain_erosion
    s.seed = 7
    s.real_size = 4.0  # 1:1: the frames are compared with simcore on the local numbers
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    return bpy.data.objects[name]


def bake(obj, start=1, end=4, per_frame=400):
    states = {}

    def report(i, _n):
        states[start + i - 1] = mesh_state(obj.data)

    b = obj.terrain_bake
    b.frame_start, b.frame_end, b.particles_per_frame = start, end, per_frame
    manifest = te.features.bake.bake(obj, start, end, per_frame, report)
    return manifest, states


@pytest.mark.parametrize("compress", [True, False])
def test_each_frame_plays_back_exactly_its_snapshot(blender, tmp_path, compress):
    obj = saved_terrain(tmp_path)
    obj.terrain_bake.compress = compress
    g = te.data.grid.detect_grid(obj.data)
    z0 = positions(obj.data)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    params = obj.terrain_erosion.enabled_params()
    manifest, states = bake(obj, 1, 5, 400)
    assert obj.terrain_bake.cache_dir.startswith("//"), "relative to the .blend"
    folder = tmp_path / "terrain_cache" / "Dunes"
    assert sorted(p.name for p in folder.iterdir()) == [
        "cache.json", *(f"frame_{f:06d}.npz" for f in range(1, 6))]
    assert te.simcore.formats.bake_cache.read_manifest(folder / "cache.json") == manifest, \
        "the format's reader takes the manifest the bake writes"
    assert states[1] != {} and not same_state(states[1], states[5])
    scene = bpy.context.scene
    frames = [1, 2, 3, 4, 5, 3, 1, 5, 2]
    random.Random(0).shuffle(frames)
    for f in frames + [0, 9]:
        scene.frame_set(f)
        want = states[min(max(f, 1), 5)]
        assert same_state(want, mesh_state(obj.data)), f"frame {f}"
    # the heights are the simulation's after (frame - 1) * 400 particles
    sim = te.simcore.engine.simulation
    for f in (1, 3):
        terrain = te.simcore.terrain.Terrain.from_heights(z0, g.cell_size)
        sim.Simulation(terrain, params, seed=7, particles=(f - 1) * 400).run()
        scene.frame_set(f)
        z = positions(obj.data)[:, 2][g.order].reshape(g.rows, g.cols)
        assert np.array_equal(z, (terrain.height() * g.cell_size).astype(np.float32))
    assert te.features.bake.cache_size(obj) == sum(p.stat().st_size for p in folder.iterdir())
    size = (folder / "frame_000005.npz").stat().st_size
    with np.load(folder / "frame_000005.npz") as npz:
        raw = sum(npz[k].nbytes for k in npz.files)
    assert (size < 0.9 * raw) == compress, (size, raw)


def test_trees_and_water_play_back_too(blender, tmp_path):
    obj = saved_terrain(tmp_path, n=20, name="Wet")
    s = obj.terrain_erosion
    s.droplets.enabled = False
    s.hydrology.enabled = True
    s.trees.enabled = True
    _, states = bake(obj, 1, 3, 500)
    water, trees = s.water_object, s.trees_object
    assert water is not None and trees is not None
    snap = {}
    for f in (1, 2, 3):
        bpy.context.scene.frame_set(f)
        snap[f] = (mesh_state(water.data), mesh_state(trees.data), mesh_state(obj.data))
        assert same_state(states[f], snap[f][2])
    bpy.context.scene.frame_set(1)
    bpy.context.scene.frame_set(3)
    assert same_state(snap[3][0], mesh_state(water.data))
    assert same_state(snap[3][1], mesh_state(trees.data))


def _emission_of(name):
    mat = bpy.data.materials.new("show")
    if mat.node_tree is None:  # 4.2/4.5 make the node tree only with use_nodes
        mat.use_nodes = True
    nt = mat.node_tree
    for node in list(nt.nodes):
        nt.nodes.remove(node)
    attr = nt.nodes.new("ShaderNodeAttribute")
    attr.attribute_type, attr.attribute_name = 'GEOMETRY', name
    em = nt.nodes.new("ShaderNodeEmission")
    out = nt.nodes.new("ShaderNodeOutputMaterial")
    nt.links.new(attr.outputs["Fac"], em.inputs["Strength"])
    nt.links.new(em.outputs["Emission"], out.inputs["Surface"])
    return mat


def _read(path):
    img = bpy.data.images.load(str(path), check_existing=False)
    w, h = img.size
    px = np.empty(w * h * 4, np.float32)
    img.pixels.foreach_get(px)
    bpy.data.images.remove(img)
    return px.reshape(h, w, 4)[..., :3]


def test_rendering_a_baked_frame_in_background_uses_the_cache(blender, tmp_path):
    obj = saved_terrain(tmp_path)
    bake(obj, 1, 4, 600)
    obj.data.materials.append(_emission_of("te_eroded"))
    scene = bpy.context.scene
    bpy.ops.object.camera_add(location=(0, 0, 10))
    cam = bpy.context.active_object
    cam.data.type, cam.data.ortho_scale = 'ORTHO', 4.2
    scene.camera = cam
    scene.render.engine = 'CYCLES'
    scene.cycles.device, scene.cycles.samples = 'CPU', 1
    scene.render.resolution_x = scene.render.resolution_y = 24
    scene.render.image_settings.file_format = 'OPEN_EXR'
    scene.view_settings.view_transform = 'Standard'
    scene.frame_set(1)  # the mesh shows frame 1 (nothing eroded yet)
    # an animation render of frame 4 only: Blender itself changes the frame
    scene.frame_start = scene.frame_end = 4
    scene.render.filepath = str(tmp_path / "anim_")
    bpy.ops.render.render(animation=True)
    anim = _read(tmp_path / "anim_0004.exr")
    scene.frame_set(4)
    scene.render.filepath = str(tmp_path / "still4.exr")
    bpy.ops.render.render(write_still=True)
    still4 = _read(tmp_path / "still4.exr")
    scene.frame_set(1)
    scene.render.filepath = str(tmp_path / "still1.exr")
    bpy.ops.render.render(write_still=True)
    still1 = _read(tmp_path / "still1.exr")
    assert still1.max() == 0 and still4.max() > 0, "frame 1: nothing eroded; frame 4: some"
    assert np.allclose(anim, still4, atol=1e-6), "the animation render used frame 4's cache"


def test_moved_or_missing_cache_gives_a_message_not_a_crash(blender, tmp_path, capsys):
    obj = saved_terrain(tmp_path)
    bake(obj, 1, 3, 300)
    bpy.ops.wm.save_mainfile()
    scene = bpy.context.scene
    scene.frame_set(2)
    shown = mesh_state(obj.data)
    shutil.move(tmp_path / "terrain_cache", tmp_path / "elsewhere")
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "scene.blend"))
    obj = bpy.data.objects["Dunes"]
    bpy.context.scene.frame_set(3)  # no exception
    text = te.features.bake.message(obj)
    assert "missing" in text and "moved" in text and "bake again" in text
    assert same_state(shown, mesh_state(obj.data)), "the mesh stays as it was"
    assert "missing" in capsys.readouterr().err, "one line on stderr in background"
    # pointing the cache folder to the new place plays back again
    obj.terrain_bake.cache_dir = "//elsewhere/Dunes"
    bpy.context.scene.frame_set(3)
    assert te.features.bake.message(obj) == ""
    # a damaged frame file is a message too
    (tmp_path / "elsewhere" / "Dunes" / "frame_000001.npz").write_bytes(b"garbage")
    bpy.context.scene.frame_set(1)
    assert "damaged" in te.features.bake.message(obj)


def test_free_cache_removes_it_and_unsaved_files_are_refused(blender, tmp_path):
    obj = saved_terrain(tmp_path)
    bake(obj, 1, 2, 200)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.free_cache() == {'FINISHED'}
    assert not (tmp_path / "terrain_cache").exists()
    assert not obj.terrain_bake.baked
    before = mesh_state(obj.data)
    bpy.context.scene.frame_set(2)
    assert same_state(before, mesh_state(obj.data)), "no playback after Free Cache"
    bpy.ops.wm.read_factory_settings(use_empty=True)
    te.unregister()
    te.register()
    obj = add_grid(bpy, n=12)
    with pytest.raises(te.simcore.errors.UserError, match="Save the .blend first"):
        te.features.bake.bake(obj, 1, 3, 100)
    with pytest.raises(RuntimeError, match="Save the .blend first"):
        bpy.ops.terrain.bake()


def test_bake_operator_uses_the_panel_settings_and_prints_progress(blender, tmp_path, capsys):
    obj = saved_terrain(tmp_path, n=16)
    b = obj.terrain_bake
    b.frame_start, b.frame_end, b.particles_per_frame = 3, 5, 200
    bpy.context.view_layer.objects.active = obj
    bpy.context.scene.frame_set(4)
    assert bpy.ops.terrain.bake() == {'FINISHED'}
    assert b.baked and (b.baked_start, b.baked_end) == (3, 5)
    assert "baked frame 5 (3/3)" in capsys.readouterr().out
    folder = tmp_path / "terrain_cache" / "Dunes"
    assert sorted(p.name for p in folder.glob("frame_*")) == [
        "frame_000003.npz", "frame_000004.npz", "frame_000005.npz"]
    with np.load(folder / "frame_000004.npz") as npz:  # the current frame is shown
        assert np.array_equal(npz["z"], positions(obj.data)[:, 2])
