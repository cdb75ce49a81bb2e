"""Property-based fuzzing of every file reader (.npy, .npz, preset TOML) and every CLI
command's arguments: whatever the bytes or values, the outcome is a valid result or a
UserError (the CLI: exit 2 with one line) — never another exception, never non-finite
output.

Run with ``-s`` to see how many cases each target tried and how they ended.
"""

from __future__ import annotations

import io
import json
import math
import sys
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore.cli.main import main
from simcore.errors import UserError
from simcore.formats.presets import load_preset
from simcore.formats.states import load_heights, load_state, save_state
from simcore.generators.noise import fractal_terrain
from simcore.terrain import Terrain

OUTCOMES: Counter = Counter()
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module", autouse=True)
def _report_outcomes():
    yield
    lines = [f"  {k[0]:10s} {k[1]:14s} {n}" for k, n in sorted(OUTCOMES.items())]
    print("\nfuzz outcomes (target, outcome, cases):\n" + "\n".join(lines), file=sys.stderr)


def _finite_terrain(t: Terrain) -> None:
    for name, arr in t.arrays().items():
        assert np.isfinite(arr).all(), name
    assert np.isfinite(t.world_height()).all() and np.isfinite(t.trees).all()
    assert math.isfinite(t.cell_size) and t.cell_size > 0


def _read(target: str, func) -> None:
    """Run ``func``: a result (checked by it) or a UserError; count which."""
    try:
        func()
    except UserError as exc:
        assert str(exc), "a user error always says something"
        OUTCOMES[(target, "user error")] += 1
        return
    OUTCOMES[(target, "valid")] += 1


# -- .npy ------------------------------------------------------------------------

def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


GOOD_NPY = _npy_bytes(fractal_terrain(8, seed=1))

arrays = st.one_of(
    st.builds(lambda r, c, v: np.full((r, c), v), st.integers(0, 6), st.integers(0, 6),
              st.floats(allow_nan=True, allow_infinity=True)),
    st.builds(lambda n: np.zeros(n), st.integers(0, 20)),
    st.builds(lambda r, c: np.arange(r * c, dtype=np.int16).reshape(r, c),
              st.integers(1, 6), st.integers(1, 6)),
    st.just(np.zeros((4, 4), dtype=np.complex64)),
    st.just(np.zeros((4, 4), dtype="U3")),
    st.just(np.zeros((4, 4, 2))),
    st.just(np.array(3.0)),
)


def _mutate(data: bytes, cuts: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for pos, val in cuts:
        if out:
            out[pos % len(out)] = val
    return bytes(out)


npy_files = st.one_of(
    st.binary(max_size=400),
    st.builds(_npy_bytes, arrays),
    st.builds(lambda n: GOOD_NPY[:n], st.integers(0, len(GOOD_NPY))),
    st.builds(_mutate, st.just(GOOD_NPY),
              st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=6)),
    st.builds(lambda shape, descr: (b"\x93NUMPY\x01\x00" + _header(shape, descr)),
              st.sampled_from(["(200000, 200000)", "(-1, 5)", "(3,)", "()", "(2**70, 2)",
                               "(5, 5)", "'x'", "(1e3, 2)"]),
              st.sampled_from(["'<f8'", "'|O'", "'<c16'", "[('a', '<f8')]", "'<f4'",
                               "42", "'nonsense'"])),
)


def _header(shape: str, descr: str) -> bytes:
    text = f"{{'descr': {descr}, 'fortran_order': False, 'shape': {shape}, }}"
    text += " " * (63 - len(text) % 64) + "\n"
    return len(text).to_bytes(2, "little") + text.encode("latin1") + b"\0" * 200


@FUZZ
@given(data=npy_files, cell=st.sampled_from([1.0, 0.5, 1e-9, 1e9]))
def test_npy_reader(tmp_path, data, cell):
    path = tmp_path / "in.npy"
    path.write_bytes(data)

    def read():
        t = Terrain.from_heights(load_heights(path), cell)
        _finite_terrain(t)
    _read("npy", read)


# -- .npz states -----------------------------------------------------------------

def _state_bytes(tmp: Path) -> bytes:
    t = Terrain.from_heights(fractal_terrain(8, seed=2), 2.0)
    t.trees = np.array([[1.0, 2.0, 0.5]])
    return save_state(tmp / "s.npz", t, {"seed": 3, "rounds_done": 2}).read_bytes()


_GOOD = None


def good_state() -> bytes:
    global _GOOD
    if _GOOD is None:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            _GOOD = _state_bytes(Path(d))
    return _GOOD


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**80, 2**80)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                  max_size=3),
    max_leaves=8)
meta_dicts = st.fixed_dictionaries({}, optional={
    "cell_size": json_values | st.sampled_from([1e308, 1e-308, -1.0, 0.0, 2.0]),
    "rounds_done": json_values | st.sampled_from([10**30, -5, 2**62, 7]),
    "seed": json_values | st.sampled_from([2**64, -1, 2**63 - 1]),
    "outflow": json_values,
})


def _npz_with(meta_text, arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, metadata=np.array(meta_text), **arrays)
    return buf.getvalue()


base = fractal_terrain(6, seed=4)
npz_files = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda n: good_state()[:n], st.integers(0, 4000)),
    st.builds(lambda cuts: _mutate(good_state(), cuts),
              st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 255)), min_size=1,
                       max_size=5)),
    st.builds(lambda m: _npz_with(json.dumps(m, allow_nan=True), {"bedrock": base}),
              meta_dicts),
    st.builds(lambda v: _npz_with(json.dumps(v, allow_nan=True), {"bedrock": base}),
              json_values),
    st.builds(lambda t: _npz_with(t, {"bedrock": base}), st.text(max_size=20)),
    st.builds(lambda a, name: _npz_with('{"cell_size": 1.0}', {"bedrock": base, name: a}),
              arrays, st.sampled_from(["sediment", "pool", "stream", "trees", "rain",
                                       "erodibility", "height"])),
    st.builds(lambda a: _npz_with('{"cell_size": 1.0}', {"bedrock": a}), arrays),
    st.just(_npz_with(np.zeros(3), {"bedrock": base})),
)


@FUZZ
@given(data=npz_files)
def test_npz_reader(tmp_path, data):
    path = tmp_path / "in.npz"
    path.write_bytes(data)

    def read():
        t, meta = load_state(path)
        _finite_terrain(t)
        assert isinstance(meta, dict)
    _read("npz", read)


def test_a_claimed_huge_array_is_refused_before_allocating(tmp_path):
    """A zip member whose header claims 200000^2 float64 (320 GB) is refused at once."""
    path = tmp_path / "huge.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.npy", _npy_bytes(np.array('{"cell_size": 1.0}')))
        zf.writestr("bedrock.npy", b"\x93NUMPY\x01\x00" + _header("(200000, 200000)",
                                                                  "'<f8'"))
    with pytest.raises(UserError, match="not a Terrain Erosion state.*200000x200000"):
        load_state(path)
    npy = tmp_path / "huge.npy"
    npy.write_bytes(b"\x93NUMPY\x01\x00" + _header("(200000, 200000)", "'<f8'"))
    with pytest.raises(UserError, match="200000x200000"):
        load_heights(npy)


@pytest.mark.parametrize("meta, message", [
    ({"cell_size": 1e308}, "cell_size must be a number from 1e-09 to 1e\\+09"),
    ({"cell_size": "2"}, "'cell_size' must be a finite number"),
    ({"rounds_done": 10**30}, "'rounds_done' must be a whole number"),
    ({"rounds_done": -1}, "'rounds_done' must be a whole number"),
    ({"seed": 2**64}, "'seed' must be a whole number"),
])
def test_tampered_metadata_is_named(tmp_path, meta, message):
    path = tmp_path / "s.npz"
    path.write_bytes(_npz_with(json.dumps(meta), {"bedrock": base}))
    with pytest.raises(UserError, match="this file is not a Terrain Erosion state") as info:
        load_state(path)
    assert str(path) in str(info.value)
    import re
    assert re.search(message, str(info.value)), str(info.value)


def test_states_written_by_this_version_still_load(tmp_path):
    t = Terrain.from_heights(fractal_terrain(12, seed=9), 3.0)
    path = save_state(tmp_path / "s.npz", t, {"seed": 5, "rounds_done": 4})
    again, meta = load_state(path)
    assert np.array_equal(again.bedrock, t.bedrock) and again.cell_size == 3.0
    assert meta["seed"] == 5 and meta["rounds_done"] == 4
    # and one written with plain numpy the way earlier versions did (np.savez_compressed)
    arrays = {**t.arrays(), "trees": t.trees, "height": t.world_height(),
              "metadata": np.array(json.dumps({"cell_size": 3.0, "outflow": 0.0,
                                               "seed": 5, "rounds_done": 4}))}
    np.savez_compressed(tmp_path / "old.npz", **arrays)
    old, _ = load_state(tmp_path / "old.npz")
    assert np.array_equal(old.bedrock, t.bedrock)


# -- presets ---------------------------------------------------------------------

toml_scalars = st.one_of(
    st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True,
                                                          allow_infinity=True),
    st.text(max_size=6), st.just([1, 2]))


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else
                                            "-inf" if v == -math.inf else repr(v))
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


tables = st.dictionaries(
    st.sampled_from(["preset", "simulation", "droplets", "snowball", "thermal", "wind",
                     "hydrology", "trees", "lava"]),
    st.dictionaries(st.sampled_from(["name", "description", "seed", "particles", "enabled",
                                     "Kq", "Kr", "Ki", "batch", "friction", "wobble",
                                     "sea_level", "spawn_tries"]), toml_scalars, max_size=5),
    max_size=4)


def _toml(doc: dict) -> bytes:
    lines = []
    for table, values in doc.items():
        lines.append(f"[{table}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in values.items()]
    return "\n".join(lines).encode("utf-8")


def _shipped_with(change: tuple[str, str, object] | None) -> bytes:
    """The default preset's text with one value replaced (or none)."""
    import tomllib

    from simcore.formats.presets import find_preset
    doc = tomllib.loads(find_preset("default").path.read_text())
    if change is not None:
        table, key, value = change
        doc.setdefault(table, {})[key] = value
    return _toml(doc)


preset_files = st.one_of(
    st.builds(_shipped_with, st.none() | st.tuples(
        st.sampled_from(["simulation", "droplets", "snowball"]),
        st.sampled_from(["seed", "particles", "Kq", "Kr", "batch", "enabled", "friction"]),
        toml_scalars | st.integers(0, 5) | st.floats(0, 1))),
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda t: t.encode("utf-8")),
    st.builds(_toml, tables),
    st.builds(lambda doc, junk: _toml(doc) + junk, tables, st.binary(min_size=1, max_size=4)),
)


@FUZZ
@given(data=preset_files)
def test_preset_reader(tmp_path, data):
    path = tmp_path / "p.toml"
    path.write_bytes(data)

    def read():
        p = load_preset(path)
        assert 0 <= p.seed < 2**63 and p.particles >= 0
        for params in p.params.values():
            for value in params.to_dict().values():
                assert not isinstance(value, float) or math.isfinite(value)
    _read("preset", read)


# -- CLI arguments ---------------------------------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    np.save(d / "good.npy", fractal_terrain(16, seed=1))
    nan = fractal_terrain(16, seed=1)
    nan[2, 3] = np.nan
    np.save(d / "nan.npy", nan)
    np.save(d / "line.npy", np.zeros(10))
    save_state(d / "state.npz", Terrain.from_heights(fractal_terrain(16, seed=2)), {"seed": 1})
    (d / "junk.npz").write_bytes(b"PK\x03\x04junk")
    (d / "folder.npy").mkdir()
    (d / "broken.toml").write_bytes(b"[droplets]\nKq = 1e400\n")
    return d


numbers = st.one_of(st.integers(-5, 40).map(str), st.sampled_from(
    ["nan", "inf", "-inf", "1e308", "-0", "2147483648", "9223372036854775807",
     "9223372036854775808", "abc", "", "3.5"]))
set_values = st.one_of(st.integers(-3, 2000).map(str), st.sampled_from(
    ["nan", "inf", "1e400", "true", "'x'", "[1]", "{", "0.5", "-1"]))
set_keys = st.sampled_from(["droplets.Kq", "droplets.Kr", "droplets.enabled", "seed",
                            "particles", "snowball.enabled", "snowball.friction", "lava.x",
                            "Kq", "", "droplets.", "thermal.enabled", "wind.enabled"])


def _arg_strategy(files: Path):
    inputs = st.sampled_from([str(files / n) for n in
                              ("good.npy", "nan.npy", "line.npy", "state.npz", "junk.npz",
                               "folder.npy", "missing.npy", "good.txt")])
    presets = st.sampled_from(["default", "quick_preview", "droplets_only", "nope",
                               str(files / "broken.toml"), "../etc/passwd"])
    common = {
        "--seed": numbers, "--cell-size": numbers, "--input": inputs, "--preset": presets,
        "--size": numbers, "--rows": numbers, "--cols": numbers, "--relief": numbers,
        "--particles": st.one_of(st.integers(-3, 3000).map(str),
                                 st.sampled_from(["0", "99999999999", "-1", "x"])),
        "--set": st.builds(lambda k, v: f"{k}={v}", set_keys, set_values),
    }
    per_command = {
        "generate": ["--size", "--rows", "--cols", "--seed", "--relief", "--cell-size"],
        "erode": ["--preset", "--input", "--cell-size", "--seed", "--particles", "--set",
                  "--set"],
        "shade": ["--input", "--cell-size"],
        "presets": [],
    }
    outputs = {"generate": ".npy", "erode": ".npz", "shade": ".png", "presets": ""}

    @st.composite
    def argv(draw):
        command = draw(st.sampled_from(list(per_command)))
        flags = (draw(st.lists(st.sampled_from(per_command[command]), max_size=5))
                 if per_command[command] else [])
        args = [command]
        for flag in flags:
            args += [flag, draw(common[flag])]
        if command in ("erode", "shade") and "--input" not in flags:
            args += ["--input", str(files / "good.npy")]
        if command == "erode" and "--particles" not in flags:
            args += ["--particles", "2000"]
        suffix = outputs[command]
        if suffix:
            args += ["--output", draw(st.sampled_from(
                [f"OUT{suffix}", f"OUT{suffix}", "OUT.txt", "folder.npy"]))]
        return args
    return argv()


def test_cli_arguments(files, tmp_path_factory):
    @FUZZ
    @given(argv=_arg_strategy(files))
    def run(argv):
        out_dir = tmp_path_factory.mktemp("out")
        argv = [str(out_dir / a) if a.startswith("OUT") else
                str(files / a) if a == "folder.npy" else a for a in argv]
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: usage and exit 2
            assert exc.code == 2
            OUTCOMES[("cli", "usage error")] += 1
            return
        assert code in (0, 2)
        written = [p for p in out_dir.iterdir()]
        assert not [p for p in written if p.name.endswith(".tmp")], "no temp left"
        if code == 2:
            OUTCOMES[("cli", "user error")] += 1
            assert written == [], "a refused command writes nothing"
            return
        OUTCOMES[("cli", "valid")] += 1
        for p in written:
            if p.suffix == ".npy":
                assert np.isfinite(np.load(p)).all()
            elif p.suffix == ".npz":
                _finite_terrain(load_state(p)[0])
            elif p.suffix == ".png":
                assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    run()
