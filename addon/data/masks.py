"""Painted masks that steer the simulation: rain, erodibility, protect, tree seeding and
uplift, each from a vertex group or a color attribute the user picks, plus "Selection
Only" (erode only the selected vertices or one vertex group, with a soft falloff).

Masks are read per vertex (vertex group weight, or a color attribute's gray value),
put into the grid's (rows, cols) order and handed to the Terrain as its input maps, so
every process uses them while it runs. The numerics (distance falloff) live in
``simcore.algorithms.masks``.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..simcore.algorithms.masks import MaskError, check_rain, combine_protect, selection_protect

#: mask name -> (label, what a painted value of 1 means, what 0 means); one per input
#: map of the terrain (simcore/fields.py and the processes' fields, ``input=True``)
MASKS = {
    "rain": ("Rain", "droplets and water particles start here",
             "no rain starts here (water from above still flows through)"),
    "erodibility": ("Erodibility", "soft soil: erodes as usual",
                    "hard rock: bedrock never wears (loose sediment still moves)"),
    "protect": ("Protect", "no change at all here", "erodes as usual"),
    "tree_seeding": ("Tree Seeding", "trees may take root here", "no tree takes root here"),
    "uplift": ("Uplift", "rises at the landscape's full uplift rate",
               "a block that does not rise (Landscape evolution)"),
}

SOURCES = [
    ('NONE', "None", "Not used: the terrain's default everywhere"),
    ('VERTEX_GROUP', "Vertex Group", "Weights of a vertex group (vertices not in the "
     "group count as 0)"),
    ('COLOR_ATTRIBUTE', "Color Attribute", "Gray value (mean of R, G, B as displayed) of "
     "a color attribute"),
]


def mask_annotations() -> dict:
    """Properties for the object's settings group (``TERRAIN_PG_settings``)."""
    ann: dict = {}
    for name, (label, one, zero) in MASKS.items():
        ann[f"mask_{name}_source"] = bpy.props.EnumProperty(
            name=f"{label} Mask", items=SOURCES, default='NONE',
            description=f"Where the {label.lower()} mask comes from. Value 1: {one}; "
                        f"0: {zero}")
        ann[f"mask_{name}_name"] = bpy.props.StringProperty(
            name=f"{label} Source", default="",
            description=f"Vertex group or color attribute holding the {label.lower()} "
                        "mask")
    ann.update({
        "selection_only": bpy.props.BoolProperty(
            name="Selection Only", default=False,
            description="Erode only the selected vertices (or the vertex group below); "
                        "everything beyond the falloff stays exactly as it is"),
        "selection_group": bpy.props.StringProperty(
            name="Group", default="",
            description="Erode only this vertex group (vertices with weight >= 0.5); "
                        "empty: the selected vertices"),
        "selection_falloff": bpy.props.FloatProperty(
            name="Falloff", default=1.0, min=0.0, soft_max=100.0, subtype='DISTANCE',
            description="Distance (world units) over which erosion fades out around the "
                        "selection, so no seam shows; 0 = a hard edge"),
    })
    return ann


# -- reading per-vertex values ----------------------------------------------------------
def vertex_group_weights(obj: bpy.types.Object, name: str) -> np.ndarray:
    """Weight of every vertex in group ``name`` (0 for vertices not in it)."""
    group = obj.vertex_groups.get(name)
    if group is None:
        raise MaskError(f"'{obj.name}' has no vertex group '{name}': pick one in the Masks "
                        "panel or set the source to None")
    index = group.index
    weights = np.zeros(len(obj.data.vertices))
    for v in obj.data.vertices:
        for g in v.groups:
            if g.group == index:
                weights[v.index] = g.weight
    return weights


def color_gray(me: bpy.types.Mesh, name: str) -> np.ndarray:
    """Gray value (mean of R, G, B in display / sRGB encoding, clipped 0..1) of the color
    attribute ``name`` per vertex; a face-corner attribute is averaged per vertex."""
    attr = me.color_attributes.get(name)
    if attr is None:
        raise MaskError(f"'{me.name}' has no color attribute '{name}': pick one in the "
                        "Masks panel or set the source to None")
    if attr.domain not in ('POINT', 'CORNER'):
        raise MaskError(f"color attribute '{name}' is stored per {attr.domain.lower()}; "
                        "use one stored per vertex or face corner")
    n = len(attr.data)
    rgba = np.empty(n * 4, np.float32)
    key = "color_srgb" if n and hasattr(attr.data[0], "color_srgb") else "color"
    attr.data.foreach_get(key, rgba)
    gray = np.clip(rgba.reshape(n, 4)[:, :3].mean(axis=1), 0.0, 1.0).astype(np.float64)
    if attr.domain == 'POINT':
        return gray
    corner_vert = np.empty(len(me.loops), np.int32)
    me.loops.foreach_get("vertex_index", corner_vert)
    count = np.bincount(corner_vert, minlength=len(me.vertices))
    total = np.bincount(corner_vert, weights=gray, minlength=len(me.vertices))
    return np.divide(total, count, out=np.zeros(len(me.vertices)), where=count > 0)


def selected_vertices(obj: bpy.types.Object) -> np.ndarray:
    """Selection flags of the vertices (as stored in Object Mode)."""
    sel = np.zeros(len(obj.data.vertices), bool)
    obj.data.vertices.foreach_get("select", sel)
    return sel


def read_mask(obj: bpy.types.Object, name: str) -> np.ndarray | None:
    """Per-vertex values 0..1 of mask ``name`` as the settings say, or None (unused)."""
    s = obj.terrain_erosion
    source = getattr(s, f"mask_{name}_source")
    picked = getattr(s, f"mask_{name}_name")
    if source == 'NONE':
        return None
    if not picked:
        kind = "vertex group" if source == 'VERTEX_GROUP' else "color attribute"
        raise MaskError(f"the {MASKS[name][0]} mask has no {kind} picked: choose one in "
                        "the Masks panel or set its source to None")
    if source == 'VERTEX_GROUP':
        return np.clip(vertex_group_weights(obj, picked), 0.0, 1.0)
    return color_gray(obj.data, picked)


def _raster(values: np.ndarray, grid) -> np.ndarray:
    return np.ascontiguousarray(values[grid.order].reshape(grid.rows, grid.cols),
                                dtype=np.float64)


def selection_map(obj: bpy.types.Object, grid) -> np.ndarray | None:
    """Protect map for "Selection Only" (None when it is off)."""
    s = obj.terrain_erosion
    if not s.selection_only:
        return None
    if s.selection_group:
        selected = vertex_group_weights(obj, s.selection_group) >= 0.5
        what = f"vertex group '{s.selection_group}'"
    else:
        selected = selected_vertices(obj)
        what = "selection"
    if not selected.any():
        raise MaskError(f"Selection Only is on but the {what} of '{obj.name}' is empty: "
                        "select vertices in Edit Mode, pick a vertex group, or turn it off")
    scale = obj.matrix_world.to_scale()
    return selection_protect(_raster(selected.astype(np.float64), grid) > 0.5,
                             s.selection_falloff, grid.cell_x * abs(scale.x),
                             grid.cell_y * abs(scale.y))


def apply_masks(obj: bpy.types.Object, grid, terrain) -> list[str]:
    """Fill the terrain's input maps from the object's masks; returns what was used."""
    used: list[str] = []
    maps = {name: read_mask(obj, name) for name in MASKS}
    for name, values in maps.items():
        if values is None:
            continue
        raster = _raster(values, grid)
        if name == "rain":
            check_rain(raster, f"'{obj.terrain_erosion.mask_rain_name}'")
        setattr(terrain, name, raster)
        used.append(name)
    protect = combine_protect(terrain.protect if "protect" in used else None,
                              selection_map(obj, grid))
    if protect is not None:
        terrain.protect = protect
        if obj.terrain_erosion.selection_only:
            used.append("selection")
    terrain.validate()
    return used
