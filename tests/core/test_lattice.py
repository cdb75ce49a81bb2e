"""A grid mesh as arrays (simcore/formats/lattice.py): the vertices and quads of a
lattice, and point, face and corner values carried to the lattice twice as fine."""

from __future__ import annotations

import numpy as np

from simcore.formats import lattice


def test_a_lattice_spans_its_extent_and_faces_up_or_down():
    z = np.arange(12.0).reshape(3, 4)
    co, quads = lattice.grid_lattice(3, 4, -1.5, -1.0, 1.0, 1.0, z)
    assert co.shape == (12, 3) and quads.shape == (6, 4)
    assert co[0].tolist() == [-1.5, -1.0, 0.0] and co[-1].tolist() == [1.5, 1.0, 11.0]
    a, b, c = co[quads[0, 0]], co[quads[0, 1]], co[quads[0, 2]]
    assert np.cross(b - a, c - b)[2] > 0  # counter-clockwise from above: faces up
    _, down = lattice.grid_lattice(3, 4, -1.5, -1.0, 1.0, 1.0, z, flip=True)
    normals = np.array([[0.0, 0.0, -1.0]] * 6).ravel()
    assert lattice.faces_look_down(normals)
    assert np.array_equal(down, quads[:, ::-1])


def test_values_follow_the_lattice_in_any_vertex_order():
    rows, cols = 3, 4
    rng = np.random.default_rng(1)
    order = rng.permutation(rows * cols)  # raster index -> mesh vertex
    y, x = np.divmod(np.arange(rows * cols), cols)
    plane = np.empty(rows * cols)
    plane[order] = 2.0 * x + y  # mesh order
    fine = lattice.fine_points(plane, order, rows, cols)[:, 0]
    fy, fx = np.divmod(np.arange(5 * 7), 7)
    assert np.allclose(fine, fx + 0.5 * fy)  # the plane, at half steps
    corner_vertex = np.repeat(order, 2)  # two corners on each vertex, same value
    values = np.repeat(plane, 1)[corner_vertex]
    fine_quads = lattice.grid_lattice(5, 7, 0, 0, 1, 1, np.zeros(35))[1].ravel()
    fc = lattice.fine_corners(values, corner_vertex, order, rows, cols, fine_quads)
    assert np.allclose(fc[:, 0], (fx + 0.5 * fy)[fine_quads])


def test_a_fine_face_takes_its_coarse_face_and_weights_group():
    rows, cols = 3, 3
    order = np.arange(9)
    _, quads = lattice.grid_lattice(rows, cols, 0, 0, 1, 1, np.zeros(9))
    starts = np.arange(0, 16, 4)
    cells = lattice.face_cells(lattice.raster_of(order)[quads.ravel()], starts, rows, cols)
    assert cells.tolist() == [0, 1, 2, 3]
    fine = lattice.fine_faces(np.array([10, 20, 30, 40]), cells, rows, cols)[:, 0]
    assert fine.reshape(4, 4).tolist() == [[10, 10, 20, 20], [10, 10, 20, 20],
                                           [30, 30, 40, 40], [30, 30, 40, 40]]
    runs = lattice.weight_runs(np.array([0.0, 0.5, 1.2, 0.5, -1.0]))
    assert runs == [(0.5, [1, 3]), (1.0, [2])]
