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

from . import batch, operators, overlay, panels, presets_ui, properties  # noqa: E402

_modules = (properties, presets_ui, operators, panels, overlay, batch)
from . import ridges  # noqa: E402  (issue 15: Generate ridges panel section)

_modules = (*_modules, ridges)


def register() -> None:
    for module in _modules:
        module.register()


def unregister() -> None:
    for module in reversed(_modules):
        module.unregister()
