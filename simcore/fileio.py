"""Safe file writes and the checks made before any work starts.

Every file the project writes goes through :func:`atomic_write`: a temporary file in
the target's folder, fsync, then one rename over the target. The previous file stays
intact until the new one is complete; the temporary file is removed on every exit path
(errors, Ctrl+C, SIGTERM); a temporary left by a killed process is swept on the next
write to the same name. New files get the user's umask; a file that already exists
keeps its permission bits; a symlink keeps pointing where it pointed (its target is
replaced).

:func:`check_output` runs the same checks up front (a folder that exists, not a
directory, writable, enough free space for the estimate), so a bad path is refused
before the first particle falls. :func:`check_memory` refuses work that cannot fit.
:func:`check_input` is what every reader calls before opening a file: a FIFO or a
device would block for ever (or never end), so anything but a regular file is refused.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from .errors import InputFileError, OutputPathError, ResourceError, describe_os_error

TEMP_SUFFIX = ".tmp"
#: A leftover temporary file of a dead process is removed on the next write
#: (on Windows, where process ids cannot be probed safely, once it is this old).
STALE_SECONDS = 24 * 3600
#: Signals that end a process and are turned into a clean-up while a file is written.
_CLEANUP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP")
                         if hasattr(signal, n))


def _mb(n: float) -> str:
    return f"{n / 2**20:,.1f} MB" if n < 2**30 else f"{n / 2**30:,.2f} GB"


def resolve_target(path: str | os.PathLike) -> Path:
    """The file that will really be written: a symlink's final target, else ``path``."""
    p = Path(path)
    if p.is_symlink():
        return Path(os.path.realpath(p))
    return p


def _temp_prefix(target: Path) -> str:
    return f".{target.name}.te-"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (always True where that cannot be told)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


#: a lock file younger than this whose pid cannot be read is being written: held
LOCK_GRACE_SECONDS = 10.0


def _lock_owner(lock: Path) -> tuple[int | None, str]:
    """The pid and host written in ``lock`` (None: unreadable or not written yet)."""
    try:
        text = lock.read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        return None, ""
    if text and text[0].isdigit():
        return int(text[0]), (text[1] if len(text) > 1 else "")
    return None, ""


def _lock_held(lock: Path, pid: int | None, host: str) -> bool:
    """Whether the run that wrote ``lock`` may still run: its pid is alive (or on another
    host, where that cannot be told), or it is so new its pid is not written yet."""
    if pid is None:
        try:
            return time.time() - lock.stat().st_mtime < LOCK_GRACE_SECONDS
        except OSError:
            return False
    if host and host != _host():
        return True
    return pid == os.getpid() or pid_alive(pid)


def _host() -> str:
    import socket

    name = socket.gethostname().split()
    return name[0] if name else ""


@contextlib.contextmanager
def output_lock(output: str | os.PathLike, flag: str = "--output",
                lock_path: str | os.PathLike | None = None) -> Iterator[Path]:
    """Hold ``<output>.lock`` (or ``lock_path``) while a run writes ``output``: the file
    is created with O_EXCL and holds this process's pid and host; it is removed when
    the block ends.
    A lock of a run that still runs refuses with an OutputPathError naming it; one whose
    process no longer runs (killed) is taken over. Creating the lock is also the check
    that the folder can be written."""
    out = Path(output)
    lock = Path(lock_path) if lock_path is not None else out.with_name(out.name + ".lock")
    for _ in range(5):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pid, host = _lock_owner(lock)
            if _lock_held(lock, pid, host):
                who = f"pid {pid}{f' on {host}' if host else ''}" if pid else "a new run"
                raise OutputPathError(
                    f"{flag} {out}: another run ({who}) is writing it (lock file {lock}); "
                    "wait for it to end, or delete the lock file if that run is gone"
                ) from None
            aside = lock.with_name(f"{lock.name}.stale-{os.getpid()}")
            try:  # take the stale lock over: out of the way, then create ours
                os.replace(lock, aside)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise OutputPathError(describe_os_error(exc, lock)) from None
            if _lock_owner(aside) != (pid, host):  # a new run's lock came in between
                with contextlib.suppress(OSError):
                    os.link(aside, lock)
            with contextlib.suppress(OSError):
                os.unlink(aside)
            continue
        except OSError as exc:
            raise OutputPathError(f"{flag}: {describe_os_error(exc, lock)}") from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(f"{os.getpid()} {_host()}\n")
            break
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(lock)
            if isinstance(exc, OSError):
                raise OutputPathError(f"{flag}: {describe_os_error(exc, lock)}") from None
            raise
    else:
        raise OutputPathError(f"{flag} {out}: cannot take the lock file {lock}; try again")
    try:
        yield lock
    finally:
        with contextlib.suppress(OSError):
            if _lock_owner(lock)[0] == os.getpid():
                os.unlink(lock)


def remove_stale_temps(target: Path) -> list[Path]:
    """Remove temporary files of ``target`` left by processes that no longer run."""
    removed: list[Path] = []
    prefix = _temp_prefix(target)
    try:
        siblings = list(target.parent.iterdir())
    except OSError:
        return removed
    for sib in siblings:
        name = sib.name
        if not (name.startswith(prefix) and name.endswith(TEMP_SUFFIX)):
            continue
        pid_text = name[len(prefix):-len(TEMP_SUFFIX)].split("-")[0]
        try:
            pid = int(pid_text)
        except ValueError:
            continue
        try:
            old = time.time() - sib.stat().st_mtime > STALE_SECONDS
            if pid != os.getpid() and (not pid_alive(pid) or (os.name != "posix" and old)):
                sib.unlink()
                removed.append(sib)
        except OSError:
            continue
    return removed


def _new_temp(target: Path) -> tuple[int, Path]:
    """Create an empty temporary file next to ``target``; mode 0o666 minus the umask,
    or the existing target's permission bits."""
    for attempt in range(100):
        tmp = target.parent / (f"{_temp_prefix(target)}{os.getpid()}-"
                               f"{threading.get_ident() % 10**6}-{attempt}{TEMP_SUFFIX}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)
        except FileExistsError:
            continue
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except OSError:
            mode = None
        if mode is not None:
            with contextlib.suppress(OSError):
                os.chmod(tmp, mode)
        return fd, tmp
    raise OutputPathError(f"cannot write {target}: too many temporary files next to it; "
                          f"remove the {_temp_prefix(target)}* files in {target.parent}")


class _Terminated(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum, _frame):
    raise _Terminated(signum)


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """While writing: SIGTERM/SIGHUP raise, so the temporary file is removed; the
    signal is delivered again afterwards with the previous handler in place."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for sig in _CLEANUP_SIGNALS:
        old = signal.getsignal(sig)
        if old is None or old == signal.SIG_IGN:  # set outside Python, or ignored
            continue
        try:
            signal.signal(sig, _raise_terminated)
            previous[sig] = old
        except (ValueError, OSError):
            continue
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _file_for(fd: int) -> IO[bytes]:
    """The file object writers get (a seam for fault-injection tests)."""
    return os.fdopen(fd, "wb")


def atomic_write(path: str | os.PathLike, writer: Callable[[IO[bytes]], Any]) -> Path:
    """Write ``path`` by calling ``writer(file)``; all or nothing.

    Raises :class:`OutputPathError` naming the path for any file-system failure; the
    previous file (if any) is left as it was and no temporary file remains.
    """
    shown = Path(path)
    target = _checked_target(shown)
    remove_stale_temps(target)
    tmp: Path | None = None
    try:
        with _signals_raise():
            try:
                fd, tmp = _new_temp(target)
                with _file_for(fd) as f:
                    writer(f)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, target)
                tmp = None
            finally:
                if tmp is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
    except _Terminated as exc:
        if hasattr(signal, "raise_signal"):
            signal.raise_signal(exc.signum)
        raise SystemExit(128 + exc.signum) from None
    except OSError as exc:
        raise OutputPathError(describe_os_error(exc, shown)) from None
    _fsync_dir(target.parent)
    return shown


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _checked_target(shown: Path) -> Path:
    """The file to write for ``shown``, checked; a name the system refuses (too long,
    a NUL byte) is an OutputPathError like any other bad path, not a traceback."""
    if "\0" in os.fspath(shown):  # pathlib's checks take it for a missing folder
        raise OutputPathError(f"cannot write {str(shown)!r}: the path has a NUL byte; "
                              "fix the path")
    try:
        target = resolve_target(shown)
        _check_target(shown, target)
    except OSError as exc:
        raise OutputPathError(describe_os_error(exc, shown)) from None
    except ValueError as exc:  # "embedded null byte"
        if isinstance(exc, OutputPathError):
            raise
        raise OutputPathError(f"cannot write {shown!r}: {exc}; fix the path") from None
    return target


def _check_target(shown: Path, target: Path) -> None:
    if target.is_dir():
        raise OutputPathError(f"cannot write {shown}: it is a folder; give a file name")
    parent = target.parent
    if not parent.exists():
        raise OutputPathError(f"cannot write {shown}: folder {parent} does not exist; "
                              "create it or choose another folder")
    if not parent.is_dir():
        raise OutputPathError(f"cannot write {shown}: {parent} is a file, not a folder; "
                              "fix the path")


#: what a long run (sweep, tile) keeps free beyond its estimate: the estimate is rough
#: and the disk is shared (see :func:`space_margin`)
SPACE_MARGIN = 64 * 2**20


def space_margin(estimate_bytes: int) -> int:
    """Free space a long run asks for beyond its estimate: 64 MB and a tenth more."""
    return SPACE_MARGIN + max(0, estimate_bytes) // 10


def check_output(path: str | os.PathLike, estimate_bytes: int = 0,
                 suffixes: tuple[str, ...] = ()) -> Path:
    """Refuse an output path now rather than after the work: wrong suffix, a folder,
    a missing or read-only folder, or less free space than ``estimate_bytes``."""
    shown = Path(path)
    if suffixes and shown.suffix.lower() not in suffixes:
        raise OutputPathError(f"cannot write {shown}: use one of {', '.join(suffixes)}")
    target = _checked_target(shown)
    try:
        fd, tmp = _new_temp(target)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise OutputPathError(describe_os_error(exc, shown)) from None
    check_space(shown, target.parent, estimate_bytes)
    return shown


def check_space(shown: str | os.PathLike, folder: str | os.PathLike, estimate_bytes: int,
                margin: int = 0) -> None:
    """ResourceError naming ``shown`` when the disk of ``folder`` has less free space
    than ``estimate_bytes`` plus ``margin`` (nothing when the estimate is 0, or the free
    space cannot be told)."""
    if estimate_bytes <= 0:
        return
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return
    if free < estimate_bytes + margin:
        spare = f" and {_mb(margin)} to spare" if margin > 0 else ""
        raise ResourceError(
            f"cannot write {shown}: it needs about {_mb(estimate_bytes)}{spare} but only "
            f"{_mb(free)} is free on that disk; free some space or choose another folder")


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def make_folder(folder: str | os.PathLike, flag: str = "") -> Path:
    """Create the output folder ``folder`` (and its parents); an OutputPathError saying
    what to do (prefixed by the command-line ``flag`` that named it) when it cannot be
    made: a parent is a file, no permission, a full disk."""
    out = Path(folder)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        said = describe_os_error(exc, out, "create the folder")
        raise OutputPathError(f"{flag}: {said}" if flag else said) from None
    return out


def check_input(path: str | os.PathLike) -> Path:
    """Refuse an input that is not a regular file, before anything opens it: opening a
    FIFO waits for a writer for ever, a device never ends. InputFileError naming the
    path; a folder, or a path that cannot be looked at, is left to the reader's own
    open (and its message)."""
    shown = Path(path)
    try:
        mode = os.stat(shown).st_mode
    except (OSError, ValueError):
        return shown
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # a folder: the reader says so
        kind = next((text for test, text in _KINDS if test(mode)), "not a file")
        raise InputFileError(f"cannot read {shown}: it is {kind}, not a regular file; "
                             "give the path of a file")
    return shown


def open_input(path: str | os.PathLike) -> IO[bytes]:
    """Open the input ``path`` for reading in binary, refusing what is not a regular
    file as :func:`check_input` does, but judged on the file actually opened: a file
    replaced by a FIFO between a check and the open (a bake frame read ahead while it
    is being replaced) cannot make the reader wait for ever. The open does not block
    (O_NONBLOCK where the system has it); OSError as ``open`` raises it (a folder:
    IsADirectoryError)."""
    shown = Path(path)
    fd = os.open(shown, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(shown))
        if not stat.S_ISREG(mode):
            kind = next((text for test, text in _KINDS if test(mode)), "not a file")
            raise InputFileError(f"cannot read {shown}: it is {kind}, not a regular file; "
                                 "give the path of a file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


#: Environment variable that replaces the measured available memory (bytes, or a number
#: with K, M or G: "512M"): lets tests and users see what a run on a smaller machine
#: would be told.
MEMORY_ENV = "TERRAIN_EROSION_AVAILABLE_MEMORY"


def _memory_override() -> int | None:
    text = os.environ.get(MEMORY_ENV, "").strip().upper().removesuffix("B").removesuffix("I")
    if not text:
        return None
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    try:
        value = float(text[:-1] if scale > 1 else text)
    except ValueError:
        return None
    return int(value * scale) if math.isfinite(value) and value >= 0 else None


def _windows_available() -> int | None:
    import ctypes

    class MemoryStatusEx(ctypes.Structure):
        _fields_ = [("dwLength", ctypes.c_ulong), ("dwMemoryLoad", ctypes.c_ulong),
                    ("ullTotalPhys", ctypes.c_ulonglong), ("ullAvailPhys", ctypes.c_ulonglong),
                    ("ullTotalPageFile", ctypes.c_ulonglong),
                    ("ullAvailPageFile", ctypes.c_ulonglong),
                    ("ullTotalVirtual", ctypes.c_ulonglong),
                    ("ullAvailVirtual", ctypes.c_ulonglong),
                    ("ullAvailExtendedVirtual", ctypes.c_ulonglong)]

    status = MemoryStatusEx()
    status.dwLength = ctypes.sizeof(MemoryStatusEx)
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):  # type: ignore
        return None
    return int(status.ullAvailPhys)


def _macos_available() -> int | None:
    """Free, speculative and purgeable pages plus the file cache: what macOS hands out
    without paging (sysctl; None if the free page count is unknown)."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.dylib")

    def sysctl(name: str) -> int | None:
        value = ctypes.c_uint64(0)
        size = ctypes.c_size_t(ctypes.sizeof(value))
        if libc.sysctlbyname(name.encode(), ctypes.byref(value), ctypes.byref(size),
                             None, ctypes.c_size_t(0)) != 0:
            return None
        return int(value.value) if size.value == 8 else int(value.value & 0xFFFFFFFF)

    page, free = sysctl("hw.pagesize"), sysctl("vm.page_free_count")
    if not page or free is None:
        return None
    pages = free + sum(sysctl(f"vm.page_{k}_count") or 0
                       for k in ("speculative", "purgeable", "pageable_external"))
    return pages * page


def available_memory() -> int | None:
    """Bytes of physical memory available to a new allocation, or None if unknown:
    Linux MemAvailable (/proc/meminfo), Windows GlobalMemoryStatusEx, macOS free +
    reclaimable pages, other systems sysconf; :data:`MEMORY_ENV` overrides it."""
    override = _memory_override()
    if override is not None:
        return override
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    with contextlib.suppress(Exception):  # ctypes: any failure means "unknown"
        if sys.platform == "win32":
            return _windows_available()
        if sys.platform == "darwin":
            return _macos_available()
    with contextlib.suppress(ValueError, OSError, AttributeError):
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return None


def check_memory(need_bytes: int, what: str) -> None:
    """Refuse work needing more memory than is available, saying how much it needs."""
    have = available_memory()
    if have is not None and need_bytes > have:
        raise ResourceError(f"{what} needs about {_mb(need_bytes)} of memory but only "
                            f"{_mb(have)} is available; use a smaller grid or close other "
                            "programs")
