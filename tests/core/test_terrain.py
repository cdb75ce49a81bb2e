import numpy as np
import pytest

from simcore.terrain import SPREAD_BYTES, Terrain, TerrainError


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


def test_large_grids_sit_at_different_places_in_their_pages():
    """Cell k of two large grids never shares its address's low 12 bits (L1 sets, 4K
    aliasing: a droplet step was 1.2-1.6x slower on 2048² grids, which the system
    always hands out at one offset in a page): each field has its own slot, the height
    another, whatever the allocator did."""
    side = 128
    assert side * side * 8 >= SPREAD_BYTES
    heights = np.random.default_rng(0).random((side, side)) * 50
    for terrain in (Terrain.from_heights(heights, 3.75),
                    Terrain.from_heights(heights, 1.0, world_units=False,
                                         sediment=np.ones((side, side))),
                    Terrain.from_heights(heights, 2.0).copy()):
        grids = [*terrain.arrays().values(), terrain.height()]
        offsets = [g.ctypes.data % 4096 for g in grids]
        assert offsets == [slot * 576 % 4096 for slot in range(len(grids))]
        assert all(g.flags.c_contiguous and g.dtype == np.float64 for g in grids)
        assert terrain.height().tolist() == (terrain.bedrock + terrain.sediment).tolist()
    assert Terrain.from_heights(heights, 1.0, world_units=False).bedrock.tolist() == \
        heights.tolist()
