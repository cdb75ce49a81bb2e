"""TOML presets: load, validate and save.

A preset file looks like::

    [preset]
    name = "Default"
    description = "Rain erosion that carves channels and fills valleys"

    [simulation]
    seed = 1
    particles = 200000
    real_size = 5000      # optional: metres across the grid's longer side (0: automatic)

    [droplets]            # one table per process; present + enabled = runs
    enabled = true
    Kq = 10.0

Every error names the file, the key and what is allowed.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from ..engine.simulation import PROCESSES, process_params
from ..errors import InputFileError, describe_os_error
from ..fileio import atomic_write, check_input
from ..params import SEED_RANGE, ParameterError, Params, describe_range, hidden
from ..rock import RockColumn, RockError

#: Folder of the presets shipped with the project (next to simcore in the repo,
#: inside the package in the built extension).
_SIMCORE = Path(__file__).resolve().parent.parent  # simcore/ (formats/ is inside it)
BUNDLED_DIRS = [p for p in (_SIMCORE / "presets", _SIMCORE.parent / "presets") if p.is_dir()]

SIMULATION_KEYS: dict[str, tuple[int, int, int, str]] = {
    "seed": (0, *SEED_RANGE, "random seed"),
    "particles": (200_000, 0, 10**10, "total particles of all enabled processes"),
}
#: Work per unit of world area: when > 0 it decides the amount of work (particles =
#: particles_per_area x rows x cols x cell_size^2, see Preset.work); ``particles`` is
#: then only the fallback where the extent is unknown. Setting ``particles`` explicitly
#: (``--particles``, ``--set particles=N``) switches it off.
#: the most particles a rain per area may make on a grid: far beyond a run that ends
#: (1e12 is days at the fastest) yet refusing the mix-ups (1e6 per m² on 5 km: 2.5e13)
MAX_AREA_PARTICLES = 1e12
AREA_KEY = ("particles_per_area", 0.0, 0.0, 1e6,
            "particles per square world unit (e.g. 0.006 per m^2 = 6000 per km^2)")
#: Optional real-world size the preset is meant for: metres across the grid's longer
#: side, 0 = automatic (the Blender add-on's rule, addon/data/scale.py). Absent (None): the
#: preset leaves the object's own real size alone. simcore itself runs on the cell size
#: it is given; the add-on turns the real size into that cell size.
REAL_SIZE_KEY = ("real_size", 1e-3, 1e8,
                 "metres across the grid's longer side, 0 = automatic")


class PresetError(ParameterError):
    """A preset file is missing, malformed or has bad values."""


@dataclasses.dataclass
class Preset:
    """A loaded preset: simulation settings plus params of every process (enabled flag
    kept separately so a disabled process keeps its tuned values)."""

    name: str
    description: str = ""
    seed: int = 0
    particles: int = 200_000
    particles_per_area: float = 0.0
    params: dict[str, Params] = dataclasses.field(default_factory=dict)
    enabled: dict[str, bool] = dataclasses.field(default_factory=dict)
    path: Path | None = None
    #: optional [ridges] table (simcore.generators.ridges.RidgeParams): DLA mountains raised on the
    #: input heightmap before the erosion runs
    ridges: Params | None = None
    #: optional real size (REAL_SIZE_KEY): metres across, 0 = automatic, None = not set
    real_size: float | None = None
    #: optional [rock] table (simcore.rock.RockColumn): the layers below the surface; it
    #: replaces the terrain's own column when the preset runs (None: left as it is)
    rock: RockColumn | None = None

    def work(self, terrain: Any) -> int:
        """Total particles on ``terrain``: rain per area x its world area when
        ``particles_per_area`` > 0, else ``particles``."""
        if self.particles_per_area > 0:
            rows, cols = terrain.shape
            area = rows * cols * float(terrain.cell_size) ** 2
            total = self.particles_per_area * area
            most = MAX_AREA_PARTICLES
            if total > most:  # weeks of work: a typo or a unit mix-up, not a plan
                raise PresetError(
                    f"rain per area {self.particles_per_area:g} per square world unit on "
                    f"this {rows}x{cols} grid of {area:.4g} square world units makes "
                    f"{total:.3g} particles, more than {most:.0e}: lower the rain per area "
                    "(particles_per_area) or the grid's size")
            return max(1, round(total))
        return self.particles

    def enabled_params(self) -> dict[str, Params]:
        return {n: p for n, p in self.params.items() if self.enabled.get(n)}

    def with_overrides(self, overrides: dict[str, Any]) -> Preset:
        """Apply ``{"droplets.Kq": 5, "seed": 3, "snowball.enabled": True}`` style
        overrides; errors name the key."""
        out = dataclasses.replace(self, params=dict(self.params), enabled=dict(self.enabled))
        for key, value in overrides.items():
            if key == AREA_KEY[0]:
                out.particles_per_area = _check_area(value, "--set")
                continue
            if key == REAL_SIZE_KEY[0]:
                out.real_size = _check_real_size(value, "--set")
                continue
            if "." not in key:
                if key not in SIMULATION_KEYS:
                    raise PresetError(f"--set {key}: unknown key; use 'seed', 'particles', "
                                      f"'{AREA_KEY[0]}', '{REAL_SIZE_KEY[0]}' or "
                                      f"'PROCESS.KEY' with PROCESS in {list(PROCESSES)}")
                setattr(out, key, _check_sim_key(key, value, "--set"))
                if key == "particles":
                    out.particles_per_area = 0.0  # an explicit total wins
                continue
            proc, _, field = key.partition(".")
            if proc == ROCK_TABLE:
                out.rock = _rock_override(out.rock, field, value, key)
                continue
            if proc not in PROCESSES:
                raise PresetError(f"--set {key}: unknown process '{proc}'; known: "
                                  f"{', '.join(PROCESSES)}")
            if field == "enabled":
                if not isinstance(value, bool):
                    raise PresetError(f"--set {key}: must be true or false, got {value!r}")
                out.enabled[proc] = value
                continue
            current = out.params.get(proc) or process_params(proc)
            merged = {**current.to_dict(), field: value}
            out.params[proc] = process_params(proc, merged, f"--set {key}")
        return out


#: the table of a preset (and the prefix of ``--set`` keys) that holds the rock column
ROCK_TABLE = "rock"


def _rock_override(rock: RockColumn | None, field: str, value: Any,
                   key: str) -> RockColumn:
    """The column with one frame setting (``rock.dip``) or one layer's setting
    (``rock.layers.2.erodibility``, layers counted from 1) changed."""
    if rock is None:
        raise PresetError(f"--set {key}: the preset has no [rock] table; add one (a list "
                          "of layers) before changing its settings")
    data = rock.to_dict()
    parts = field.split(".")
    try:
        if parts[0] == "layers" and len(parts) == 3:
            data["layers"][int(parts[1]) - 1][parts[2]] = value
        elif len(parts) == 1 and parts[0] != "layers":
            data[parts[0]] = value
        else:
            raise ValueError
    except (ValueError, IndexError):
        raise PresetError(f"--set {key}: use 'rock.KEY' for the frame (dip, fold_amplitude, "
                          f"...) or 'rock.layers.N.KEY' with N from 1 to "
                          f"{len(rock.layers)}") from None
    try:
        return RockColumn.from_dict(data, f"--set {key}")
    except RockError as exc:
        raise PresetError(str(exc)) from None


def _check_sim_key(key: str, value: Any, where: str) -> int:
    _, lo, hi, doc = SIMULATION_KEYS[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise PresetError(f"{where}: '{key}' ({doc}) must be a whole number, got {value!r}")
    if not lo <= value <= hi:
        raise PresetError(f"{where}: '{key}' = {value} is out of range: allowed "
                          f"{lo} <= {key} <= {hi}")
    return value


def _check_area(value: Any, where: str) -> float:
    key, _, lo, hi, doc = AREA_KEY
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not lo <= value <= hi:
        raise PresetError(f"{where}: '{key}' ({doc}) must be a number with {lo:g} <= "
                          f"{key} <= {hi:g}, got {value!r}")
    return float(value)


def _check_real_size(value: Any, where: str) -> float:
    key, lo, hi, doc = REAL_SIZE_KEY
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not (value == 0 or lo <= value <= hi):
        raise PresetError(f"{where}: '{key}' ({doc}) must be 0 or a number with {lo:g} <= "
                          f"{key} <= {hi:g}, got {value!r}")
    return float(value)


def parse_preset(data: dict[str, Any], where: str, name: str = "") -> Preset:
    """Validate a preset's TOML tables; ``where`` (the file) prefixes every error."""
    preset = Preset(name=name)
    for table, values in data.items():
        if not isinstance(values, dict):
            raise PresetError(f"{where}: top-level key '{table}' must be a [table]")
        if table == "preset":
            for key, value in values.items():
                if key not in ("name", "description") or not isinstance(value, str):
                    raise PresetError(f"{where}: [preset] allows only text keys 'name' and "
                                      f"'description', got '{key}' = {value!r}")
                setattr(preset, key, value)
        elif table == "simulation":
            for key, value in values.items():
                if key == AREA_KEY[0]:
                    preset.particles_per_area = _check_area(value, f"{where}: [simulation]")
                    continue
                if key == REAL_SIZE_KEY[0]:
                    preset.real_size = _check_real_size(value, f"{where}: [simulation]")
                    continue
                if key not in SIMULATION_KEYS:
                    keys = [*SIMULATION_KEYS, AREA_KEY[0], REAL_SIZE_KEY[0]]
                    raise PresetError(f"{where}: [simulation] unknown key '{key}'; allowed "
                                      f"keys: {', '.join(keys)}")
                setattr(preset, key, _check_sim_key(key, value, f"{where}: [simulation]"))
        elif table == ROCK_TABLE:
            try:
                preset.rock = RockColumn.from_dict(values, f"{where}: [{ROCK_TABLE}]")
            except RockError as exc:
                raise PresetError(str(exc)) from None
        elif table == "ridges":
            from ..generators.ridges import RidgeParams
            preset.ridges = RidgeParams.from_dict(values, f"{where}: [ridges]")
        elif table in PROCESSES:
            values = dict(values)
            enabled = values.pop("enabled", True)
            if not isinstance(enabled, bool):
                raise PresetError(f"{where}: [{table}] 'enabled' must be true or false")
            preset.enabled[table] = enabled
            preset.params[table] = process_params(table, values, f"{where}: [{table}]")
        else:
            raise PresetError(f"{where}: unknown table [{table}]; allowed: preset, "
                              f"simulation, ridges, {ROCK_TABLE}, {', '.join(PROCESSES)}")
    if not preset.enabled_params():
        raise PresetError(f"{where}: no process is enabled; add e.g. [droplets] "
                          "with enabled = true")
    return preset


#: Largest preset file read (bytes): presets are a few hundred bytes of settings.
MAX_PRESET_BYTES = 1 << 20


def load_preset(path: str | Path) -> Preset:
    """Load and validate one preset file."""
    path = Path(path)
    try:
        check_input(path)
        with open(path, "rb") as f:
            raw = f.read(MAX_PRESET_BYTES + 1)
    except InputFileError as exc:  # a FIFO or a device: would block or never end
        raise PresetError(str(exc)) from None
    except OSError as exc:
        raise PresetError(f"{path}: cannot read preset ({exc.strerror or exc}); check "
                          "the path") from None
    except ValueError as exc:  # e.g. a NUL byte in the path
        raise PresetError(f"{path!r}: cannot read preset ({exc})") from None
    if len(raw) > MAX_PRESET_BYTES:
        raise PresetError(f"{path}: is larger than {MAX_PRESET_BYTES} bytes; a preset is "
                          "a short TOML file of settings")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PresetError(f"{path}: is not UTF-8 text (bad byte at position {exc.start}); "
                          "save it as UTF-8") from None
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise PresetError(f"{path}: not valid TOML: {exc}") from None
    preset = parse_preset(data, str(path), name=path.stem)
    if not preset.name:
        preset.name = path.stem
    preset.path = path
    return preset


def preset_files(dirs: list[Path] | None = None) -> dict[str, Path]:
    """Preset id (file stem) -> path; later folders override earlier ones."""
    found: dict[str, Path] = {}
    for folder in (BUNDLED_DIRS if dirs is None else dirs):
        for path in sorted(Path(folder).glob("*.toml")):
            found[path.stem] = path
    return found


def find_preset(name: str, dirs: list[Path] | None = None) -> Preset:
    """Load a preset by id (file stem) or by path."""
    if name.endswith(".toml") or "/" in name or "\\" in name:
        return load_preset(name)
    files = preset_files(dirs)
    if name not in files:
        raise PresetError(f"no preset named '{name}'; available: "
                          f"{', '.join(files) or '(none)'}")
    return load_preset(files[name])


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def dump_preset(preset: Preset) -> str:
    """TOML text for ``preset`` (round-trips through :func:`parse_preset`)."""
    lines = ["[preset]", f"name = {_toml_value(preset.name)}",
             f"description = {_toml_value(preset.description)}", "",
             "[simulation]", f"seed = {preset.seed}", f"particles = {preset.particles}"]
    if preset.particles_per_area > 0:
        lines.append(f"particles_per_area = {preset.particles_per_area!r}")
    if preset.real_size is not None:
        lines.append(f"real_size = {preset.real_size!r}  # {REAL_SIZE_KEY[3]}")
    if preset.ridges is not None:
        lines += ["", "[ridges]"]
        for f in dataclasses.fields(preset.ridges):  # type: ignore[arg-type]
            lines.append(f"{f.name} = {_toml_value(getattr(preset.ridges, f.name))}"
                         f"  # {f.metadata['doc']}")
    if preset.rock is not None:
        lines += ["", f"[{ROCK_TABLE}]"]
        rock = preset.rock.to_dict()
        for key, value in rock.items():
            if key != "layers":
                lines.append(f"{key} = {_toml_value(value)}")
        for layer in rock["layers"]:
            lines += ["", f"[[{ROCK_TABLE}.layers]]"]
            lines += [f"{key} = {_toml_value(value)}" for key, value in layer.items()]
    for name in PROCESSES:
        if name not in preset.params:
            continue
        lines += ["", f"[{name}]", f"enabled = {_toml_value(bool(preset.enabled.get(name)))}"]
        for f in dataclasses.fields(preset.params[name]):  # type: ignore[arg-type]
            if hidden(f, getattr(preset.params[name], f.name)):
                continue  # an old key at its default: not written
            lines.append(f"{f.name} = {_toml_value(getattr(preset.params[name], f.name))}"
                         f"  # {f.metadata['doc']}; {describe_range(f)}")
    return "\n".join(lines) + "\n"


def save_preset(preset: Preset, path: str | Path) -> Path:
    """Write ``preset`` as TOML, atomically; its folder is created if missing."""
    path = Path(path)
    text = dump_preset(preset).encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PresetError(describe_os_error(exc, path, "save preset")) from None
    return atomic_write(path, lambda f: f.write(text))


def delete_preset(path: str | Path) -> None:
    """Remove a user preset file; a missing file is fine, other failures are
    PresetError naming the path."""
    try:
        Path(path).unlink(missing_ok=True)
    except OSError as exc:
        raise PresetError(describe_os_error(exc, path, "delete preset")) from None
