"""Meshes built from arrays in one go (the foreach_set path): the add-on's one mesh
builder, for imported grids, ridges and lakes."""

from __future__ import annotations

import bpy
import numpy as np


def quad_mesh(me: bpy.types.Mesh, co: np.ndarray, quads: np.ndarray) -> bpy.types.Mesh:
    """Fill an empty mesh with vertices ``co`` (n, 3) and quads (m, 4), fast."""
    me.vertices.add(len(co))
    me.attributes["position"].data.foreach_set(
        "vector", np.ascontiguousarray(co, np.float32).ravel())
    me.loops.add(quads.size)
    me.loops.foreach_set("vertex_index", np.ascontiguousarray(quads, np.int32).ravel())
    me.polygons.add(len(quads))
    me.polygons.foreach_set("loop_start", np.arange(0, quads.size, 4, dtype=np.int32))
    me.update(calc_edges=True)
    return me
