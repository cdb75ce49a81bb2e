"""Real-world size of a terrain object in real Blender (bpy module): the same
heightmap as a 2 m or a 50 km object with the same Real Size gives the same landforms;
with no Real Size set every shipped preset changes grids 1 m to 100 km across alike,
keeps the relief unless it says otherwise and builds no towers; old files and presets
load; bad values are refused."""

from __future__ import annotations

import json
import tomllib
import types

import bpy
import numpy as np
import pytest
from blender_helpers import PanelRecorder, positions, staged_addon

te = staged_addon()
from terrain_erosion.data.scale import RealScale  # noqa: E402
from terrain_erosion.simcore.formats.presets import (  # noqa: E402
    PresetError,
    dump_preset,
    find_preset,
    parse_preset,
    preset_files,
)
from terrain_erosion.simcore.generators.noise import upland_terrain  # noqa: E402
from terrain_erosion.simcore.params import ParameterError  # noqa: E402

REAL = 5000.0  # metres: the world of the same-landforms test


def demo_object(n: int, width: float, name: str = "Terrain", world: float | None = None):
    """The demo's upland terrain (simcore generate's defaults: relief 0.12 x the
    extent) as an n x n grid object ``width`` local units across. With ``world`` the
    heightmap is the one of a ``world``-metre grid scaled down to ``width``: the same
    landscape at another size."""
    world = width if world is None else world
    z = upland_terrain(n, seed=3, cell_size=world / (n - 1)) * (width / world)
    obj = te.features.export.make_grid_object(name, z, width / (n - 1), width / (n - 1))
    bpy.context.view_layer.objects.active = obj
    return obj


def heights(obj) -> np.ndarray:
    g = te.data.grid.detect_grid(obj.data)
    return positions(obj.data)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)


def erode(obj, particles: int | None = None):
    """One synchronous run of the object's settings (as Erode in background mode)."""
    job = te.data.job.ErosionJob(obj, particles)
    job.run()
    return job


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a.ravel(), b.ravel())[0, 1])


def no_towers_and_relief_kept(before: np.ndarray, after: np.ndarray) -> tuple[bool, str]:
    """The issue's bound: relief within +-30% of the start, no cell above the start's
    highest point + 5% of its relief. (ok, numbers)."""
    relief0, relief1 = np.ptp(before), np.ptp(after)
    over = (after.max() - before.max()) / relief0
    ok = abs(relief1 / relief0 - 1) <= 0.30 and over <= 0.05
    return ok, f"relief {100 * (relief1 / relief0 - 1):+.1f}%, highest {100 * over:+.1f}%"


# -- the rule and its sentence ---------------------------------------------------------

def test_the_automatic_rule_and_the_status_line(blender):
    small = demo_object(33, 2.0, "Small")
    s = small.terrain_erosion
    assert s.real_size == 0.0 and s.vertical_exaggeration == 1.0, "defaults: automatic"
    g = te.data.grid.detect_grid(small.data)
    scale = s.real_scale(g.rows, g.cols, g.cell_size)
    assert scale.automatic and scale.real_size == pytest.approx(5000.0)
    assert scale.world_cell == pytest.approx(5000.0 / 32) and scale.s == pytest.approx(2500)
    ok, text = te.data.grid.grid_status(small)
    assert ok and text.endswith(
        "This 2.0 m grid is treated as 5.0 km (automatic: set Real Size to change)"), text
    s.real_size = 12000.0
    ok, text = te.data.grid.grid_status(small)
    assert text.endswith("This 2.0 m grid is treated as 12 km (Real Size)"), text
    s.vertical_exaggeration = 2.0
    assert "treated as 12 km, heights exaggerated x2 (Real Size)" in te.data.grid.grid_status(
        small)[1]
    big = demo_object(33, 7680.0, "Big")  # metres-sized objects are the 5 km world too
    g = te.data.grid.detect_grid(big.data)
    scale = big.terrain_erosion.real_scale(g.rows, g.cols, g.cell_size)
    assert scale.automatic and scale.real_size == pytest.approx(5000.0)
    assert scale.s == pytest.approx(5000.0 / 7680.0)
    assert te.data.grid.grid_status(big)[1].endswith(
        "This 7.7 km grid is treated as 5.0 km (automatic: set Real Size to change, "
        "7680 for 1 unit = 1 m)")
    big.terrain_erosion.real_size = 7680.0  # the hint, typed: exactly 1:1
    scale = big.terrain_erosion.real_scale(g.rows, g.cols, g.cell_size)
    assert scale.s == 1.0 and scale.world_cell == g.cell_size
    five = demo_object(33, 5000.0, "Five")  # the reference world's own size: 1:1
    g = te.data.grid.detect_grid(five.data)
    scale = five.terrain_erosion.real_scale(g.rows, g.cols, g.cell_size)
    assert scale.automatic and scale.s == 1.0 and scale.world_cell == g.cell_size
    # a Real Size equal to the object's own extent is exactly 1:1 (single precision)
    small.terrain_erosion.real_size, small.terrain_erosion.vertical_exaggeration = 2.0, 1.0
    g = te.data.grid.detect_grid(small.data)
    scale = small.terrain_erosion.real_scale(g.rows, g.cols, g.cell_size)
    assert scale.world_cell == g.cell_size == scale.height_unit and scale.s == 1.0


def test_the_panel_shows_real_size_and_exaggeration_with_the_work(blender):
    obj = demo_object(33, 2.0)
    obj.terrain_erosion.apply_preset(find_preset("default"))
    log = []
    panel = types.SimpleNamespace(layout=PanelRecorder(log))
    context = types.SimpleNamespace(active_object=obj,
                                    window_manager=bpy.context.window_manager)
    bpy.types.TERRAIN_PT_main.draw(panel, context)
    props = [name for kind, name, _ in log if kind == "prop"]
    assert props.index("real_size") == props.index("particles") + 1
    assert props.index("vertical_exaggeration") == props.index("real_size") + 1
    labels = " ".join(text for kind, text, _ in log if kind == "label")
    assert "treated as 5.0 km" in labels
    # rain per area x the REAL area: 0.0034 per m^2 on 5 km x 5 km (33 x 33 cells of
    # 156 m), not on 2 m x 2 m (1 particle)
    world_cell = 5000.0 / 32
    expected = round(0.0034 * 33 * 33 * world_cell ** 2)
    assert f"\u2248 {expected:,} particles for this grid" in labels


# -- same world, any local size ---------------------------------------------------------

def test_the_same_real_size_gives_the_same_landforms_at_any_object_size(blender):
    n, particles = 64, 20_000
    preset = find_preset("default")
    changes, trees = {}, {}
    for width in (2.0, 100.0, 5000.0, 50_000.0):
        obj = demo_object(n, width, f"W{width:g}", world=REAL)
        s = obj.terrain_erosion
        s.apply_preset(preset)
        s.real_size = REAL
        before = heights(obj)
        job = erode(obj, particles)
        assert job.scale.world_cell == pytest.approx(REAL / (n - 1), rel=1e-9)
        to_world = REAL / width  # metres per local unit (exaggeration 1)
        changes[width] = (heights(obj) - before) * to_world
        trees[width] = len(s.trees_object.data.vertices)
    ref = changes[5000.0]
    assert np.abs(ref).max() > 1.0, "the run changed the 5 km world by metres"
    for width, change in changes.items():
        r = correlation(change, ref)
        print(f"{width:g} local units: r = {r:.6f}, max |diff| = "
              f"{np.abs(change - ref).max():.3g} m, trees {trees[width]}")
        assert r >= 0.99, (width, r)
    # float32 vertex heights round differently at each size, and the random walks
    # drift apart from there: the same forest, give or take a tree or two
    assert max(trees.values()) - min(trees.values()) <= 0.03 * max(trees.values()), trees


def test_vertical_exaggeration_scales_the_heights_of_the_same_world(blender):
    """An object twice as tall with exaggeration 2 is the same real terrain: its result
    is the other's, twice as tall."""
    flat = demo_object(40, 2.0, "True")
    tall = te.features.export.make_grid_object("Tall", 2.0 * heights(flat), 2.0 / 39, 2.0 / 39)
    tall.terrain_erosion.vertical_exaggeration = 2.0
    z0 = heights(flat)
    for obj in (flat, tall):
        obj.terrain_erosion.particles = 6000
        erode(obj)
    assert np.abs(heights(flat) - z0).max() > 1e-4
    assert np.allclose(heights(tall), 2.0 * heights(flat), rtol=0, atol=1e-5 * np.ptp(z0))
    depth = te.data.grid.read_float_layer(tall.data, "te_sediment_depth",
                                     te.data.grid.detect_grid(tall.data))
    assert depth.max() > 0, "sediment depth is a local length too (exaggerated)"


# -- the automatic rule makes every preset behave at any size --------------------------

SIZES = (1.0, 100.0, 5000.0, 100_000.0)  # local units across; 5000: the reference
REFERENCE = 5000.0
PRESET_N = 64  # vertices a side: small, so all presets x sizes take about two minutes
PARTICLES = 2_000_000  # at most this many
#: presets whose description says they raise or wear the land (exempt from keeping the
#: relief within +-30%), and the words in the description that say so
CHANGES_RELIEF = {"canyons": "worn down", "deep_channels": "worn low",
                  "old_worn": "worn-down", "young_range": "rising"}
_ratios: dict[tuple[str, float], tuple[float, float]] = {}


def preset_run(preset_id: str, width: float) -> tuple[float, float]:
    """The demo uplands (relief 12% of the extent) as an object ``width`` local units
    across, a shipped preset applied, no Real Size set, the preset's rain per area at
    the automatic real size (at most PARTICLES): (relief after / before, rise of the
    highest point over the start's highest, as a fraction of the start's relief)."""
    if (preset_id, width) not in _ratios:
        obj = demo_object(PRESET_N, width, preset_id)
        s = obj.terrain_erosion
        s.apply_preset(find_preset(preset_id))
        assert s.real_size == 0.0, "shipped presets leave the size automatic"
        g = te.data.grid.detect_grid(obj.data)
        before = heights(obj)
        erode(obj, min(s.work(g.rows, g.cols, g.cell_size), PARTICLES))
        after = heights(obj)
        relief0 = np.ptp(before)
        _ratios[preset_id, width] = (np.ptp(after) / relief0,
                                     (after.max() - before.max()) / relief0)
        bpy.data.objects.remove(obj)
    return _ratios[preset_id, width]


@pytest.mark.slow
@pytest.mark.parametrize("width", SIZES, ids=lambda w: f"{w:g}")
@pytest.mark.parametrize("preset_id", sorted(preset_files()))
def test_every_preset_changes_the_relief_alike_at_any_size(blender, preset_id, width):
    """The rule of the automatic real size: with the defaults, a shipped preset changes
    the relief of a grid 1 m to 100 km across by the ratio it does on the 5 km
    reference (within +-10% of that ratio); one whose description does not say it
    raises or wears the land keeps the relief within +-30%; no cell rises above the
    start's highest point + 5% of its relief unless the preset uplifts."""
    preset = find_preset(preset_id)
    ratio, highest = preset_run(preset_id, width)
    reference, _ = preset_run(preset_id, REFERENCE)
    print(f"{preset_id} at {width:g} units: relief x{ratio:.3f} (5 km: x{reference:.3f}), "
          f"highest {100 * highest:+.1f}%")
    assert abs(ratio / reference - 1) <= 0.10, (preset_id, width, ratio, reference)
    words = CHANGES_RELIEF.get(preset_id)
    if words is None:
        assert abs(ratio - 1) <= 0.30, (preset_id, width, ratio)
    else:
        assert words in preset.description, f"{preset_id}: the description says it"
    uplifts = preset.enabled.get("landscape") and preset.params["landscape"].uplift > 0
    if not uplifts:
        assert highest <= 0.05, (preset_id, width, highest)


def test_a_new_objects_own_defaults_build_no_towers(blender):
    """Droplets only, the object's settings as they come (no preset), on a 48 x 48 grid
    4 m wide with 1 m of relief: the issue's 27 m towers."""
    from terrain_erosion.simcore.generators.noise import fractal_terrain
    z = fractal_terrain(48, seed=1, relief=1.0)
    obj = te.features.export.make_grid_object("New", z, 4.0 / 47, 4.0 / 47)
    s = obj.terrain_erosion
    assert [n for n in te.simcore.engine.simulation.PROCESSES if getattr(s, n).enabled] == [
        "droplets"]
    before = heights(obj)
    erode(obj)
    ok, numbers = no_towers_and_relief_kept(before, heights(obj))
    print(f"new object's defaults: {numbers}")
    assert ok, numbers


# -- old files, presets, sidecars, the batch ---------------------------------------------

def test_an_object_saved_without_a_real_size_loads_as_automatic(blender, tmp_path):
    obj = demo_object(24, 2.0, "Old")
    s = obj.terrain_erosion
    s.particles = 3000
    erode(obj)
    rounds = s.rounds_done
    for key in ("real_size", "vertical_exaggeration"):  # as a file saved before them
        if key in s:
            del s[key]
    assert "real_size" not in s.keys() and "droplets" in s.keys()
    path = str(tmp_path / "old.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Old"]
    s = obj.terrain_erosion
    assert s.real_size == 0.0 and s.vertical_exaggeration == 1.0
    assert s.particles == 3000 and s.rounds_done == rounds
    job = te.data.job.ErosionJob(obj)
    assert job.scale.automatic and job.scale.real_size == pytest.approx(5000.0)
    assert job.sim.rounds_done == rounds, "the stored state resumes"
    job.run()
    assert s.rounds_done > rounds


def test_presets_carry_an_optional_real_size(blender):
    old = parse_preset({"simulation": {"particles": 1000}, "droplets": {}}, "old.toml")
    assert old.real_size is None, "a preset without the key leaves the object's size"
    assert "real_size" not in dump_preset(old)
    sized = parse_preset({"simulation": {"particles": 1000, "real_size": 12000},
                          "droplets": {}}, "sized.toml")
    assert sized.real_size == 12000.0
    again = parse_preset(tomllib.loads(dump_preset(sized)), "again.toml")
    assert again.real_size == 12000.0
    assert sized.with_overrides({"real_size": 0}).real_size == 0.0
    for bad in (-1, 1e-6, "5 km", True, 1e12):
        with pytest.raises(PresetError, match="'real_size'"):
            parse_preset({"simulation": {"real_size": bad}, "droplets": {}}, "bad.toml")
        with pytest.raises(PresetError, match="'real_size'"):
            sized.with_overrides({"real_size": bad})
    obj = demo_object(24, 2.0)
    s = obj.terrain_erosion
    s.real_size = 3000.0
    s.apply_preset(old)
    assert s.real_size == 3000.0, "no real_size in the preset: the object keeps its own"
    s.apply_preset(sized)
    assert s.real_size == 12000.0
    assert s.to_preset("mine").real_size == 12000.0
    s.real_size = 0.0
    assert s.to_preset("mine").real_size is None, "automatic is not written into a preset"


def test_bad_values_are_prevented_or_refused_clearly(blender):
    obj = demo_object(24, 2.0)
    s = obj.terrain_erosion
    s.real_size = -5.0  # Blender clamps to the property's limits: automatic
    assert s.real_size == 0.0
    s.vertical_exaggeration = 0.0
    assert s.vertical_exaggeration == pytest.approx(1e-3), "clamped to the smallest > 0"
    with pytest.raises(ParameterError, match="Real Size must be 0 .automatic. or a width"):
        RealScale.of(24, 24, 1.0, -5.0)
    with pytest.raises(ParameterError, match="Vertical Exaggeration must be from"):
        RealScale.of(24, 24, 1.0, 0.0, 0.0)
    with pytest.raises(ParameterError, match="Real Size"):
        RealScale.of(24, 24, 1.0, float("nan"))
    # below a millimetre (the property allows it: 0 must be typeable): said, not run
    s.real_size = 0.0005
    ok, text = te.data.grid.grid_status(obj)
    assert not ok and "Real Size must be 0 (automatic) or a width in metres from 0.001" in text
    before = heights(obj)
    with pytest.raises(ParameterError, match="Real Size must be"):
        te.data.job.ErosionJob(obj)
    assert np.array_equal(heights(obj), before)


def test_batch_real_size_flag(blender, capsys):
    demo_object(24, 2.0, "Terrain")
    assert te.features.batch.main(["--object", "Terrain", "--particles", "2000",
                          "--real-size", "12000"]) == 0
    out = capsys.readouterr().out
    assert "this 2.0 m grid is treated as 12 km (Real Size)" in out
    assert bpy.data.objects["Terrain"].terrain_erosion.real_size == 12000.0
    assert te.features.batch.main(["--object", "Terrain", "--particles", "2000",
                          "--set", "real_size=0"]) == 0
    assert "treated as 5.0 km (automatic" in capsys.readouterr().out
    assert te.features.batch.main(["--object", "Terrain", "--real-size", "-3"]) == 2
    assert "Real Size must be 0 (automatic) or a width in metres" in capsys.readouterr().err
    assert te.features.batch.main(["--object", "Terrain", "--set", "real_size=-3"]) == 2
    assert "'real_size'" in capsys.readouterr().err


def test_export_records_the_real_size_and_import_gets_it_back(blender, tmp_path):
    obj = demo_object(24, 2.0, "Exported")
    obj.terrain_erosion.real_size, obj.terrain_erosion.vertical_exaggeration = 8000.0, 1.5
    te.features.export.export_maps(obj, tmp_path, formats=("EXR",))
    side = json.loads((tmp_path / "Exported.json").read_text())
    assert side["real_size"] == pytest.approx(8000.0)
    assert side["real_cell_size"] == pytest.approx(8000.0 / 23)
    assert side["vertical_exaggeration"] == 1.5 and not side["real_size_automatic"]
    new = te.features.export.import_heightmap(tmp_path / "Exported_height.exr")
    assert new.terrain_erosion.real_size == 8000.0
    assert new.terrain_erosion.vertical_exaggeration == 1.5
    # a sidecar written before real sizes existed: the import stays automatic
    for key in ("real_size", "real_cell_size", "real_size_automatic",
                "vertical_exaggeration", "real_scale", "real_units"):
        del side[key]
    (tmp_path / "Exported.json").write_text(json.dumps(side))
    old = te.features.export.import_heightmap(tmp_path / "Exported_height.exr")
    assert old.terrain_erosion.real_size == 0.0
    assert old.terrain_erosion.vertical_exaggeration == 1.0


def test_trees_keep_their_real_height_at_the_objects_scale(blender):
    obj = demo_object(24, 2.0)
    s = obj.terrain_erosion
    g = te.data.grid.detect_grid(obj.data)
    scale = s.real_scale(g.rows, g.cols, g.cell_size)
    assert te.data.instances.tree_height(s, scale) == pytest.approx(20.0 * 2.0 / 5000.0)
    s.tree_scale = 0.05  # the artist's own size in local units still wins
    assert te.data.instances.tree_height(s, scale) == pytest.approx(0.05)
