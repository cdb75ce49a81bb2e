import pytest

from simcore.engine.simulation import PROCESSES
from simcore.formats.presets import (
    PresetError,
    dump_preset,
    find_preset,
    load_preset,
    parse_preset,
    preset_files,
    save_preset,
)
from simcore.params import ParameterError


def test_every_shipped_preset_loads_and_round_trips(tmp_path):
    files = preset_files()
    assert len(files) >= 2
    for name, path in files.items():
        p = load_preset(path)
        assert p.enabled_params(), name
        assert set(p.params) <= set(PROCESSES)
        again = load_preset(save_preset(p, tmp_path / f"{name}.toml"))
        assert again.params == p.params and again.enabled == p.enabled
        assert (again.seed, again.particles) == (p.seed, p.particles)



def test_every_shipped_preset_says_what_it_is_for():
    """A description names the look and ends with what the preset is for ("For ...")."""
    for name in preset_files():
        text = find_preset(name).description
        assert ". For " in text, f"{name}: the description does not say what it is for"
        purpose = text.split(". For ", 1)[1]
        assert len(purpose.split()) >= 3, f"{name}: '{purpose}' is too short to help"

@pytest.mark.parametrize("text, expected", [
    ("[droplets]\nKq = 5\nwobble = 1\n", r"\[droplets\]: unknown key 'wobble'; allowed keys: Kq"),
    ("[droplets]\nKq = 'ten'\n", r"'Kq' must be a number \(0 <= Kq <= 1e\+09 \(float\)\)"),
    ("[droplets]\nKr = 1.5\n", r"'Kr' = 1.5 is out of range: allowed 0 <= Kr <= 1"),
    ("[droplets]\nbatch = 2.5\n", r"'batch' must be a whole number"),
    ("[droplets]\nenabled = 'yes'\n", r"'enabled' must be true or false"),
    ("[lava]\nheat = 1\n", r"unknown table \[lava\]"),
    ("[droplets]\nenabled = false\n", r"no process is enabled"),
    ("[simulation]\nparticles = -1\n[droplets]\n", r"'particles' = -1 is out of range"),
    ("[simulation]\ncolour = 1\n[droplets]\n", r"\[simulation\] unknown key 'colour'"),
    ("[droplets\nKq = 1\n", r"not valid TOML"),
])
def test_broken_presets_name_file_key_and_range(tmp_path, text, expected):
    path = tmp_path / "broken.toml"
    path.write_text(text)
    with pytest.raises(ParameterError, match=expected) as info:
        load_preset(path)
    assert str(path) in str(info.value)


def test_missing_preset_lists_the_available_ones(tmp_path):
    with pytest.raises(PresetError, match="available: .*default"):
        find_preset("no_such_preset")
    with pytest.raises(PresetError, match="cannot read preset"):
        load_preset(tmp_path / "nope.toml")


def test_overrides_are_validated():
    p = find_preset("droplets_only")
    kq = p.params["droplets"].Kq
    q = p.with_overrides({"droplets.Kq": 3, "seed": 9, "snowball.enabled": True})
    assert q.params["droplets"].Kq == 3.0 and q.seed == 9
    assert set(q.enabled_params()) == {"droplets", "snowball", "thermal"}
    assert p.params["droplets"].Kq == kq != 3.0, "the original preset is untouched"
    with pytest.raises(ParameterError, match="out of range"):
        p.with_overrides({"droplets.Ki": 2})
    with pytest.raises(ParameterError, match="unknown process 'lava'"):
        p.with_overrides({"lava.heat": 2})


def test_legacy_keys_load_and_stay_hidden_at_their_default():
    """Old keys (cell units, unused) still load and still win when set; a saved preset
    and an unknown-key message name them only where an old file set them."""
    import tomllib

    from simcore.processes.hydrology import HydrologyParams
    from simcore.processes.trees import TreeParams
    old = parse_preset(tomllib.loads(
        "[hydrology]\nenabled = true\nmax_tries = 5\nsea_level = 2.0\n"
        "[trees]\nenabled = true\nroot_radius = 3.0\n"), "old.toml")
    hydrology, trees = old.params["hydrology"], old.params["trees"]
    assert hydrology.max_tries == 5 and hydrology.sea_cells(15.0) == 2.0
    assert trees.root_cells(7.5) == 3.0 and trees.spread_cells(7.5) == 16  # 120 m
    text = dump_preset(old)
    assert "max_tries = 5" in text and "sea_level = 2.0" in text and "root_radius = 3.0" in text
    assert "\nvolume_factor =" not in text and "\nspread_radius =" not in text
    fresh = dump_preset(find_preset("default"))
    assert all(f"\n{key} =" not in fresh for key in ("max_tries", "sea_level", "root_radius"))
    assert parse_preset(tomllib.loads(text), "again").params == old.params
    assert HydrologyParams().legacy_override("sea_height") is None
    assert TreeParams(spread_radius=4).legacy_override("spread_distance") == 4
    with pytest.raises(ParameterError) as err:
        HydrologyParams.from_dict({"wobble": 1}, "[hydrology]")
    assert "max_tries" not in str(err.value) and "sea_height" in str(err.value)


def test_dump_is_parseable_toml():
    import tomllib
    p = find_preset("default")
    assert parse_preset(tomllib.loads(dump_preset(p)), "dump").params == p.params


def test_non_utf8_and_huge_presets_are_user_errors(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b"[preset]\nname = \"Caf\xe9\"\n[droplets]\n")
    with pytest.raises(PresetError, match="is not UTF-8 text"):
        load_preset(path)
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (2 << 20))
    with pytest.raises(PresetError, match="larger than"):
        load_preset(big)
    with pytest.raises(PresetError, match="cannot read preset"):
        load_preset(tmp_path)  # a folder


def test_saving_and_deleting_presets_fail_with_the_path(tmp_path):
    from simcore.errors import UserError
    from simcore.formats.presets import delete_preset
    (tmp_path / "file").write_text("x")
    target = tmp_path / "file" / "sub" / "p.toml"
    with pytest.raises(UserError) as info:
        save_preset(find_preset("default"), target)
    assert str(target) in str(info.value)
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    with pytest.raises(PresetError, match="cannot delete preset") as info:
        delete_preset(folder)
    assert str(folder) in str(info.value)
    delete_preset(tmp_path / "missing.toml")  # already gone: fine
