"""Seamless tiled erosion on dask.distributed, into a Zarr store.

    python -m simcore tile --input world.npy --cell-size 30 --tiles 4 --output world.zarr

A world runs in three stages of dask tasks (docs/tiles.md):

1. **global** (one task): the processes whose reach is the whole map -- landscape
   evolution, hydrology (rivers and lakes; the drainage core), wind (dunes march across
   the map) -- run on the whole map, or on a copy ``coarse`` times smaller whose change
   is interpolated back. The result is the *base* (Zarr group ``work/base``; with
   ``coarse`` > 1 the coarse result, ``work/coarse``, which each tile interpolates on
   its own extent).
2. **tiles** (one task each): the detail processes -- droplets, snowball, thermal
   (hillslopes), trees -- on each tile's *extent*, its core plus ``margin`` cells on
   every side that has a neighbour, read from the base. Particles are keyed to the
   world: the world's squares are cut into blocks (half a margin, 16..64 squares a
   side; a margin is at least 32 cells), and the particles of block (I, J) are
   ``stream_state(mix(seed, I, J), stream, k)`` with their start drawn inside that
   block (a cdf that is zero outside it), so a particle starting in an overlap starts
   at the same world point with the same random numbers in both tiles.
   A tile runs every block that lies wholly inside its extent; each block gets its
   share of a round's particles (its rain weight / the world's), counted in whole
   particles per block as ``floor(rounds x share)``. Grid processes get the world's
   rain share (so a pass does what it does on the whole map), and trees' seeding tries
   scale with the tile's area. The raw tile goes to ``work/raw`` (chunks of its own,
   half a margin a side, at least RAW_CHUNK).
3. **blend** (one task per tile): each output cell is the average of the tiles that
   cover it, weighted by a smoothstep ramp across a band ``margin`` wide centred on the
   core border (0 in the outer half margin, whose particles were cut off by the tile's
   edge; the weights of neighbours add up to 1). Each task writes exactly its own core:
   one chunk of every output array.

Every task is deterministic and writes whole chunks of its own (an atomic file
replace in a directory store), so when Dask re-runs a lost worker's task it writes the
same bytes. The store's arrays, chunked by tile core: ``height`` (world units), every
terrain array (cell units, as in an .npz state), ``change_<process>`` (world units) and
``trees``; its attributes hold the run's metadata. Command-line only: the Blender
extension never imports this module (nor dask, nor zarr).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..errors import OutputPathError, UserError, describe_os_error
from ..fileio import make_folder
from ..formats import images
from ..kernels.sampling import centre_positions, sample_lattice
from ..rock import column_from

#: side of a world block of particle starts, in squares (cells), for a margin of 64
#: (block_size gives 16..64: half the margin): a tile runs only the blocks wholly
#: inside its extent, so a block is at most half a margin (the blocks cut off then lie
#: where the tile's blend weight is 0, and every block lies wholly inside some tile's
#: extent); bigger blocks, fewer kernel calls
BLOCK = 32
#: the default margin is the map's longer side / this (default_margin)
MARGIN_DIVISOR = 8
#: the smallest --margin: twice the smallest block (block_size), so that a block is at
#: most half a margin and none straddling a tile border is cut off by both tiles
MIN_MARGIN = 32
#: most epochs a tile groups its rounds into: each block runs its particles of the epoch's
#: rounds, then each grid process its passes (fewer kernel calls on big worlds)
MAX_EPOCHS = 16
#: the smallest side of a raw tile's chunks (raw_chunks: half a margin, at least this;
#: 128 made more, smaller chunks that cost more to write than the blend saved)
RAW_CHUNK = 256
#: version of the store's layout (attribute ``version``)
STORE_VERSION = 1
#: the store's attribute ``format``: an existing --output store is replaced only if it
#: says this
STORE_FORMAT = "terrain-erosion tiled world"


class TileError(UserError):
    """A tiled run's arguments are wrong (nothing written)."""


def _zarr():
    try:
        import zarr
    except ImportError:
        raise TileError("tiled runs write a Zarr store and zarr is not installed: pip "
                        "install 'zarr<3' (python build.py setup installs it)") from None
    return zarr


def _compressor(fast: bool = False):
    """Blosc, one thread (the same bytes whatever the thread count): zstd for what the
    store keeps, lz4 (several times faster, bigger) for the scratch of ``work/``."""
    from numcodecs import Blosc
    Blosc.use_threads = False
    if fast:
        return Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)
    return Blosc(cname="zstd", clevel=3, shuffle=Blosc.SHUFFLE)


# -- the plan: cores, extents, blocks -------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Plan:
    shape: tuple[int, int]
    tiles: tuple[int, int]
    core: tuple[int, int]  # core size (the last core along an axis may be smaller)
    margin: int

    @classmethod
    def of(cls, attrs: dict) -> Plan:
        """The plan a store's attributes record (shape, tiles, core, margin)."""
        return cls(tuple(attrs["shape"]), tuple(attrs["tiles"]), tuple(attrs["core"]),
                   attrs["margin"])

    def cores(self, axis: int) -> list[tuple[int, int]]:
        n, t = self.shape[axis], self.core[axis]
        return [(i * t, min((i + 1) * t, n)) for i in range(self.tiles[axis])]

    def extents(self, axis: int) -> list[tuple[int, int]]:
        n = self.shape[axis]
        return [(max(a - self.margin, 0), min(b + self.margin, n))
                for a, b in self.cores(axis)]

    def extent_size(self) -> tuple[int, int]:
        return tuple(max(b - a for a, b in self.extents(ax)) for ax in (0, 1))  # type: ignore

    def ids(self) -> list[tuple[int, int]]:
        return [(i, j) for i in range(self.tiles[0]) for j in range(self.tiles[1])]


def make_plan(shape: tuple[int, int], tiles: tuple[int, int], margin: int | None) -> Plan:
    rows, cols = shape
    tr, tc = tiles
    if tr < 1 or tc < 1 or tr > 256 or tc > 256:
        raise TileError(f"--tiles must be 1..256 per side, got {tr}x{tc}")
    core = (math.ceil(rows / tr), math.ceil(cols / tc))
    flag = f"--tiles {tc}x{tr}"  # as the command line takes it: columns x rows
    if min(core) < MIN_MARGIN:
        raise TileError(f"{flag} on a {rows}x{cols} map (rows x columns) makes tiles "
                        f"under {MIN_MARGIN} cells: use fewer tiles")
    if (tr - 1) * core[0] >= rows or (tc - 1) * core[1] >= cols:
        raise TileError(f"{flag} does not divide a {rows}x{cols} map: use fewer")
    if margin is None:
        margin = default_margin(shape, core)
    if margin < MIN_MARGIN or margin > min(core):
        raise TileError(f"--margin must be {MIN_MARGIN}..{min(core)} cells (at least twice "
                        f"the smallest particle block, at most a tile core), got {margin}")
    plan = Plan((rows, cols), (tr, tc), core, int(margin))
    missing = uncovered_blocks(plan)
    assert not missing, f"blocks outside every tile's extent: {missing}"  # never for these
    return plan


def default_margin(shape: tuple[int, int], core: tuple[int, int]) -> int:
    """The margin when none is given: an eighth of the map's longer side, at least 64
    cells, at most a tile core. Droplets run up to the map's side (their paths end at
    ``max_path_factor`` sides), so what a tile must see beyond its core grows with the
    map, not with the tile: measured (docs/tiles.md, "How the margin was chosen"), a
    margin of side / 8 keeps the tiled change at r 0.987-0.9995 against one tile at 256²
    to 2048² in 2x2 and 4x4 tiles, and side / 16 does not (r 0.938-0.967). With more than
    8 tiles a side the margin is a whole tile: each tile then runs 9x its core's cells
    (``--margin`` trades that against the fit)."""
    return min(max(64, max(shape) // MARGIN_DIVISOR), min(core))


def uncovered_blocks(plan: Plan) -> list[tuple[int, tuple[int, int]]]:
    """(axis, squares) of every world block whose squares lie wholly inside no tile's
    extent along that axis (run_tile runs a block only where it does: such a block's
    particles would never run). Empty for every plan make_plan accepts."""
    block = block_size(plan.margin)
    out = []
    for axis in (0, 1):
        extents = plan.extents(axis)  # squares of an extent (r0, r1): r0 .. r1 - 2
        for sa, sb in _block_ranges(plan.shape[axis] - 1, block):
            if not any(r0 <= sa and sb <= r1 - 1 for r0, r1 in extents):
                out.append((axis, (sa, sb)))
    return out


_M64 = (1 << 64) - 1


def _mix(x: int) -> int:
    """splitmix64 finaliser on Python ints (kernels.mix64)."""
    z = (x + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def block_seed(seed: int, bi: int, bj: int) -> int:
    """The seed of world block (bi, bj): its particles' streams are
    ``stream_state(block_seed, stream, k)``, the same in every tile that runs it."""
    return _mix(_mix(_mix(seed & _M64) ^ (bi + 1)) ^ ((bj + 1) << 20))


def tile_seed(seed: int, i: int, j: int) -> int:
    """Seed of the processes that draw per tile, not per particle (trees)."""
    return _mix(block_seed(seed, i, j) ^ 0x7469_6C65)


def square_weights(rain: np.ndarray) -> np.ndarray:
    """Start weight of every square (mean of its 4 corners), as kernels.rain_cdf."""
    return 0.25 * (rain[:-1, :-1] + rain[:-1, 1:] + rain[1:, :-1] + rain[1:, 1:])


def block_size(margin: int) -> int:
    """The world blocks' side for tiles with ``margin``: half the margin, 16..64."""
    return max(16, min(64, margin // 2))


def _block_ranges(n_squares: int, block: int = BLOCK) -> list[tuple[int, int]]:
    return [(a, min(a + block, n_squares)) for a in range(0, n_squares, block)]


def world_block_weights(rain, block: int = BLOCK) -> np.ndarray:
    """Rain weight of every world block (blocks x blocks), from the world's rain (an
    array or an array-like such as a Zarr array, read one row of blocks at a time)."""
    rows, cols = rain.shape
    rb, cb = _block_ranges(rows - 1, block), _block_ranges(cols - 1, block)
    out = np.empty((len(rb), len(cb)))
    for bi, (a, b) in enumerate(rb):
        w = square_weights(np.asarray(rain[a:b + 1, :], dtype=np.float64))
        for bj, (c, d) in enumerate(cb):
            out[bi, bj] = np.ascontiguousarray(w[:, c:d]).sum()
    return out


def block_counts(weights: np.ndarray, bi: int, bj: int, batch: int, r0: int,
                 r1: int) -> tuple[int, int]:
    """(first, count) of block (bi, bj)'s particles in rounds r0..r1-1: a round brings
    ``batch`` particles over the world, a block its rain share of them."""
    share = batch * float(weights[bi, bj]) / float(weights.sum())
    first = math.floor(r0 * share)
    return first, math.floor(r1 * share) - first


def block_span(ncols: int, sr: tuple[int, int], sc: tuple[int, int]) -> tuple[int, int]:
    """Where a block's start cdf is written (:func:`block_cdf`): from its first square
    row's start to just after its last square, in a tile's flat squares of ``ncols``
    columns."""
    return sr[0] * ncols, (sr[1] - 1) * ncols + sc[1]


def block_cdf(w_tile: np.ndarray, sr: tuple[int, int], sc: tuple[int, int],
              out: np.ndarray | None = None) -> np.ndarray:
    """A start cdf over a tile's squares (``w_tile``: their weights) that is zero outside
    squares rows ``sr`` x cols ``sc`` (tile-local), cut after the block's last square:
    kernels.start_position then draws a start inside the block only, at the same place
    in every tile (the cumulative sums over the block are the same numbers). With
    ``out`` (a buffer of zeros, at least as long) the cdf is written there and a view
    returned: only the block's rows are written, and the caller sets them back to 0
    (:class:`BlockCdfs`)."""
    ncols = w_tile.shape[1]
    seg = np.zeros((sr[1] - sr[0], ncols))
    seg[:, sc[0]:sc[1]] = w_tile[sr[0]:sr[1], sc[0]:sc[1]]
    start, stop = block_span(ncols, sr, sc)
    cdf = np.zeros(stop) if out is None else out[:stop]
    cdf[start:stop] = np.cumsum(seg.ravel()[:stop - start])
    return cdf


class BlockCdfs:
    """The blocks' start cdfs of one tile (:func:`block_cdf`), each written into one
    buffer of zeros in turn: a block costs its rows, not the tile (a fresh array of
    zeros a block was a third of a tile task's time outside the kernels). A cdf is
    valid until the next one is made."""

    def __init__(self, w_tile: np.ndarray) -> None:
        self.w_tile = w_tile
        self.buffer = np.zeros(w_tile.size)
        self.written = (0, 0)

    def cdf(self, sr: tuple[int, int], sc: tuple[int, int]) -> np.ndarray:
        a, b = self.written
        self.buffer[a:b] = 0.0
        self.written = block_span(self.w_tile.shape[1], sr, sc)
        return block_cdf(self.w_tile, sr, sc, self.buffer)


# -- stage 1: the global processes --------------------------------------------------

def _downsample(a: np.ndarray, f: int) -> np.ndarray:
    rows, cols = a.shape
    r, c = math.ceil(rows / f), math.ceil(cols / f)
    pad = np.pad(a, ((0, r * f - rows), (0, c * f - cols)), mode="edge")
    return pad.reshape(r, f, c, f).mean(axis=(1, 3))


def _join_short_last(ranges: list[tuple[int, int]], shortest: int) -> list[tuple[int, int]]:
    """``ranges`` along an axis, a last one shorter than ``shortest`` joined to the one
    before."""
    out = [list(r) for r in ranges]
    if len(out) > 1 and out[-1][1] - out[-1][0] < shortest:
        out[-2][1] = out[-1][1]
        del out[-1]
    return [(a, b) for a, b in out]


def _coarse_ranges(n: int, block: int) -> list[tuple[int, int]]:
    """Ranges of ``block`` coarse cells over ``n``, none shorter than 2 (numpy sums a
    block mean in another order when a side is 1: the numbers would differ in the last
    bit from those of the whole map)."""
    block = max(2, block)
    return _join_short_last([(a, min(a + block, n)) for a in range(0, n, block)], 2)


def downsample_blocks(arr, f: int, block: tuple[int, int]) -> np.ndarray:
    """``_downsample(arr, f)`` of a 2-D array-like (a Zarr array, a memory map) read
    window by window: ``block`` coarse cells a side at a time (one tile core's worth),
    so only one window of the fine map is ever in memory. The same numbers, bit for
    bit, as the whole map's (tests/core/test_tiles.py)."""
    rows, cols = arr.shape
    out = np.empty((math.ceil(rows / f), math.ceil(cols / f)))
    for ra, rb in _coarse_ranges(out.shape[0], block[0]):
        for ca, cb in _coarse_ranges(out.shape[1], block[1]):
            win = np.ascontiguousarray(arr[ra * f:min(rb * f, rows), ca * f:min(cb * f, cols)],
                                       dtype=np.float64)
            out[ra:rb, ca:cb] = _downsample(win, f)
    return out


def _upsample(a, f: int, shape: tuple[int, int], rows: tuple[int, int] | None = None,
              cols: tuple[int, int] | None = None) -> np.ndarray:
    """Bilinear: coarse cell k stands at fine position k*f + (f-1)/2. ``rows`` x
    ``cols`` (fine, end exclusive): that window of the ``shape`` result only, reading
    only the coarse cells it needs from ``a`` (an array or a Zarr array); every cell
    the same number as in the whole result."""
    return sample_lattice(a, centre_positions(shape[0], f, rows),
                          centre_positions(shape[1], f, cols))


def _simulation(terrain, params: dict, seed: int, rounds: int, **window):
    """A simulation of ``rounds`` rounds of ``params``; ``window``: a tile's
    ``rain_share``, ``batches`` and ``rock_centre`` (Simulation)."""
    from ..engine.simulation import Simulation
    per_round = sum(int(p.batch) for p in params.values())  # type: ignore[attr-defined]
    return Simulation(terrain, params, seed=seed, particles=rounds * per_round, **window)


def lengths() -> tuple[str, ...]:
    """The terrain arrays in cell units (a coarse copy divides them by its factor), from
    their descriptions (simcore/fields.py and the processes')."""
    from ..terrain import fields
    return tuple(n for n, f in fields().items() if f.is_length)


#: arrays the coarse global stage changes by adding its (interpolated) change
ADDED = ("bedrock", "sediment", "eroded", "deposited", "uplifted")
#: arrays the coarse global stage sets (interpolated, never below zero)
SET = ("pool", "stream", "wind")


def run_global(store: str, params: dict, seed: int, rounds: int, coarse: int) -> str:
    """Stage 1 (a task): the global processes on the whole map, written as
    ``work/base``; with ``coarse`` > 1 on a copy that many times smaller, built window by
    window from ``work/input`` (the full-resolution map is never in memory), its result
    written as ``work/coarse`` (the tiles interpolate it back, each its own extent:
    base_window). Returns a digest of what it wrote."""
    zarr = _zarr()
    root = zarr.open_group(store, mode="r+")
    src = root["work/input"]
    if coarse > 1:
        if params:
            _global_coarse(root, params, seed, rounds, coarse)
        return "ok"
    terrain = _read_terrain(src, None, root.attrs["cell_size"])
    terrain.rock = column_from(root.attrs.get("rock"))
    base = root["work/base"]
    if params:
        _simulation(terrain, params, seed, rounds).run()
        for name, change in terrain.changes.items():
            base[f"change_{name}"][...] = change
    for name, a in terrain.arrays().items():
        base[name][...] = a
    return "ok"


def _global_coarse(root, params: dict, seed: int, rounds: int, f: int) -> None:
    from ..terrain import Terrain, fields
    plan = Plan.of(dict(root.attrs))
    src = root["work/input"]
    block = (math.ceil(plan.core[0] / f), math.ceil(plan.core[1] / f))
    small = {n: downsample_blocks(src[n], f, block) for n in fields()}
    for n in lengths():
        small[n] /= f  # cell units of the coarse grid
    t = Terrain(**small, cell_size=float(root.attrs["cell_size"]) * f,
                rock=root.attrs.get("rock"))
    t.validate()
    start = {n: getattr(t, n).copy() for n in ADDED}
    # the world's centre, fine index (n - 1) / 2, in coarse cells (k f + (f - 1) / 2)
    centre = ((plan.shape[0] - f) / (2.0 * f), (plan.shape[1] - f) / (2.0 * f))
    _simulation(t, params, seed, rounds, rock_centre=centre).run()
    out = root["work/coarse"]
    for n in ADDED:
        out[f"delta_{n}"][...] = (getattr(t, n) - start[n]) * f
    for n in SET:
        out[n][...] = getattr(t, n) * (f if n == "pool" else 1.0)
    for name, change in t.changes.items():
        out[f"change_{name}"][...] = change * f


def base_window(root, attrs: dict, rows: tuple[int, int], cols: tuple[int, int]):
    """The base (the map after the global stage) on fine rows x cols, as a Terrain: read
    from ``work/base``, or with ``--coarse`` > 1 the input there plus the coarse
    stage's change interpolated back (bilinear; sediment never below zero)."""
    window = (slice(*rows), slice(*cols))
    cell = attrs["cell_size"]
    f = int(attrs["coarse"])
    if f == 1:
        return _read_terrain(root["work/base"], window, cell)
    if not attrs["global"]:
        return _read_terrain(root["work/input"], window, cell)
    from ..terrain import Terrain, fields
    src, co = root["work/input"], root["work/coarse"]
    shape = tuple(attrs["shape"])
    fine = {n: np.ascontiguousarray(src[n][window], dtype=np.float64) for n in fields()}
    for n in ADDED:
        fine[n] += _upsample(co[f"delta_{n}"], f, shape, rows, cols)
    for n in SET:
        fine[n][...] = np.maximum(_upsample(co[n], f, shape, rows, cols), 0.0)
    short = np.minimum(fine["sediment"], 0.0)  # never less than no sediment
    fine["sediment"] -= short
    fine["bedrock"] += short
    t = Terrain(**fine, cell_size=float(cell))
    t.validate()
    return t


def global_change_window(root, attrs: dict, name: str, rows: tuple[int, int],
                         cols: tuple[int, int]) -> np.ndarray:
    """Global process ``name``'s change (cell units) on fine rows x cols."""
    f = int(attrs["coarse"])
    if f == 1:
        return root[f"work/base/change_{name}"][slice(*rows), slice(*cols)]
    return _upsample(root[f"work/coarse/change_{name}"], f, tuple(attrs["shape"]), rows,
                     cols)


# -- stage 2: the tiles ---------------------------------------------------------------

def _read_terrain(group, window, cell_size: float):
    from ..terrain import Terrain, fields
    sl = (slice(None), slice(None)) if window is None else window
    arrays = {n: np.ascontiguousarray(group[n][sl], dtype=np.float64) for n in fields()}
    t = Terrain(**arrays, cell_size=float(cell_size))
    t.validate()
    return t


def map_processes(names) -> set[str]:
    """Those of ``names`` that run on the whole map (stage 1: their descriptor's
    ``reach``); every other one runs per tile."""
    from ..processes import PROCESSES
    return {n for n in names if PROCESSES[n].reach == "map"}


def _tile_blocks(plan: Plan, block: int, extent: tuple[tuple[int, int], tuple[int, int]]
                 ) -> list[tuple[int, int, tuple[int, int], tuple[int, int]]]:
    """The world blocks of particle starts wholly inside a tile's ``extent`` (squares
    r0 .. r1 - 2): (bi, bj, its squares' rows and columns in the tile)."""
    (r0, r1), (c0, c1) = extent
    world_shape = plan.shape
    blocks = []
    for bi, (sa, sb) in enumerate(_block_ranges(world_shape[0] - 1, block)):
        if sa < r0 or sb > r1 - 1:
            continue
        for bj, (ta, tb) in enumerate(_block_ranges(world_shape[1] - 1, block)):
            if ta < c0 or tb > c1 - 1:
                continue
            blocks.append((bi, bj, (sa - r0, sb - r0), (ta - c0, tb - c0)))
    return blocks


def _tile_batches(terrain, plan: Plan, seed: int, tile: tuple[int, int], blocks,
                  weights: np.ndarray):
    """The simulation's batch runner on tile ``tile``: a process with keyed starts
    runs each world block's share of the particles from the block's own seed (so a
    particle starts where it would in the one-tile world, whichever tile runs it); a
    process with work per area (trees) from the tile's seed; any other from the run's."""
    from ..processes import PROCESSES
    cdfs = BlockCdfs(square_weights(terrain.rain))

    def run(name: str, params, first: int, count: int, height: np.ndarray) -> int:
        process = PROCESSES[name]
        if not process.keyed_starts:
            s = tile_seed(seed, *tile) if process.per_area is not None else seed
            return process.run_batch(terrain, params, s, first, count, height, np.empty(0))
        batch = int(params.batch)
        ra, rb = first // batch, (first + count) // batch
        extra = {"world_shape": plan.shape} if process.world_shape_arg else {}
        steps = 0
        for bi, bj, sr, sc in blocks:
            start, n = block_counts(weights, bi, bj, batch, ra, rb)
            if n > 0:
                steps += process.run_batch(terrain, params, block_seed(seed, bi, bj),
                                           start, n, height, cdfs.cdf(sr, sc), **extra)
        return steps

    return run


def run_tile(store: str, i: int, j: int) -> str:
    """Stage 2 (a task): tile (i, j)'s detail processes on its extent of the base, by
    the simulation's own rounds (protect masks, change records, lakes kept level), one
    epoch of rounds at a time, written to its own chunks of ``work/raw``."""
    from ..engine.simulation import process_params
    from ..processes import PROCESSES
    zarr = _zarr()
    root = zarr.open_group(store, mode="r+")
    a = dict(root.attrs)
    plan = Plan.of(a)
    (r0, r1), (c0, c1) = plan.extents(0)[i], plan.extents(1)[j]
    terrain = base_window(root, a, (r0, r1), (c0, c1))
    terrain.rock = column_from(a.get("rock"))
    seed, rounds = int(a["seed"]), int(a["rounds"])
    world_shape = plan.shape
    tile_area = (r1 - r0) * (c1 - c0) / float(world_shape[0] * world_shape[1])
    run = {}
    for n, v in a["detail"].items():
        p = process_params(n, v)
        if PROCESSES[n].per_area is not None:  # work per map: the tile's share of it
            p = PROCESSES[n].per_area(p, tile_area)
        run[n] = p
    blocks = _tile_blocks(plan, int(a["block"]), ((r0, r1), (c0, c1)))
    batches = _tile_batches(terrain, plan, seed, (i, j),
                            blocks, np.asarray(root["work/block_weights"][...]))
    centre = (0.5 * (world_shape[0] - 1) - r0, 0.5 * (world_shape[1] - 1) - c0)
    sim = _simulation(terrain, run, seed, rounds, rain_share=float(a["rain_share"]),
                      batches=batches, rock_centre=centre)  # change records start at zero
    epochs = max(1, min(rounds, MAX_EPOCHS))
    cuts = [round(e * rounds / epochs) for e in range(epochs + 1)]
    for e in range(epochs):
        if cuts[e + 1] > cuts[e]:
            sim.run_round(cuts[e + 1] - cuts[e])
    raw = root["work/raw"]
    er, ec = plan.extent_size()
    for n, arr in terrain.arrays().items():
        _write_raw(raw[n], i, j, arr, er, ec)
    for n in run:
        _write_raw(raw[f"change_{n}"], i, j, terrain.changes[n], er, ec)
    trees = np.asarray(terrain.trees, dtype=np.float64).reshape(-1, 3).copy()
    trees[:, 0] += c0
    trees[:, 1] += r0
    core_r, core_c = plan.cores(0)[i], plan.cores(1)[j]
    own = ((trees[:, 1] >= core_r[0]) & (trees[:, 1] < core_r[1])
           & (trees[:, 0] >= core_c[0]) & (trees[:, 0] < core_c[1]))
    t = trees[own]
    arr = root["work"].create_dataset(f"trees/{i}_{j}", shape=t.shape, chunks=(max(len(t),
                                      1), 3), dtype="f8", overwrite=True,
                                      compressor=_compressor(fast=True))
    arr[...] = t
    return "ok"


def raw_chunks(plan: Plan) -> tuple[int, int, int, int]:
    """Chunks of the raw tiles (tile, tile, rows, columns): a tile's extent in squares of
    half a margin (at least RAW_CHUNK cells), so that the blend decompresses only the
    part of a neighbour it weighs (a strip half a margin wide), not its whole extent. A
    tile task still writes only chunks of its own."""
    er, ec = plan.extent_size()
    side = max(RAW_CHUNK, plan.margin // 2)
    return (1, 1, min(er, side), min(ec, side))


def _write_raw(arr, i: int, j: int, a: np.ndarray, er: int, ec: int) -> None:
    full = np.zeros((1, 1, er, ec))
    full[0, 0, :a.shape[0], :a.shape[1]] = a
    arr[i:i + 1, j:j + 1] = full  # the tile's own chunks, all of them


# -- stage 3: the blend ---------------------------------------------------------------

def _smooth(t: np.ndarray) -> np.ndarray:
    t = np.clip(t, 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def axis_weight(x: np.ndarray, core: tuple[int, int], n: int, margin: int) -> np.ndarray:
    """A tile's blend weight along one axis at world positions ``x``: 1 inside its
    core, a smoothstep ramp over ``margin`` cells centred on each core border that has
    a neighbour (the neighbour's ramp is its complement), 0 beyond."""
    h = margin / 2.0
    w = np.ones(x.shape)
    if core[0] > 0:
        w *= _smooth((x - core[0] + h + 0.5) / (2 * h))
    if core[1] < n:
        w *= _smooth((core[1] + h - 0.5 - x) / (2 * h))
    return w


def run_blend(store: str, i: int, j: int) -> str:
    """Stage 3 (a task): tile (i, j)'s core of every output array, the weighted sum of
    the raw tiles that cover it (its own chunk of each), each read only where its
    weight is not 0."""
    zarr = _zarr()
    root = zarr.open_group(store, mode="r+")
    a = dict(root.attrs)
    plan = Plan.of(a)
    (ca, cb), (da, db) = plan.cores(0)[i], plan.cores(1)[j]
    raw = root["work/raw"]
    names = list(a["arrays"]) + [f"change_{n}" for n in a["changes"]]
    acc = {n: np.zeros((cb - ca, db - da)) for n in names}
    ys = np.arange(ca, cb, dtype=np.float64)
    xs = np.arange(da, db, dtype=np.float64)
    for ti in range(max(i - 1, 0), min(i + 2, plan.tiles[0])):
        (er0, er1), core_r = plan.extents(0)[ti], plan.cores(0)[ti]
        ya, yb = max(ca, er0), min(cb, er1)  # this core's rows inside tile ti's extent
        wy = axis_weight(ys[ya - ca:yb - ca], core_r, plan.shape[0], plan.margin)
        for tj in range(max(j - 1, 0), min(j + 2, plan.tiles[1])):
            (ec0, ec1), core_c = plan.extents(1)[tj], plan.cores(1)[tj]
            xa, xb = max(da, ec0), min(db, ec1)
            wx = axis_weight(xs[xa - da:xb - da], core_c, plan.shape[1], plan.margin)
            if yb <= ya or xb <= xa or not (wy.any() and wx.any()):
                continue
            # only the rows and columns the tile weighs: its chunks elsewhere stay packed
            ny, nx = np.flatnonzero(wy), np.flatnonzero(wx)
            y0, y1 = ya + int(ny[0]), ya + int(ny[-1]) + 1
            x0, x1 = xa + int(nx[0]), xa + int(nx[-1]) + 1
            w = wy[ny[0]:ny[-1] + 1, None] * wx[None, nx[0]:nx[-1] + 1]
            sl = (ti, tj, slice(y0 - er0, y1 - er0), slice(x0 - ec0, x1 - ec0))
            for n in names:
                if n in raw:
                    acc[n][y0 - ca:y1 - ca, x0 - da:x1 - da] += w * raw[n][sl]
    cell = float(a["cell_size"])
    for n, v in acc.items():
        if n.startswith("change_"):
            v = v * cell
        root[n][ca:cb, da:db] = v
    root["height"][ca:cb, da:db] = (acc["bedrock"] + acc["sediment"]) * cell
    return "ok"


# -- the driver -------------------------------------------------------------------------

def _create(root, name: str, shape, chunks, fill=0.0):
    return root.create_dataset(name, shape=shape, chunks=chunks, dtype="f8",
                               compressor=_compressor(name.startswith("work/")),
                               fill_value=fill, overwrite=True)


class NonfiniteTally:
    """NaN/inf in a map read block by block, per array: how many, and the first one's
    row and column on the map (what ``nonfinite_error`` reports)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.firsts: dict[str, tuple[int, int]] = {}

    def add(self, name: str, block: np.ndarray, r0: int) -> int:
        """Count ``block`` (the map's rows from ``r0``) of array ``name``; returns how
        many of its values are NaN/inf."""
        bad = ~np.isfinite(block)
        n = int(np.count_nonzero(bad))
        if n:
            if name not in self.counts:
                r, c = np.argwhere(bad)[0]
                self.firsts[name] = (r0 + int(r), int(c))
                self.counts[name] = 0
            self.counts[name] += n
        return n

    def check(self, order: list[str] | None = None) -> None:
        """TerrainError for the first array with NaN/inf (in ``order``, else in the order
        they were found)."""
        from ..terrain import nonfinite_error
        for name in order or list(self.counts):
            if self.counts.get(name):
                raise nonfinite_error(name, self.counts[name], *self.firsts[name])


class HeightmapFile:
    """A .npy heightmap (world units) read window by window through a memory map: the
    input of a tiled run whose client never holds the whole map (the terrain arrays of
    a window are those ``Terrain.from_heights`` makes of it)."""

    def __init__(self, path: str | Path, cell_size: float):
        from ..formats.states import check_heightmap
        from ..terrain import MAX_SIDE, StateFileError, check_cell_size
        checked, shape = check_heightmap(path)  # a FIFO, an empty or short file: a message
        self.path = str(checked)
        self.cell_size = check_cell_size(cell_size)
        where = f"{path}: cannot read heightmap"
        if max(shape) > MAX_SIDE:
            raise StateFileError(f"{where}: {shape[0]}x{shape[1]} is larger than "
                                 f"{MAX_SIDE}x{MAX_SIDE}")
        try:
            self.heights = np.load(self.path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise StateFileError(f"{where}: {exc}") from None
        self._check_values()

    def _check_values(self, rows_cells: int = 1 << 22) -> None:
        """The checks ``Terrain.from_heights`` makes (size, NaN/inf, range), on the whole
        map, in blocks of about ``rows_cells`` cells: before a cluster starts, with the
        map's own rows and columns in the message."""
        from ..terrain import MAX_ABS_VALUE, MIN_SIDE, TerrainError, range_error
        rows, cols = self.shape
        if min(rows, cols) < MIN_SIDE:
            raise TerrainError(f"'heights' is {rows}x{cols}; the grid must be at least "
                               f"{MIN_SIDE}x{MIN_SIDE} cells")
        step = max(1, rows_cells // cols)
        nonfinite = NonfiniteTally()
        big = 0.0
        for r0 in range(0, rows, step):
            block = np.asarray(self.heights[r0:r0 + step], dtype=np.float64)
            if not nonfinite.add("heights", block, r0) and not nonfinite.counts:
                big = max(big, float(np.abs(block).max()) / self.cell_size)
        nonfinite.check()
        if big > MAX_ABS_VALUE:
            raise range_error("heights", big)

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.heights.shape[0]), int(self.heights.shape[1]))

    def window(self, rows: tuple[int, int], cols: tuple[int, int]) -> dict[str, np.ndarray]:
        """Every terrain array (cell units) on rows x cols (each at least 3)."""
        from ..terrain import Terrain
        part = np.asarray(self.heights[rows[0]:rows[1], cols[0]:cols[1]])
        return Terrain.from_heights(part, self.cell_size).arrays()


class WorldStoreFile:
    """A tiled world's Zarr store (the ``--output`` of an earlier ``tile`` run) read
    window by window: the input of a tiled run that goes on from it (another preset,
    more rain) without any process holding the whole map. Its terrain arrays are cell
    units, as in an .npz state, at the store's cell size. Like an .npz input, the run
    starts new change records and new trees."""

    def __init__(self, path: str | Path, rows_cells: int = 1 << 22):
        from ..terrain import (
            MAX_SIDE,
            MIN_SIDE,
            StateFileError,
            TerrainError,
            check_cell_size,
            fields,
        )
        where = f"{path}: cannot read the tiled world"
        root_path = Path(path)
        if not root_path.exists():
            raise StateFileError(f"{where}: it does not exist; check the path")
        if not (root_path.is_dir() and (root_path / ".zgroup").is_file()):
            raise StateFileError(f"{where}: not a Zarr store (a folder such as world.zarr "
                                 "written by 'tile')")
        fmt = _store_format(root_path)
        if fmt != STORE_FORMAT:
            raise StateFileError(f"{where}: a Zarr store that is not a tiled world (format "
                                 f"{fmt!r}); give a store written by 'tile', or a .npy/.npz")
        zarr = _zarr()
        try:
            self.root = zarr.open_group(str(root_path), mode="r")
            attrs = dict(self.root.attrs)
            self.cell_size = check_cell_size(float(attrs["cell_size"]))
            shape = tuple(int(n) for n in attrs["shape"])
            version = int(attrs.get("version", 0))
        except (OSError, ValueError, KeyError, TypeError, TerrainError) as exc:
            raise StateFileError(f"{where}: {exc}") from None
        if version > STORE_VERSION:
            raise StateFileError(f"{where}: written by a newer version (store version "
                                 f"{version}, this one reads up to {STORE_VERSION}); "
                                 "update the tool")
        if len(shape) != 2 or not all(MIN_SIDE <= n <= MAX_SIDE for n in shape):
            raise StateFileError(f"{where}: its shape {shape} is not a grid of "
                                 f"{MIN_SIDE}..{MAX_SIDE} cells a side")
        self.names = list(fields())
        for n in self.names:
            if n not in self.root or tuple(self.root[n].shape) != shape:
                raise StateFileError(f"{where}: its array '{n}' is missing or not "
                                     f"{shape[0]}x{shape[1]} (an unfinished or altered "
                                     "store); run 'tile' again to make it")
        self.path = str(root_path)
        self._shape = (shape[0], shape[1])
        self._check_values(rows_cells)

    def _check_values(self, rows_cells: int) -> None:
        """The checks of a Terrain on the whole store, in one read of it, in blocks of
        about ``rows_cells`` cells a field, before a cluster starts: NaN/inf (counted over
        the map, the first with the map's row and column), else the first block out of
        range, else a map without rain."""
        from ..terrain import StateFileError, TerrainError
        rows, cols = self.shape
        step = max(1, rows_cells // cols)
        # a block is a Terrain: at least 3 rows (a last shorter one joins the one before)
        blocks = _join_short_last([(r0, min(r0 + step, rows)) for r0 in range(0, rows, step)],
                                  3)
        nonfinite = NonfiniteTally()
        out_of_range: StateFileError | None = None
        rain = 0.0
        for r0, r1 in blocks:
            arrays = self._read((r0, r1), (0, cols))
            for n, a in arrays.items():
                nonfinite.add(n, a, r0)
            if nonfinite.counts or out_of_range is not None:
                continue  # NaN is said first; the first block out of range is kept
            try:
                self._validate(arrays, (r0, r1), (0, cols))
            except StateFileError as exc:
                out_of_range = exc
            rain += float(arrays["rain"].sum())
        try:
            nonfinite.check(self.names)
        except TerrainError as exc:
            raise StateFileError(f"{self.path}: {exc}") from None
        if out_of_range is not None:
            raise out_of_range
        if rain <= 0.0:
            raise StateFileError(f"{self.path}: 'rain' is zero everywhere; no droplet could "
                                 "start")

    @property
    def shape(self) -> tuple[int, int]:
        return self._shape

    def window(self, rows: tuple[int, int], cols: tuple[int, int]) -> dict[str, np.ndarray]:
        """Every terrain array (cell units) on rows x cols, checked as a Terrain's (but
        for the rain, which may be 0 on part of a map: its whole is checked once)."""
        arrays = self._read(rows, cols)
        self._validate(arrays, rows, cols)
        return arrays

    def _read(self, rows: tuple[int, int], cols: tuple[int, int]) -> dict[str, np.ndarray]:
        return {n: np.asarray(self.root[n][rows[0]:rows[1], cols[0]:cols[1]],
                              dtype=np.float64) for n in self.names}

    def _validate(self, arrays: dict[str, np.ndarray], rows: tuple[int, int],
                  cols: tuple[int, int]) -> None:
        """A window's arrays checked as a Terrain's; a window without rain passes (a
        map may have dry parts)."""
        from ..terrain import StateFileError, Terrain, TerrainError
        try:
            rain = arrays["rain"]
            dry = rain.size and not rain.sum() > 0.0 and np.isfinite(rain).all() \
                and rain.min() >= 0.0  # a window without rain, as a map may have
            Terrain(**{**arrays, "rain": np.ones_like(rain)} if dry else arrays,
                    cell_size=self.cell_size).validate()
        except TerrainError as exc:
            raise StateFileError(f"{self.path}: rows {rows[0]}..{rows[1] - 1}, columns "
                                 f"{cols[0]}..{cols[1] - 1}: {exc}") from None


def _window_ranges(cores: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Tile cores along an axis, a last one under 3 cells joined to the one before (a
    terrain is at least 3 x 3)."""
    return _join_short_last(cores, 3)


def _windows(terrain):
    """window(rows, cols) -> the terrain arrays there, for a Terrain, a HeightmapFile or
    a WorldStoreFile."""
    if isinstance(terrain, (HeightmapFile, WorldStoreFile)):
        return terrain.window
    arrays = terrain.arrays()
    return lambda r, c: {n: a[r[0]:r[1], c[0]:c[1]] for n, a in arrays.items()}


def prepare_store(store: str | Path, terrain, preset, plan: Plan, rounds: int,
                  coarse: int, rain_share: float) -> dict:
    """Write the input and the layout into a new store; returns its attributes.
    ``terrain``: a Terrain, a HeightmapFile or a WorldStoreFile, written one tile core at
    a time."""
    from ..processes import PROCESSES
    from ..terrain import fields
    zarr = _zarr()
    enabled = preset.enabled_params()
    glob = {n: p for n, p in enabled.items() if n in map_processes(enabled)}
    detail = {n: p for n, p in enabled.items() if n not in glob}
    # the rock column: the preset's, else the start's own (a state's)
    rock = preset.rock if preset.rock is not None else getattr(terrain, "rock", None)
    missing = uncovered_blocks(plan)  # make_plan refuses such plans: never here
    assert not missing, f"blocks outside every tile's extent: {missing}"
    root = zarr.open_group(str(store), mode="w")
    root.require_group("work/trees")  # run_tile's tasks add to it at once (no race)
    rows, cols = plan.shape
    chunks = plan.core
    arrays = list(fields())
    changes = [n for n in PROCESSES if n in enabled]
    inputs = {n: _create(root, f"work/input/{n}", plan.shape, chunks) for n in arrays}
    window = _windows(terrain)
    for ra, rb in _window_ranges(plan.cores(0)):
        for ca, cb in _window_ranges(plan.cores(1)):
            for n, a in window((ra, rb), (ca, cb)).items():
                inputs[n][ra:rb, ca:cb] = a
    if coarse == 1:
        for n in arrays:
            _create(root, f"work/base/{n}", plan.shape, chunks)
        for n in glob:
            _create(root, f"work/base/change_{n}", plan.shape, chunks)
    elif glob:  # the coarse global stage's result (base_window interpolates it)
        small = (math.ceil(rows / coarse), math.ceil(cols / coarse))
        cchunks = (math.ceil(chunks[0] / coarse), math.ceil(chunks[1] / coarse))
        for n in [f"delta_{n}" for n in ADDED] + list(SET) + [f"change_{n}" for n in glob]:
            _create(root, f"work/coarse/{n}", small, cchunks)
    er, ec = plan.extent_size()
    tr, tc = plan.tiles
    raw = raw_chunks(plan)
    for n in arrays + [f"change_{n}" for n in detail]:
        _create(root, f"work/raw/{n}", (tr, tc, er, ec), raw)
    for n in glob:  # the global changes pass through the raw tiles untouched
        _create(root, f"work/raw/change_{n}", (tr, tc, er, ec), raw)
    weights = world_block_weights(inputs["rain"], block_size(plan.margin))
    root.create_dataset("work/block_weights", data=weights, overwrite=True)
    for n in arrays + [f"change_{n}" for n in changes] + ["height"]:
        _create(root, n, plan.shape, chunks)
    from .. import __version__
    attrs = {
        "format": STORE_FORMAT, "version": STORE_VERSION,
        "simcore_version": __version__, "shape": list(plan.shape),
        "tiles": list(plan.tiles), "core": list(plan.core), "margin": plan.margin,
        "block": block_size(plan.margin), "cell_size": float(terrain.cell_size),
        "seed": int(preset.seed),
        "rounds": int(rounds), "coarse": int(coarse), "rain_share": float(rain_share),
        "preset": preset.name,
        "rock": rock.to_dict() if rock is not None else None,
        "global": {n: p.to_dict() for n, p in glob.items()},
        "detail": {n: p.to_dict() for n, p in detail.items()},
        "arrays": arrays, "changes": changes,
        "units": {**{n: ("cell" if n in lengths() else "as in .npz") for n in arrays},
                  "height": "world",
                  **{f"change_{n}": "world" for n in changes}},
        "chunks": "one chunk per tile core: root[name][r0:r1, c0:c1] reads tile by tile",
    }
    root.attrs.update(attrs)
    return attrs


def _global_into_raw(store: str, i: int, j: int) -> str:
    """The global processes' changes, cut into tile (i, j)'s raw chunk (they pass
    through the detail stage unchanged)."""
    zarr = _zarr()
    root = zarr.open_group(store, mode="r+")
    a = dict(root.attrs)
    plan = Plan.of(a)
    (r0, r1), (c0, c1) = plan.extents(0)[i], plan.extents(1)[j]
    er, ec = plan.extent_size()
    for n in a["global"]:
        _write_raw(root[f"work/raw/change_{n}"], i, j,
                   global_change_window(root, a, n, (r0, r1), (c0, c1)), er, ec)
    return "ok"


def tile_task(store: str, i: int, j: int) -> str:
    """Stage 2's task for tile (i, j): its detail processes (run_tile) and the global
    changes cut into its raw chunk; the blend is stage 3 (run_blend)."""
    run_tile(store, i, j)
    return _global_into_raw(store, i, j)


def _store_format(path: Path) -> object:
    try:
        return json.loads((path / ".zattrs").read_text(encoding="utf-8")).get("format")
    except (OSError, ValueError, AttributeError):
        return None


def partial_path(store: str | Path) -> Path:
    """Where a run writes its store until it is complete: ``<store>.partial``."""
    out = Path(store)
    return out.with_name(out.name + ".partial")


def check_output_store(store: str | Path) -> Path:
    """Refuse an --output that a run must not replace: an existing path that is not a
    tiled world's Zarr store (format attribute STORE_FORMAT), a stale ``.partial``
    beside it that is not a store; create its parent folder. Before any work."""
    out = Path(store)
    if out.exists() or out.is_symlink():
        if not out.is_dir() or not (out / ".zgroup").is_file():
            raise OutputPathError(f"--output {out}: exists and is not a Zarr store; give "
                                  "a new folder name (e.g. world.zarr)")
        fmt = _store_format(out)
        if fmt != STORE_FORMAT:
            raise OutputPathError(f"--output {out}: a Zarr store that is not a tiled world "
                                  f"(format {fmt!r}); it is left as it is: give a new "
                                  "folder name")
    part = partial_path(out)
    if part.exists() and not (part.is_dir() and ((part / ".zgroup").is_file()
                                                 or not any(part.iterdir()))):
        raise OutputPathError(f"--output {out}: {part} (where a run writes until it is "
                              "done) exists and is not a Zarr store: move it away")
    make_folder(out.parent)
    return out


def _replace_store(part: Path, out: Path, tiles: tuple[Path, str] | None = None) -> None:
    """Move the complete store ``part`` to ``out``, replacing a previous result; with
    ``tiles`` = (folder, format) its heightmap tile set replaces the earlier one in that
    folder at the same time: the tiles are written into a staging folder first, and a
    failure anywhere (a full disk at a tile) leaves the previous store and tile set as
    they were (OutputPathError; ``part`` is left for the caller to remove)."""
    import contextlib

    from ..formats.staging import Staging
    folder = make_folder(tiles[0], "--heightmap-tiles") if tiles is not None else None
    with Staging(folder) if folder is not None else contextlib.nullcontext() as stage:
        names = _write_tile_set(part, stage.path, tiles[1]) \
            if stage is not None and tiles is not None else []
        old = None
        try:
            if out.exists():
                aside = Path(tempfile.mkdtemp(prefix=out.name + ".old-", dir=out.parent))
                try:
                    os.replace(out, aside)  # onto an empty folder: a rename
                except OSError:
                    aside.rmdir()
                    raise
                old = aside
            os.replace(part, out)
            try:
                if stage is not None:
                    stage.commit(names, earlier_tiles(stage.folder))
            except BaseException:
                os.replace(out, part)  # the new store back where it was made
                raise
        except BaseException as exc:
            if old is not None:
                os.replace(old, out)
            if isinstance(exc, OSError):
                raise OutputPathError(describe_os_error(exc, out)) from None
            raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def run_world(terrain, preset, store: str | Path, client, tiles: tuple[int, int] = (2, 2),
              margin: int | None = None, coarse: int = 1, quiet: bool = False,
              keep_work: bool = False, heightmap_tiles: str | Path | None = None,
              tile_format: str = "npy") -> dict:
    """Erode ``terrain`` in tiles (``tiles`` = (rows, columns)) on the dask ``client``;
    the result in the Zarr store ``store``. The run writes ``<store>.partial`` and
    renames it to ``store`` when it is complete: a run that fails or is interrupted
    leaves a previous store as it was (and removes its partial one). With
    ``heightmap_tiles`` (a folder) the store's heightmap tiles (``tile_format``: npy or
    png) replace those of the previous run there at the same time, or neither is
    replaced (write_heightmap_tiles). Returns the store's attributes plus the stages'
    seconds."""
    plan = make_plan(terrain.shape, tiles, margin)
    if coarse < 1 or coarse > min(terrain.shape) // 8:
        raise TileError(f"--coarse must be 1..{min(terrain.shape) // 8}, got {coarse}")
    enabled = preset.enabled_params()
    if not enabled:
        raise TileError("the preset enables no process")
    per_round = sum(int(p.batch) for p in enabled.values())  # type: ignore[attr-defined]
    rounds = max(1, math.ceil(preset.work(terrain) / per_round))
    from ..processes import PROCESSES
    for n, p in enabled.items():  # as Simulation: the landscape's age in whole rounds
        passes = PROCESSES[n].passes
        if passes is not None:
            rounds = max(rounds, math.ceil(passes(p) / int(p.batch)))  # type: ignore
    out = check_output_store(store)
    part = partial_path(out)
    shutil.rmtree(part, ignore_errors=True)  # a stale one of an earlier run
    try:
        info = _run_world(terrain, preset, str(part), client, plan, rounds, coarse, quiet,
                          keep_work)
        _replace_store(part, out, (Path(heightmap_tiles), tile_format)
                       if heightmap_tiles is not None else None)
    except BaseException:
        shutil.rmtree(part, ignore_errors=True)
        raise
    return info


def _run_world(terrain, preset, store: str, client, plan: Plan, rounds: int, coarse: int,
               quiet: bool, keep_work: bool) -> dict:
    from ..engine.simulation import rain_share
    from .cluster import run_tasks
    enabled = preset.enabled_params()
    t0 = time.perf_counter()
    attrs = prepare_store(store, terrain, preset, plan, rounds, coarse, rain_share(terrain))
    glob = {n: p for n, p in enabled.items() if n in map_processes(enabled)}
    if not quiet:
        print(f"tiles: {plan.shape[1]}x{plan.shape[0]} in {plan.tiles[1]}x{plan.tiles[0]} "
              f"tiles of {plan.core[1]}x{plan.core[0]} (x by y; +{plan.margin} margin), "
              f"{rounds} "
              f"rounds; global: {', '.join(glob) or 'none'}"
              f"{f' at 1/{coarse}' if coarse > 1 and glob else ''}; tiles: "
              f"{', '.join(attrs['detail']) or 'none'}", file=sys.stderr, flush=True)
    seconds = {"prepare": time.perf_counter() - t0}
    t = time.perf_counter()
    run_tasks(client, run_global, [(store, glob, int(preset.seed), rounds, coarse)],
              "global", quiet, names=["the global stage (whole-map processes)"])
    seconds["global"] = time.perf_counter() - t
    t = time.perf_counter()
    where = [f"tile (row {i}, column {j})" for i, j in plan.ids()]
    run_tasks(client, tile_task, [(store, i, j) for i, j in plan.ids()], "tiles", quiet,
              names=where)
    seconds["tiles"] = time.perf_counter() - t
    t = time.perf_counter()
    run_tasks(client, run_blend, [(store, i, j) for i, j in plan.ids()], "blend", quiet,
              names=[f"the blend of {w}" for w in where])
    seconds["blend"] = time.perf_counter() - t
    zarr = _zarr()
    root = zarr.open_group(store, mode="r+")
    trees = [root[f"work/trees/{i}_{j}"][...] for i, j in plan.ids()]
    all_trees = np.concatenate(trees) if trees else np.zeros((0, 3))
    root.create_dataset("trees", data=all_trees, overwrite=True, compressor=_compressor())
    if not keep_work:
        del root["work"]
    root.attrs["seconds"] = {k: round(v, 3) for k, v in seconds.items()}
    return {**attrs, "seconds": seconds}


def load_world(store: str | Path):
    """The whole tiled world as a Terrain (cell units) and its attributes (for worlds
    that fit; tools that do not hold it read ``zarr.open(store)[name][r0:r1, c0:c1]``)."""
    from ..terrain import Terrain, fields
    zarr = _zarr()
    root = zarr.open_group(str(store), mode="r")
    attrs = dict(root.attrs)
    t = Terrain(**{n: root[n][...] for n in fields()}, cell_size=attrs["cell_size"],
                trees=root["trees"][...] if "trees" in root else None,
                rock=attrs.get("rock"))
    for n in attrs.get("changes", []):
        t.changes[n] = root[f"change_{n}"][...] / attrs["cell_size"]
    t.validate()
    return t, attrs


# -- heightmap tiles ------------------------------------------------------------------

#: the tiles of a heightmap tile set (names listed in its tiles.json)
TILE_NAME = r"tile_r\d+_c\d+\.(npy|png)"
TILE_INDEX = "tiles.json"


def write_heightmap_tiles(store: str | Path, folder: str | Path, fmt: str = "npy") -> list[Path]:
    """Each tile core's heights (world units) as ``tile_r{i}_c{j}.npy``, or as 16-bit
    gray PNG over the world's height range (``tiles.json`` says which range). One set,
    all or nothing: it replaces the earlier set in ``folder`` (``tiles.json`` and the
    tiles it lists) only when complete (simcore/formats/staging.py)."""
    from ..formats.staging import Staging
    out = make_folder(folder, "--heightmap-tiles")
    with Staging(out) as stage:
        names = _write_tile_set(store, stage.path, fmt)
        stage.commit(names, earlier_tiles(out))
    return [out / n for n in names[:-1]]


def earlier_tiles(folder: Path) -> list[str]:
    """What a new heightmap tile set replaces in ``folder``: its ``tiles.json`` and the
    tiles it lists."""
    from ..formats.staging import listed_names
    return listed_names(folder, TILE_INDEX, "tiles", ("file",), TILE_NAME)


def _write_tile_set(store: str | Path, out: Path, fmt: str) -> list[str]:
    """Write the tile set of ``store`` into the folder ``out``; the file names, the
    index (``tiles.json``) last."""
    from ..fileio import atomic_write
    zarr = _zarr()
    root = zarr.open_group(str(store), mode="r")
    a = dict(root.attrs)
    plan = Plan.of(a)
    h = root["height"]
    lo = hi = None
    if fmt == "png":
        lo, hi = math.inf, -math.inf
        for i, j in plan.ids():
            (ra, rb), (ca, cb) = plan.cores(0)[i], plan.cores(1)[j]
            part = h[ra:rb, ca:cb]
            lo, hi = min(lo, float(part.min())), max(hi, float(part.max()))
    index, names = [], []
    for i, j in plan.ids():
        (ra, rb), (ca, cb) = plan.cores(0)[i], plan.cores(1)[j]
        part = np.asarray(h[ra:rb, ca:cb])
        name = f"tile_r{i}_c{j}.{fmt}"
        names.append(name)
        if fmt == "png":
            span = (hi - lo) or 1.0
            gray = np.round((part - lo) / span * 65535.0).astype(np.uint16)
            data = images.png_bytes(gray)
            atomic_write(out / name, lambda f, d=data: f.write(d))
        else:
            atomic_write(out / name, lambda f, p=part: np.lib.format.write_array(f, p))
        index.append({"file": name, "row": i, "col": j, "rows": [ra, rb], "cols": [ca, cb]})
    meta = {"cell_size": a["cell_size"], "shape": a["shape"], "tiles": index,
            "format": fmt, "units": "world units" if fmt == "npy" else
            "16-bit gray: height = low + gray / 65535 x (high - low)",
            "low": lo, "high": hi}
    atomic_write(out / TILE_INDEX, lambda f: f.write(json.dumps(meta, indent=1).encode()))
    return [*names, TILE_INDEX]


# -- the command ----------------------------------------------------------------------

def store_bytes(plan: Plan, preset, coarse: int = 1) -> int:
    """Upper estimate of a run's store on disk at its fullest, as float64 arrays before
    compression: the work arrays (the input, the global stage's result, the raw tiles
    with their margins) and the result (every terrain array, each change, height)."""
    from ..terrain import fields
    enabled = preset.enabled_params()
    n, changes, glob = len(fields()), len(enabled), len(map_processes(enabled))
    cells = plan.shape[0] * plan.shape[1]
    er, ec = plan.extent_size()
    base = (n + glob) * cells // (coarse * coarse)
    raw = plan.tiles[0] * plan.tiles[1] * er * ec * (n + changes)
    return 8 * ((2 * n + changes + 1) * cells + base + raw) + 2**20


def heightmap_tiles_bytes(plan: Plan, fmt: str = "npy") -> int:
    """A heightmap tile set's size on disk: float64 .npy or 16-bit PNG (at most)."""
    cells = plan.shape[0] * plan.shape[1]
    return cells * (8 if fmt == "npy" else 2) + plan.tiles[0] * plan.tiles[1] * 2**10 \
        + 2**16


def check_tile_space(out: Path, tiles_folder: str | None, plan: Plan, preset,
                     coarse: int = 1, fmt: str = "npy") -> None:
    """Refuse a run whose store (and heightmap tiles) the disks would not hold: less
    free space than the estimate (store_bytes, heightmap_tiles_bytes) plus a margin
    (fileio.space_margin); ResourceError naming the flag, before a cluster starts."""
    from ..fileio import check_space, space_margin
    need = {out.parent: store_bytes(plan, preset, coarse)}
    shown = {out.parent: out}
    if tiles_folder:
        folder = Path(tiles_folder)
        size = heightmap_tiles_bytes(plan, fmt)
        disk = next((k for k in need if _same_disk(k, folder)), folder)
        need[disk] = need.get(disk, 0) + size
        shown.setdefault(disk, folder)
    for folder, size in need.items():
        check_space(shown[folder], folder, size, space_margin(size))


def _same_disk(a: Path, b: Path) -> bool:
    try:
        return os.stat(a).st_dev == os.stat(b).st_dev
    except OSError:
        return False


def tile_start(path: str, preset, cell_size: float | None, out: Path):
    """The world a tiled run starts from: a Terrain, or a file read window by window.
    A state, and a heightmap whose preset scales it (``real_size``) or raises ridges on
    it, start as ``erode`` starts them (simcore/pipeline/start.py), whole; any other
    heightmap and an earlier tiled world's store are read tile by tile (the client never
    holds the map)."""
    from ..errors import CliError
    from ..pipeline import arguments
    from ..pipeline.start import load_start

    name = path.lower()
    whole = preset.ridges is not None or bool(preset.real_size)
    if name.endswith(".npz") or (name.endswith(".npy") and whole):
        return load_start(path, preset, cell_size=cell_size).terrain
    if name.endswith(".npy"):
        return HeightmapFile(path, arguments.cell_size(cell_size))
    if Path(path).is_dir() or name.endswith(".zarr"):
        if cell_size is not None:
            raise CliError("--cell-size cannot change the scale of a tiled world's store")
        if Path(path).resolve() == partial_path(out).resolve():
            raise CliError(f"--input {path} is where the run writes until it is done "
                           f"(the .partial of --output {out}): move it away or rename it")
        return WorldStoreFile(path)  # a world already: resumed as it is, like a state
    raise CliError(f"--input {path}: use a .npy heightmap, an .npz state or a "
                   "tiled world's store (a .zarr folder)")


def tile_command(args) -> int:
    from ..fileio import output_lock
    from ..pipeline import arguments
    from .cluster import check_cluster_args

    out = check_output_store(args.output)  # before a cluster starts
    arguments.particles(args.particles)
    if args.seed is not None:
        arguments.seed(args.seed)
    check_cluster_args(args.workers, args.scheduler, args.threads)
    # one run at a time per --output: <output>.lock (also: the folder can be written)
    with output_lock(out):
        return _tile_command(args, out)


def _tile_command(args, out: Path) -> int:
    from ..engine.timing import note, plan_seconds
    from ..errors import CliError
    from ..formats.presets import find_preset
    from ..pipeline import arguments
    from .cluster import client

    if args.heightmap_tiles and Path(args.heightmap_tiles).is_file():
        raise CliError(f"--heightmap-tiles {args.heightmap_tiles}: is a file; give a folder")
    count = arguments.tiles(args.tiles)
    tiles = (count.down, count.across)  # (rows, columns): Plan's order
    preset = find_preset(args.preset).with_overrides(
        arguments.overrides(args.set, seed=args.seed, particles=args.particles))
    terrain = tile_start(args.input, preset, args.cell_size, out)
    plan = make_plan(terrain.shape, tiles, args.margin)  # checked before a cluster starts
    if args.heightmap_tiles:
        make_folder(args.heightmap_tiles, "--heightmap-tiles")
    check_tile_space(out, args.heightmap_tiles, plan, preset, args.coarse, args.tile_format)
    estimate = note(plan_seconds(preset.enabled_params(), terrain.shape,
                                 preset.work(terrain)),
                    what=" (the world as one run; the tiles' margins add to it)")
    if estimate and not args.quiet:  # before the cluster starts
        print(estimate, file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        with client(args.workers, args.scheduler, args.threads, args.quiet) as c:
            info = run_world(terrain, preset, out, c, tiles, args.margin, args.coarse,
                             args.quiet, heightmap_tiles=args.heightmap_tiles,
                             tile_format=args.tile_format)
    except BaseException:  # again once the cluster is closed: a task may have written
        shutil.rmtree(partial_path(out), ignore_errors=True)
        raise
    if not args.quiet:
        s = info["seconds"]
        print(f"wrote {out} in {time.perf_counter() - t0:.1f}s (global {s['global']:.1f}s, "
              f"tiles {s['tiles']:.1f}s, blend {s['blend']:.1f}s)", file=sys.stderr)
    return 0
