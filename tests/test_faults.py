"""Fault injection for every writer: a path whose parent is a file, a path that is a
folder, a read-only disk, a full disk (a small tmpfs when the test may mount one, and
a writer made to fail at a chosen byte everywhere), signals mid-write, symlinks and
permissions. After a failure the previous file is intact, no temporary file remains
and the message names the path."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import FailingFile, small_tmpfs

from simcore import fileio
from simcore.cli import main
from simcore.errors import OutputPathError, ResourceError, UserError
from simcore.formats.images import save_png
from simcore.formats.presets import find_preset, save_preset
from simcore.formats.states import load_state, save_heights, save_state
from simcore.noise import fractal_terrain
from simcore.terrain import Terrain

ROOT = Path(__file__).resolve().parent.parent

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
