"""Game-engine tiles (simcore/formats/engine_tiles.py and the CLI's engine-tiles): the
tiles re-import into the source grid within 16-bit precision, neighbours share their
edges bit for bit, the sidecar names every tile; bad sizes and tiny maps."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from simcore.cli.main import main
from simcore.errors import UserError
from simcore.formats import engine_tiles as et
from simcore.formats import images
from simcore.formats.states import save_heights, save_state
from simcore.generators.noise import fractal_terrain
from simcore.terrain import Terrain


def world(rows: int, cols: int, seed: int = 3) -> np.ndarray:
    """Hills of about 300 world units on a rows x cols grid."""
    n = max(rows, cols)
    return fractal_terrain(n, seed=seed)[:rows, :cols] * 20.0 + 50.0


def state(tmp_path, rows, cols, cell=10.0):
    """An .npz state with heights and a few layers (sediment, streams, pools, trees)."""
    h = world(rows, cols) / cell
    t = Terrain.from_heights(h, cell)
    yy, xx = np.mgrid[0:rows, 0:cols]
    t.sediment[:] = 0.2 * (1 + np.sin(xx / 5.0)) * (yy % 7 == 0)
    t.bedrock -= t.sediment
    t.stream[:] = np.clip(np.cos(yy / 9.0) * np.sin(xx / 4.0), 0, 1)
    t.pool[:] = np.where((xx - cols / 2) ** 2 + (yy - rows / 3) ** 2 < 30, 0.5, 0.0)
    t.vegetation[:] = (xx + yy) / (rows + cols)
    return save_state(tmp_path / "world.npz", t, {"seed": 7}), t


def assert_shared_edges(side: dict, folder, fmt: str = "png") -> None:
    """Every pair of neighbours repeats its common row/column exactly."""
    size = side["tile_size"]
    by_pos = {(t["column"], t["row_from_south"]): t for t in side["tiles"]}

    def codes(tile):
        f = folder / tile["files"][f"height_{fmt}"]
        c = et.read_png(f)[::-1] if fmt == "png" else et.read_r16(f, size)
        return c if fmt == "png" or side["engine"] == "unity" else c[::-1]

    pairs = 0
    for (i, j), tile in by_pos.items():
        here = codes(tile)
        if (i + 1, j) in by_pos:
            assert np.array_equal(here[:, -1], codes(by_pos[i + 1, j])[:, 0])
            pairs += 1
        if (i, j + 1) in by_pos:
            assert np.array_equal(here[-1, :], codes(by_pos[i, j + 1])[0, :])
            pairs += 1
    tx, ty = side["tiles_x"], side["tiles_y"]
    assert pairs == (tx - 1) * ty + tx * (ty - 1)


@pytest.mark.parametrize("engine,size,shape", [("unreal", 127, (253, 253)),
                                               ("unity", 33, (65, 97))])
def test_tiles_reimport_into_the_source_grid(tmp_path, capsys, engine, size, shape):
    """A map of exactly tiles x (size - 1) + 1 vertices is cut as it is: reading the
    tiles back gives the source heights within half a 16-bit step, PNG and RAW alike,
    every layer within half a step of its own range."""
    path, t = state(tmp_path, *shape)
    out = tmp_path / "tiles"
    assert main(["engine-tiles", str(path), "--engine", engine, "--size", str(size),
                 "--out", str(out), "--format", "both", "--layer-bits", "16"]) == 0
    assert "wrote" in capsys.readouterr().err
    side = json.loads((out / "world_tiles.json").read_text())
    rows, cols = shape
    q = size - 1
    assert (side["tiles_x"], side["tiles_y"]) == ((cols - 1) // q, (rows - 1) // q)
    assert not side["resampled"] and side["resampling"] is None
    assert (side["rows"], side["cols"]) == shape
    assert side["cell_size_x"] == side["cell_size_y"] == 10.0
    source = t.world_height()
    step = (source.max() - source.min()) / 65535
    for fmt in ("png", "r16"):
        back = et.read_tiles(out / "world_tiles.json", fmt)
        err = np.abs(back.heights - source).max()
        assert err <= 0.5 * step * (1 + 1e-9), (fmt, err, step)
        assert_shared_edges(side, out, fmt)
    assert side["height_min"] == source.min() and side["height_max"] == source.max()
    layers = {"sediment_depth": t.sediment * 10, "stream": t.stream,
              "pool_depth": t.pool * 10, "vegetation": t.vegetation}
    assert set(side["layers"]) == set(layers), "zero maps (wind, ...) are left out"
    for key, values in layers.items():
        e = side["layers"][key]
        lstep = (e["max"] - e["min"]) / 65535
        assert np.abs(back.layers[key] - values).max() <= 0.5 * lstep * (1 + 1e-9), key
    assert side["layers"]["stream"]["min"] == 0 and side["layers"]["stream"]["max"] == 1


@pytest.mark.parametrize("engine", ["unreal", "unity"])
def test_sidecar_names_every_tile_and_its_place(tmp_path, engine):
    size = 127 if engine == "unreal" else 129
    h = world(3 * 126 + 1, 2 * 126 + 1) if engine == "unreal" else world(257, 385)
    files, side = et.write_tiles(tmp_path / "t", "w", h, 2.0, engine, size,
                                 origin=(100.0, -50.0))
    q = size - 1
    assert len(side["tiles"]) == side["tile_count"] == side["tiles_x"] * side["tiles_y"]
    assert {(t["column"], t["row_from_south"]) for t in side["tiles"]} == {
        (i, j) for i in range(side["tiles_x"]) for j in range(side["tiles_y"])}
    listed = {f for t in side["tiles"] for f in t["files"].values()}
    assert listed | {"w.json"} == {f.name for f in files} == {
        p.name for p in (tmp_path / "t").iterdir()}, "nothing else, no staging folder"
    lo, hi = float(h.min()), float(h.max())
    for tile in side["tiles"]:
        i, j = tile["column"], tile["row_from_south"]
        y_name = j if engine == "unity" else side["tiles_y"] - 1 - j
        assert tile["files"]["height_png"] == f"w_height_x{i}_y{y_name}.png"
        assert tile["x"] == i and tile["y"] == y_name
        assert tile["origin_x"] == pytest.approx(100.0 + i * q * 2.0)
        assert tile["origin_y"] == pytest.approx(-50.0 + j * q * 2.0)
        assert tile["size_x"] == tile["size_y"] == pytest.approx(q * 2.0)
        window = h[j * q:j * q + size, i * q:i * q + size]
        assert tile["height_min"] == window.min() and tile["height_max"] == window.max()
        loc = tile["engine_location"]
        if engine == "unreal":
            assert (loc["x"], loc["y"]) == pytest.approx((i * q * 200.0, y_name * q * 200.0))
        else:
            assert (loc["x"], loc["z"], loc["y"]) == pytest.approx((i * q * 2, j * q * 2, lo))
    s = side["engine_settings"]
    if engine == "unreal":
        sx, sy, sz = s["landscape_scale"]
        assert (sx, sy) == (200.0, 200.0)
        # the engine's decode: (value - 32768) / 128 x Z cm, from the actor's Z
        for value, want in ((0, lo), (65535, hi)):
            cm = s["z_location_cm"] + (value - 32768) / 128 * sz
            assert cm / 100 == pytest.approx(want, abs=1e-9 * max(1, abs(want)))
    else:
        # Unity's Import Raw: height = value / 65536 x terrain height, from position y
        w, height, length = s["terrain_size"]
        assert (w, length) == pytest.approx((q * 2.0, q * 2.0))
        assert s["position_y"] + 65535 / 65536 * height == pytest.approx(hi, abs=1e-9)
        assert s["terrain_height_png"] == pytest.approx(hi - lo)
        assert s["heightmap_resolution"] == size and s["position_y"] == lo


def test_a_map_off_the_engine_size_is_resampled_once_then_cut(tmp_path):
    """100 x 80 vertices for Unity 33: 4 x 3 tiles, the whole map resampled (bilinear,
    corners kept, world extent kept) to 97 x 129, then cut; the sidecar says so."""
    h = world(80, 100)
    _, side = et.write_tiles(tmp_path, "r", h, 5.0, "unity", 33)
    assert (side["tiles_x"], side["tiles_y"]) == (4, 3)
    assert side["resampled"] and side["resampling"]["method"] == "bilinear"
    assert side["resampling"]["from"] == [80, 100] and side["resampling"]["to"] == [97, 129]
    assert side["size_x"] == pytest.approx(99 * 5.0) and side["size_y"] == pytest.approx(
        79 * 5.0)
    back = et.read_tiles(tmp_path / "r.json")
    want = et.resample(h, (97, 129))
    step = side["height_scale"] / 65535
    assert np.abs(back.heights - want).max() <= 0.5 * step * (1 + 1e-9)
    for corner in ((0, 0), (0, -1), (-1, 0), (-1, -1)):
        assert abs(back.heights[corner] - h[corner]) <= 0.5 * step * (1 + 1e-9)
    assert_shared_edges(side, tmp_path)


def test_bilinear_resampling_is_exact_on_planes_and_keeps_the_grid():
    yy, xx = np.mgrid[0:21, 0:31]
    plane = 3.0 * xx - 2.0 * yy + 7.0
    up = et.resample(plane, (41, 61))
    Y, X = np.mgrid[0:41, 0:61]
    assert np.allclose(up, 3.0 * X * 30 / 60 - 2.0 * Y * 20 / 40 + 7.0)
    assert np.array_equal(et.resample(plane, plane.shape), plane)


@pytest.mark.parametrize("engine,bad", [("unreal", 1000), ("unreal", 1025),
                                        ("unity", 1009), ("unity", 512)])
def test_sizes_the_engine_does_not_take_are_refused_with_the_valid_ones(tmp_path, capsys,
                                                                          engine, bad):
    path = tmp_path / "h.npy"
    save_heights(path, world(40, 40))
    assert main(["engine-tiles", str(path), "--engine", engine, "--size", str(bad),
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    valid = ", ".join(str(s) for s in et.SIZES[engine])
    assert f"{bad} vertices" in err and valid in err
    assert not (tmp_path / "o").exists(), "nothing written"


def test_a_world_smaller_than_one_tile_is_resampled_up_with_a_warning(tmp_path, capsys):
    path = tmp_path / "small.npy"
    save_heights(path, world(40, 40))
    assert main(["engine-tiles", str(path), "--engine", "unreal", "--size", "505",
                 "--out", str(tmp_path / "o"), "--cell-size", "25"]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "resampled up" in err and "127" in err
    side = json.loads((tmp_path / "o" / "small_tiles.json").read_text())
    assert side["tile_count"] == 1 and side["resampled"] and side["warnings"]
    assert side["cell_size_x"] == pytest.approx(39 * 25 / 504)
    back = et.read_tiles(tmp_path / "o" / "small_tiles.json")
    assert back.heights.shape == (505, 505)


def test_a_rewrite_replaces_the_set_as_a_whole_and_a_failure_keeps_it(tmp_path,
                                                                      monkeypatch):
    h = world(65, 65)
    et.write_tiles(tmp_path, "w", h, 1.0, "unity", 33, formats=("png", "r16"))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert len(before) == 9
    real = images.png_bytes
    calls = []

    def failing(codes, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(codes, **kw)

    monkeypatch.setattr(images, "png_bytes", failing)
    with pytest.raises(OSError):
        et.write_tiles(tmp_path, "w", h + 1, 1.0, "unity", 33)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    monkeypatch.setattr(images, "png_bytes", real)
    et.write_tiles(tmp_path, "w", h, 1.0, "unity", 33)  # PNG only: the .r16 files go
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        n for n in before if not n.endswith(".r16"))


def test_bad_inputs_are_user_errors(tmp_path, capsys):
    h = world(40, 40)
    with pytest.raises(UserError, match="folder .* does not exist"):
        et.write_tiles(tmp_path / "no" / "such", "w", h, 1.0, "unity", 33)
    with pytest.raises(UserError, match="plain file name"):
        et.write_tiles(tmp_path, "../w", h, 1.0, "unity", 33)
    with pytest.raises(UserError, match="NaN"):
        et.write_tiles(tmp_path, "w", np.full((40, 40), np.nan), 1.0, "unity", 33)
    with pytest.raises(UserError, match="unknown engine"):
        et.check_size("godot", 33)
    for bad in ((-1, 2), (65, 1)):
        with pytest.raises(UserError, match="1 to 64 tiles"):
            et.plan("unity", 33, (40, 40), bad)
    assert (et.plan("unity", 33, (40, 100), (0, 5)).tiles_x,
            et.plan("unity", 33, (40, 100), (0, 5)).tiles_y) == (4, 5), "0: automatic"
    path = tmp_path / "h.npy"
    save_heights(path, h)
    assert main(["engine-tiles", str(path), "--engine", "unity", "--size", "33",
                 "--out", str(tmp_path / "o"), "--tiles", "two"]) == 2
    assert "--tiles" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [path]


def test_png_tiles_are_plain_grayscale_pngs():
    """8- and 16-bit grayscale, big-endian samples, the rows as given (zlib, Up filter):
    decoded here without our reader."""
    codes = (np.arange(12, dtype=np.uint16).reshape(3, 4) * 5000)
    blob = images.png_bytes(codes, up=True)
    assert blob[12:16] == b"IHDR" and blob[24:26] == bytes([16, 0])
    raw = np.frombuffer(zlib.decompress(blob[41:blob.index(b"IEND") - 8]), np.uint8)
    rows = raw.reshape(3, 9)
    assert set(rows[:, 0]) == {2}
    data = np.cumsum(rows[:, 1:].astype(np.int64), axis=0) % 256  # undo "Up"
    got = (data[:, 0::2] * 256 + data[:, 1::2]).astype(np.uint16)
    assert np.array_equal(got, codes)
    small = np.array([[0, 255], [7, 9]], np.uint8)
    assert images.png_bytes(small, up=True)[24] == 8


@pytest.mark.parametrize("engine,size", [("unreal", 127), ("unity", 129)])
def test_raw_rows_run_as_each_engine_reads_them(tmp_path, engine, size):
    """A ramp rising to the north: the PNG's top row is the highest (north); a Unity
    .r16 starts at the south (Import Raw puts row 0 at z = 0), an Unreal .r16 at the
    north like its PNG; every file is 16-bit little-endian, size x size, no header."""
    rows = 2 * (size - 1) + 1
    h = np.tile(np.arange(rows, dtype=np.float64)[:, None], (1, size))
    _, side = et.write_tiles(tmp_path, "ramp", h, 1.0, engine, size, formats=("png", "r16"))
    for tile in side["tiles"]:
        png = et.read_png(tmp_path / tile["files"]["height_png"])
        raw = tmp_path / tile["files"]["height_r16"]
        assert raw.stat().st_size == 2 * size * size
        r16 = np.frombuffer(raw.read_bytes(), "<u2").reshape(size, size)
        assert png[0, 0] > png[-1, 0], "PNG: north at the top"
        if engine == "unity":
            assert np.array_equal(r16, png[::-1]) and r16[0, 0] < r16[-1, 0]
        else:
            assert np.array_equal(r16, png)
    north = max(side["tiles"], key=lambda t: t["row_from_south"])
    assert north["y"] == (0 if engine == "unreal" else 1)


def test_tiles_never_replace_a_map_exports_sidecar(tmp_path):
    """The reviewer's case: Export Maps wrote Terrain.json (cells 1, heights 0..5),
    then tiles named Terrain into the same folder moved it aside and deleted it, and
    the next import of Terrain_height.png read the tiles' numbers. Now the tiles are
    refused, naming the file, and the folder is left as it was; a set of another name
    sits beside the maps."""
    from simcore.formats import sidecar as sc

    rows = cols = 127
    h = np.linspace(0, 5, rows * cols).reshape(rows, cols)
    facts = sc.Facts(rows, cols, 1.0, 1.0, -63.0, -63.0, 0.0, 5.0, 0.0, 1.0)
    side = sc.build(facts, addon_version="x", simcore_version="y", object_name="Terrain",
                    object_scale=[1, 1, 1], real_cell_size=39.7, real_size_automatic=True,
                    real_scale=39.7, maps={"height": {"min": 0.0, "max": 5.0, "files": {
                        "PNG": "Terrain_height.png"}}})
    sc.write(tmp_path / "Terrain.json", side)
    (tmp_path / "Terrain_height.png").write_bytes(b"png")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(UserError, match=r"Terrain\.json: it is a map export's sidecar.*"
                       "another name"):
        et.write_tiles(tmp_path, "Terrain", h * 39.7, 39.7, "unreal", 127)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    got = sc.read_facts(sc.read(tmp_path / "Terrain_height.png"),
                        tmp_path / "Terrain_height.png", (rows, cols), True, False,
                        (0.01, 100.0))
    assert (got.cell_size_x, got.height_max) == (1.0, 5.0)
    files, _ = et.write_tiles(tmp_path, "Terrain_tiles", h * 39.7, 39.7, "unreal", 127)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()
            if p.name in before} == before
    assert files[-1].name == "Terrain_tiles.json"
    # a file of the user's is not replaced either; an earlier tile set is, as ever
    (tmp_path / "notes.json").write_text("{}")
    with pytest.raises(UserError, match="notes.json: it is not the sidecar"):
        et.write_tiles(tmp_path, "notes", h, 1.0, "unreal", 127)
    assert (tmp_path / "notes.json").read_text() == "{}"
    et.write_tiles(tmp_path, "Terrain_tiles", h, 1.0, "unreal", 127, formats=("r16",))
    assert not (tmp_path / "Terrain_tiles_height_x0_y0.png").exists()


def test_a_set_written_before_is_still_replaced_as_a_whole(tmp_path):
    """A tile sidecar as earlier versions wrote it (kind engine_tiles, its tiles'
    files): a rewrite of the same name replaces exactly its files."""
    h = world(65, 65)
    et.write_tiles(tmp_path, "old", h, 1.0, "unity", 33, formats=("png", "r16"))
    (tmp_path / "old_height_x9_y9.png").write_bytes(b"not listed: a user's")
    et.write_tiles(tmp_path, "old", h, 1.0, "unity", 33)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"old_height_x{i}_y{j}.png" for i in (0, 1) for j in (0, 1)]
        + ["old.json", "old_height_x9_y9.png"])


def test_the_cli_names_the_set_apart_from_the_maps(tmp_path):
    path = tmp_path / "h.npy"
    save_heights(path, world(40, 40))
    assert main(["engine-tiles", str(path), "--engine", "unity", "--size", "33",
                 "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert (tmp_path / "o" / "h_tiles.json").is_file()
    assert not (tmp_path / "o" / "h.json").exists()
