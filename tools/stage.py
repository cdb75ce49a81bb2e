"""Assemble the extension package folder: addon/* at the root, simcore/ and presets/
inside it, plus the manifest. Used by the tests (imported as a package) and packaging.

Files are copied with their modification times (copy2) and only when changed, so the
numba cache inside the staged folder stays valid between runs.
"""

from __future__ import annotations

import filecmp
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "terrain_erosion"


def _sync(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    wanted = set()
    for item in src.iterdir():
        if item.name == "__pycache__" or item.name.startswith("."):
            continue
        wanted.add(item.name)
        target = dst / item.name
        if item.is_dir():
            _sync(item, target)
        elif not target.exists() or not filecmp.cmp(item, target, shallow=False):
            shutil.copy2(item, target)
    for old in dst.iterdir():
        if old.name not in wanted and old.name != "__pycache__":
            shutil.rmtree(old) if old.is_dir() else old.unlink()


def stage(dest_parent: Path | None = None) -> Path:
    """Build ``<dest_parent>/terrain_erosion`` and return its path."""
    dest_parent = dest_parent or ROOT / "build" / "stage"
    pkg = dest_parent / PACKAGE
    pkg.mkdir(parents=True, exist_ok=True)
    tmp = dest_parent / ".layout"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    for item in (ROOT / "addon").iterdir():
        if item.name != "__pycache__":
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, tmp / item.name)
    shutil.copytree(ROOT / "simcore", tmp / "simcore",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "presets", tmp / "presets")
    shutil.copy2(ROOT / "blender_manifest.toml", tmp / "blender_manifest.toml")
    _sync(tmp, pkg)
    shutil.rmtree(tmp)
    return pkg


def import_staged(dest_parent: Path | None = None) -> ModuleType:
    """Stage the package and import it as ``terrain_erosion`` (once per process), from its
    folder, without adding anything to ``sys.path``."""
    if PACKAGE in sys.modules:
        return sys.modules[PACKAGE]
    pkg = stage(dest_parent)
    spec = importlib.util.spec_from_file_location(
        PACKAGE, pkg / "__init__.py", submodule_search_locations=[str(pkg)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[PACKAGE]
        raise
    return module


if __name__ == "__main__":
    print(stage())
