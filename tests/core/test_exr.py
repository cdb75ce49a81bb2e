"""Multi-layer EXR (simcore/formats/exr.py): exact round trips, clear errors, no partial
files. Uses Blender's own OpenImageIO module when the installed bpy ships one (what
users run), else the PyPI package (the 4.2 line)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import FailingFile, small_tmpfs
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from simcore import fileio
from simcore.errors import InputFileError, OutputPathError, UserError
from simcore.formats import exr
from simcore.formats.images import save_png


def blender_site_packages() -> list[Path]:
    """Where an installed bpy keeps Blender's own Python packages (found without
    importing bpy: simcore tests never do)."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or spec.origin is None:
        return []
    root = Path(spec.origin).parent
    return [*sorted(root.glob("*/python/lib/python3*/site-packages")),
            *sorted(root.glob("*/python/lib/site-packages"))]


OIIO = exr.load_openimageio(blender_site_packages())


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


def layers(rows=7, cols=11, seed=0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"height": rng.normal(0, 50, (rows, cols)).astype(np.float32),
            "bedrock": rng.random((rows, cols), dtype=np.float32),
            "sediment_depth": rng.random((rows, cols), dtype=np.float32) * 1e-3,
            "change_droplets": rng.normal(0, 1, (rows, cols)).astype(np.float32)}


def folder_names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def test_which_openimageio_the_tests_use():
    """Blender's own module where the bpy wheel has one (4.5, 5.0, 5.2), else PyPI's."""
    blender_has_one = any((d / "OpenImageIO").is_dir() for d in blender_site_packages())
    inside_bpy = "/bpy/" in Path(OIIO.__file__).as_posix()
    assert inside_bpy == blender_has_one, OIIO.__file__
    print(f"OpenImageIO {OIIO.VERSION_STRING} from {OIIO.__file__}")


@pytest.mark.parametrize("shape", [(7, 11), (11, 7), (1, 1), (1, 9), (64, 3), (33, 33)])
def test_round_trip_is_bit_exact_with_metadata(tmp_path, shape):
    maps = layers(*shape)
    facts = {"cell_size_x": 0.25, "units": "local (object space)", "addon_version": "1.2.3",
             "note": "Höhe in m²"}
    path = exr.write(tmp_path / "t.exr", maps, facts, OIIO)
    assert exr.is_multilayer(path)
    assert sorted(exr.channel_names(path)) == sorted(maps)
    back = exr.read(path, OIIO)
    assert list(back.channels) == sorted(maps), "EXR keeps channels alphabetically"
    for name, values in maps.items():
        assert back.channels[name].dtype == np.float32
        assert np.array_equal(bits(back.channels[name]), bits(values)), name
    assert back.attributes["cell_size_x"] == "0.25"
    assert back.attributes["units"] == "local (object space)"
    assert back.attributes["note"] == "Höhe in m²"
    assert back.attributes["generator"] == "Terrain Erosion"
    assert folder_names(tmp_path) == ["t.exr"], "no temporary left"


def test_a_killed_writers_temporary_folder_is_swept_a_running_ones_kept(tmp_path):
    """The writer's temporary folder of a run that was killed (its process is gone) is
    removed by the next write in that folder; one of a process that still runs is not."""
    import subprocess
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left = tmp_path / f".te-temp-{dead.pid}-0123456789ab"
    left.mkdir()
    (left / "layers.exr").write_bytes(b"half")
    alive = tmp_path / f".te-temp-{os.getppid()}-ba9876543210"
    alive.mkdir()
    exr.write(tmp_path / "t.exr", layers(5, 6), None, OIIO)
    assert folder_names(tmp_path) == sorted(["t.exr", alive.name])


def test_header_says_zip_float_and_row_order(tmp_path):
    """32-bit float, ZIP, and the file's top scanline is the grid's last row (+Y up)."""
    maps = layers(5, 4)
    path = exr.write(tmp_path / "t.exr", maps, {}, OIIO)
    inp = OIIO.ImageInput.open(str(path))
    spec = inp.spec()
    raw = inp.read_image(0, 0, 0, spec.nchannels, "float")
    inp.close()
    assert spec.getattribute("compression") == "zip"
    assert str(spec.format) == "float"
    k = list(spec.channelnames).index("height")
    assert np.array_equal(raw[0, :, k], maps["height"][-1]), "top scanline = last row"
    assert np.array_equal(raw[-1, :, k], maps["height"][0])


def test_float64_input_is_stored_as_float32(tmp_path):
    h = np.linspace(0, 1, 12).reshape(3, 4)
    back = exr.read(exr.write(tmp_path / "t.exr", {"height": h, "x": -h}, {}, OIIO), OIIO)
    assert np.array_equal(back.channels["height"], h.astype(np.float32))


names = st.lists(st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=12),
                 min_size=0, max_size=4, unique=True).map(lambda n: ["height"] + [
                     x for x in n if x != "height"])


@given(names=names, rows=st.integers(1, 24), cols=st.integers(1, 24), data=st.data())
def test_any_float32_grids_round_trip_bit_exact(tmp_path_factory, names, rows, cols, data):
    """Every float32 bit pattern, NaN and inf included, comes back unchanged."""
    maps = {n: data.draw(hnp.arrays(np.float32, (rows, cols),
                                    elements=st.floats(width=32, allow_nan=True,
                                                       allow_infinity=True)))
            for n in names}
    folder = tmp_path_factory.mktemp("h")
    back = exr.read(exr.write(folder / "p.exr", maps, {"k": "v"}, OIIO), OIIO)
    assert sorted(back.channels) == sorted(maps)
    for n, values in maps.items():
        assert np.array_equal(bits(back.channels[n]), bits(values)), n


# ------------------------------------------------------------------ bad files

def test_missing_file(tmp_path):
    with pytest.raises(InputFileError, match="cannot read .*no.exr.*check the path"):
        exr.read(tmp_path / "no.exr", OIIO)


@pytest.mark.parametrize("content", [b"", b"hello", b"\x76\x2f\x31\x01", os.urandom(5000)])
def test_foreign_bytes_are_not_an_exr(tmp_path, content):
    path = tmp_path / "x.exr"
    path.write_bytes(content)
    with pytest.raises(exr.ExrFileError, match="x.exr"):
        exr.read(path, OIIO)


def test_a_png_named_exr_is_refused(tmp_path):
    path = tmp_path / "x.exr"
    save_png(tmp_path / "p.png", np.zeros((4, 4, 3), np.uint8)).rename(path)
    with pytest.raises(exr.ExrFileError, match="not an OpenEXR file"):
        exr.read(path, OIIO)


def test_an_exr_without_a_height_channel_is_not_a_terrain(tmp_path):
    path = tmp_path / "rgb.exr"
    spec = OIIO.ImageSpec(4, 3, 3, "float")
    out = OIIO.ImageOutput.create(str(path))
    assert out.open(str(path), spec) and out.write_image(np.zeros((3, 4, 3), np.float32))
    out.close()
    assert exr.channel_names(path) == ["B", "G", "R"]
    assert not exr.is_multilayer(path)
    with pytest.raises(exr.ExrFileError, match="no 'height' channel .*B, G, R"):
        exr.read(path, OIIO)


def test_a_tiled_exr_is_not_ours_but_no_error(tmp_path):
    """Another tool's tiled heightmap (even with a 'height' channel) goes to an image
    reader: has_height and is_multilayer say False, read refuses it by name."""
    for names in (("Y",), ("height", "bedrock")):
        path = tmp_path / f"tiled{len(names)}.exr"
        spec = OIIO.ImageSpec(40, 24, len(names), "float")
        spec.channelnames = names
        spec.tile_width = spec.tile_height = 16
        out = OIIO.ImageOutput.create(str(path))
        assert out.open(str(path), spec)
        assert out.write_image(np.zeros((24, 40, len(names)), np.float32))
        assert out.close()
        assert int.from_bytes(path.read_bytes()[4:8], "little") >> 8 & 0x2, "tiled"
        assert not exr.has_height(path)
        assert not exr.is_multilayer(path)
        with pytest.raises(exr.ExrFileError, match="tiled, deep or multi-part"):
            exr.read(path, OIIO)
    (tmp_path / "junk.exr").write_bytes(b"not an exr")
    with pytest.raises(exr.ExrFileError, match="not an OpenEXR file"):
        exr.has_height(tmp_path / "junk.exr")


@pytest.mark.parametrize("keep", [0.99, 0.6, 0.3, 0.05, 0.01])
def test_a_truncated_file_is_a_clear_error(tmp_path, keep):
    path = exr.write(tmp_path / "t.exr", layers(300, 200), {}, OIIO)
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])
    with pytest.raises(exr.ExrFileError, match="t.exr"):
        exr.read(path, OIIO)


@pytest.mark.parametrize("where", [0.3, 0.5, 0.9])
def test_damaged_pixels_are_a_clear_error_not_garbage(tmp_path, where):
    path = exr.write(tmp_path / "t.exr", layers(300, 200), {}, OIIO)
    data = bytearray(path.read_bytes())
    at = int(len(data) * where)
    data[at:at + 64] = bytes(64)
    path.write_bytes(bytes(data))
    with pytest.raises(exr.ExrFileError, match="damaged"):
        exr.read(path, OIIO)


def test_bad_layers_are_refused_before_writing(tmp_path):
    with pytest.raises(UserError, match="at least one layer"):
        exr.write(tmp_path / "t.exr", {}, {}, OIIO)
    with pytest.raises(UserError, match="one shape"):
        exr.write(tmp_path / "t.exr", {"height": np.zeros((3, 3)), "b": np.zeros((3, 4))},
                  {}, OIIO)
    with pytest.raises(UserError, match="cannot name"):
        exr.write(tmp_path / "t.exr", {"height": np.zeros((3, 3)), "": np.zeros((3, 3))},
                  {}, OIIO)
    assert folder_names(tmp_path) == []


# ------------------------------------------------------------------ failing disks

@pytest.mark.parametrize("budget", [0, 100, 5000, 40000])
def test_a_disk_full_while_writing_leaves_the_old_file(tmp_path, monkeypatch, budget):
    path = exr.write(tmp_path / "t.exr", layers(5, 5, seed=1), {}, OIIO)
    before = path.read_bytes()
    real = fileio._file_for
    monkeypatch.setattr(fileio, "_file_for", lambda fd: FailingFile(real(fd), budget))
    with pytest.raises(OutputPathError, match="t.exr.*No space left"):
        exr.write(path, layers(300, 200, seed=2), {}, OIIO)
    assert path.read_bytes() == before
    assert folder_names(tmp_path) == ["t.exr"], "no temporary left"


def test_a_really_full_disk_leaves_no_partial_file(tmp_path):
    with small_tmpfs(tmp_path, "64k") as mnt:
        with pytest.raises(OutputPathError, match="t.exr"):
            exr.write(mnt / "t.exr", layers(300, 200), {}, OIIO)
        assert folder_names(mnt) == []


def test_a_missing_folder_is_refused(tmp_path):
    with pytest.raises(OutputPathError, match="no/t.exr.*check that the folder exists"):
        exr.write(tmp_path / "no" / "t.exr", layers(3, 3), {}, OIIO)


def test_no_openimageio_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "OpenImageIO", None)
    with pytest.raises(exr.MissingLibraryError, match="pip install OpenImageIO"):
        exr.write(tmp_path / "t.exr", layers(3, 3), {})
    assert folder_names(tmp_path) == []


# ------------------------------------------------------------------ the CLI

@pytest.fixture
def state(tmp_path):
    from simcore.cli import main as cli
    from simcore.formats.states import save_heights
    from simcore.generators.noise import fractal_terrain
    save_heights(tmp_path / "h.npy", fractal_terrain(24, seed=2)[:, :19] * 10)
    assert cli.main(["erode", "--input", str(tmp_path / "h.npy"), "--output",
                     str(tmp_path / "s.npz"), "--particles", "800", "--quiet",
                     "--cell-size", "30"]) == 0
    return tmp_path / "s.npz"


def test_cli_export_writes_the_addons_channels_and_facts(state, tmp_path):
    """One convention: the channels are the add-on's float layers without 'te_' in
    world (the import's local) units, the header has the add-on's facts."""
    from simcore.analysis.layers import CHANGE_LAYER_PREFIX, exported_maps
    from simcore.cli import main as cli
    from simcore.fields import CORE_FIELDS
    from simcore.formats.states import load_state
    from simcore.processes import FIELDS
    out = tmp_path / "s.exr"
    assert cli.main(["export", str(state), "--output", str(out), "--quiet"]) == 0
    back = exr.read(out, OIIO)
    terrain, meta = load_state(state)
    cell = terrain.cell_size
    names = set(back.channels)
    layer_names = {f.exact[3:] for f in FIELDS.values() if f.exact}
    changes = {CHANGE_LAYER_PREFIX[3:] + p for p in terrain.changes}
    assert changes and changes <= names
    assert {"height", "bedrock", "sediment_depth"} <= names
    assert names <= {"height"} | layer_names | changes, names
    assert not names & {"sediment", "pool", "eroded_depth"}, "no raw simcore arrays"
    # the values: heights and lengths x cell size (world units), 0..1 maps as they are
    f32 = np.float32
    assert np.array_equal(back.channels["height"], (terrain.height() * cell).astype(f32))
    assert np.array_equal(back.channels["bedrock"], (terrain.bedrock * cell).astype(f32))
    assert np.array_equal(back.channels["sediment_depth"],
                          (terrain.sediment * cell).astype(f32))
    for p, change in terrain.changes.items():
        assert np.array_equal(back.channels["change_" + p], (change * cell).astype(f32))
    for f in FIELDS.values():
        if f.exact and f.exact[3:] in names and f not in CORE_FIELDS:
            scale = cell if f.is_length else 1.0
            assert np.array_equal(back.channels[f.exact[3:]],
                                  (getattr(terrain, f.name) * scale).astype(f32)), f.name
    maps = exported_maps(terrain, cell, meta["processes"])
    assert sorted(maps) == sorted(names)
    head = {}
    for key, text in back.attributes.items():  # as the add-on's import reads them
        try:
            head[key] = json.loads(text)
        except ValueError:
            head[key] = text
    assert head["cell_size_x"] == head["cell_size_y"] == 30.0
    assert (head["rows"], head["cols"]) == terrain.shape
    assert head["units"].startswith("world units")
    assert head["generator"] == "Terrain Erosion"
    assert head["height_min"] == float(maps["height"].min())
    assert head["real_size"] == (max(terrain.shape) - 1) * 30.0
    assert head["seed"] == meta["seed"]
    assert "cell_size" not in head, "the add-on's keys only"


def test_cli_erode_to_exr_is_the_state_as_exr(state, tmp_path):
    from simcore.cli import main as cli
    a, b = tmp_path / "a.exr", tmp_path / "b.exr"
    args = ["erode", "--input", str(tmp_path / "h.npy"), "--particles", "800", "--quiet",
            "--cell-size", "30", "--output"]
    assert cli.main([*args, str(a)]) == 0
    assert cli.main(["export", str(state), "--output", str(b), "--quiet"]) == 0
    ca, cb = exr.read(a, OIIO).channels, exr.read(b, OIIO).channels
    assert ca.keys() == cb.keys()
    assert all(np.array_equal(ca[n], cb[n]) for n in ca)


def test_cli_export_errors_are_one_line_and_write_nothing(state, tmp_path, capsys,
                                                          monkeypatch):
    from simcore.cli import main as cli
    assert cli.main(["export", str(tmp_path / "h.npy"), "--output", str(tmp_path / "x.exr")]) == 2
    assert cli.main(["export", str(state), "--output", str(tmp_path / "x.png")]) == 2
    monkeypatch.setitem(sys.modules, "OpenImageIO", None)
    assert cli.main(["export", str(state), "--output", str(tmp_path / "x.exr")]) == 2
    assert cli.main(["erode", "--input", str(tmp_path / "h.npy"), "--output",
                     str(tmp_path / "x.exr"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "export reads an .npz state" in err and "use one of .exr" in err
    assert err.count("pip install OpenImageIO") == 2
    assert not list(tmp_path.glob("x.*"))
