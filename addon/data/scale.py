"""The real-world size of a terrain object: the one place where the object's
local units become the world the simulation runs in, and back.

An artist's grid is a few Blender units across and means kilometres; the presets are
tuned in metres (30 m cells, valleys hundreds of metres deep). So each object has a
**real size**: the metres its grid spans along its longer side.

- local extent ``L = (max(rows, cols) - 1) * cell`` (local units between the outermost
  vertices along the longer side, as Blender's Dimensions show it; ``cell`` is the
  grid's spacing, the geometric mean when cells are not square);
- scale ``s = real_size / L`` (metres per local unit): the simulation runs on world
  cells of ``cell * s`` metres and world heights ``z * s / vertical_exaggeration``;
  its results come back as local height = world height * vertical_exaggeration / s;
- **automatic** (real size 0, the default): every object, whatever its size, is
  treated as :data:`AUTO_REAL_SIZE` metres across, the world the shipped presets are
  made for. Their processes are not scale-free (rain per km², brush radii in metres,
  uplift in m/yr against river incision that grows with the catchments), so one
  reference world is what makes a preset change a 1 m and a 100 km object alike. The
  literal size (1 unit = 1 m) is a Real Size equal to the object's extent.

In simcore's cell units (heights / cell size) only the exaggeration matters:
``z_world / cell_world = z / (vertical_exaggeration * cell)``; what ``s`` changes is the
world cell size, which every world-unit parameter (brush radius, creep, rain per km²,
tree height ...) is measured against.

No bpy here: plain numbers in, plain numbers out.
"""

from __future__ import annotations

import dataclasses
import math

from ..simcore.formats.presets import REAL_SIZE_KEY
from ..simcore.params import ParameterError

#: metres across that any object stands for under the automatic rule
AUTO_REAL_SIZE = 5000.0
#: local units across from which the status line names the literal Real Size (an
#: object that big was likely modelled in metres)
LITERAL_HINT_FROM = 1000.0
#: real sizes other than 0 (metres; as in presets, and as the CLI's --extent) and the
#: range of the vertical exaggeration
MIN_REAL_SIZE, MAX_REAL_SIZE = REAL_SIZE_KEY[1:3]
EXAGGERATION_RANGE = (1e-3, 1e3)


@dataclasses.dataclass(frozen=True)
class RealScale:
    """How one grid's local units map to the world the simulation runs in."""

    #: local units between neighbouring vertices
    local_cell: float
    #: metres between neighbouring vertices (the simulation's Terrain.cell_size)
    world_cell: float
    #: cells along the longer side (max(rows, cols) - 1)
    cells_across: int
    #: object heights / real heights (1: true to scale, 2: hills twice as high)
    exaggeration: float = 1.0
    #: the real size came from the automatic rule (the object's Real Size is 0)
    automatic: bool = True

    @classmethod
    def of(cls, rows: int, cols: int, local_cell: float, real_size: float = 0.0,
           exaggeration: float = 1.0) -> RealScale:
        """The scale of a rows x cols grid of ``local_cell`` local units, for a real
        size in metres (0: automatic) and a vertical exaggeration (> 0); bad values are
        a ParameterError saying what is allowed."""
        real_size, exaggeration = float(real_size), float(exaggeration)
        if not (real_size == 0.0 or MIN_REAL_SIZE <= real_size <= MAX_REAL_SIZE):  # NaN too
            raise ParameterError(f"Real Size must be 0 (automatic) or a width in metres from "
                                 f"{MIN_REAL_SIZE:g} to {MAX_REAL_SIZE:g}, got {real_size:g}")
        lo, hi = EXAGGERATION_RANGE
        if not lo <= exaggeration <= hi:
            raise ParameterError(f"Vertical Exaggeration must be from {lo:g} to {hi:g} "
                                 f"(1: true to scale), got {exaggeration:g}")
        cells = max(rows, cols) - 1
        automatic = real_size == 0.0
        if automatic:
            real_size = AUTO_REAL_SIZE
        world_cell = real_size / cells
        # a real size equal to the extent (to the single precision Blender stores it
        # in) is exactly 1:1: the simulation sees the object's own numbers
        if math.isclose(world_cell, local_cell, rel_tol=1e-6):
            world_cell = local_cell
        return cls(local_cell, world_cell, cells, exaggeration, automatic)

    @property
    def s(self) -> float:
        """Metres per local unit, horizontally."""
        return self.world_cell / self.local_cell

    @property
    def local_extent(self) -> float:
        """L: local units across the longer side."""
        return self.cells_across * self.local_cell

    @property
    def real_size(self) -> float:
        """Metres across the longer side."""
        return self.cells_across * self.world_cell

    @property
    def height_unit(self) -> float:
        """Local units of height per simcore cell unit (``local_cell * exaggeration``):
        cell-unit arrays (heights, sediment and pool depths) times this are local."""
        return self.local_cell * self.exaggeration

    def local_height(self, metres):
        """World heights (metres; a number or an array) in local units:
        ``metres * exaggeration / s``."""
        return metres * (self.exaggeration / self.s)

    def local_length(self, metres: float) -> float:
        """A horizontal world length (e.g. a tree's height, kept in proportion) in
        local units."""
        return metres / self.s

    def describe(self) -> str:
        """E.g. "this 2.0 m grid is treated as 5.0 km (automatic: set Real Size to
        change)"."""
        text = (f"this {format_length(self.local_extent)} grid is treated as "
                f"{format_length(self.real_size)}")
        if self.exaggeration != 1.0:
            text += f", heights exaggerated x{self.exaggeration:.4g}"
        if not self.automatic:
            return text + " (Real Size)"
        if self.s != 1.0 and self.local_extent >= LITERAL_HINT_FROM:
            return text + (f" (automatic: set Real Size to change, "
                           f"{literal_size(self.local_extent)} for 1 unit = 1 m)")
        return text + " (automatic: set Real Size to change)"


def literal_size(extent: float) -> str:
    """The Real Size that takes an object ``extent`` local units across literally, as
    it would be typed: 7680, 2.5."""
    return f"{extent:.6g}"


def format_length(metres: float) -> str:
    """2.0 m, 750 m, 5.0 km, 12 km (local units are shown as metres, as Blender does)."""
    unit, value = ("km", metres / 1000.0) if metres >= 1000.0 else ("m", metres)
    return f"{value:.1f} {unit}" if value < 10 else f"{value:,.0f} {unit}"
