"""The rock column in the add-on (addon/ui/rock_props.py, addon/features/rock.py): kept
with the .blend, used by a run, filled from a preset's [rock] table, previewed as
te_rock_layer, coloured by the terrain material; bad layers end in a report and an
untouched mesh. Real Blender (bpy module)."""

from __future__ import annotations

import dataclasses

import bpy
import numpy as np
import pytest
from blender_helpers import add_grid, mesh_state, positions, same_state, staged_addon, top_view

te = staged_addon()
ROCK_LAYER = "te_rock_layer"

PRESET = """
[preset]
name = "Layered"

[droplets]
enabled = true

[rock]
dip = 12.5
dip_direction = 90.0
fold_amplitude = 3.0
repeat = false

[[rock.layers]]
thickness = 0.25
erodibility = 0.1
name = "Cap"
color = [0.9, 0.1, 0.1]

[[rock.layers]]
thickness = 4.0
erodibility = 3.0
rock_angle = 55.0
name = "Shale"
"""


def _hard_over_soft(obj, top: float, cap_thickness: float = 0.15) -> None:
    """A hard cap over soft rock, its top at ``top`` (metres)."""
    rock = obj.terrain_erosion.rock
    rock.enabled = True
    cap = rock.add_layer()
    cap.name, cap.thickness, cap.erodibility = "Cap", cap_thickness, 0.05
    cap.color = (0.8, 0.2, 0.1)
    soft = rock.add_layer()
    soft.name, soft.thickness, soft.erodibility = "Soft", 5000.0, 3.0
    soft.color = (0.1, 0.3, 0.8)
    rock.repeat = False
    rock.top = top


def _grid(name: str):
    """A 4 m grid of hills (automatic Real Size: 5 km, 1250 m a local unit)."""
    obj = add_grid(bpy, n=40, size=4.0, relief=1.0, name=name)
    s = obj.terrain_erosion
    s.seed, s.particles = 11, 3000
    return obj


def _heights(obj) -> np.ndarray:
    g = te.data.grid.detect_grid(obj.data)
    return positions(obj.data)[:, 2][g.order].reshape(g.rows, g.cols).astype(np.float64)


@pytest.mark.compat
def test_column_survives_save_and_reload(blender, tmp_path):
    obj = add_grid(bpy, n=8, name="Layered")
    rock = obj.terrain_erosion.rock
    _hard_over_soft(obj, 0.3)
    rock.layers[1].rock_angle = 50.0
    rock.dip, rock.dip_direction, rock.fault_throw, rock.seed = 20.0, 135.0, -2.5, 7
    rock.active_layer = 1
    column = rock.to_column()
    path = str(tmp_path / "rock.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    rock = bpy.data.objects["Layered"].terrain_erosion.rock
    assert rock.enabled and rock.active_layer == 1
    assert [layer.name for layer in rock.layers] == ["Cap", "Soft"]
    assert tuple(rock.layers[0].color) == pytest.approx((0.8, 0.2, 0.1))
    assert rock.to_column() == column
    assert column.frame.dip == 20.0 and column.frame.fault_throw == -2.5
    assert column.layers[1].rock_angle == 50.0 and column.layers[0].thickness == 0.15


def test_run_on_a_hard_over_soft_column(blender):
    plain = _grid("Plain")
    bpy.context.view_layer.objects.active = plain
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    assert ROCK_LAYER not in plain.data.attributes, "no column, no layer"

    layered = _grid("Layered")
    z0 = _heights(layered)
    metres = 5000.0 / 4.0  # per local unit (automatic Real Size)
    top, bottom = float(z0.max()) * metres, float(z0.min()) * metres
    contact = top - 0.5 * (top - bottom)  # the upper half of the hills is hard rock
    _hard_over_soft(layered, top, top - contact)
    bpy.context.view_layer.objects.active = layered
    assert bpy.ops.terrain.erode() == {'FINISHED'}
    z_plain, z_layered = _heights(plain), _heights(layered)
    assert np.isfinite(z_layered).all()
    assert not np.array_equal(z_plain, z_layered), "the column changes the run"

    # the mesh is what simcore makes of the same terrain and column
    g = te.data.grid.detect_grid(layered.data)
    scale = layered.terrain_erosion.real_scale(g.rows, g.cols, g.cell_size)
    column = layered.terrain_erosion.rock.to_column()
    terrain = te.simcore.terrain.Terrain.from_heights(
        z0 / scale.height_unit, scale.world_cell, world_units=False, rock=column)
    params = layered.terrain_erosion.enabled_params()
    te.simcore.engine.simulation.Simulation(terrain, params, seed=11,
                                            particles=3000).run()
    assert np.allclose(z_layered, terrain.height() * scale.height_unit, rtol=0, atol=1e-6)

    # te_rock_layer: the exposed layer (index + depth fraction) where the bedrock is now
    me = layered.data
    values = np.empty(len(me.vertices), np.float32)
    me.attributes[ROCK_LAYER].data.foreach_get("value", values)
    layer = values[g.order].reshape(g.rows, g.cols)
    assert np.array_equal(layer, terrain.rock_layer.astype(np.float32))
    assert ((layer >= 0) & (layer < 2)).all()
    sediment = te.data.grid.read_float_layer(me, "te_sediment_depth", g)
    bedrock = (z_layered - sediment) * metres
    cap, soft = bedrock > contact + 1e-2, bedrock < contact - 1e-2
    assert cap.sum() > 100 and soft.sum() > 100
    assert (layer[cap] < 1).all() and (layer[soft] >= 1).all()
    # the hard cap wears down less than the same hills without a column, the soft
    # rock below more
    cut_plain = z0 - (z_plain - te.data.grid.read_float_layer(plain.data,
                                                               "te_sediment_depth", g))
    cut = z0 - (z_layered - sediment)
    assert cut[cap].mean() < 0.5 * cut_plain[cap].mean()
    assert cut[soft].mean() > cut_plain[soft].mean()


def test_a_preset_with_rock_fills_the_list_and_a_saved_preset_keeps_it(blender, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("TERRAIN_EROSION_USER_DIR", str(tmp_path / "user"))
    path = tmp_path / "layered.toml"
    path.write_text(PRESET)
    obj = add_grid(bpy, n=8)
    assert bpy.ops.terrain.preset_apply(filepath=str(path)) == {'FINISHED'}
    rock = obj.terrain_erosion.rock
    assert rock.enabled
    assert [layer.name for layer in rock.layers] == ["Cap", "Shale"]
    assert rock.layers[0].thickness == pytest.approx(0.25)
    assert rock.layers[0].erodibility == pytest.approx(0.1)
    assert rock.layers[1].rock_angle == pytest.approx(55.0)
    assert tuple(rock.layers[0].color) == pytest.approx((0.9, 0.1, 0.1))
    # a layer without a colour gets the palette's
    assert tuple(rock.layers[1].color) == pytest.approx(te.simcore.rock.PALETTE[1])
    assert (rock.dip, rock.dip_direction, rock.fold_amplitude, rock.repeat) == \
        (pytest.approx(12.5), pytest.approx(90.0), pytest.approx(3.0), False)
    expected = te.simcore.formats.presets.load_preset(path).rock
    assert rock.to_column().frame == expected.frame

    # saved from the object, the preset carries the column
    assert bpy.ops.terrain.preset_save(name="Mine") == {'FINISHED'}
    saved = te.simcore.formats.presets.load_preset(tmp_path / "user" / "presets" / "mine.toml")
    assert saved.rock == rock.to_column()

    # a preset without [rock] leaves the column as it is; Rock Layers off: no [rock]
    plain = te.simcore.formats.presets.find_preset("default")
    assert plain.rock is None
    obj.terrain_erosion.apply_preset(plain)
    assert rock.enabled and len(rock.layers) == 2
    rock.enabled = False
    assert obj.terrain_erosion.to_preset("off").rock is None


@pytest.mark.parametrize("case", ["thickness", "empty", "angle"])
def test_bad_layers_end_in_a_report_and_an_untouched_mesh(blender, case):
    obj = _grid("Bad")
    rock = obj.terrain_erosion.rock
    _hard_over_soft(obj, 0.5)
    if case == "thickness":
        rock.layers[1].thickness = 0.0
        match = r"Rock Layers: layer 2: 'thickness'.*0\.001"
    elif case == "empty":
        rock.layers.clear()
        match = "Rock Layers is on but lists no layer"
    else:
        rock.layers[0]["rock_angle"] = 120.0  # past the property's range (a script)
        match = r"Rock Layers: layer 1: 'rock_angle'"
    before = mesh_state(obj.data)
    for op in (bpy.ops.terrain.erode, bpy.ops.terrain.step, bpy.ops.terrain.rock_preview):
        with pytest.raises(RuntimeError, match=match):
            op()
        assert same_state(before, mesh_state(obj.data)), op
    assert obj.terrain_erosion.rounds_done == 0


@pytest.mark.compat
def test_preview_layers_and_the_material_show_the_bands(blender):
    obj = add_grid(bpy, n=24, size=2.0, relief=0.0, name="Flat")  # flat at z = 0
    s = obj.terrain_erosion
    s.real_size = 2.0
    rock = s.rock
    with pytest.raises(RuntimeError, match="Rock Layers is off"):
        bpy.ops.terrain.rock_preview()
    _hard_over_soft(obj, 0.0)
    rock.repeat = True
    rock.layers[0].thickness = rock.layers[1].thickness = 0.1
    rock.dip, rock.dip_direction = 20.0, 90.0  # dipping east: bands across x
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    before = positions(obj.data).copy()
    assert bpy.ops.terrain.rock_preview() == {'FINISHED'}
    assert np.array_equal(positions(obj.data), before), "heights untouched"
    me = obj.data
    values = np.empty(len(me.vertices), np.float32)
    me.attributes[ROCK_LAYER].data.foreach_get("value", values)
    x = before[:, 0]
    # a flat surface cuts the dipping layers in bands across x, both layers exposed
    assert set(np.unique(np.floor(values))) == {0.0, 1.0}
    for ux in np.unique(x):
        assert np.ptp(values[x == ux]) < 1e-5, "the same layer along each north-south line"

    # the material: a constant ramp of the two colours, fed by te_rock_layer
    mat = me.materials[0]
    node = te.features.material.group_node(mat)
    assert node.inputs["Layer Mix"].default_value == 1.0
    ramps = [n for n in mat.node_tree.nodes if n.bl_idname == "ShaderNodeValToRGB"]
    assert len(ramps) == 1 and ramps[0].color_ramp.interpolation == 'CONSTANT'
    colors = [tuple(e.color)[:3] for e in ramps[0].color_ramp.elements]
    assert colors == [pytest.approx((0.8, 0.2, 0.1)), pytest.approx((0.1, 0.3, 0.8))]
    attrs = [n for n in mat.node_tree.nodes if n.bl_idname == "ShaderNodeAttribute"]
    assert [n.attribute_name for n in attrs] == [ROCK_LAYER]
    # a colour edit reaches the ramp; Rock Layers off: the material as before
    rock.layers[1].color = (0.0, 1.0, 0.0)
    ramp = next(n for n in mat.node_tree.nodes if n.bl_idname == "ShaderNodeValToRGB")
    assert tuple(ramp.color_ramp.elements[1].color)[:3] == pytest.approx((0.0, 1.0, 0.0))
    rock.enabled = False
    assert node.inputs["Layer Mix"].default_value == 0.0
    assert not [n for n in mat.node_tree.nodes if n.bl_idname == "ShaderNodeValToRGB"]


def test_layer_list_operators(blender):
    obj = add_grid(bpy, n=8)
    rock = obj.terrain_erosion.rock
    for _ in range(3):
        assert bpy.ops.terrain.rock_layer_add() == {'FINISHED'}
    assert [layer.name for layer in rock.layers] == ["Layer 1", "Layer 2", "Layer 3"]
    rock.active_layer = 0
    bpy.ops.terrain.rock_layer_add()  # below the active one
    assert [layer.name for layer in rock.layers][:2] == ["Layer 1", "Layer 4"]
    assert rock.active_layer == 1
    assert bpy.ops.terrain.rock_layer_move(direction='UP') == {'FINISHED'}
    assert rock.layers[0].name == "Layer 4" and rock.active_layer == 0
    assert bpy.ops.terrain.rock_layer_move(direction='UP') == {'CANCELLED'}
    assert bpy.ops.terrain.rock_layer_remove() == {'FINISHED'}
    assert [layer.name for layer in rock.layers] == ["Layer 1", "Layer 2", "Layer 3"]
    while len(rock.layers):
        bpy.ops.terrain.rock_layer_remove()
    assert not bpy.ops.terrain.rock_layer_remove.poll()


def test_rock_panel_draws_the_list_and_every_frame_setting(blender):
    import types

    from blender_helpers import PanelRecorder

    obj = add_grid(bpy, n=8)
    _hard_over_soft(obj, 0.0)
    rec = PanelRecorder()
    context = types.SimpleNamespace(active_object=obj)
    panel = bpy.types.TERRAIN_PT_rock
    panel.draw_header(types.SimpleNamespace(layout=rec), context)
    panel.draw(types.SimpleNamespace(layout=rec), context)
    assert ("template_list", "TERRAIN_UL_rock_layers", "layers") in rec.log
    ops = {name for kind, name, _ in rec.log if kind == "operator"}
    assert {"terrain.rock_layer_add", "terrain.rock_layer_remove",
            "terrain.rock_layer_move", "terrain.rock_preview"} <= ops
    props = {name for kind, name, _ in rec.log if kind == "prop"}
    frame = {f.name for f in dataclasses.fields(te.simcore.rock.Frame)}
    assert frame | {"enabled", "thickness", "erodibility", "rock_angle", "color"} <= props
    # the list's rows
    row = PanelRecorder()
    bpy.types.TERRAIN_UL_rock_layers.draw_item(
        types.SimpleNamespace(layout_type='DEFAULT'), context, row, obj.terrain_erosion.rock,
        obj.terrain_erosion.rock.layers[0], 0, obj.terrain_erosion.rock, "active_layer")
    assert [name for _, name, _ in row.log] == ["color", "name", "thickness", "erodibility"]
    # the thickness is shown in metres, as the processes' lengths are
    layer = obj.terrain_erosion.rock.layers[0]
    assert layer.bl_rna.properties["thickness"].name == "Thickness (m)"


@pytest.mark.compat
@pytest.mark.parametrize("engine", ["CYCLES", "BLENDER_EEVEE"])
def test_material_renders_the_layers_bands(blender, tmp_path, engine):
    """A cone of 45-degree rock slopes cut by two flat layers: red above half its
    height, blue below; seen from above, the inner ring renders red, the outer blue."""
    from blender_helpers import render_pixels, set_z

    obj = add_grid(bpy, n=48, size=2.0, relief=0.0, name="Cone")
    xy = positions(obj.data)[:, :2]
    r = np.hypot(xy[:, 0], xy[:, 1])
    set_z(obj.data, np.maximum(1.0 - r, 0.0))  # apex 1 at the centre
    bpy.ops.object.shade_smooth()
    s = obj.terrain_erosion
    s.real_size = 2.0  # 1:1
    rock = s.rock
    rock.enabled = True
    for name, color in (("Red", (0.8, 0.05, 0.05)), ("Blue", (0.05, 0.05, 0.8))):
        layer = rock.add_layer()
        layer.name, layer.color, layer.thickness = name, color, 0.5
    rock.repeat, rock.top = False, 1.0
    bpy.ops.terrain.apply_material(snow_line=1.0)  # no snow below the apex
    assert bpy.ops.terrain.rock_preview() == {'FINISHED'}
    top_view(bpy)
    px = render_pixels(bpy, te, engine, tmp_path / f"{engine}.png", 32,
                       plain_srgb=True)[..., :3]
    assert np.isfinite(px).all()
    h, w = px.shape[:2]
    y, x = np.mgrid[0:h, 0:w]
    radius = np.hypot(x + 0.5 - w / 2, y + 0.5 - h / 2) / (w / 2)
    inner = px[(radius > 0.15) & (radius < 0.4)].mean(0)  # above the contact (r = 0.5)
    outer = px[(radius > 0.6) & (radius < 0.9)].mean(0)
    assert inner[0] > 1.5 * inner[2], inner
    assert outer[2] > 1.5 * outer[0], outer


@pytest.mark.compat
def test_a_group_from_before_rock_layers_is_brought_up_to_date(blender):
    """A .blend saved by an earlier version has the group without Layer Color / Layer
    Mix: applying the material adds them and keeps the artist's input values."""
    obj = add_grid(bpy, n=8)
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    material = te.features.material
    tree = material.surface_group()
    for item in list(tree.interface.items_tree):
        if item.item_type == 'SOCKET' and item.name in ("Layer Color", "Layer Mix"):
            tree.interface.remove(item)
    node = material.group_node(obj.data.materials[0])
    node.inputs["Snow Line"].default_value = 0.321
    assert "Layer Mix" not in node.inputs
    _hard_over_soft(obj, 0.0)  # the column's colours reach the material: no error
    assert bpy.ops.terrain.apply_material() == {'FINISHED'}
    assert material.surface_group() == tree
    assert node.inputs["Layer Mix"].default_value == 1.0
    assert node.inputs["Snow Line"].default_value == pytest.approx(0.321)
    assert node.inputs["Layer Color"].is_linked


def test_batch_command_changes_the_objects_column(blender, capsys):
    """``--set rock.KEY=..`` (the command line's way) edits the object's column; a bad
    layer value is exit code 2 with the message, and the mesh as it was."""
    obj = _grid("Terrain")
    obj.terrain_erosion.particles = 500
    _hard_over_soft(obj, 1000.0, 300.0)
    before = mesh_state(obj.data)
    assert te.features.batch.main(["--object", "Terrain", "--set",
                                   "rock.layers.2.thickness=0"]) == 2
    assert "layer 2" in capsys.readouterr().err
    assert same_state(before, mesh_state(obj.data))
    assert te.features.batch.main(["--object", "Terrain", "--set", "rock.dip=30",
                                   "--set", "rock.layers.1.erodibility=0.2"]) == 0
    rock = obj.terrain_erosion.rock
    assert rock.dip == pytest.approx(30.0)
    assert rock.layers[0].erodibility == pytest.approx(0.2)
    assert rock.layers[0].name == "Cap" and len(rock.layers) == 2
    assert ROCK_LAYER in obj.data.attributes
