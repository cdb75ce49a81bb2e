"""The main job, in real Blender (the bpy module): make a grid terrain, erode it with
the Erode operator and the default preset, save demo/terrain.blend and render
demo/terrain.png with Cycles on the CPU. Also writes the heightmaps and a shaded
before/after picture made without Blender.

The terrain is real-world uplands in metres (``simcore generate``'s defaults): 30 m
cells, relief 0.12 x the extent (about 920 m on 256 x 256 cells = 7.7 km), and the
preset's rain per area decides the number of particles."""

from __future__ import annotations

import argparse
import math
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
from terrain_erosion.simcore.generators.noise import DEFAULT_CELL_SIZE, upland_terrain  # noqa: E402
from terrain_erosion.simcore.generators.uplands import drained_uplands  # noqa: E402
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


def dress(obj: bpy.types.Object) -> None:
    """The add-on's look: its terrain material (one click, as in the panel) and its
    lakes mesh (flat water with a clean waterline and shore waves) in place of the
    per-vertex water surface, whose edges follow the grid."""
    bpy.context.view_layer.objects.active = obj
    bpy.ops.terrain.apply_material()
    ice = obj.data.attributes.get("te_ice")
    if ice is not None:  # a cold preset that left ice: the glaciers as a surface
        values = np.empty(len(ice.data), np.float32)
        ice.data.foreach_get("value", values)
        if values.max() > 0.0:
            try:
                bpy.ops.terrain.ice_surface()
            except RuntimeError as exc:  # all of it thinner than Min Ice Thickness
                print(f"demo: no ice surface: {exc}".strip(), flush=True)
            bpy.context.view_layer.objects.active = obj
    water = obj.terrain_erosion.water_object
    try:
        te.features.water_data.update_lakes(obj)
    except te.features.water_data.WaterDataError as exc:  # a run without lakes
        print(f"demo: {exc}", flush=True)
    else:
        if water is not None:
            water.hide_render = True
        waves = bpy.data.materials[te.features.water_data.WAVES].node_tree.nodes
        group = next(n for n in waves if n.bl_idname == 'ShaderNodeGroup')
        cell = te.data.grid.detect_grid(obj.data).cell_size
        group.inputs["Wavelength"].default_value = 0.3 * cell  # ripples, not 120 m rollers
        group.inputs["Reach"].default_value = 1.5 * cell


def ground_z(obj: bpy.types.Object, x: float, y: float) -> float:
    """Local height of ``obj``'s vertex nearest to local (x, y)."""
    co = te.data.grid.read_positions(obj.data)
    return float(co[np.argmin((co[:, 0] - x) ** 2 + (co[:, 1] - y) ** 2), 2])


#: The demo's view: camera over map fractions (x, y) at a height above the ground (a
#: fraction of the map's side), heading to map fractions (x, y), pitched down (degrees).
VIEW = ((0.05, 0.6), 0.035, (0.6, 0.8), 11.0)
#: ``--view overview``: high over the south-west corner, looking over the whole range
#: (for mountains whose relief is a large share of the map)
OVERVIEW = ((0.02, 0.02), 0.3, (0.55, 0.55), 24.0)


def place_camera(obj: bpy.types.Object, size: float, view) -> bpy.types.Object:
    from mathutils import Vector
    (fx, fy), above, (tx, ty), down = view

    def at(fx: float, fy: float, above: float) -> Vector:  # fractions of the map
        x, y = (fx - 0.5) * size, (fy - 0.5) * size
        return Vector((x, y, ground_z(obj, x, y) + above))

    eye, target = at(fx, fy, above * size), at(tx, ty, 0.0)
    cam = bpy.context.scene.camera
    if cam is None:
        bpy.ops.object.camera_add()
        cam = bpy.context.active_object
    cam.location = eye
    heading = (target - eye).to_2d().normalized()
    pitch = math.radians(-down)
    look = Vector((heading.x * math.cos(pitch), heading.y * math.cos(pitch), math.sin(pitch)))
    cam.rotation_euler = look.to_track_quat('-Z', 'Y').to_euler()
    return cam


def scene_setup(obj: bpy.types.Object, size: float, resolution: int,
                view: tuple = VIEW) -> None:
    """A low camera (about 270 m over the ground at the default size) on the western
    hills looking east-north-east over the lake basin to the snowy ridge; a low warm
    sun from the south (from the right, so the relief is side-lit) with soft shadows
    (3 degrees wide); a gradient sky that lights the shadows; Cycles on the CPU."""
    scene = bpy.context.scene

    cam = place_camera(obj, size, view)
    cam.data.lens = 32
    cam.data.clip_start, cam.data.clip_end = size * 1e-4, size * 3.0
    scene.camera = cam
    # sun: 22 degrees above the horizon, from the south-south-east (shadows run north)
    bpy.ops.object.light_add(type='SUN', rotation=(math.radians(68), 0.0,
                                                   math.radians(25)))
    sun = bpy.context.active_object.data
    sun.energy, sun.angle, sun.color = 5.0, math.radians(3.0), (1.0, 0.9, 0.78)
    scene.world = sky_world()
    scene.render.engine = 'CYCLES'
    scene.cycles.device = 'CPU'
    scene.cycles.samples = 12
    scene.cycles.use_denoising = True
    scene.cycles.max_bounces = 4
    for look in ('AgX - Medium High Contrast', 'Medium High Contrast'):  # 4.x / 5.x names
        try:
            scene.view_settings.look = look
            break
        except TypeError:
            pass
    scene.render.resolution_x = resolution
    scene.render.resolution_y = resolution * 9 // 16
    scene.render.image_settings.file_format = 'PNG'


def sky_world() -> bpy.types.World:
    """A sky that works in every Blender line and engine: a vertical gradient from a
    hazy horizon to a blue zenith (by the view direction's Z), bright enough to light
    the shadows."""
    world = bpy.data.worlds.new("Sky")
    if world.node_tree is None:  # 4.2-4.5; 5.x worlds come with a tree
        world.use_nodes = True
    nt = world.node_tree
    coords = nt.nodes.new("ShaderNodeTexCoord")
    xyz = nt.nodes.new("ShaderNodeSeparateXYZ")
    nt.links.new(coords.outputs["Generated"], xyz.inputs["Vector"])
    ramp = nt.nodes.new("ShaderNodeValToRGB")
    stops = ramp.color_ramp.elements
    stops[0].position, stops[0].color = 0.0, (0.62, 0.68, 0.76, 1)   # haze at the horizon
    stops[1].position, stops[1].color = 0.4, (0.12, 0.27, 0.62, 1)   # blue overhead
    nt.links.new(xyz.outputs["Z"], ramp.inputs["Fac"])
    background = nt.nodes["Background"]
    nt.links.new(ramp.outputs["Color"], background.inputs["Color"])
    background.inputs["Strength"].default_value = 0.7
    return world


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=256, help="grid side in vertices (256)")
    ap.add_argument("--cell-size", type=float, default=DEFAULT_CELL_SIZE,
                    help="metres between vertices (30)")
    ap.add_argument("--preset", default="default", help="preset id (default)")
    ap.add_argument("--drained", action="store_true",
                    help="start from generate's drained uplands (seed 3) instead of the "
                         "raw noise: what the landscape and cold presets expect")
    ap.add_argument("--relief", type=float, default=None,
                    help="rescale the start to this relief in metres (the cold presets "
                         "want 1000 or more)")
    ap.add_argument("--resolution", type=int, default=960, help="render width (960)")
    ap.add_argument("--view", choices=("low", "overview"), default="low",
                    help="low: the camera low over the western hills (the default); "
                         "overview: high over a corner, the whole range")
    ap.add_argument("--no-render", action="store_true", help="skip the Cycles render")
    ap.add_argument("--render-before", action="store_true",
                    help="also render the terrain before eroding (terrain_before.png)")
    ap.add_argument("--out", default=str(ROOT / "demo"), help="output folder (demo/)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    n, cell = args.size, args.cell_size
    view = OVERVIEW if args.view == "overview" else VIEW
    size = cell * (n - 1)  # 7.65 km at 256 x 30 m
    if args.drained:
        heights = drained_uplands(n, seed=3, cell_size=cell, relief=args.relief)
    else:
        heights = upland_terrain(n, seed=3, cell_size=cell)
        if args.relief is not None:
            heights = heights * (args.relief / max(float(np.ptp(heights)), 1e-9))
    if args.render_before and not args.no_render:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        before = make_grid(n, size, heights)
        te.features.material.apply_material(before)
        scene_setup(before, size, args.resolution, view)
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
    s.real_size = size  # the grid is modelled in metres: 1 unit = 1 m, as simcore's world
    work = s.work(n, n, cell)
    scale = s.real_scale(n, n, cell)
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
    dress(obj)
    scene_setup(obj, size, args.resolution, view)
    blend = out / "terrain.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    print(f"demo: saved {blend}", flush=True)

    # heightmaps and a quick shaded comparison, straight from the mesh attributes
    g = te.data.grid.detect_grid(obj.data)
    co = te.data.grid.read_positions(obj.data)
    after = co[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    sediment = te.data.grid.read_float_layer(obj.data, "te_sediment_depth", g)
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
