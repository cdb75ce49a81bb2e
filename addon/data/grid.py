"""Grid meshes: detect a regular lattice in any vertex order, read and write heights
and layers through the attribute API (foreach_get/foreach_set, no per-vertex loops).

Everything works in the object's local space: the object's transform never matters.
"""

from __future__ import annotations

import dataclasses

import bpy
import numpy as np

from ..simcore.analysis.layers import to_vertices
from ..simcore.errors import UserError
from ..simcore.processes import FIELDS, PROCESSES

#: Our attributes, from the terrain arrays' descriptions (simcore/fields.py): color
#: layers (FLOAT_COLOR, point domain, value as gray 0..1) and float layers with the
#: exact state, in local units. Nothing else is ever touched.
COLOR_LAYERS = {f.name: f.color for f in FIELDS.values() if f.color}
FLOAT_LAYERS = {f.name: f.exact for f in FIELDS.values() if f.exact}
#: Terrain arrays that are lengths (stored in local units on the mesh, cell units in
#: simcore); the other arrays are 0..1 maps stored as they are.
LENGTH_LAYERS = tuple(f.name for f in FIELDS.values() if f.exact and f.is_length)
#: Heights before the first run, kept until the user applies or resets.
ORIGINAL_Z = "te_original_z"
#: How much each process raised (+) or lowered (-) the ground since the original
#: heights (``Terrain.changes``), a float layer per process in local units: together
#: they add up to z - te_original_z.
CHANGE_PREFIX = "te_change_"
CHANGE_LAYERS = {name: CHANGE_PREFIX + name for name in PROCESSES}
OUR_ATTRIBUTES = (set(COLOR_LAYERS.values()) | set(FLOAT_LAYERS.values()) | {ORIGINAL_Z}
                  | set(CHANGE_LAYERS.values()))

MAX_VERTICES = 4096 * 4096


def our_kind(name: str) -> str | None:
    """The data type the add-on gives its point attribute ``name`` (FLOAT or
    FLOAT_COLOR), or None when it writes no attribute of that name on a terrain."""
    if name in COLOR_LAYERS.values():
        return 'FLOAT_COLOR'
    if name in OUR_ATTRIBUTES:
        return 'FLOAT'
    return None


def foreign_namesakes(me: bpy.types.Mesh) -> list[str]:
    """The attributes named like one of the add-on's layers but of a kind it never
    writes (a user's own: a run would replace it), as "'name' (type on domain)". A
    colour layer of ours in bytes or on face corners (an older file) is ours."""
    found = []
    for attr in me.attributes:
        kind = our_kind(attr.name)
        if kind is None:
            continue
        if kind == 'FLOAT_COLOR':
            ok = attr.data_type in ('FLOAT_COLOR', 'BYTE_COLOR') and \
                attr.domain in ('POINT', 'CORNER')
        else:
            ok = attr.data_type == 'FLOAT' and attr.domain == 'POINT'
        if not ok:
            found.append(f"'{attr.name}' ({attr.data_type.lower()} on "
                         f"{attr.domain.lower()})")
    return found


class GridError(UserError):
    """The object is not a usable grid mesh; the message says what to do."""


@dataclasses.dataclass
class Grid:
    """A detected lattice: ``z[order].reshape(rows, cols)`` is the raster (row = local Y,
    column = local X), ``cell_x``/``cell_y`` the local spacing."""

    rows: int
    cols: int
    order: np.ndarray
    cell_x: float
    cell_y: float
    x0: float = 0.0  # local position of raster cell (0, 0)
    y0: float = 0.0

    @property
    def identity(self) -> bool:
        """True when vertex i is raster cell i (row-major, x fastest)."""
        if not hasattr(self, "_identity"):
            self._identity = bool(np.array_equal(self.order, np.arange(self.order.size)))
        return self._identity

    @property
    def cell_size(self) -> float:
        """Spacing used by the simulation (geometric mean when cells are not square)."""
        return float(np.sqrt(self.cell_x * self.cell_y))

    @property
    def square(self) -> bool:
        return abs(self.cell_x / self.cell_y - 1.0) < 0.01


def object_problem(obj: bpy.types.Object | None) -> str | None:
    """Why ``obj`` cannot be eroded (a sentence saying what to do), or None."""
    if obj is None:
        return "Select a grid mesh object (Add > Mesh > Grid) to erode"
    if obj.type != 'MESH':
        return f"'{obj.name}' is a {obj.type.lower()}, not a mesh: select a grid mesh"
    if obj.library is not None or obj.data.library is not None:
        return f"'{obj.name}' is linked from a library: make it local (Object > Relations)"
    if obj.override_library is not None:
        return f"'{obj.name}' is a library override: make it fully local first"
    if obj.mode != 'OBJECT':
        return f"'{obj.name}' is in {obj.mode.replace('_', ' ').title()} mode: press Tab " \
               "to go back to Object Mode"
    me = obj.data
    if me.shape_keys is not None:
        return f"'{obj.name}' has shape keys: apply or remove them before eroding"
    if len(me.vertices) == 0:
        return f"'{obj.name}' has no vertices: add a grid (Add > Mesh > Grid)"
    if len(me.vertices) > MAX_VERTICES:
        return (f"'{obj.name}' has {len(me.vertices):,} vertices; the limit is "
                f"{MAX_VERTICES:,} (4096x4096): use a coarser grid")
    return None


def poll_grid(cls, context) -> bool:
    """An operator's ``poll`` for the active object: True when the add-on can work on
    it, else False with the reason (:func:`object_problem`) as the poll message."""
    problem = object_problem(context.active_object)
    if problem:
        cls.poll_message_set(problem)
        return False
    return True


def read_positions(me: bpy.types.Mesh, out: np.ndarray | None = None) -> np.ndarray:
    """Local vertex positions, (n, 3) float32 (into ``out``, a float32 buffer of n * 3
    values, when given: no allocation)."""
    co = np.empty(len(me.vertices) * 3, np.float32) if out is None else out.reshape(-1)
    me.attributes["position"].data.foreach_get("vector", co)
    return co.reshape(-1, 3)


def detect_grid(me: bpy.types.Mesh, positions: np.ndarray | None = None) -> Grid:
    """Find the rectangular lattice of ``me`` in local XY or raise GridError."""
    nv = len(me.vertices)
    if nv < 9:
        raise GridError(f"the mesh has {nv} vertices; a terrain grid needs at least 3x3")
    co = read_positions(me) if positions is None else positions
    xy = co[:, :2].astype(np.float64)
    lo, hi = xy.min(0), xy.max(0)
    ext = hi - lo
    if np.any(ext <= 0):
        raise GridError("all vertices lie on a line in local XY: a grid must be flat in "
                        "XY with heights in Z")
    q = np.round((xy - lo) / ext * 1e6).astype(np.int64)
    ux, uy = np.unique(q[:, 0]), np.unique(q[:, 1])
    nx, ny = len(ux), len(uy)
    if nx * ny != nv:
        hint = ("if it was rotated or sheared in Edit Mode, undo that or apply the rotation "
                "so rows run along local X and Y" if nx * ny > 2 * nv else
                "it may have missing, extra or loose vertices")
        raise GridError(f"the {nv} vertices do not form a rectangular grid in local XY "
                        f"({nx} distinct X by {ny} distinct Y positions): {hint}")
    for name, u, n in (("X", ux, nx), ("Y", uy, ny)):
        d = np.diff(u.astype(np.float64))
        if n < 3 or not np.allclose(d, d.mean(), rtol=1e-3, atol=2):
            raise GridError(f"the grid spacing along local {name} is not uniform "
                            f"({n} columns): erosion needs evenly spaced vertices")
    ix = np.rint((xy[:, 0] - lo[0]) / ext[0] * (nx - 1)).astype(np.int64)
    iy = np.rint((xy[:, 1] - lo[1]) / ext[1] * (ny - 1)).astype(np.int64)
    flat = iy * nx + ix
    if np.bincount(flat, minlength=nv).max() != 1:
        raise GridError("two vertices share one grid position: merge doubles "
                        "(Mesh > Clean Up > Merge by Distance)")
    if len(me.polygons) != (nx - 1) * (ny - 1):
        raise GridError(f"expected {(nx - 1) * (ny - 1)} quad faces for a {nx}x{ny} grid, "
                        f"found {len(me.polygons)}: the mesh has extra or missing faces")
    sizes = np.empty(len(me.polygons), np.int32)
    me.polygons.foreach_get("loop_total", sizes)
    if np.any(sizes != 4):
        raise GridError("the grid has non-quad faces (triangulated?): use a quad grid")
    order = np.empty(nv, np.int64)
    order[flat] = np.arange(nv)
    return Grid(ny, nx, order, ext[0] / (nx - 1), ext[1] / (ny - 1), lo[0], lo[1])


def read_float_layer(me: bpy.types.Mesh, name: str, grid: Grid) -> np.ndarray | None:
    """A point FLOAT attribute as a raster, or None if absent or of another kind."""
    attr = me.attributes.get(name)
    if attr is None or attr.data_type != 'FLOAT' or attr.domain != 'POINT':
        return None
    values = np.empty(len(me.vertices), np.float32)
    attr.data.foreach_get("value", values)
    return values[grid.order].reshape(grid.rows, grid.cols).astype(np.float64)


def ensure_attribute(me: bpy.types.Mesh, name: str, data_type: str,
                     domain: str = 'POINT') -> bpy.types.Attribute:
    """Our attribute ``name`` of ``data_type`` on ``domain`` (FLOAT, INT, FLOAT_VECTOR or
    FLOAT_COLOR; BYTE_COLOR when a snapshot of an older file puts one back), made if
    missing or of another kind."""
    attr = me.attributes.get(name)
    if attr is not None and (attr.data_type != data_type or attr.domain != domain):
        me.attributes.remove(attr)
        attr = None
    if attr is None:
        if data_type in ('FLOAT_COLOR', 'BYTE_COLOR'):
            attr = me.color_attributes.new(name, data_type, domain)
        else:
            attr = me.attributes.new(name, data_type, domain)
    return attr


def _to_vertices(grid: Grid, raster: np.ndarray, scale: float = 1.0,
                 out: np.ndarray | None = None) -> np.ndarray:
    """Raster -> per-vertex float32 (times ``scale``). A new buffer starts as NaN, so
    every value is written: the kernel skips values equal to what the buffer holds,
    and an uninitialised 0.0 would turn a -0.0 into +0.0."""
    if out is None:
        out = np.full(grid.rows * grid.cols, np.nan, np.float32)
    return to_vertices(raster, out, scale, None if grid.identity else grid.order)


def write_float_layer(me: bpy.types.Mesh, name: str, grid: Grid, raster: np.ndarray,
                      scale: float = 1.0, buffer: np.ndarray | None = None) -> None:
    ensure_attribute(me, name, 'FLOAT').data.foreach_set(
        "value", _to_vertices(grid, raster, scale, buffer))


def write_heights(me: bpy.types.Mesh, grid: Grid, positions: np.ndarray,
                  z: np.ndarray, scale: float = 1.0) -> None:
    """Set local Z of every vertex from a raster; X, Y and topology stay as they are."""
    positions[:, 2] = _to_vertices(grid, z, scale)
    me.attributes["position"].data.foreach_set("vector", positions.ravel())


@dataclasses.dataclass
class MeshSnapshot:
    """Exact copy of positions and our attributes, to restore after a cancelled run."""

    positions: np.ndarray
    attributes: dict[str, tuple[str, np.ndarray]]
    #: names of ours present when taken (kept on restore even if not copied: a kind
    #: the add-on never writes, e.g. a colour layer on face corners of an older file)
    present: frozenset = frozenset()

    @classmethod
    def take(cls, me: bpy.types.Mesh) -> MeshSnapshot:
        saved = {}
        present = set()
        for attr in me.attributes:
            if attr.name not in OUR_ATTRIBUTES:
                continue
            present.add(attr.name)
            if attr.domain == 'POINT' and attr.data_type in ('FLOAT', 'FLOAT_COLOR',
                                                             'BYTE_COLOR'):
                key = "value" if attr.data_type == 'FLOAT' else "color"
                width = 4 if key == "color" else 1
                data = np.empty(len(attr.data) * width, np.float32)
                attr.data.foreach_get(key, data)
                saved[attr.name] = (attr.data_type, data)
        return cls(read_positions(me).copy(), saved, frozenset(present))

    @staticmethod
    def take_vertices(me: bpy.types.Mesh) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Positions and every point FLOAT attribute ('size' of trees, 'te_wet' of
        water) of a helper object."""
        floats = {}
        for attr in me.attributes:
            if attr.data_type == 'FLOAT' and attr.domain == 'POINT':
                values = np.empty(len(me.vertices), np.float32)
                attr.data.foreach_get("value", values)
                floats[attr.name] = values
        return read_positions(me).copy(), floats

    @staticmethod
    def restore_vertices(me: bpy.types.Mesh, saved) -> None:
        """Put back what :meth:`take_vertices` saved: positions and the point FLOAT
        attributes (ones added since are removed). A changed vertex count means loose
        points (trees): they are rebuilt."""
        positions, floats = saved
        if len(me.vertices) != len(positions):
            me.clear_geometry()
            me.vertices.add(len(positions))
        me.attributes["position"].data.foreach_set("vector", positions.ravel())
        for name in [a.name for a in me.attributes
                     if a.data_type == 'FLOAT' and a.domain == 'POINT' and name_free(a.name)]:
            if name not in floats:
                me.attributes.remove(me.attributes[name])
        for name, values in floats.items():
            ensure_attribute(me, name, 'FLOAT').data.foreach_set("value", values)
        me.update()

    def restore(self, me: bpy.types.Mesh) -> None:
        me.attributes["position"].data.foreach_set("vector", self.positions.ravel())
        for name in [a.name for a in me.attributes if a.name in OUR_ATTRIBUTES]:
            if name not in self.present:
                me.attributes.remove(me.attributes[name])
        for name, (data_type, data) in self.attributes.items():
            attr = ensure_attribute(me, name, data_type)
            attr.data.foreach_set("value" if data_type == 'FLOAT' else "color", data)
        me.update()


def name_free(name: str) -> bool:
    """Attributes Blender reserves (never removed by us)."""
    return not name.startswith(".") and name != "position"


def remove_layers(me: bpy.types.Mesh, keep_original: bool = False) -> None:
    """Remove our attributes (all, or all but the original heights)."""
    for name in [a.name for a in me.attributes if a.name in OUR_ATTRIBUTES]:
        if keep_original and name == ORIGINAL_Z:
            continue
        me.attributes.remove(me.attributes[name])


def forget_original(me: bpy.types.Mesh) -> None:
    """Apply: the current heights become the original, as plain heights. The original
    heights, the change layers (measured from them) and the state layers are removed:
    the next run starts from the heights alone, as Rebuild replays it. The color layers
    stay (they show the erosion until the next run writes them)."""
    state = {ORIGINAL_Z, *CHANGE_LAYERS.values(), *FLOAT_LAYERS.values()}
    for name in [a.name for a in me.attributes if a.name in state]:
        me.attributes.remove(me.attributes[name])


_status_cache: dict[tuple, tuple[str, tuple[int, int, float] | None]] = {}
#: the last full key of each mesh (pointer, vertex and face counts): what a panel drawn
#: during a live run shows without reading the positions again
_last_key: dict[tuple, tuple] = {}


def _status_entry(obj, quick: bool = False) -> tuple[str, tuple[int, int, float] | None]:
    """(text, (rows, cols, cell size) or None) of a grid object, cached per mesh state;
    text starts with '!' when the object is not usable. ``quick``: the entry last
    computed for this mesh if any, without reading the positions (a live run checks
    them itself; reading them is 15 ms a panel draw at 2048², and after each update
    Blender copies them for the first reader: 0.1 s)."""
    problem = object_problem(obj)
    if problem:
        return "!" + problem, None
    me = obj.data
    shape = (me.as_pointer(), len(me.vertices), len(me.polygons))
    if quick and _last_key.get(shape) in _status_cache:
        return _status_cache[_last_key[shape]]
    co = read_positions(me)  # ~1 ms per million vertices: keeps the cache honest
    # the spread of x and y as well: a grid centred on the origin sums to 0 at any size,
    # and a new mesh may get a freed one's address
    key = (*shape, float(co[:, 0].sum()), float(co[:, 1].sum()),
           float(np.abs(co[:, 0]).sum()), float(np.abs(co[:, 1]).sum()))
    if key not in _status_cache:
        extent = None
        try:
            g = detect_grid(me, co)
            text = (f"{g.cols} x {g.rows} grid, cell {g.cell_x:.4g}"
                    + ("" if g.square else f" x {g.cell_y:.4g} (not square: simulated "
                       f"with {g.cell_size:.4g})") + f", {len(me.vertices):,} vertices")
            extent = (g.rows, g.cols, g.cell_size)
        except GridError as exc:
            text = "!" + str(exc)
        if len(_status_cache) > 64:
            _status_cache.clear()
            _last_key.clear()
        _status_cache[key] = (text, extent)
    _last_key[shape] = key
    return _status_cache[key]


def grid_status(obj, quick: bool = False) -> tuple[bool, str]:
    """(usable, text) for the panel: the grid, then the real size it stands for, e.g.
    "... This 2.0 m grid is treated as 5.0 km (automatic: set Real Size to change)".
    Grid detection is cached per mesh state (``quick``: see _status_entry); the real
    size is the object's setting of the moment."""
    text, extent = _status_entry(obj, quick)
    if text.startswith("!"):
        return False, text[1:]
    try:
        sentence = obj.terrain_erosion.real_scale(*extent).describe()
    except UserError as exc:
        return False, f"{text}. {exc}"
    return True, f"{text}. {sentence[:1].upper()}{sentence[1:]}"


def grid_extent(obj, quick: bool = False) -> tuple[int, int, float] | None:
    """(rows, cols, cell size in local units) of a usable grid object, else None
    (cached like grid_status: cheap enough for a panel draw)."""
    return _status_entry(obj, quick)[1]
