"""Add-on preferences: a cap on the simulation's threads (for a busy machine: a render
or a browser on the other cores), and what the simulation core runs on."""

from __future__ import annotations

import bpy

from ..data import warmup
from ..data.package import PACKAGE
from ..data.threads import apply_thread_cap, cpu_count, preferences, thread_count


def _update(self, context) -> None:
    apply_thread_cap(self.threads)


class TerrainErosionPreferences(bpy.types.AddonPreferences):
    bl_idname = PACKAGE

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
        layout.label(text=f"Using {thread_count(self.threads)} of {cpu_count()} CPU threads "
                          f"({core}; idle threads sleep, nothing spins)")
        text = warmup.status().text()
        if text:
            layout.label(text=text)


classes = (TerrainErosionPreferences,)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    prefs = preferences()
    if prefs is not None and prefs.threads > 0:  # 0: leave numba's default alone
        apply_thread_cap(prefs.threads)


def unregister() -> None:
    _unregister_classes()
