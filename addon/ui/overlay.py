"""Viewport hint for the wind: an arrow over the active terrain pointing where the wind
blows, drawn while the wind process is enabled (GUI only; no drawing in background)."""

from __future__ import annotations

import math

import bpy

COMPASS = ("east", "north-east", "north", "north-west", "west", "south-west", "south",
           "south-east")


def compass(direction_deg: float) -> str:
    """'north-east (+X +Y)' style text for a direction in the object's local XY
    (0 = +X, 90 = +Y, counter-clockwise; seen from the top, +Y is north)."""
    a = direction_deg % 360.0
    name = COMPASS[int((a + 22.5) // 45) % 8]
    dx, dy = math.cos(math.radians(a)), math.sin(math.radians(a))
    axes = " ".join(f"{'+' if v > 0 else '-'}{axis}" for axis, v in (("X", dx), ("Y", dy))
                    if abs(v) > 0.38)
    return f"{name} ({axes})"


def arrow_lines(direction_deg: float, center, length: float, height: float):
    """Line-segment end points (local space) of an arrow through ``center`` pointing
    along ``direction_deg``; a shaft and a two-stroke head."""
    a = math.radians(direction_deg)
    dx, dy = math.cos(a), math.sin(a)
    cx, cy = center
    tail = (cx - dx * length / 2, cy - dy * length / 2, height)
    tip = (cx + dx * length / 2, cy + dy * length / 2, height)
    head = length * 0.18
    points = [tail, tip]
    for side in (1, -1):
        ha = a + math.pi - side * math.radians(28)
        points += [tip, (tip[0] + math.cos(ha) * head, tip[1] + math.sin(ha) * head, height)]
    return points


_handle = None


def _draw() -> None:
    import gpu
    from gpu_extras.batch import batch_for_shader
    from mathutils import Vector
    obj = bpy.context.active_object
    if obj is None or obj.type != 'MESH' or not hasattr(obj, "terrain_erosion"):
        return
    wind = obj.terrain_erosion.wind
    if not wind.enabled:
        return
    xs = [c[0] for c in obj.bound_box]
    ys = [c[1] for c in obj.bound_box]
    zs = [c[2] for c in obj.bound_box]
    size = max(max(xs) - min(xs), max(ys) - min(ys))
    local = arrow_lines(wind.direction, ((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2),
                        size * 0.5, max(zs) + size * 0.05)
    points = [obj.matrix_world @ Vector(p) for p in local]
    shader = gpu.shader.from_builtin('UNIFORM_COLOR')
    batch = batch_for_shader(shader, 'LINES', {"pos": points})
    gpu.state.line_width_set(3.0)
    gpu.state.depth_test_set('NONE')
    shader.uniform_float("color", (1.0, 0.75, 0.2, 1.0))
    batch.draw(shader)
    gpu.state.line_width_set(1.0)


def register() -> None:
    global _handle
    if not bpy.app.background and _handle is None:
        _handle = bpy.types.SpaceView3D.draw_handler_add(_draw, (), 'WINDOW', 'POST_VIEW')


def unregister() -> None:
    global _handle
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, 'WINDOW')
        _handle = None
