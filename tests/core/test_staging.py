"""simcore/formats/staging.py without Blender: a set of files replaced all or nothing, folders
of dead processes swept, those of live ones left alone (bake, export and engine tiles
all go through it; their own tests fail it in place)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from simcore.errors import OutputPathError
from simcore.formats import staging


def tree(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def write_set(folder, files: dict[str, bytes], previous: list[str]) -> None:
    with staging.Staging(folder) as stage:
        for name, data in files.items():
            (stage.path / name).write_bytes(data)
        stage.commit(list(files), previous)


def test_a_commit_replaces_the_previous_set_and_leaves_other_files(tmp_path):
    (tmp_path / "mine.txt").write_bytes(b"a user's file")
    write_set(tmp_path, {"a.bin": b"1", "b.bin": b"2", "set.json": b"{}"}, [])
    write_set(tmp_path, {"a.bin": b"3", "set.json": b"{new}"}, ["set.json", "a.bin", "b.bin"])
    assert tree(tmp_path) == {"mine.txt": b"a user's file", "a.bin": b"3",
                              "set.json": b"{new}"}


@pytest.mark.parametrize("k", range(5))
def test_a_failing_rename_puts_the_previous_set_back(tmp_path, monkeypatch, k):
    write_set(tmp_path, {"a.bin": b"1", "b.bin": b"2", "set.json": b"{}"}, [])
    before = tree(tmp_path)
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(1)
        if len(calls) == k + 1:
            raise OSError(errno.EROFS, "Read-only file system")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OutputPathError, match="Read-only"):
        write_set(tmp_path, {"a.bin": b"3", "c.bin": b"4", "set.json": b"{new}"},
                  ["set.json", "a.bin", "b.bin"])
    monkeypatch.setattr(os, "replace", real)
    assert tree(tmp_path) == before, "exactly the previous set, no staging or aside left"


def test_an_exception_while_writing_leaves_the_folder_as_it_was(tmp_path):
    write_set(tmp_path, {"a.bin": b"1"}, [])
    with pytest.raises(KeyboardInterrupt), staging.Staging(tmp_path) as stage:
        (stage.path / "a.bin").write_bytes(b"half")
        raise KeyboardInterrupt
    assert tree(tmp_path) == {"a.bin": b"1"}


def test_leftovers_of_dead_processes_are_swept_and_live_ones_kept(tmp_path):
    """The folder names are those every earlier version used (.te-staging-/.te-aside-
    <pid>-<12 hex>): any version removes what another left."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    live = str(os.getppid())
    names = {f".te-staging-{dead}-0123456789ab", f".te-aside-{dead}-0123456789ab",
             f".te-staging-{live}-0123456789ab", ".te-staging-x-0123456789ab",
             f".te-staging-{dead}-short"}
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "frame_000001.npz").write_bytes(b"old")
    assert all(staging.is_transaction_folder(n) == ("x-" not in n and "short" not in n)
               for n in names)
    write_set(tmp_path, {"a.bin": b"1"}, [])
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {"a.bin", f".te-staging-{live}-0123456789ab",
                    ".te-staging-x-0123456789ab", f".te-staging-{dead}-short"}
    staging.remove_stale(tmp_path)  # nothing else of ours to remove
    assert {p.name for p in tmp_path.iterdir()} == left


def test_a_folder_that_cannot_hold_a_staging_folder_is_a_user_error(tmp_path):
    with pytest.raises(OutputPathError):
        staging.Staging(tmp_path / "missing")


def test_a_failed_rollbacks_aside_folder_outlives_the_next_transaction(tmp_path,
                                                                      monkeypatch):
    """The error of a rollback that could not put the previous files back tells the
    user to move them back by hand from the aside folder; the next export, bake or
    tile set written into that folder in the same session once swept it as this
    process's own leftover, and the files were gone. It is kept (by this process and,
    marked, by any other)."""
    write_set(tmp_path, {"a.bin": b"1", "set.json": b"{}"}, [])
    real = os.replace

    def replace(src, dst):
        if ".te-staging-" in str(src) or ".te-aside-" in str(src):
            raise OSError(errno.EIO, "Input/output error")  # nothing moves in or back
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OutputPathError, match="move them back by hand") as info:
        write_set(tmp_path, {"a.bin": b"2", "set.json": b"{new}"}, ["set.json", "a.bin"])
    monkeypatch.setattr(os, "replace", real)
    aside = next(tmp_path.glob(".te-aside-*"))
    assert str(aside) in str(info.value)
    kept = {p.name: p.read_bytes() for p in aside.iterdir() if p.name != staging.KEEP}
    assert kept == {"a.bin": b"1", "set.json": b"{}"}
    write_set(tmp_path, {"b.bin": b"3"}, [])  # the next transaction, same process
    assert {p.name: p.read_bytes() for p in aside.iterdir()
            if p.name != staging.KEEP} == kept
    (aside / staging.KEEP).unlink()  # no marker (a full disk): this process still keeps it
    staging.remove_stale(tmp_path)
    assert aside.is_dir()
    write_set(tmp_path, {"b.bin": b"4"}, [])
    assert {p.name: p.read_bytes() for p in aside.iterdir()} == kept


def test_a_marked_aside_folder_of_a_dead_process_is_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    marked, plain = (tmp_path / f".te-aside-{dead}-{h}" for h in ("0123456789ab",
                                                                  "ba9876543210"))
    for folder in (marked, plain):
        folder.mkdir()
        (folder / "a.bin").write_bytes(b"old")
    (marked / staging.KEEP).write_text("move back by hand")
    write_set(tmp_path, {"a.bin": b"1"}, [])
    assert marked.is_dir() and not plain.exists()
