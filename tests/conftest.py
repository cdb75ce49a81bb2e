"""Shared fixtures. simcore tests never import bpy."""

from __future__ import annotations

import contextlib
import errno
import subprocess
import uuid
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent

# numba compiles on first use: no per-example deadline; keep runs short on 2 cores.
# Derandomized: every run tries the same examples, so a property test fails on every
# run or on none (a failure found at random once failed one CI run and passed the next)
settings.register_profile("project", deadline=None, max_examples=40, derandomize=True,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("project")

#: particles (or passes, cycles) per batch at most in tests: a round stays small
BATCH_CAP = 64


def small_batches(name: str, cap: int = BATCH_CAP):
    """Process ``name``'s default parameters with its batch capped at ``cap`` (the same
    rule for every process: none is named)."""
    from simcore.engine.simulation import process_params

    p = process_params(name)
    return p.replace(batch=min(int(p.batch), cap))


@pytest.fixture
def blender():
    """The ``bpy`` module with the add-on registered, unregistered afterwards (add-on
    tests only: bpy is imported here, never by a simcore test)."""
    from blender_helpers import registered_addon
    with registered_addon() as bpy:
        yield bpy


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "blender: runs in real Blender (the bpy module); `python build.py test "
        "--full` runs these on every Blender line (-m blender)")
    config.addinivalue_line(
        "markers", "compat: an add-on test of what differs between Blender lines (the "
        "compat layer, nodes and materials, EXR, menus, handlers, mesh data): `python "
        "build.py test` runs these on every line, the other add-on tests on 5.0 only")
    config.addinivalue_line(
        "markers", "cold: compiles the core from an empty numba cache in other processes "
        "(the warm-up, the package, the cache's faults): `python build.py test --full` only")


#: add-on test modules whose every test is marked ``compat``
COMPAT_MODULES = {"test_compat", "test_addon", "test_material_addon", "test_exr_addon",
                  "test_engine_tiles_addon", "test_water_data", "test_bake",
                  "test_core_status", "test_ice_surface_addon", "test_ice_snow_faults_addon"}


def pytest_collection_modifyitems(config, items):
    """Tests in a module that imports bpy are add-on tests, marked ``blender``."""
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and "bpy" in vars(module):
            item.add_marker(pytest.mark.blender)
            if module.__name__.rpartition(".")[2] in COMPAT_MODULES:
                item.add_marker(pytest.mark.compat)


@pytest.fixture
def hills():
    """A 64x64 fractal terrain (cell units, relief 16)."""
    from simcore.generators.noise import fractal_terrain
    return fractal_terrain(64, seed=5)


def local_minima(h: np.ndarray, depth: float) -> int:
    """Interior cells lower than all 8 neighbours by more than ``depth``."""
    c = h[1:-1, 1:-1]
    lowest = np.full(c.shape, np.inf)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dy or dx:
                lowest = np.minimum(lowest, h[1 + dy:h.shape[0] - 1 + dy,
                                              1 + dx:h.shape[1] - 1 + dx])
    return int((c < lowest - depth).sum())


class FailingFile:
    """A file that takes ``budget`` bytes, then fails like a full disk (the fault
    suites of the CLI's writers and of bake and export wrap files in it)."""

    def __init__(self, f, budget: int) -> None:
        self._f, self._budget = f, budget

    def write(self, data) -> int:
        data = bytes(data)
        if len(data) > self._budget:
            self._f.write(data[:self._budget])
            self._budget = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        self._budget -= len(data)
        return self._f.write(data)

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


@contextlib.contextmanager
def small_tmpfs(tmp_path: Path, size: str = "64k"):
    """A small real file system of ``size`` (root can mount tmpfs here; otherwise the
    case is skipped: the byte-level injection covers every writer anyway)."""
    mnt = tmp_path / f"mnt-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def deflate_start(path, member: str) -> int:
    """Offset of the compressed data of ``member`` in a zip file (.npz): where a test
    damages a compressed array."""
    import struct
    import zipfile
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        head = f.read(30)
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    return info.header_offset + 30 + name_len + extra_len
