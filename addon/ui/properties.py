"""Settings saved on each object. The process groups are generated from simcore's
parameter dataclasses, so defaults, ranges and descriptions live in one place."""

from __future__ import annotations

import dataclasses

import bpy

from ..data.grid import COLOR_LAYERS
from ..data.masks import mask_annotations
from ..data.scale import EXAGGERATION_RANGE, MAX_REAL_SIZE, RealScale
from ..simcore.engine.simulation import PROCESSES, process_params
from ..simcore.formats.presets import AREA_KEY, SIMULATION_KEYS, Preset
from ..simcore.params import SEED_RANGE, ParameterError
from .param_props import param_property
from .process_ui import extra_settings
from .rock_props import ROCK_CLASSES, TERRAIN_PG_rock

INT32_MAX = 2**31 - 1
SEED_MAX = SEED_RANGE[1]


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 20


def _seed_edited(self, _context) -> None:
    """Typing in the 32-bit Seed field makes it the seed again (drops a 64-bit one)."""
    if self.seed_text and self.seed_text != str(self.seed):
        self["seed_text"] = ""


def _seed_text_edited(self, _context) -> None:
    """Keep the 32-bit Seed field in step with a valid 64-bit seed text."""
    text = self.seed_text.strip()
    if _digits(text) and int(text) <= INT32_MAX:
        self["seed"] = int(text)
        self["seed_text"] = ""


def _particles_edited(self, _context) -> None:
    """Typing a particle count makes it the amount of work (an explicit total wins over
    rain per area, as ``--particles`` does on the command line)."""
    if self.particles_per_area > 0:
        self["particles_per_area"] = 0.0


def parse_seed(text: str) -> int:
    """A seed typed as text: a whole number 0..2**63-1, else ParameterError."""
    text = text.strip()
    if not _digits(text) or int(text) > SEED_MAX:
        raise ParameterError(f"Seed '{text}' must be a whole number from 0 to {SEED_MAX}")
    return int(text)


def _process_group(name: str) -> type[bpy.types.PropertyGroup]:
    proc = PROCESSES[name]
    annotations = {"enabled": bpy.props.BoolProperty(
        name="Enabled", default=proc.enabled_by_default,
        description=f"Run {proc.label.lower()}: {proc.doc}")}
    for f in dataclasses.fields(proc.params_type):
        annotations[f.name] = param_property(f)

    def to_params(self):
        # Blender stores floats in single precision: 0.001 comes back as 0.0010000000475.
        # Seven significant digits give back the value the user (or preset) typed.
        values = {f.name: (float(f"{getattr(self, f.name):.7g}")
                           if isinstance(f.default, float) else getattr(self, f.name))
                  for f in dataclasses.fields(proc.params_type)}
        return process_params(name, values, f"{proc.label} settings")

    def set_params(self, params) -> None:
        for f in dataclasses.fields(proc.params_type):
            setattr(self, f.name, getattr(params, f.name))

    return type(f"TERRAIN_PG_{name}", (bpy.types.PropertyGroup,),
                {"__annotations__": annotations, "to_params": to_params,
                 "set_params": set_params, "__doc__": proc.doc})


PROCESS_GROUPS = {name: _process_group(name) for name in PROCESSES}


class TERRAIN_PG_history_entry(bpy.types.PropertyGroup):
    """One run in an object's erosion history: what the list shows, whether Rebuild
    replays it, and the record itself (JSON, addon/data/history.py)."""

    label: bpy.props.StringProperty(name="Entry", default="",
                                    description="What ran (preset, seed, rounds, masks)")
    enabled: bpy.props.BoolProperty(name="Enabled", default=True,
                                    description="Rebuild replays this entry")
    data: bpy.props.StringProperty(name="Record", default="",
                                   description="What ran, as the add-on recorded it (JSON)")


def _settings_annotations() -> dict:
    ann = {name: bpy.props.PointerProperty(type=group) for name, group in PROCESS_GROUPS.items()}
    seed_default, seed_lo, _, _ = SIMULATION_KEYS["seed"]
    part_default, part_lo, _, _ = SIMULATION_KEYS["particles"]
    ann.update({
        "seed": bpy.props.IntProperty(
            name="Seed", default=seed_default, min=seed_lo, max=INT32_MAX,
            update=_seed_edited,
            description="Random seed: the same seed, settings and amount of work give the "
                        "same terrain"),
        # Blender's IntProperty is 32-bit; seeds up to 2**63-1 (as in the CLI) live here
        "seed_text": bpy.props.StringProperty(
            name="Seed (64-bit)", default="", update=_seed_text_edited,
            description="A seed above 2147483647, as digits (up to 9223372036854775807); "
                        "empty: the Seed field is used"),
        "particles": bpy.props.IntProperty(
            name="Particles", default=part_default, min=max(part_lo, 1), max=INT32_MAX,
            soft_max=5_000_000, update=_particles_edited,
            description="Amount of work per run: particles of all enabled processes "
                        "(rounded up to whole batches); used when Rain per Area is 0"),
        # 0 (the default, also in .blend files saved before it existed): use Particles
        "particles_per_area": bpy.props.FloatProperty(
            name="Rain per Area", default=0.0, min=AREA_KEY[2], max=AREA_KEY[3],
            soft_max=1.0, precision=6, step=0.01,
            description="Particles per square metre of the grid's real size (e.g. "
                        "0.0034 per m^2 = 3400 per km^2): the same rain on a bigger or "
                        "finer grid. 0: the Particles field is the amount of work"),
        # 0 (the default, also in .blend files saved before it existed): automatic
        "real_size": bpy.props.FloatProperty(
            name="Real Size (m)", default=0.0, min=0.0, max=MAX_REAL_SIZE, soft_max=100_000.0,
            precision=1, step=100_000,
            description="Metres the grid spans along its longer side in the real world; "
                        "the simulation runs at this size and the result is scaled back "
                        "to the object. 0: automatic (any object is treated as 5 km, "
                        "the presets' world; its own width in units takes it as "
                        "1 unit = 1 m)"),
        "vertical_exaggeration": bpy.props.FloatProperty(
            name="Vertical Exaggeration", default=1.0, min=EXAGGERATION_RANGE[0],
            max=EXAGGERATION_RANGE[1], soft_min=0.1, soft_max=10.0, precision=2,
            description="How much the object's heights are exaggerated relative to the "
                        "real world (1: true to scale; 2: the object's hills are twice "
                        "as high as the real ones the simulation erodes)"),
        "preset": bpy.props.StringProperty(
            name="Preset", default="default",
            description="Preset the settings were last loaded from"),
        "write_colors": bpy.props.BoolProperty(
            name="Color Layers", default=True,
            description="Write the color attributes (gray 0..1) "
                        + ", ".join(COLOR_LAYERS.values())),
        "live_update": bpy.props.FloatProperty(
            name="Viewport Update", default=0.2, min=0.02, max=5.0, subtype='TIME_ABSOLUTE',
            unit='TIME_ABSOLUTE',
            description="Seconds between mesh updates while a run is live"),
        "rounds_done": bpy.props.IntProperty(
            name="Rounds Done", default=0, min=0,
            description="Batches already run on this terrain with this seed (lets a run "
                        "continue where the last one stopped)"),
        "state_seed": bpy.props.IntProperty(
            name="State Seed", default=-1, min=-1,
            description="Seed of the run that produced the stored state"),
        "state_seed_text": bpy.props.StringProperty(
            name="State Seed (64-bit)", default="",
            description="Seed of the run that produced the stored state, when above "
                        "2147483647"),
    })
    ann.update(extra_settings())  # process_ui.py: the trees' object, the water surface...
    ann.update({
        "trees_object": bpy.props.PointerProperty(
            name="Trees Object", type=bpy.types.Object,
            description="Point object holding the simulated trees (made by the add-on)"),
        "water_object": bpy.props.PointerProperty(
            name="Water Object", type=bpy.types.Object,
            description="Water surface object (made by the add-on)"),
        "provenance": bpy.props.StringProperty(
            name="Provenance", default="",
            description="Preset, seed, work and simcore version of the last run"),
    })
    ann.update({  # the erosion history (addon/data/history.py)
        "history": bpy.props.CollectionProperty(type=TERRAIN_PG_history_entry,
                                                name="Erosion History"),
        "history_index": bpy.props.IntProperty(name="Active Entry", default=0, min=0),
        # False in files saved before the history existed: runs were not recorded
        "history_from_original": bpy.props.BoolProperty(
            name="History From Original", default=False,
            description="The history holds every run since the original heights, so "
                        "Rebuild can replay it"),
    })
    ann.update(mask_annotations())  # masks.py: painted masks and Selection Only
    # rock_props.py: the rock column (layers and their frame)
    ann["rock"] = bpy.props.PointerProperty(type=TERRAIN_PG_rock, name="Rock Column")
    return ann


class TERRAIN_PG_settings(bpy.types.PropertyGroup):
    """Terrain Erosion settings of one object (saved with the .blend)."""

    __annotations__ = _settings_annotations()

    def enabled_params(self) -> dict:
        out = {}
        for name in PROCESSES:
            group = getattr(self, name)
            if group.enabled:
                out[name] = group.to_params()
        if not out:
            raise ParameterError("No process is enabled: tick at least one process panel "
                                 "header (e.g. Droplet erosion)")
        return out

    # -- 64-bit seeds ------------------------------------------------------------
    def full_seed(self) -> int:
        """The seed of the next run: the 64-bit text when set, else the Seed field."""
        return parse_seed(self.seed_text) if self.seed_text.strip() else int(self.seed)

    def set_full_seed(self, value: int) -> None:
        if not 0 <= value <= SEED_MAX:
            raise ParameterError(f"Seed {value} must be a whole number from 0 to {SEED_MAX}")
        self["seed"] = value if value <= INT32_MAX else value & INT32_MAX
        self["seed_text"] = "" if value <= INT32_MAX else str(value)

    def stored_state_seed(self) -> int:
        """Seed of the run that produced the stored state (-1: none)."""
        text = self.state_seed_text.strip()
        if _digits(text) and int(text) <= SEED_MAX:
            return int(text)
        return int(self.state_seed)

    def set_state_seed(self, value: int) -> None:
        self.state_seed = value if -1 <= value <= INT32_MAX else -1
        self.state_seed_text = "" if -1 <= value <= INT32_MAX else str(value)

    # -- presets -------------------------------------------------------------------
    def apply_preset(self, preset: Preset) -> None:
        """Take a preset's settings; a value Blender cannot hold is refused (nothing
        changed) instead of clamped."""
        if not 1 <= preset.particles <= INT32_MAX:
            raise ParameterError(
                f"'{preset.name}': particles = {preset.particles} cannot be set in Blender "
                f"(allowed 1 to {INT32_MAX}); run several times or use the command line")
        values = {name: preset.params.get(name) or process_params(name) for name in PROCESSES}
        self.set_full_seed(preset.seed)
        self.particles = preset.particles
        self.particles_per_area = preset.particles_per_area  # after particles (its update)
        if preset.real_size is not None:  # None: the object keeps its own real size
            self.real_size = preset.real_size
        self.preset = preset.name
        for name in PROCESSES:
            group = getattr(self, name)
            group.enabled = bool(preset.enabled.get(name, False))
            group.set_params(values[name])
        if preset.rock is not None:  # a preset without [rock] leaves the column as it is
            self.rock.set_column(preset.rock)

    def to_preset(self, name: str, description: str = "") -> Preset:
        params = {n: getattr(self, n).to_params() for n in PROCESSES}
        enabled = {n: bool(getattr(self, n).enabled) for n in PROCESSES}
        real_size = self.size_settings()[0]
        return Preset(name=name, description=description, seed=self.full_seed(),
                      particles=self.particles, particles_per_area=self.rain_per_area(),
                      params=params, enabled=enabled, real_size=real_size or None,
                      rock=self.rock.to_column())

    # -- amount of work --------------------------------------------------------------
    def rain_per_area(self) -> float:
        """Particles per square local unit as typed (single precision undone), 0: off."""
        return float(f"{self.particles_per_area:.7g}")

    def work(self, rows: int, cols: int, local_cell: float) -> int:
        """Particles of a run on a rows x cols grid of ``local_cell`` local units:
        rain per area x the grid's real (world) area when set, else the Particles
        field."""
        preset = Preset(name="", particles=int(self.particles),
                        particles_per_area=self.rain_per_area())
        world = self.real_scale(rows, cols, local_cell).world_cell
        return preset.work(_Extent((rows, cols), world))

    # -- real size (addon/data/scale.py) ----------------------------------------------------
    def real_scale(self, rows: int, cols: int, local_cell: float) -> RealScale:
        """How this object's rows x cols grid of ``local_cell`` local units maps to the
        world the simulation runs in (its Real Size and Vertical Exaggeration)."""
        return RealScale.of(rows, cols, local_cell, *self.size_settings())

    def size_settings(self) -> tuple[float, float]:
        """The Real Size (0: automatic) and Vertical Exaggeration as typed: single
        precision undone, 0.1 comes back as 0.1 (what runs use and history entries
        keep)."""
        return (float(f"{self.real_size:.7g}"), float(f"{self.vertical_exaggeration:.7g}"))


class _Extent:
    """The two things Preset.work reads from a terrain: shape and world cell size."""

    def __init__(self, shape: tuple[int, int], cell_size: float) -> None:
        self.shape, self.cell_size = shape, cell_size


class TERRAIN_PG_runtime(bpy.types.PropertyGroup):
    """Run state shown in the UI (window manager: not saved, not undone)."""

    running: bpy.props.BoolProperty(name="Running", default=False)
    progress: bpy.props.FloatProperty(name="Progress", min=0.0, max=1.0, subtype='FACTOR')
    status: bpy.props.StringProperty(name="Status", default="")
    stop_requested: bpy.props.BoolProperty(name="Stop Requested", default=False)


classes = (*PROCESS_GROUPS.values(), *ROCK_CLASSES, TERRAIN_PG_history_entry,
           TERRAIN_PG_settings, TERRAIN_PG_runtime)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    bpy.types.Object.terrain_erosion = bpy.props.PointerProperty(type=TERRAIN_PG_settings)
    bpy.types.WindowManager.terrain_erosion = bpy.props.PointerProperty(
        type=TERRAIN_PG_runtime)


def unregister() -> None:
    del bpy.types.WindowManager.terrain_erosion
    del bpy.types.Object.terrain_erosion
    _unregister_classes()
