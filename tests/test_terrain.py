import numpy as np
import pytest

from simcore.terrain import Terrain, TerrainError


def test_heights_become_cell_units_and_layers_default():
    t = Terrain.from_heights(np.full((4, 5), 10.0), cell_size=2.0)
    assert t.shape == (4, 5)
    assert np.all(t.bedrock == 5.0) and np.all(t.sediment == 0.0)
    assert np.all(t.erodibility == 1.0) and np.all(t.rain == 1.0)
    assert np.allclose(t.world_height(), 10.0)


def test_integer_heights_are_accepted_as_float64():
    t = Terrain.from_heights(np.arange(12).reshape(3, 4))
    assert t.bedrock.dtype == np.float64 and t.bedrock.flags.c_contiguous


@pytest.mark.parametrize("bad, message", [
    (np.array([[0.0, np.nan, 0], [0, 0, 0], [0, 0, 0]]), "NaN/inf value(s), first at row 0, col 1"),
    (np.array([[0.0, 0, 0], [0, np.inf, 0], [0, 0, 0]]), "NaN/inf"),
    (np.zeros(9), "2-D"),
    (np.zeros((2, 9)), "at least 3x3"),
    (np.zeros((3, 3), dtype=complex), "real numbers"),
    (np.array([["a"] * 3] * 3), "real numbers"),
])
def test_bad_heights_are_refused_with_a_clear_message(bad, message):
    with pytest.raises(TerrainError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Terrain.from_heights(bad)


def test_mismatched_layer_and_bad_ranges_are_refused():
    with pytest.raises(TerrainError, match="shape"):
        Terrain.from_heights(np.zeros((4, 4)), sediment=np.zeros((4, 5)))
    with pytest.raises(TerrainError, match="'sediment' has values below 0"):
        Terrain.from_heights(np.zeros((4, 4)), sediment=-np.ones((4, 4)))
    with pytest.raises(TerrainError, match="'rain' is zero everywhere"):
        Terrain.from_heights(np.zeros((4, 4)), rain=np.zeros((4, 4)))
    with pytest.raises(TerrainError, match="cell_size"):
        Terrain.from_heights(np.zeros((4, 4)), cell_size=0.0)
    with pytest.raises(TerrainError, match="unknown terrain array"):
        Terrain.from_heights(np.zeros((4, 4)), lava=np.zeros((4, 4)))


def test_trees_outside_the_grid_are_refused():
    t = Terrain.from_heights(np.zeros((8, 8)))
    t.trees = np.array([[3.0, 20.0, 0.5]])
    with pytest.raises(TerrainError, match="outside the 8x8 grid"):
        t.validate()
    t.trees = np.array([[3.0, 7.0, 0.5]])
    t.validate()
