"""A run's terrain onto the mesh in frames, written a slice per timer tick.

A *frame* is one write-back of the terrain: per-vertex float32 buffers filled by the
``simcore.analysis.layers`` helpers -- on the live run's worker thread, between two rounds, with
no bpy call there -- and the list of items still to write. The main thread writes the
items in order, each one a foreach_set or two, and ends its share of a tick when the
next item would take it past :data:`addon.job.TICK_SECONDS` (by the time that kind of
item took last) or :data:`TICK_VALUES` float32 values; a single item goes alone. Layers
whose values did not change since the last frame are not written again. Blender is told
about a frame when it is whole: one depsgraph update and redraw a frame, and the viewport
never shows half of one.

Order: the vertex check, the float state layers (the records first, then the change
per process, bedrock and sediment depth last), the trees, then the heights. From there
the mesh holds the frame's whole state (what a kept or resumed run continues from); the
color layers and the water surface, which only show that state, follow.

The floor of a tick is one item: in the bpy module at 2048² a layer takes 3-50 ms; in
Blender's UI, where the depsgraph shares the mesh's arrays after each redraw, the first
access to each array after a redraw also copies it (copy-on-write: about 0.1 s for a
67 MB color layer at 2048² on a 2-core machine).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import bpy
import numpy as np

from ..simcore.analysis.layers import (
    float_layer,
    tree_points,
    vertex_gray,
    vertex_values,
    water_vertices,
)
from . import grid as gridio
from . import instances
from .scale import RealScale

#: float32 values the main thread writes per timer tick at most, whatever the time budget
#: (a larger single item is written alone): 2**26 values (256 MB; 35-100 ms here, a
#: frame of the default preset at 2048² is 140M values). Checking the vertices counts
#: as 3 values per vertex.
TICK_VALUES = 1 << 26
#: seconds per float32 value assumed for an item kind not written yet (a new layer: its
#: allocation included), measured at 2048²: 5-6 ns a value to make and fill a layer,
#: 8 to check the vertices the first time after a redraw
FIRST_RATE = 6e-9
#: float state layers written last, just before the heights: a mesh whose heights equal
#: bedrock + sediment depth holds one frame's state (addon/data/job.py resumes from it)
_LAST = ("bedrock", "sediment")
#: the item kinds that hold state (what a resumed run reads back), the rest only show it
_STATE = ("check", "original", "float", "change", "trees", "positions")


@dataclasses.dataclass
class Item:
    """One write: ``kind`` is 'check' (the vertex check that starts a frame),
    'original', 'float' (``name`` = terrain array), 'change' (``name`` = process: its
    ``te_change_<process>`` layer), 'trees', 'positions', 'color' (``name`` = terrain
    array) or 'water'."""

    kind: str
    name: str = ""
    #: float32 values it writes: its cost
    values: int = 0
    #: its values differ from the last frame's
    changed: bool = True


@dataclasses.dataclass
class Frame:
    """The items of one write-back still to write, for the terrain after ``rounds``."""

    rounds: int
    items: list[Item]
    trees: tuple[np.ndarray, np.ndarray] | None = None
    #: the main thread has begun writing it (layers missing on the mesh are added then)
    started: bool = False
    #: its heights are written (the mesh gets update() rather than update_tag())
    heights: bool = False

    @property
    def state_written(self) -> bool:
        """True once the state items (layers, trees, heights) are on the mesh."""
        return not any(i.kind in _STATE for i in self.items)


class Writer:
    """The per-vertex buffers and the write-back of one erosion job: per vertex 2 x 12
    bytes of positions (the mesh's, the next frame's), 4 per float layer (the change
    layers included), 16 per color layer, 16 for the water surface, 4 for the original
    heights (:func:`bytes_per_vertex`). Buffers keep the values last written, so a layer that
    did not change is not written again."""

    def __init__(self, grid: gridio.Grid, scale: RealScale, positions: np.ndarray,
                 outputs: list[str], colors: bool, trees: bool, water: bool,
                 original: np.ndarray | None, changes: tuple[str, ...] = ()) -> None:
        self.grid = grid
        #: the grid's real size: cell-unit lengths x scale.height_unit are local units
        self.scale = scale
        self.order = None if grid.identity else grid.order
        #: (n, 3) float32: the positions the mesh holds (what a vertex check expects)
        self.shown = positions
        #: the state layers in the order a frame writes them: (kind, name), kind 'float'
        #: (a terrain array) or 'change' (a process's change, terrain.changes[name])
        self._state = ([("float", o) for o in outputs if o not in _LAST]
                       + [("change", p) for p in changes]
                       + [("float", o) for o in _LAST if o in outputs])
        #: what only shows the state: the color layers, the water surface
        self._shown = ([o for o in outputs if colors and o in gridio.COLOR_LAYERS], water)
        self.trees = trees
        #: the buffers, made by the first :meth:`prepare` (on the worker thread in a live
        #: run: touching 0.5 GB at 2048² takes the main thread seconds)
        self._next: np.ndarray | None = None  # x, y never change; z is the next frame's
        self.floats: dict[str, np.ndarray] = {}
        #: process -> its change layer's buffer
        self.changes: dict[str, np.ndarray] = {}
        self.colors: dict[str, np.ndarray] = {}
        self.water: tuple[np.ndarray, np.ndarray] | None = None
        #: (n,) float32 heights before the first run, written with the first frame
        self.original = original
        #: float32 values the last :meth:`write` wrote (vertex checks included), and
        #: its items
        self.tick_values = 0
        self.tick_items: list[Item] = []
        #: helper objects the writes made or used: settings key -> session uid
        self.extras: dict[str, int] = {}
        #: seconds per float32 value of the last write of each item kind (and of the
        #: vertex check): what the next tick's share is planned with
        self._rate: dict[str, float] = {}

    # -- on any thread: numerics only, no bpy ------------------------------------------
    def _allocate(self) -> None:
        n = self.grid.rows * self.grid.cols
        colors, water = self._shown
        self._next = self.shown.copy()
        self.floats = {name: np.empty(n, np.float32) for kind, name in self._state
                       if kind == "float"}
        self.changes = {name: np.empty(n, np.float32) for kind, name in self._state
                        if kind == "change"}
        self.colors = {name: np.empty(4 * n, np.float32) for name in colors}
        if water:
            self.water = (self.shown.reshape(-1).copy(), np.empty(n, np.float32))

    def prepare(self, terrain, rounds: int, everything: bool = False) -> Frame:
        """Fill the buffers from ``terrain`` (safe on the worker thread: no bpy) and
        list what to write; ``everything`` lists unchanged layers too (as does the
        first frame)."""
        if self._next is None:
            self._allocate()
            everything = True
        n = self.grid.rows * self.grid.cols
        unit = self.scale.height_unit  # local units per cell unit of height
        items = [Item("check", values=3 * n)]  # the vertices, before anything is written
        if self.original is not None:
            items.append(Item("original", values=n))
        for kind, name in self._state:  # lengths: cell units -> local
            _, values, scale = float_layer(terrain, kind, name, unit)
            buf = (self.changes if kind == "change" else self.floats)[name]
            changed = vertex_values(values, buf, scale, self.order)
            items.append(Item(kind, name, n, changed or everything))
        height = terrain.height()
        trees = None
        if self.trees:
            g = self.grid
            trees = tree_points(terrain.trees, height, g.x0, g.y0, g.cell_x, g.cell_y,
                                unit)
            items.append(Item("trees", values=4 * len(trees[1])))
        vertex_values(height, self._next.reshape(-1), unit, self.order, 3, 2)
        items.append(Item("positions", values=3 * n))
        for name, buf in self.colors.items():
            changed = vertex_gray(name, getattr(terrain, name), buf, self.order)
            items.append(Item("color", name, 4 * n, changed or everything))
        if self.water is not None:
            changed = water_vertices(height, terrain.pool, unit, *self.water, self.order)
            items.append(Item("water", values=4 * n, changed=changed or everything))
        return Frame(rounds, items, trees)

    # -- on the main thread ----------------------------------------------------------
    def make_layers(self, me: bpy.types.Mesh) -> None:
        """Add the layers the frames will write (a new 67 MB color layer takes 0.1 s at
        2048²: a live run does it when it starts, not in a tick) and write the original
        heights at once (so no run that ends early leaves that layer empty)."""
        if self.original is not None:
            gridio.ensure_attribute(me, gridio.ORIGINAL_Z, 'FLOAT').data.foreach_set(
                "value", self.original)
            self.original = None
        for kind, name in self._state:
            gridio.ensure_attribute(me, _attribute(kind, name), 'FLOAT')
        for name in self._shown[0]:
            gridio.ensure_attribute(me, gridio.COLOR_LAYERS[name], 'FLOAT_COLOR')

    def _begin(self, frame: Frame, obj: bpy.types.Object) -> None:
        """Drop the unchanged items, except layers missing on the mesh (removed by
        the user mid-run, or never written)."""
        me = obj.data

        def missing(item: Item) -> bool:
            if item.kind in ("float", "change"):
                attr = me.attributes.get(_attribute(item.kind, item.name))
                return attr is None or attr.data_type != 'FLOAT' or attr.domain != 'POINT'
            if item.kind == "color":
                return me.attributes.get(gridio.COLOR_LAYERS[item.name]) is None
            water = obj.terrain_erosion.water_object
            return water is None or water.data.attributes.get("te_wet") is None

        frame.items = [i for i in frame.items if i.changed or i.kind == "check" or missing(i)]
        frame.started = True

    def write(self, frame: Frame, obj: bpy.types.Object,
              check: Callable[[], bpy.types.Object] | None = None,
              cap: int | None = None, seconds: float | None = None) -> None:
        """Write ``frame``'s items in order: all of them, or (``cap``, ``seconds``)
        until the next one would pass ``cap`` float32 values or, by the time the last
        write of its kind took, ``seconds`` -- one item at least. ``check()`` (when
        given) re-checks the object and its vertices (the frame's first item, and
        again in the tick that writes the heights): it raises if the user changed the
        mesh, else returns the object. Blender is told about the frame (update, one
        redraw) once it is whole."""
        start = time.perf_counter()
        spent = 0
        done: list[Item] = []
        checked = wrote = False
        while frame.items:
            item = frame.items[0]
            recheck = item.kind == "positions" and check is not None and not checked
            cost = item.values + (self.check_values if recheck else 0)
            if wrote and cap is not None and spent + cost > cap:
                break
            if wrote and seconds is not None and (
                    time.perf_counter() - start + self._predict(item, recheck) > seconds):
                break
            if recheck:
                obj = self._timed("recheck", self.check_values, check)
            if item.kind == "check":
                if check is not None:
                    obj, checked = self._timed("check", item.values, check), True
                self._begin(frame, obj)
            else:
                self._timed(item.kind, item.values, self._write_item, item, obj, frame)
            done.append(frame.items.pop(0))
            spent += cost
            wrote = True
            frame.heights = frame.heights or item.kind == "positions"
        if not frame.items:  # Blender sees the frame once it is whole (one redraw)
            if frame.heights:  # new heights: normals are recomputed (0.7 s at 2048²)
                obj.data.update()
            else:  # layers only: redraw, keeping the normals Blender has
                obj.data.update_tag()
        self.tick_values = spent
        self.tick_items = done

    @property
    def check_values(self) -> int:
        """What a vertex check costs, in float32 values: it reads every position."""
        return 3 * self.grid.rows * self.grid.cols

    def _timed(self, kind: str, values: int, fn, *args):
        """``fn(*args)``, learning the seconds per value of ``kind``."""
        t0 = time.perf_counter()
        out = fn(*args)
        self._rate[kind] = (time.perf_counter() - t0) / max(values, 1)
        return out

    def _predict(self, item: Item, recheck: bool) -> float:
        """Seconds ``item`` will take, by the last write of its kind (never written:
        :data:`FIRST_RATE`). The first read of an attribute after Blender redrew copies
        it (copy-on-write: about 0.1 s for the positions at 2048²), so the frame's
        first check is learned apart from the recheck before the heights, which finds
        the positions already copied."""
        rate = self._rate.get
        return (item.values * rate(item.kind, FIRST_RATE)
                + (self.check_values * rate("recheck", FIRST_RATE) if recheck else 0.0))

    def _write_item(self, item: Item, obj: bpy.types.Object, frame: Frame) -> None:
        me = obj.data
        if item.kind == "original":
            gridio.ensure_attribute(me, gridio.ORIGINAL_Z, 'FLOAT').data.foreach_set(
                "value", self.original)
            self.original = None
        elif item.kind in ("float", "change"):
            buf = (self.floats if item.kind == "float" else self.changes)[item.name]
            gridio.ensure_attribute(me, _attribute(item.kind, item.name), 'FLOAT').data \
                .foreach_set("value", buf)
        elif item.kind == "trees":
            self.extras["trees_object"] = instances.set_trees(
                obj, *frame.trees, self.scale).session_uid
        elif item.kind == "positions":
            me.attributes["position"].data.foreach_set("vector", self._next.reshape(-1))
            self.shown, self._next = self._next, self.shown
        elif item.kind == "color":
            gridio.ensure_attribute(me, gridio.COLOR_LAYERS[item.name], 'FLOAT_COLOR') \
                .data.foreach_set("color", self.colors[item.name])
        elif item.kind == "water":
            water = instances.ensure_water(obj, self.grid)
            instances.set_water(water, *self.water)
            self.extras["water_object"] = water.session_uid


def _attribute(kind: str, name: str) -> str:
    """The mesh attribute of a 'float' or 'change' item."""
    return gridio.FLOAT_LAYERS[name] if kind == "float" else gridio.CHANGE_LAYERS[name]


def bytes_per_vertex(outputs: list[str], colors: bool, water: bool,
                     changes: int = 0) -> int:
    """Memory a job needs per vertex beyond the simulation's (simcore.engine.memory): the
    positions four times (the mesh's and the next frame's in :class:`Writer`, the Esc
    snapshot, the vertex check's buffer: 48 bytes), the original heights (ours and the
    new layer: 8), and per float layer 8 (``changes``: one per process whose change is
    written), per color layer 32, for the water 32 (our buffer and Blender's layer
    each time; the water mesh shares the terrain's topology).
    Measured (benchmarks/bench_memory.py, 512² to 1024², the default preset's layers,
    trees and water): 372-386 bytes a vertex in all, estimate 454 (150 + 32 simcore,
    272 here)."""
    floats = sum(1 for o in outputs if o in gridio.FLOAT_LAYERS) + changes
    shown = sum(1 for o in outputs if colors and o in gridio.COLOR_LAYERS)
    return 48 + 8 + 8 * floats + 32 * shown + (32 if water else 0)
