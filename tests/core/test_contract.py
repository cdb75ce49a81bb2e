"""The contract every terrain process keeps, and the one mass primitive,
``kernels.transfer``, it moves material with.

Every process in ``simulation.PROCESSES`` is run with its default parameters and with
the parameters of a shipped preset (the one that enables it, else the one whose table
for it is tuned furthest from the defaults), batches capped so a run stays small, on
small generated terrains. A new process is picked up without editing this file.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simcore.engine.simulation import PROCESSES, Simulation, process_params
from simcore.formats.presets import load_preset, preset_files
from simcore.generators import ridges as dla
from simcore.generators.noise import fractal_terrain
from simcore.kernels import parallel
from simcore.kernels.primitives import exchange, put_at, put_bilinear, take, transfer
from simcore.processes import FIELDS
from simcore.rock import RockColumn
from simcore.terrain import Terrain

NAMES = list(PROCESSES)
GROUND = ("bedrock", "sediment", "eroded", "deposited")
BATCH_CAP = 48  # particles (or passes, cycles) per batch: small runs, several rounds
ROUNDS = 3


def written(name: str) -> set[str]:
    """The terrain arrays (and ``trees``) process ``name`` declares it writes."""
    return set(PROCESSES[name].writes)


# ------------------------------------------------------------------ the primitive

amount = st.floats(0.0, 1e3)


@settings(max_examples=200)
@given(rock=st.floats(-1e3, 1e3), sed=amount, ero=amount, dep=amount,
       share=st.floats(0.0, 1.0), from_rock=amount, lay=amount,
       write_height=st.booleans())
def test_transfer_moves_exactly_what_it_is_given_and_books_it(
        rock, sed, ero, dep, share, from_rock, lay, write_height):
    n, k = 3, 1
    b = np.full(n, rock)
    s = np.full(n, sed)
    e = np.full(n, ero)
    d = np.full(n, dep)
    h = np.full(n, -7.0)
    from_sed = min(share * sed, sed)
    removed = transfer(k, from_sed, from_rock, lay, h if write_height else None, b, s, e, d)
    assert removed == from_sed + from_rock
    assert s[k] == (sed - from_sed) + lay and s[k] >= 0.0, "no negative sediment"
    assert b[k] == rock - from_rock
    assert h[k] == (b[k] + s[k] if write_height else -7.0), "height = bedrock + sediment"
    # bookkeeping: what is removed cancels earlier deposits here first, then is eroded
    assert d[k] == max(dep - removed, 0.0) + lay
    assert e[k] == ero + max(removed - dep, 0.0)
    tol = 1e-12 * (abs(ero) + dep + removed + lay + 1.0)
    assert abs((e[k] - d[k]) - (ero - dep) - (removed - lay)) <= tol
    assert abs((b[k] + s[k]) - (rock + sed) - (lay - removed)) <= 1e-12 * (
        abs(rock) + sed + removed + lay + 1.0), "the ground changes by lay - removed"
    for a, v in ((b, rock), (s, sed), (e, ero), (d, dep)):
        assert a[0] == v and a[2] == v, "other cells untouched"


@settings(max_examples=100)
@given(grid=arrays(np.float64, (4, 5), elements=st.floats(0.0, 50.0)),
       rock=st.floats(-50.0, 50.0), dig=amount, lay=amount,
       erodibility=st.floats(0.0, 10.0), r=st.integers(0, 3), c=st.integers(0, 4))
def test_exchange_take_and_put_are_transfer(grid, rock, dig, lay, erodibility, r, c):
    """The helpers the particle kernels use are the primitive, bit for bit, on 2-D
    grids (tuple cells) and 1-D views (flat cells); a particle never takes more rock
    than it asked for."""
    def state():  # height, bedrock, sediment, eroded, deposited, erodibility
        return (grid + rock + grid, grid + rock, grid.copy(), grid.copy(), grid * 0.5,
                np.full(grid.shape, erodibility))

    h, b, s, e, d, er = state()
    got = exchange((r, c), dig, lay, h, b, s, e, d, er)
    h2, b2, s2, e2, d2, _ = state()
    from_sed = min(dig, grid[r, c])
    # rock gives at most what sediment would (erodibility above 1 counts as 1)
    want = transfer((r, c), from_sed, (dig - from_sed) * min(erodibility, 1.0), lay, h2, b2,
                    s2, e2, d2)
    assert got == want
    for x, y in ((h, h2), (b, b2), (s, s2), (e, e2), (d, d2)):
        assert np.array_equal(x, y)
    assert s.min() >= 0.0 and h[r, c] == b[r, c] + s[r, c]

    h, b, s, e, d, er = state()
    h2, b2, s2, e2, d2, er2 = state()
    assert take(r, c, dig, h, b, s, e, d, er) == exchange(
        r * 5 + c, dig, 0.0, h2.reshape(-1), b2.reshape(-1), s2.reshape(-1),
        e2.reshape(-1), d2.reshape(-1), er2.reshape(-1))
    put_at((r, c), lay, h, b, s, d)
    transfer(r * 5 + c, 0.0, 0.0, lay, h2.reshape(-1), b2.reshape(-1), s2.reshape(-1),
             e2.reshape(-1), d2.reshape(-1))
    for x, y in ((h, h2), (b, b2), (s, s2), (e, e2), (d, d2)):
        assert np.array_equal(x, y)


@given(x=st.floats(0.0, 3.999), y=st.floats(0.0, 2.999), lay=amount)
def test_bilinear_deposit_lays_the_whole_amount(x, y, lay):
    h, b, s, d = (np.zeros((4, 5)) for _ in range(4))
    put_bilinear(x, y, lay, h, b, s, d)
    assert s.sum() == pytest.approx(lay, rel=1e-12, abs=1e-300)
    assert np.array_equal(d, s) and np.array_equal(h, b + s) and s.min() >= 0.0


_HAND_WRITE = re.compile(
    r"(?:\b(?:bedrock|sediment|eroded|deposited|bf|sf|sedf|ef|df)\s*\[[^\]\n]*\]"
    r"|\bterrain\.(?:bedrock|sediment|eroded|deposited)(?:\s*\[[^\]\n]*\])?)"
    r"\s*(?:[-+*/]|\*\*)?=(?!=)")


@pytest.mark.parametrize("name", NAMES)
def test_processes_move_material_only_through_the_primitive(name):
    """No process module writes bedrock, sediment or the eroded/deposited records by
    hand (the protect mask's hold-back in simulation.py is not a process)."""
    module = sys.modules[PROCESSES[name].run_batch.__module__]
    source = Path(module.__file__).read_text()
    hits = [source.count("\n", 0, m.start()) + 1 for m in _HAND_WRITE.finditer(source)]
    assert not hits, f"{module.__name__} writes ground arrays by hand at lines {hits}"


def test_the_hand_write_check_sees_a_hand_write():
    assert _HAND_WRITE.search("        sediment[r, c] += gain")
    assert _HAND_WRITE.search("    terrain.bedrock[...] = rock")
    assert _HAND_WRITE.search("    terrain.eroded += x")
    assert not _HAND_WRITE.search("    s = sediment[k]")
    assert not _HAND_WRITE.search("    if sediment[k] == 0.0:")


# ----------------------------------------------------------------- the processes

def _preset_params(name: str):
    """Params of the shipped preset for ``name``: one that enables it if any, else the
    table tuned furthest from the defaults; None when no preset has a table."""
    default = process_params(name).to_dict()
    best, key = None, None
    for path in sorted(preset_files().values()):
        preset = load_preset(path)
        if name not in preset.params:
            continue
        params = preset.params[name]
        tuned = sum(v != default[f] for f, v in params.to_dict().items())
        rank = (bool(preset.enabled.get(name)), tuned)
        if key is None or rank > key:
            best, key = params, rank
    return best


def _capped(params):
    return params.replace(batch=min(int(params.batch), BATCH_CAP))


CASES = [(n, "defaults", _capped(process_params(n)), 1.0) for n in NAMES]
CASES += [(n, "preset", _capped(p), 30.0) for n in NAMES
          if (p := _preset_params(n)) is not None]
IDS = [f"{n}-{v}" for n, v, _, _ in CASES]


def column(heights, cell: float) -> RockColumn:
    """A rock column cut by the terrain ``heights`` (cell units): hard, soft and very soft
    layers a fifth of the relief thick, with critical angles, tilted, folded, faulted and
    wobbled."""
    relief = max(float(np.ptp(heights)) * cell, 1e-3)
    span = heights.shape[1] * cell
    return RockColumn.from_dict({
        "layers": [{"thickness": relief / 5, "erodibility": 0.2, "rock_angle": 60.0},
                   {"thickness": relief / 4, "erodibility": 1.5},
                   {"thickness": relief / 6, "erodibility": 4.0, "rock_angle": 25.0}],
        "top": float(heights.max()) * cell, "dip": 20.0, "dip_direction": 30.0,
        "fold_amplitude": relief / 3, "fold_wavelength": span / 2, "fold_axis": 100.0,
        "fault_throw": relief / 4, "fault_strike": 10.0, "fault_dip": 60.0,
        "noise_amplitude": relief / 10, "noise_wavelength": span / 3, "seed": 5})


def terrain(rows: int, cols: int, seed: int, cell: float, *, protect: bool = True,
            wet: bool = False, rock: bool = False) -> Terrain:
    """A generated terrain (cell units) with patchy soil, varied erodibility and rain,
    and a protect mask: a fully protected block and a half protected band; with
    ``rock``, a rock column below it (:func:`column`)."""
    rng = np.random.default_rng(seed)
    heights = fractal_terrain(rows, cols, seed=seed % 997)
    arrays_ = {
        "sediment": np.where(rng.random((rows, cols)) < 0.6, rng.random((rows, cols)), 0.0),
        "erodibility": rng.uniform(0.3, 1.5, (rows, cols)),
        "rain": rng.uniform(0.2, 1.0, (rows, cols)),
    }
    if protect:
        mask = np.zeros((rows, cols))
        mask[rows // 4: rows // 2, cols // 4: cols // 2] = 1.0
        mask[-3:-1, :] = 0.5
        arrays_["protect"] = mask
    if wet:  # every other array holds something, so leaving it untouched means something
        for field in ("stream", "wind", "vegetation", "tree_seeding"):
            arrays_[field] = rng.random((rows, cols))
        arrays_["pool"] = np.where(rng.random((rows, cols)) < 0.1, rng.random((rows, cols)),
                                   0.0)
    t = Terrain.from_heights(heights, cell, world_units=False,
                             rock=column(heights, cell) if rock else None, **arrays_)
    t.trees = np.column_stack([rng.uniform(0, cols - 1, 5), rng.uniform(0, rows - 1, 5),
                               rng.uniform(0.1, 1.0, 5)])
    return t


def snapshot(t: Terrain, sim: Simulation | None = None) -> dict[str, object]:
    out: dict[str, object] = {n: a.copy() for n, a in t.arrays().items()}
    out["trees"] = t.trees.copy()
    out["outflow"] = t.outflow
    if sim is not None:
        out["protect_held"] = sim.protect_held
    return out


def run(t: Terrain, name: str, params, seed: int, rounds: int = ROUNDS) -> Simulation:
    sim = Simulation(t, {name: params}, seed=seed, particles=rounds * int(params.batch))
    sim.run()
    # a process with a fixed amount of work (Process.passes: the landscape's age) may
    # take more rounds; past its work a round does nothing
    assert sim.rounds_done == rounds or (
        PROCESSES[name].passes is not None and sim.rounds_done > rounds)
    return sim


def assert_same(a: dict, b: dict, what: str) -> None:
    for field, value in a.items():
        assert np.array_equal(value, b[field]), f"{field} differs ({what})"


@pytest.mark.parametrize("name,variant,params,cell", CASES, ids=IDS)
@settings(max_examples=10)
@given(seed=st.integers(0, 2**63 - 1), rows=st.integers(6, 24), cols=st.integers(6, 24),
       rock=st.booleans())
def test_conserves_mass_stays_finite_and_respects_protect(name, variant, params, cell, seed,
                                                          rows, cols, rock):
    """(a) total material + outflow - protect_held is the start, and the eroded /
    deposited records explain each cell's change; (c) no NaN/inf; (d) cells with
    protect 1 keep their ground bit for bit; with or without a rock column."""
    t = terrain(rows, cols, seed, cell, rock=rock)
    t0 = t.copy()
    sim = run(t, name, params, seed)
    for field, a in t.arrays().items():
        assert np.all(np.isfinite(a)), field
    assert np.all(np.isfinite(t.trees)) and np.isfinite(t.outflow)
    assert np.isfinite(sim.protect_held)
    came_in = float((t.sources() - t0.sources()).sum())  # uplift
    budget = (t.total_material() + t.outflow - sim.protect_held - came_in
              - t0.total_material())
    assert abs(budget) <= 1e-9 * (np.abs(t0.bedrock).sum() + t0.sediment.sum() + t.bedrock.size
                                  + abs(came_in))
    assert t.sediment.min() >= 0.0
    # cell by cell, the eroded/deposited records explain the change of the ground
    d_ground = t.height() - t0.height()
    d_records = (t.eroded - t.deposited) - (t0.eroded - t0.deposited)
    d_source = t.sources() - t0.sources()
    assert np.abs(d_ground + d_records - d_source).max() <= 1e-9 * (np.abs(t0.height()).max() + 1.0)
    assert t.eroded.min() >= 0.0 and t.deposited.min() >= 0.0
    full = t.protect >= 1.0
    assert full.any()
    for field in set(GROUND) | {f for f in FIELDS if FIELDS[f].source}:
        assert np.array_equal(getattr(t, field)[full], getattr(t0, field)[full]), field


@pytest.mark.parametrize("name,variant,params,cell", CASES, ids=IDS)
def test_deterministic_for_any_thread_count_and_slicing(name, variant, params, cell):
    """(b) one seed, one result: on 1 and 2 threads, in one run, one round per call and
    resumed from a saved round count; bit for bit."""
    seed = 2**40 + 17
    per_round = int(params.batch)
    results = {}
    old = parallel.threads()
    try:
        for threads in (1, min(2, parallel.most_threads())):
            parallel.set_threads(threads)
            t = terrain(24, 20, 5, cell, rock=True)
            sim = run(t, name, params, seed)
            results[f"{threads} thread(s), one run"] = snapshot(t, sim)
        t = terrain(24, 20, 5, cell, rock=True)
        sim = Simulation(t, {name: params}, seed=seed, particles=ROUNDS * per_round)
        while not sim.advance(0.0).done:
            pass
        results["a round per call"] = snapshot(t, sim)
        t = terrain(24, 20, 5, cell, rock=True)
        first = Simulation(t, {name: params}, seed=seed, particles=ROUNDS * per_round)
        first.advance(0.0)  # one round, saved; the rest resumes from its count
        assert first.rounds_done == 1
        rest = Simulation(t, {name: params}, seed=seed, particles=(ROUNDS - 1) * per_round,
                          rounds_done=1)
        rest.run()
        resumed = snapshot(t)
        resumed["protect_held"] = first.protect_held + rest.protect_held
        results["resumed after one round"] = resumed
    finally:
        parallel.set_threads(old)
    (label0, ref), *others = results.items()
    for label, res in others:
        held = res.pop("protect_held")
        assert held == pytest.approx(ref["protect_held"], rel=1e-12, abs=1e-12)
        assert_same({k: v for k, v in ref.items() if k != "protect_held"}, res,
                    f"{label0} vs {label}")
    start = snapshot(terrain(24, 20, 5, cell, rock=True))
    assert any(not np.array_equal(start[f], ref[f]) for f in set(GROUND) | written(name)), \
        "the process did something (else the comparison proves nothing)"


@pytest.mark.parametrize("name,variant,params,cell", CASES, ids=IDS)
def test_leaves_what_it_does_not_write_untouched(name, variant, params, cell):
    """(e) every array outside the process's declared writes keeps its values bit for
    bit (a batch run directly, no Simulation bookkeeping), and the height it is handed
    stays bedrock + sediment."""
    t = terrain(20, 18, 11, cell, protect=False, wet=True)
    before = snapshot(t)
    height = t.height()
    PROCESSES[name].run_batch(t, params, 3, 0, int(params.batch), height, None)
    after = snapshot(t)
    kept = set(before) - written(name) - {"outflow"}
    assert_same({f: before[f] for f in kept}, after, f"{name} must not write it")
    assert np.array_equal(height, t.bedrock + t.sediment), "height kept in step"
    if not written(name) & set(GROUND):
        assert after["outflow"] == before["outflow"]
    assert set(written(name)) <= set(before), "writes names real terrain arrays"


def test_rng_streams_are_distinct():
    """(f) every process (and the DLA ridges) draws from its own stream family."""
    ids = {}
    for name in NAMES:
        ids[name] = PROCESSES[name].stream
    ids["ridges (dla)"] = dla.STREAM_ID
    assert len(set(ids.values())) == len(ids), ids


def test_every_process_has_a_case():
    assert {n for n, *_ in CASES} == set(NAMES)
    assert {"droplets", "snowball", "wind", "hydrology", "thermal", "trees"} <= set(NAMES)
