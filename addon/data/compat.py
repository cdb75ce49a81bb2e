"""The one place where Blender versions differ (4.2 LTS to the newest 5.x).

Everything else in the add-on calls these helpers instead of checking
``bpy.app.version`` itself. Each helper says which versions need what.
"""

from __future__ import annotations

import bpy


def new_node_material(name: str) -> bpy.types.Material:
    """A new material with its default node tree (Principled BSDF + Material Output).

    Blender 5.0+ gives every new material a node tree; 4.2-4.5 create it only when
    ``use_nodes`` is switched on (deprecated from 5.0, so only touched when needed).
    """
    mat = bpy.data.materials.new(name)
    if mat.node_tree is None:
        mat.use_nodes = True
    return mat


def set_modifier_input(mod: bpy.types.NodesModifier, identifier: str, value) -> None:
    """Set the Geometry Nodes modifier input ``identifier`` (e.g. "Socket_1").

    Up to 5.0 the inputs are ID properties on the modifier (``mod["Socket_1"]``); 5.2
    removed that (TypeError "id properties not supported for this type") in favour of
    ``mod.properties.inputs.Socket_1.value``. Tags the object for re-evaluation (an ID
    property write alone does not).
    """
    inputs = getattr(getattr(mod, "properties", None), "inputs", None)
    if inputs is not None and hasattr(inputs, identifier):
        getattr(inputs, identifier).value = value
    else:
        mod[identifier] = value
    mod.id_data.update_tag()


def modifier_input(mod: bpy.types.NodesModifier, identifier: str):
    """Read back what :func:`set_modifier_input` set."""
    inputs = getattr(getattr(mod, "properties", None), "inputs", None)
    if inputs is not None and hasattr(inputs, identifier):
        return getattr(inputs, identifier).value
    return mod[identifier]


def eevee_engine() -> str:
    """The render engine id of EEVEE: ``BLENDER_EEVEE_NEXT`` in 4.2-4.5, ``BLENDER_EEVEE``
    from 5.0 (where the old name came back for the new engine)."""
    items = bpy.types.RenderSettings.bl_rna.properties["engine"].enum_items.keys()
    return "BLENDER_EEVEE_NEXT" if "BLENDER_EEVEE_NEXT" in items else "BLENDER_EEVEE"


def _action_curves(action, slot) -> list:
    """The F-curves of ``action`` for ``slot`` (the slot is ignored before 4.4)."""
    from bpy_extras import anim_utils
    get_bag = getattr(anim_utils, "action_get_channelbag_for_slot", None)
    if get_bag is None:  # 4.2, 4.3
        return list(action.fcurves)
    bag = get_bag(action, slot) if slot is not None else None
    return list(bag.fcurves) if bag is not None else []


def action_fcurves(id_block: bpy.types.ID) -> list[bpy.types.FCurve]:
    """The F-curves of ``id_block``'s active action (its keyframes; empty: none).

    Blender 4.4+ keeps them in the action's channelbag for the ID's slot
    (``bpy_extras.anim_utils.action_get_channelbag_for_slot``); 5.0 removed the
    legacy ``Action.fcurves`` that 4.2 has.
    """
    ad = getattr(id_block, "animation_data", None)
    action = ad.action if ad is not None else None
    if action is None:
        return []
    return _action_curves(action, getattr(ad, "action_slot", None))


def nla_fcurves(id_block: bpy.types.ID) -> list[bpy.types.FCurve]:
    """The F-curves of the actions in ``id_block``'s NLA strips on tracks that are not
    muted (strips have an ``action_slot`` from 4.4)."""
    ad = getattr(id_block, "animation_data", None)
    if ad is None or not ad.use_nla:
        return []
    return [fc for track in ad.nla_tracks if not track.mute for strip in track.strips
            if strip.action is not None and not strip.mute
            for fc in _action_curves(strip.action, getattr(strip, "action_slot", None))]


def driven_paths(id_block: bpy.types.ID) -> set[str]:
    """The data paths of ``id_block``'s properties a driver sets (any version)."""
    ad = getattr(id_block, "animation_data", None)
    return {fc.data_path for fc in ad.drivers} if ad is not None else set()
