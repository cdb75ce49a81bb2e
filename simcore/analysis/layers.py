"""Display values for the terrain arrays and fast conversion to per-vertex float32
buffers (what a mesh attribute stores)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels import numba_cache  # noqa: F401 - a failing cache write is a warning
from ..kernels.sampling import sample_bilinear
from ..processes import FIELDS, PROCESSES

#: Pool depth (cell units) above which a cell counts as wet (lakes, the sea, te_wet).
WET_DEPTH = 1e-6
#: Depth (cell units) that maps to mid-gray for the depth-like arrays.
HALF_GRAY_DEPTH = 1.0
#: Arrays shown as d / (d + HALF_GRAY_DEPTH): the depths of simcore/fields.py.
DEPTH_LIKE = tuple(f.name for f in FIELDS.values() if f.kind == "depth" and f.color)
#: The array of the exposed rock layer (kept by the simulation on a rock column).
ROCK_LAYER = "rock_layer"
#: The float layer of each process's change: ``te_change_<process>`` (local units).
CHANGE_LAYER_PREFIX = "te_change_"
#: The float layers' names start so; a map (export, a multi-layer EXR channel) is the
#: layer's name without it.
LAYER_PREFIX = "te_"


def produced(processes, rock: bool = False) -> list[str]:
    """The terrain arrays with a float layer (``Field.exact``) that ``processes``
    write, in their order (a name that is no process is passed over), then, on a rock
    column (``rock``), the exposed layer the simulation keeps."""
    names: list[str] = []
    for name in processes:
        for out in (PROCESSES[name].writes if name in PROCESSES else ()):
            if out in FIELDS and FIELDS[out].exact and out not in names:
                names.append(out)
    if rock:
        names.append(ROCK_LAYER)
    return names


def float_layer(terrain, kind: str, name: str, height_unit: float
                ) -> tuple[str, np.ndarray, float]:
    """One float layer of the add-on for ``terrain``: kind 'float' (``name`` = a
    terrain array with ``Field.exact``) or 'change' (``name`` = a process of
    ``terrain.changes``). Returns (attribute name, simcore array, factor): the layer's
    values are the array times the factor -- lengths (cell units) times
    ``height_unit`` (local units per cell unit), 0..1 maps and factors as they are.
    The one mapping from a Terrain to the layers: the add-on's write-back
    (addon/data/writeback.py) and :func:`exported_maps` (the CLI's EXR) both use it."""
    if kind == "change":
        return CHANGE_LAYER_PREFIX + name, terrain.changes[name], float(height_unit)
    f = FIELDS[name]
    if not f.exact:
        raise KeyError(f"terrain array '{name}' has no float layer")
    return f.exact, getattr(terrain, name), float(height_unit) if f.is_length else 1.0


def exported_maps(terrain, height_unit: float, processes=None) -> dict[str, np.ndarray]:
    """What the add-on's export writes for a mesh holding ``terrain``: ``height`` (the
    ground, bedrock + sediment) and every float layer -- the arrays ``processes`` write
    (default: those of ``terrain.changes``) and each process's change -- named as the
    layer without ``te_``, float64 in local units (cell-unit lengths times
    ``height_unit``; the CLI passes the cell size: world units)."""
    ran = list(terrain.changes) if processes is None else list(processes)
    unit = float(height_unit)
    maps = {"height": terrain.height() * unit}
    items = ([("float", n) for n in produced(ran, terrain.rock is not None)]
             + [("change", p) for p in terrain.changes])
    for kind, name in items:
        attribute, values, factor = float_layer(terrain, kind, name, unit)
        maps[attribute[len(LAYER_PREFIX):]] = np.asarray(values, np.float64) * factor
    return maps


@njit(cache=True, nogil=True, error_model="numpy")
def _into(values, scale, order, out, stride, offset):
    """out[order[i] * stride + offset] = values.flat[i] * scale as float32; True if any
    value differs from what ``out`` held (NaN never equals: a fresh buffer is all
    changed). Releases the GIL: a run's worker thread calls it while the UI draws."""
    flat = values.ravel()
    changed = False
    for i in range(flat.size):
        j = i if order.size == 0 else order[i]
        k = j * stride + offset
        v = np.float32(flat[i] * scale)
        if out[k] != v:
            out[k] = v
            changed = True
    return changed


@njit(cache=True, nogil=True, error_model="numpy")
def _gray_into(values, depth_like, order, rgba):
    """Gray RGBA (alpha 1) of ``values`` into a flat (n * 4) float32 buffer; True if
    any value changed (see _into)."""
    flat = values.ravel()
    changed = False
    for i in range(flat.size):
        v = flat[i]
        if depth_like:
            v = max(v, 0.0)
            g = np.float32(v / (v + HALF_GRAY_DEPTH))
        else:
            g = np.float32(min(max(v, 0.0), 1.0))
        k = 4 * (i if order.size == 0 else order[i])
        if rgba[k] != g or rgba[k + 1] != g or rgba[k + 2] != g or rgba[k + 3] != 1.0:
            rgba[k] = g
            rgba[k + 1] = g
            rgba[k + 2] = g
            rgba[k + 3] = 1.0
            changed = True
    return changed


@njit(cache=True, nogil=True, error_model="numpy")
def _water_into(height, pool, scale, below, order, co, wet):
    """Water surface z (ground + pool where wet, ``below`` cells under the ground
    elsewhere, times ``scale``) into the z of flat (n * 3) positions and 1/0 into
    ``wet``; True if anything changed."""
    h = height.ravel()
    p = pool.ravel()
    changed = False
    for i in range(h.size):
        j = i if order.size == 0 else order[i]
        is_wet = p[i] > WET_DEPTH
        z = np.float32((h[i] + p[i] if is_wet else h[i] - below) * scale)
        w = np.float32(1.0 if is_wet else 0.0)
        if co[3 * j + 2] != z or wet[j] != w:
            co[3 * j + 2] = z
            wet[j] = w
            changed = True
    return changed


def _order(order: np.ndarray | None) -> np.ndarray:
    return np.empty(0, np.int64) if order is None else order


def to_vertices(values: np.ndarray, out: np.ndarray, scale: float = 1.0,
                order: np.ndarray | None = None) -> np.ndarray:
    """``out[order[i]] = values.flat[i] * scale`` into a float32 buffer (no order:
    identity). One pass, no temporaries."""
    _into(values, float(scale), _order(order), out, 1, 0)
    return out


def vertex_values(values: np.ndarray, out: np.ndarray, scale: float = 1.0,
                  order: np.ndarray | None = None, stride: int = 1,
                  offset: int = 0) -> bool:
    """Like :func:`to_vertices` into a flat float32 buffer of ``stride`` values per
    vertex, at ``offset`` in each (positions: stride 3, offset 2 is z); returns True if
    any value changed (a buffer filled with NaN counts as all changed). Cost: one pass,
    4 bytes written per vertex."""
    return bool(_into(values, float(scale), _order(order), out, int(stride), int(offset)))


def vertex_gray(name: str, values: np.ndarray, rgba: np.ndarray,
                order: np.ndarray | None = None) -> bool:
    """Gray of ``values`` into a flat (n * 4) float32 RGBA buffer (alpha 1): depths
    (sediment, pool) as d / (d + 1 cell), so 1 cell of sand is mid-gray; maps that are
    already 0..1 (stream, vegetation, wind) clipped. True if any vertex's color
    changed."""
    return bool(_gray_into(values, name in DEPTH_LIKE, _order(order), rgba))


def water_vertices(height: np.ndarray, pool: np.ndarray, scale: float, co: np.ndarray,
                   wet: np.ndarray, order: np.ndarray | None = None,
                   below: float = 0.5) -> bool:
    """The water surface object's vertices: z of :func:`water_surface` (times
    ``scale``: local units) into flat (n * 3) float32 positions whose x, y are already
    set, and its ``te_wet`` layer (1 in water) into ``wet``; one pass, no temporaries.
    True if anything changed."""
    return bool(_water_into(height, pool, float(scale), float(below), _order(order), co,
                            wet))


def tree_points(trees: np.ndarray, height: np.ndarray, x0: float, y0: float,
                cell_x: float, cell_y: float, height_unit: float | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Trees (rows of column, row, size) as points on the ground: (k, 3) float32 local
    positions (height in cell units, times ``height_unit``: by default the geometric
    mean of ``cell_x`` and ``cell_y``) and (k,) float32 sizes."""
    if height_unit is None:
        height_unit = float(np.sqrt(cell_x * cell_y))
    co = np.empty((len(trees), 3), np.float32)
    co[:, 0] = x0 + trees[:, 0] * cell_x
    co[:, 1] = y0 + trees[:, 1] * cell_y
    co[:, 2] = sample_bilinear(height, trees[:, 1], trees[:, 0]) * height_unit
    return co, np.ascontiguousarray(trees[:, 2], np.float32)


def water_surface(height: np.ndarray, pool: np.ndarray, below: float = 0.5) -> np.ndarray:
    """Heights of a water surface mesh (cell units): ground + pool depth where there is
    water, ``below`` cells under the ground elsewhere (hidden by the terrain)."""
    return np.where(pool > WET_DEPTH, height + pool, height - below)
