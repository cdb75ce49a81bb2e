"""Small UI pieces every panel shares (no simcore import: the panel shown when numba
is missing uses them too)."""

from __future__ import annotations


class ErosionTab:
    """Mixin: a panel in the 3D View's sidebar, tab "Erosion"."""

    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Erosion"


class ErosionSubPanel(ErosionTab):
    """Mixin: a closed sub-panel of the Terrain Erosion panel, shown for mesh objects."""

    bl_parent_id = "TERRAIN_PT_main"
    bl_options = {'DEFAULT_CLOSED'}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and obj.type == 'MESH'


def wrap_label(layout, text: str, icon: str = 'NONE', width: int = 42) -> None:
    """``text`` as labels of at most ``width`` characters; the icon on the first line."""
    col = layout.column(align=True)
    line, first = "", True
    for word in text.split():
        if len(line) + len(word) + 1 > width and line:
            col.label(text=line, icon=icon if first else 'BLANK1')
            first, line = False, word
        else:
            line = f"{line} {word}".strip()
    if line:
        col.label(text=line, icon=icon if first else 'BLANK1')
