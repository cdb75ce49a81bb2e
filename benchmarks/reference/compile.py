"""Build a comparator binary once per source change (stdlib only)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def compile_cached(source: Path, compiler: str, flags: list[str], suffix: str = "") -> Path:
    """Compile ``source`` with ``compiler`` into a per-user temp folder; rebuild only
    when the binary is missing or older than the source. Atomic if two runs race.
    ``suffix`` names the output (e.g. ``.so`` with ``-shared -fPIC`` flags)."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    folder = Path(tempfile.gettempdir()) / f"{source.stem}_{uid}"
    folder.mkdir(parents=True, exist_ok=True)
    tag = hashlib.sha1(" ".join([compiler, *flags]).encode()).hexdigest()[:8]
    binary = folder / f"{source.stem}-{tag}{suffix}"  # other flags, other binary
    if binary.exists() and binary.stat().st_mtime >= source.stat().st_mtime:
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
