"""Preset menu: shipped presets (read-only) plus user presets in the extension's user
folder. Presets are TOML data read by simcore.presets, never executed."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import bpy

from .simcore.presets import BUNDLED_DIRS, PresetError, load_preset, preset_files

_PACKAGE = __package__ or "terrain_erosion"


def user_dir() -> Path:
    """Where user presets live: the extension's user folder (survives upgrades); outside
    an installed extension (tests, scripts) $TERRAIN_EROSION_USER_DIR or a temp folder."""
    if _PACKAGE.startswith("bl_ext."):
        path = Path(bpy.utils.extension_path_user(_PACKAGE, path="presets", create=True))
    else:
        path = Path(os.environ.get("TERRAIN_EROSION_USER_DIR")
                    or Path(tempfile.gettempdir()) / "terrain_erosion_user") / "presets"
    path.mkdir(parents=True, exist_ok=True)
    return path


def file_stem(name: str) -> str:
    """A safe file name for a preset name ('Alpine Wet!' -> 'alpine_wet')."""
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


def all_presets() -> list[tuple[str, Path, bool]]:
    """(label, path, is_user) for every loadable preset; broken files are skipped."""
    user = user_dir()
    out = []
    for stem, path in preset_files([*BUNDLED_DIRS, user]).items():
        try:
            label = load_preset(path).name or stem
        except PresetError:
            continue
        out.append((label, path, path.parent == user))
    return sorted(out, key=lambda item: (item[2], item[0].lower()))


class TERRAIN_MT_presets(bpy.types.Menu):
    """Erosion presets"""

    bl_idname = "TERRAIN_MT_presets"
    bl_label = "Erosion Presets"

    def draw(self, context):
        layout = self.layout
        for label, path, is_user in all_presets():
            row = layout.row(align=True)
            op = row.operator("terrain.preset_apply", text=label,
                              icon='USER' if is_user else 'PRESET')
            op.filepath = str(path)
            if is_user:
                row.operator("terrain.preset_delete", text="", icon='X').filepath = str(path)
        layout.separator()
        layout.operator("terrain.preset_save", text="Save Current as Preset…", icon='ADD')


classes = (TERRAIN_MT_presets,)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
