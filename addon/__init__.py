"""Terrain Erosion: erode grid meshes with rain, rivers, wind and trees.

The simulation is the vendored ``simcore`` subpackage (numpy + numba); this package is
the Blender layer: grid I/O, settings, operators, the Erosion tab in the sidebar.
"""

from __future__ import annotations

import os

import bpy


def _set_numba_cache() -> None:
    """numba caches compiled kernels next to the sources unless told otherwise; the
    extension folder may be read-only, so use the extension's user folder."""
    if __package__ and __package__.startswith("bl_ext.") and "NUMBA_CACHE_DIR" not in os.environ:
        os.environ["NUMBA_CACHE_DIR"] = bpy.utils.extension_path_user(
            __package__, path="numba_cache", create=True)


_set_numba_cache()

# issue 14 added bake, export, water_data (animation bake, map export, water as data)
from . import (  # noqa: E402
    bake,
    batch,
    export,
    operators,
    overlay,
    panels,
    presets_ui,
    properties,
    water_data,
)

_modules = (properties, presets_ui, operators, panels, overlay, batch, export, water_data, bake)


def register() -> None:
    for module in _modules:
        module.register()


def unregister() -> None:
    for module in reversed(_modules):
        module.unregister()
