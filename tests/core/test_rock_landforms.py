"""Landforms of a rock column (simcore/rock.py) under the landscape process: hard layers
stand out as the stream-power law says, a hard cap makes flat summits, dipping layers
make asymmetric cuestas, folded layers make trellis drainage; a uniform column changes
nothing; bad columns are refused with one clear message.

Every run here is the landscape process alone (uplift, stream power, hillslope
diffusion) on the smallest grid that shows the landform. The column's frame is fixed in
world elevation: a cell's layer is the one at its bedrock's elevation, looked up before
every batch (``batch = 1``: every time step).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from simcore.analysis.channels import channel_azimuths
from simcore.cli.main import main
from simcore.engine.simulation import Simulation, process_params
from simcore.formats.presets import PresetError, find_preset, load_preset, save_preset
from simcore.generators.noise import upland_terrain
from simcore.rock import RockColumn, RockError
from simcore.terrain import Terrain

CELL = 30.0


def _run(heights: np.ndarray, cell: float, rock: RockColumn | None, **landscape) -> Terrain:
    """The landscape process on world ``heights`` with ``rock``; one time step a batch
    so the layers are looked up again every step."""
    values = {"uplift": 0.0, "k": 3e-5, "m": 0.45, "n": 1.0, "head_area": 1e4,
              "diffusivity": 0.01, "deposition": 0.0, "time_step": 2e4, "batch": 1}
    values.update(landscape)
    t = Terrain.from_heights(heights, cell, rock=rock)
    Simulation(t, {"landscape": process_params("landscape", values)}, particles=1).run()
    return t


def _plateau(size: int, height: float, bumps: float, seed: int = 3) -> np.ndarray:
    """A plateau ``height`` high with fBm bumps up to ``bumps`` on it, falling to base
    level (0) at the edges over the outer 6 cells (world units)."""
    i = np.arange(size)
    d = np.minimum(np.minimum(i, size - 1 - i)[:, None], np.minimum(i, size - 1 - i)[None, :])
    ramp = np.clip(d / 6.0, 0.0, 1.0)
    noise = upland_terrain(size, seed=seed, cell_size=1.0, relief=1.0)
    return ramp * (height + bumps * noise)


def _column(layers: list[tuple[float, float]], **frame) -> RockColumn:
    return RockColumn.from_dict({"layers": [{"thickness": t, "erodibility": e}
                                            for t, e in layers], **frame})


# --- differential erosion: the stream-power law, analytically ---------------------------

def test_a_hard_layer_steepens_a_steady_river_by_the_erodibility_ratio():
    """One river on a 3-row grid (the side rows a high wall, the far end too: the water
    runs along the middle row to its outlet at column 0), uniform uplift U, pure stream
    power (n = 1, no diffusion, no deposition). At steady state erosion equals uplift at
    every cell:

        U = K e A^m S   ->   S = U / (K e A^m)

    with A = (cells upstream, itself included) x cell² and e the erodibility of the
    cell's layer. The column is soft rock (e = 1) with one hard band (e = 0.25) standing
    upright across the river (layers dip 90°: their contacts are vertical, so the rock
    uplift raises does not move them and a steady state exists; horizontal layers rise
    with the rock through the profile): in the band the river must be steeper by
    e_soft / e_hard = 4 (at equal area; S A^m is what the law fixes). Cells next to a
    contact are left out (their slope reaches across it)."""
    cols, cell, u, k, m = 48, 100.0, 1e-3, 1e-4, 0.5
    h = np.zeros((3, cols))
    h[0, :] = h[2, :] = h[:, -1] = 1e5  # walls: outlets too high to receive water
    h[1, :-1] = 0.01 * np.arange(cols - 1) * cell  # the river's start, rising inland
    # dipping east (+x): the depth across the layers is the distance west of the centre,
    # so the hard band is x = -2000 .. -1000 m (columns 4 to 13 of the 48)
    rock = _column([(1000.0, 1.0), (1000.0, 0.25), (1.0, 1.0)], dip=90.0,
                   dip_direction=90.0, repeat=False)
    t = _run(h, cell, rock, uplift=u, k=k, m=m, head_area=0.0, diffusivity=0.0,
             time_step=5e4, age=8e6)
    z = t.world_height()[1, :-1]
    slope = np.diff(z) / cell  # between each cell and its receiver downstream
    area = (cols - 2 - np.arange(1, cols - 1)) * cell * cell + cell * cell
    layer = t.rock_layer[1, 1:-1]
    index = np.floor(layer).astype(int)
    contact = np.zeros(index.size, bool)  # a cell next to one of another layer
    contact[1:] |= index[1:] != index[:-1]
    contact[:-1] |= index[:-1] != index[1:]
    inside = ~contact
    law = slope * area ** m * k / u  # = 1 / e at steady state
    hard = law[inside & (index == 1)]
    soft = law[inside & (index != 1)]
    assert hard.size >= 5 and soft.size >= 10, "the band lies across the profile"
    assert np.median(hard) == pytest.approx(1 / 0.25, rel=0.1)
    assert np.median(soft) == pytest.approx(1.0, rel=0.1)
    assert np.median(hard) / np.median(soft) == pytest.approx(4.0, rel=0.1)


# --- flat summits under a hard cap ------------------------------------------------------

def _summits(height: np.ndarray) -> np.ndarray:
    """Heights of the local maxima (higher than all eight neighbours; on a flat top
    hardly any cell is), edges left out."""
    c = height[1:-1, 1:-1]
    top = np.ones(c.shape, bool)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if dr or dc:
                top &= c > height[1 + dr:height.shape[0] - 1 + dr,
                                  1 + dc:height.shape[1] - 1 + dc]
    return c[top]


def test_a_hard_cap_holds_the_summits_at_its_level():
    """A plateau 300 m high with up to 120 m of bumps on it; the column: soft rock
    (e = 1) above 330 m, a hard cap (e = 0.01) from 330 down to 270 m, soft rock below.
    Pure stream power (no diffusion: the landscape process's diffusion does not read the
    erodibility and would round the cap's rims away). The rivers strip the soft bumps
    down to the cap, whose rivers hardly cut: the summits standing on the cap (local
    maxima above its base) and the top percentile of all heights lie within one cell's
    relief of the cap's top (here: what one 30 m cell spans at 20 degrees, 10.9 m). The
    same run without a column wears the whole plateau down to low hills."""
    cell_relief = CELL * math.tan(math.radians(20.0))
    start = _plateau(64, 300.0, 120.0)
    cap = _column([(1.0, 1.0), (60.0, 0.01), (1.0, 1.0)], top=331.0, repeat=False)
    t = _run(start, CELL, cap, age=4e5, diffusivity=0.0)
    plain = _run(start, CELL, None, age=4e5, diffusivity=0.0)
    h = t.world_height()
    summits = _summits(h)
    on_cap = summits[summits >= 270.0]
    assert on_cap.size >= 20, summits
    assert np.all(np.abs(on_cap - 330.0) <= cell_relief), np.sort(on_cap)
    assert abs(np.percentile(h, 99) - 330.0) <= cell_relief
    assert (np.floor(t.rock_layer) == 1).mean() >= 0.3, "the cap still covers the plateau"
    assert np.percentile(plain.world_height(), 99) < 150.0


# --- cuestas -----------------------------------------------------------------------------

def _along(height: np.ndarray, cell: float, azimuth: float) -> np.ndarray:
    """The slope along the azimuth (degrees clockwise from +y, the rows; +x the
    columns), inner 80% of the grid: > 0 where the ground rises that way."""
    gy, gx = np.gradient(height, cell)
    a = math.radians(azimuth)
    g = gx * math.sin(a) + gy * math.cos(a)
    m = height.shape[0] // 10
    return g[m:-m, m:-m]


def _asymmetry(height: np.ndarray, cell: float, dip_direction: float) -> tuple[float, float]:
    """Median slope of the scarps (ground rising in the dip direction: facing up-dip) and
    of the dip slopes (falling that way), cells steeper than 1 degree along it."""
    g = _along(height, cell, dip_direction)
    least = math.tan(math.radians(1.0))
    return float(np.median(g[g > least])), float(np.median(-g[g < -least]))


def test_dipping_layers_make_cuestas_whose_scarps_face_up_dip():
    """Layers dipping 5 degrees east, hard (e = 0.15, 30 m) and soft (e = 1.5, 60 m) in
    turn, under a bumpy plateau: along the dip, the slopes facing up-dip (the scarps,
    where a hard layer's edge is cut back) are at least twice as steep as those facing
    down-dip (the dip slopes, the hard layers' tops stripped bare: about the dip). The
    same run turned by 90 degrees (start and dip direction) gives the same statistics
    measured along its own dip, within 10% (the frame has no favoured direction)."""
    start = _plateau(96, 300.0, 60.0)
    layers = [(30.0, 0.15), (60.0, 1.5)]
    east = _run(start, CELL, _column(layers, top=360.0, dip=5.0, dip_direction=90.0),
                age=5e5)
    # turned a quarter: +x (azimuth 90) goes to +y (azimuth 0); np.rot90(k=-1) does it
    south = _run(np.rot90(start, -1), CELL,
                 _column(layers, top=360.0, dip=5.0, dip_direction=0.0), age=5e5)
    scarp, dip = _asymmetry(east.world_height(), CELL, 90.0)
    assert scarp / dip >= 2.0, (scarp, dip)
    assert dip == pytest.approx(math.tan(math.radians(5.0)), rel=0.5), "dip slopes ~ dip"
    scarp2, dip2 = _asymmetry(south.world_height(), CELL, 0.0)
    assert scarp2 == pytest.approx(scarp, rel=0.1)
    assert dip2 == pytest.approx(dip, rel=0.1)
    # across the strike there is no asymmetry
    across = _asymmetry(east.world_height(), CELL, 0.0)
    assert across[0] / across[1] == pytest.approx(1.0, abs=0.25)


# --- trellis drainage --------------------------------------------------------------------

def _peak(azimuths: np.ndarray, bins: int = 12) -> float:
    """The direction (its bin's centre, degrees) where the histogram peaks."""
    hist, edges = np.histogram(azimuths, bins=bins, range=(0.0, 180.0))
    k = int(hist.argmax())
    return 0.5 * (edges[k] + edges[k + 1])


def _share_near(azimuths: np.ndarray, axis: float, within: float = 15.0) -> float:
    """Share of the directions within ``within`` degrees of ``axis`` (axial: 0 = 180);
    1/6 for isotropic directions at 15 degrees."""
    return float((np.abs((azimuths - axis + 90.0) % 180.0 - 90.0) <= within).mean())


def test_folded_layers_make_trellis_drainage_along_the_fold_axis():
    """Folds trending 30 degrees (wavelength 1.5 km, amplitude 150 m) in hard (e = 0.15,
    40 m) and soft (e = 1.5, 80 m) layers under a bumpy plateau: the rivers follow the
    soft belts between the hard ridges (their short tributaries cross the ridges), so
    the histogram of channel directions (cells draining 30 cells or more; 15-degree
    bins) peaks within 15 degrees of the fold axis, and the share of channels within 15
    degrees of the axis is more than twice what it is on the same run without a column
    (and than the 1/6 of isotropic directions). The run without a column peaks along
    the grid's axes instead (the square's edges are base level, D8 steps)."""
    start = _plateau(128, 300.0, 60.0)
    folds = _column([(40.0, 0.15), (80.0, 1.5)], top=360.0, fold_amplitude=150.0,
                    fold_wavelength=1500.0, fold_axis=30.0)
    folded = channel_azimuths(_run(start, CELL, folds, age=5e5).world_height(), CELL)
    plain = channel_azimuths(_run(start, CELL, None, age=5e5).world_height(), CELL)
    peak = _peak(folded)
    assert abs((peak - 30.0 + 90.0) % 180.0 - 90.0) <= 15.0, peak
    share, plain_share = _share_near(folded, 30.0), _share_near(plain, 30.0)
    assert share >= 2.0 * max(plain_share, 1.0 / 6.0), (share, plain_share)


# --- a uniform column changes nothing ------------------------------------------------------

@pytest.mark.parametrize("frame", [{}, {"dip": 20.0, "fold_amplitude": 50.0,
                                         "fault_throw": 30.0}])
def test_a_uniform_column_is_bit_identical_to_none(frame):
    """Layers that all have erodibility 1 and no angle of their own multiply the
    erodibility map by 1: every array of a run with droplets, landscape and hillslopes
    is exactly that of the run without a column (but ``rock_layer``, which only the
    column writes)."""
    heights = upland_terrain(40, seed=2, cell_size=CELL)
    rock = _column([(20.0, 1.0), (35.0, 1.0), (10.0, 1.0)], **frame)
    procs = {"landscape": process_params("landscape", {"age": 1e5, "time_step": 2e4,
                                                       "batch": 1}),
             "droplets": process_params("droplets", {"batch": 200}),
             "thermal": process_params("thermal", {"batch": 1})}
    runs = []
    for column in (rock, None):
        t = Terrain.from_heights(heights, CELL, rock=column)
        Simulation(t, procs, seed=4, particles=1000).run()
        runs.append(t)
    with_rock, without = runs[0].arrays(), runs[1].arrays()
    assert with_rock.keys() == without.keys()
    for name in with_rock:
        if name != "rock_layer":
            assert np.array_equal(with_rock[name], without[name]), name
    assert np.array_equal(runs[0].trees, runs[1].trees)
    assert runs[0].outflow == runs[1].outflow


# --- bad columns ---------------------------------------------------------------------------

GOOD_LAYER = "[[rock.layers]]\nthickness = 10.0\nerodibility = 0.5\n"


@pytest.mark.parametrize("rock, message", [
    ("[rock]\n[[rock.layers]]\nthickness = -5.0\nerodibility = 0.5\n",
     "layer 1: 'thickness' = -5.0 is out of range"),
    ("[rock]\n[[rock.layers]]\nthickness = 10.0\nerodibility = nan\n",
     "layer 1: 'erodibility'"),
    ("[rock]\n" + GOOD_LAYER * 1000, "1000 layers; a column lists at most 64"),
    ("[rock]\nfault_dip = 0.0\nfault_throw = 10.0\n" + GOOD_LAYER, "'fault_dip'"),
])
def test_a_bad_column_is_refused_with_one_message_and_nothing_written(tmp_path, capsys,
                                                                     rock, message):
    """Negative thickness, NaN, more layers than a column lists, a fault plane lying
    flat: loading the preset raises one PresetError naming the [rock] entry; running it
    from the command line prints that one line, returns 2 and writes nothing."""
    bad = tmp_path / "bad.toml"
    bad.write_text('[preset]\nname = "bad"\n[landscape]\nenabled = true\n' + rock)
    with pytest.raises(PresetError) as err:
        load_preset(bad)
    assert "[rock]" in str(err.value) and message in str(err.value), str(err.value)
    assert isinstance(err.value, PresetError)
    heights = tmp_path / "h.npy"
    np.save(heights, np.zeros((8, 8)))
    before = sorted(p.name for p in tmp_path.iterdir())
    out = tmp_path / "out.npz"
    assert main(["erode", "--preset", str(bad), "--input", str(heights), "--output",
                 str(out), "--quiet"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "nothing written"


def test_a_million_layers_in_code_are_refused_before_any_is_checked():
    """The column itself (not only the preset parser) refuses a list of a million layers
    at once, with the limit in the message."""
    with pytest.raises(RockError, match="at most 64"):
        RockColumn.from_dict({"layers": [{"thickness": 1.0}] * 1_000_000})


# --- the shipped rock presets ----------------------------------------------------------------

ROCK_PRESETS = ("mesa_country", "cuesta_land", "ridge_and_valley")


def test_the_rock_presets_keep_their_columns_through_a_save(tmp_path):
    """The shipped rock presets load with their columns, and saving one writes a file
    that loads as the same preset, column included."""
    for name in ROCK_PRESETS:
        preset = find_preset(name)
        assert preset.rock is not None and len(preset.rock.layers) >= 2, name
        assert {"landscape", "thermal"} <= set(preset.enabled_params()), name
        again = load_preset(save_preset(preset, tmp_path / f"{name}.toml"))
        assert again.rock == preset.rock and again.params == preset.params, name


@pytest.mark.parametrize("name", ROCK_PRESETS)
def test_the_rock_presets_make_their_landforms(name):
    """Each rock preset as shipped (landscape evolution, then hillslopes) on a raised
    plateau 7.68 km across (128² cells of 60 m; 420 m high with up to 140 m of bumps)
    makes its landform, which the same run without its column does not: mesa_country
    keeps its summits on the cap's top (500 m) where the plain run wears them more
    than 100 m lower; cuesta_land's scarps facing up-dip are at least twice as steep as its dip
    slopes (the plain run: alike); ridge_and_valley's channels peak within 15 degrees of
    the fold axis (40) and lie along it half as often again as without the column."""
    cell, preset = 60.0, find_preset(name)
    start = _plateau(128, 420.0, 140.0)
    runs = []
    for rock in (preset.rock, None):
        t = Terrain.from_heights(start, cell, rock=rock)
        Simulation(t, preset.enabled_params(), seed=preset.seed,
                   particles=preset.work(t)).run()
        runs.append(t.world_height())
    h, plain = runs
    if name == "mesa_country":
        top = preset.rock.frame.top
        assert abs(_summits(h).max() - top) <= 5.0 and abs(np.percentile(h, 99) - top) <= 10.0
        assert np.percentile(plain, 99) < top - 100.0
    elif name == "cuesta_land":
        scarp, dip = _asymmetry(h, cell, preset.rock.frame.dip_direction)
        plain_scarp, plain_dip = _asymmetry(plain, cell, preset.rock.frame.dip_direction)
        assert scarp / dip >= 2.0 and plain_scarp / plain_dip <= 1.5
    else:
        axis = preset.rock.frame.fold_axis
        azimuths = channel_azimuths(h, cell)
        assert abs((_peak(azimuths) - axis + 90.0) % 180.0 - 90.0) <= 15.0
        assert _share_near(azimuths, axis) >= 1.5 * _share_near(channel_azimuths(plain, cell),
                                                                axis)
