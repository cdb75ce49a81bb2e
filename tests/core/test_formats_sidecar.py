"""The export sidecar without Blender (simcore/formats/sidecar.py): what the export
writes reads back as the same facts, byte for byte as sidecars have been written, and
every hostile value a user's sidecar (or a multi-layer EXR's header) may hold is a
message naming the file and the key."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simcore.errors import InputFileError
from simcore.formats import sidecar as fmt

#: the add-on's vertical exaggeration range (addon/data/scale.py)
EXAGGERATION = (1e-3, 1e3)

#: a sidecar as the export has written it (a real one, its maps and settings trimmed)
WRITTEN = """{
 "schema": 1,
 "generator": "Terrain Erosion",
 "addon_version": "0.1.0",
 "simcore_version": "0.1.0",
 "object": "Wet",
 "rows": 24,
 "cols": 24,
 "cell_size_x": 0.17391304347826086,
 "cell_size_y": 0.17391304347826086,
 "origin_x": -2.0,
 "origin_y": -2.0,
 "units": "local (object space); world = local x object scale",
 "object_scale": [
  1.0,
  1.0,
  1.0
 ],
 "real_size": 4.0,
 "real_cell_size": 0.17391304347826086,
 "real_size_automatic": false,
 "vertical_exaggeration": 1.0,
 "real_scale": 1.0,
 "real_units": "metres across = local x real_scale; metres of height = local x real_scale / vertical_exaggeration",
 "height_min": 4.0541294765716884e-06,
 "height_max": 0.16314300894737244,
 "height_scale": 0.16313895481789586,
 "png_decode": "value = min + (png / 65535) * (max - min)",
 "image_rows": "image bottom row = lowest local Y (top of the picture = +Y)",
 "multilayer_exr": {
  "file": "wet_layers.exr",
  "channels": [
   "height",
   "stream",
   "change_droplets"
  ],
  "decode": "one 32-bit float channel per map, named as the map (EXR lists them alphabetically): the exact local values; header attributes TerrainErosion/<key> repeat this sidecar's facts",
  "row_order": "the file's top scanline is the grid's last row (highest Y): the picture's top is +Y (north)"
 },
 "maps": {
  "height": {
   "min": 4.0541294765716884e-06,
   "max": 0.16314300894737244,
   "files": {
    "PNG": "wet_height.png",
    "EXR": "wet_height.exr",
    "MULTI_EXR": "wet_layers.exr"
   }
  },
  "stream": {
   "min": 0.0,
   "max": 1.0,
   "files": {
    "PNG": "wet_stream.png",
    "EXR": "wet_stream.exr",
    "MULTI_EXR": "wet_layers.exr"
   }
  },
  "change_droplets": {
   "min": -0.8655930161476135,
   "max": 0.8655930161476135,
   "files": {
    "PNG": "wet_change_droplets.png",
    "EXR": "wet_change_droplets.exr",
    "MULTI_EXR": "wet_layers.exr"
   },
   "process": "droplets",
   "signed": true,
   "meaning": "how much droplets raised (+) or lowered (-) the ground since the original heights (te_original_z); the change maps add up to the whole change",
   "units": "local (like height; EXR: the exact values)",
   "value_min": -0.8655930161476135,
   "value_max": 4.0541294765716884e-06,
   "png_decode": "value = min + (png / 65535) * (max - min), min = -max: mid-grey (32767.5) is no change"
  },
  "rivers": {
   "files": {
    "JSON": "wet_rivers.json"
   },
   "count": 0
  },
  "lakes": {
   "files": {
    "PNG": "wet_lakes.png"
   },
   "count": 0,
   "decode": "lake id = png value (0 = dry)"
  }
 },
 "seed": 3,
 "preset": "default",
 "particles": 2000,
 "particles_per_area": 0.0,
 "rounds_done": 1,
 "enabled": {
  "landscape": false,
  "droplets": true,
  "snowball": false,
  "wind": false,
  "hydrology": true,
  "thermal": false,
  "trees": false
 },
 "parameters": {},
 "provenance": ""
}"""  # noqa: E501 - the file's own lines

SETTINGS = {"seed": 3, "preset": "default", "particles": 2000, "particles_per_area": 0.0,
            "rounds_done": 1,
            "enabled": {"landscape": False, "droplets": True, "snowball": False,
                        "wind": False, "hydrology": True, "thermal": False, "trees": False},
            "parameters": {}, "provenance": ""}


def written_sidecar() -> dict:
    """The sidecar of WRITTEN, built as the export builds it."""
    heights = np.array([4.0541294765716884e-06, 0.16314300894737244])
    cell = 0.17391304347826086
    maps = {"height": fmt.map_entry(heights),
            "stream": fmt.map_entry(np.array([0.2, 0.3]), unit_range=True),
            "change_droplets": fmt.map_entry(
                np.array([-0.8655930161476135, 4.0541294765716884e-06]), process="droplets")}
    for name, entry in maps.items():
        entry["files"] = {"PNG": f"wet_{name}.png", "EXR": f"wet_{name}.exr",
                          "MULTI_EXR": "wet_layers.exr"}
    maps["rivers"] = fmt.rivers_entry("wet_rivers.json", 0)
    maps["lakes"] = fmt.lakes_entry("wet_lakes.png", 0)
    facts = fmt.Facts(24, 24, cell, cell, -2.0, -2.0, float(heights.min()),
                      float(heights.max()), 4.0, 1.0)
    row_order = ("the file's top scanline is the grid's last row (highest Y): the "
                 "picture's top is +Y (north)")
    return fmt.build(facts, addon_version="0.1.0", simcore_version="0.1.0",
                     object_name="Wet", object_scale=[1.0, 1.0, 1.0], real_cell_size=cell,
                     real_size_automatic=False, real_scale=1.0, maps=maps,
                     multilayer=("wet_layers.exr", list(maps)[:3], row_order),
                     settings=SETTINGS)


def test_the_sidecar_is_written_byte_for_byte_as_before(tmp_path):
    path = fmt.write(tmp_path / "wet.json", written_sidecar())
    assert path.read_text("utf-8") == WRITTEN


def test_the_header_repeats_the_facts_but_not_the_maps_or_settings():
    side = written_sidecar()
    header = fmt.header_facts(side)
    assert header["cell_size_x"] == side["cell_size_x"] and header["real_size"] == 4.0
    assert not set(fmt.NOT_IN_HEADER) & set(header)
    assert "seed" in header and "multilayer_exr" in header


def test_skipped_attributes_come_last_and_only_when_there_are_some():
    side = written_sidecar()
    assert "skipped_attributes" not in side
    kw = dict(addon_version="1", simcore_version="1", object_name="A",
              object_scale=[1.0] * 3, real_cell_size=1.0, real_size_automatic=True,
              real_scale=1.0, maps={})
    facts = fmt.Facts(3, 3, 1.0, 1.0, -1.0, -1.0, 0.0, 1.0, 0.0, 1.0)
    side = fmt.build(facts, **kw, skipped={"te_mine": "not a layer the add-on writes"})
    assert list(side)[-1] == "skipped_attributes"
    assert "multilayer_exr" not in side and side["maps"] == {}


def test_map_entries_give_the_png_range():
    values = np.array([-2.0, 0.5, 3.0])
    assert fmt.map_entry(values) == {"min": -2.0, "max": 3.0, "files": {}}
    assert fmt.map_entry(values, unit_range=True) == {"min": 0.0, "max": 1.0, "files": {}}
    change = fmt.map_entry(values, process="wind")
    assert (change["min"], change["max"]) == (-3.0, 3.0), "symmetric: mid-grey is 0"
    assert (change["value_min"], change["value_max"]) == (-2.0, 3.0)
    assert change["process"] == "wind" and change["signed"] is True


# ------------------------------------------------------------------ round trip

coord = st.floats(-1e4, 1e4, allow_nan=False)


@st.composite
def facts(draw):
    rows, cols = draw(st.integers(3, 2000)), draw(st.integers(3, 2000))
    low = draw(coord)
    return fmt.Facts(rows, cols, draw(st.floats(1e-3, 1e3)), draw(st.floats(1e-3, 1e3)),
                     draw(coord), draw(coord), low, low + draw(st.floats(0, 1e4)),
                     draw(st.one_of(st.just(0.0), st.floats(fmt.MIN_REAL_SIZE,
                                                            fmt.MAX_REAL_SIZE))),
                     draw(st.floats(*EXAGGERATION)))


@given(facts=facts(), png=st.booleans(), image=st.sampled_from(
    ["t_height.png", "t_layers.exr", "t_height.exr"]))
def test_what_the_export_writes_the_import_reads_back(tmp_path_factory, facts, png,
                                                      image):
    folder = tmp_path_factory.mktemp("s")
    side = fmt.build(facts, addon_version="1", simcore_version="1", object_name="T",
                     object_scale=[1.0] * 3, real_cell_size=1.0, real_size_automatic=False,
                     real_scale=1.0, maps={})
    fmt.write(folder / "t.json", side)
    path = folder / image
    back = fmt.read(path)
    assert back is not None and back.where == f"the sidecar {folder / 't.json'}"
    assert back == json.loads(json.dumps(side))
    got = fmt.read_facts(back, path, (facts.rows, facts.cols), png, False, EXAGGERATION)
    assert got == facts
    # the header of a multi-layer EXR stands in for the sidecar: the same facts
    header = {k: v if isinstance(v, str) else json.dumps(v)
              for k, v in fmt.header_facts(side).items()}
    header["generator"] = fmt.GENERATOR  # exr.write adds it
    from_header = fmt.from_header(header, path)
    assert fmt.read_facts(from_header, path, (facts.rows, facts.cols), png, False,
                          EXAGGERATION) == facts


def test_a_sidecar_written_before_real_sizes_leaves_the_size_automatic(tmp_path):
    side = json.loads(WRITTEN)
    for key in ("real_size", "real_cell_size", "real_size_automatic",
                "vertical_exaggeration", "real_scale", "real_units"):
        del side[key]
    got = fmt.read_facts(fmt.Sidecar(side, "s", "fix"), tmp_path / "wet_height.png",
                         (24, 24), True, False, EXAGGERATION)
    assert got.real_size is None and got.vertical_exaggeration == 1.0
    assert got.cell_size_x == side["cell_size_x"] and got.height_max == side["height_max"]


def test_missing_optional_facts_are_none(tmp_path):
    side = fmt.Sidecar({"generator": fmt.GENERATOR}, "s", "fix")
    got = fmt.read_facts(side, tmp_path / "x.exr", (5, 7), False, True, EXAGGERATION)
    assert got == fmt.Facts(5, 7, None, None, None, None, None, None, None, 1.0)
    side["cell_size_x"] = 0.5
    got = fmt.read_facts(side, tmp_path / "x.exr", (5, 7), False, True, EXAGGERATION)
    assert (got.cell_size_x, got.cell_size_y) == (0.5, 0.5), "y defaults to x"


# ------------------------------------------------------------------ hostile values

#: hostile sidecar values (as the add-on's fault suite tries them through an import):
#: key -> value (DELETE: the key is missing)
DELETE = object()
HOSTILE_SIDECARS = {
    "cell size as text": ("cell_size_x", "big"),
    "cell size null": ("cell_size_x", None),
    "cell size a list": ("cell_size_x", [1.0]),
    "cell size a dict": ("cell_size_y", {"value": 1.0}),
    "cell size true": ("cell_size_x", True),
    "zero cell size": ("cell_size_x", 0),
    "negative cell size": ("cell_size_y", -0.5),
    "NaN cell size": ("cell_size_x", float("nan")),
    "infinite cell size": ("cell_size_y", float("inf")),
    "huge cell size": ("cell_size_x", 1e300),
    "tiny cell size": ("cell_size_x", 1e-300),
    "missing cell size": ("cell_size_x", DELETE),
    "height range of 1e300": ("height_max", 1e300),
    "height min of -1e300": ("height_min", -1e300),
    "height max as text": ("height_max", "high"),
    "height max NaN": ("height_max", float("nan")),
    "height min infinite": ("height_min", float("-inf")),
    "min above max": ("height_min", 1e6),
    "missing height max": ("height_max", DELETE),
    "origin as text": ("origin_x", "left"),
    "origin of 1e300": ("origin_y", 1e300),
    "rows as text": ("rows", "many"),
    "huge rows": ("rows", 10**12),
    "cols a float": ("cols", 12.5),
    "real size a dict": ("real_size", {"m": 5}),
    "real size below the least": ("real_size", 1e-9),
    "exaggeration a list": ("vertical_exaggeration", [2]),
    "exaggeration zero": ("vertical_exaggeration", 0),
    "an integer beyond any float": ("origin_x", 10**400),
}


def _facts_of(side: fmt.Sidecar, path: Path, png: bool):
    """What an import does with a sidecar: its facts, then the lattice they make."""
    got = fmt.read_facts(side, path, (24, 24), png, False, EXAGGERATION)
    fmt.check_lattice(side, path, (24, 24), got.cell_size_x or 1.0,
                      got.cell_size_y or 1.0, got.origin_x, got.origin_y)


@pytest.mark.parametrize("case", list(HOSTILE_SIDECARS))
@pytest.mark.parametrize("suffix", [".png", ".exr"])
def test_a_hostile_sidecar_is_a_message_naming_file_and_key(tmp_path, case, suffix):
    key, value = HOSTILE_SIDECARS[case]
    if suffix == ".exr" and key in ("height_min", "height_max") and value is DELETE:
        pytest.skip("an EXR holds heights: its import never reads the height range")
    data = json.loads(WRITTEN)
    if value is DELETE:
        del data[key]
    else:
        data[key] = value
    (tmp_path / "wet.json").write_text(json.dumps(data))
    path = tmp_path / f"wet_height{suffix}"
    side = fmt.read(path)
    with pytest.raises(InputFileError) as caught:
        _facts_of(side, path, suffix == ".png")
    message = str(caught.value)
    assert "wet.json" in message and repr(key) in message, message
    assert len(message) < 600


@pytest.mark.parametrize("case", ["cell size as text", "zero cell size", "NaN cell size",
                                  "huge cell size", "origin of 1e300", "rows as text",
                                  "exaggeration a list"])
def test_a_hostile_multilayer_exr_header_is_a_message(tmp_path, case):
    key, value = HOSTILE_SIDECARS[case]
    header = {k: v if isinstance(v, str) else json.dumps(v)
              for k, v in fmt.header_facts(json.loads(WRITTEN)).items()}
    header["generator"] = fmt.GENERATOR  # exr.write adds it
    header[key] = value if isinstance(value, str) else json.dumps(value)
    path = tmp_path / "wet_layers.exr"
    side = fmt.from_header(header, path)
    with pytest.raises(InputFileError) as caught:
        _facts_of(side, path, False)
    message = str(caught.value)
    assert "header of" in message and "wet_layers.exr" in message and repr(key) in message


def test_a_header_or_json_that_is_not_ours_is_no_sidecar(tmp_path):
    assert fmt.from_header({"generator": "Other"}, tmp_path / "x.exr") is None
    assert fmt.from_header({}, tmp_path / "x.exr") is None
    (tmp_path / "a.json").write_text(json.dumps({"generator": "Other", "rows": 3}))
    (tmp_path / "b.json").write_text("[1, 2]")
    assert fmt.read(tmp_path / "a_height.png") is None
    assert fmt.read(tmp_path / "b.png") is None
    assert fmt.read(tmp_path / "c_height.png") is None, "none there"


def test_a_sidecar_that_is_not_json_is_a_message(tmp_path):
    (tmp_path / "a.json").write_text("{not json")
    with pytest.raises(InputFileError, match="cannot read the sidecar .*a.json"):
        fmt.read(tmp_path / "a_height.exr")


def test_the_sidecar_of_a_map_is_found_by_its_name(tmp_path):
    fmt.write(tmp_path / "a.json", {"generator": fmt.GENERATOR, "rows": 1})
    fmt.write(tmp_path / "a_eroded.json", {"generator": fmt.GENERATOR, "rows": 2})
    assert fmt.read(tmp_path / "a_height.png")["rows"] == 1
    assert fmt.read(tmp_path / "a_layers.exr")["rows"] == 1
    assert fmt.read(tmp_path / "a_eroded.png")["rows"] == 2, "its own name first"
    (tmp_path / "a_height.json").write_text(json.dumps({"generator": fmt.GENERATOR,
                                                       "rows": 3}))
    assert fmt.read(tmp_path / "a_height.png")["rows"] == 1, "<base>.json first"


def test_paths_a_reader_cannot_open_are_messages(tmp_path):
    with pytest.raises(InputFileError, match="NUL"):
        fmt.read(tmp_path / "a\0b_height.png")
    with pytest.raises(InputFileError):
        fmt.read(tmp_path / ("n" * 300 + "_height.png"))
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "f.json")
        with pytest.raises(InputFileError, match="not a regular file"):
            fmt.read(tmp_path / "f_height.png")


@pytest.mark.parametrize(("cell", "origin", "words"), [
    (1e6, None, "reach"), (1.0, 1e7, "reach"), (1e-9, 1e6, "too small")])
def test_a_lattice_blender_cannot_place_is_refused(tmp_path, cell, origin, words):
    side = fmt.Sidecar({"cell_size_x": cell}, "the sidecar s.json", "fix it")
    with pytest.raises(InputFileError, match=f"s.json: 'cell_size_x'.*{words}"):
        fmt.check_lattice(side, tmp_path / "m.png", (24, 24), cell, cell, origin, origin)
    with pytest.raises(InputFileError, match=f"a Cell Size of .*{words}"):
        fmt.check_lattice(None, tmp_path / "m.png", (24, 24), cell, cell, origin, origin)
    assert fmt.check_lattice(None, tmp_path / "m.png", (3, 5), 2.0, 1.0, None, None) \
        == (-4.0, -1.0), "centred"


# ------------------------------------------------------------------ re-export

def test_listed_files_are_only_plain_files_of_the_set_in_the_folder(tmp_path):
    for name in ("wet_height.png", "wet_height.exr", "other_height.png", "notes.txt"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path.parent / "precious.txt").write_text("keep")
    maps = {"height": {"files": {"PNG": "wet_height.png", "EXR": "wet_height.exr"}},
            "forged": {"files": {"a": "../precious.txt", "b": "other_height.png",
                                 "c": "wet_sub/x.png", "d": "wet_missing.png", "e": 3,
                                 "f": "wet_a\\b"}},
            "odd": "not a dict", "odd2": {"files": ["wet_height.png"]}}
    fmt.write(tmp_path / "wet.json", {"generator": fmt.GENERATOR, "maps": maps})
    assert fmt.listed_files(tmp_path, "wet") == ["wet.json", "wet_height.png",
                                                 "wet_height.exr"]


@pytest.mark.parametrize("text", ["{", "[]", '{"generator": "Other", "maps": {}}',
                                  '{"generator": "Terrain Erosion", "maps": []}'])
def test_a_sidecar_that_is_not_ours_lists_nothing(tmp_path, text):
    (tmp_path / "wet.json").write_text(text)
    assert fmt.listed_files(tmp_path, "wet") == []
    assert fmt.listed_files(tmp_path, "dry") == []


def test_the_cli_exports_header_is_read_back_by_the_same_reader(tmp_path, monkeypatch):
    """``python -m simcore export`` writes the sidecar's facts in its EXR header: the
    import's reader takes them (world units as local ones)."""
    from simcore.cli.export import save_exr
    from simcore.formats import exr
    from simcore.generators.noise import fractal_terrain
    from simcore.terrain import Terrain

    terrain = Terrain.from_heights(fractal_terrain(20, seed=2) * 8, cell_size=30.0)
    written = {}
    monkeypatch.setattr(exr, "write", lambda out, maps, facts, oiio: written.update(
        maps=maps, facts=facts))
    save_exr(tmp_path / "t.exr", terrain, {"seed": 4, "processes": []}, None)
    header = {k: v if isinstance(v, str) else json.dumps(v)
              for k, v in written["facts"].items()}
    header["generator"] = exr.GENERATOR  # exr.write adds it
    side = fmt.from_header(header, tmp_path / "t.exr")
    got = fmt.read_facts(side, tmp_path / "t.exr", (20, 20), False, False, EXAGGERATION)
    h = written["maps"]["height"]
    assert got == fmt.Facts(20, 20, 30.0, 30.0, None, None, float(h.min()), float(h.max()),
                            19 * 30.0, 1.0)
    assert side["image_rows"] == fmt.IMAGE_ROWS


def test_an_engine_tiles_sidecar_is_never_read_as_a_map_export(tmp_path):
    """An engine-tiles set named like the maps (<name>.json) once replaced their
    sidecar; the import then took the tiles' cell size and height range for the map's
    (cell 39.7 and heights 0..198.5 for a map of cells 1, heights 0..5) without a
    word. A sidecar with a ``kind`` is refused by name, and lists nothing to replace."""
    from simcore.formats import engine_tiles as et

    rows = cols = 127
    h = np.linspace(0, 5, rows * cols).reshape(rows, cols)
    et.write_tiles(tmp_path, "Terrain", h * 39.7, 39.7, "unreal", 127)
    (tmp_path / "Terrain_height.png").write_bytes(b"png")
    with pytest.raises(InputFileError, match=r"Terrain\.json is a Terrain Erosion "
                       r"'engine_tiles' sidecar, not a map export's"):
        fmt.read(tmp_path / "Terrain_height.png")
    assert fmt.listed_files(tmp_path, "Terrain") == []
    assert fmt.listed_files(tmp_path, "Terrain", "engine_tiles")[0] == "Terrain.json"
    # any other kind too; a map sidecar (no kind) as ever
    side = json.loads(WRITTEN)
    (tmp_path / "Wet.json").write_text(json.dumps({**side, "kind": "atlas"}))
    with pytest.raises(InputFileError, match="Wet.json .*'atlas'"):
        fmt.read(tmp_path / "Wet_height.png")
    (tmp_path / "Wet.json").write_text(WRITTEN)
    assert fmt.read(tmp_path / "Wet_height.png")["rows"] == 24


def test_neither_writer_replaces_the_others_sidecar(tmp_path):
    """check_replaceable: a map export refuses an engine-tiles sidecar of its name,
    engine tiles refuse a map export's sidecar (and, any_file, any other file); each
    replaces its own kind's."""
    from simcore.errors import OutputPathError

    (tmp_path / "Wet.json").write_text(WRITTEN)
    fmt.check_replaceable(tmp_path, "Wet", fmt.MAPS, "rename")
    fmt.check_replaceable(tmp_path, "none", "engine_tiles", "rename", any_file=True)
    with pytest.raises(OutputPathError, match=r"Wet\.json: it is a map export's "
                       "sidecar, which this would replace; rename it"):
        fmt.check_replaceable(tmp_path, "Wet", "engine_tiles", "rename it")
    tiles = {**json.loads(WRITTEN), "kind": "engine_tiles"}
    (tmp_path / "T.json").write_text(json.dumps(tiles))
    fmt.check_replaceable(tmp_path, "T", "engine_tiles", "rename", any_file=True)
    with pytest.raises(OutputPathError, match="engine_tiles set"):
        fmt.check_replaceable(tmp_path, "T", fmt.MAPS, "rename")
    (tmp_path / "mine.json").write_text("{}")
    fmt.check_replaceable(tmp_path, "mine", fmt.MAPS, "rename")  # as the export always did
    with pytest.raises(OutputPathError, match="mine.json: it is not the sidecar"):
        fmt.check_replaceable(tmp_path, "mine", "engine_tiles", "rename", any_file=True)
