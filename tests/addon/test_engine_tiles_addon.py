"""Game-engine tiles from Blender (File > Export > Terrain Tiles): the grid's heights and
te_* layers come back from the tiles within 16-bit precision, neighbours share their
edges bit for bit, the sidecar names every tile; bad input gets a clear message."""

from __future__ import annotations

import json
import os

import bpy
import numpy as np
import pytest
from blender_helpers import add_grid, numpy_grid, positions, staged_addon

te = staged_addon()
et = te.simcore.formats.engine_tiles


def raster(obj):
    g = te.data.grid.detect_grid(obj.data)
    return positions(obj.data)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64), g


def with_layers(obj):
    """Streams, sediment depth, pools and trees on the grid (float layers, local units)."""
    _, g = raster(obj)
    yy, xx = np.mgrid[0:g.rows, 0:g.cols]
    maps = {"te_stream": np.clip(np.sin(xx / 5.0) * np.cos(yy / 7.0), 0, 1),
            "te_sediment_depth": 0.01 * (xx % 9),
            "te_pool_depth": np.where(yy < 5, 0.02, 0.0),
            "te_vegetation": (xx + yy) / (g.rows + g.cols)}
    for name, values in maps.items():
        te.data.grid.write_float_layer(obj.data, name, g, values)
    te.data.grid.write_float_layer(obj.data, "te_wind_contact", g, np.zeros((g.rows, g.cols)))
    return {k[3:]: te.data.grid.read_float_layer(obj.data, k, g) for k in maps}


def assert_shared_edges(side, folder):
    by_pos = {(t["column"], t["row_from_south"]): t for t in side["tiles"]}
    pairs = 0
    for (i, j), tile in by_pos.items():
        here = et.read_png(folder / tile["files"]["height_png"])[::-1]
        for (di, dj) in ((1, 0), (0, 1)):
            other = by_pos.get((i + di, j + dj))
            if other is None:
                continue
            there = et.read_png(folder / other["files"]["height_png"])[::-1]
            if di:
                assert np.array_equal(here[:, -1], there[:, 0])
            else:
                assert np.array_equal(here[-1, :], there[0, :])
            pairs += 1
    tx, ty = side["tiles_x"], side["tiles_y"]
    assert pairs == (tx - 1) * ty + tx * (ty - 1) > 0


@pytest.mark.parametrize("engine,size,n", [("UNITY", 33, 65), ("UNREAL", 127, 253)])
def test_tiles_from_blender_reimport_into_the_grid(blender, tmp_path, engine, size, n):
    obj = numpy_grid(bpy, n, cell=1.0, relief=40.0, name="Island")
    obj.terrain_erosion.real_size = float(n - 1)  # 1 unit = 1 m
    layers = with_layers(obj)
    z, g = raster(obj)
    kw = {"unity_size": str(size)} if engine == "UNITY" else {"unreal_size": str(size)}
    assert bpy.ops.terrain.export_engine_tiles(
        directory=str(tmp_path), engine=engine, height_format='BOTH', layer_bits='16',
        **kw) == {'FINISHED'}
    side = json.loads((tmp_path / "Island_tiles.json").read_text())
    assert side["engine"] == engine.lower() and side["tile_size"] == size
    assert (side["tiles_x"], side["tiles_y"]) == (2, 2) and not side["resampled"]
    assert side["object"] == "Island" and side["cell_size_x"] == pytest.approx(1.0)
    assert len(side["tiles"]) == 4
    for tile in side["tiles"]:
        for f in tile["files"].values():
            assert (tmp_path / f).is_file()
    step = (z.max() - z.min()) / 65535
    for fmt in ("png", "r16"):
        back = et.read_tiles(tmp_path / "Island_tiles.json", fmt)
        assert back.heights.shape == (g.rows, g.cols)
        assert np.abs(back.heights - z).max() <= 0.5 * step * (1 + 1e-6)
    assert set(back.layers) == set(layers), "zero layers (wind) are left out"
    for key, values in layers.items():
        e = side["layers"][key]
        assert np.abs(back.layers[key] - values).max() <= \
            0.5 * (e["max"] - e["min"]) / 65535 * (1 + 1e-6), key
    assert_shared_edges(side, tmp_path)
    # Blender's own PNG reader sees the same 16-bit values (row 0 = bottom = south)
    tile = next(t for t in side["tiles"] if t["column"] == 1 and t["row_from_south"] == 0)
    img = bpy.data.images.load(str(tmp_path / tile["files"]["height_png"]))
    img.colorspace_settings.is_data = True
    px = np.empty(size * size * img.channels, np.float32)
    img.pixels.foreach_get(px)
    gray = px.reshape(size, size, img.channels)[..., 0]
    q = size - 1
    want = back.codes[0:size, q:q + size]
    assert np.abs(np.rint(gray * 65535) - want).max() <= 1


def test_real_size_and_exaggeration_give_metres(blender, tmp_path):
    """A 2-unit grid treated as 640 m with heights exaggerated x2: the tiles are in
    metres of that world (heights divided by 2), or as seen with Keep Exaggeration."""
    obj = add_grid(bpy, n=65, size=2.0, relief=0.4, name="Small")
    s = obj.terrain_erosion
    s.real_size, s.vertical_exaggeration = 640.0, 2.0
    z, g = raster(obj)
    metres = 640.0 / 2.0
    _, side = te.features.engine_tiles.export_engine_tiles(obj, tmp_path, "a", "unity", 33)
    assert side["cell_size_x"] == pytest.approx(10.0, rel=1e-5)
    assert side["size_x"] == pytest.approx(640.0, rel=1e-5)
    back = et.read_tiles(tmp_path / "a.json")
    want = z * metres / 2.0
    step = (want.max() - want.min()) / 65535
    assert np.abs(back.heights - want).max() <= 0.5 * step * (1 + 1e-5) + 1e-9
    _, kept = te.features.engine_tiles.export_engine_tiles(obj, tmp_path, "b", "unity", 33,
                                                  keep_exaggeration=True)
    assert kept["height_scale"] == pytest.approx(2 * side["height_scale"])
    assert side["origin_x"] == pytest.approx(g.x0 * metres)


def test_a_grid_off_the_engine_size_is_resampled_with_a_note(blender, tmp_path):
    obj = add_grid(bpy, n=40, size=4.0, name="Odd")
    files, side = te.features.engine_tiles.export_engine_tiles(obj, tmp_path, "", "unity", 33)
    assert side["resampled"] and side["resampling"]["to"] == [65, 65]
    assert files[-1].name == "Odd_tiles.json"


def test_bad_inputs_get_a_clear_message(blender, tmp_path):
    obj = add_grid(bpy, n=17, name="Grid")
    with pytest.raises(RuntimeError, match="not an existing folder"):  # reported ERROR
        bpy.ops.terrain.export_engine_tiles(directory=str(tmp_path / "missing"))
    with pytest.raises(te.simcore.errors.UserError, match="not saved yet"):
        te.features.engine_tiles.export_engine_tiles(obj, "//")
    with pytest.raises(te.simcore.errors.UserError, match="use one of 33, 65, 129"):
        te.features.engine_tiles.export_engine_tiles(obj, tmp_path, "g", "unity", 1009)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(RuntimeError, match="not an existing folder"):
        bpy.ops.terrain.export_engine_tiles(directory=str(a_file))
    readonly = tmp_path / "ro"
    readonly.mkdir()
    readonly.chmod(0o500)
    try:
        if not os.access(readonly, os.W_OK):  # as root, permissions do not stop a write
            with pytest.raises(RuntimeError, match="ro"):
                bpy.ops.terrain.export_engine_tiles(directory=str(readonly))
    finally:
        readonly.chmod(0o700)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "ro"]
    assert list(readonly.iterdir()) == []


def test_a_folder_refusing_writes_is_reported_and_left_empty(blender, tmp_path,
                                                              monkeypatch):
    """What a read-only folder does (also when the tests run as root)."""
    add_grid(bpy, n=17, name="Grid")

    def refuse(target):
        raise PermissionError(13, "Permission denied", str(target))

    monkeypatch.setattr(te.simcore.fileio, "_new_temp", refuse)
    with pytest.raises(RuntimeError, match="cannot write .*[Pp]ermission"):
        bpy.ops.terrain.export_engine_tiles(directory=str(tmp_path), engine='UNITY',
                                            unity_size='33')
    assert list(tmp_path.iterdir()) == []


def test_non_grid_and_edit_mode_are_refused_by_name(blender, tmp_path):
    bpy.ops.mesh.primitive_uv_sphere_add()
    sphere = bpy.context.active_object
    with pytest.raises(te.simcore.errors.UserError, match="grid"):
        te.features.engine_tiles.export_engine_tiles(sphere, tmp_path, "s", "unity", 33)
    obj = add_grid(bpy, n=17, name="Editing")
    bpy.ops.object.mode_set(mode='EDIT')
    try:
        assert not bpy.ops.terrain.export_engine_tiles.poll()
        with pytest.raises(te.simcore.errors.UserError, match="Edit mode.*Tab"):
            te.features.engine_tiles.export_engine_tiles(obj, tmp_path, "e", "unity", 33)
    finally:
        bpy.ops.object.mode_set(mode='OBJECT')
    assert list(tmp_path.iterdir()) == []


def test_file_export_menu_has_the_entry(blender):
    from blender_helpers import PanelRecorder

    rec = PanelRecorder()
    te.features.engine_tiles._menu_export(type("M", (), {"layout": rec})(), bpy.context)
    assert ("operator", "terrain.export_engine_tiles", "Terrain Tiles (Unreal/Unity)") \
        in rec.log
    menus = bpy.types.TOPBAR_MT_file_export._dyn_ui_initialize()
    assert te.features.engine_tiles._menu_export in menus


def test_maps_and_tiles_of_one_object_share_a_folder(blender, tmp_path):
    """Export Maps' sidecar is <object>.json; the tiles' default name is
    <object>_tiles, so both sets sit side by side and the map import still reads the
    maps' numbers. Tiles given the maps' name are refused, naming the file, and leave
    the folder as it was."""
    obj = add_grid(bpy, n=33, size=6.4, relief=1.5, name="Terrain")
    te.features.export.export_maps(obj, tmp_path, "", ("PNG",))
    maps = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert bpy.ops.terrain.export_engine_tiles(
        directory=str(tmp_path), engine='UNITY', unity_size='33') == {'FINISHED'}
    assert (tmp_path / "Terrain_tiles.json").is_file()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name in maps} == maps
    with pytest.raises(RuntimeError, match=r"Terrain\.json: it is a map export's sidecar"):
        bpy.ops.terrain.export_engine_tiles(directory=str(tmp_path), basename="Terrain",
                                            engine='UNITY', unity_size='33')
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name in maps} == maps
    new = te.features.export.import_heightmap(tmp_path / "Terrain_height.png")
    g, g2 = te.data.grid.detect_grid(obj.data), te.data.grid.detect_grid(new.data)
    assert g2.cell_x == pytest.approx(g.cell_x) and (g2.rows, g2.cols) == (33, 33)
