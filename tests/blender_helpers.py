"""Helpers for tests that run in real Blender (the bpy module)."""

from __future__ import annotations

import contextlib
import importlib.util
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def staged_addon():
    """Stage the extension package (addon + simcore + presets) and import it as
    ``terrain_erosion`` (tools/stage.py, loaded by path: no sys.path edits)."""
    spec = importlib.util.spec_from_file_location("_te_stage", ROOT / "tools" / "stage.py")
    stage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stage)
    return stage.import_staged()


@contextlib.contextmanager
def registered_addon() -> Iterator:
    """A factory-fresh Blender with the add-on registered; unregistered afterwards."""
    import bpy
    te = staged_addon()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    te.register()
    try:
        yield bpy
    finally:
        te.unregister()


def positions(me) -> np.ndarray:
    co = np.empty(len(me.vertices) * 3, np.float32)
    me.attributes["position"].data.foreach_get("vector", co)
    return co.reshape(-1, 3)


def set_z(me, z) -> None:
    co = positions(me)
    co[:, 2] = z
    me.attributes["position"].data.foreach_set("vector", co.ravel())
    me.update()


def add_grid(bpy, n=32, size=2.0, relief=0.4, seed=1, name=None):
    """An Add > Mesh > Grid with fractal hills (row-major, x fastest)."""
    from terrain_erosion.simcore.generators.noise import fractal_terrain
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=n - 1, y_subdivisions=n - 1, size=size)
    obj = bpy.context.active_object
    if name:
        obj.name = name
    set_z(obj.data, fractal_terrain(n, seed=seed, relief=relief).ravel())
    return obj


def mesh_state(me) -> dict:
    """Every attribute's raw data (for bit-identical comparisons)."""
    out = {}
    for attr in me.attributes:
        if attr.data_type in ("FLOAT_COLOR", "BYTE_COLOR"):
            key, width, dtype = "color", 4, np.float32
        elif attr.data_type == "FLOAT_VECTOR":
            key, width, dtype = "vector", 3, np.float32
        elif attr.data_type == "FLOAT2":
            key, width, dtype = "vector", 2, np.float32
        elif attr.data_type == "FLOAT":
            key, width, dtype = "value", 1, np.float32
        elif attr.data_type in ("INT", "INT8"):
            key, width, dtype = "value", 1, np.int32
        elif attr.data_type == "BOOLEAN":
            key, width, dtype = "value", 1, bool
        else:
            continue
        data = np.empty(len(attr.data) * width, dtype)
        attr.data.foreach_get(key, data)
        out[attr.name] = data
    return out


def same_state(a: dict, b: dict) -> bool:
    def equal(x, y):
        return np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
    return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)


def numpy_grid(bpy, n: int, cell: float = 1.0, relief: float = 3.0, seed: int = 1,
               name: str = "Big"):
    """An n x n quad grid of ``cell`` spacing built from numpy, with fractal hills
    (primitive_grid_add takes seconds at 1024², 13 s at 2048²); the active object."""
    from terrain_erosion.features.export import make_grid_object
    from terrain_erosion.simcore.generators.noise import fractal_terrain
    z = fractal_terrain(n, seed=seed) * relief * cell
    obj = make_grid_object(name, z, cell, cell, 0.0, 0.0)
    bpy.context.view_layer.objects.active = obj
    return obj


class PanelRecorder:
    """A stand-in for a panel's layout (panels cannot be drawn in background mode): it
    records what a draw() puts on it as (kind, name or text, label text) tuples --
    ("prop", property, text), ("label", text, None), ("operator", idname, text),
    ("menu", idname, text), ("progress", text, None) -- and checks that every property
    and operator it names exists."""

    def __init__(self, log: list | None = None) -> None:
        self.log = [] if log is None else log
        self.scale_y, self.use_property_split, self.active = 1.0, False, True

    def _child(self, *args, **kw) -> PanelRecorder:
        return PanelRecorder(self.log)

    box = row = column = split = _child

    def prop(self, data, name, text=None, **kw):
        assert name in data.bl_rna.properties, f"{data!r} has no property {name!r}"
        self.log.append(("prop", name, text))

    def prop_search(self, data, name, *args, **kw):
        assert name in data.bl_rna.properties, f"{data!r} has no property {name!r}"
        self.log.append(("prop", name, kw.get("text")))

    def label(self, text="", icon='NONE'):
        self.log.append(("label", text, None))

    def operator(self, idname, text=None, icon='NONE', **kw):
        import types

        import bpy
        module, name = idname.split(".")
        assert hasattr(getattr(bpy.ops, module), name), idname
        self.log.append(("operator", idname, text))
        return types.SimpleNamespace()  # takes operator properties like .filepath

    def menu(self, idname, text="", icon='NONE'):
        self.log.append(("menu", idname, text))

    def progress(self, factor=0.0, type='BAR', text=""):
        self.log.append(("progress", text, None))

    def separator(self, *args, **kw):
        pass

    def template_list(self, listtype, list_id, data, propname, active_data,
                      active_propname, **kw):
        import bpy
        assert hasattr(bpy.types, listtype), listtype
        for owner, name in ((data, propname), (active_data, active_propname)):
            assert name in owner.bl_rna.properties, f"{owner!r} has no property {name!r}"
        self.log.append(("template_list", listtype, propname))


def render_pixels(bpy, te, engine: str, path, size: int, frame: int | None = None,
                  plain_srgb: bool = False) -> np.ndarray:
    """Render the scene ``size`` x ``size`` with ``engine`` ('CYCLES' or 'BLENDER_EEVEE',
    the line's own EEVEE id), few samples, at ``frame`` (None: the current one) into
    ``path`` (PNG) and return its pixels (rows, cols, RGBA floats). ``plain_srgb``: the
    Standard view transform, so brightness keeps the albedos' order."""
    scene = bpy.context.scene
    scene.render.engine = te.data.compat.eevee_engine() if engine == "BLENDER_EEVEE" else engine
    scene.render.resolution_x = scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    if plain_srgb:
        scene.view_settings.view_transform = 'Standard'
    if engine == 'CYCLES':
        scene.cycles.device = 'CPU'
        scene.cycles.samples = 4
        scene.cycles.use_denoising = False
    else:
        scene.eevee.taa_render_samples = 2
    if frame is not None:
        scene.frame_set(frame)
    scene.render.filepath = str(path)
    scene.render.image_settings.file_format = 'PNG'
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(str(path), check_existing=False)
    w, h = img.size
    px = np.empty(w * h * 4, np.float32)
    img.pixels.foreach_get(px)
    bpy.data.images.remove(img)
    return px.reshape(h, w, 4)


def top_view(bpy) -> None:
    """Orthographic camera straight down over a 2-unit grid at the origin, sun from
    above, grey world (the material renders' scene)."""
    bpy.ops.object.camera_add(location=(0, 0, 6), rotation=(0, 0, 0))
    cam = bpy.context.active_object
    cam.data.type, cam.data.ortho_scale = 'ORTHO', 2.0
    bpy.context.scene.camera = cam
    bpy.ops.object.light_add(type='SUN', location=(0, 0, 10), rotation=(0.2, 0.1, 0))
    bpy.context.active_object.data.energy = 3.0
    world = bpy.data.worlds.new("World")
    bpy.context.scene.world = world
    if world.node_tree is None:
        world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.3, 0.3, 0.3, 1)


class PanelLayout:
    """Records what a panel draws and checks every property and operator it names
    (panels cannot be drawn in background mode)."""

    def __init__(self, log):
        self.log = log
        self.scale_y, self.use_property_split, self.active = 1.0, False, True

    def _child(self, *args, **kw):
        return PanelLayout(self.log)

    box = row = column = _child

    def label(self, text="", icon='NONE'):
        self.log.append(("label", text))

    def prop(self, data, name, text=None):
        assert name in data.bl_rna.properties, f"{data!r} has no property {name!r}"
        self.log.append(("prop", name))

    def operator(self, idname, text=None, icon='NONE'):
        import bpy
        assert icon in bpy.types.UILayout.bl_rna.functions["operator"].parameters[
            "icon"].enum_items.keys(), icon
        module, name = idname.split(".")
        assert hasattr(getattr(bpy.ops, module), name), idname
        self.log.append(("operator", idname))
        return types.SimpleNamespace()  # takes operator properties like .filepath

    def menu(self, idname, text="", icon='NONE'):
        import bpy
        assert hasattr(bpy.types, idname), idname
        self.log.append(("menu", idname))

    def progress(self, factor=0.0, type='BAR', text=""):
        self.log.append(("progress", text))

    def separator(self):
        pass
