"""File > Export > Terrain Tiles (Unreal / Unity): the grid's heights and ``te_*``
layers cut into game-engine tiles by simcore/formats/engine_tiles.py.

The tiles are in metres of the world the erosion ran in (the object's Real Size:
horizontal = local x real scale; heights = local x real scale / Vertical Exaggeration,
or x real scale only with Keep Exaggeration, the shape as the viewport shows it). The
layers are the add-on's float layers (sediment, streams, pools, trees, ...; bedrock
and maps that are zero everywhere left out), depths in metres, 0..1 maps as they are.
The set is named ``<object>_tiles`` unless a Name is given, so its sidecar is not the
map export's ``<object>.json``; a Name whose ``.json`` is another sidecar (a map
export's) is refused. Every check (the object, the folder, the name, the size) comes
before the first file, and a set is written all or nothing; a UserError is reported by
the operator (addon/ui/boundary.py) and leaves the folder as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import bpy
import numpy as np

from ..data import grid as gridio
from ..simcore.formats import engine_tiles as et
from ..ui.boundary import reports_user_errors
from .export import ExportToFolder, check_export_folder

ENGINES = (('UNREAL', "Unreal", "Unreal Engine landscape: recommended sizes (63/127/255-quad "
            "components), tiles named _x<i>_y<j> for its tiled import"),
           ('UNITY', "Unity", "Unity terrains: heightmap resolutions 2^n + 1, one Terrain "
            "per tile"))


def _sizes(engine: str, default: int):
    items = tuple((str(s), f"{s} x {s}", f"{s} vertices a side ({s - 1} quads)")
                  for s in et.SIZES[engine])
    return bpy.props.EnumProperty(name="Tile Size", items=items, default=str(default),
                                  description="Vertices per tile side")


def layer_maps(obj: bpy.types.Object, grid: gridio.Grid, metres: float
               ) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    """The add-on's float layers of ``obj`` (named without ``te_``) as rasters, lengths
    times ``metres`` (metres per local unit), 0..1 maps and factors as they are; bedrock
    and maps that are zero everywhere are left out. Returns (layers, the 0..1 ones)."""
    layers, fractions = {}, []
    for field, attr in gridio.FLOAT_LAYERS.items():
        if field in et.NOT_LAYERS:
            continue
        values = gridio.read_float_layer(obj.data, attr, grid)
        if values is None or not np.any(values):
            continue
        key = attr[3:]
        if field in gridio.LENGTH_LAYERS:
            layers[key] = values * metres
        else:
            layers[key] = values
            if et.is_fraction(field):
                fractions.append(key)
    return layers, tuple(fractions)


def default_name(obj: bpy.types.Object) -> str:
    """The tile set's name when none is given: ``<object>_tiles``, so its sidecar
    ``<object>_tiles.json`` is never the map export's ``<object>.json``."""
    return f"{bpy.path.clean_name(obj.name)}_tiles"


def export_engine_tiles(obj: bpy.types.Object, folder: str | os.PathLike, name: str = "",
                        engine: str = "unreal", size: int = 1009,
                        tiles: tuple[int, int] | None = None,
                        formats: tuple[str, ...] = ("png",), layer_bits: int = 8,
                        layers: bool = True, keep_exaggeration: bool = False
                        ) -> tuple[list[Path], dict]:
    """Write ``obj``'s tiles into ``folder``; returns (files, the sidecar last; the
    sidecar). UserError (nothing written) for a bad object, folder, name or size."""
    problem = gridio.object_problem(obj)
    if problem:
        raise gridio.GridError(problem)
    et.check_size(engine, size)
    # not <object>.json: that is the map export's sidecar (Export Maps' default Name)
    name = et.check_name(name or default_name(obj))
    path = check_export_folder(folder)  # the map export's checks and messages
    grid = gridio.detect_grid(obj.data)
    scale = obj.terrain_erosion.real_scale(grid.rows, grid.cols, grid.cell_size)
    vertical = scale.s if keep_exaggeration else scale.s / scale.exaggeration
    z = gridio.read_positions(obj.data)[:, 2][grid.order].reshape(grid.rows, grid.cols)
    maps, fractions = layer_maps(obj, grid, vertical) if layers else ({}, ())
    facts = {"object": obj.name, "real_size": scale.real_size,
             "real_scale": scale.s, "vertical_exaggeration": scale.exaggeration,
             "exaggeration_kept": bool(keep_exaggeration),
             "blender_units": "metres = local x real_scale (heights: / "
                              "vertical_exaggeration unless exaggeration_kept)"}
    s = obj.terrain_erosion
    facts.update(seed=int(s.seed), preset=s.preset)
    return et.write_tiles(path, name, z.astype(np.float64) * vertical,
                          (grid.cell_x * scale.s, grid.cell_y * scale.s), engine, size,
                          maps, fractions, tiles, formats, layer_bits,
                          (grid.x0 * scale.s, grid.y0 * scale.s), facts)


class TERRAIN_OT_export_engine_tiles(ExportToFolder, bpy.types.Operator):
    """Export the terrain's heights and layers as Unreal or Unity terrain tiles: 16-bit
    heightmaps sharing their edges, weight maps, and a JSON sidecar placing each tile"""

    bl_idname = "terrain.export_engine_tiles"
    bl_label = "Export Engine Tiles"
    bl_options = {'REGISTER'}

    directory: bpy.props.StringProperty(name="Folder", subtype='DIR_PATH',
                                        description="Folder the tiles are written to")
    basename: bpy.props.StringProperty(
        name="Name", default="",
        description="File name prefix (empty: the object's name + _tiles, apart from the "
                    "map export's files)")
    engine: bpy.props.EnumProperty(name="Engine", items=ENGINES, default='UNREAL')
    unreal_size: _sizes("unreal", 1009)
    unity_size: _sizes("unity", 1025)
    tiles_x: bpy.props.IntProperty(
        name="Tiles X", default=0, min=0, max=et.MAX_TILES,
        description="Tiles across (0: as many as keep the grid's detail)")
    tiles_y: bpy.props.IntProperty(
        name="Tiles Y", default=0, min=0, max=et.MAX_TILES,
        description="Tiles down (0: as many as keep the grid's detail)")
    height_format: bpy.props.EnumProperty(
        name="Heights", default='PNG',
        items=(('PNG', "16-bit PNG", "Grayscale 16-bit PNG"),
               ('R16', "16-bit RAW", "Little-endian RAW (.r16)"),
               ('BOTH', "Both", "PNG and RAW")))
    layers: bpy.props.BoolProperty(name="Layers", default=True,
                                   description="Also write the te_* layers as weight maps")
    layer_bits: bpy.props.EnumProperty(
        name="Layer Depth", default='8',
        items=(('8', "8-bit", "8-bit weight maps"), ('16', "16-bit", "16-bit weight maps")))
    keep_exaggeration: bpy.props.BoolProperty(
        name="Keep Exaggeration", default=False,
        description="Heights as the viewport shows them (times the Vertical Exaggeration) "
                    "instead of the real heights")

    def draw(self, context):
        col = self.layout.column()
        col.prop(self, "basename")
        col.prop(self, "engine")
        col.prop(self, "unreal_size" if self.engine == 'UNREAL' else "unity_size")
        row = col.row(align=True)
        row.prop(self, "tiles_x")
        row.prop(self, "tiles_y")
        col.prop(self, "height_format")
        col.prop(self, "layers")
        sub = col.column()
        sub.active = self.layers
        sub.prop(self, "layer_bits")
        col.prop(self, "keep_exaggeration")

    @reports_user_errors
    def execute(self, context):
        engine = self.engine.lower()
        size = int(self.unreal_size if engine == "unreal" else self.unity_size)
        tiles = (self.tiles_x, self.tiles_y)  # 0: as many as keep the detail
        formats = {"PNG": ("png",), "R16": ("r16",), "BOTH": ("png", "r16")}
        files, side = export_engine_tiles(
            context.active_object, self.directory or "//", self.basename, engine, size,
            tiles, formats[self.height_format], int(self.layer_bits), self.layers,
            self.keep_exaggeration)
        for text in side["warnings"]:
            self.report({'WARNING'}, text)
        self.report({'INFO'}, f"Exported {side['tiles_x']}x{side['tiles_y']} {engine} tiles "
                              f"of {size} ({len(files)} files) to {files[-1].parent}")
        return {'FINISHED'}


def _menu_export(self, context):
    self.layout.operator(TERRAIN_OT_export_engine_tiles.bl_idname,
                         text="Terrain Tiles (Unreal/Unity)")


classes = (TERRAIN_OT_export_engine_tiles,)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    bpy.types.TOPBAR_MT_file_export.append(_menu_export)


def unregister() -> None:
    bpy.types.TOPBAR_MT_file_export.remove(_menu_export)
    _unregister_classes()
