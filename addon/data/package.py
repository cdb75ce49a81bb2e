"""Where the add-on is: the package name Blender knows it by (``terrain_erosion``, or
``bl_ext.<repository>.terrain_erosion`` as an extension) and its folder."""

from __future__ import annotations

from pathlib import Path

#: the add-on's own package (this module lives one folder below it)
PACKAGE = (__package__ or "terrain_erosion.data").rpartition(".")[0]
#: the add-on's folder (the manifest, simcore and presets are inside)
FOLDER = Path(__file__).resolve().parent.parent
