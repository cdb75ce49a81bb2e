"""One run pipeline: ``erode``, ``sweep`` and ``tile`` start from the same terrain for the
same input and preset (simcore/pipeline/start.py), a preset's ``[ridges]`` and
``real_size`` included; the flags are checked one way."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from simcore.cli.main import main
from simcore.distributed import sweep, tiles
from simcore.errors import CliError
from simcore.formats.presets import find_preset
from simcore.formats.states import load_state
from simcore.generators.noise import upland_terrain
from simcore.pipeline import arguments
from simcore.pipeline.start import load_start


@pytest.fixture
def heightmap(tmp_path) -> Path:
    path = tmp_path / "hills.npy"
    np.save(path, upland_terrain(40, seed=2, cell_size=30.0))
    return path


def _small_ridges(preset):
    """The shipped ``ridges_eroded`` with ridges a 40-cell map can hold (its own are
    600 m apart: as many world units here, with cells of 30)."""
    return dataclasses.replace(preset, ridges=preset.ridges.replace(ridge_spacing=300.0))


def test_every_front_end_starts_from_the_same_terrain(heightmap, tmp_path, monkeypatch):
    preset = _small_ridges(find_preset("ridges_eroded"))
    monkeypatch.setattr("simcore.formats.presets.find_preset",
                        lambda name, *a, **k: preset)
    start = load_start(str(heightmap), preset, cell_size=30.0).terrain
    raw = np.load(heightmap)
    assert np.ptp(start.world_height()) > np.ptp(raw) + 100, "the preset's ridges are raised"
    # erode with no work writes its start
    state = tmp_path / "erode.npz"
    assert main(["erode", "--preset", "ridges_eroded", "--input", str(heightmap),
                 "--cell-size", "30", "--particles", "0", "--output", str(state),
                 "--quiet"]) == 0
    erode_start, _ = load_state(state)
    # a sweep's run with no work writes its start too
    row = sweep._run(str(heightmap), "ridges_eroded", preset.seed, tmp_path, 30.0, None,
                     {"particles": 0}, 7)
    sweep_start, _ = load_state(tmp_path / row["state"])
    # a tiled run starts from the whole map made the same way
    tile_start = tiles.tile_start(str(heightmap), preset, 30.0, tmp_path / "w.zarr")
    for name, t in (("erode", erode_start), ("sweep", sweep_start), ("tile", tile_start)):
        assert t.cell_size == start.cell_size, name
        assert np.array_equal(t.world_height(), start.world_height()), name


def test_a_heightmap_without_ridges_or_real_size_is_read_tile_by_tile(heightmap, tmp_path):
    preset = find_preset("default")
    assert preset.ridges is None and not preset.real_size
    lazy = tiles.tile_start(str(heightmap), preset, 30.0, tmp_path / "w.zarr")
    assert isinstance(lazy, tiles.HeightmapFile)
    whole = load_start(str(heightmap), preset, cell_size=30.0).terrain
    window = lazy.window((0, 40), (0, 40))
    assert np.array_equal(window["bedrock"], whole.bedrock)


def test_real_size_scales_the_map_in_every_front_end(heightmap, tmp_path):
    preset = dataclasses.replace(find_preset("default"), real_size=2340.0)
    start = load_start(str(heightmap), preset, cell_size=30.0)
    assert start.terrain.cell_size == pytest.approx(2340.0 / 39)
    assert start.back == pytest.approx(30.0 / (2340.0 / 39))
    tile = tiles.tile_start(str(heightmap), preset, 30.0, tmp_path / "w.zarr")
    assert np.array_equal(tile.world_height(), start.terrain.world_height())


def test_a_state_refuses_flags_that_would_rescale_it(heightmap, tmp_path):
    preset = find_preset("default")
    state = tmp_path / "s.npz"
    assert main(["erode", "--input", str(heightmap), "--cell-size", "30", "--particles",
                 "0", "--output", str(state), "--quiet"]) == 0
    for flags in ({"cell_size": 2.0}, {"extent": 100.0}, {"vertical": 2.0}):
        with pytest.raises(CliError, match="cannot change the scale of a saved state"):
            load_start(str(state), preset, **flags)
    with pytest.raises(CliError, match="--cell-size"):
        tiles.tile_start(str(state), preset, 2.0, tmp_path / "w.zarr")


@pytest.mark.parametrize("check,value,flag", [
    (arguments.cell_size, float("nan"), "--cell-size"),
    (arguments.cell_size, -1.0, "--cell-size"),
    (arguments.seed, -1, "--seed"),
    (arguments.seed, 2**63, "--seed"),
    (arguments.extent, 0.0, "--extent"),
    (arguments.vertical, float("inf"), "--vertical-exaggeration"),
    (arguments.tiles, "two", "--tiles"),
    (arguments.tiles, "3x", "--tiles"),
])
def test_each_flag_is_refused_with_its_name(check, value, flag):
    with pytest.raises(CliError, match=flag):
        check(value)


def test_tiles_count_across_then_down():
    assert arguments.tiles("3x2") == arguments.Tiles(across=3, down=2)
    assert arguments.tiles("4") == (4, 4)
    assert arguments.overrides(["droplets.Kq=5", "seed=3"], seed=9) == {
        "droplets.Kq": 5, "seed": 9}
