"""Add-on preferences: a cap on the simulation's threads (for a busy machine: a render
or a browser on the other cores), and what the simulation core runs on."""

from __future__ import annotations

import os

import bpy

from . import warmup

ADDON = __package__ or "terrain_erosion"


def _cpu_count() -> int:
    return os.cpu_count() or 1


def thread_count(cap: int) -> int:
    """Threads for a cap (0 = every CPU thread, or NUMBA_NUM_THREADS when set)."""
    from .simcore import parallel
    most = parallel.most_threads()
    return most if cap <= 0 else max(1, min(cap, most))


def apply_thread_cap(cap: int) -> int:
    """Use at most ``cap`` threads for every run from now on (the live run's worker
    thread included)."""
    from .simcore import parallel
    return parallel.set_threads(thread_count(cap))


def _update(self, context) -> None:
    apply_thread_cap(self.threads)


class TerrainErosionPreferences(bpy.types.AddonPreferences):
    bl_idname = ADDON

    threads: bpy.props.IntProperty(
        name="Threads", default=0, min=0, max=256,
        description="Most CPU threads a simulation uses; 0 = all. Fewer keeps Blender "
                    "smooth while other programs (a render, a browser) are busy",
        update=_update)

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "threads")
        try:
            import numba
            core = f"numba {numba.__version__}"
        except Exception:  # noqa: BLE001 - the panel says what is wrong with numba
            core = "numba missing"
        layout.label(text=f"Using {thread_count(self.threads)} of {_cpu_count()} CPU threads "
                          f"({core}; idle threads sleep, nothing spins)")
        text = warmup.status().text()
        if text:
            layout.label(text=text)


def preferences() -> TerrainErosionPreferences | None:
    """The stored preferences, or None when the add-on is not enabled through Blender's
    preferences (e.g. imported by a test)."""
    addon = bpy.context.preferences.addons.get(ADDON)
    return None if addon is None else addon.preferences


classes = (TerrainErosionPreferences,)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)
    prefs = preferences()
    if prefs is not None and prefs.threads > 0:  # 0: leave numba's default alone
        apply_thread_cap(prefs.threads)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
