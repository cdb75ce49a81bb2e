"""Diffusion-limited aggregation and DLA ridges (docs/references.md: the DLA article).

**Cluster.** Random walkers on a lattice stick to a growing cluster (Witten & Sander).
Options from the article: a walk *bias* (left, right, up, down, center, edges, equator,
meridian), a *stickiness* probability (a walker next to the cluster sticks with this
probability, else walks on: lower = denser), and the starting cluster: points, walls or
any mask. Particles are stored in the order they stuck, with their parent (the cluster
cell they touched, always an earlier particle, one of its 8 neighbours), so the cluster
is a tree. Directions are those of Blender's top view: row = +Y = "up", column = +X =
"right".

Walkers take single lattice steps next to the cluster and, away from it, one jump out
of the empty disc around them (to a uniform point of its rim; with a bias, a Gaussian of
as many steps plus their drift). Two capped distance maps (cells and 8x8 blocks), kept
up to date as particles stick, say how big that disc is: this makes big clusters cheap.
Every walker has its own counter-based random stream ``(seed, level, walker number)``:
same seed, same cluster, on any machine.

**Coarse to fine.** For terrain the cluster grows on a coarse lattice first, then is
refined: the lattice doubles, every link gets a midpoint particle (a little jittered
sideways), and new walkers grow fine branches between the old ones; repeated until the
finest lattice cell is ``ridge_spacing * density`` (multi-scale DLA as in terrain
generators).

**Ridges.** Each particle's crest height comes from its depth in the branch tree, counted
from the farthest tip: ``1 - 1/(1 + depth/k)`` (tips low, trunks high). The crest image
is blurred at one scale per lattice level (a Gaussian pyramid: broad scales make the
massifs, fine ones the crests and spurs), sampled onto the terrain grid and scaled to
the amplitude in metres. Last, slopes steeper than ``max_slope`` are cut back (the
highest surface under the ridges with no steeper slope: rock failing at a threshold
hillslope), so the ridge terrain has real mountain slopes whatever the resolution.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..kernels.primitives import next_uniform, stream_state
from ..kernels.sampling import sample_bilinear
from ..params import SEED_RANGE, ParameterError, Params, param

BIASES = ("none", "left", "right", "up", "down", "center", "edges", "equator", "meridian")
STARTS = ("center", "points", "walls", "mask")
LAUNCHES = ("anywhere", "ring")

STREAM_ID = 7  # RNG stream family of the DLA walkers
BLOCK = 8  # cells per side of a block of the block-distance map
BLOCK_REACH = 16  # blocks: how far the block-distance map looks
NEAR_REACH = 12  # cells: how far the cell-distance map looks
#: growth gives up after this many lost walkers per wanted particle (plus
#: LOST_IN_A_ROW): a left bias at 0.9 launched on a ring loses 18 per particle and still
#: grows its cluster
LOST_PER_PARTICLE = 50
LOST_IN_A_ROW = 200  # growth gives up after this many lost walkers in a row
RING_GAP = 5.0  # cells: the launch ring's radius beyond the farthest particle
#: a ring-launched walker farther than WANDER_FACTOR x ring + WANDER_MARGIN cells from
#: the centre has wandered off and is put back on the launch ring (classic DLA practice)
WANDER_FACTOR = 2.0
WANDER_MARGIN = 20.0
JUMP_CLEARANCE = 3.0  # cells a jump's disc keeps clear of the cluster
MIN_JUMP = 2.0  # cells: a walker nearer the cluster takes single lattice steps
_EMPTY = -1


class WalkParams(NamedTuple):
    """Walk settings as the kernel sees them."""

    bias: int  # index into BIASES
    strength: float  # probability that a step goes the bias way, 0..1
    stickiness: float  # probability to stick when next to the cluster, (0, 1]
    launch: int  # 0 = anywhere (uniform over the grid), 1 = ring around the start
    max_steps: int  # a walker that takes longer is dropped


@dataclasses.dataclass(frozen=True)
class RidgeParams(Params):
    """DLA ridge terrain, in world units (metres when the scene is in metres)."""

    amplitude: float = param(1000.0, 0.0, 1e5, "m",
                             "height of the highest ridge (before the slope limit)",
                             soft_hi=5000.0)
    ridge_spacing: float = param(600.0, 1e-3, 1e6, "m",
                                 "typical distance between neighbouring ridges",
                                 soft_hi=5000.0)
    max_slope: float = param(40.0, 1.0, 80.0, "deg",
                             "steeper slopes are cut back (threshold hillslope)")
    crest_shape: float = param(0.15, 0.01, 10.0, "-",
                               "k/largest depth in 1-1/(1+depth/k): small = broad high "
                               "massifs, large = crests rising evenly to the trunk")
    density: float = param(0.15, 0.02, 0.5, "-",
                           "fraction of lattice cells the cluster fills at every level")
    stickiness: float = param(1.0, 0.01, 1.0, "-",
                              "chance a walker sticks on contact (lower = denser)")
    bias: str = param("none", doc="walk drift: " + ", ".join(BIASES))
    bias_strength: float = param(0.0, 0.0, 0.9, "-",
                                 "share of steps that go the bias way")
    start: str = param("center", doc="starting cluster: " + ", ".join(STARTS))
    points: int = param(3, 1, 10_000, "-", "random starting points (start = points)")
    jitter: float = param(0.7, 0.0, 1.0, "-",
                          "chance a refined link bends (no ruler-straight ridges)")
    roughness: float = param(0.8, 0.0, 1.5, "-",
                             "weight of broad scales: 0 = sharp fine ridges, 1 = "
                             "broad massifs")
    seed: int = param(0, *SEED_RANGE, "-", "random seed of the walkers")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, allowed in (("bias", BIASES), ("start", STARTS)):
            value = getattr(self, name)
            if value not in allowed:
                raise ParameterError(f"RidgeParams: '{name}' = {value!r} is not one of "
                                     f"{', '.join(allowed)}")


# -- random walk kernels ------------------------------------------------------------

@njit(cache=True)
def _bias_vector(code, r, c, rows, cols):
    """Unit drift (dr, dc) for bias ``code`` at cell (r, c); (0, 0) when none."""
    mr = 0.5 * (rows - 1)
    mc = 0.5 * (cols - 1)
    if code == 1:
        return 0.0, -1.0
    if code == 2:
        return 0.0, 1.0
    if code == 3:
        return 1.0, 0.0
    if code == 4:
        return -1.0, 0.0
    if code == 5 or code == 6:
        dr = mr - r
        dc = mc - c
        n = math.sqrt(dr * dr + dc * dc)
        if n < 0.5:
            return 0.0, 0.0
        s = 1.0 if code == 5 else -1.0
        return s * dr / n, s * dc / n
    if code == 7:
        return (0.0 if abs(mr - r) < 0.5 else math.copysign(1.0, mr - r)), 0.0
    if code == 8:
        return 0.0, (0.0 if abs(mc - c) < 0.5 else math.copysign(1.0, mc - c))
    return 0.0, 0.0


@njit(cache=True)
def _step(state, code, strength, r, c, rows, cols):
    """One lattice step: the bias way with probability ``strength`` (axis picked in
    proportion to the drift), else one of the 4 directions."""
    state, u = next_uniform(state)
    dr, dc = 0, 0
    if u < strength:
        vr, vc = _bias_vector(code, r, c, rows, cols)
        state, w = next_uniform(state)
        if abs(vr) + abs(vc) > 0.0:
            if w * (abs(vr) + abs(vc)) < abs(vr):
                dr = 1 if vr > 0 else -1
            else:
                dc = 1 if vc > 0 else -1
            return state, dr, dc
        u = w * strength  # no drift here: fall through to a random step
    k = int((u - strength) / (1.0 - strength) * 4.0) if u >= strength else int(u / strength * 4)
    if k == 0:
        dr = 1
    elif k == 1:
        dr = -1
    elif k == 2:
        dc = 1
    else:
        dc = -1
    return state, dr, dc


@njit(cache=True)
def block_distance(occ, block, reach):
    """Chebyshev distance in blocks from every block to the nearest block holding a
    particle, capped at ``reach``."""
    rows, cols = occ.shape
    br = (rows + block - 1) // block
    bc = (cols + block - 1) // block
    bd = np.full((br, bc), reach, np.int32)
    for r in range(rows):
        for c in range(cols):
            if occ[r, c] >= 0 and bd[r // block, c // block] != 0:
                _stamp(bd, r // block, c // block, reach)
    return bd


def distance_maps(occ: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Block- and cell-level Chebyshev distance maps to the cluster (capped)."""
    return block_distance(occ, BLOCK, BLOCK_REACH), block_distance(occ, 1, NEAR_REACH)


@njit(cache=True)
def _stamp(bd, i, j, reach):
    for a in range(max(0, i - reach + 1), min(bd.shape[0], i + reach)):
        for b in range(max(0, j - reach + 1), min(bd.shape[1], j + reach)):
            d = max(abs(a - i), abs(b - j))
            if d < bd[a, b]:
                bd[a, b] = d


@njit(cache=True)
def _gauss_pair(state):
    state, u1 = next_uniform(state)
    state, u2 = next_uniform(state)
    rad = math.sqrt(-2.0 * math.log(1.0 - u1))
    return state, rad * math.cos(2.0 * math.pi * u2), rad * math.sin(2.0 * math.pi * u2)


@njit(cache=True)
def _ring_point(state, centre, rad, rows, cols):
    """A uniform point of the circle of radius ``rad`` around ``centre`` (row, col),
    clamped onto the grid. Returns (state, row, col)."""
    state, u = next_uniform(state)
    r = int(round(centre[0] + rad * math.sin(2 * math.pi * u)))
    c = int(round(centre[1] + rad * math.cos(2 * math.pi * u)))
    return state, min(max(r, 0), rows - 1), min(max(c, 0), cols - 1)


@njit(cache=True)
def _anywhere(state, rows, cols):
    """A uniform cell of the grid. Returns (state, row, col)."""
    state, u = next_uniform(state)
    state, v = next_uniform(state)
    return state, min(int(u * rows), rows - 1), min(int(v * cols), cols - 1)


@njit(cache=True)
def _launch(state, walk, rows, cols, centre, ring):
    """A new walker's cell: on a ring just outside the cluster (``walk.launch`` 1;
    clamped onto the grid) or anywhere. Returns (state, row, col)."""
    if walk.launch == 1:
        return _ring_point(state, centre, ring + RING_GAP, rows, cols)
    return _anywhere(state, rows, cols)


@njit(cache=True)
def _place(state, occ, walk, centre, ring):
    """A new walker's free starting cell: its launch cell or, when that is on the
    cluster (a ring outside the grid is clamped onto its edge), one cell anywhere.
    Returns (state, row, col, placed): not placed when both are taken."""
    rows, cols = occ.shape
    state, r, c = _launch(state, walk, rows, cols, centre, ring)
    if occ[r, c] >= 0:
        state, r, c = _anywhere(state, rows, cols)
    return state, r, c, occ[r, c] < 0


@njit(cache=True)
def _touching(occ, r, c):
    """How many of the 8 cells around (r, c) hold a particle."""
    rows, cols = occ.shape
    count = 0
    for dr in range(-1, 2):
        for dc in range(-1, 2):
            rr = r + dr
            cc = c + dc
            if (dr or dc) and 0 <= rr < rows and 0 <= cc < cols and occ[rr, cc] >= 0:
                count += 1
    return count


@njit(cache=True)
def _attach(state, occ, px, py, parent, n, r, c, count, bd, near):
    """Particle ``n`` sticks at (r, c), its parent one of the ``count`` particles
    around it, picked at random; the distance maps learn of it. Returns the state."""
    rows, cols = occ.shape
    state, u = next_uniform(state)
    pick = min(int(u * count), count - 1)
    for dr in range(-1, 2):
        for dc in range(-1, 2):
            rr = r + dr
            cc = c + dc
            if (dr or dc) and 0 <= rr < rows and 0 <= cc < cols and occ[rr, cc] >= 0:
                if pick == 0:
                    parent[n] = occ[rr, cc]
                pick -= 1
    occ[r, c] = n
    px[n] = c
    py[n] = r
    if bd[r // BLOCK, c // BLOCK] != 0:
        _stamp(bd, r // BLOCK, c // BLOCK, np.int64(BLOCK_REACH))
    _stamp(near, r, c, np.int64(NEAR_REACH))
    return state


@njit(cache=True)
def _jump(state, walk, r, c, rows, cols, reach):
    """Away from the cluster, one jump out of the empty disc of radius ``reach``
    around (r, c): uniform on its rim without bias (where a walk leaves a disc), else
    a Gaussian of as many lattice steps plus their drift. Returns (state, row, col)."""
    vr, vc = _bias_vector(walk.bias, r, c, rows, cols)
    if walk.strength > 0.0 and abs(vr) + abs(vc) > 0.0:
        sigma = reach / 3.0
        walked = 2.0 * sigma * sigma  # lattice steps whose spread is sigma
        drift = walked * walk.strength
        if drift > reach / 3.0:
            walked = reach / (3.0 * walk.strength)
            sigma = math.sqrt(0.5 * walked)
            drift = reach / 3.0
        state, gr, gc = _gauss_pair(state)
        jr = sigma * gr + drift * vr
        jc = sigma * gc + drift * vc
        length = math.hypot(jr, jc)
        if length > reach:
            jr *= reach / length
            jc *= reach / length
    else:
        state, u = next_uniform(state)
        jr = reach * math.sin(2.0 * math.pi * u)
        jc = reach * math.cos(2.0 * math.pi * u)
    return (state, min(max(int(round(r + jr)), 0), rows - 1),
            min(max(int(round(c + jc)), 0), cols - 1))


@njit(cache=True)
def _sticks(state, stickiness):
    """Whether a walker next to the cluster sticks (probability ``stickiness``)."""
    if stickiness >= 1.0:
        return state, True
    state, u = next_uniform(state)
    return state, u < stickiness


@njit(cache=True)
def _jump_reach(near, bd, r, c):
    """Radius of the empty disc a walker at (r, c) may jump out of: the cell-distance
    map, or the block-distance map beyond its reach, less a clearance."""
    reach = near[r, c] - JUMP_CLEARANCE
    if near[r, c] >= NEAR_REACH:
        reach = max(reach, (bd[r // BLOCK, c // BLOCK] - 1) * BLOCK - 1.0)
    return reach


@njit(cache=True)
def _lattice_step(state, occ, walk, r, c):
    """One lattice step onto a free cell of the grid (else stay). Returns (state, r, c)."""
    rows, cols = occ.shape
    state, dr, dc = _step(state, walk.bias, walk.strength, r, c, rows, cols)
    rr = r + dr
    cc = c + dc
    if 0 <= rr < rows and 0 <= cc < cols and occ[rr, cc] < 0:
        return state, rr, cc
    return state, r, c


@njit(cache=True)
def _wander(state, occ, px, py, parent, n, r, c, bd, near, walk, centre, ring):
    """Walk one walker from (r, c) until it sticks as particle ``n`` or has taken
    ``walk.max_steps`` moves (lost). Returns (state, stuck, ring)."""
    rows, cols = occ.shape
    taken = 0
    while taken < walk.max_steps:
        taken += 1
        count = _touching(occ, r, c)
        if count > 0:
            state, stick = _sticks(state, walk.stickiness)
            if stick:
                state = _attach(state, occ, px, py, parent, n, r, c, count, bd, near)
                return state, True, max(ring, math.hypot(r - centre[0], c - centre[1]))
        if (walk.launch == 1 and math.hypot(r - centre[0], c - centre[1])
                > WANDER_FACTOR * ring + WANDER_MARGIN):
            state, r, c = _ring_point(state, centre, ring + RING_GAP, rows, cols)
            continue
        reach = _jump_reach(near, bd, r, c)
        if reach >= MIN_JUMP:
            state, r, c = _jump(state, walk, r, c, rows, cols, reach)
        else:
            state, r, c = _lattice_step(state, occ, walk, r, c)
    return state, False, ring


@njit(cache=True)
def grow(occ, px, py, parent, n, target, bd, near, walk, seed, stream, centre, ring,
         lost_per_particle=LOST_PER_PARTICLE):
    """Add walkers until ``n == target`` particles, or until walkers keep getting lost
    (``LOST_IN_A_ROW`` in a row, or ``lost_per_particle`` per wanted particle in all:
    e.g. a bias that drives them away from the only starting cells). A lost walker
    costs ``walk.max_steps`` moves, so this bounds the work.

    ``occ`` (rows, cols) int32 holds the particle index per cell (-1 empty); ``px``,
    ``py``, ``parent`` hold column, row and parent index per particle; ``bd`` is the
    block-distance map and ``near`` the cell-distance map (both kept up to date);
    ``centre`` (row, col) and ``ring`` (the largest particle distance from it) serve
    the ring launch. Returns (n, walkers launched, walkers lost, ring)."""
    s64 = np.uint64(seed)
    st64 = np.uint64(stream)
    walker = 0
    lost = 0
    lost_in_a_row = 0
    give_up = lost_per_particle * (target - n) + LOST_IN_A_ROW  # walkers lost in all
    while n < target and lost_in_a_row < LOST_IN_A_ROW and lost < give_up:
        state = stream_state(s64, st64, np.uint64(walker))
        walker += 1
        state, r, c, placed = _place(state, occ, walk, centre, ring)
        stuck = False
        if placed:
            state, stuck, ring = _wander(state, occ, px, py, parent, n, r, c, bd, near,
                                         walk, centre, ring)
        if stuck:
            n += 1
            lost_in_a_row = 0
        else:
            lost += 1
            lost_in_a_row += 1
    return n, walker, lost, ring


@njit(cache=True)
def _emit(occ, qx, qy, qp, m, r, c, p):
    qx[m] = c
    qy[m] = r
    qp[m] = p
    occ[r, c] = m
    return m + 1


@njit(cache=True)
def refine(px, py, parent, n, rows, cols, seed, stream, jitter):
    """Double the lattice: every particle moves to (2r, 2c) and every link gets a
    midpoint particle. With probability ``jitter`` a link bends instead: a straight
    link's midpoint moves one cell sideways, a diagonal link becomes a three-link
    zigzag (so refined branches do not stay ruler-straight). Order stays "parent
    first", every particle touches its parent. Returns (occ, px, py, parent, n)."""
    rows2 = 2 * rows
    cols2 = 2 * cols
    occ = np.full((rows2, cols2), -1, np.int32)
    cap = 3 * n
    qx = np.empty(cap, np.int32)
    qy = np.empty(cap, np.int32)
    qp = np.empty(cap, np.int32)
    new_index = np.empty(n, np.int32)
    m = 0
    state = stream_state(np.uint64(seed), np.uint64(stream), np.uint64(0))
    for i in range(n):
        cr = 2 * py[i]
        cc = 2 * px[i]
        p = parent[i]
        link = -1
        if p >= 0:
            pr = 2 * py[p]
            pc = 2 * px[p]
            dr = py[i] - py[p]
            dc = px[i] - px[p]
            mr = pr + dr
            mc = pc + dc
            state, u = next_uniform(state)
            bent = False
            if u < jitter:
                side = 1 if u < 0.5 * jitter else -1
                if dr == 0 or dc == 0:
                    jr = mr + side * (1 if dr == 0 else 0)
                    jc = mc + side * (1 if dc == 0 else 0)
                    if 0 <= jr < rows2 and 0 <= jc < cols2 and occ[jr, jc] < 0:
                        mr = jr
                        mc = jc
                else:
                    # zigzag p -> a -> b -> child along one axis first
                    ar, ac, br, bc = pr + dr, pc, pr + 2 * dr, pc + dc
                    if side < 0:
                        ar, ac, br, bc = pr, pc + dc, pr + dr, pc + 2 * dc
                    if occ[ar, ac] < 0 and occ[br, bc] < 0:
                        m = _emit(occ, qx, qy, qp, m, ar, ac, new_index[p])
                        m = _emit(occ, qx, qy, qp, m, br, bc, m - 1)
                        link = m - 1
                        bent = True
            if not bent:
                if occ[mr, mc] >= 0:
                    link = occ[mr, mc]  # two diagonal links crossed: join the other
                else:
                    m = _emit(occ, qx, qy, qp, m, mr, mc, new_index[p])
                    link = m - 1
        new_index[i] = m
        m = _emit(occ, qx, qy, qp, m, cr, cc, link)
    return occ, qx[:m].copy(), qy[:m].copy(), qp[:m].copy(), m


@njit(cache=True)
def tip_depth(parent, n):
    """Longest path (in links) from each particle down to a tip of its subtree.
    Needs parent[i] < i, which growth and refinement keep."""
    depth = np.zeros(n, np.int32)
    for i in range(n - 1, -1, -1):
        p = parent[i]
        if p >= 0 and depth[i] + 1 > depth[p]:
            depth[p] = depth[i] + 1
    return depth


@njit(cache=True)
def slope_cap(h, drop):
    """The highest surface <= ``h`` whose slope nowhere exceeds ``drop`` (height per
    cell; octagonal distance, two raster sweeps): peaks steeper than that are cut
    down to it, like rock failing at a threshold hillslope. Returns a new array."""
    rows, cols = h.shape
    out = h.copy()
    diag = drop * math.sqrt(2.0)
    for r in range(rows):
        for c in range(cols):
            v = out[r, c]
            if c > 0:
                v = min(v, out[r, c - 1] + drop)
            if r > 0:
                v = min(v, out[r - 1, c] + drop)
                if c > 0:
                    v = min(v, out[r - 1, c - 1] + diag)
                if c < cols - 1:
                    v = min(v, out[r - 1, c + 1] + diag)
            out[r, c] = v
    for r in range(rows - 1, -1, -1):
        for c in range(cols - 1, -1, -1):
            v = out[r, c]
            if c < cols - 1:
                v = min(v, out[r, c + 1] + drop)
            if r < rows - 1:
                v = min(v, out[r + 1, c] + drop)
                if c < cols - 1:
                    v = min(v, out[r + 1, c + 1] + diag)
                if c > 0:
                    v = min(v, out[r + 1, c - 1] + diag)
            out[r, c] = v
    return out


# -- clusters -----------------------------------------------------------------------

@dataclasses.dataclass
class Cluster:
    """A grown cluster: particle positions (column ``x``, row ``y``) in sticking order,
    each particle's ``parent`` (-1 for starting particles) and the lattice ``occ``."""

    occ: np.ndarray
    x: np.ndarray
    y: np.ndarray
    parent: np.ndarray
    walkers: int = 0
    lost: int = 0

    @property
    def size(self) -> int:
        return len(self.x)

    def mask(self) -> np.ndarray:
        return self.occ >= 0


def start_mask(shape: tuple[int, int], start: str = "center", *, bias: str = "none",
               points: int | np.ndarray = 1, mask: np.ndarray | None = None,
               seed: int = 0) -> np.ndarray:
    """Boolean starting cluster of ``shape``.

    ``center``: the middle cell. ``points``: ``points`` random cells (or an (n, 2)
    array of (row, col)). ``walls``: the side(s) the bias drives walkers to (left,
    right, up = last row, down = first row; edges and none: all four sides; equator /
    meridian: the middle row / column; center: the middle cell). ``mask``: ``mask``.
    """
    rows, cols = shape
    out = np.zeros(shape, bool)
    if start == "center":
        out[rows // 2, cols // 2] = True
    elif start == "points":
        pts = np.asarray(points)
        if pts.ndim == 0:
            rng = np.random.default_rng(seed)
            k = int(pts)
            pts = np.stack([rng.integers(0, rows, k), rng.integers(0, cols, k)], axis=1)
        out[np.clip(pts[:, 0], 0, rows - 1), np.clip(pts[:, 1], 0, cols - 1)] = True
    elif start == "walls":
        sides = {"left": "l", "right": "r", "up": "t", "down": "b", "edges": "lrtb",
                 "none": "lrtb", "equator": "e", "meridian": "m", "center": "c"}[bias]
        for s in sides:
            if s == "l":
                out[:, 0] = True
            elif s == "r":
                out[:, -1] = True
            elif s == "t":
                out[-1, :] = True
            elif s == "b":
                out[0, :] = True
            elif s == "e":
                out[rows // 2, :] = True
            elif s == "m":
                out[:, cols // 2] = True
            else:
                out[rows // 2, cols // 2] = True
    elif start == "mask":
        if mask is None or np.shape(mask) != tuple(shape):
            raise ParameterError(f"start = 'mask' needs a boolean mask of shape {shape}")
        out = np.asarray(mask, bool).copy()
    else:
        raise ParameterError(f"start = {start!r} is not one of {', '.join(STARTS)}")
    if not out.any():
        raise ParameterError("the starting cluster is empty: paint or give at least "
                             "one cell")
    return out


def _walk(bias: str, strength: float, stickiness: float, launch: str,
          shape: tuple[int, int]) -> WalkParams:
    if bias not in BIASES:
        raise ParameterError(f"bias = {bias!r} is not one of {', '.join(BIASES)}")
    if launch not in LAUNCHES:
        raise ParameterError(f"launch = {launch!r} is not one of {', '.join(LAUNCHES)}")
    if not 0.0 <= strength < 1.0:
        raise ParameterError(f"bias strength {strength} must be in [0, 1)")
    if not 0.0 < stickiness <= 1.0:
        raise ParameterError(f"stickiness {stickiness} must be in (0, 1]")
    rows, cols = shape
    return WalkParams(BIASES.index(bias), float(strength), float(stickiness),
                      LAUNCHES.index(launch), int((rows + cols) ** 2 + 10_000))


def _seed_cluster(start: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """occ, y, x for the starting particles (roots, row-major order)."""
    ys, xs = np.nonzero(start)
    occ = np.full(start.shape, _EMPTY, np.int32)
    occ[ys, xs] = np.arange(len(ys), dtype=np.int32)
    return occ, ys.astype(np.int32), xs.astype(np.int32)


def grow_cluster(shape: tuple[int, int], particles: int, *, start: np.ndarray | None = None,
                 bias: str = "none", bias_strength: float = 0.0, stickiness: float = 1.0,
                 launch: str = "anywhere", seed: int = 0, stream: int = 0) -> Cluster:
    """Grow a DLA cluster of ``particles`` particles (including the start) on one
    lattice. ``start`` is a boolean mask (default: the middle cell); ``launch``:
    walkers start anywhere on the grid (the article) or on a ring just outside the
    cluster (classic DLA around one seed). Growth stops early only if walkers keep
    getting lost (e.g. a bias driving them away from the only starting cells)."""
    rows, cols = shape
    if rows < 3 or cols < 3:
        raise ParameterError(f"a DLA grid needs at least 3x3 cells, got {rows}x{cols}")
    start = start_mask(shape) if start is None else np.asarray(start, bool)
    occ, ys, xs = _seed_cluster(start)
    target = min(int(particles), rows * cols)
    n0 = len(ys)
    target = max(target, n0)
    px = np.empty(target, np.int32)
    py = np.empty(target, np.int32)
    parent = np.full(target, -1, np.int32)
    px[:n0], py[:n0] = xs, ys
    walk = _walk(bias, bias_strength, stickiness, launch, shape)
    centre = np.array([ys.mean(), xs.mean()])
    ring = float(np.hypot(ys - centre[0], xs - centre[1]).max())
    bd, near = distance_maps(occ)
    n, walkers, lost, _ = grow(occ, px, py, parent, n0, target, bd, near, walk, seed,
                               STREAM_ID * 1000 + stream, centre, ring)
    return Cluster(occ, px[:n].copy(), py[:n].copy(), parent[:n].copy(), walkers, lost)


def _downsample_any(mask: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Nearest-cell resample of a boolean mask to ``shape`` keeping every true cell."""
    rows, cols = mask.shape
    out = np.zeros(shape, bool)
    ys, xs = np.nonzero(mask)
    out[np.minimum(ys * shape[0] // rows, shape[0] - 1),
        np.minimum(xs * shape[1] // cols, shape[1] - 1)] = True
    return out


def grow_multiscale(shape: tuple[int, int], levels: int, density: float, *,
                    start: np.ndarray | None = None, bias: str = "none",
                    bias_strength: float = 0.0, stickiness: float = 1.0,
                    jitter: float = 0.5, seed: int = 0) -> list[Cluster]:
    """Grow coarse and refine: level 0 has ``shape``, each next level doubles it.
    Every level is grown until ``density`` of its cells are filled. ``start`` (any
    shape, boolean) is resampled to every level and its cells join as roots.
    Returns the cluster of every level, coarsest first."""
    out: list[Cluster] = []
    rows, cols = shape
    for level in range(levels + 1):
        lshape = (rows << level, cols << level)
        seeds = (start_mask(lshape) if start is None
                 else _downsample_any(np.asarray(start, bool), lshape))
        if level == 0:
            occ, ys, xs = _seed_cluster(seeds)
            par = np.full(len(ys), -1, np.int32)
        else:
            prev = out[-1]
            occ, xs, ys, par, _ = refine(prev.x, prev.y, prev.parent, prev.size,
                                         prev.occ.shape[0], prev.occ.shape[1], seed,
                                         STREAM_ID * 1000 + 500 + level, jitter)
            extra_y, extra_x = np.nonzero(seeds & (occ < 0))
            if len(extra_y):
                first = len(ys)
                occ[extra_y, extra_x] = np.arange(first, first + len(extra_y), dtype=np.int32)
                ys = np.concatenate([ys, extra_y.astype(np.int32)])
                xs = np.concatenate([xs, extra_x.astype(np.int32)])
                par = np.concatenate([par, np.full(len(extra_y), -1, np.int32)])
        n0 = len(ys)
        target = max(n0, int(density * lshape[0] * lshape[1]))
        px = np.empty(target, np.int32)
        py = np.empty(target, np.int32)
        parent = np.full(target, -1, np.int32)
        px[:n0], py[:n0], parent[:n0] = xs, ys, par
        walk = _walk(bias, bias_strength, stickiness, "anywhere", lshape)
        bd, near = distance_maps(occ)
        centre = np.array([0.5 * lshape[0], 0.5 * lshape[1]])
        n, walkers, lost, _ = grow(occ, px, py, parent, n0, target, bd, near, walk, seed,
                                   STREAM_ID * 1000 + level, centre, 0.0)
        out.append(Cluster(occ, px[:n].copy(), py[:n].copy(), parent[:n].copy(),
                           walkers, lost))
    return out


# -- cluster to terrain -------------------------------------------------------------

def crest_heights(cluster: Cluster, shape_k: float = 0.15) -> np.ndarray:
    """Per-particle crest height 0..1 from the depth in the branch tree:
    ``f(d) = 1 - 1/(1 + d/k)`` with ``k = shape_k * max depth``, normalised so the
    deepest particle is 1. Starting particles (roots) are 1: the start is the crest."""
    depth = tip_depth(cluster.parent, cluster.size).astype(np.float64)
    k = max(shape_k * depth.max(), 1e-9)
    f = 1.0 - 1.0 / (1.0 + depth / k)
    top = f.max()
    f = f / top if top > 0 else np.ones_like(f)
    f[cluster.parent < 0] = 1.0
    return f


def box_blur3(a: np.ndarray, passes: int = 2) -> np.ndarray:
    """``passes`` x [1 2 1]/4 separable blur, edges clamped (a small Gaussian)."""
    for _ in range(passes):
        p = np.pad(a, 1, mode="edge")
        a = 0.25 * p[:-2, 1:-1] + 0.5 * p[1:-1, 1:-1] + 0.25 * p[2:, 1:-1]
        p = np.pad(a, 1, mode="edge")
        a = 0.25 * p[1:-1, :-2] + 0.5 * p[1:-1, 1:-1] + 0.25 * p[1:-1, 2:]
    return a


def gaussian_blur(a: np.ndarray, sigma: float) -> np.ndarray:
    """Separable Gaussian blur with standard deviation ``sigma`` cells (edges clamped)."""
    if sigma < 0.3:
        return a
    radius = int(math.ceil(3 * sigma))
    k = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2)
    k /= k.sum()
    p = np.pad(a, ((radius, radius), (0, 0)), mode="edge")
    a = sum(k[i] * p[i:i + a.shape[0]] for i in range(len(k)))
    p = np.pad(a, ((0, 0), (radius, radius)), mode="edge")
    return sum(k[i] * p[:, i:i + a.shape[1]] for i in range(len(k)))


def _reduce(a: np.ndarray) -> np.ndarray:
    """Half resolution: [1 2 1]/4 smoothing, then every other cell (cell r of the
    result sits on cell 2r of ``a``)."""
    return box_blur3(a, 1)[::2, ::2]


def _expand(a: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Double resolution to ``shape`` (cell r of ``a`` on cell 2r): linear
    interpolation, then [1 2 1]/4 smoothing so no crease shows in shading."""
    r = np.arange(shape[0]) / 2.0
    c = np.arange(shape[1]) / 2.0
    return box_blur3(sample_bilinear(a, r[:, None], c[None, :]), 1)


def ridge_field(cluster: Cluster, scales: int, crest_shape: float = 0.15,
                roughness: float = 0.8, sigma: float = 1.0) -> np.ndarray:
    """Ridges on the cluster's lattice (arbitrary units): the crest image (each
    particle's crest height from its tree depth, 0 elsewhere) blurred at ``scales``
    scales ``sigma * 2**s`` cells, each scaled so a lone crest line keeps its height,
    weighted ``(2**s)**roughness`` and summed (a Gaussian pyramid, coarse to fine).
    Broad scales make the massifs, fine ones the crests and spurs."""
    crisp = np.zeros(cluster.occ.shape)
    crisp[cluster.y, cluster.x] = crest_heights(cluster, crest_shape)
    pyramid = [crisp]
    for _ in range(scales - 1):
        if min(pyramid[-1].shape) < 6:
            break
        pyramid.append(_reduce(pyramid[-1]))
    acc: np.ndarray | None = None
    line = sigma * math.sqrt(2.0 * math.pi)
    for s in range(len(pyramid) - 1, -1, -1):
        band = gaussian_blur(pyramid[s], sigma) * line * (2.0 ** s) ** roughness
        acc = band if acc is None else _expand(acc, band.shape) + band
    assert acc is not None  # the pyramid has at least the crisp image
    return acc


@dataclasses.dataclass
class Ridges:
    """A ridge terrain: ``heights`` (world units, 0..amplitude) on the requested grid,
    the clusters of every level and the finest lattice's cell size and origin."""

    heights: np.ndarray
    clusters: list[Cluster]
    lattice_cell: float
    origin: tuple[float, float]

    def to_grid(self, rows_at: np.ndarray, cols_at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fractional finest-lattice (row, col) of world positions ``rows_at``/``cols_at``."""
        return ((rows_at - self.origin[0]) / self.lattice_cell,
                (cols_at - self.origin[1]) / self.lattice_cell)


def plan_lattice(extent: tuple[float, float], lattice_cell: float,
                 base: int = 12) -> tuple[tuple[int, int], int]:
    """Coarsest lattice shape and number of refinements so the finest lattice has cells
    of ``lattice_cell`` and covers ``extent`` (world rows, cols); the coarsest has about
    ``base`` cells on its shorter side (at least 3)."""
    need = [max(3, int(math.ceil(e / lattice_cell)) + 1) for e in extent]
    levels = max(0, int(math.floor(math.log2(min(need) / base)))) if min(need) > base else 0
    coarse = tuple(max(3, int(math.ceil(n / 2 ** levels))) for n in need)
    return coarse, levels  # type: ignore[return-value]


def ridge_terrain(shape: tuple[int, int], cell_size: float, params: RidgeParams,
                  start: np.ndarray | None = None) -> Ridges:
    """Grow a multi-scale DLA cluster over a ``shape`` grid of ``cell_size`` world
    units and turn it into ridges (world units, 0..``params.amplitude``).

    ``start`` is an optional boolean mask of ``shape`` (e.g. a painted vertex group)
    used when ``params.start == 'mask'``. The result depends on world sizes only: the
    same extent at another grid resolution gives the same mountains, sampled finer.
    """
    rows, cols = shape
    if rows < 3 or cols < 3:
        raise ParameterError(f"the grid must be at least 3x3, got {rows}x{cols}")
    if not (math.isfinite(cell_size) and cell_size > 0):
        raise ParameterError(f"cell size must be a positive number, got {cell_size!r}")
    extent = ((rows - 1) * cell_size, (cols - 1) * cell_size)
    lattice_cell = params.ridge_spacing * params.density
    coarse, levels = plan_lattice(extent, lattice_cell)
    fine = (coarse[0] << levels, coarse[1] << levels)
    if fine[0] * fine[1] > 8192 * 8192:
        raise ParameterError(
            f"ridge spacing {params.ridge_spacing:g} is too small for a terrain "
            f"{extent[1]:g} x {extent[0]:g} wide: the DLA lattice would be {fine[1]} x "
            f"{fine[0]}; use a ridge spacing of at least "
            f"{params.ridge_spacing * math.sqrt(fine[0] * fine[1]) / 8192:.3g}")
    origin = (-(fine[0] - 1) * lattice_cell / 2 + extent[0] / 2,
              -(fine[1] - 1) * lattice_cell / 2 + extent[1] / 2)
    seeds = None
    if params.start == "mask":
        if start is None or not np.asarray(start, bool).any():
            raise ParameterError("start = 'mask' needs a painted starting area (a mask "
                                 "with at least one cell set)")
        seeds = _mask_to_lattice(np.asarray(start, bool), cell_size, fine, origin,
                                 lattice_cell)
    elif params.start != "center":
        seeds = start_mask(fine, params.start, bias=params.bias, points=params.points,
                           seed=params.seed)
    clusters = grow_multiscale(coarse, levels, params.density, start=seeds,
                               bias=params.bias, bias_strength=params.bias_strength,
                               stickiness=params.stickiness, jitter=params.jitter,
                               seed=params.seed)
    field = ridge_field(clusters[-1], levels + 1, params.crest_shape, params.roughness)
    at_r = (np.arange(rows) * cell_size - origin[0]) / lattice_cell
    at_c = (np.arange(cols) * cell_size - origin[1]) / lattice_cell
    # anti-alias when the terrain grid is coarser than the lattice
    field = gaussian_blur(field, 0.5 * cell_size / lattice_cell)
    heights = sample_bilinear(field, at_r[:, None], at_c[None, :])
    # round off the bilinear creases when the terrain is finer than the lattice
    heights = gaussian_blur(heights, 0.5 * lattice_cell / cell_size)
    heights -= heights.min()
    top = heights.max()
    if top > 0:
        heights *= params.amplitude / top
    heights = slope_cap(heights, math.tan(math.radians(params.max_slope)) * cell_size)
    return Ridges(heights, clusters, lattice_cell, origin)


def _mask_to_lattice(mask: np.ndarray, cell_size: float, fine: tuple[int, int],
                     origin: tuple[float, float], lattice_cell: float) -> np.ndarray:
    """A boolean mask on the terrain grid resampled onto the finest lattice."""
    out = np.zeros(fine, bool)
    ys, xs = np.nonzero(mask)
    r = np.rint((ys * cell_size - origin[0]) / lattice_cell).astype(np.int64)
    c = np.rint((xs * cell_size - origin[1]) / lattice_cell).astype(np.int64)
    out[np.clip(r, 0, fine[0] - 1), np.clip(c, 0, fine[1] - 1)] = True
    return out


def add_ridges(heights: np.ndarray, cell_size: float, params: RidgeParams,
               start: np.ndarray | None = None) -> np.ndarray:
    """``heights`` (world units) plus a ridge terrain of the same grid."""
    heights = np.asarray(heights, np.float64)
    if heights.ndim != 2:
        raise ParameterError(f"heights must be a 2-D grid, got shape {heights.shape}")
    ridges = ridge_terrain((heights.shape[0], heights.shape[1]), cell_size, params, start)
    return heights + ridges.heights
