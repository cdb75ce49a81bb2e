"""Tiled worlds on dask.distributed: seamless tiles, world-keyed particles,
re-runs after a lost worker that change nothing, the Zarr store read tile by tile."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("distributed")
pytest.importorskip("zarr")

from simcore.distributed import tiles  # noqa: E402
from simcore.errors import OutputPathError  # noqa: E402
from simcore.formats.presets import find_preset  # noqa: E402
from simcore.terrain import Terrain  # noqa: E402

CELL = 30.0
SIZE = 256
#: the default preset with a tenth of its rain on this world (8 rounds): enough to carve
PRESET = {"particles": 20_000}


def preset():
    return find_preset("default").with_overrides(PRESET)


@pytest.fixture(scope="module")
def world():
    """256x256 drained uplands of 30 m cells (world units)."""
    from simcore.generators.uplands import drained_uplands
    return drained_uplands(SIZE, seed=3, cell_size=CELL)


@pytest.fixture(scope="module")
def client():
    from simcore.distributed.cluster import client as make_client
    with make_client(workers=2, threads=1, quiet=True) as c:
        yield c


@pytest.fixture(scope="module")
def runs(world, client, tmp_path_factory):
    """The default preset on the world untiled (one tile: the same particles, no cut)
    and in 2x2 tiles."""
    from concurrent.futures import ThreadPoolExecutor
    base = tmp_path_factory.mktemp("tiles")
    out = {n: base / f"w{n}.zarr" for n in (1, 2)}

    def run(n):  # both at once: the one-tile run is one task, on one worker
        tiles.run_world(Terrain.from_heights(world, CELL), preset(), out[n], client,
                        (n, n), quiet=True)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(run, out))
    return out


def test_blend_weights_add_up_to_one():
    plan = tiles.make_plan((100, 90), (3, 2), 32)
    for axis in (0, 1):
        x = np.arange(plan.shape[axis], dtype=float)
        total = sum(tiles.axis_weight(x, core, plan.shape[axis], plan.margin)
                    for core in plan.cores(axis))
        np.testing.assert_allclose(total, 1.0, atol=1e-12)
        for (a, b), (ea, eb) in zip(plan.cores(axis), plan.extents(axis)):
            w = tiles.axis_weight(x, (a, b), plan.shape[axis], plan.margin)
            assert not w[:ea].any() and not w[eb:].any()  # never beyond its extent


def test_the_default_margin_is_an_eighth_of_the_map_whatever_the_tiles():
    """Droplets run up to the map's side, so the default margin follows the map, not
    the tile: 4x4 tiles of 2048² with a quarter-tile margin (128) changed the land at
    r 0.967 against one tile, with side / 8 (256) at 0.987 (docs/tiles.md)."""
    for shape, tl, want in (((256, 256), (2, 2), 64), ((512, 512), (4, 4), 64),
                            ((1024, 1024), (4, 4), 128), ((1024, 1024), (2, 2), 128),
                            ((2048, 2048), (2, 2), 256), ((2048, 2048), (4, 4), 256),
                            ((2048, 2048), (16, 16), 128),  # at most a tile core
                            ((300, 2048), (1, 4), 256)):  # the longer side counts
        assert tiles.make_plan(shape, tl, None).margin == want, (shape, tl)


def test_a_margin_below_32_is_refused_and_every_block_lies_inside_a_tile():
    """A block straddling a tile border must fit in one tile's extent, or its particles
    never run: with blocks of at least 16 squares that takes margins of 32 or more
    (64² in 3x3 tiles with --margin 4 lost the blocks of rows 16..48)."""
    cut = tiles.Plan((64, 64), (3, 3), (22, 22), 4)  # what make_plan accepted before
    assert (0, (16, 32)) in tiles.uncovered_blocks(cut)
    with pytest.raises(tiles.TileError, match="under 32 cells"):
        tiles.make_plan((64, 64), (3, 3), 4)
    for margin in (4, 7, 8, 16, 31):
        with pytest.raises(tiles.TileError, match="--margin must be 32"):
            tiles.make_plan((256, 256), (3, 3), margin)
    for shape in ((256, 256), (300, 211), (97, 1000)):
        for tr, tc in ((1, 1), (2, 3), (3, 2), (1, 5)):
            try:
                plan = tiles.make_plan(shape, (tr, tc), None)
            except tiles.TileError:
                continue
            for margin in sorted({32, 33, 47, 64, 100, 129, min(plan.core)}):
                if margin <= min(plan.core):
                    p = tiles.make_plan(shape, (tr, tc), margin)
                    assert tiles.block_size(p.margin) * 2 <= p.margin
                    assert tiles.uncovered_blocks(p) == [], (shape, tr, tc, margin)


def test_tiles_reads_columns_by_rows_as_engine_tiles():
    from simcore.errors import CliError
    from simcore.pipeline.arguments import tiles as tiles_arg

    assert tiles_arg("3x2") == (3, 2)  # 3 across, 2 down
    assert (tiles_arg("3x2").across, tiles_arg("3x2").down) == (3, 2)
    assert tiles_arg("4") == (4, 4)
    with pytest.raises(CliError, match="XxY"):
        tiles_arg("ax2")


def _fake_store(path, fmt):
    import zarr
    root = zarr.open_group(str(path), mode="w")
    root.create_dataset("height", data=np.arange(12.0).reshape(3, 4))
    root.attrs["format"] = fmt


def test_a_failed_run_leaves_the_previous_store_as_it_was(world, monkeypatch, tmp_path):
    import zarr

    from simcore.distributed import cluster
    store = tmp_path / "w.zarr"
    _fake_store(store, tiles.STORE_FORMAT)
    before = sorted((p.relative_to(store), p.read_bytes()) for p in store.rglob("*")
                    if p.is_file())
    seen = []

    def interrupted(client, fn, items, label, quiet=False, **kw):
        root = zarr.open_group(str(items[0][0]), mode="r")
        assert "trees" in root["work"]  # made before tasks add to it at once (no race)
        seen.append(root.attrs["format"])
        raise KeyboardInterrupt

    monkeypatch.setattr(cluster, "run_tasks", interrupted)
    terrain = Terrain.from_heights(world[:64, :64], CELL)
    with pytest.raises(KeyboardInterrupt):
        tiles.run_world(terrain, preset(), store, None, (1, 1), quiet=True)
    assert seen == [tiles.STORE_FORMAT]  # it got as far as a prepared store
    after = sorted((p.relative_to(store), p.read_bytes()) for p in store.rglob("*")
                   if p.is_file())
    assert after == before
    assert not tiles.partial_path(store).exists()
    # a Zarr store that is not a tiled world is never replaced
    other = tmp_path / "other.zarr"
    _fake_store(other, "something else")
    with pytest.raises(OutputPathError, match="not a tiled world"):
        tiles.run_world(terrain, preset(), other, None, (1, 1), quiet=True)
    assert zarr.open_group(str(other), mode="r").attrs["format"] == "something else"
    assert seen == [tiles.STORE_FORMAT]


def test_output_folders_that_cannot_be_made_are_one_line_before_a_cluster(world, tmp_path,
                                                                          capsys):
    from simcore.cli.main import main
    src = tmp_path / "w.npy"
    np.save(src, world[:64, :64])
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    for extra in (["--output", str(blocker / "w.zarr")],
                  ["--output", str(tmp_path / "ok.zarr"), "--heightmap-tiles",
                   str(blocker / "ht")]):
        code = main(["tile", "--input", str(src), "--cell-size", "30", "--tiles", "1",
                     "--workers", "1", "--quiet", *extra])
        err = capsys.readouterr().err
        assert code == 2 and "cannot create the folder" in err and "dask" not in err, err
    assert not (tmp_path / "ok.zarr").exists()


def test_a_particle_in_an_overlap_starts_at_the_same_world_point_in_both_tiles():
    from simcore.kernels.primitives import start_position, stream_state
    rng = np.random.default_rng(1)
    rain = rng.uniform(0.5, 2.0, (200, 200))  # uneven rain: a weighted start
    block = (2, 3)  # world squares 64..95 x 96..127
    sr, sc = (64, 96), (96, 128)
    starts = []
    for r0, c0 in ((0, 0), (40, 20)):  # two tiles whose extents hold the block
        w = tiles.square_weights(rain[r0:r0 + 150, c0:c0 + 140])
        cdf = tiles.block_cdf(w, (sr[0] - r0, sr[1] - r0), (sc[0] - c0, sc[1] - c0))
        seed = tiles.block_seed(7, *block)
        pts = []
        for k in range(50):
            st = stream_state(np.uint64(seed), np.uint64(1), np.uint64(k))
            _, x, y = start_position(np.uint64(st), cdf, 150, 140)
            pts.append((y + r0, x + c0))
        starts.append(np.array(pts))
    # the same square and the same offsets in it (the sums with the tile's origin round
    # differently in the last bit)
    np.testing.assert_array_equal(np.floor(starts[0]), np.floor(starts[1]))
    np.testing.assert_allclose(starts[0], starts[1], rtol=0, atol=1e-12)
    assert (starts[0][:, 0] >= 64).all() and (starts[0][:, 0] < 96).all()
    assert (starts[0][:, 1] >= 96).all() and (starts[0][:, 1] < 128).all()


def test_block_cdfs_in_one_buffer_are_each_blocks_own():
    """A tile's block cdfs made in turn in one buffer (BlockCdfs) are, bit for bit, the
    cdfs made anew (block_cdf): nothing of the block before is left in the buffer."""
    rng = np.random.default_rng(2)
    w = tiles.square_weights(rng.uniform(0.0, 2.0, (97, 83)))
    cdfs = tiles.BlockCdfs(w)
    blocks = [((32, 64), (0, 32)), ((0, 32), (32, 64)), ((64, 96), (64, 82)),
              ((32, 64), (32, 64)), ((0, 32), (0, 32)), ((64, 96), (0, 32))]
    for sr, sc in blocks + blocks[::-1]:
        got = cdfs.cdf(sr, sc)
        want = tiles.block_cdf(w, sr, sc)
        np.testing.assert_array_equal(got, want)
        assert got[-1] > 0.0
    assert cdfs.buffer[cdfs.written[1]:].max() == 0.0


def _steps(h):
    return np.abs(np.diff(h, axis=1)), np.abs(np.diff(h, axis=0))


def test_tiled_matches_untiled_and_shows_no_seam(world, runs):
    untiled, _ = tiles.load_world(runs[1])
    tiled, attrs = tiles.load_world(runs[2])
    start = world / CELL
    dh1, dh2 = untiled.height() - start, tiled.height() - start
    assert np.abs(dh2).mean() > 0.05  # it eroded
    r = np.corrcoef(dh1.ravel(), dh2.ravel())[0, 1]
    assert r >= 0.98, r
    h = tiled.height() * CELL
    dx, dy = _steps(h)
    plan = tiles.Plan(tuple(attrs["shape"]), (2, 2), tuple(attrs["core"]), 0)
    cols = [b - 1 for _, b in plan.cores(1)[:-1]]  # steps from the last column of a core
    rows = [b - 1 for _, b in plan.cores(0)[:-1]]
    inside = np.concatenate([np.delete(dx, cols, axis=1).ravel(),
                             np.delete(dy, rows, axis=0).ravel()])
    p99 = np.percentile(inside, 99)
    for steps, k in [(dx, c) for c in cols] + [(dy.T, r_) for r_ in rows]:
        across = steps[:, k]  # the height steps across this tile border
        # typical steps there are no larger than the interior's 99th percentile ...
        assert np.percentile(across, 95) <= p99, (k, np.percentile(across, 95), p99)
        assert across.max() <= inside.max()
        # ... and no larger than on the lines beside the border: no ridge, no ditch
        beside = np.concatenate([steps[:, k - 6:k - 1], steps[:, k + 2:k + 7]], axis=1)
        assert across.mean() <= 1.25 * beside.mean(), (k, across.mean(), beside.mean())
    assert np.isfinite(h).all()


def test_the_store_reads_tile_by_tile(runs, tmp_path):
    import zarr
    root = zarr.open_group(str(runs[2]), mode="r")
    assert root["height"].chunks == (128, 128)
    assert root.attrs["tiles"] == [2, 2] and "work" not in root
    whole = root["height"][...]
    np.testing.assert_array_equal(root["height"][128:256, 0:128], whole[128:, :128])
    files = tiles.write_heightmap_tiles(runs[2], tmp_path / "ht", "npy")
    assert len(files) == 4
    np.testing.assert_array_equal(np.load(tmp_path / "ht" / "tile_r1_c0.npy"),
                                  whole[128:, :128])
    png = tiles.write_heightmap_tiles(runs[2], tmp_path / "png", "png")
    assert png[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_killed_worker_leaves_the_result_bit_identical(world, runs, client, tmp_path):
    pids = client.run(os.getpid)
    killed: list = []

    def tile_tasks(keys):
        return [k for k in keys if "tile_task" in str(k)]

    def killer():
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline:
            for addr, keys in client.processing().items():
                if tile_tasks(keys) and addr in pids:
                    time.sleep(0.05)  # into the tile
                    # the tile it holds now: a short tile may have ended meanwhile (a
                    # tile takes well under a second), and a kill then re-runs the next
                    running = tile_tasks(client.processing().get(addr, ()))
                    if running:
                        os.kill(pids[addr], signal.SIGKILL)
                        killed.append(running[0])
                    break
            time.sleep(0.02)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    store = tmp_path / "again.zarr"
    tiles.run_world(Terrain.from_heights(world, CELL), preset(), store, client, (2, 2),
                    quiet=True)
    thread.join()
    assert killed, "no worker was killed mid-run"
    # the scheduler sent the killed worker's tile to a worker again
    story = client.story(killed[0])
    assert sum(1 for t in story if len(t) > 2 and t[2] == "processing") >= 2, story
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it
    a, _ = tiles.load_world(runs[2])
    b, _ = tiles.load_world(store)
    for name, arr in a.arrays().items():
        np.testing.assert_array_equal(arr, getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.trees, b.trees)
    # and the same bytes: every chunk file of the store (attributes hold the seconds)
    chunks = sorted(p.relative_to(runs[2]) for p in runs[2].rglob("*")
                    if p.is_file() and p.name != ".zattrs")
    assert chunks == sorted(p.relative_to(store) for p in store.rglob("*")
                            if p.is_file() and p.name != ".zattrs")
    for rel in chunks:
        assert (runs[2] / rel).read_bytes() == (store / rel).read_bytes(), rel


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(24, 200), cols=st.integers(24, 200), f=st.integers(2, 6),
       br=st.integers(1, 40), bc=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_the_coarse_copy_built_window_by_window_is_the_whole_maps(rows, cols, f, br, bc,
                                                                   seed):
    """The global stage's coarse copy, read one window at a time, and the change
    interpolated back on one tile's window: bit for bit what the whole map gives."""
    a = np.random.default_rng(seed).normal(0.0, 100.0, (rows, cols))
    whole = tiles._downsample(a, f)
    np.testing.assert_array_equal(tiles.downsample_blocks(a, f, (br, bc)), whole)
    up = tiles._upsample(whole, f, (rows, cols))
    r0, c0 = rows // 3, cols // 5
    win = tiles._upsample(whole, f, (rows, cols), (r0, rows - 1), (c0, cols))
    np.testing.assert_array_equal(win, up[r0:rows - 1, c0:])


def test_the_block_weights_read_by_rows_of_blocks_are_the_whole_maps():
    rain = np.random.default_rng(2).uniform(0.2, 3.0, (301, 177))
    w = tiles.square_weights(rain)
    for block in (16, 32, 50):
        rb = tiles._block_ranges(w.shape[0], block)
        cb = tiles._block_ranges(w.shape[1], block)
        whole = np.array([[np.ascontiguousarray(w[a:b, c:d]).sum() for c, d in cb]
                          for a, b in rb])
        np.testing.assert_array_equal(tiles.world_block_weights(rain, block), whole)


def test_with_coarse_neither_the_client_nor_the_global_task_holds_the_full_map(world,
                                                                               tmp_path):
    """A 1024² .npy map in 8x8 tiles with --coarse 8: writing the store (the client)
    and the global stage (hydrology on the 128² copy) each allocate under one
    full-resolution array (8 MB; the terrain has 14 such arrays: the whole map would
    be 117 MB; the client's windows are 128² tile cores). tracemalloc sees numba's
    allocations too (its runtime allocates through Python's raw allocator): checked
    first, so the bounds below cannot pass by missing the kernels' arrays."""
    import tracemalloc

    from numba import njit

    @njit
    def allocate(n):
        return np.ones(n).sum()

    def traced_peak(run):
        """Bytes ``run()`` allocated at its peak, as tracemalloc saw them (started here,
        or already tracing: then only this call's rise counts, and it stays on)."""
        started = not tracemalloc.is_tracing()
        if started:
            tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            out = run()
            return tracemalloc.get_traced_memory()[1] - base, out
        finally:
            if started:
                tracemalloc.stop()

    allocate(1)
    assert traced_peak(lambda: allocate(1 << 20))[0] >= 8 << 20
    from simcore.engine.simulation import rain_share
    big = np.kron(world, np.ones((4, 4))) + np.random.default_rng(0).uniform(
        0.0, 1.0, (4 * SIZE, 4 * SIZE))
    src = tmp_path / "big.npy"
    np.save(src, big)
    one_array = big.nbytes
    del big
    source = tiles.HeightmapFile(src, CELL)
    plan = tiles.make_plan(source.shape, (8, 8), None)
    p = find_preset("default").with_overrides({"particles": 4096})
    store = str(tmp_path / "w.zarr")
    client_peak, attrs = traced_peak(lambda: tiles.prepare_store(
        store, source, p, plan, 2, 8, rain_share(source)))  # type: ignore[arg-type]
    assert list(attrs["global"]) == ["hydrology"]
    global_peak, _ = traced_peak(lambda: tiles.run_global(
        store, {n: p.params[n] for n in attrs["global"]}, 1, 2, 8))
    assert client_peak < one_array / 2, (client_peak, one_array)
    # the coarse terrain (14 arrays of 128²) and hydrology's work arrays on it
    assert global_peak < one_array, (global_peak, one_array)
    import zarr
    root = zarr.open_group(store, mode="r")
    moved = root["work/coarse/delta_bedrock"][...]
    assert moved.shape == (128, 128) and np.abs(moved).max() > 0  # hydrology ran
    # a window of the base (as a tile reads its extent): the input there plus the
    # coarse change interpolated back
    rows, cols = (0, 192), (128, 320)
    t = tiles.base_window(root, dict(root.attrs), rows, cols)
    gained = (tiles._upsample(root["work/coarse/delta_bedrock"][...], 8, plan.shape)
              + tiles._upsample(root["work/coarse/delta_sediment"][...], 8, plan.shape)
              )[:192, 128:320]
    start = np.load(src, mmap_mode="r")[:192, 128:320] / CELL
    np.testing.assert_allclose(t.height(), start + gained, rtol=0, atol=1e-9)


def _heightmap_message(path, cell=30.0) -> str:
    from simcore.errors import UserError
    with pytest.raises(UserError) as err:
        tiles.HeightmapFile(path, cell)
    return str(err.value)


def test_a_bad_heightmap_for_tiles_is_a_message_before_any_cluster(tmp_path):
    """The tiled run reads a .npy through a memory map; it still says what is wrong with
    the file, as a plain erode does, and never waits on a FIFO: an empty file, a FIFO,
    a 1-D array, NaN or out-of-range heights (with the map's own row and column, and the
    count over the whole map, though it is read in blocks)."""
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    assert "cannot read heightmap" in _heightmap_message(empty)
    fifo = tmp_path / "fifo.npy"
    os.mkfifo(fifo)
    assert "FIFO" in _heightmap_message(fifo)
    flat = tmp_path / "flat.npy"
    np.save(flat, np.zeros(50))
    assert "2-D" in _heightmap_message(flat)
    h = np.zeros((100, 100))
    h[70, 80] = np.nan
    h[90, 5] = np.inf
    holes = tmp_path / "holes.npy"
    np.save(holes, h)
    text = _heightmap_message(holes)
    assert "2 NaN/inf" in text and "row 70, col 80" in text, text
    hm = tiles.HeightmapFile.__new__(tiles.HeightmapFile)  # blocks of 3 rows: the same
    hm.heights, hm.cell_size = np.load(holes, mmap_mode="r"), 30.0
    with pytest.raises(Exception, match="2 NaN/inf value.*row 70, col 80"):
        hm._check_values(rows_cells=300)
    tall = tmp_path / "tall.npy"
    np.save(tall, np.full((20, 20), 1e12))
    assert "allowed range" in _heightmap_message(tall, cell=1.0)
    fine = tmp_path / "fine.npy"
    np.save(fine, np.ones((20, 30)))
    assert tiles.HeightmapFile(fine, 30.0).shape == (20, 30)


def test_a_tiled_world_goes_on_from_its_store_read_tile_by_tile(runs, client, tmp_path):
    """``tile --input world.zarr``: a run goes on from an earlier tiled world (here with
    another preset) reading the store window by window, and makes what the same run
    makes of the whole world loaded at once (load_world), bit for bit."""
    more = find_preset("droplets_only").with_overrides({"particles": 5_000})
    source = tiles.WorldStoreFile(runs[2])
    whole, attrs = tiles.load_world(runs[2])
    assert source.shape == whole.shape and source.cell_size == attrs["cell_size"]
    out = {n: tmp_path / f"{n}.zarr" for n in ("windows", "whole")}
    tiles.run_world(source, more, out["windows"], client, (2, 2), quiet=True)
    tiles.run_world(whole, more, out["whole"], client, (2, 2), quiet=True)
    a, _ = tiles.load_world(out["windows"])
    b, _ = tiles.load_world(out["whole"])
    for name, arr in a.arrays().items():
        np.testing.assert_array_equal(arr, getattr(b, name), err_msg=name)
    assert not np.array_equal(a.height(), whole.height()), "the second run did work"


def test_a_bad_store_for_tiles_is_a_message_before_any_cluster(runs, tmp_path, capsys):
    """Not a folder of Zarr, a Zarr store of something else, a store with an array
    missing or holding NaN, --cell-size on a store: one line each, no cluster."""
    import shutil

    import zarr

    from simcore.cli.main import main
    other = tmp_path / "other.zarr"
    _fake_store(other, "something else")
    plain = tmp_path / "plain"
    plain.mkdir()
    broken = tmp_path / "broken.zarr"
    shutil.copytree(runs[2], broken)
    shutil.rmtree(broken / "sediment")
    holes = tmp_path / "holes.zarr"
    shutil.copytree(runs[2], holes)
    zarr.open_group(str(holes), mode="r+")["bedrock"][200, 10] = np.nan
    cases = [(plain, [], "not a Zarr store"), (other, [], "not a tiled world"),
             (broken, [], "'sediment' is missing"),
             (holes, [], "1 NaN/inf value(s), first at row 200, col 10"),
             (runs[2], ["--cell-size", "30"], "cannot change the scale"),
             (tmp_path / "nowhere.zarr", [], "does not exist")]
    for path, extra, expected in cases:
        code = main(["tile", "--input", str(path), "--tiles", "2", "--workers", "1",
                     "--quiet", "--output", str(tmp_path / "out.zarr"), *extra])
        err = capsys.readouterr().err
        assert code == 2 and expected in err and "dask" not in err, (path, err)
    # the .partial where a run writes until it is done is no input for that run
    partial = tiles.partial_path(tmp_path / "w.zarr")
    shutil.copytree(runs[2], partial)
    code = main(["tile", "--input", str(partial), "--tiles", "2", "--workers", "1",
                 "--quiet", "--output", str(tmp_path / "w.zarr")])
    err = capsys.readouterr().err
    assert code == 2 and "where the run writes until it is done" in err, err
    assert (partial / ".zgroup").is_file()
    from simcore.terrain import StateFileError
    with pytest.raises(StateFileError, match="NaN/inf.*row 200, col 10"):
        tiles.WorldStoreFile(holes, rows_cells=256 * 50)  # in blocks of 50 rows
    below = tmp_path / "below.zarr"  # a range a Terrain refuses: its window says where
    shutil.copytree(runs[2], below)
    zarr.open_group(str(below), mode="r+")["sediment"][5, 7] = -1.0
    with pytest.raises(StateFileError, match="rows 0..49, columns 0..255: 'sediment'"):
        tiles.WorldStoreFile(below, rows_cells=256 * 50)
    # NaN anywhere is said before a block out of range (both here: the NaN comes later)
    zarr.open_group(str(below), mode="r+")["pool"][250, 3] = np.inf
    with pytest.raises(StateFileError, match="'pool'.*NaN/inf.*row 250, col 3"):
        tiles.WorldStoreFile(below, rows_cells=256 * 50)
    # blocks of 51 rows leave one: it joins the block before (a Terrain has 3 rows); the
    # check reads the store once, a block at a time
    reads = []
    read = tiles.WorldStoreFile._read

    def counted(self, rows, cols):
        reads.append(rows)
        return read(self, rows, cols)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(tiles.WorldStoreFile, "_read", counted)
        assert tiles.WorldStoreFile(runs[2], rows_cells=256 * 51).shape == (256, 256)
    assert reads == [(0, 51), (51, 102), (102, 153), (153, 204), (204, 256)]
    dry = tmp_path / "dry.zarr"  # no rain on whole blocks is a map's right; none at all not
    shutil.copytree(runs[2], dry)
    rain = zarr.open_group(str(dry), mode="r+")["rain"]
    rain[:200] = 0.0
    assert tiles.WorldStoreFile(dry, rows_cells=256 * 50).shape == (256, 256)
    rain[...] = 0.0
    with pytest.raises(StateFileError, match="'rain' is zero everywhere"):
        tiles.WorldStoreFile(dry)
    newer = tmp_path / "newer.zarr"
    shutil.copytree(runs[2], newer)
    zarr.open_group(str(newer), mode="r+").attrs["version"] = tiles.STORE_VERSION + 1
    with pytest.raises(StateFileError, match="newer version"):
        tiles.WorldStoreFile(newer)
    with pytest.raises(StateFileError, match="does not exist"):
        tiles.WorldStoreFile(tmp_path / "nowhere.zarr")
    assert not (tmp_path / "out.zarr").exists()


def test_the_blend_is_every_raw_tile_weighed_and_summed(world, client, tmp_path,
                                                        monkeypatch):
    """run_blend reads a raw tile only where its weight is not 0 (chunks of half a
    margin): the output is still, bit for bit, the sum over all tiles, in order, of
    each tile's weights times its raw arrays over its whole extent (3 x 3 tiles: the
    middle one has 8 neighbours)."""
    import zarr
    monkeypatch.setattr(tiles, "RAW_CHUNK", 16)  # the client lays the store out
    small = world[:128, :128]
    store = tmp_path / "w.zarr"
    tiles.run_world(Terrain.from_heights(small, CELL),
                    find_preset("droplets_only").with_overrides({"particles": 3_000}),
                    store, client, (3, 3), margin=32, quiet=True, keep_work=True)
    root = zarr.open_group(str(store), mode="r")
    plan = tiles.Plan.of(dict(root.attrs))
    raw = root["work/raw"]
    assert raw["bedrock"].chunks == tiles.raw_chunks(plan)
    assert raw["bedrock"].chunks[2:] != plan.extent_size(), "a tile is several chunks"
    for name in ("bedrock", "sediment", "deposited"):
        want = np.zeros(plan.shape)
        for ti, (er, core_r) in enumerate(zip(plan.extents(0), plan.cores(0))):
            wy = tiles.axis_weight(np.arange(*er, dtype=np.float64), core_r, plan.shape[0],
                                   plan.margin)
            for tj, (ec, core_c) in enumerate(zip(plan.extents(1), plan.cores(1))):
                wx = tiles.axis_weight(np.arange(*ec, dtype=np.float64), core_c,
                                       plan.shape[1], plan.margin)
                part = raw[name][ti, tj, :er[1] - er[0], :ec[1] - ec[0]]
                want[er[0]:er[1], ec[0]:ec[1]] += (wy[:, None] * wx[None, :]) * part
        np.testing.assert_array_equal(root[name][...], want, err_msg=name)
    assert np.abs(root["deposited"][...]).max() > 0.0, "the droplets did work"
