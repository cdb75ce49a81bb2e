"""What the add-on registers when the simulation core cannot load (numba missing or
broken: usually a zip built for another platform or Python). Only a panel that says so
and what to do, and a batch command that prints the same and fails. Imports nothing
from simcore.
"""

from __future__ import annotations

import platform
import sys

import bpy

from ..ui.widgets import ErosionTab, wrap_label

#: Platforms the release zips serve (numba publishes wheels for these).
SUPPORTED = ("linux-x64", "linux-arm64", "windows-x64", "macos-arm64")

_error = ""


def this_platform() -> str:
    """Blender's name for this machine, as in the zip names (e.g. linux-x64)."""
    system = {"Linux": "linux", "Windows": "windows", "Darwin": "macos"}.get(
        platform.system(), platform.system().lower())
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        machine, machine)
    return f"{system}-{arch}"


def advice() -> list[str]:
    """Lines for the panel: what is wrong and what to do about it."""
    plat = this_platform()
    py = f"{sys.version_info[0]}.{sys.version_info[1]}"
    lines = ["The simulation core cannot run: numba did not load."]
    if _error:
        lines.append(f"Error: {_error}")
    if plat in SUPPORTED:
        lines += [f"This Blender is {plat} with Python {py}. Install the "
                  f"terrain_erosion zip made for {plat} (file name ending in "
                  f"{plat.replace('-', '_')}.zip): Edit > Preferences > Get Extensions > "
                  "Install from Disk, then restart Blender.",
                  "If that zip is already installed, remove and reinstall it, so that "
                  "Blender unpacks its numba wheels again."]
    else:
        lines.append(f"numba has no build for {plat}, so this extension cannot run here. "
                     f"Supported: {', '.join(SUPPORTED)}.")
    return lines


class TERRAIN_PT_main(ErosionTab, bpy.types.Panel):
    """Terrain Erosion: the simulation core is not available"""

    bl_idname = "TERRAIN_PT_main"
    bl_label = "Terrain Erosion"

    def draw(self, context):
        box = self.layout.box()
        for i, text in enumerate(advice()):
            wrap_label(box, text, 'ERROR' if i == 0 else 'INFO')


def main(argv: list[str]) -> int:
    """``blender -c terrain_erosion``: say why nothing can run; exit code 1."""
    for text in advice():
        print(f"terrain_erosion: error: {text}", file=sys.stderr, flush=True)
    return 1


classes = (TERRAIN_PT_main,)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)
_handles: list = []


def register(error: str) -> None:
    global _error
    _error = error
    _register_classes()
    if hasattr(bpy.utils, "register_cli_command"):
        _handles.append(bpy.utils.register_cli_command("terrain_erosion", main))


def unregister() -> None:
    while _handles:
        bpy.utils.unregister_cli_command(_handles.pop())
    _unregister_classes()
