"""The main job, in real Blender (the bpy module): make a grid terrain, erode it with
the Erode operator and the default preset, save demo/terrain.blend and render
demo/terrain.png with Cycles on the CPU. Also writes the heightmaps and a shaded
before/after picture made without Blender.

The terrain is real-world uplands in metres (``simcore generate``'s defaults): 30 m
cells, relief 0.12 x the extent (about 920 m on 256 x 256 cells = 7.7 km), and the
preset's rain per area decides the number of particles."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
import bpy  # noqa: E402

from tools.stage import import_staged  # noqa: E402

te = import_staged()
from terrain_erosion.simcore.formats.images import save_png, shaded_relief  # noqa: E402
from terrain_erosion.simcore.formats.presets import find_preset  # noqa: E402
from terrain_erosion.simcore.formats.states import save_heights  # noqa: E402
from terrain_erosion.simcore.noise import DEFAULT_CELL_SIZE, upland_terrain  # noqa: E402
from terrain_erosion.simcore.terrain import Terrain  # noqa: E402


def make_grid(n: int, size: float, heights: np.ndarray) -> bpy.types.Object:
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=n - 1, y_subdivisions=n - 1, size=size)
    obj = bpy.context.active_object
    obj.name = "Terrain"
    me = obj.data
    co = np.empty(len(me.vertices) * 3, np.float32)
    me.attributes["position"].data.foreach_get("vector", co)
    co[2::3] = heights.ravel()  # primitive grid: row-major, x fastest
    me.attributes["position"].data.foreach_set("vector", co)
    me.update()
    bpy.ops.object.shade_smooth()
    return obj


def terrain_material() -> bpy.types.Material:
    """Rock and grass by slope, sand where sediment lies (te_sediment), blue along
    rivers (te_streams) and in pools (te_pools); the water object adds lake surfaces."""
    mat = bpy.data.materials.new("Terrain Erosion Demo")
    nt = mat.node_tree
    nodes, links = nt.nodes, nt.links
    bsdf = nodes["Principled BSDF"]
    bsdf.inputs["Roughness"].default_value = 0.9

    def attribute(name):
        node = nodes.new("ShaderNodeAttribute")
        node.attribute_type = 'GEOMETRY'
        node.attribute_name = name
        return node

    def mix(factor_socket, a, b):
        node = nodes.new("ShaderNodeMix")
        node.data_type = 'RGBA'
        links.new(factor_socket, node.inputs["Factor"])
        node.inputs["A"].default_value = a if isinstance(a, tuple) else (0, 0, 0, 1)
        node.inputs["B"].default_value = b if isinstance(b, tuple) else (0, 0, 0, 1)
        if not isinstance(a, tuple):
            links.new(a, node.inputs["A"])
        if not isinstance(b, tuple):
            links.new(b, node.inputs["B"])
        return node.outputs["Result"]

    geometry = nodes.new("ShaderNodeNewGeometry")
    sep = nodes.new("ShaderNodeSeparateXYZ")
    links.new(geometry.outputs["Normal"], sep.inputs["Vector"])
    ramp = nodes.new("ShaderNodeMapRange")
    ramp.inputs["From Min"].default_value = 0.80
    ramp.inputs["From Max"].default_value = 0.95
    links.new(sep.outputs["Z"], ramp.inputs["Value"])
    ground = mix(ramp.outputs["Result"], (0.22, 0.19, 0.16, 1), (0.16, 0.24, 0.09, 1))
    # alluvium and colluvium: a dry, grassy brown (bright sand read as snow from afar)
    ground = mix(attribute("te_sediment").outputs["Fac"], ground, (0.34, 0.29, 0.15, 1))
    streams = nodes.new("ShaderNodeMapRange")  # rivers: stream value 0.2 .. 0.6
    streams.inputs["From Min"].default_value = 0.2
    streams.inputs["From Max"].default_value = 0.6
    links.new(attribute("te_streams").outputs["Fac"], streams.inputs["Value"])
    ground = mix(streams.outputs["Result"], ground, (0.06, 0.13, 0.2, 1))
    ground = mix(attribute("te_pools").outputs["Fac"], ground, (0.05, 0.16, 0.28, 1))
    links.new(ground, bsdf.inputs["Base Color"])
    return mat


def scene_setup(obj: bpy.types.Object, size: float, relief: float, resolution: int) -> None:
    scene = bpy.context.scene
    bpy.ops.object.camera_add(location=(size * 0.85, -size * 0.85, relief + size * 0.55))
    cam = bpy.context.active_object
    direction = np.array([0.0, 0.0, relief * 0.35]) - np.array(cam.location)
    cam.rotation_euler = _look_at(direction)
    cam.data.lens = 32
    cam.data.clip_end = size * 5.0  # kilometres of terrain
    scene.camera = cam
    bpy.ops.object.light_add(type='SUN', rotation=(0.75, 0.0, 0.6))
    bpy.context.active_object.data.energy = 5.0
    world = bpy.data.worlds.new("Sky")
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.5, 0.62, 0.8, 1)
    world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.8
    scene.world = world
    scene.render.engine = 'CYCLES'
    scene.cycles.device = 'CPU'
    scene.cycles.samples = 32
    scene.cycles.use_denoising = True
    scene.render.resolution_x = resolution
    scene.render.resolution_y = resolution * 9 // 16
    scene.render.image_settings.file_format = 'PNG'


def _look_at(direction: np.ndarray):
    from mathutils import Vector
    return Vector(tuple(direction)).to_track_quat('-Z', 'Y').to_euler()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=256, help="grid side in vertices (256)")
    ap.add_argument("--cell-size", type=float, default=DEFAULT_CELL_SIZE,
                    help="metres between vertices (30)")
    ap.add_argument("--preset", default="default", help="preset id (default)")
    ap.add_argument("--resolution", type=int, default=960, help="render width (960)")
    ap.add_argument("--no-render", action="store_true", help="skip the Cycles render")
    ap.add_argument("--render-before", action="store_true",
                    help="also render the terrain before eroding (terrain_before.png)")
    ap.add_argument("--out", default=str(ROOT / "demo"), help="output folder (demo/)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    n, cell = args.size, args.cell_size
    size = cell * (n - 1)  # 7.65 km at 256 x 30 m
    heights = upland_terrain(n, seed=3, cell_size=cell)
    relief = float(heights.max())
    if args.render_before and not args.no_render:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        before = make_grid(n, size, heights)
        before.data.materials.append(terrain_material())
        scene_setup(before, size, relief, args.resolution)
        bpy.context.scene.render.filepath = str(out / "terrain_before.png")
        bpy.ops.render.render(write_still=True)
        print(f"demo: rendered {out / 'terrain_before.png'}", flush=True)

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.context.preferences.filepaths.save_version = 0  # no terrain.blend1 backups
    te.register()
    obj = make_grid(n, size, heights)
    preset = find_preset(args.preset)
    # the preset's rain per area (stored by apply_preset) times this grid's area, as
    # the panel's "particles for this grid" shows; the same count as simcore's
    s = obj.terrain_erosion
    s.apply_preset(preset)
    work = s.work(n, n, cell)
    scale = s.real_scale(n, n, cell)  # a grid under 1 km across is treated as 5 km
    world = Terrain.from_heights(heights / scale.height_unit, scale.world_cell,
                                 world_units=False)
    assert work == preset.work(world), "add-on = simcore"
    print(f"demo: eroding {n}x{n} grid with preset '{preset.name}' ({work} particles; "
          f"{scale.describe()})", flush=True)
    t0 = time.perf_counter()
    result = bpy.ops.terrain.erode()
    print(f"demo: Erode -> {result} in {time.perf_counter() - t0:.1f} s", flush=True)
    if result != {'FINISHED'}:
        return 1
    obj.data.materials.append(terrain_material())
    scene_setup(obj, size, relief, args.resolution)
    blend = out / "terrain.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    print(f"demo: saved {blend}", flush=True)

    # heightmaps and a quick shaded comparison, straight from the mesh attributes
    g = te.grid.detect_grid(obj.data)
    co = te.grid.read_positions(obj.data)
    after = co[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    sediment = te.grid.read_float_layer(obj.data, "te_sediment_depth", g)
    save_heights(out / "heightmap_before.npy", heights)
    save_heights(out / "heightmap_after.npy", after)
    gap = np.full((n, 8, 3), 255, np.uint8)
    save_png(out / "before_after.png",
             np.concatenate([shaded_relief(heights / cell)[::-1], gap,
                             shaded_relief(after / cell, sediment / cell)[::-1]], axis=1))
    if not args.no_render:
        t0 = time.perf_counter()
        bpy.context.scene.render.filepath = str(out / "terrain.png")
        bpy.ops.render.render(write_still=True)
        print(f"demo: rendered {out / 'terrain.png'} in {time.perf_counter() - t0:.1f} s")
    te.unregister()
    return 0


if __name__ == "__main__":
    sys.exit(main())
