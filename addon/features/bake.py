"""Bake an erosion run to the timeline and play it back on frame change.

Baking runs the object's simulation over a frame range: the first frame holds the
terrain as it is, each later frame ``Particles per Frame`` more particles. Every frame
is one ``frame_NNNNNN.npz`` (vertex heights, the te_* layers, trees, water surface) in
a cache folder next to the .blend (``//terrain_cache/<object>``, stored as a relative
path, per object), with ``cache.json`` describing it: the file format, its checks and
which manifests are ours are simcore/formats/bake_cache.py; this module reads the mesh
into a frame's arrays and writes them back.

A bake is all or nothing: it writes into a staging folder inside the cache folder and
swaps the new set in only when it is complete (simcore/formats/staging.py), so a failure leaves
the previous bake, the mesh and the object's settings as they were. It writes only into
an empty folder or the folder of an earlier bake, and deletes only the files a manifest
of ours lists.

A persistent ``frame_change_post`` handler writes the frame's snapshot into the mesh;
the edit tags the depsgraph, so the viewport, F12 renders and animation renders
(``blender -b file -a``; tested through ``render.render(animation=True)``) show it.
Frames outside the baked range hold the first / last snapshot. A moved,
missing, damaged or foreign cache (a frame that does not decode, lacks heights, has
the wrong shapes, or names an attribute that is not one of our layers) gives a message
in the panel (and one line on stderr in background mode), never an exception, and
leaves the mesh as it was: a frame is checked whole before anything is written.

The simulation runs whole rounds: when a round holds more particles than Particles per
Frame, some frames get no round and repeat the one before. The bake says which (the
manifest's ``repeats``, and the operator's report) and how to avoid it.

Process parameters keyed on the timeline are read for every frame before the bake starts
(features/keyed.py); the rounds that lead to a frame run with that frame's values, and
the manifest records them (``keyed``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import bpy
import numpy as np
from bpy.app.handlers import persistent

from ..data import grid as gridio
from ..data import history
from ..data.job import ErosionJob
from ..simcore.errors import OutputPathError, UserError, describe_os_error
from ..simcore.fileio import check_output
from ..simcore.formats import bake_cache as fmt
from ..simcore.formats import history as entries
from ..simcore.formats import staging
from ..simcore.formats.bake_cache import MANIFEST, BakeError, frame_file
from ..ui.boundary import reports_user_errors
from ..ui.widgets import ErosionSubPanel
from . import keyed as keys

CACHE_ROOT = "terrain_cache"
#: decoded snapshots kept in memory per process (scrubbing back and forth)
MEMORY_FRAMES = 16


def default_cache_dir(obj: bpy.types.Object) -> str:
    return f"//{CACHE_ROOT}/{bpy.path.clean_name(obj.name)}"


def cache_path(obj: bpy.types.Object) -> Path:
    """Absolute cache folder of ``obj`` (relative paths are relative to the .blend)."""
    rel = obj.terrain_bake.cache_dir or default_cache_dir(obj)
    if rel.startswith("//") and not bpy.data.filepath:
        raise BakeError("Save the .blend first: the cache is stored next to it")
    return Path(bpy.path.abspath(rel))


# ------------------------------------------------------------------ snapshots

def _float(attr, n: int, width: int = 1) -> np.ndarray:
    key = "color" if width == 4 else ("vector" if width == 3 else "value")
    out = np.empty(n * width, np.float32)
    attr.data.foreach_get(key, out)
    return out


def snapshot(obj: bpy.types.Object) -> dict[str, np.ndarray]:
    """What one frame shows: heights and our layers per vertex (vertex order, exactly
    as stored), trees and water surface."""
    me = obj.data
    n = len(me.vertices)
    arrays = {"z": gridio.read_positions(me)[:, 2].copy()}
    for attr in me.attributes:
        if attr.name not in gridio.OUR_ATTRIBUTES or attr.name == gridio.ORIGINAL_Z:
            continue
        if attr.data_type == 'FLOAT':
            arrays[fmt.layer_entry(fmt.FLOAT_LAYER, attr.name)] = _float(attr, n)
        elif attr.data_type == 'FLOAT_COLOR':
            rgba = _float(attr, n, 4).reshape(-1, 4)
            gray = rgba[:, 0]
            if np.array_equal(rgba[:, 1], gray) and np.array_equal(rgba[:, 2], gray) \
                    and (rgba[:, 3] == 1).all():
                # gray: 4x smaller, exact
                arrays[fmt.layer_entry(fmt.GRAY_LAYER, attr.name)] = gray.copy()
            else:
                arrays[fmt.layer_entry(fmt.COLOR_LAYER, attr.name)] = rgba.ravel().copy()
    s = obj.terrain_erosion
    trees = s.trees_object
    if trees is not None and trees.type == 'MESH':
        tm = trees.data
        arrays["trees_co"] = gridio.read_positions(tm).copy()
        size = tm.attributes.get("size")
        arrays["trees_size"] = (_float(size, len(tm.vertices)) if size is not None
                                else np.ones(len(tm.vertices), np.float32))
    water = s.water_object
    if water is not None and water.type == 'MESH' and len(water.data.vertices) == n:
        arrays["water_z"] = gridio.read_positions(water.data)[:, 2].copy()
        wet = water.data.attributes.get("te_wet")
        if wet is not None and wet.data_type == 'FLOAT':
            arrays["water_wet"] = _float(wet, n)
    return arrays


class _Playback:
    """Per-process playback state: decoded frames and the vertex positions buffer."""

    def __init__(self) -> None:
        self.frames: OrderedDict[tuple[str, int], dict[str, np.ndarray]] = OrderedDict()
        self.positions: dict[int, np.ndarray] = {}
        self.rgba: dict[int, np.ndarray] = {}
        self.messages: dict[str, str] = {}
        self.printed: set[str] = set()
        self.pending: dict[tuple[str, int], Future] = {}
        self.pool: ThreadPoolExecutor | None = None
        self.last_frame: dict[str, int] = {}

    def clear(self) -> None:
        for job in self.pending.values():
            job.cancel()
        self.pending.clear()
        self.frames.clear()
        self.positions.clear()
        self.rgba.clear()


_state = _Playback()


def message(obj: bpy.types.Object) -> str:
    """The playback problem of ``obj`` (empty: none)."""
    return _state.messages.get(obj.name, "")


def _load(folder: Path, frame: int) -> dict[str, np.ndarray]:
    key = (str(folder), frame)
    hit = _state.frames.get(key)
    if hit is not None:
        _state.frames.move_to_end(key)
        return hit
    path = folder / frame_file(frame)
    try:
        pending = _state.pending.pop(key, None)
        arrays = pending.result() if pending is not None else fmt.read_frame(path)
    except FileNotFoundError:
        raise BakeError(_missing_text(folder, path)) from None
    except fmt.READ_ERRORS as exc:
        raise BakeError(f"the baked frame {path} is damaged ({exc}); bake again") from None
    _remember(key, arrays)
    return arrays


def _remember(key, arrays) -> None:
    _state.frames[key] = arrays
    while len(_state.frames) > MEMORY_FRAMES:
        _state.frames.popitem(last=False)


def _prefetch(folder: Path, frame: int) -> None:
    """Start decoding ``frame`` in a worker thread (zlib releases the GIL), so the
    next frame of a playback is ready when Blender asks for it."""
    key = (str(folder), frame)
    if key in _state.frames or key in _state.pending:
        return
    path = folder / frame_file(frame)
    if not path.is_file():
        return
    if _state.pool is None:
        _state.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="te-bake")
    for old in [k for k in _state.pending if k[0] != key[0] or abs(k[1] - frame) > 2]:
        _state.pending.pop(old).cancel()
    _state.pending[key] = _state.pool.submit(fmt.read_frame, path)


def _missing_text(folder: Path, path: Path | None = None) -> str:
    if not folder.is_dir():
        return (f"the terrain cache {folder} is missing: the .blend or the cache folder "
                "was moved or deleted. Move the folder back, set Cache Folder to where it "
                "is now, or bake again")
    return f"the baked frame {path} is missing from the cache: bake again"


def _set_points(me: bpy.types.Mesh, co: np.ndarray, size: np.ndarray) -> None:
    if len(me.vertices) != len(co):
        me.clear_geometry()
        me.vertices.add(len(co))
    me.attributes["position"].data.foreach_set("vector", np.ascontiguousarray(co).ravel())
    attr = me.attributes.get("size") or me.attributes.new("size", 'FLOAT', 'POINT')
    attr.data.foreach_set("value", size)
    me.update()


def apply_frame(obj: bpy.types.Object, frame: int, prefetch: bool = True) -> int:
    """Write the snapshot of ``frame`` (clamped to the baked range) into the mesh and
    its trees and water objects. Returns the frame shown; BakeError on any problem."""
    b = obj.terrain_bake
    folder = cache_path(obj)
    shown = min(max(frame, b.baked_start), b.baked_end)
    arrays = _load(folder, shown)
    me = obj.data
    n = len(me.vertices)
    path = folder / frame_file(shown)
    z = arrays.get("z")
    if isinstance(z, np.ndarray) and z.ndim == 1 and z.size != n:
        raise BakeError(f"the mesh of '{obj.name}' has {n:,} vertices but its baked frame "
                        f"{path} has {z.size:,}: the mesh changed since the bake (or the "
                        "frame is not this bake's); bake again or free the cache")
    # everything checked before the mesh changes
    arrays = fmt.checked_frame(arrays, n, path, _BAKED_LAYERS)
    key = me.as_pointer()
    co = _state.positions.get(key)
    if co is None or len(co) != n:
        co = gridio.read_positions(me).copy()
        _state.positions[key] = co
    co[:, 2] = arrays["z"]
    me.attributes["position"].data.foreach_set("vector", co.ravel())
    for name, values in arrays.items():
        kind, attr_name = fmt.split_layer(name) or ("", name)
        if kind == fmt.FLOAT_LAYER:
            gridio.ensure_attribute(me, attr_name, 'FLOAT').data.foreach_set("value", values)
        elif kind == fmt.GRAY_LAYER:
            rgba = _state.rgba.get(key)
            if rgba is None or len(rgba) != n:
                rgba = np.ones((n, 4), np.float32)
                _state.rgba[key] = rgba
            rgba[:, 0] = values
            rgba[:, 1] = values
            rgba[:, 2] = values
            gridio.ensure_attribute(me, attr_name, 'FLOAT_COLOR').data.foreach_set(
                "color", rgba.ravel())
        elif kind == fmt.COLOR_LAYER:
            gridio.ensure_attribute(me, attr_name, 'FLOAT_COLOR').data.foreach_set("color", values)
    me.update()
    s = obj.terrain_erosion
    if "trees_co" in arrays and s.trees_object is not None and s.trees_object.type == 'MESH':
        _set_points(s.trees_object.data, arrays["trees_co"], arrays["trees_size"])
    water = s.water_object
    if "water_z" in arrays and water is not None and water.type == 'MESH' \
            and len(water.data.vertices) == n:
        wco = gridio.read_positions(water.data)
        wco[:, 2] = arrays["water_z"]
        water.data.attributes["position"].data.foreach_set("vector", wco.ravel())
        if "water_wet" in arrays:
            gridio.ensure_attribute(water.data, "te_wet", 'FLOAT').data.foreach_set(
                "value", arrays["water_wet"])
        water.data.update()
    last = _state.last_frame.get(obj.name, shown)
    step = -1 if shown < last else 1
    _state.last_frame[obj.name] = shown
    if b.baked_start <= shown + step <= b.baked_end and prefetch:
        _prefetch(folder, shown + step)
    return shown


#: the layers a frame may hold: ours, but the original heights (kept on the mesh)
_BAKED_LAYERS = frozenset(gridio.OUR_ATTRIBUTES - {gridio.ORIGINAL_Z})


# ------------------------------------------------------------------ bake / free

def _refuse(folder: Path, why: str) -> BakeError:
    return BakeError(f"the Cache Folder {folder} {why}: Bake writes only into an empty "
                     "folder or the folder of an earlier bake, and deletes only what it "
                     "wrote. Pick an empty folder or the folder of an earlier bake (an "
                     "empty Cache Folder means //terrain_cache/<object>)")


def cache_files(folder: Path, strict: bool = True) -> list[str]:
    """Our files in ``folder`` (the manifest first, then the frames it lists that
    exist): what a re-bake replaces and Free Cache deletes. Empty for a missing or
    empty folder. With ``strict`` (a bake), BakeError when the folder holds anything we
    did not write or is the .blend's own folder; without (Free Cache), other files are
    left alone."""
    blend = Path(bpy.data.filepath).parent if bpy.data.filepath else None
    if strict and blend is not None and folder.resolve() == blend.resolve():
        raise _refuse(folder, "is the .blend's own folder")
    if not folder.exists():
        return []
    if not folder.is_dir():
        raise _refuse(folder, "is a file, not a folder")
    try:
        names = {e.name for e in os.scandir(folder)
                 if not (staging.is_transaction_folder(e.name) or fmt.TEMP_FILE.fullmatch(e.name))}
    except OSError as exc:
        raise BakeError(f"cannot read the Cache Folder {folder}: {exc}") from None
    if not names:
        return []
    data = fmt.read_manifest(folder / MANIFEST) if MANIFEST in names else None
    if data is None:
        if not strict:
            return []
        why = ("holds a cache.json Terrain Erosion did not write" if MANIFEST in names
               else f"holds files Terrain Erosion did not write ({_some(names)})")
        raise _refuse(folder, why)
    listed = fmt.manifest_files(data)
    others = names - set(listed) - {MANIFEST}
    if others and strict:
        raise _refuse(folder, f"holds files its bake did not write ({_some(others)})")
    return [MANIFEST, *(name for name in listed if name in names)]


def _some(names: set[str], most: int = 3) -> str:
    shown = sorted(names)[:most]
    return ", ".join(shown) + (f" and {len(names) - most} more" if len(names) > most else "")


def _make_folder(folder: Path) -> list[Path]:
    """Make ``folder`` and its missing parents; returns those made (innermost first),
    so a failed bake can remove them again."""
    made = []
    p = folder
    while not p.exists() and p != p.parent:
        made.append(p)
        p = p.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(f"cannot make the cache folder {folder}: {exc}") from None
    return made


def _remove_empty(folders: list[Path]) -> None:
    for d in folders:
        with contextlib.suppress(OSError):
            d.rmdir()


def _remove_cache_files(folder: Path) -> None:
    """Remove only our files (those our manifest lists, and the manifest), then the
    folder and an empty ``terrain_cache`` parent if nothing else is left."""
    staging.remove_stale(folder)
    for name in cache_files(folder, strict=False):  # the manifest first
        (folder / name).unlink(missing_ok=True)
    for d in (folder, folder.parent):
        if d.name and d.is_dir() and not any(d.iterdir()):
            d.rmdir()
        if d.parent.name != CACHE_ROOT:
            break


#: what a bake changes on the object besides the mesh (put back when it fails)
_BOOKKEEPING = ("rounds_done", "state_seed", "state_seed_text", "provenance")


def _object_record(obj: bpy.types.Object) -> tuple:
    s = obj.terrain_erosion
    return (tuple(getattr(s, key) for key in _BOOKKEEPING),
            obj.get("terrain_erosion_provenance"), obj.terrain_bake.cache_dir,
            {kind: set(getattr(bpy.data, kind).keys()) for kind in _DATA})


#: data-blocks a bake may add (trees and water objects, the default tree, its node
#: group and the water material): new ones are removed when it fails
_DATA = ("objects", "meshes", "materials", "node_groups")


def _remove_new_data(before: dict[str, set[str]]) -> None:
    for kind in _DATA:
        blocks = getattr(bpy.data, kind)
        for name in set(blocks.keys()) - before[kind]:
            block = blocks.get(name)
            if block is not None and (kind == "objects" or block.users == 0):
                blocks.remove(block)


def _restore_record(obj: bpy.types.Object, record: tuple) -> None:
    values, provenance, cache_dir, _data = record
    s = obj.terrain_erosion
    for key, value in zip(_BOOKKEEPING, values):
        setattr(s, key, value)
    if provenance is None:
        obj.pop("terrain_erosion_provenance", None)
    else:
        obj["terrain_erosion_provenance"] = provenance
    obj.terrain_bake.cache_dir = cache_dir


def bake(obj: bpy.types.Object, frame_start: int, frame_end: int, per_frame: int,
         report=None) -> dict:
    """Run the object's simulation over the frames and cache every frame; returns
    the manifest. The mesh ends at the last frame (one erosion run, kept).

    All or nothing: the frames and the manifest are written into a staging folder in
    the cache folder and swapped in when all are written (simcore/formats/staging.py). If
    anything fails -- a full disk at any file, an exception mid-way -- the previous
    cache, the mesh (and its trees and water objects), Baked and the object's run
    bookkeeping stay as they were. The cache folder must be empty or hold our earlier bake only."""
    if frame_end < frame_start:
        raise BakeError(f"the frame range {frame_start}..{frame_end} is empty: End must "
                        "be at least Start")
    if per_frame < 1:
        raise BakeError("Particles per Frame must be at least 1")
    frames = frame_end - frame_start + 1
    n = len(obj.data.vertices)
    # checks the object, the settings, the keyed values and the memory before anything
    # changes
    keyed = keys.keyed_frames(obj, frame_start, frame_end)
    job = ErosionJob(obj, per_frame * (frames - 1),
                     keyed.frames[0] if keyed is not None else None)
    b = obj.terrain_bake
    record = _object_record(obj)
    folder = cache_path(obj)  # Cache Folder, else //terrain_cache/<object>
    try:
        previous = cache_files(folder)  # refuses a folder that is not ours
        made = _make_folder(folder)
    except OSError as exc:  # a name too long for the file system, a folder we cannot see
        raise BakeError(describe_os_error(exc, folder, "use the Cache Folder")) from None
    try:
        check_output(folder / MANIFEST, frames * n * 4 * 8)
        with staging.Staging(folder) as stage:
            if not b.cache_dir:
                b.cache_dir = default_cache_dir(obj)
            manifest = _bake_frames(obj, job, stage.path, frame_start, frames, per_frame,
                                    report, keyed)
            job.finish()
            stage.commit([*manifest["files"].values(), MANIFEST], previous)
    except BaseException:
        _roll_back(obj, job, record)
        _remove_empty(made)
        raise
    _state.clear()
    if job.sim.rounds_done > job.sim.start_rounds:  # a bake is no run of the history:
        s = obj.terrain_erosion  # a note in it says why Rebuild refuses from here
        s.history_from_original = False
        history.record(s, entries.note_entry(
            f"Animation Bake, frames {frame_start}-{frame_end} (Rebuild cannot replay a "
            "bake: Apply to start a history from its last frame)", *s.size_settings()))
    b.baked, b.baked_start, b.baked_end = True, frame_start, frame_end
    _state.messages.pop(obj.name, None)
    return manifest


def _bake_frames(obj, job, folder: Path, frame_start: int, frames: int, per_frame: int,
                 report, keyed: keys.KeyedFrames | None = None) -> dict:
    """Run and write every frame and the manifest into ``folder`` (the staging
    folder); the mesh ends at the last frame. With ``keyed``, the rounds that lead to
    a frame run with the params at that frame."""
    b = obj.terrain_bake
    sim = job.sim
    size = 0
    job.write(job.object(vertices=True))
    repeats = []
    for i in range(frames):
        target = i * per_frame
        rounds = sim.rounds_done
        if keyed is not None and i:
            sim.set_params(keyed.frames[i])
        while sim.particles_done < target and sim.rounds_done < sim.target_rounds:
            sim.run_round()
        if i and sim.rounds_done == rounds:
            repeats.append(frame_start + i)
        if i:
            job.write(job.object(vertices=True))
        frame = frame_start + i
        size += fmt.write_frame(folder / frame_file(frame), snapshot(obj), b.compress)
        if report is not None:
            report(i + 1, frames)
    manifest = fmt.manifest(obj.name, len(obj.data.vertices), frame_start,
                            frame_start + frames - 1, per_frame, sim.per_round, sim.seed,
                            size, b.compress, repeats,
                            keyed.manifest() if keyed is not None else None)
    fmt.write_manifest(folder / MANIFEST, manifest)
    return manifest


def _roll_back(obj: bpy.types.Object, job: ErosionJob, record: tuple) -> None:
    """A failed bake: the mesh, its trees and water objects and the object's
    bookkeeping back as before (never raises: the bake's own error is what counts)."""
    with contextlib.suppress(Exception):
        job.cancel()
    with contextlib.suppress(Exception):
        current = job.find_object()
        if current is not None:
            _restore_record(current, record)
    with contextlib.suppress(Exception):
        _remove_new_data(record[3])


def free_cache(obj: bpy.types.Object) -> None:
    """Delete the files of the object's bake (only those its manifest lists)."""
    b = obj.terrain_bake
    try:
        _remove_cache_files(cache_path(obj))
    except OSError as exc:
        raise OutputPathError(f"cannot remove the cache: {exc}") from None
    b.baked = False
    _state.clear()
    _state.messages.pop(obj.name, None)


_size_cache: dict[str, tuple[float, int]] = {}


def cache_size(obj: bpy.types.Object) -> int | None:
    """Bytes of the object's cache on disk (None: no cache folder)."""
    try:
        folder = cache_path(obj)
        stamp = folder.stat().st_mtime
    except (BakeError, OSError):
        return None
    key = str(folder)
    hit = _size_cache.get(key)
    if hit is None or hit[0] != stamp:
        total = sum(e.stat().st_size for e in os.scandir(folder) if e.is_file())
        _size_cache[key] = hit = (stamp, total)
    return hit[1]


# ------------------------------------------------------------------ handler

@persistent
def on_frame_change(scene, _depsgraph=None) -> None:
    """Play every baked object of ``scene`` back; problems become messages."""
    wm = bpy.context.window_manager
    rt = getattr(wm, "terrain_erosion", None) if wm is not None else None
    if rt is not None and rt.running:
        return
    for obj in scene.objects:
        b = getattr(obj, "terrain_bake", None)
        if b is None or not b.baked or not b.playback or obj.type != 'MESH':
            continue
        try:
            apply_frame(obj, scene.frame_current)
            _state.messages.pop(obj.name, None)
        except UserError as exc:
            _say(obj, str(exc))
        except Exception as exc:  # noqa: BLE001 - a handler must never raise
            _say(obj, f"playing back the bake failed ({type(exc).__name__}: {exc}); "
                      "bake again or free the cache")


def _say(obj: bpy.types.Object, text: str) -> None:
    """A playback problem: shown in the panel; printed once (background mode)."""
    _state.messages[obj.name] = text
    if bpy.app.background and text not in _state.printed:
        _state.printed.add(text)
        print(f"terrain_erosion: '{obj.name}': {text}", file=sys.stderr, flush=True)


@persistent
def _on_load(*_args) -> None:
    _state.clear()
    _state.messages.clear()


# ------------------------------------------------------------------ UI

#: Blender 4.5+ warns about "//" paths unless the property says it takes them; 4.2 does
#: not know the option (a shim kept here, not in compat.py, which another module owns)
_PATH_OPTIONS = ({'PATH_SUPPORTS_BLEND_RELATIVE'} if "is_path_supports_blend_relative"
                 in bpy.types.Property.bl_rna.properties else set())


class TERRAIN_PG_bake(bpy.types.PropertyGroup):
    """Bake settings of one object (saved with the .blend)."""

    frame_start: bpy.props.IntProperty(name="Start", default=1, min=0,
                                       description="First baked frame (the terrain as it is)")
    frame_end: bpy.props.IntProperty(name="End", default=48, min=0,
                                     description="Last baked frame")
    particles_per_frame: bpy.props.IntProperty(
        name="Particles per Frame", default=2000, min=1, soft_max=200_000,
        description="Particles run between two frames")
    cache_dir: bpy.props.StringProperty(
        name="Cache Folder", default="", subtype='DIR_PATH', options=_PATH_OPTIONS,
        description="Where the frames are stored; // is the .blend's folder "
                    "(empty: //terrain_cache/<object>)")
    compress: bpy.props.BoolProperty(
        name="Compress", default=True,
        description="Store frames zlib-compressed (about 4x smaller). Off: bigger files, "
                    "faster frame changes when scrubbing large grids")
    playback: bpy.props.BoolProperty(name="Play Back", default=True,
                                     description="Show the baked frames on frame change")
    baked: bpy.props.BoolProperty(name="Baked", default=False)
    baked_start: bpy.props.IntProperty(name="Baked Start", default=0)
    baked_end: bpy.props.IntProperty(name="Baked End", default=0)


class TERRAIN_OT_bake(bpy.types.Operator):
    """Run the simulation over the frame range and cache every frame next to the
    .blend; the frames play back on frame change, in renders too"""

    bl_idname = "terrain.bake"
    bl_label = "Bake"
    #: one undo step (pushed when it finishes; a failed bake pushes none and has put
    #: everything back itself). No 'REGISTER': the redo panel would bake again
    bl_options = {'UNDO'}

    @classmethod
    def poll(cls, context):
        if not gridio.poll_grid(cls, context):
            return False
        if context.window_manager.terrain_erosion.running:
            cls.poll_message_set("An erosion run is going on: stop it first")
            return False
        return True

    @reports_user_errors
    def execute(self, context):
        obj = context.active_object
        b = obj.terrain_bake
        wm = context.window_manager
        wm.progress_begin(0, 1)

        def report(i, n):
            wm.progress_update(i / n)
            if bpy.app.background:
                print(f"terrain_erosion: baked frame {b.frame_start + i - 1} ({i}/{n})",
                      flush=True)

        try:
            manifest = bake(obj, b.frame_start, b.frame_end, b.particles_per_frame, report)
        finally:
            wm.progress_end()
        on_frame_change(context.scene)
        frames = manifest["frame_end"] - manifest["frame_start"] + 1
        text = f"Baked {frames} frames, {manifest['bytes'] / 2**20:.1f} MB"
        changing = manifest.get("keyed", {}).get("values", {})
        if changing:
            text += "; keyed: " + ", ".join(map(keys.title, changing))
        note = manifest.get("repeats")
        if note:
            self.report({'WARNING'}, f"{text}; {len(note['frames'])} repeat the frame "
                                     f"before: {note['why']}. To avoid it, {note['fix']}")
        else:
            self.report({'INFO'}, text)
        return {'FINISHED'}


class TERRAIN_OT_free_cache(bpy.types.Operator):
    """Delete the baked frames of the active object (the mesh keeps its shape)"""

    bl_idname = "terrain.free_cache"
    bl_label = "Free Cache"
    bl_options = {'REGISTER'}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and obj.type == 'MESH' and obj.terrain_bake.baked

    @reports_user_errors
    def execute(self, context):
        free_cache(context.active_object)
        return {'FINISHED'}


class TERRAIN_PT_bake(ErosionSubPanel, bpy.types.Panel):
    """Bake the run to the timeline"""

    bl_idname = "TERRAIN_PT_bake"
    bl_label = "Animation Bake"

    def draw(self, context):
        obj = context.active_object
        b = obj.terrain_bake
        layout = self.layout
        layout.use_property_split = True
        col = layout.column(align=True)
        col.prop(b, "frame_start")
        col.prop(b, "frame_end")
        col.prop(b, "particles_per_frame")
        layout.prop(b, "cache_dir")
        layout.prop(b, "compress")
        layout.prop(b, "playback")
        keyed = [key for key in keys.keyed_parameters(obj)
                 if getattr(obj.terrain_erosion, key.partition(".")[0]).enabled]
        if keyed:  # the fields themselves show Blender's keyed colours
            col = layout.column(align=True)
            col.label(text="Keyed on the timeline (each frame's value):", icon='KEYINGSET')
            for key in keyed:
                col.label(text=keys.title(key))
        row = layout.row(align=True)
        row.operator(TERRAIN_OT_bake.bl_idname, icon='REC')
        row.operator(TERRAIN_OT_free_cache.bl_idname, icon='TRASH')
        if b.baked:
            size = cache_size(obj)
            text = (f"Frames {b.baked_start}-{b.baked_end}, "
                    + (f"{size / 2**20:.1f} MB on disk" if size is not None else "no cache"))
            layout.label(text=text, icon='DISK_DRIVE')
        problem = message(obj)
        if problem:
            col = layout.column(align=True)
            col.alert = True
            words, line = problem.split(), ""
            for word in words:
                if len(line) + len(word) > 40:
                    col.label(text=line)
                    line = word
                else:
                    line = f"{line} {word}".strip()
            col.label(text=line, icon='ERROR')


classes = (TERRAIN_PG_bake, TERRAIN_OT_bake, TERRAIN_OT_free_cache, TERRAIN_PT_bake)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    bpy.types.Object.terrain_bake = bpy.props.PointerProperty(type=TERRAIN_PG_bake)
    bpy.app.handlers.frame_change_post.append(on_frame_change)
    bpy.app.handlers.load_post.append(_on_load)


def unregister() -> None:
    for handlers, fn in ((bpy.app.handlers.frame_change_post, on_frame_change),
                         (bpy.app.handlers.load_post, _on_load)):
        while fn in handlers:
            handlers.remove(fn)
    _state.clear()
    if _state.pool is not None:
        _state.pool.shutdown(wait=True, cancel_futures=True)
        _state.pool = None
    del bpy.types.Object.terrain_bake
    _unregister_classes()
