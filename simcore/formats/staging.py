"""All-or-nothing replacement of a set of files in a folder (bake caches, map exports,
game-engine tiles).

The new files are written into a staging folder inside the target folder
(``.te-staging-<pid>-<hex>``: same disk, so moving a file is one rename).
:meth:`Staging.commit` then moves the files the new set replaces into an aside folder
(``.te-aside-<pid>-<hex>``), moves the new ones in (the manifest last) and removes the
aside folder. A failure anywhere before that -- a full disk at any file, a read-only
folder, an exception or Ctrl+C mid-way -- moves everything back: the folder holds
exactly the previous set, byte for byte, and the staging folder is removed.

Only a process killed during the few renames of a commit can leave a mix (the aside
folder then still holds the previous files). Staging and aside folders of a process
that no longer runs are removed by the next transaction in the same folder, and
staging folders of this process; an aside folder of this process never is, nor one a
failed rollback marked (:data:`KEEP`): a rollback that could not put every previous
file back keeps them there and says so, for the user to move back by hand.

Plain file operations (no bpy), used by addon/features/bake.py, addon/features/export.py and
simcore/formats/engine_tiles.py. The folder names are a public surface of sorts: folders
of earlier versions (the add-on's own copy of this module, engine_tiles' compact one)
used the same names and rules, so any version removes what another left.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import uuid
from pathlib import Path

from ..errors import OutputPathError, describe_os_error
from ..fileio import pid_alive

STAGING = ".te-staging-"
ASIDE = ".te-aside-"
#: a file writer's own temporary folder (the multi-layer EXR's): swept once its process
#: is gone, never while it runs
TEMPORARY = ".te-temp-"
_OURS = re.compile(r"\.te-(staging|aside|temp)-(\d+)-[0-9a-f]{12}")


def is_transaction_folder(name: str) -> bool:
    """A staging or aside folder name (ours, whatever process made it)."""
    return _OURS.fullmatch(name) is not None


#: written into an aside folder whose previous files could not be put back: the
#: folder is then the user's to empty (the error said so), never swept
KEEP = "te-rollback-failed.txt"


def _stale(kind: str, pid: int) -> bool:
    """True for a folder of a process that no longer runs, or a staging folder of this
    one (its transaction is over: one at a time per process). An aside folder of this
    process is never stale: one left behind holds the previous files a failed rollback
    could not put back, which the error told the user to move back by hand."""
    if pid == os.getpid():
        return kind == "staging"
    return not pid_alive(pid)


def temporary_folder(folder: Path) -> Path:
    """A new temporary folder in ``folder`` (same disk: its file moves in with one
    rename) named so that :func:`remove_stale` sweeps it once this process is gone (a
    killed run); those of dead processes are swept first. The caller removes it."""
    remove_stale(folder)
    path = folder / f"{TEMPORARY}{os.getpid()}-{uuid.uuid4().hex[:12]}"
    path.mkdir()
    return path


def remove_stale(folder: Path) -> None:
    """Remove staging, aside and temporary folders in ``folder`` left by processes that
    no longer run (killed mid-bake or mid-write) and staging folders of this one (a
    clean-up that failed); never an aside folder marked :data:`KEEP` (a failed
    rollback's)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        match = _OURS.fullmatch(entry.name)
        if match and entry.is_dir(follow_symlinks=False) \
                and _stale(match.group(1), int(match.group(2))) \
                and not os.path.lexists(os.path.join(entry.path, KEEP)):
            shutil.rmtree(entry.path, ignore_errors=True)


def listed_names(folder: Path, manifest: str, rows: str, keys: tuple[str, ...],
                 pattern: str | None = None) -> list[str]:
    """What a new set replaces in ``folder``: the JSON ``manifest`` (first) and the
    files its list ``rows`` names under ``keys`` -- plain file names only (matching
    ``pattern`` when given), never a path out of the folder; an unreadable manifest
    lists only itself."""
    names = [manifest]
    try:
        found = json.loads((folder / manifest).read_text(encoding="utf-8")).get(rows, [])
    except (OSError, ValueError, AttributeError):
        found = []
    for row in found if isinstance(found, list) else []:
        for key in keys:
            name = row.get(key) if isinstance(row, dict) else None
            if isinstance(name, str) and name and Path(name).name == name \
                    and "\\" not in name and name not in (".", "..") \
                    and (pattern is None or re.fullmatch(pattern, name)):
                names.append(name)
    return list(dict.fromkeys(names))


class Staging:
    """``with Staging(folder) as stage:`` write into ``stage.path``, then
    ``stage.commit(new, replaced)``. Leaving the block without a commit (an error)
    removes the staging folder; the target folder is untouched."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        remove_stale(folder)
        tag = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.path = folder / f"{STAGING}{tag}"
        self.aside = folder / f"{ASIDE}{tag}"
        try:
            self.path.mkdir()
        except OSError as exc:
            raise OutputPathError(describe_os_error(exc, self.path)) from None

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc) -> None:
        self._remove(self.path)

    @staticmethod
    def _remove(path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def commit(self, new: list[str], replaced: list[str]) -> None:
        """Move the staged files ``new`` into the folder (in this order: put the manifest
        last) and the folder's files ``replaced`` (those of the previous set, the
        manifest first; missing ones are skipped) out of it. All or nothing: on any
        failure the folder is put back as it was and OutputPathError (or the
        interrupting exception) is raised."""
        aside: list[str] = []
        moved_in: list[str] = []
        doing = self.aside
        try:
            self.aside.mkdir()
            for name in dict.fromkeys([*replaced, *new]):
                doing = self.folder / name
                if os.path.lexists(doing):
                    os.replace(doing, self.aside / name)
                    aside.append(name)
            for name in new:
                doing = self.folder / name
                os.replace(self.path / name, doing)
                moved_in.append(name)
        except BaseException as exc:
            lost = self._roll_back(moved_in, aside)
            if lost:
                self._keep(lost)
                raise OutputPathError(
                    f"cannot write {doing} and could not put back {', '.join(lost)}: the "
                    f"previous files are in {self.aside}; move them back by hand") from None
            self._remove(self.aside)
            if isinstance(exc, OSError):
                raise OutputPathError(describe_os_error(exc, doing)) from None
            raise
        self._remove(self.aside)

    def _keep(self, lost: list[str]) -> None:
        """Mark the aside folder as holding previous files to put back by hand, so no
        later transaction (of this process or another) removes it; best effort (a full
        disk: this process still keeps it, :func:`_stale`)."""
        with contextlib.suppress(OSError):
            (self.aside / KEEP).write_text(
                f"Terrain Erosion could not put these files back into {self.folder}: "
                f"{', '.join(lost)}. Move them back by hand, then delete this folder.\n",
                "utf-8")

    def _roll_back(self, moved_in: list[str], aside: list[str]) -> list[str]:
        """Undo a commit's renames; returns the previous files that could not be put
        back (then the aside folder is kept)."""
        for name in reversed(moved_in):
            with contextlib.suppress(OSError):
                os.replace(self.folder / name, self.path / name)
        lost = []
        for name in reversed(aside):
            try:
                os.replace(self.aside / name, self.folder / name)
            except OSError:
                lost.append(name)
        return lost
