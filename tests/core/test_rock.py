"""The rock column (simcore/rock.py): where its layers lie, how it is stored, and that
a window or a coarse copy of a map sees the world's layers."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pytest

from simcore.algorithms.strata import Strata
from simcore.engine.simulation import Simulation, process_params
from simcore.formats.presets import PresetError, dump_preset, find_preset, parse_preset
from simcore.formats.states import load_state, save_state
from simcore.rock import RockColumn, RockError
from simcore.terrain import Terrain

CELL = 10.0


def layers_at(column: RockColumn, world: np.ndarray, cell: float = CELL,
              centre=None) -> np.ndarray:
    """``rock_layer`` of bedrock at the world heights ``world``."""
    strata = Strata(column, world.shape, cell, centre)
    out, layer = np.empty(world.shape), np.empty(world.shape)
    strata.evaluate(world / cell, np.ones(world.shape), out, layer)
    return layer


def test_flat_layers_are_found_by_depth_and_repeat():
    col = RockColumn.from_dict({"top": 100.0, "layers": [
        {"thickness": 10.0, "erodibility": 0.1}, {"thickness": 30.0, "erodibility": 2.0}]})
    z = np.array([[100.0, 97.5, 90.0, 75.0], [60.0, 59.0, 140.0, -300.0]])
    got = layers_at(col, z)
    # depth below the top: 0, 2.5, 10, 25 | 40 (a new period), 41, -40 (above: a period
    # up), 400 (ten periods down)
    want = [[0.0, 0.25, 1.0, 1.5], [0.0, 0.1, 0.0, 0.0]]
    assert np.allclose(got, want), got
    once = RockColumn.from_dict({"top": 100.0, "repeat": False, "layers": [
        {"thickness": 10.0}, {"thickness": 30.0}]})
    got = layers_at(once, np.array([[150.0, 95.0, 80.0, -1000.0]] * 3))
    assert np.allclose(got[0], [0.0, 0.5, 1 + 10 / 30, 1.999]), got[0]


def test_dip_fold_and_fault_move_the_contacts_as_the_frame_says():
    n = 41
    flat = np.zeros((n, n))  # the surface at 0 m: the layer is read off the contacts
    thick = 1000.0
    one = [{"thickness": thick}]
    # a 10 degree dip towards +x (azimuth 90): the top falls by tan(10) per metre east,
    # so x metres west of the centre the surface at 0 lies tan(10) |x| below the top,
    # sin(10) |x| across the layers (thicknesses are true thicknesses)
    dip = RockColumn.from_dict({"top": 0.0, "dip": 10.0, "dip_direction": 90.0,
                                "repeat": False, "layers": one})
    depth = layers_at(dip, flat) * thick
    x = (np.arange(n) - (n - 1) / 2) * CELL
    want = np.clip(-math.sin(math.radians(10.0)) * x, 0.0, None)
    assert np.allclose(depth[n // 2], np.minimum(want, 0.999 * thick), atol=1e-6)
    assert np.allclose(depth, depth[0][None, :]), "the contacts strike north-south"
    # upright layers (dip 90 towards +x): the depth is the distance west of the centre,
    # at any elevation
    upright = RockColumn.from_dict({"top": 55.0, "dip": 90.0, "dip_direction": 90.0,
                                    "repeat": False, "layers": one})
    for z in (flat, flat + 300.0):
        depth = layers_at(upright, z) * thick
        assert np.allclose(depth[3], np.clip(-x, 0.0, None), atol=1e-9)
    # a fold with its axis north-south: depth follows the cosine across it (east-west)
    fold = RockColumn.from_dict({"top": 300.0, "fold_amplitude": 100.0,
                                 "fold_wavelength": 200.0, "fold_axis": 0.0, "layers": one})
    depth = layers_at(fold, flat) * thick
    want = 300.0 + 100.0 * np.cos(2 * math.pi * x / 200.0)
    assert np.allclose(depth[5], want, atol=1e-6)
    # a vertical fault striking north through the centre: the east block (right of the
    # strike) is dropped by the throw
    fault = RockColumn.from_dict({"top": 300.0, "fault_throw": 50.0, "fault_strike": 0.0,
                                  "layers": one})
    depth = layers_at(fault, flat) * thick
    assert np.allclose(depth[:, x < 0], 300.0) and np.allclose(depth[:, x > 0], 250.0)
    # dipping at 45 degrees east: at the surface (0 m, 300 m below the trace's top) the
    # plane lies 300 m east of the trace
    slant = RockColumn.from_dict({"top": 300.0, "fault_throw": 50.0, "fault_dip": 45.0,
                                  "layers": one})
    depth = layers_at(slant, flat, cell=20.0) * thick
    x20 = (np.arange(n) - (n - 1) / 2) * 20.0
    assert np.allclose(depth[:, x20 > 300.0], 250.0) and np.allclose(depth[:, x20 < 300.0],
                                                                    300.0)


def test_a_window_and_a_coarse_copy_see_the_worlds_layers():
    col = RockColumn.from_dict({"top": 50.0, "dip": 12.0, "dip_direction": 33.0,
                                "fold_amplitude": 40.0, "fold_wavelength": 700.0,
                                "fold_axis": 70.0, "fault_throw": 30.0, "fault_dip": 60.0,
                                "fault_strike": 120.0, "noise_amplitude": 15.0,
                                "noise_wavelength": 300.0, "layers": [
                                    {"thickness": 20.0}, {"thickness": 45.0},
                                    {"thickness": 7.0}]})
    rng = np.random.default_rng(1)
    world = rng.uniform(-100.0, 100.0, (48, 64))
    whole = layers_at(col, world)
    r0, c0 = 13, 22
    win = world[r0:r0 + 20, c0:c0 + 30]
    centre = (0.5 * (48 - 1) - r0, 0.5 * (64 - 1) - c0)
    assert np.array_equal(layers_at(col, win.copy(), centre=centre),
                          whole[r0:r0 + 20, c0:c0 + 30])
    # a coarse copy (coarse cell k stands at fine position f k + (f - 1) / 2): with the
    # world's centre at (n - f) / 2f coarse cells it reads the layers at those positions;
    # f = 2 and the fine grid shifted by half a cell gives the same points
    f = 2
    coarse = world[::f, ::f].copy()
    got = layers_at(col, coarse, cell=CELL * f, centre=((48 - f) / (2 * f), (64 - f) / (2 * f)))
    fine = layers_at(col, coarse, cell=CELL * f,
                     centre=(((48 - 1) / 2 - 0.5) / f, ((64 - 1) / 2 - 0.5) / f))
    assert np.array_equal(got, fine)


def test_a_uniform_column_changes_nothing_bit_for_bit():
    """Layers that are all as soft as the map, with no angles of their own: every array
    but rock_layer is the run without a column, bit for bit."""
    preset = find_preset("default")
    rng = np.random.default_rng(3)
    z = np.cumsum(np.cumsum(rng.normal(size=(48, 48)), 0), 1) * 2.0
    runs = []
    for rock in (None, RockColumn.from_dict({"dip": 8.0, "layers": [
            {"thickness": 3.0}, {"thickness": 5.0, "erodibility": 1.0}]})):
        t = Terrain.from_heights(z, 30.0, rock=rock)
        Simulation(t, preset.enabled_params(), seed=4, particles=6000).run()
        runs.append(t)
    a, b = runs
    for name, arr in a.arrays().items():
        if name != "rock_layer":
            assert np.array_equal(arr, b.arrays()[name]), name
    assert not np.array_equal(a.rock_layer, b.rock_layer), "the layers were read"


def test_a_hard_layer_gives_less_rock_in_every_particle_process():
    z = np.add.outer(np.linspace(0, 300, 40), np.linspace(0, 120, 40))
    z += np.random.default_rng(0).normal(0, 3, z.shape)
    for name in ("droplets", "snowball", "hydrology"):
        params = process_params(name)
        lost = {}
        for e in (1.0, 0.1):
            rock = RockColumn.from_dict({"layers": [{"thickness": 50.0, "erodibility": e}]})
            t = Terrain.from_heights(z, 10.0, rock=rock)
            Simulation(t, {name: params}, seed=1, particles=4 * int(params.batch)).run()
            lost[e] = float(np.clip(z / 10.0 - t.bedrock, 0.0, None).sum())  # rock taken
        assert lost[0.1] < 0.75 * lost[1.0], (name, lost)


def test_the_column_travels_in_presets_states_and_set(tmp_path):
    preset = find_preset("default")
    data = tomllib.loads(dump_preset(preset))
    data["rock"] = {"dip": 5.0, "fault_throw": -20.0, "layers": [
        {"thickness": 20.0, "erodibility": 0.1, "rock_angle": 60.0, "name": "cap",
         "color": [0.9, 0.8, 0.7]}, {"thickness": 80.0}]}
    p = parse_preset(data, "p.toml")
    again = parse_preset(tomllib.loads(dump_preset(p)), "again.toml")
    assert again.rock == p.rock and again.rock.layers[0].name == "cap"
    q = p.with_overrides({"rock.dip": 12.0, "rock.layers.2.erodibility": 3.0})
    assert q.rock.frame.dip == 12.0 and q.rock.layers[1].erodibility == 3.0
    assert p.rock.frame.dip == 5.0, "the preset it came from is unchanged"
    with pytest.raises(PresetError, match="no \\[rock\\] table"):
        preset.with_overrides({"rock.dip": 3.0})
    with pytest.raises(PresetError, match="N from 1 to 2"):
        p.with_overrides({"rock.layers.7.erodibility": 3.0})
    with pytest.raises(PresetError, match="dip"):
        p.with_overrides({"rock.dip": 95.0})
    t = Terrain.from_heights(np.zeros((8, 9)), 5.0, rock=p.rock)
    path = save_state(tmp_path / "s.npz", t, {})
    loaded, meta = load_state(path)
    assert loaded.rock == p.rock and meta["rock"]["dip"] == 5.0
    assert loaded.copy().rock == p.rock


@pytest.mark.parametrize("bad,words", [
    ({"layers": []}, "at least one layer"),
    ({"layers": [{"thickness": -1.0}]}, "layer 1: 'thickness'"),
    ({"layers": [{"thickness": 5.0}, {"thickness": math.nan}]},
     "layer 2: 'thickness' must be finite"),
    ({"layers": [{"thickness": 1.0}] * 1_000_000}, "at most 64"),
    ({"layers": [{"thickness": 1.0}], "fault_throw": 5.0, "fault_dip": 0.0}, "fault_dip"),
    ({"layers": [{"thickness": 1.0, "color": [2, 0, 0]}]}, "'color'"),
    ({"layers": [{"thickness": 1.0, "hardness": 2}]}, "unknown key 'hardness'"),
    ({"layers": [{"thickness": 1.0}], "dipp": 3}, "unknown key 'dipp'"),
    ({"layers": "granite"}, "'layers' must be a list"),
])
def test_an_absurd_column_is_one_clear_message(bad, words, tmp_path):
    with pytest.raises(RockError, match=words.replace("[", "\\[")):
        RockColumn.from_dict(bad)
    preset = tomllib.loads(dump_preset(find_preset("default")))
    with pytest.raises(PresetError, match="p.toml: \\[rock\\]"):
        parse_preset({**preset, "rock": bad}, "p.toml")
    # a state whose metadata holds such a column is refused, naming the file
    t = Terrain.from_heights(np.zeros((6, 6)), 1.0)
    path = save_state(tmp_path / "s.npz", t, {"rock": bad})
    with pytest.raises(Exception, match="s.npz"):
        load_state(path)


def test_the_command_line_erodes_a_preset_with_a_column_and_keeps_it(tmp_path):
    """A preset file with [rock] on a heightmap: the state holds the column and the
    exposed layers; resumed, the state's column is the one that runs; --set changes it."""
    from simcore.analysis.layers import exported_maps
    from simcore.cli.main import main
    preset = tomllib.loads(dump_preset(find_preset("droplets_only")))
    preset["simulation"]["particles_per_area"] = 0.0
    preset["simulation"]["particles"] = 3000
    preset["rock"] = {"top": 60.0, "layers": [{"thickness": 15.0, "erodibility": 0.05},
                                              {"thickness": 25.0, "erodibility": 1.0}]}
    text = dump_preset(parse_preset(preset, "rocky.toml", "rocky"))
    (tmp_path / "rocky.toml").write_text(text)
    rng = np.random.default_rng(2)
    heights = np.add.outer(np.linspace(0, 80, 32), np.zeros(32)) + rng.normal(0, 1, (32, 32))
    np.save(tmp_path / "h.npy", heights)
    out = tmp_path / "s.npz"
    assert main(["erode", "--preset", str(tmp_path / "rocky.toml"), "--input",
                 str(tmp_path / "h.npy"), "--output", str(out), "--cell-size", "5",
                 "--quiet"]) == 0
    t, meta = load_state(out)
    assert meta["rock"]["layers"][0]["erodibility"] == 0.05
    assert t.rock is not None and 0 < t.rock_layer.max() < 2
    assert "rock_layer" in exported_maps(t, t.cell_size)
    again = tmp_path / "s2.npz"
    assert main(["erode", "--preset", str(tmp_path / "rocky.toml"), "--input", str(out),
                 "--output", str(again), "--set", "rock.dip=30", "--quiet"]) == 0
    assert load_state(again)[1]["rock"]["dip"] == 30.0


def test_the_layers_rise_with_the_rock_uplift_raises():
    """Uplift with no erosion (k 0, no diffusion) raises rock and its layers together:
    every cell keeps its layer; with rivers, it is erosion that exposes new layers."""
    z = np.add.outer(np.linspace(0, 100, 24), np.linspace(0, 40, 24))
    col = RockColumn.from_dict({"top": 120.0, "layers": [{"thickness": 7.0},
                                                        {"thickness": 11.0}]})
    still = process_params("landscape", {"k": 0.0, "diffusivity": 0.0, "uplift": 1e-3,
                                         "age": 2e5, "time_step": 1e4})
    t = Terrain.from_heights(z, 10.0, rock=col)
    sim = Simulation(t, {"landscape": still}, seed=0, particles=1)
    start = t.rock_layer.copy()
    sim.run()
    assert t.uplifted.max() * 10.0 > 150.0, "more than the column's period was raised"
    assert np.abs(t.rock_layer - start).max() < 1e-9, "rounding only"
    cutting = still.replace(k=2e-5)
    t = Terrain.from_heights(z, 10.0, rock=col)
    Simulation(t, {"landscape": cutting}, seed=0, particles=1).run()
    assert np.abs(t.rock_layer - start).max() > 0.1


def test_engine_tiles_keep_the_layer_number_whole():
    """The exposed layer (index + depth, up to the column's length) is coded over its own
    range in an engine tile, not clipped to 0..1 like a fraction."""
    from simcore.formats.engine_tiles import _layer_codes, state_layers
    t = Terrain.from_heights(np.zeros((8, 8)), 2.0)
    t.rock_layer[...] = np.linspace(0.0, 2.9, 64).reshape(8, 8)
    layers, fractions = state_layers(t)
    assert "rock_layer" in layers and "rock_layer" not in fractions
    _, record = _layer_codes(layers, fractions, (8, 8), 16)
    assert record["rock_layer"]["max"] == pytest.approx(2.9)
    assert record["rock_layer"]["unit"] == "factor"
