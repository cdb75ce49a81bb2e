"""Map export and heightmap import in real Blender (bpy module)."""

from __future__ import annotations

import json

import bpy
import numpy as np
import pytest
from blender_helpers import (
    add_grid,
    positions,
    staged_addon,
)

te = staged_addon()


def raster(obj):
    g = te.data.grid.detect_grid(obj.data)
    return positions(obj.data)[:, 2][g.order].reshape(g.rows, g.cols), g


@pytest.fixture
def eroded(blender):
    obj = add_grid(bpy, n=33, size=6.4, relief=1.5, name="Hills")
    s = obj.terrain_erosion
    s.seed, s.particles = 3, 3000
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    return obj


def test_exr_round_trip_is_exact_and_png_within_16_bit(eroded, tmp_path):
    obj = eroded
    files = te.features.export.export_maps(obj, tmp_path, "hills")
    names = {f.name for f in files}
    for layer in ("height", "bedrock", "sediment_depth", "eroded", "deposited"):
        assert {f"hills_{layer}.png", f"hills_{layer}.exr"} <= names, layer
    z, g = raster(obj)
    for suffix in (".exr", ".png"):
        new = te.features.export.import_heightmap(tmp_path / f"hills_height{suffix}")
        z2, g2 = raster(new)
        assert (g2.rows, g2.cols) == (g.rows, g.cols)
        assert np.isclose(g2.cell_x, g.cell_x) and np.isclose(g2.cell_y, g.cell_y)
        if suffix == ".exr":
            assert np.array_equal(z2, z)
        else:
            step = (z.max() - z.min()) / 65535
            assert np.abs(z2 - z).max() <= 0.5 * step + 1e-6 * max(1, abs(z).max())
            assert np.abs(z2 - z).max() > 0, "PNG is quantised"
        assert te.data.grid.detect_grid(new.data)  # a grid the add-on can erode


def test_sidecar_parses_and_matches(eroded, tmp_path):
    obj = eroded
    te.features.export.export_maps(obj, tmp_path, "hills", ("EXR",))
    side = json.loads((tmp_path / "hills.json").read_text())
    z, g = raster(obj)
    assert side["rows"] == g.rows and side["cols"] == g.cols
    assert side["cell_size_x"] == pytest.approx(g.cell_x)
    assert side["height_min"] == pytest.approx(float(z.min()))
    assert side["height_max"] == pytest.approx(float(z.max()))
    assert side["height_scale"] == pytest.approx(float(z.max() - z.min()))
    assert side["seed"] == 3 and side["preset"] == obj.terrain_erosion.preset
    assert side["parameters"]["droplets"] == \
        obj.terrain_erosion.droplets.to_params().to_dict()
    assert side["enabled"]["droplets"] is True
    assert side["addon_version"] and side["simcore_version"]
    sidecar = te.simcore.formats.sidecar  # the reader an import uses: the same facts
    facts = sidecar.read_facts(sidecar.read(tmp_path / "hills_height.exr"),
                               tmp_path / "hills_height.exr", (g.rows, g.cols), True,
                               False, te.data.scale.EXAGGERATION_RANGE)
    assert (facts.cell_size_x, facts.height_min, facts.height_max) == (
        side["cell_size_x"], side["height_min"], side["height_max"])
    for name, entry in side["maps"].items():
        for fname in entry["files"].values():
            assert (tmp_path / fname).is_file(), name
    # every exported layer decodes to the mesh's values
    sed = te.data.grid.read_float_layer(obj.data, "te_sediment_depth", g)
    img = te.features.export._load_image(tmp_path / side["maps"]["sediment_depth"]["files"]["EXR"])
    assert np.array_equal(img.astype(np.float32), sed.astype(np.float32))


def test_png_import_without_sidecar_uses_the_given_range(blender, tmp_path):
    z = np.linspace(0, 1, 20 * 30).reshape(20, 30)
    te.features.export._save_image(tmp_path / "ramp.png", z, "PNG")
    obj = te.features.export.import_heightmap(tmp_path / "ramp.png", cell_size=2.0,
                                     height_min=-5.0, height_max=15.0)
    z2, g = raster(obj)
    assert (g.rows, g.cols) == (20, 30) and np.isclose(g.cell_x, 2.0)
    assert np.abs(z2 - (-5 + 20 * z)).max() <= 20 / 65535


def test_bad_inputs_are_user_errors(blender, tmp_path):
    with pytest.raises(te.simcore.errors.UserError, match="no such file"):
        te.features.export.import_heightmap(tmp_path / "nothing.exr")
    (tmp_path / "junk.png").write_bytes(b"not a png")
    with pytest.raises(te.simcore.errors.UserError):
        te.features.export.import_heightmap(tmp_path / "junk.png")
    obj = add_grid(bpy, n=9)
    with pytest.raises(te.simcore.errors.UserError, match="not an existing folder"):
        te.features.export.export_maps(obj, tmp_path / "missing")
    with pytest.raises(RuntimeError, match="not an existing folder"):  # reported ERROR
        bpy.ops.terrain.export_maps(directory=str(tmp_path / "missing"))
    with pytest.raises(te.simcore.errors.UserError, match="not saved yet"):
        te.features.export.export_maps(obj, "//")  # an unsaved .blend has no folder
    assert bpy.ops.terrain.export_maps(directory=str(tmp_path)) == {'FINISHED'}
    assert (tmp_path / f"{obj.name}.json").is_file()


def test_rivers_and_lakes_exported_with_the_maps(blender, tmp_path):
    obj = add_grid(bpy, n=24, size=4.0, name="Wet")
    g = te.data.grid.detect_grid(obj.data)
    stream = np.zeros((g.rows, g.cols))
    stream[:, 12] = 0.9
    pool = np.zeros((g.rows, g.cols))
    pool[3:6, 3:6] = 0.2
    z = np.tile(np.linspace(0, 2, g.rows)[:, None], (1, g.cols)) + 0.1 * np.abs(
        np.arange(g.cols) - 12)
    te.data.grid.write_heights(obj.data, g, positions(obj.data), z)
    te.data.grid.write_float_layer(obj.data, "te_stream", g, stream)
    te.data.grid.write_float_layer(obj.data, "te_pool_depth", g, pool)
    te.features.export.export_maps(obj, tmp_path, "wet", ("EXR",))
    rivers = json.loads((tmp_path / "wet_rivers.json").read_text())["rivers"]
    assert len(rivers) == 1 and len(rivers[0]["points"]) == g.rows
    formats = te.simcore.formats
    assert formats.rivers.read(tmp_path / "wet_rivers.json") == (0.5, rivers), \
        "the format's reader takes what the export writes"
    side = json.loads((tmp_path / "wet.json").read_text())
    assert side["maps"]["lakes"]["count"] == 1
    lakes = te.features.export._load_image(tmp_path / "wet_lakes.png")
    assert np.array_equal(np.rint(lakes * 65535) > 0, pool > 0)


def test_batch_command_exports_maps(blender, tmp_path, capsys):
    obj = add_grid(bpy, n=16, name="Batch")
    out = tmp_path / "maps"
    out.mkdir()
    assert te.features.batch.main(["--object", "Batch", "--particles", "500",
                          "--export-maps", str(out)]) == 0
    assert "exported" in capsys.readouterr().out
    side = json.loads((out / "Batch.json").read_text())
    assert side["particles"] == obj.terrain_erosion.particles
    assert side["particles_per_area"] == 0.0, "--particles: the explicit total was used"
    z, _ = raster(obj)
    img = te.features.export._load_image(out / "Batch_height.exr")
    assert np.array_equal(img.astype(np.float32), z)
    # a bad folder is refused before any work
    before = positions(obj.data).copy()
    assert te.features.batch.main(["--object", "Batch", "--particles", "500",
                          "--export-maps", str(tmp_path / "nope")]) == 2
    assert "not an existing folder" in capsys.readouterr().err
    assert np.array_equal(before, positions(obj.data))


def test_both_export_operators_say_why_they_are_unavailable(blender):
    """Maps and engine tiles share one poll (export.ExportToFolder): the grid's problem
    is the poll message."""
    bpy.ops.object.camera_add()
    for op in (bpy.ops.terrain.export_maps, bpy.ops.terrain.export_engine_tiles):
        assert not op.poll()
        with pytest.raises(RuntimeError, match="is a camera, not a mesh"):
            op()
    add_grid(bpy, n=8)
    assert bpy.ops.terrain.export_maps.poll() and bpy.ops.terrain.export_engine_tiles.poll()


def test_an_engine_tiles_sidecar_is_never_replaced_or_read_as_the_maps(blender, tmp_path):
    """Tiles named like the maps (an earlier version's default, or a Name given) wrote
    <name>.json; the map export used to replace it, and an import read it as the maps'
    sidecar. The export is refused, naming the file; the import says what it is."""
    obj = add_grid(bpy, n=17, size=2.0, relief=0.4, name="Grid")
    te.features.engine_tiles.export_engine_tiles(obj, tmp_path, "Grid", "unity", 33)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(te.simcore.errors.UserError,
                       match=r"Grid\.json: it is the sidecar of a Terrain Erosion "
                             "engine_tiles set.*another Name"):
        te.features.export.export_maps(obj, tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    (tmp_path / "maps").mkdir()
    te.features.export.export_maps(obj, tmp_path / "maps", "", ("PNG",))
    (tmp_path / "Grid_height.png").write_bytes((tmp_path / "maps" / "Grid_height.png")
                                               .read_bytes())
    with pytest.raises(te.simcore.errors.UserError, match=r"Grid\.json is a Terrain "
                       "Erosion 'engine_tiles' sidecar, not a map export's"):
        te.features.export.import_heightmap(tmp_path / "Grid_height.png")
