"""Terrain arrays described once: what each holds, its unit, its range and how Blender
shows it. The terrain model, the .npz writer (``metadata["units"]``), the add-on's
layers and the docs' attribute table are all derived from these descriptions.

The arrays every process shares are listed here (:data:`CORE_FIELDS`); an array that
only one process makes (``pool``, ``wind``, ...) is declared in that process's
descriptor (``PROCESS.fields`` in ``simcore/processes/<name>.py``).
"""

from __future__ import annotations

import dataclasses

#: kind -> unit in simcore's arrays. Lengths and depths are in cell units (world length /
#: cell size); the add-on and the exporters multiply them by the cell size.
KINDS = {
    "length": "cell",      # a height or amount of material, may be negative
    "depth": "cell",       # a thickness >= 0 (sediment, water)
    "fraction": "0..1",    # a map from 0 to 1 (time-averaged presence, density)
    "factor": "factor",    # a dimensionless multiplier or weight >= 0
}

#: how a grid twice as fine carries an array (``Field.refine``; simcore/engine/refine.py,
#: docs/refine.md): every interpolation is the monotone cubic of kernels/refine.py
REFINE = {
    "ground": "the solid ground under its layers: the ground surface (this array plus "
              "its 'layer' arrays) is interpolated, its volume kept by a uniform shift, "
              "and this array is what lies under the refined layers",
    "layer": "a layer of the ground (part of its surface): an amount, as 'amount'",
    "amount": "an amount of material (>= 0): interpolated, then scaled so its volume "
              "is kept; zero stays zero",
    "level": "water standing on the ground: its surface level is carried (a lake stays "
             "level at its spill level), its depth is what lies below that level",
    "map": "a map: interpolated (its range kept)",
    "rock": "found again from the rock column at the refined bedrock",
}


@dataclasses.dataclass(frozen=True)
class Field:
    """One ``(rows, cols)`` float64 terrain array."""

    name: str
    kind: str
    doc: str
    default: float = 0.0
    lo: float | None = None
    hi: float | None = None
    #: an input map the processes read but never change (masks)
    input: bool = False
    #: point-domain color attribute on the mesh (the value as gray), if shown as a color
    color: str | None = None
    #: point-domain float attribute with the exact value (lengths in local units)
    exact: str | None = None
    #: a record of material that entered the ground from outside the grid here (uplift):
    #: the mass budget counts it as an input, the protect mask holds it back like ground
    source: bool = False
    #: what keeps the array up to date when no process writes it (the simulation, from
    #: the rock column): shown in the docs' table
    kept_by: str = ""
    #: how a refinement to a grid twice as fine carries the array (a key of
    #: :data:`REFINE`); "": it cannot be carried, and a refinement refuses the terrain
    refine: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"field '{self.name}': unknown kind '{self.kind}'")
        if self.refine and self.refine not in REFINE:
            raise ValueError(f"field '{self.name}': unknown refine '{self.refine}'; "
                             f"known: {', '.join(REFINE)}")

    @property
    def unit(self) -> str:
        """Unit of the array in simcore: ``cell`` (world / cell size), ``0..1`` or
        ``factor``."""
        return KINDS[self.kind]

    @property
    def is_length(self) -> bool:
        """True for arrays measured in cell units (scaled by the cell size on a mesh)."""
        return self.unit == "cell"


#: Arrays of the terrain model itself, shared by every process.
CORE_FIELDS: tuple[Field, ...] = (
    Field("bedrock", "length", "solid ground height", exact="te_bedrock", refine="ground"),
    Field("sediment", "depth", "loose material on the bedrock", lo=0.0,
          color="te_sediment", exact="te_sediment_depth", refine="layer"),
    Field("eroded", "depth", "material removed here so far", lo=0.0, exact="te_eroded",
          refine="amount"),
    Field("deposited", "depth", "material laid down here so far", lo=0.0,
          exact="te_deposited", refine="amount"),
    Field("erodibility", "factor", "bedrock softness factor (1 = as soft as sediment; "
          "above 1 speeds the landscape's stream power and weathering, particles take "
          "rock at most as readily as sediment)",
          default=1.0, lo=0.0, hi=10.0, input=True, refine="map"),
    Field("rain", "factor", "relative droplet start weight per cell", default=1.0, lo=0.0,
          input=True, refine="map"),
    Field("protect", "fraction", "how much of every change is held back (1 = the cell "
          "never changes)", lo=0.0, hi=1.0, input=True, refine="map"),
    Field("tree_seeding", "fraction", "chance a tree may take root here", default=1.0,
          lo=0.0, hi=1.0, input=True, refine="map"),
    Field("rock_layer", "factor", "the rock layer of the column at the bedrock's top: its "
          "index (0 = the column's first) plus how deep inside it (0..1); 0 without a "
          "rock column", lo=0.0, exact="te_rock_layer",
          kept_by="the simulation, from the rock column", refine="rock"),
)

#: Units of the .npz entries that are not terrain arrays.
EXTRA_UNITS = {"height": "world", "trees": "x, y: cell; size: 0..1"}


def markdown_table(fields: dict[str, Field]) -> str:
    """The docs' attribute table: array, unit, range, Blender attributes, meaning."""
    lines = ["| array | kind | unit | Blender attributes | meaning |",
             "|---|---|---|---|---|"]
    for f in fields.values():
        attrs = (", ".join(f"`{a}`" for a in (f.color, f.exact) if a)
                 or ("input map (vertex group or color attribute)" if f.input else "-"))
        lines.append(f"| `{f.name}` | {f.kind} | {f.unit} | {attrs} | {f.doc} |")
    return "\n".join(lines)
