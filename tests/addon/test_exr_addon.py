"""Multi-layer EXR export and import in real Blender (bpy module), on every line.

Blender 4.5, 5.0 and 5.2 use the OpenImageIO module Blender ships; the 4.2 bpy has
none, so there the PyPI package the test venv installs stands in (what a 4.2 user
without OpenImageIO gets is the message tested last)."""

from __future__ import annotations

import importlib
import json
import re
import sys

import bpy
import numpy as np
import pytest
from blender_helpers import positions, staged_addon
from test_bake_export_faults import full_disk_at, tree

te = staged_addon()
UserError = te.simcore.errors.UserError


def all_layers(obj) -> dict[str, np.ndarray]:
    return te.features.export._layers(obj, te.data.grid.detect_grid(obj.data))


def bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


@pytest.fixture
def eroded(blender):
    """A non-square terrain eroded by droplets, hydrology and trees: heights, layers
    and change maps."""
    rng = np.random.default_rng(4)
    yy, xx = np.mgrid[0:21, 0:29]
    z = 0.05 * yy + 0.3 * np.sin(xx / 4.0) + 0.02 * rng.random((21, 29))
    obj = te.features.export.make_grid_object("Hills", z, 0.15, 0.15)
    s = obj.terrain_erosion
    s.seed, s.particles, s.real_size = 3, 2000, 4.0
    s.hydrology.enabled = True
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    g = te.data.grid.detect_grid(obj.data)  # signed zeros and tiny values must survive too
    signs = np.where(np.arange(g.rows * g.cols).reshape(g.rows, g.cols) % 3 == 0, -0.0, 0.0)
    signs[0, :3] = (np.float32(1e-45), -np.float32(1e-45), np.float32(3.4e38))
    # in a layer of the add-on's (export writes no other): the change of a process
    # this run leaves out (a run reads it as it is; a state layer is range-checked)
    te.data.grid.write_float_layer(obj.data, "te_change_landscape", g, signs)
    assert np.signbit(all_layers(obj)["change_landscape"]).sum() == (signs.size + 2) // 3
    return obj


def test_which_openimageio_blender_uses(blender):
    oiio = te.features.export.openimageio()
    ships = any((d / "OpenImageIO").is_dir() for d in te.features.export.blender_site_packages())
    assert ships == (bpy.app.version >= (4, 5, 0))
    assert ("/bpy/" in oiio.__file__.replace("\\", "/")) == ships, oiio.__file__
    print(f"Blender {bpy.app.version_string}: OpenImageIO {oiio.VERSION_STRING} from "
          f"{oiio.__file__}")


def test_multilayer_exr_round_trips_bit_exact(eroded, tmp_path):
    obj = eroded
    maps = all_layers(obj)
    assert {"height", "bedrock", "sediment_depth", "stream", "pool_depth"} <= set(maps)
    assert any(n.startswith("change_") for n in maps)
    files = te.features.export.export_maps(obj, tmp_path, "hills", ("EXR", "MULTI_EXR"))
    names = [f.name for f in files]
    assert "hills_layers.exr" in names and names[-1] == "hills.json"
    side = json.loads((tmp_path / "hills.json").read_text())
    assert side["multilayer_exr"]["file"] == "hills_layers.exr"
    assert sorted(side["multilayer_exr"]["channels"]) == sorted(maps)
    assert all(side["maps"][n]["files"]["MULTI_EXR"] == "hills_layers.exr" for n in maps)

    layers = te.simcore.formats.exr.read(tmp_path / "hills_layers.exr",
                                         te.features.export.openimageio())
    assert sorted(layers.channels) == sorted(maps)
    for name, values in maps.items():  # the same pixels as the separate EXR files
        single = te.features.export._load_image(tmp_path / f"hills_{name}.exr")
        assert np.array_equal(layers.channels[name], single), name
        assert np.array_equal(bits(layers.channels[name]), bits(values)), name
    head = layers.attributes
    assert json.loads(head["cell_size_x"]) == side["cell_size_x"]
    assert head["addon_version"] == side["addon_version"]
    assert head["units"] == side["units"]

    new = te.features.export.import_heightmap(tmp_path / "hills_layers.exr")
    assert new.name.startswith("hills_layers")
    back = all_layers(new)
    assert sorted(back) == sorted(maps)
    for name, values in maps.items():
        assert np.array_equal(bits(back[name]), bits(values)), name
    assert np.array_equal(bits(positions(new.data)[:, 2]), bits(positions(obj.data)[:, 2]))
    # x, y are rebuilt from origin + index x cell size, as for the separate files
    assert np.allclose(positions(new.data)[:, :2], positions(obj.data)[:, :2], atol=1e-6)
    for name in maps:
        if name != "height":
            attr = new.data.attributes["te_" + name]
            assert (attr.data_type, attr.domain) == ('FLOAT', 'POINT'), name
    assert new.terrain_erosion.real_size == pytest.approx(4.0)


def test_the_header_stands_in_for_a_missing_sidecar(eroded, tmp_path):
    obj = eroded
    obj.scale = (1, 1, 1)
    te.features.export.export_maps(obj, tmp_path, "solo", ("MULTI_EXR",))
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".exr") == \
        ["solo_layers.exr"], "the multi-layer file alone, no separate EXRs"
    (tmp_path / "solo.json").unlink()
    new = te.features.export.import_heightmap(tmp_path / "solo_layers.exr")
    assert np.array_equal(bits(positions(new.data)[:, 2]), bits(positions(obj.data)[:, 2]))
    assert np.allclose(positions(new.data)[:, :2], positions(obj.data)[:, :2], atol=1e-6)
    assert new.terrain_erosion.real_size == pytest.approx(4.0)


def test_the_operator_writes_it_on_request_only(eroded, tmp_path):
    assert bpy.ops.terrain.export_maps(directory=str(tmp_path), basename="op") == {'FINISHED'}
    assert not (tmp_path / "op_layers.exr").exists(), "off by default"
    assert bpy.ops.terrain.export_maps(directory=str(tmp_path), basename="op", png=False,
                                       exr=False, multilayer=True) == {'FINISHED'}
    assert (tmp_path / "op_layers.exr").is_file()
    assert not (tmp_path / "op_height.exr").exists(), "the re-export replaced the set"
    assert bpy.ops.terrain.import_heightmap(filepath=str(tmp_path / "op_layers.exr")) \
        == {'FINISHED'}
    assert np.array_equal(bits(all_layers(bpy.context.active_object)["bedrock"]),
                          bits(all_layers(eroded)["bedrock"]))


def test_a_full_disk_at_every_file_keeps_the_previous_set(eroded, tmp_path, monkeypatch):
    obj = eroded
    out = tmp_path / "maps"
    out.mkdir()
    formats = ("EXR", "MULTI_EXR")
    te.features.export.export_maps(obj, out, "wet", formats)
    s = obj.terrain_erosion
    s.particles = 1000
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    files = tree(out)
    for k in range(len(files) + 2):
        with full_disk_at(monkeypatch, k) as opened:
            try:
                te.features.export.export_maps(obj, out, "wet", formats)
            except UserError as exc:
                assert "No space left" in str(exc), exc
            else:
                assert k == len(opened) == len(files)
                break
        assert tree(out) == files, f"file {k}: the previous set exactly"
    else:
        pytest.fail("the export never succeeded")
    assert tree(out)["wet_layers.exr"] != files["wet_layers.exr"]


def test_damaged_and_foreign_files_are_messages(eroded, tmp_path):
    te.features.export.export_maps(eroded, tmp_path, "d", ("MULTI_EXR",))
    path = tmp_path / "d_layers.exr"
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data[:len(data) // 2]))
    with pytest.raises(UserError, match="d_layers.exr"):
        te.features.export.import_heightmap(path)
    data[len(data) // 2:len(data) // 2 + 64] = bytes(64)
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match="damaged"):
        te.features.export.import_heightmap(path)
    (tmp_path / "junk.exr").write_bytes(b"not an exr")
    with pytest.raises(UserError, match="not an OpenEXR file"):
        te.features.export.import_heightmap(tmp_path / "junk.exr")
    with pytest.raises(RuntimeError, match="not an OpenEXR file"):  # reported ERROR
        bpy.ops.terrain.import_heightmap(filepath=str(tmp_path / "junk.exr"))


def test_without_openimageio_a_message_and_nothing_written(eroded, tmp_path, monkeypatch):
    """Blender 4.2 ships no OpenImageIO: the import of it fails (made to fail here)."""
    te.features.export.export_maps(eroded, tmp_path, "had", ("MULTI_EXR",))
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setitem(sys.modules, "OpenImageIO", None)  # `import OpenImageIO` fails
    message = "Multi-layer EXR needs OpenImageIO, which this Blender does not include"
    with pytest.raises(UserError, match=message):
        te.features.export.export_maps(eroded, out, "x", ("EXR", "MULTI_EXR"))
    assert tree(out) == {}
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.terrain.export_maps(directory=str(out), multilayer=True)
    assert tree(out) == {}
    with pytest.raises(RuntimeError, match=message + "; use the separate EXR files"):
        bpy.ops.terrain.import_heightmap(filepath=str(tmp_path / "had_layers.exr"))
    assert bpy.ops.terrain.export_maps(directory=str(out), basename="x") == {'FINISHED'}, \
        "the separate files still work"


def test_the_batch_command_writes_it_on_request(eroded, tmp_path, capsys, monkeypatch):
    out = tmp_path / "maps"
    out.mkdir()
    assert te.features.batch.main(["--object", "Hills", "--particles", "300", "--export-maps",
                          str(out), "--multilayer-exr"]) == 0
    layers = te.simcore.formats.exr.read(out / "Hills_layers.exr", te.features.export.openimageio())
    assert np.array_equal(bits(layers.channels["height"]), bits(all_layers(eroded)["height"]))
    assert (out / "Hills_height.png").is_file(), "beside the separate files"
    assert te.features.batch.main(["--object", "Hills", "--multilayer-exr"]) == 2
    monkeypatch.setitem(sys.modules, "OpenImageIO", None)
    before = positions(eroded.data).copy()
    assert te.features.batch.main(["--object", "Hills", "--particles", "300", "--export-maps",
                          str(out), "--multilayer-exr"]) == 2
    assert np.array_equal(positions(eroded.data), before), "refused before the run"
    err = capsys.readouterr().err
    assert "needs --export-maps" in err and "does not include" in err


def test_a_cli_written_exr_imports_with_the_state(blender, tmp_path):
    """One convention: the CLI's EXR (erode --output X.exr, export) is what the add-on
    writes and imports: heights and every layer in world units, the same names."""
    def sc(module):  # the staged add-on's own simcore (what ships in the extension)
        return importlib.import_module(f"{te.simcore.__name__}.{module}")
    cli, states = sc("cli.main"), sc("formats.states")
    te.features.export.openimageio()  # Blender's own module, as the add-on's import uses
    hills = sc("generators.noise").fractal_terrain(24, seed=2)
    states.save_heights(tmp_path / "h.npy", hills[:, :19] * 10)
    run = ["erode", "--input", str(tmp_path / "h.npy"), "--particles", "800", "--quiet",
           "--cell-size", "30", "--output"]
    assert cli.main([*run, str(tmp_path / "s.npz")]) == 0
    assert cli.main(["export", str(tmp_path / "s.npz"), "--output",
                        str(tmp_path / "s.exr"), "--quiet"]) == 0
    assert cli.main([*run, str(tmp_path / "e.exr")]) == 0
    terrain, meta = states.load_state(tmp_path / "s.npz")
    rows, cols = terrain.shape
    cell = terrain.cell_size
    for name in ("s.exr", "e.exr"):
        new = te.features.export.import_heightmap(tmp_path / name)
        g = te.data.grid.detect_grid(new.data)
        assert (g.rows, g.cols) == (rows, cols)
        assert g.cell_x == pytest.approx(cell) and g.cell_y == pytest.approx(cell)
        back = all_layers(new)
        want = sc("analysis.layers").exported_maps(terrain, cell, meta["processes"])
        assert sorted(back) == sorted(want), name
        assert {"height", "bedrock", "sediment_depth"} <= set(back)
        assert any(n.startswith("change_") for n in back)
        for layer, values in want.items():  # to float32, bit for bit
            assert np.array_equal(bits(back[layer]), bits(values)), (name, layer)
        assert np.array_equal(bits(back["height"]), bits(terrain.height() * cell))
        # a real size of the run's own extent: 1:1, eroding it goes on in that world
        scale = new.terrain_erosion.real_scale(g.rows, g.cols, g.cell_size)
        assert scale.s == 1.0 and scale.world_cell == pytest.approx(cell)
        for layer in back:
            if layer != "height":
                attr = new.data.attributes["te_" + layer]
                assert attr.name in te.features.export.EXPORTED_LAYERS, layer


def test_the_simcore_layer_names_are_the_addons(blender):
    layers = te.simcore.analysis.layers
    assert {f.exact for f in te.simcore.processes.FIELDS.values() if f.exact} == \
        set(te.data.grid.FLOAT_LAYERS.values())
    assert {layers.CHANGE_LAYER_PREFIX + p for p in te.simcore.processes.PROCESSES} == \
        set(te.data.grid.CHANGE_LAYERS.values())


def test_a_tiled_single_channel_exr_heightmap_imports(blender, tmp_path):
    """Another tool's tiled float EXR is a plain heightmap: Blender's image reader
    takes it (the multi-layer reader is for ours: single-part scanline)."""
    oiio = te.features.export.openimageio()
    rows, cols = 37, 53
    yy, xx = np.mgrid[0:rows, 0:cols]
    z = (0.5 * np.sin(xx / 5.0) + 0.02 * yy + 0.25).astype(np.float32)  # row 0 = south
    for channel in ("Y", "height"):
        path = tmp_path / f"tiled_{channel}.exr"
        spec = oiio.ImageSpec(cols, rows, 1, "float")
        spec.channelnames = (channel,)
        spec.tile_width = spec.tile_height = 16
        spec.attribute("compression", "zip")
        out = oiio.ImageOutput.create(str(path))
        assert out.open(str(path), spec) and out.write_image(np.flipud(z)[..., None].copy())
        assert out.close()
        assert int.from_bytes(path.read_bytes()[4:8], "little") >> 8 & 0x2, "tiled"
        assert not te.simcore.formats.exr.has_height(path)
        if channel == "height":
            continue  # not ours either (tiled): Blender's reader, whatever it makes of it
        new = te.features.export.import_heightmap(path, cell_size=0.5)
        g = te.data.grid.detect_grid(new.data)
        assert (g.rows, g.cols) == (rows, cols)
        got = positions(new.data)[:, 2][g.order].reshape(rows, cols)
        assert np.array_equal(got, z)


@pytest.mark.compat
@pytest.mark.parametrize("channel,values,words", [
    ("sediment", "nan", "channel 'sediment' has 1 NaN/inf value(s)"),
    ("wind", "inf", "channel 'wind' has 1 NaN/inf value(s)"),
    ("original_z", "ok", "it names the stored original heights"),
    ("x" * 70, "ok", "too long for a Blender attribute"),
])
def test_a_multilayer_exr_with_a_bad_channel_is_refused_and_makes_nothing(
        blender, tmp_path, channel, values, words):
    """A channel with NaN/inf, one named like the stored original heights (Reset to
    Original would write it back) or one too long for an attribute name: one message,
    no object made."""
    oiio = te.features.export.openimageio()
    z = np.add.outer(np.linspace(0, 1, 9), np.linspace(0, 2, 11))
    layer = np.full(z.shape, 0.25)
    if values == "nan":
        layer[3, 4] = np.nan
    elif values == "inf":
        layer[0, 0] = np.inf
    path = te.simcore.formats.exr.write(tmp_path / "bad.exr",
                                        {te.simcore.formats.exr.HEIGHT: z, channel: layer},
                                        oiio=oiio)
    before = set(bpy.data.objects.keys()), set(bpy.data.meshes.keys())
    with pytest.raises(UserError, match=re.escape(words)):
        te.features.export.import_heightmap(path, cell_size=1.0)
    assert (set(bpy.data.objects.keys()), set(bpy.data.meshes.keys())) == before


@pytest.mark.compat
def test_a_multipart_exr_is_refused_with_a_message_not_a_0x0_image(blender, tmp_path):
    oiio = te.features.export.openimageio()
    z = np.add.outer(np.linspace(0, 1, 9), np.linspace(0, 2, 11)).astype(np.float32)
    path = tmp_path / "parts.exr"
    specs = []
    for name in ("Y", "mask"):
        spec = oiio.ImageSpec(11, 9, 1, "float")
        spec.channelnames = (name,)
        spec.attribute("name", name)
        specs.append(spec)
    out = oiio.ImageOutput.create(str(path))
    assert out.open(str(path), specs)
    assert out.write_image(z[..., None].copy())
    assert out.open(str(path), specs[1], "AppendSubimage")
    assert out.write_image(z[..., None].copy())
    assert out.close()
    assert te.simcore.formats.exr.is_multipart(path)
    before = set(bpy.data.objects.keys())
    with pytest.raises(UserError, match="multi-part .* single-part EXR"):
        te.features.export.import_heightmap(path, cell_size=1.0)
    assert set(bpy.data.objects.keys()) == before
