"""Rivers and lakes as data: the stream network as polylines with flow, lakes as a
labelled mask and a quad mesh of their surfaces.

Inputs are plain rasters in any consistent length unit (the caller's): the stream map
(0..1, time-averaged presence of flowing water), the ground height and the pool
depth. Channel cells are those with ``stream >= threshold``; each flows to its
steepest strictly-lower 8-neighbour on the water surface (ground + pool). Polylines
start at channel heads (no channel cell flows into them) and run downstream until
they leave the channel network (the first cell outside is kept, so a river reaches
its lake) or join a polyline already traced (the junction cell is shared).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..algorithms import components, drainage
from ..kernels import numba_cache  # noqa: F401 - a failing cache write is a warning
from .layers import WET_DEPTH

_DR = np.array([-1, -1, -1, 0, 0, 1, 1, 1])
_DC = np.array([-1, 0, 1, -1, 1, -1, 0, 1])


@njit(cache=True)
def _downstream(surface, cell_x, cell_y, dr, dc):
    """Flat index of the steepest strictly-lower 8-neighbour, -1 for pits and flats."""
    rows, cols = surface.shape
    down = np.full(rows * cols, -1, np.int64)
    for r in range(rows):
        for c in range(cols):
            best = 0.0
            h = surface[r, c]
            for k in range(8):
                nr, nc = r + dr[k], c + dc[k]
                if 0 <= nr < rows and 0 <= nc < cols:
                    drop = h - surface[nr, nc]
                    if drop > 0.0:
                        slope = drop / np.hypot(dr[k] * cell_y, dc[k] * cell_x)
                        if slope > best:
                            best = slope
                            down[r * cols + c] = nr * cols + nc
    return down


@njit(cache=True)
def _thin(stream, channel, down, cols):
    """Drop a channel cell when a neighbour across the flow (perpendicular to its D8
    direction) flows the same way with a higher stream value (ties: the lower index),
    so a band several cells wide gives one line down its crest, not parallel ones;
    junctions (neighbours flowing another way) are kept."""
    rows = stream.size // cols
    keep = channel.copy()
    for i in range(stream.size):
        if not channel[i] or down[i] < 0:
            continue
        r, c = i // cols, i % cols
        dr, dc = down[i] // cols - r, down[i] % cols - c
        s = stream[i]
        for pr, pc in ((r - dc, c + dr), (r + dc, c - dr)):
            if 0 <= pr < rows and 0 <= pc < cols:
                j = pr * cols + pc
                parallel = down[j] >= 0 and down[j] - j == down[i] - i
                if channel[j] and parallel and (stream[j] > s or (stream[j] == s and j < i)):
                    keep[i] = False
    return keep


@njit(cache=True)
def _trace(channel, down, order, min_points, points, starts):
    """Trace polylines from the heads in ``order``; returns (n points, n lines)."""
    n = channel.size
    visited = np.zeros(n, np.bool_)
    np_, nl = 0, 0
    for head in order:
        first = np_
        points[np_] = head
        np_ += 1
        visited[head] = True
        cur = head
        while True:
            nxt = down[cur]
            if nxt < 0:
                break
            points[np_] = nxt
            np_ += 1
            if not channel[nxt] or visited[nxt]:
                break
            visited[nxt] = True
            cur = nxt
        if np_ - first < min_points:  # a short spur: drop it (its cells stay visited)
            np_ = first
        else:
            starts[nl] = first
            nl += 1
    starts[nl] = np_
    return np_, nl


def stream_polylines(stream: np.ndarray, surface: np.ndarray, threshold: float = 0.25,
                     min_points: int = 4, cell_x: float = 1.0, cell_y: float | None = None,
                     thin: bool = True) -> list[tuple[np.ndarray, np.ndarray]]:
    """The channel network as polylines, highest heads first.

    Returns a list of ``(cells, flow)``: ``cells`` is an ``(n, 2)`` int array of
    (row, col) from source to mouth, ``flow`` the stream value (0..1) at each point.
    Lines with fewer than ``min_points`` points are dropped. With ``thin``, lines start
    only on the crest of stream values across the flow, so a band of channel cells
    several cells wide gives one line, not parallel ones.
    """
    stream = np.asarray(stream, dtype=np.float64)
    surface = np.ascontiguousarray(surface, dtype=np.float64)
    rows, cols = stream.shape
    channel = (stream >= threshold).ravel()
    down = _downstream(surface, float(cell_x), float(cell_x if cell_y is None else cell_y),
                       _DR, _DC)
    # lines start on the crest of a wide band (thinned) and run through any channel cell
    starts_on = _thin(stream.ravel(), channel, down, cols) if thin else channel
    fed = np.zeros(channel.size, bool)
    targets = down[starts_on]
    fed[targets[targets >= 0]] = True
    heads = np.flatnonzero(starts_on & ~fed)
    order = heads[np.argsort(-surface.ravel()[heads], kind="stable")]
    points = np.empty(2 * channel.size + 1, np.int64)
    starts = np.empty(len(order) + 1, np.int64)
    _, nl = _trace(channel, down, order, max(int(min_points), 2), points, starts)
    flat_stream = stream.ravel()
    lines = []
    for i in range(nl):
        idx = points[starts[i]:starts[i + 1]]
        cells = np.stack([idx // cols, idx % cols], axis=1)
        flow = flat_stream[idx].copy()
        if not channel[idx[-1]] and len(flow) > 1:  # the mouth: carry the river's flow
            flow[-1] = flow[-2]
        lines.append((cells, flow))
    return lines


def label_lakes(water: np.ndarray) -> tuple[np.ndarray, int]:
    """8-connected water bodies: int32 labels (0 = dry, 1..n) and n."""
    return components.label(water)


def lake_mesh(height: np.ndarray, pool: np.ndarray, min_depth: float = WET_DEPTH
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Quads covering every water body, flat at its surface.

    A grid quad is kept when any of its 4 corners is wet (``pool > min_depth``); dry
    corners take the highest surface of a wet 8-neighbour, so the water plane meets
    the bank and the terrain hides the overlap (a clean waterline in renders).

    Returns ``(cells, level, quads, lake)``: ``cells`` (n, 2) (row, col) of the used
    vertices, ``level`` their surface height, ``quads`` (m, 4) indices into ``cells``
    (counter-clockwise seen from above), ``lake`` (m,) the label of each quad.
    """
    height = np.asarray(height, dtype=np.float64)
    wet = np.asarray(pool) > min_depth
    rows, cols = wet.shape
    surface = np.where(wet, height + pool, -np.inf)
    level = surface.copy()
    padded = np.pad(surface, 1, constant_values=-np.inf)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            level = np.maximum(level, np.where(
                wet, -np.inf, padded[1 + dr:1 + dr + rows, 1 + dc:1 + dc + cols]))
    level = np.where(wet, surface, level)
    any_wet = wet[:-1, :-1] | wet[:-1, 1:] | wet[1:, :-1] | wet[1:, 1:]
    qr, qc = np.nonzero(any_wet)
    corners = np.stack([qr * cols + qc, qr * cols + qc + 1, (qr + 1) * cols + qc + 1,
                        (qr + 1) * cols + qc], axis=1)
    used, inverse = np.unique(corners.ravel(), return_inverse=True)
    labels, _ = label_lakes(wet)
    flat_labels = labels.ravel()
    lake = flat_labels[corners].max(axis=1) if len(corners) else np.zeros(0, np.int32)
    cells = np.stack([used // cols, used % cols], axis=1)
    return cells, level.ravel()[used], inverse.reshape(-1, 4), lake.astype(np.int32)


def channel_azimuths(height: np.ndarray, cell: float, min_area_cells: float = 30.0,
                     hops: int = 6) -> np.ndarray:
    """Axial azimuths (0 .. 180 degrees, clockwise from +y) of the channels of ``height``
    (world units, ``cell`` apart): for every cell draining at least ``min_area_cells``
    cells, the direction to the cell ``hops`` steps downstream (several D8 steps, so
    directions between the eight are seen); cells within 4 of the map's edge left out.
    What a histogram of trellis drainage is made of."""
    flow = drainage.route(height, cell)
    rows, cols = height.shape
    area = flow.area.reshape(-1) / (cell * cell)
    start = np.flatnonzero(area >= min_area_cells)
    end = start.copy()
    for _ in range(hops):
        end = flow.receiver[end]
    r0, c0 = np.divmod(start, cols)
    r1, c1 = np.divmod(end, cols)
    inner = (r0 >= 4) & (r0 < rows - 4) & (c0 >= 4) & (c0 < cols - 4) & (end != start)
    return np.degrees(np.arctan2(c1 - c0, r1 - r0)[inner]) % 180.0
