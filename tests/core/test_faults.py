"""Fault injection for every writer: a path whose parent is a file, a path that is a
folder, a read-only disk, a full disk (a small tmpfs when the test may mount one, and
a writer made to fail at a chosen byte everywhere), signals mid-write, symlinks and
permissions. After a failure the previous file is intact, no temporary file remains
and the message names the path."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import FailingFile, deflate_start, small_tmpfs

from simcore import fileio
from simcore.cli.main import main
from simcore.errors import OutputPathError, ResourceError, UserError
from simcore.formats.images import save_png
from simcore.formats.presets import find_preset, save_preset
from simcore.formats.states import load_state, save_heights, save_state
from simcore.generators.noise import fractal_terrain
from simcore.terrain import Terrain

ROOT = Path(__file__).resolve().parents[2]

TERRAIN = Terrain.from_heights(fractal_terrain(48, seed=3), 2.0)
PRESET = find_preset("default")
RGB = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)

#: every writer the project has: name -> (write(path), file suffix)
WRITERS = {
    "state": (lambda p: save_state(p, TERRAIN, {"seed": 1}), ".npz"),
    "heights": (lambda p: save_heights(p, TERRAIN.world_height()), ".npy"),
    "png": (lambda p: save_png(p, RGB), ".png"),
    "preset": (lambda p: save_preset(PRESET, p), ".toml"),
}
PREVIOUS = b"previous contents that must survive\n"


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(fileio.TEMP_SUFFIX))


@pytest.mark.parametrize("writer", WRITERS)
def test_parent_is_a_file(tmp_path, writer):
    write, suffix = WRITERS[writer]
    (tmp_path / "notafolder").write_bytes(b"x")
    target = tmp_path / "notafolder" / f"out{suffix}"
    with pytest.raises(UserError) as info:
        write(target)
    assert str(target) in str(info.value)
    assert (tmp_path / "notafolder").read_bytes() == b"x"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("writer", WRITERS)
def test_path_is_a_directory(tmp_path, writer):
    write, suffix = WRITERS[writer]
    target = tmp_path / f"out{suffix}"
    target.mkdir()
    (target / "keep").write_bytes(PREVIOUS)
    with pytest.raises(OutputPathError, match="it is a folder") as info:
        write(target)
    assert str(target) in str(info.value)
    assert (target / "keep").read_bytes() == PREVIOUS
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("where", [0.0, 1e-9, 0.1, 0.5, 0.999])
@pytest.mark.parametrize("writer", WRITERS)
def test_disk_full_at_a_chosen_byte(tmp_path, monkeypatch, writer, where):
    write, suffix = WRITERS[writer]
    full = write(tmp_path / f"full{suffix}").stat().st_size
    budget = min(int(np.ceil(where * full)), full - 1)
    target = tmp_path / f"out{suffix}"
    target.write_bytes(PREVIOUS)
    real = fileio._file_for
    monkeypatch.setattr(fileio, "_file_for", lambda fd: FailingFile(real(fd), budget))
    with pytest.raises(OutputPathError, match="No space left") as info:
        write(target)
    assert str(target) in str(info.value) and "free some disk space" in str(info.value)
    assert target.read_bytes() == PREVIOUS, "the previous file is intact"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("writer", WRITERS)
def test_real_full_disk_leaves_previous_file_and_no_temp(tmp_path, writer):
    write, suffix = WRITERS[writer]
    with small_tmpfs(tmp_path, "16k") as mnt:
        target = mnt / f"out{suffix}"
        target.write_bytes(PREVIOUS)
        filler = mnt / "filler"
        with contextlib.suppress(OSError), open(filler, "wb") as f:
            f.write(b"\0" * 64 * 1024)  # fill the disk up
        with pytest.raises(OutputPathError) as info:
            write(target)
        assert str(target) in str(info.value)
        assert target.read_bytes() == PREVIOUS
        assert leftovers(mnt) == []


@pytest.mark.parametrize("writer", WRITERS)
def test_read_only_disk(tmp_path, writer):
    write, suffix = WRITERS[writer]
    with small_tmpfs(tmp_path, "1m") as mnt:
        target = mnt / f"out{suffix}"
        target.write_bytes(PREVIOUS)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        with pytest.raises(UserError, match="read-only") as info:
            write(target)
        assert str(target) in str(info.value)
        assert target.read_bytes() == PREVIOUS
        assert leftovers(mnt) == []


def test_cli_refuses_bad_outputs_before_any_work(tmp_path, capsys):
    src = tmp_path / "h.npy"
    np.save(src, fractal_terrain(32, seed=1))
    (tmp_path / "file").write_bytes(b"x")
    (tmp_path / "dir.npz").mkdir()
    cases = [
        (["generate", "--size", "32", "--output"], tmp_path / "missing" / "h.npy",
         "does not exist"),
        (["generate", "--size", "32", "--output"], tmp_path / "file" / "h.npy",
         "is a file, not a folder"),
        (["erode", "--input", str(src), "--particles", "1000", "--output"],
         tmp_path / "dir.npz", "it is a folder"),
        (["shade", "--input", str(src), "--output"], tmp_path / "missing" / "x.png",
         "does not exist"),
    ]
    for argv, out, message in cases:
        assert main(argv + [str(out)]) == 2
        err = capsys.readouterr().err
        assert message in err and str(out) in err, err
        assert "%" not in err, "refused before the first particle fell"
    with small_tmpfs(tmp_path, "64k") as mnt:
        big = tmp_path / "big.npy"
        np.save(big, fractal_terrain(200, seed=1))
        assert main(["erode", "--input", str(big), "--output", str(mnt / "e.npz"),
                     "--particles", "1000"]) == 2
        err = capsys.readouterr().err
        assert "needs about" in err and "free" in err and "%" not in err, err
        assert list(mnt.iterdir()) == []


def test_symlinked_output_keeps_pointing_at_its_target(tmp_path):
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    target = real_dir / "heights.npy"
    target.write_bytes(PREVIOUS)
    link = tmp_path / "link.npy"
    link.symlink_to(target)
    save_heights(link, np.ones((4, 4)))
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert np.array_equal(np.load(target), np.ones((4, 4)))
    assert leftovers(tmp_path) == [] and leftovers(real_dir) == []


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_files_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        for name, (write, suffix) in WRITERS.items():
            path = tmp_path / f"{name}-{umask:o}{suffix}"
            write(path)
            assert stat.S_IMODE(path.stat().st_mode) == mode, name
    finally:
        os.umask(old)


def test_existing_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "h.npy"
    path.write_bytes(PREVIOUS)
    path.chmod(0o640)
    save_heights(path, np.zeros((3, 3)))
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


_SLOW_WRITER = textwrap.dedent("""
    import signal, sys, time
    import numpy as np
    from simcore import fileio

    # a process in a normal session: a test run started in the background ('cmd &' in a
    # script) hands its children SIGINT ignored, and atomic_write rightly leaves an
    # ignored signal ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def writer(f):
        f.write(b"x" * 100000)
        f.flush()
        print("writing", flush=True)
        time.sleep(30)
    fileio.atomic_write({target!r}, writer)
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_signal_mid_write_leaves_previous_file_and_no_temp(tmp_path, sig):
    target = tmp_path / "state.npz"
    target.write_bytes(PREVIOUS)
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER.format(target=str(target))],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout.readline().strip() == "writing"
    assert len(leftovers(tmp_path)) == 1, "the temporary file is there while writing"
    proc.send_signal(sig)
    code = proc.wait(timeout=60)
    assert code != 0
    assert target.read_bytes() == PREVIOUS
    if sig == signal.SIGKILL:  # nothing can clean up: the next write sweeps it
        assert len(leftovers(tmp_path)) == 1
        save_state(target, TERRAIN, {"seed": 1})
        load_state(target)
    assert leftovers(tmp_path) == []
    if sig == signal.SIGTERM:
        assert code == -signal.SIGTERM, "the process still ends by the signal"


def test_a_temp_of_a_live_process_is_not_swept(tmp_path):
    target = tmp_path / "h.npy"
    mine = tmp_path / f".h.npy.te-{os.getpid()}-1-0.tmp"
    mine.write_bytes(b"in use")
    save_heights(target, np.zeros((3, 3)))
    assert mine.exists()
    mine.unlink()


def test_memory_check_names_the_need(monkeypatch):
    monkeypatch.setattr(fileio, "available_memory", lambda: 100 * 2**20)
    with pytest.raises(ResourceError, match=r"needs about 1.00 GB of memory but only "
                                            r"100.0 MB"):
        fileio.check_memory(2**30, "a 9000x9000 grid")
    fileio.check_memory(2**20, "a small grid")


def test_cli_refuses_a_grid_that_does_not_fit_in_memory(tmp_path, monkeypatch, capsys):
    src = tmp_path / "h.npy"
    np.save(src, fractal_terrain(64, seed=1))
    monkeypatch.setattr(fileio, "available_memory", lambda: 64 * 64 * 8)
    assert main(["erode", "--input", str(src), "--output", str(tmp_path / "e.npz")]) == 2
    err = capsys.readouterr().err
    assert "of memory but only" in err and "%" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.npy"]


# -- long names, FIFOs, damaged and foreign states -------------------------------------

LONG = "n" * 300  # longer than any file system's name limit (255 bytes)


@pytest.mark.parametrize("writer", WRITERS)
def test_an_over_long_name_is_a_message_for_every_writer(tmp_path, writer):
    write, suffix = WRITERS[writer]
    target = tmp_path / f"{LONG}{suffix}"
    with pytest.raises(OutputPathError, match="use a shorter name") as info:
        write(target)
    assert LONG in str(info.value)
    with pytest.raises(OutputPathError, match="use a shorter name"):
        fileio.check_output(target)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["generate", "erode", "shade", "export"])
def test_cli_over_long_output_names_are_one_line(tmp_path, capsys, command):
    src = tmp_path / "h.npy"
    np.save(src, fractal_terrain(16, seed=1))
    state = tmp_path / "s.npz"
    save_state(state, Terrain.from_heights(fractal_terrain(16, seed=1), 1.0), {"seed": 1})
    suffix = {"generate": ".npy", "erode": ".npz", "shade": ".png", "export": ".exr"}[command]
    args = {"generate": ["generate", "--size", "8"],
            "erode": ["erode", "--input", str(src), "--particles", "0"],
            "shade": ["shade", "--input", str(src)],
            "export": ["export", str(state)]}[command]
    assert main([*args, "--output", str(tmp_path / f"{LONG}{suffix}")]) == 2
    err = capsys.readouterr().err
    assert "shorter name" in err and "Traceback" not in err


def _fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def _returns_quickly(fn, *args):
    """Call ``fn(*args)`` in a thread; if it blocks (a FIFO opened for reading waits for
    a writer), open the FIFO's other end to let it go and fail."""
    import threading
    out: dict = {}

    def run():
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():
        for a in args:
            if isinstance(a, (str, Path)) and Path(a).is_fifo():
                with contextlib.suppress(OSError):
                    os.close(os.open(a, os.O_WRONLY | os.O_NONBLOCK))
        t.join(10)
        pytest.fail(f"{getattr(fn, '__name__', fn)} blocked on a FIFO")
    if "error" in out:
        raise out["error"]
    return out.get("value")


def _readers():
    from simcore.formats import exr
    from simcore.formats.presets import load_preset
    from simcore.formats.states import load_heights, read_npz_arrays
    return {"state": (load_state, ".npz"), "npz arrays": (read_npz_arrays, ".npz"),
            "heights": (load_heights, ".npy"), "preset": (load_preset, ".toml"),
            "exr": (exr.channel_names, ".exr")}


@pytest.mark.parametrize("reader", list(_readers()))
def test_every_reader_refuses_a_fifo_instead_of_waiting(tmp_path, reader):
    read, suffix = _readers()[reader]
    fifo = _fifo(tmp_path, f"in{suffix}")
    with pytest.raises(UserError, match="not a regular file") as info:
        _returns_quickly(read, fifo)
    assert str(fifo) in str(info.value)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused_as_input(device):
    from simcore.fileio import check_input
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    with pytest.raises(UserError, match="not a regular file"):
        check_input(device)


@pytest.mark.parametrize("option", ["--input", "--preset"])
def test_cli_refuses_a_fifo_given_as_input(tmp_path, capsys, option):
    src = tmp_path / "h.npy"
    np.save(src, fractal_terrain(16, seed=1))
    fifo = _fifo(tmp_path, "in.toml" if option == "--preset" else "in.npy")
    args = {"--input": str(src), option: str(fifo)}
    argv = ["erode", "--input", args["--input"], "--output", str(tmp_path / "o.npz"),
            "--particles", "0"]
    if option == "--preset":
        argv += ["--preset", str(fifo)]
    assert _returns_quickly(main, argv) == 2
    err = capsys.readouterr().err
    assert "not a regular file" in err and "Traceback" not in err


@pytest.mark.parametrize("member", ["bedrock.npy", "metadata.npy", "trees.npy"])
def test_a_damaged_compressed_state_is_a_message(tmp_path, member):
    """A deflate stream that does not decode raises zlib.error inside zipfile."""
    from simcore.formats.states import read_npz_arrays
    from simcore.terrain import StateFileError
    path = save_state(tmp_path / "s.npz", TERRAIN, {"seed": 1})
    data = bytearray(path.read_bytes())
    data[deflate_start(path, member)] = 0xFF  # final block of the reserved type 3
    path.write_bytes(bytes(data))
    with pytest.raises(StateFileError, match="damaged"):
        load_state(path)
    with pytest.raises(UserError):
        read_npz_arrays(path)


@pytest.mark.parametrize("where", [0.0, 0.01, 0.3, 0.7, 0.99])
def test_a_failed_state_write_prints_no_zipfile_traceback(tmp_path, monkeypatch, where):
    """numpy's savez leaves its ZipFile open on an error; its __del__ then writes to
    the dead file and prints 'Exception ignored in ZipFile.__del__' after our message."""
    import gc
    full = save_state(tmp_path / "full.npz", TERRAIN, {"seed": 1}).stat().st_size
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    real = fileio._file_for
    monkeypatch.setattr(fileio, "_file_for",
                        lambda fd: FailingFile(real(fd), int(where * full)))
    with pytest.raises(OutputPathError, match="No space left"):
        save_state(tmp_path / "out.npz", TERRAIN, {"seed": 1})
    gc.collect()
    assert unraisable == []


def test_an_interrupted_state_write_prints_no_zipfile_traceback(tmp_path, monkeypatch):
    import gc

    class Interrupting(FailingFile):
        def write(self, data):
            raise KeyboardInterrupt
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    real = fileio._file_for
    monkeypatch.setattr(fileio, "_file_for", lambda fd: Interrupting(real(fd), 0))
    with pytest.raises(KeyboardInterrupt):
        save_state(tmp_path / "out.npz", TERRAIN, {"seed": 1})
    gc.collect()
    assert unraisable == []
    assert leftovers(tmp_path) == []


def _rewrite_meta(path: Path, change) -> Path:
    import json
    with np.load(path) as data:
        meta = json.loads(str(data["metadata"]))
        arrays = {k: data[k] for k in data.files if k != "metadata"}
    change(meta)
    out = path.with_name("changed.npz")
    np.savez_compressed(out, metadata=np.array(json.dumps(meta)), **arrays)
    return out


def test_a_state_without_cell_size_is_refused_not_read_as_one(tmp_path):
    from simcore.terrain import StateFileError
    path = save_state(tmp_path / "s.npz", Terrain.from_heights(
        fractal_terrain(16, seed=2), 30.0), {"seed": 1})
    changed = _rewrite_meta(path, lambda m: m.pop("cell_size"))
    with pytest.raises(StateFileError, match="cell_size"):
        load_state(changed)


@pytest.mark.parametrize("units", [
    {"bedrock": "world"},                       # heights in world units, read as cells
    {"height": "cell"},
    {"sediment": "feet"},
    ["cell"],
    {"bedrock": 3},
])
def test_a_state_whose_units_differ_from_ours_is_refused(tmp_path, units):
    from simcore.terrain import StateFileError
    path = save_state(tmp_path / "s.npz", TERRAIN, {"seed": 1})

    def change(meta):
        if isinstance(units, dict):
            meta["units"].update(units)
        else:
            meta["units"] = units
    with pytest.raises(StateFileError, match="unit"):
        load_state(_rewrite_meta(path, change))


def test_units_of_our_own_states_and_of_older_ones_are_accepted(tmp_path):
    path = save_state(tmp_path / "s.npz", TERRAIN, {"seed": 1})
    load_state(path)
    load_state(_rewrite_meta(path, lambda m: m.pop("units")))
    load_state(_rewrite_meta(path, lambda m: m.update(units="arrays in cell units")))


_FULL_CACHE = textwrap.dedent("""
    import contextlib, errno, sys, warnings
    import numpy as np
    from numba.core import caching

    @contextlib.contextmanager
    def full_disk(self, filepath):
        raise OSError(errno.ENOSPC, "No space left on device", str(filepath))
        yield

    caching.IndexDataCacheFile._open_for_write = full_disk
    from simcore.kernels.primitives import mix64
    from simcore.engine.simulation import Simulation, process_params
    from simcore.terrain import Terrain
    from simcore.generators.noise import fractal_terrain
    print(int(mix64(np.uint64(7))))
    t = Terrain.from_heights(fractal_terrain(24, seed=1), 1.0)
    Simulation(t, {{"thermal": process_params("thermal")}}, seed=1, particles=10).run()
    print("ran", flush=True)
""")


@pytest.mark.cold
def test_a_full_disk_under_numbas_cache_is_a_warning_not_a_failure(tmp_path):
    """numba writes compiled kernels into its cache on first use; a cache it cannot
    write (full disk, read-only, quota) must not stop the run."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    res = subprocess.run([sys.executable, "-c", _FULL_CACHE.format()], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.splitlines()[-1] == "ran"
    assert "Traceback" not in res.stderr
    assert res.stderr.count("numba could not write its cache") == 1, res.stderr[-2000:]
    assert "No space left" in res.stderr


_THERMAL_RUN = textwrap.dedent("""
    from simcore.engine.simulation import Simulation, process_params
    from simcore.terrain import Terrain
    from simcore.generators.noise import fractal_terrain
    t = Terrain.from_heights(fractal_terrain(24, seed=1), 1.0)
    Simulation(t, {"thermal": process_params("thermal")}, seed=1, particles=10).run()
    print("ran", flush=True)
""")


@pytest.mark.parametrize("damage", [
    b"\x80\x02csimcore.processes.thermal\n_Gone\nq\x00.",  # a type renamed since
    b"",  # a truncated file
])
@pytest.mark.cold
def test_a_cache_index_from_an_earlier_version_is_stale_not_a_failure(tmp_path, damage):
    """The cache folder outlives an upgrade of the extension; numba unpickles a kernel's
    index before it checks that it is stale, so an index naming a type the new code no
    longer has (a NamedTuple renamed) raised AttributeError out of the first run. It is
    dropped now, the kernel compiled again and the index written afresh."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}

    def run():
        return subprocess.run([sys.executable, "-c", _THERMAL_RUN], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)

    assert run().returncode == 0
    indexes = [p for p in (tmp_path / "numba-cache").rglob("*.nbi") if "thermal" in p.name]
    assert indexes, "the first run cached thermal's kernels"
    for path in indexes:
        with open(path, "rb") as f:
            version = pickle.load(f)
        path.write_bytes(pickle.dumps(version) + damage)
    res = run()
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.splitlines()[-1] == "ran"
    assert "Traceback" not in res.stderr
    for path in indexes:  # written afresh, readable by numba
        with open(path, "rb") as f:
            pickle.load(f)
            stamp, overloads = pickle.loads(f.read())
        assert overloads


_PROBE_MODULE = textwrap.dedent("""
    from numba import njit

    from .kernels.primitives import _probe_helper


    @njit(cache=True)
    def probe(x):
        return _probe_helper(x)
""")
_PROBE_HELPER = textwrap.dedent("""


    @njit(cache=True, inline="always")
    def _probe_helper(x):
        return x * {factor}
""")


@pytest.mark.cold
def test_a_changed_helper_in_another_file_recompiles_the_kernels_that_use_it(tmp_path):
    """numba checks only a cached kernel's own file: a kernel that inlines a helper of
    kernels/primitives.py stayed cached after the helper changed and ran the old code (a benchmark
    once measured old code this way). Every file of the package is in the stamp now."""
    import shutil
    pkg = tmp_path / "pkg" / "simcore"
    shutil.copytree(ROOT / "simcore", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "_probe.py").write_text(_PROBE_MODULE)
    kernels = (pkg / "kernels" / "primitives.py").read_text()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache"),
           "PYTHONPATH": str(pkg.parent)}

    def run(factor: int) -> tuple[str, str]:
        """probe(7), and whether it came from the cache ("hit") or was compiled."""
        (pkg / "kernels" / "primitives.py").write_text(
            kernels + _PROBE_HELPER.format(factor=factor))
        res = subprocess.run([sys.executable, "-c",
                              "from simcore._probe import probe; print(probe(7)); "
                              "print('hit' if sum(probe.stats.cache_hits.values()) else "
                              "'compiled')"],
                             cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        value, how = res.stdout.split()[-2:]
        return value, how

    assert run(2) == ("14", "compiled")
    assert list((tmp_path / "numba-cache").rglob("_probe*.nbi")), "probe was cached"
    assert run(2) == ("14", "hit")  # nothing changed: from the cache
    assert run(3) == ("21", "compiled")  # primitives.py changed: not the cached 14


def test_the_sources_digest_follows_a_file_changed_in_a_running_process(tmp_path, monkeypatch):
    """A module reloaded after an edit (a developer's session, an extension updated
    without a restart) gets the new digest, not the one of the process's start."""
    from simcore.kernels import numba_cache
    monkeypatch.setattr(numba_cache, "LISTING_REUSE_S", 0.0)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text("x = 1\n")
    first = numba_cache.sources_digest(str(tmp_path))
    (tmp_path / "sub" / "a.py").write_text("x = 2\n")  # the same size
    os.utime(tmp_path / "sub" / "a.py", ns=(1, 10**18))
    assert numba_cache.sources_digest(str(tmp_path)) != first
    (tmp_path / "sub" / "a.py").write_text("x = 1\n")
    assert numba_cache.sources_digest(str(tmp_path)) == first  # by content
    (tmp_path / "b.txt").write_text("not a source")
    assert numba_cache.sources_digest(str(tmp_path)) == first


# -- ice and snow ------------------------------------------------------------------------

#: ice and snow on, droplets off, a short climate: ``--set`` flags for erode
ICE_SNOW = ["--set", "droplets.enabled=false", "--set", "ice.enabled=true",
            "--set", "snow.enabled=true", "--set", "ice.age=300",
            "--set", "ice.time_step=100", "--set", "ice.ela_fraction=0.3",
            "--set", "snow.years=3", "--set", "snow.time_step=1", "--particles", "1"]


def _sha(path: Path) -> str:
    import hashlib
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _icy_terrain(n: int = 24) -> Terrain:
    """A slope with ice and snow on its upper half (cell units)."""
    t = Terrain.from_heights(fractal_terrain(n, seed=4) * 50.0, 30.0)
    upper = np.arange(n)[:, None] >= n // 2
    t.ice[...] = np.where(upper, 2.0, 0.0)
    t.snow[...] = np.where(upper, 0.05, 0.0)
    return t


@pytest.mark.parametrize("key, value", [
    ("ice.age", "1e12"), ("ice.ela", "nan"), ("ice.time_step", "0"),
    ("ice.sliding", "1e9"), ("snow.snowfall", "-1"), ("snow.melt_gradient", "nan"),
    ("snow.time_step", "inf"), ("snow.years", "-5")])
def test_cli_refuses_absurd_ice_and_snow_values_and_keeps_the_earlier_output(
        tmp_path, capsys, key, value):
    src = tmp_path / "h.npy"
    np.save(src, fractal_terrain(16, seed=1) * 50.0)
    out = tmp_path / "out.npz"
    out.write_bytes(PREVIOUS)
    before = _sha(out)
    assert main(["erode", "--input", str(src), "--output", str(out), "--cell-size", "30",
                 *ICE_SNOW, "--set", f"{key}={value}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and key.split(".")[1] in err
    assert "Traceback" not in err and "%" not in err
    assert _sha(out) == before and leftovers(tmp_path) == []


@pytest.mark.parametrize("value", [np.nan, np.inf, -1.0])
@pytest.mark.parametrize("field", ["ice", "snow"])
def test_a_state_with_nan_or_negative_ice_or_snow_is_refused_before_any_work(
        tmp_path, capsys, field, value):
    t = _icy_terrain()
    src = save_state(tmp_path / "in.npz", t, {"seed": 1})
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    arrays[field] = arrays[field].copy()
    arrays[field][3, 4] = value
    np.savez(src, **arrays)
    out = tmp_path / "out.npz"
    out.write_bytes(PREVIOUS)
    assert main(["erode", "--input", str(src), "--output", str(out), *ICE_SNOW]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"'{field}'" in err and "%" not in err, err
    assert out.read_bytes() == PREVIOUS


def test_nan_heights_are_refused_with_ice_and_snow_on(tmp_path, capsys):
    z = fractal_terrain(16, seed=1) * 50.0
    z[5, 5] = np.nan
    src = tmp_path / "h.npy"
    np.save(src, z)
    assert main(["erode", "--input", str(src), "--output", str(tmp_path / "o.npz"),
                 "--cell-size", "30", *ICE_SNOW]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("NaN" in err or "finite" in err), err
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("n, sets, message", [
    (128, ["--set", "ice.age=1e7", "--set", "ice.time_step=1"],
     "ice: 10,000,000 passes on 16,384 cells is more than 1e+11 cell passes (days of "
     "work): raise its time_step or lower its age"),
    (64, ["--set", "snow.years=1e6", "--set", "snow.time_step=0.01"],
     "snow: 100,000,000 passes on 4,096 cells is more than 1e+11 cell passes (days of "
     "work): raise its time_step or lower its years"),
])
def test_a_huge_ice_or_snow_run_is_refused_before_any_work(tmp_path, capsys, n, sets,
                                                           message):
    """Past simulation.MAX_CELL_PASSES (passes x cells): days of work."""
    src = tmp_path / "h.npy"
    np.save(src, fractal_terrain(n, seed=1) * 50.0)
    out = tmp_path / "out.npz"
    assert main(["erode", "--input", str(src), "--output", str(out), "--cell-size", "30",
                 *ICE_SNOW, *sets]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert err.count("\n") == 1 and "%" not in err
    assert not out.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("where", [0.0, 0.2, 0.6, 0.99])
def test_a_full_disk_mid_write_of_a_state_with_ice_and_snow_keeps_the_earlier_one(
        tmp_path, monkeypatch, where):
    t = _icy_terrain()
    earlier = save_state(tmp_path / "state.npz", t, {"seed": 1})
    before = _sha(earlier)
    back = load_state(earlier)[0]
    assert np.array_equal(back.ice, t.ice) and np.array_equal(back.snow, t.snow)
    t.ice *= 1.5
    t.snow *= 2.0
    full = save_state(tmp_path / "full.npz", t, {"seed": 1}).stat().st_size
    real = fileio._file_for
    monkeypatch.setattr(fileio, "_file_for",
                        lambda fd: FailingFile(real(fd), int(where * full)))
    with pytest.raises(OutputPathError, match="No space left"):
        save_state(earlier, t, {"seed": 1})
    assert _sha(earlier) == before and leftovers(tmp_path) == []


def test_cli_ice_and_snow_run_on_a_full_disk_keeps_the_earlier_state(tmp_path, monkeypatch,
                                                                     capsys):
    src = tmp_path / "h.npy"
    np.save(src, fractal_terrain(16, seed=1) * 50.0)
    out = tmp_path / "out.npz"
    assert main(["erode", "--input", str(src), "--output", str(out), "--cell-size", "30",
                 *ICE_SNOW]) == 0
    with np.load(out) as z:
        assert {"ice", "snow"} <= set(z.files)
    before = _sha(out)
    capsys.readouterr()
    real = fileio._file_for
    monkeypatch.setattr(fileio, "_file_for", lambda fd: FailingFile(real(fd), 2000))
    assert main(["erode", "--input", str(out), "--output", str(out), *ICE_SNOW,
                 "--set", "ice.age=400"]) == 2
    err = capsys.readouterr().err
    assert "No space left" in err and str(out) in err and "Traceback" not in err
    assert _sha(out) == before and leftovers(tmp_path) == []


# -- refine ------------------------------------------------------------------------------

def _refine_source(tmp_path: Path) -> Path:
    t = Terrain.from_heights(fractal_terrain(17, seed=2) * 40.0, 10.0)
    t.ice[...] = 0.1
    src = tmp_path / "coarse.npz"
    save_state(src, t, {"seed": 1})
    return src


@pytest.mark.parametrize("where", [0.0, 0.5, 0.999])
def test_refine_on_a_full_disk_keeps_the_earlier_output(tmp_path, monkeypatch, capsys, where):
    src = _refine_source(tmp_path)
    assert main(["refine", str(src), "--output", str(tmp_path / "whole.npz")]) == 0
    full = (tmp_path / "whole.npz").stat().st_size
    target = tmp_path / "fine.npz"
    target.write_bytes(PREVIOUS)
    capsys.readouterr()
    real = fileio._file_for
    budget = min(int(np.ceil(where * full)), full - 1)
    monkeypatch.setattr(fileio, "_file_for", lambda fd: FailingFile(real(fd), budget))
    assert main(["refine", str(src), "--output", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "No space left" in err and "free some disk space" in err
    assert target.read_bytes() == PREVIOUS
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("field, value", [("bedrock", np.nan), ("ice", np.inf),
                                          ("sediment", -1.0)])
def test_refine_refuses_a_damaged_state_and_writes_nothing(tmp_path, capsys, field, value):
    src = _refine_source(tmp_path)
    with np.load(src) as data:
        arrays = {k: data[k] for k in data.files}
    arrays[field] = arrays[field].copy()
    arrays[field][3, 4] = value
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    target = tmp_path / "fine.npz"
    assert main(["refine", str(bad), "--output", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    named = {"bedrock": "'heights'"}.get(field, field)  # the ground is checked as a whole
    assert err.count("\n") == 0 and err.startswith("error: ") and named in err
    assert not target.exists()
