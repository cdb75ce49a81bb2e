"""Preset menu: shipped presets (read-only) plus user presets in the extension's user
folder. Presets are TOML data read by simcore.formats.presets, never executed."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import bpy

from ..data.package import PACKAGE
from ..simcore.errors import UserError, describe_os_error
from ..simcore.formats.presets import BUNDLED_DIRS, PresetError, load_preset, preset_files


def user_dir() -> Path:
    """Where user presets live: the extension's user folder (survives upgrades); outside
    an installed extension (tests, scripts) $TERRAIN_EROSION_USER_DIR or a temp folder."""
    if PACKAGE.startswith("bl_ext."):
        path = Path(bpy.utils.extension_path_user(PACKAGE, path="presets", create=True))
    else:
        path = Path(os.environ.get("TERRAIN_EROSION_USER_DIR")
                    or Path(tempfile.gettempdir()) / "terrain_erosion_user") / "presets"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PresetError(describe_os_error(exc, path, "create the user preset folder")) \
            from None
    return path


def file_stem(name: str) -> str:
    """A safe file name for a preset name ('Alpine Wet!' -> 'alpine_wet')."""
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


def preset_entries() -> list[tuple[str, Path, bool, str | None]]:
    """(label, path, is_user, problem) for every preset file; ``problem`` is None for
    a loadable preset, else the message saying what is wrong with the file."""
    dirs = list(BUNDLED_DIRS)
    try:
        user: Path | None = user_dir()
        dirs.append(user)
    except UserError:
        user = None
    out = []
    for stem, path in preset_files(dirs).items():
        problem = None
        try:
            label = load_preset(path).name or stem
        except UserError as exc:
            label, problem = stem, str(exc)
        out.append((label, path, user is not None and path.parent == user, problem))
    return sorted(out, key=lambda item: (item[2], item[0].lower()))


def all_presets() -> list[tuple[str, Path, bool]]:
    """(label, path, is_user) for every loadable preset; broken files are left out."""
    return [(label, path, is_user)
            for label, path, is_user, problem in preset_entries() if problem is None]


class TERRAIN_MT_presets(bpy.types.Menu):
    """Erosion presets"""

    bl_idname = "TERRAIN_MT_presets"
    bl_label = "Erosion Presets"

    def draw(self, context):
        layout = self.layout
        for label, path, is_user, problem in preset_entries():
            row = layout.row(align=True)
            if problem:  # listed, never applied silently: clicking reports the problem
                op = row.operator("terrain.preset_apply", text=f"{label} (broken)",
                                  icon='ERROR')
            else:
                op = row.operator("terrain.preset_apply", text=label,
                                  icon='USER' if is_user else 'PRESET')
            op.filepath = str(path)
            if is_user:
                row.operator("terrain.preset_delete", text="", icon='X').filepath = str(path)
        layout.separator()
        layout.operator("terrain.preset_save", text="Save Current as Preset…", icon='ADD')


classes = (TERRAIN_MT_presets,)


register, unregister = bpy.utils.register_classes_factory(classes)
