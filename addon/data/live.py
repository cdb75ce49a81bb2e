"""A live painting session on one object, as plain code the operator (and tests)
drive: the erosion job of the landscape (simcore/engine/live.py) running on the worker
thread while the Uplift, Rain or Erodibility mask is painted, the mask read as it
changes, the session recorded as one history entry, and that entry replayed.

Reading the mask: a color attribute (Vertex Paint) is read with ``foreach_get``; a
vertex group (Weight Paint) has no such reader, so while the session runs a Geometry
Nodes modifier copies the group's weights into a float attribute of the evaluated mesh
(:data:`MASK_ATTRIBUTE`), read with ``foreach_get`` too (a loop over the vertices takes
seconds at 512²). The modifier and its node group are removed when the session ends.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..simcore.algorithms.masks import MaskError
from ..simcore.engine.live import (
    LIVE_MAPS,
    LiveSimulation,
    check_state,
    live_processes,
    replay,
)
from ..simcore.formats import history as entries
from .job import ErosionJob
from .masks import MASKS, color_gray

#: the evaluated mesh's attribute holding the painted vertex group's weights
MASK_ATTRIBUTE = "te_live_mask"
#: the modifier and node group that write it (removed when the session ends)
MODIFIER = "Terrain Erosion live mask"
#: the modes a session goes on in
PAINT_MODES = {'VERTEX_GROUP': 'WEIGHT_PAINT', 'COLOR_ATTRIBUTE': 'VERTEX_PAINT'}


class LiveJob(ErosionJob):
    """The erosion job of a live session: the object's enabled live processes
    (:func:`live_processes`), rounds on a :class:`LiveSimulation` until the session
    ends (or ``recipe.rounds`` for a replay), recorded as a 'live' history entry."""

    MODES = ('OBJECT', 'WEIGHT_PAINT', 'VERTEX_PAINT')
    #: painting wants the land to answer: Blender may take up to half the time
    redraw_factor = 1.0

    def __init__(self, obj: bpy.types.Object, recipe: entries.Recipe | None = None) -> None:
        params = None
        if recipe is None:
            params = live_processes(obj.terrain_erosion.enabled_params(),
                                    len(obj.data.vertices))
        super().__init__(obj, params=params, record=None if recipe else "live",
                         recipe=recipe)
        old = self.sim
        self.sim = LiveSimulation(old.terrain, old.processes, seed=old.seed, particles=0,
                                  rounds_done=old.rounds_done)
        self.sim.target_rounds = old.target_rounds
        self.estimate = None  # it runs until the user ends it
        self.preset = obj.terrain_erosion.preset

    def rasters(self, maps: dict[str, np.ndarray], where: str) -> dict[str, np.ndarray]:
        """Per-vertex ``maps`` (name -> values in the mesh's vertex order) as checked
        rasters; a wrong size or bad values are a MaskError naming ``where``."""
        g, n = self.grid, self.vertex_count
        rasters = {}
        for name, values in maps.items():
            a = np.asarray(values, dtype=np.float64)
            if a.shape != (n,):
                raise MaskError(f"{where}: the {name} mask has {a.size} values, the mesh "
                                f"has {n} vertices: give one weight per vertex")
            rasters[name] = a[g.order].reshape(g.rows, g.cols)
        return check_state(rasters, (g.rows, g.cols), where)

    def paint(self, maps: dict[str, np.ndarray], where: str) -> None:
        """Per-vertex ``maps`` from the next round on (see :meth:`rasters`)."""
        self.sim.paint(self.rasters(maps, where), where)

    def _entry(self, preset: str, rounds: int) -> dict:
        """The session's entry: its processes, start maps, rounds and the mask states
        the kept rounds used."""
        kept = rounds - self.start_rounds
        return entries.live_entry(super()._entry(self.preset, rounds),
                                  [(r, m) for r, m in self.sim.states if r < kept])


def run_states(obj: bpy.types.Object, states: list[tuple[int, dict[str, np.ndarray]]],
               rounds: int) -> LiveJob:
    """A whole session without a window: ``states`` (round, name -> per-vertex values)
    checked first (nothing changes on a bad one), then ``rounds`` rounds with each
    state taking effect at its round, kept and recorded."""
    job = LiveJob(obj)
    try:
        at: dict[int, dict[str, np.ndarray]] = {}
        for i, (when, maps) in enumerate(states):
            where = f"mask state {i + 1} (round {when})"
            if not 0 <= when < rounds:
                raise MaskError(f"{where} is outside the session's {rounds} rounds: give "
                                "rounds from 0 and enough rounds to reach it")
            at.setdefault(when, {}).update(job.rasters(maps, where))
        replay(job.sim, sorted(at.items()), rounds)
        job.finish()
    except BaseException:
        job.cancel()
        raise
    return job


def replay_entry(obj: bpy.types.Object, recipe: entries.Recipe) -> None:
    """Run a recorded live session again (Rebuild)."""
    job = LiveJob(obj, recipe=recipe)
    try:
        replay(job.sim, recipe.states, recipe.rounds)
        job.finish()
    except BaseException:
        job.cancel()
        raise


# -- reading the painted mask ------------------------------------------------------------
def painted_source(obj: bpy.types.Object, name: str) -> tuple[str, str]:
    """(source, vertex group or color attribute) of mask ``name``; a mask without a
    source gets a new vertex group of that name (weight 0 for uplift, else 1), so there
    is something to paint."""
    if name not in LIVE_MAPS:
        raise MaskError(f"live painting paints {', '.join(LIVE_MAPS)}, not '{name}'")
    s = obj.terrain_erosion
    source, picked = getattr(s, f"mask_{name}_source"), getattr(s, f"mask_{name}_name")
    if source == 'NONE' or not picked:
        label = MASKS[name][0]
        group = obj.vertex_groups.get(label) or obj.vertex_groups.new(name=label)
        group.add(range(len(obj.data.vertices)), 0.0 if name == "uplift" else 1.0,
                  'REPLACE')
        source, picked = 'VERTEX_GROUP', group.name
        setattr(s, f"mask_{name}_source", source)
        setattr(s, f"mask_{name}_name", picked)
    return source, picked


class MaskReader:
    """Reads mask ``name`` of ``obj`` as painted, per vertex, fast (see the module's
    note); :meth:`close` removes what it added."""

    def __init__(self, obj: bpy.types.Object, name: str) -> None:
        self.name = name
        self.source, self.picked = painted_source(obj, name)
        self.buffer = np.empty(len(obj.data.vertices), np.float32)
        self.modifier = None
        if self.source == 'VERTEX_GROUP':
            group = obj.vertex_groups.get(self.picked)
            if group is None:
                raise MaskError(f"'{obj.name}' has no vertex group '{self.picked}': pick "
                                "one in the Masks panel")
            obj.vertex_groups.active_index = group.index
            self.modifier = obj.modifiers.new(MODIFIER, 'NODES')
            self.modifier.node_group = _weights_tree(self.picked)
            self.modifier.show_in_editmode = False

    @property
    def mode(self) -> str:
        """The paint mode of the source."""
        return PAINT_MODES[self.source]

    def read(self, obj: bpy.types.Object, context) -> np.ndarray:
        """The mask's values per vertex, 0..1."""
        if self.modifier is None:
            return color_gray(obj.data, self.picked)
        evaluated = obj.evaluated_get(context.evaluated_depsgraph_get())
        attr = evaluated.data.attributes.get(MASK_ATTRIBUTE)
        if attr is None or len(attr.data) != self.buffer.size:
            raise MaskError(f"the live mask of '{obj.name}' cannot be read (its modifier "
                            f"'{MODIFIER}' was removed or another modifier changes the "
                            "mesh): leave the paint mode and start again")
        attr.data.foreach_get("value", self.buffer)
        return np.clip(self.buffer.astype(np.float64), 0.0, 1.0)

    def close(self, obj: bpy.types.Object | None) -> None:
        """Remove the modifier and its node group."""
        if self.modifier is None:
            return
        tree = None
        if obj is not None:
            mod = obj.modifiers.get(MODIFIER)
            if mod is not None:
                tree = mod.node_group
                obj.modifiers.remove(mod)
        if tree is not None and tree.users == 0:
            bpy.data.node_groups.remove(tree)
        self.modifier = None


def _weights_tree(group: str) -> bpy.types.NodeTree:
    """Geometry Nodes: store vertex group ``group`` as the float point attribute
    :data:`MASK_ATTRIBUTE`."""
    tree = bpy.data.node_groups.new(MODIFIER, 'GeometryNodeTree')
    tree.interface.new_socket("Geometry", in_out='INPUT', socket_type='NodeSocketGeometry')
    tree.interface.new_socket("Geometry", in_out='OUTPUT', socket_type='NodeSocketGeometry')
    nodes, links = tree.nodes, tree.links
    group_in, group_out = nodes.new("NodeGroupInput"), nodes.new("NodeGroupOutput")
    weights = nodes.new("GeometryNodeInputNamedAttribute")
    weights.data_type = 'FLOAT'
    weights.inputs["Name"].default_value = group
    store = nodes.new("GeometryNodeStoreNamedAttribute")
    store.data_type, store.domain = 'FLOAT', 'POINT'
    store.inputs["Name"].default_value = MASK_ATTRIBUTE
    links.new(group_in.outputs[0], store.inputs["Geometry"])
    links.new(weights.outputs["Attribute"], store.inputs["Value"])
    links.new(store.outputs["Geometry"], group_out.inputs[0])
    return tree
