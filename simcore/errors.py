"""One error type for everything a user can cause, and its kinds.

A :class:`UserError` message says what is wrong and what to do. The CLI prints it as
one line and exits 2, the Blender operators report it in the status bar and leave the
scene untouched, the batch command exits 2. Anything else escaping is a bug.

``UserError`` derives from ``ValueError`` so older ``except ValueError`` code still
catches it. The older names stay importable where they were:
``simcore.params.ParameterError``, ``simcore.terrain.TerrainError``,
``simcore.formats.presets.PresetError``, ``simcore.cli.main.CliError`` (defined here).
"""

from __future__ import annotations


class UserError(ValueError):
    """Something the user can fix; the message says what is wrong and what to do."""


class InputFileError(UserError):
    """A file given as input cannot be used (missing, damaged, not ours)."""


class OutputPathError(UserError):
    """An output path cannot be written (folder missing, a directory, read-only, full)."""


class ResourceError(UserError):
    """Not enough memory or disk space for the requested work."""


class CliError(UserError):
    """A mistake in a command line's arguments: printed as one line, exit code 2,
    nothing written."""


def describe_os_error(exc: OSError, path: object, doing: str = "write") -> str:
    """One sentence for a file-system error on ``path`` with what to do about it."""
    import errno

    reason = exc.strerror or str(exc)
    hints = {
        errno.ENOSPC: "free some disk space or choose another folder",
        errno.EDQUOT: "free some space in your quota or choose another folder",
        errno.EACCES: "choose a folder you can write to, or fix its permissions",
        errno.EPERM: "choose a folder you can write to, or fix its permissions",
        errno.EROFS: "the disk is read-only: choose another folder",
        errno.EISDIR: "it is a folder: give a file name",
        errno.ENOENT: "check that the folder exists",
        errno.ENOTDIR: "a part of the path is a file, not a folder: fix the path",
        errno.ENAMETOOLONG: "use a shorter name",
    }
    hint = hints.get(exc.errno or 0, "check the path and try again")
    return f"cannot {doing} {path}: {reason}; {hint}"
