"""The Masks panel: for each mask of the terrain (``data/masks.py``) where it comes from,
and what is wrong with the pick; Selection Only."""

from __future__ import annotations

import bpy

from ..data.masks import MASKS
from ..ui.widgets import ErosionSubPanel


def _mask_problem(obj: bpy.types.Object, name: str) -> str:
    s = obj.terrain_erosion
    source = getattr(s, f"mask_{name}_source")
    picked = getattr(s, f"mask_{name}_name")
    if source == 'NONE':
        return ""
    if not picked:
        return "pick a source"
    if source == 'VERTEX_GROUP' and obj.vertex_groups.get(picked) is None:
        return f"no vertex group '{picked}'"
    if source == 'COLOR_ATTRIBUTE' and obj.data.color_attributes.get(picked) is None:
        return f"no color attribute '{picked}'"
    return ""


class TERRAIN_PT_masks(ErosionSubPanel, bpy.types.Panel):
    """Painted masks: where rain falls, how hard the rock is, what must not change,
    where trees seed, where the range rises; and eroding only a selection"""

    bl_idname = "TERRAIN_PT_masks"
    bl_label = "Masks"

    def draw(self, context):
        obj = context.active_object
        s = obj.terrain_erosion
        layout = self.layout
        for name, (label, _, _) in MASKS.items():
            col = layout.column(align=True)
            source = getattr(s, f"mask_{name}_source")
            col.prop(s, f"mask_{name}_source", text=label)
            if source == 'VERTEX_GROUP':
                col.prop_search(s, f"mask_{name}_name", obj, "vertex_groups", text="")
            elif source == 'COLOR_ATTRIBUTE':
                col.prop_search(s, f"mask_{name}_name", obj.data, "color_attributes",
                                text="")
            problem = _mask_problem(obj, name)
            if problem:
                col.label(text=problem, icon='ERROR')
        box = layout.box()
        box.prop(s, "selection_only")
        sub = box.column()
        sub.active = s.selection_only
        sub.prop_search(s, "selection_group", obj, "vertex_groups",
                        text="Group", icon='GROUP_VERTEX')
        sub.prop(s, "selection_falloff")
        if s.selection_only and not s.selection_group:
            sub.label(text="Uses the selected vertices", icon='INFO')


classes = (TERRAIN_PT_masks,)


register, unregister = bpy.utils.register_classes_factory(classes)
