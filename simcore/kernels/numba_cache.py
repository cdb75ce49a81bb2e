"""numba's on-disk cache must never break a run.

Every kernel is ``cache=True``: on first use numba compiles it and writes the result next
to the code or into ``NUMBA_CACHE_DIR`` (inside Blender, the extension's user folder). A
write that fails there -- a full disk, a quota, a folder made read-only after start --
raises out of the kernel call in numba and ends the run. :func:`install` makes such a
failure, for this package's kernels only, one warning per process: the kernel is
compiled and runs as usual, it is just compiled again next time.

A cache index numba cannot read back -- written by an earlier version of this package
whose kernels took a type since renamed (numba unpickles the index before it checks
that it is stale), or damaged -- is stale: it is removed and the kernel compiled again,
where numba would raise (AttributeError: Can't get attribute '_Kernel' ...) out of the
first run after an upgrade, since the cache folder outlives the extension's files.

numba takes a cached kernel for current while the kernel's own file is unchanged: a
kernel compiled with an inline helper of ``kernels.py`` stayed cached after the helper
changed, and ran the old code. A kernel of this package is current only while every
``.py`` file of the package is unchanged (:func:`sources_digest`). (Kernels imported
from a zip keep numba's own stamp: its zip locator does not take this one.)
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import pickle
import time
import warnings
from pathlib import Path

#: the package whose kernels are guarded ("simcore", or the add-on's vendored copy;
#: this module lives in its ``kernels`` folder)
_ROOT = __name__.rsplit(".", 2)[0]
#: its folder: its kernels' cache stamps include :func:`sources_digest` of it
_FOLDER = str(Path(__file__).resolve().parent.parent)
_digests: dict[tuple, str] = {}
#: a folder's last listing and when it was made (time.monotonic): the kernels of one
#: import, decorated within milliseconds, share it
_listings: dict[str, tuple[float, tuple]] = {}
#: seconds a listing is reused
LISTING_REUSE_S = 1.0


def _listing(root: str) -> tuple:
    """(name, mtime_ns, size) of every ``.py`` file under ``root``, sorted."""
    out = []
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                st = os.stat(os.path.join(here, f))
                out.append((os.path.relpath(os.path.join(here, f), root), st.st_mtime_ns,
                            st.st_size))
    return tuple(sorted(out))


def sources_digest(folder: str = _FOLDER) -> str:
    """SHA-256 of the names and bytes of every ``.py`` file under ``folder``: part of
    the cache stamp of every kernel there, so that a change to any of them -- an inline
    helper, a constant a kernel reads -- compiles the kernels again. Read again when a
    file's time or size changed (a reload in a running process; the files are listed
    again once LISTING_REUSE_S has passed); a folder that cannot be read gives a digest
    of its own each time (compiled, never stale)."""
    try:
        now = time.monotonic()
        made, listing = _listings.get(folder, (-math.inf, ()))
        if now - made > LISTING_REUSE_S:
            listing = _listing(folder)
            _listings[folder] = (now, listing)
        key = (folder, listing)
        if key not in _digests:
            h = hashlib.sha256()
            for name, _, _ in listing:
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(name.replace(os.sep, "/").encode() + b"\0" + f.read() + b"\0")
            _digests[key] = h.hexdigest()
        return _digests[key]
    except OSError:
        return os.urandom(16).hex()


def _package_of(py_file: str, folders: set[str]) -> str | None:
    """The folder in ``folders`` that holds ``py_file``, if any."""
    with contextlib.suppress(OSError, ValueError):
        path = str(Path(py_file).resolve())
        for folder in tuple(folders):  # another copy may add its folder meanwhile
            if path.startswith(folder + os.sep):
                return folder
    return None


class CacheWarning(UserWarning):
    """numba could not write its cache; the run goes on."""


def _ours(cache, roots: set[str]) -> bool:
    module = getattr(getattr(cache, "_py_func", None), "__module__", None) or ""
    return any(module == root or module.startswith(root + ".") for root in roots)


#: what reading an index numba cannot use raises: a type or module gone since it was
#: written, a truncated or damaged file
STALE_INDEX = (AttributeError, ImportError, EOFError, pickle.UnpicklingError)


def _drop_index(cache) -> None:
    """Remove the index file of ``cache`` (numba then starts a fresh one)."""
    path = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    if path:
        with contextlib.suppress(OSError):
            os.remove(path)


def _stamp_with_sources(caching) -> None:
    """Make the cache stamp of this package's kernels include :func:`sources_digest`
    (idempotent; other files keep numba's stamp, a numba without that locator too)."""
    mixin = getattr(caching, "_SourceFileBackedLocatorMixin", None)
    current = getattr(mixin, "get_source_stamp", None)
    if current is None:
        return
    folders = getattr(current, "_terrain_erosion_folders", None)
    if folders is not None:
        folders.add(_FOLDER)
        return
    original = current
    folders = {_FOLDER}  # the packages (another copy adds its own) whose kernels depend
    # on all their files

    def get_source_stamp(self):
        stamp = original(self)
        folder = _package_of(getattr(self, "_py_file", ""), folders)
        return stamp if folder is None else (stamp, sources_digest(folder))

    get_source_stamp._terrain_erosion_folders = folders  # type: ignore[attr-defined]
    mixin.get_source_stamp = get_source_stamp  # type: ignore[union-attr]


def install() -> None:
    """Guard numba's cache writes for this package's kernels (idempotent; other
    packages' kernels keep numba's own behaviour)."""
    try:
        from numba.core import caching

        current = caching.Cache.save_overload
    except (ImportError, AttributeError):  # another numba: its own behaviour, unguarded
        return
    _stamp_with_sources(caching)
    roots = getattr(current, "_terrain_erosion_roots", None)
    if roots is not None:
        roots.add(_ROOT)
        return
    original = current
    original_load = caching.Cache.load_overload
    warned: list[str] = []
    guarded = {_ROOT}  # the packages whose kernels are guarded (another copy adds its own)

    def load_overload(self, *args, **kwargs):
        try:
            return original_load(self, *args, **kwargs)
        except STALE_INDEX:
            if not _ours(self, guarded):
                raise
            _drop_index(self)
            return None  # not cached: numba compiles it

    def save_overload(self, *args, **kwargs):
        try:
            try:
                return original(self, *args, **kwargs)
            except STALE_INDEX:
                if not _ours(self, guarded):
                    raise
                _drop_index(self)
                return original(self, *args, **kwargs)
        except OSError as exc:
            if not _ours(self, guarded):
                raise
            if not warned:
                warned.append(str(exc))
                where = getattr(self, "_cache_path", "its cache folder")
                warnings.warn(f"numba could not write its cache in {where} "
                              f"({exc.strerror or exc}); the run goes on, and kernels are "
                              "compiled again next time: free some space there or set "
                              "NUMBA_CACHE_DIR to a writable folder", CacheWarning,
                              stacklevel=2)
            return None

    save_overload._terrain_erosion_roots = guarded  # type: ignore[attr-defined]
    caching.Cache.save_overload = save_overload  # type: ignore[method-assign]
    caching.Cache.load_overload = load_overload  # type: ignore[method-assign]


install()  # every module with kernels imports this one before its first kernel runs
