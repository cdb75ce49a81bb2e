"""Objects the add-on makes next to a terrain (trees, water, rivers, lakes, imported
grids): made as the terrain's children in its collections, and removed with their
data when nothing else uses it."""

from __future__ import annotations

import bpy


def child_object(terrain: bpy.types.Object, name: str, data=None) -> bpy.types.Object:
    """A new object ``name`` holding ``data`` (a new empty mesh when None), linked to
    every collection of ``terrain`` and parented to it without an offset."""
    if data is None:
        data = bpy.data.meshes.new(name)
    obj = bpy.data.objects.new(name, data)
    for coll in terrain.users_collection:
        coll.objects.link(obj)
    obj.parent = terrain
    obj.matrix_parent_inverse.identity()
    return obj


def remove_object(obj: bpy.types.Object | None) -> None:
    """Delete ``obj`` and its mesh or curve if nothing else uses it (None: nothing)."""
    if obj is None:
        return
    data = obj.data
    bpy.data.objects.remove(obj)
    if data is not None and data.users == 0:
        if isinstance(data, bpy.types.Mesh):
            bpy.data.meshes.remove(data)
        elif isinstance(data, bpy.types.Curve):
            bpy.data.curves.remove(data)
