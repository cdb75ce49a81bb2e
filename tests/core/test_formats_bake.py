"""The bake cache format without Blender (simcore/formats/bake_cache.py): frames and
the manifest round-trip, damaged or foreign frames are refused whole with a message
naming the file, and only manifests of ours (today's and the old layout) list files a
bake may delete."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import deflate_start
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from simcore.errors import UserError
from simcore.formats import bake_cache as fmt

#: the layers the add-on lets a frame hold (a stand-in for addon/data/grid.py's)
LAYERS = frozenset({"te_sediment", "te_bedrock", "te_streams", "te_pool_depth"})


def a_frame(n: int = 12, trees: int = 3, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"z": rng.random(n, dtype=np.float32),
            "f__te_bedrock": rng.random(n, dtype=np.float32),
            "g__te_streams": rng.random(n, dtype=np.float32),
            "c__te_sediment": rng.random(4 * n, dtype=np.float32),
            "trees_co": rng.random((trees, 3), dtype=np.float32),
            "trees_size": rng.random(trees, dtype=np.float32),
            "water_z": rng.random(n, dtype=np.float32),
            "water_wet": rng.random(n, dtype=np.float32)}


finite32 = st.floats(-1e6, 1e6, width=32)


@st.composite
def frames(draw):
    n = draw(st.integers(1, 40))
    arrays = {"z": draw(hnp.arrays(np.float32, n, elements=finite32))}
    for kind in draw(st.sets(st.sampled_from(["f", "g", "c"]))):
        name = draw(st.sampled_from(sorted(LAYERS)))
        width = fmt.LAYER_WIDTH[kind]
        arrays[f"{kind}__{name}"] = draw(hnp.arrays(np.float32, n * width,
                                                    elements=finite32))
    if draw(st.booleans()):
        trees = draw(st.integers(0, 6))
        arrays["trees_co"] = draw(hnp.arrays(np.float32, (trees, 3), elements=finite32))
        arrays["trees_size"] = draw(hnp.arrays(np.float32, trees, elements=finite32))
    if draw(st.booleans()):
        arrays["water_z"] = draw(hnp.arrays(np.float32, n, elements=finite32))
    return n, arrays


@given(frame=frames(), compress=st.booleans())
def test_a_frame_round_trips_exactly(tmp_path_factory, frame, compress):
    n, arrays = frame
    path = tmp_path_factory.mktemp("f") / fmt.frame_file(7)
    size = fmt.write_frame(path, arrays, compress)
    assert size == path.stat().st_size
    back = fmt.checked_frame(fmt.read_frame(path), n, path, LAYERS)
    assert list(back) == list(arrays)
    for name, values in arrays.items():
        assert back[name].dtype == np.float32 and np.array_equal(back[name], values), name


def test_frame_file_names():
    assert fmt.frame_file(1) == "frame_000001.npz"
    assert fmt.frame_file(123456) == "frame_123456.npz"


def test_a_frame_of_other_number_types_is_read_as_float32(tmp_path):
    path = tmp_path / fmt.frame_file(1)
    fmt.write_frame(path, {"z": np.arange(5, dtype=np.int64),
                           "f__te_bedrock": np.ones(5, np.float64)})
    back = fmt.checked_frame(fmt.read_frame(path), 5, path, LAYERS)
    assert all(v.dtype == np.float32 for v in back.values())
    assert np.array_equal(back["z"], np.arange(5))


def _with(change):
    arrays = a_frame()
    change(arrays)
    return arrays


#: frames that are damaged or not ours (as the add-on's fault suite damages a real
#: bake's frame) -> a word of the message
FOREIGN_FRAMES = {
    "missing z": (lambda a: a.pop("z"), "no heights 'z'"),
    "z of the wrong shape": (lambda a: a.update(z=a["z"][:-1]), "'z' has shape"),
    "z as a grid": (lambda a: a.update(z=a["z"].reshape(3, 4)), "'z' has shape"),
    "a layer of the wrong shape": (lambda a: a.update({"f__te_bedrock": np.ones(7)}),
                                   "'f__te_bedrock' has shape"),
    "a colour of the wrong shape": (lambda a: a.update({"c__te_sediment": np.ones(5)}),
                                    "'c__te_sediment' has shape"),
    "a key naming position": (lambda a: a.update({"f__position": a["z"].copy()}),
                              "not a layer"),
    "a key naming a colour built-in": (lambda a: a.update({"g__sharp_face": a["z"]}),
                                       "not a layer"),
    "a layer of an unknown kind": (lambda a: a.update({"x__te_bedrock": a["z"]}),
                                   "not a layer"),
    "an unknown key": (lambda a: a.update(surprise=np.zeros(3)), "unknown entry"),
    "trees without sizes": (lambda a: a.pop("trees_size"), "trees"),
    "sizes without trees": (lambda a: a.pop("trees_co"), "trees"),
    "more sizes than trees": (lambda a: a.update(trees_size=np.ones(4)), "trees"),
    "trees of the wrong shape": (lambda a: a.update(trees_co=np.zeros((4, 2))),
                                 "'trees_co' has shape"),
    "water of the wrong shape": (lambda a: a.update(water_z=np.zeros(3)),
                                 "'water_z' has shape"),
    "infinite heights": (lambda a: a.update(z=np.full(12, np.inf)), "not finite"),
    "a NaN in a layer": (lambda a: a["g__te_streams"].__setitem__(3, np.nan),
                         "not finite"),
    "a huge number": (lambda a: a.update(water_wet=np.full(12, 1e300)), "not finite"),
}


@pytest.mark.parametrize("case", list(FOREIGN_FRAMES))
def test_a_damaged_or_foreign_frame_is_refused_naming_the_file(tmp_path, case):
    change, words = FOREIGN_FRAMES[case]
    path = tmp_path / fmt.frame_file(3)
    fmt.write_frame(path, _with(change))
    with pytest.raises(fmt.BakeError) as caught:
        fmt.checked_frame(fmt.read_frame(path), 12, path, LAYERS)
    text = str(caught.value)
    assert str(path) in text and words in text and "bake again" in text, text
    assert isinstance(caught.value, UserError)


@pytest.mark.parametrize("values", [np.array(["a"] * 12), np.array([None] * 12),
                                    np.zeros(12, complex), [0.0] * 12])
def test_entries_that_do_not_hold_numbers_are_refused(tmp_path, values):
    """Text in a file does not even decode (test below); arrays of any other kind are
    refused when checked."""
    path = tmp_path / fmt.frame_file(3)
    with pytest.raises(fmt.BakeError, match="'z' does not hold numbers"):
        fmt.checked_frame({**a_frame(), "z": values}, 12, path, LAYERS)


def test_a_very_long_foreign_key_is_shortened_in_the_message(tmp_path):
    path = tmp_path / fmt.frame_file(3)
    with pytest.raises(fmt.BakeError) as caught:
        fmt.checked_frame({**a_frame(), "k" * 5000: np.zeros(12)}, 12, path, LAYERS)
    assert len(str(caught.value)) < 400


def _corrupt_deflate(path):
    data = bytearray(path.read_bytes())
    data[deflate_start(path, "z.npy")] = 0xFF  # a final block of the reserved type
    path.write_bytes(bytes(data))


def _truncate(path):
    path.write_bytes(path.read_bytes()[:200])


#: files that do not decode: what each does to a frame file
UNREADABLE_FRAMES = {
    "compression error": _corrupt_deflate,
    "not a zip": lambda p: p.write_bytes(b"PK\x03\x04 but then nothing"),
    "empty": lambda p: p.write_bytes(b""),
    "truncated": _truncate,
    "a folder": lambda p: p.unlink() or p.mkdir(),
    "a fifo": lambda p: p.unlink() or os.mkfifo(p),
    "missing": lambda p: p.unlink(),
    "text heights": lambda p: p.unlink() or fmt.write_frame(p, {"z": np.array(["a"] * 12)}),
    "pickled objects": lambda p: p.unlink() or np.savez(p, z=np.array([None] * 12)),
}


@pytest.mark.parametrize("case", list(UNREADABLE_FRAMES))
def test_a_frame_that_does_not_decode_is_one_of_the_read_errors(tmp_path, case):
    if case == "a fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    path = tmp_path / fmt.frame_file(3)
    fmt.write_frame(path, a_frame())
    UNREADABLE_FRAMES[case](path)
    with pytest.raises(fmt.READ_ERRORS):
        fmt.read_frame(path)


# ------------------------------------------------------------------ manifest

def a_manifest(repeats=()):
    return fmt.manifest("Dunes", 400, 1, 3, 300, 2298, 7, 29397, True, repeats)


#: a manifest exactly as bakes have written it (key order, indent=1)
WRITTEN = """{
 "schema": 1,
 "format": "terrain_erosion.bake_cache",
 "generator": "Terrain Erosion",
 "object": "Dunes",
 "vertices": 400,
 "frame_start": 1,
 "frame_end": 3,
 "particles_per_frame": 300,
 "particles_per_round": 2298,
 "seed": 7,
 "bytes": 29397,
 "compressed": true,
 "files": {
  "1": "frame_000001.npz",
  "2": "frame_000002.npz",
  "3": "frame_000003.npz"
 },
 "repeats": {
  "frames": [
   3
  ],
  "why": "the simulation runs whole rounds of 2,298 particles; with 300 particles per frame, a round already overshoots the target of the frames after it, so 1 frame(s) (3) show the same terrain as the frame before",
  "fix": "set Particles per Frame to at least 2,298 (a multiple of it gives evenly spaced frames)"
 }
}"""  # noqa: E501 - the file's own lines


def test_the_manifest_is_written_byte_for_byte_as_before(tmp_path):
    path = fmt.write_manifest(tmp_path / fmt.MANIFEST, a_manifest([3]))
    assert path.read_text("utf-8") == WRITTEN
    assert "repeats" not in a_manifest()


@given(start=st.integers(0, 10**6), frames=st.integers(1, 60),
       per_frame=st.integers(1, 10**6), per_round=st.integers(1, 10**6),
       seed=st.integers(0, 2**63 - 1), compressed=st.booleans(),
       name=st.text(max_size=30), repeats=st.lists(st.integers(0, 10**6), max_size=20))
def test_a_manifest_round_trips_and_lists_its_frames(tmp_path_factory, start, frames,
                                                     per_frame, per_round, seed,
                                                     compressed, name, repeats):
    end = start + frames - 1
    data = fmt.manifest(name, 10, start, end, per_frame, per_round, seed, 123, compressed,
                        repeats)
    path = fmt.write_manifest(tmp_path_factory.mktemp("m") / fmt.MANIFEST, data)
    assert fmt.read_manifest(path) == data
    assert fmt.manifest_files(data) == [fmt.frame_file(f) for f in range(start, end + 1)]
    assert ("repeats" in data) == bool(repeats)


def _old_layout():
    """A manifest as written before ``format`` and ``generator`` existed."""
    return {k: v for k, v in a_manifest([3]).items()
            if k not in ("format", "generator", "repeats")}


def test_a_manifest_of_the_old_layout_is_ours(tmp_path):
    old = _old_layout()
    assert set(old) == fmt.OLD_KEYS
    path = tmp_path / fmt.MANIFEST
    path.write_text(json.dumps(old, indent=1))
    assert fmt.read_manifest(path) == old
    assert fmt.manifest_files(old) == ["frame_000001.npz", "frame_000002.npz",
                                       "frame_000003.npz"]


def test_a_manifest_with_keyed_values_round_trips_and_lists_its_frames(tmp_path):
    keyed = {"parameters": ["droplets.Kr", "landscape.uplift"],
             "values": {"droplets.Kr": {"1": 0.1, "2": 0.5, "3": 0.9}}}
    data = fmt.manifest("Dunes", 400, 1, 3, 300, 2298, 7, 29397, True, (), keyed)
    assert data["keyed"] == keyed
    assert "keyed" not in a_manifest(), "nothing keyed: no entry"
    path = fmt.write_manifest(tmp_path / fmt.MANIFEST, data)
    assert fmt.read_manifest(path) == data
    assert fmt.manifest_files(data) == fmt.manifest_files(a_manifest())


#: manifests that are not ours: what each changes
FOREIGN_MANIFESTS = {
    "another schema": lambda m: m.update(schema=2),
    "no schema": lambda m: m.pop("schema"),
    "files not a dict": lambda m: m.update(files=["frame_000001.npz"]),
    "a path out of the folder": lambda m: m["files"].update({"4": "../../precious.txt"}),
    "a frame under another name": lambda m: m["files"].update({"2": "frame_000003.npz"}),
    "a frame number that is not one": lambda m: m["files"].update({"x": "frame_x.npz"}),
    "a name that is not text": lambda m: m["files"].update({"2": 2}),
    "another generator": lambda m: m.update(generator="Someone Else"),
}


@pytest.mark.parametrize("case", list(FOREIGN_MANIFESTS))
def test_a_foreign_manifest_lists_nothing(tmp_path, case):
    data = a_manifest()
    FOREIGN_MANIFESTS[case](data)
    path = tmp_path / fmt.MANIFEST
    path.write_text(json.dumps(data))
    if case == "another generator":  # then it must be exactly the old layout: it is not
        assert set(data) != fmt.OLD_KEYS
    assert fmt.manifest_files(data) is None
    assert fmt.read_manifest(path) is None


#: old-layout manifests that are not exactly the old layout
FOREIGN_OLD = {
    "an extra key": lambda m: m.update(extra=1),
    "a missing key": lambda m: m.pop("seed"),
    "a frame missing": lambda m: m["files"].pop("2"),
    "a frame beyond the range": lambda m: m["files"].update({"4": "frame_000004.npz"}),
    "a range that is not numbers": lambda m: m.update(frame_end="three"),
}


@pytest.mark.parametrize("case", list(FOREIGN_OLD))
def test_an_old_manifest_must_be_exactly_the_old_layout(case):
    data = _old_layout()
    FOREIGN_OLD[case](data)
    assert fmt.manifest_files(data) is None


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", "null", '"cache"', "\xff"])
def test_a_manifest_that_is_not_a_json_object_is_not_ours(tmp_path, text):
    path = tmp_path / fmt.MANIFEST
    path.write_bytes(text.encode("utf-8", "surrogateescape") if text != "\xff"
                     else b"\xff\xfe")
    assert fmt.read_manifest(path) is None
    assert fmt.read_manifest(tmp_path / "missing.json") is None


def test_the_temporary_files_of_our_writes_are_recognised(tmp_path):
    assert fmt.TEMP_FILE.fullmatch(".cache.json.te-123-4-5.tmp")
    assert fmt.TEMP_FILE.fullmatch(".frame_000001.npz.te-123-4-5.tmp")
    assert not fmt.TEMP_FILE.fullmatch(".notes.txt.te-123-4-5.tmp")
    assert not fmt.TEMP_FILE.fullmatch("cache.json")


def test_repeat_note_names_the_frames_and_the_fix():
    note = fmt.repeat_note(list(range(2, 40)), 5000, 300)
    assert note["frames"] == list(range(2, 40))
    assert "5,000" in note["why"] and "38 frame(s)" in note["why"]
    assert note["why"].count(",") < 20 and "..." in note["why"], "at most 12 shown"
    assert "at least 5,000" in note["fix"]
