"""Our droplet algorithm as a plain C loop (droplet_port.c), called through ctypes.

stdlib + numpy only. Built with ``gcc -O3 -march=native -ffp-contract=off`` into a
per-user temp folder. :func:`port_batch` takes the same arguments as
``simcore.processes.droplets.run_batch`` (uniform rain only) and works on the terrain's own
arrays, so the two can be timed alternately in one process on equal work; their
results are bit-identical.
"""

from __future__ import annotations

import ctypes
import os
import shutil
from pathlib import Path

import numpy as np

from .compile import compile_cached

SOURCE = Path(__file__).resolve().with_name("droplet_port.c")
#: no fused multiply-add: numba does not contract either, and any contraction would
#: change the numbers (so the results could no longer be compared bit for bit)
#: (DROPLET_PORT_MARCH picks another target, e.g. haswell for valgrind)
CFLAGS = ["-O3", f"-march={os.environ.get('DROPLET_PORT_MARCH', 'native')}", "-std=c99",
          "-D_DEFAULT_SOURCE", "-ffp-contract=off", "-shared", "-fPIC"]

_F64P = ctypes.POINTER(ctypes.c_double)
_lib = None


class _Kernel(ctypes.Structure):
    _fields_ = [(name, ctypes.c_double) for name in
                ("Kq", "Kw", "Kr", "Kd", "Ki", "min_slope", "Kg", "radius")] + [
        ("max_steps", ctypes.c_int64), ("dig_area", ctypes.c_double),
        ("deposit_reach", ctypes.c_double), ("slope_run", ctypes.c_double)]


def port_available() -> bool:
    """True when gcc is on PATH (the C port can be built)."""
    return shutil.which("gcc") is not None


def library(flags: list[str] | None = None) -> ctypes.CDLL:
    """Build (once per source change) and load the shared library."""
    global _lib
    if flags is not None:
        return _load(compile_cached(SOURCE, "gcc", flags, suffix=".so"))
    if _lib is None:
        _lib = _load(compile_cached(SOURCE, "gcc", CFLAGS, suffix=".so"))
    return _lib


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    fn = lib.droplet_port_batch
    fn.restype = ctypes.c_int64
    fn.argtypes = [ctypes.c_uint64, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(_Kernel),
                   ctypes.c_int64, ctypes.c_int64, ctypes.c_int64] + [_F64P] * 6 + [_F64P]
    return lib


def _ptr(a: np.ndarray):
    if a.dtype != np.float64 or not a.flags.c_contiguous:
        raise ValueError("grids must be C-contiguous float64")
    return a.ctypes.data_as(_F64P)


def port_batch(terrain, params, seed: int, first: int, count: int,
               height: np.ndarray | None = None, lib: ctypes.CDLL | None = None) -> int:
    """``simcore.processes.droplets.run_batch`` done by the C port: runs droplets
    ``first .. first+count-1`` on ``terrain`` in place, books the outflow and returns
    the number of droplet steps. ``height`` (bedrock + sediment) is kept in step."""
    from simcore.processes.droplets import strip_margin
    if not np.all(terrain.rain == terrain.rain.flat[0]):
        raise ValueError("the C port supports uniform rain only")
    if height is None:
        height = terrain.height()
    k = params.kernel(terrain.shape, terrain.cell_size)
    kern = _Kernel(*k)
    lost = ctypes.c_double(0.0)
    rows, cols = terrain.shape
    steps = (lib or library()).droplet_port_batch(
        ctypes.c_uint64(seed & 0xFFFFFFFFFFFFFFFF), first, count, ctypes.byref(kern),
        strip_margin(k.radius), rows, cols, _ptr(height), _ptr(terrain.bedrock),
        _ptr(terrain.sediment), _ptr(terrain.eroded), _ptr(terrain.deposited),
        _ptr(terrain.erodibility), ctypes.byref(lost))
    terrain.outflow += lost.value
    return int(steps)
