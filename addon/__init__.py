"""Terrain Erosion: erode grid meshes with rain, rivers, wind and trees.

The simulation is the vendored ``simcore`` subpackage (numpy + numba); this package is
the Blender layer: grid I/O, settings, operators, the Erosion tab in the sidebar.
If numba cannot load (a zip for another platform), only a panel saying so is registered.
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


def _numba_problem() -> str:
    """Why numba cannot be used here, or "" when it imports."""
    try:
        import numba  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - ImportError, OSError (llvmlite), numpy clash
        return f"{type(exc).__name__}: {exc}"
    return ""


_set_numba_cache()
CORE_PROBLEM = _numba_problem()

if CORE_PROBLEM:
    from .features import core_missing

    _modules: tuple = ()
else:
    from .data import warmup
    from .features import (
        bake,
        batch,
        engine_tiles,
        export,
        history,
        ice_surface,
        live,
        masks,
        material,
        operators,
        panels,
        preferences,
        refine,
        report_ui,
        ridges,
        rock,
        water_data,
    )
    from .ui import overlay, presets_ui, properties

    _modules = (preferences, properties, presets_ui, operators, panels, overlay, batch,
                export, ice_surface, water_data, bake, ridges, history, masks, live, warmup,
                report_ui, material, engine_tiles, rock, refine)


def register() -> None:
    if CORE_PROBLEM:
        core_missing.register(CORE_PROBLEM)
        return
    for module in _modules:
        module.register()


def unregister() -> None:
    if CORE_PROBLEM:
        core_missing.unregister()
        return
    for module in reversed(_modules):
        module.unregister()
