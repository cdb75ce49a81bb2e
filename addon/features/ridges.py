"""Generate ridges: mountains from diffusion-limited aggregation on the active
grid, or on a new grid, as one undo step; the erosion presets then take over.

Settings live on the scene (``scene.terrain_ridges``) so the panel works with nothing
selected; the operator has the same settings as its own arguments, so scripts call
``bpy.ops.terrain.generate_ridges(amplitude=800, ridge_spacing=500, ...)``. Lengths are
metres at the grid object's real size (its Real Size and Vertical Exaggeration,
addon/data/scale.py), the world its erosion runs in; a new grid is made with Size as its
real size.
"""

from __future__ import annotations

import dataclasses

import bpy
import numpy as np

from ..data import grid as gridio
from ..data import history
from ..data.meshes import quad_mesh
from ..data.scale import RealScale
from ..simcore.formats import history as entries
from ..simcore.generators import ridges as dla
from ..simcore.params import ParameterError
from ..ui.boundary import reports_user_errors
from ..ui.widgets import ErosionTab

_FIELDS = {f.name: f for f in dataclasses.fields(dla.RidgeParams)}
_LENGTHS = ("amplitude", "ridge_spacing")
_START_ITEMS = [
    ('center', "Center", "One branch tree grown from the middle of the grid"),
    ('points', "Points", "Several trees from random points"),
    ('walls', "Walls", "From the side(s) the bias drives walkers to (all four "
                       "without bias)"),
    ('mask', "Vertex group", "From the vertices painted in a vertex group (weight >= "
                             "0.5): paint where the main crests run"),
]
_BIAS_ITEMS = [(b, b.capitalize(), f"Walkers drift: {b}") for b in dla.BIASES]


def _prop(name: str):
    """A Blender property for RidgeParams field ``name`` (default, range, doc)."""
    f = _FIELDS[name]
    md = f.metadata
    desc = md["doc"][:1].upper() + md["doc"][1:]
    kw = {"name": name.replace("_", " ").capitalize(), "description": desc,
          "default": f.default}
    if name == "bias":
        return bpy.props.EnumProperty(items=_BIAS_ITEMS, **kw)
    if name == "start":
        return bpy.props.EnumProperty(items=_START_ITEMS, **kw)
    if isinstance(f.default, int):
        return bpy.props.IntProperty(min=0, max=2**31 - 1, **kw)
    kw.update(min=md["lo"], max=md["hi"])
    if md.get("soft_hi") is not None:
        kw["soft_max"] = md["soft_hi"]
    if name in _LENGTHS:
        kw.update(subtype='DISTANCE', unit='LENGTH')
    elif md.get("unit") == "deg":
        kw.update(subtype='FACTOR', precision=1)
    return bpy.props.FloatProperty(**kw)


def _annotations() -> dict:
    ann = {name: _prop(name) for name in _FIELDS}
    ann.update(
        mode=bpy.props.EnumProperty(
            name="Mode", default='ADD',
            items=[('ADD', "Add", "Add the ridges to the grid's heights"),
                   ('REPLACE', "Replace", "Heights become the ridges alone")],
            description="Add the ridges to the heights or replace them"),
        vertex_group=bpy.props.StringProperty(
            name="Vertex group", default="",
            description="Vertex group whose painted vertices (weight >= 0.5) start the "
                        "cluster (Start: Vertex group)"),
        new_grid=bpy.props.BoolProperty(
            name="New grid", default=False,
            description="Make a new grid object instead of changing the active one"),
        new_size=bpy.props.FloatProperty(
            name="Size", default=10000.0, min=1e-3, soft_max=1e5, subtype='DISTANCE',
            unit='LENGTH', description="Width of the new grid (metres; also its Real "
                                         "Size)"),
        new_resolution=bpy.props.IntProperty(
            name="Resolution", default=256, min=3, max=4096,
            description="Vertices along each side of the new grid"),
    )
    return ann


_ANN = _annotations()


def _params(settings) -> dla.RidgeParams:
    values = {}
    for name, f in _FIELDS.items():
        value = getattr(settings, name)
        # Blender floats are single precision: 7 significant digits give back the value
        values[name] = float(f"{value:.7g}") if isinstance(f.default, float) else value
    return dla.RidgeParams.from_dict(values, "Generate ridges")


def _painted(obj, name: str, grid: gridio.Grid) -> np.ndarray:
    """Raster mask of the vertices with weight >= 0.5 in vertex group ``name``."""
    group = obj.vertex_groups.get(name)
    if group is None:
        raise ParameterError(f"'{obj.name}' has no vertex group '{name}': paint one "
                             "(Weight Paint mode) or pick another start")
    index = group.index
    weights = np.zeros(len(obj.data.vertices), np.float32)
    for v in obj.data.vertices:
        for g in v.groups:
            if g.group == index:
                weights[v.index] = g.weight
    return (weights[grid.order] >= 0.5).reshape(grid.rows, grid.cols)


def _grid_mesh(name: str, n: int, size: float, z: np.ndarray) -> bpy.types.Mesh:
    """A quad grid mesh, n x n vertices over size x size, centred, row-major (x fastest),
    heights ``z`` (n, n)."""
    me = bpy.data.meshes.new(name)
    t = np.linspace(-size / 2, size / 2, n, dtype=np.float32)
    co = np.empty((n * n, 3), np.float32)
    co[:, 0] = np.tile(t, n)
    co[:, 1] = np.repeat(t, n)
    co[:, 2] = z.ravel()
    i = np.arange(n * n).reshape(n, n)[:-1, :-1].ravel()
    quads = np.stack([i, i + 1, i + n + 1, i + n], axis=1)
    quad_mesh(me, co, quads)
    me.validate()
    return me


class TERRAIN_OT_generate_ridges(bpy.types.Operator):
    """Grow a diffusion-limited aggregation cluster and raise it as mountain ridges on the
    active grid (or a new grid). One undo step; erode afterwards with any preset"""

    bl_idname = "terrain.generate_ridges"
    bl_label = "Generate Ridges"
    bl_options = {'REGISTER', 'UNDO'}
    __annotations__ = dict(_ANN)

    @classmethod
    def poll(cls, context):
        obj = getattr(context, "active_object", None)
        if obj is not None and obj.mode != 'OBJECT':
            cls.poll_message_set(f"'{obj.name}' is in {obj.mode.title()} mode: press Tab "
                                 "to go back to Object Mode")
            return False
        runtime = getattr(context.window_manager, "terrain_erosion", None)
        if runtime is not None and runtime.running:
            cls.poll_message_set("An erosion run is going on: stop or cancel it first")
            return False
        return True

    @reports_user_errors
    def execute(self, context):
        params = _params(self)
        if self.new_grid or context.active_object is None:
            return self._new_grid(context, params)
        return self._on_active(context, params)

    def _new_grid(self, context, params):
        if params.start == "mask":
            raise ParameterError("a new grid has no painted vertex group: use another "
                                 "start, or paint on an existing grid")
        n, size = self.new_resolution, float(self.new_size)
        check_spacing(params, size)
        ridges = dla.ridge_terrain((n, n), size / (n - 1), params)
        me = _grid_mesh("Ridges", n, size, ridges.heights)
        obj = bpy.data.objects.new("Ridges", me)
        obj.terrain_erosion.real_size = size  # the ridges were grown at this size
        context.collection.objects.link(obj)
        for other in context.selected_objects:
            other.select_set(False)
        obj.select_set(True)
        context.view_layer.objects.active = obj
        self.report({'INFO'}, _summary(obj.name, ridges))
        return {'FINISHED'}

    def _on_active(self, context, params):
        obj = context.active_object
        problem = gridio.object_problem(obj)
        if problem:
            raise gridio.GridError(problem)
        s = obj.terrain_erosion
        sizes = s.size_settings()
        start = None
        if params.start == "mask":
            start = _painted(obj, self.vertex_group, gridio.detect_grid(obj.data))
        ridges = raise_ridges(obj, params, self.mode, start, sizes)
        history.record(s, entries.ridges_entry(params, self.mode, start, *sizes))
        self.report({'INFO'}, _summary(obj.name, ridges))
        return {'FINISHED'}


def raise_ridges(obj: bpy.types.Object, params: dla.RidgeParams, mode: str,
                 start: np.ndarray | None, sizes: tuple[float, float]) -> dla.Ridges:
    """Grow ridges on grid ``obj`` and add them to its heights (``mode`` 'ADD') or make
    them its heights ('REPLACE'), at real size and exaggeration ``sizes``; ``start``:
    the painted start raster (Start: Vertex group). The heights before are kept as the
    original when none is stored (Reset and Rebuild go back past the ridges); the
    erosion layers are removed (they describe the old surface)."""
    me = obj.data
    positions = gridio.read_positions(me)
    g = gridio.detect_grid(me, positions)
    z = positions[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)
    if not np.isfinite(z).all():
        raise gridio.GridError(f"'{obj.name}' has NaN/inf vertex heights: fix the mesh "
                               "first")
    scale = RealScale.of(g.rows, g.cols, g.cell_size, *sizes)
    check_spacing(params, scale.real_size)
    if start is not None and start.shape != (g.rows, g.cols):
        raise ParameterError(f"the painted start of the ridges is {start.shape[0]}x"
                             f"{start.shape[1]}, the grid of '{obj.name}' {g.rows}x{g.cols}")
    ridges = dla.ridge_terrain((g.rows, g.cols), scale.world_cell, params, start)
    base = z if mode == 'ADD' else np.zeros_like(z)
    new_z = base + scale.local_height(ridges.heights)
    if me.attributes.get(gridio.ORIGINAL_Z) is None:
        if not obj.terrain_erosion.history:  # the history starts at these heights
            obj.terrain_erosion.history_from_original = True
        gridio.ensure_attribute(me, gridio.ORIGINAL_Z, 'FLOAT').data.foreach_set(
            "value", np.ascontiguousarray(positions[:, 2]))
    gridio.remove_layers(me, keep_original=True)
    gridio.write_heights(me, g, positions, new_z)
    me.update()
    return ridges


def check_spacing(params: dla.RidgeParams, width: float) -> None:
    if params.ridge_spacing > width / 4:
        raise ParameterError(
            f"ridge spacing {params.ridge_spacing:.4g} is more than a quarter of the grid's "
            f"width ({width:.4g} m at its real size): use a spacing of about "
            f"{width / 16:.3g}, or set the grid's Real Size")


def _summary(name: str, ridges: dla.Ridges) -> str:
    n = ridges.clusters[-1].size
    return (f"Ridges on '{name}': {n:,} particles, highest {ridges.heights.max():.4g} m "
            f"(at its real size)")


class TERRAIN_PG_ridges(bpy.types.PropertyGroup):
    """Generate ridges settings (saved with the scene)."""

    __annotations__ = dict(_ANN)


class TERRAIN_PT_ridges(ErosionTab, bpy.types.Panel):
    """Mountains from diffusion-limited aggregation (shown without a mesh too: it can
    make a new grid)"""

    bl_idname = "TERRAIN_PT_ridges"
    bl_label = "Generate ridges"
    bl_parent_id = "TERRAIN_PT_main"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        s = context.scene.terrain_ridges
        layout = self.layout
        layout.use_property_split = True
        col = layout.column(align=True)
        col.prop(s, "amplitude")
        col.prop(s, "ridge_spacing")
        col.prop(s, "max_slope")
        col = layout.column(align=True)
        col.prop(s, "start")
        obj = context.active_object
        if s.start == 'mask':
            if obj is not None and obj.type == 'MESH':
                col.prop_search(s, "vertex_group", obj, "vertex_groups")
            else:
                col.label(text="Select the grid with the painted group", icon='INFO')
        elif s.start == 'points':
            col.prop(s, "points")
        col.prop(s, "bias")
        sub = col.column(align=True)
        sub.active = s.bias != 'none'
        sub.prop(s, "bias_strength")
        col = layout.column(align=True)
        for name in ("stickiness", "density", "crest_shape", "roughness", "jitter", "seed"):
            col.prop(s, name)
        layout.prop(s, "new_grid")
        if s.new_grid or obj is None:
            col = layout.column(align=True)
            col.prop(s, "new_size")
            col.prop(s, "new_resolution")
        else:
            layout.prop(s, "mode", expand=True)
        op = layout.operator(TERRAIN_OT_generate_ridges.bl_idname, icon='RNDCURVE')
        for name in _ANN:
            setattr(op, name, getattr(s, name))
        layout.label(text="Then erode with a preset, e.g. Ridges eroded", icon='INFO')


classes = (TERRAIN_PG_ridges, TERRAIN_OT_generate_ridges, TERRAIN_PT_ridges)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    bpy.types.Scene.terrain_ridges = bpy.props.PointerProperty(type=TERRAIN_PG_ridges)


def unregister() -> None:
    del bpy.types.Scene.terrain_ridges
    _unregister_classes()
