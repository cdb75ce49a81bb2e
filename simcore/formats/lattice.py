"""A grid mesh as arrays: its vertices and quads, and the values a mesh carries on its
points, faces and face corners made twice as fine with its grid (the add-on's Refine
x2, docs/refine.md). Nothing here knows Blender: the add-on reads a mesh's attributes
into arrays, calls these, and writes the results back.

A lattice of ``rows x cols`` vertices is row-major (x fastest); ``order`` maps a
raster index to the mesh's vertex index (the add-on's detected grid), a lattice cell
(``rows - 1 x cols - 1``) is indexed row-major too.
"""

from __future__ import annotations

import numpy as np

from ..kernels.refine import double


def grid_lattice(rows: int, cols: int, x0: float, y0: float, cell_x: float, cell_y: float,
                 z: np.ndarray, flip: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The vertices ((rows cols) x 3: x, y, ``z`` row-major) and quads ((rows - 1)
    (cols - 1) x 4 vertex indices, counter-clockwise seen from above; ``flip``:
    clockwise, the faces looking down) of a grid starting at ``x0, y0``."""
    yy, xx = np.mgrid[0:rows, 0:cols]
    co = np.stack([x0 + xx * cell_x, y0 + yy * cell_y,
                   np.asarray(z).reshape(rows, cols)], axis=-1).reshape(-1, 3)
    qr, qc = np.mgrid[0:rows - 1, 0:cols - 1]
    first = (qr * cols + qc).ravel()
    quads = np.stack([first, first + 1, first + cols + 1, first + cols], axis=1)
    return co, np.ascontiguousarray(quads[:, ::-1]) if flip else quads


def faces_look_down(normals: np.ndarray) -> bool:
    """Whether a mesh's faces (``normals``: x, y, z per face, flat) look down more
    than up."""
    return bool(np.asarray(normals).reshape(-1, 3)[:, 2].sum() < 0.0)


def face_cells(corner_raster: np.ndarray, loop_starts: np.ndarray, rows: int,
               cols: int) -> np.ndarray:
    """For every lattice cell (flat), the index of a face on it: the face whose lowest
    corner, by row then column, is the cell's (the first face where two share a
    cell). ``corner_raster``: the raster index of each face corner's vertex;
    ``loop_starts``: the first corner of each face."""
    r = corner_raster // cols
    c = corner_raster % cols
    face_row = np.minimum.reduceat(r, loop_starts)
    face_col = np.minimum.reduceat(c, loop_starts)
    cell = np.minimum(face_row, rows - 2) * (cols - 1) + np.minimum(face_col, cols - 2)
    out = np.zeros((rows - 1) * (cols - 1), np.int64)
    out[cell[::-1]] = np.arange(len(loop_starts))[::-1]
    return out


def raster_of(order: np.ndarray) -> np.ndarray:
    """The raster index of each mesh vertex (the inverse of ``order``)."""
    raster = np.empty(order.size, np.int64)
    raster[order] = np.arange(order.size)
    return raster


def fine_points(values: np.ndarray, order: np.ndarray, rows: int, cols: int
                ) -> np.ndarray:
    """Point values (vertices x channels, in the mesh's order) on the lattice twice as
    fine, ((2 rows - 1) (2 cols - 1)) x channels row-major: each channel by the
    monotone cubic of kernels/refine.py."""
    lattice = np.asarray(values, dtype=np.float64).reshape(len(order), -1)[order]
    return np.stack([double(lattice[:, i].reshape(rows, cols)).ravel()
                     for i in range(lattice.shape[1])], axis=-1)


def fine_faces(values: np.ndarray, cells: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Face values (faces x channels) on the lattice twice as fine: each new face
    takes the value of the coarse face it lies in (``cells``: :func:`face_cells`)."""
    v = np.asarray(values)
    coarse = v.reshape(len(v), -1)[cells].reshape(rows - 1, cols - 1, -1)
    return np.repeat(np.repeat(coarse, 2, axis=0), 2, axis=1).reshape(
        (2 * rows - 2) * (2 * cols - 2), -1)


def fine_corners(values: np.ndarray, corner_vertex: np.ndarray, order: np.ndarray,
                 rows: int, cols: int, fine_corner_vertex: np.ndarray) -> np.ndarray:
    """Face-corner values (a UV map: corners x channels) on the lattice twice as fine:
    averaged per vertex, refined as :func:`fine_points`, then read at each fine
    corner's vertex (``fine_corner_vertex``)."""
    v = np.asarray(values, dtype=np.float64).reshape(len(corner_vertex), -1)
    n = len(order)
    per_vertex = np.zeros((n, v.shape[1]))
    np.add.at(per_vertex, corner_vertex, v)
    per_vertex /= np.maximum(np.bincount(corner_vertex, minlength=n), 1)[:, None]
    return fine_points(per_vertex, order, rows, cols)[fine_corner_vertex]


def weight_runs(weights: np.ndarray) -> list[tuple[float, list[int]]]:
    """Vertex weights (clipped to 0..1) as (weight, the vertices that have it) for
    every weight above 0: how a vertex group takes them, one call per weight."""
    w = np.clip(np.asarray(weights), 0.0, 1.0).astype(np.float32)
    return [(float(value), np.flatnonzero(w == value).tolist())
            for value in np.unique(w[w > 0.0])]
