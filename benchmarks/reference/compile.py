"""Build a comparator binary once per source change (stdlib only)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def compile_cached(source: Path, compiler: str, flags: list[str], suffix: str = "") -> Path:
    """Compile ``source`` with ``compiler`` into a per-user temp folder, named by a hash
    of the source and the flags (so two versions never share a binary); build only
    when that binary is missing. Atomic if two runs race.
    ``suffix`` names the output (e.g. ``.so`` with ``-shared -fPIC`` flags)."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    folder = Path(tempfile.gettempdir()) / f"{source.stem}_{uid}"
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha1(" ".join([compiler, *flags]).encode() + source.read_bytes())
    binary = folder / f"{source.stem}-{key.hexdigest()[:10]}{suffix}"  # per source + flags
    if binary.exists():
        return binary
    exe = shutil.which(compiler)
    if exe is None:
        raise RuntimeError(f"{compiler} not found; {source.name} cannot be built")
    tmp = binary.with_name(f"{source.stem}.{os.getpid()}.tmp{suffix}")
    result = subprocess.run([exe, *flags, "-o", str(tmp), str(source), "-lm"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"building {source.name} failed:\n{result.stderr}")
    os.replace(tmp, binary)
    return binary
