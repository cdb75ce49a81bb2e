"""The descriptors are the single source: processes, terrain arrays, units, docs."""

from __future__ import annotations

import dataclasses
import json
import zipfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from simcore.engine.simulation import Simulation, process_params
from simcore.fields import CORE_FIELDS, KINDS, Field
from simcore.formats.presets import load_preset, preset_files
from simcore.formats.states import load_state, read_npz_arrays, save_state
from simcore.params import Params, is_legacy, param
from simcore.process import Process
from simcore.processes import FIELDS, PROCESSES
from simcore.terrain import StateFileError, Terrain, fields
from tools import docs


def shipped_names() -> set[str]:
    """The process names the shipped presets use: public (preset tables, the CLI's
    ``--set name.key``, the ``te_change_<name>`` layers), so each must stay a process."""
    return {name for path in preset_files().values() for name in load_preset(path).enabled}


def test_every_process_describes_itself_consistently():
    # a new process may come anywhere in the round without touching this test
    assert shipped_names() <= set(PROCESSES), "a shipped preset names an unknown process"
    assert any(p.enabled_by_default for p in PROCESSES.values()), \
        "a new terrain's settings run at least one process"
    streams = [p.stream for p in PROCESSES.values()]
    assert len(set(streams)) == len(streams), "each process has its own RNG stream"
    orders = [p.order for p in PROCESSES.values()]
    assert orders == sorted(set(orders))
    for p in PROCESSES.values():
        assert isinstance(p, Process)
        assert issubclass(p.params_type, Params) and dataclasses.is_dataclass(p.params_type)
        assert set(p.reads) <= set(FIELDS), p.name
        assert set(p.writes) <= set(FIELDS) | {"trees"}, p.name
        assert not any(FIELDS[n].input for n in p.writes if n in FIELDS), p.name
        for f in p.fields:  # an array it makes, or an input map it reads
            assert f.name in p.writes or (f.input and f.name in p.reads), \
                f"{p.name} declares '{f.name}' but never writes it"
        # standing water: a process that sets its depth says so; around every other
        # one the simulation keeps the water surfaces level (it would undo its writes)
        assert p.moves_water == ("pool" in p.writes), p.name


def test_legacy_parameters_are_marked_in_one_way():
    """A parameter kept only so that old presets and files load says so in its doc and
    carries the legacy mark (the add-on then shows it only where an old file set it);
    none else does."""
    legacy = {(name, f.name) for name, p in PROCESSES.items()
              for f in dataclasses.fields(p.params_type) if is_legacy(f)}
    documented = {(name, f.name) for name, p in PROCESSES.items()
                  for f in dataclasses.fields(p.params_type)
                  if f.metadata["doc"].startswith("legacy")}
    assert legacy == documented
    assert legacy == {("hydrology", "volume_factor"), ("hydrology", "max_tries"),
                      ("hydrology", "sea_level"), ("trees", "spread_radius"),
                      ("trees", "root_radius")}


def test_terrain_arrays_come_from_the_descriptors():
    assert fields() is FIELDS
    assert [f.name for f in CORE_FIELDS] == list(FIELDS)[:len(CORE_FIELDS)]
    t = Terrain.from_heights(np.zeros((4, 5)), 2.0)
    assert set(t.arrays()) == set(FIELDS)
    for name, f in FIELDS.items():
        assert f.kind in KINDS
        assert np.all(getattr(t, name) == f.default), name
    with pytest.raises(AttributeError):
        t.no_such_array  # noqa: B018


def test_a_state_names_the_unit_of_every_array(tmp_path):
    t = Terrain.from_heights(np.arange(20.0).reshape(4, 5), 3.0)
    path = save_state(tmp_path / "s.npz", t, {"seed": 1})
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(str(np.load(zf.open("metadata.npy"))))
    units = meta["units"]
    assert {n: units[n] for n in FIELDS} == {n: f.unit for n, f in FIELDS.items()}
    assert units["bedrock"] == "cell" and units["pool"] == "cell"
    assert units["stream"] == "0..1" and units["height"] == "world"
    assert meta["cell_size"] == 3.0


def test_states_written_before_units_were_a_mapping_still_load(tmp_path):
    t = Terrain.from_heights(np.arange(20.0).reshape(4, 5), 2.0)
    sim = Simulation(t, {"thermal": process_params("thermal")}, seed=3, particles=1)
    sim.run()
    old = tmp_path / "old.npz"
    meta = {**sim.metadata(), "cell_size": 2.0, "outflow": t.outflow,
            "units": "arrays in cell units (world / cell_size); 'height' in world units"}
    np.savez_compressed(old, **t.arrays(), trees=t.trees, height=t.world_height(),
                        metadata=np.array(json.dumps(meta)))
    back, meta_back = load_state(old)
    assert np.array_equal(back.bedrock, t.bedrock) and back.cell_size == 2.0
    assert meta_back["rounds_done"] == sim.rounds_done


def test_the_docs_tables_match_the_descriptors():
    assert docs.main(["--check"]) == 0, "run python -m tools.docs"


_arrays = st.dictionaries(
    st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.uint8,
                                np.bool_, np.dtype(">f8")]),
               hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)),
    max_size=4)


@given(arrays=_arrays, compressed=st.booleans(), fortran=st.booleans())
def test_thread_safe_npz_reader_matches_numpy(tmp_path_factory, arrays, compressed,
                                              fortran):
    path = tmp_path_factory.mktemp("npz") / "a.npz"
    if fortran:
        arrays = {k: np.asfortranarray(v) for k, v in arrays.items()}
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    got = read_npz_arrays(path)
    assert set(got) == set(arrays)
    for name, value in arrays.items():
        assert got[name].dtype == value.dtype and got[name].shape == value.shape
        assert got[name].tobytes() == value.tobytes()  # bit for bit, NaN included


def test_thread_safe_npz_reader_refuses_damage(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, z=np.arange(100.0))
    data = bytearray(path.read_bytes())
    start = data.index(b"\x93NUMPY")
    data[start + 20:start + 40] = b"{'descr': object,   "
    path.write_bytes(bytes(data))
    with pytest.raises((StateFileError, zipfile.BadZipFile)):
        read_npz_arrays(path)


def test_every_benchmark_module_gives_build_bench_its_rows():
    """``python build.py bench`` calls ``run(quick)`` of every benchmarks/bench_*.py
    (bench_landforms had none, so the whole table stopped there)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "benchmarks"
    modules = sorted(p for p in root.glob("bench_*.py"))
    assert modules
    for path in modules:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        runs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run"]
        assert runs, f"{path.name} has no run(quick)"
        assert [a.arg for a in runs[0].args.args][:1] == ["quick"], path.name


# ---------------------------------------------- a new process: its descriptor only


@dataclasses.dataclass(frozen=True)
class GlacialParams(Params):
    """The dry run of docs/architecture.md ("Adding a process"): ice that builds up."""

    snowfall: float = param(0.01, 0.0, 1.0, "cell", "ice laid down per pass")
    batch: int = param(1, 1, 100, "passes", "passes per batch")


def _glacial_batch(terrain, params, seed, first, count, height, cdf) -> int:
    terrain.ice += params.snowfall * count
    return count


GLACIAL = Process(
    "glacial", GlacialParams, _glacial_batch, "Glacial erosion", "ice builds up",
    order=70, stream=99, reads=("bedrock",), writes=("ice",),
    fields=(Field("ice", "depth", "ice thickness", lo=0.0, color="te_ice",
                  exact="te_ice_depth"),))


def test_a_new_process_is_named_in_its_descriptor_only(monkeypatch, tmp_path):
    """What ``simcore/processes/glacial.py`` ending with ``PROCESS = GLACIAL`` would
    bring (discovery puts it in PROCESSES and its array in FIELDS): the simulation,
    parameters, terrain arrays, water surfaces and states take it with no other edit."""
    monkeypatch.setitem(PROCESSES, "glacial", GLACIAL)
    monkeypatch.setitem(FIELDS, "ice", GLACIAL.fields[0])
    params = process_params("glacial", {"snowfall": 0.5})
    z = np.zeros((6, 6))
    z[2, 2] = 8.0  # a spike that slides into the lake beside it
    t = Terrain.from_heights(z, 2.0)
    t.pool[2, 3] = 3.0  # the lake keeps its surface: neither process moves water
    ground = t.height()[2, 3]
    sim = Simulation(t, {"glacial": params, "thermal": process_params("thermal")},
                     seed=1, particles=3)
    sim.run()
    assert sim.rounds_done == 2 and np.all(t.ice == 1.0)
    assert t.height()[2, 3] > ground and t.pool[2, 3] < 3.0
    assert t.height()[2, 3] + t.pool[2, 3] == pytest.approx(ground + 3.0, abs=1e-12)
    assert set(t.changes) == {"glacial", "thermal"}
    back, meta = load_state(save_state(tmp_path / "g.npz", t, sim.metadata()))
    assert np.array_equal(back.ice, t.ice) and meta["units"]["ice"] == "cell"
    assert meta["processes"]["glacial"]["snowfall"] == 0.5


def test_a_new_process_runs_in_a_tiled_world_with_no_other_edit(monkeypatch, tmp_path):
    """The same descriptor in a 2x2 tiled run (simcore/distributed/tiles.py reads what
    runs where from the descriptors): every tile lays down its ice, the blend keeps it
    where the tiles overlap, and the store holds the new array."""
    pytest.importorskip("distributed")
    pytest.importorskip("zarr")
    from distributed import Client

    from simcore.distributed import tiles
    from simcore.formats.presets import Preset

    monkeypatch.setitem(PROCESSES, "glacial", GLACIAL)
    monkeypatch.setitem(FIELDS, "ice", GLACIAL.fields[0])
    params = process_params("glacial", {"snowfall": 0.25})
    preset = Preset("dry run", seed=4, particles=3, params={"glacial": params},
                    enabled={"glacial": True})
    z = np.add.outer(np.arange(80.0), np.arange(72.0)) * 0.1
    # in this process (the monkeypatched registry is this process's): threads, no workers
    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=None) as client:
        info = tiles.run_world(Terrain.from_heights(z, 30.0), preset, tmp_path / "w.zarr",
                               client, (2, 2), margin=32, quiet=True)
    assert info["rounds"] == 3 and set(info["detail"]) == {"glacial"}
    world, _ = tiles.load_world(tmp_path / "w.zarr")
    assert world.shape == (80, 72)
    np.testing.assert_allclose(world.ice, 3 * 0.25, rtol=0, atol=1e-12)
    # the ground is untouched: the blend of equal tiles gives it back (to rounding)
    np.testing.assert_allclose(world.bedrock, Terrain.from_heights(z, 30.0).bedrock,
                               rtol=0, atol=1e-12)


def test_operators_report_user_errors_through_one_boundary():
    """``except UserError as exc: self.report({'ERROR'}, str(exc))`` lives in
    addon/ui/boundary.py only: every operator catches the same errors and reports them the
    same way (the ridges operator once caught two kinds only)."""
    import ast
    from pathlib import Path

    def reports_caught(handler: ast.ExceptHandler) -> bool:
        for node in ast.walk(handler):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "report"):
                for arg in ast.walk(node):
                    if (isinstance(arg, ast.Call) and getattr(arg.func, "id", "") == "str"
                            and arg.args and getattr(arg.args[0], "id", None) == handler.name):
                        return True
        return False

    addon = Path(__file__).resolve().parents[2] / "addon"
    found = set()
    for path in sorted(addon.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.ExceptHandler) and n.name and reports_caught(n)
               for n in ast.walk(tree)):
            found.add(path.name)
    assert found == {"boundary.py"}
