"""Reference landscape-evolution runner around fastscapelib 0.3.0 (PyPI wheel).

numpy only at import time; fastscapelib is imported inside ``run_fastscape`` so this
module imports (and ``fastscape_available()`` answers) without it installed.

    from benchmarks.reference.fastscape import fastscape_available, run_fastscape
    if fastscape_available():
        heights, sec_per_step = run_fastscape(h0, 30.0, uplift=1e-3, k=2e-4, m=0.4, n=1.0,
                                              diffusivity=0.1, dt=1000.0, steps=10)

Conventions of fastscapelib 0.3.0 that a comparison has to match (read from its source,
include/fastscapelib/{flow/flow_router.hpp, eroders/spl.hpp, eroders/diffusion_adi.hpp}):

* ``RasterGrid`` in Python is always 8-connected (``raster_connect::queen``): the single
  flow router is D8, steepest descent over the 8 neighbours with slope = dh / distance
  (diagonal distance sqrt(dx^2 + dy^2)); a node with no strictly lower neighbour is its
  own receiver (a pit), ties keep the first neighbour in the grid's order.
* ``FlowGraph.accumulate(area, 1.0)`` integrates the source over cell areas: drainage
  area in m^2, including the node's own cell (dx * dy).
* ``SPLEroder`` is Braun & Willett (2013), implicit along the receiver; base-level nodes
  and pits are not eroded; a node is not eroded below its receiver's new height (no new
  pits); with a sink resolver the pit and the rerouted (carved) path up to the spill have
  their receiver above them and so are not eroded ("lake"), while the other nodes of a
  depression still erode toward the pit. Heights passed to SPL are the *unfilled* ones.
* ``DiffusionADIEroder`` is one Peaceman-Rachford ADI step (two half steps: implicit
  along x / explicit in y, then implicit along y / explicit in x) with Dirichlet
  (unchanged) borders whatever the grid's boundary status.
"""

from __future__ import annotations

import time

import numpy as np

_INSTALL_HINT = "fastscapelib is not installed: pip install fastscapelib==0.3.0"


def fastscape_available() -> bool:
    """True when fastscapelib can be imported."""
    try:
        import fastscapelib  # noqa: F401
    except ImportError:
        return False
    return True


def _import_fastscapelib():
    try:
        import fastscapelib as fs
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(_INSTALL_HINT) from exc
    return fs


def run_fastscape(height0: np.ndarray, cell: float, *, uplift: float, k: float, m: float,
                  n: float, diffusivity: float, dt: float, steps: int,
                  resolve_sinks: bool = True, router_threads: int = 0,
                  ) -> tuple[np.ndarray, float]:
    """Heights (world units, metres) after `steps` steps of fastscapelib 0.3.0: uplift (m/yr) on
    every interior node, the four edges fixed base level (fixed value), single-flow D8 routing
    (with sinks resolved by MSTSinkResolver when resolve_sinks), SPLEroder (k in m^(1-2m)/yr,
    area_exp=m, slope_exp=n; drainage area in m^2), then DiffusionADIEroder (m^2/yr; skip if
    0). Returns (heights, seconds per step).

    The loop is the one of fastscapelib's "mountain" example: uplift, flow routing on the
    uplifted heights, drainage area, SPL erosion of the uplifted heights, diffusion of the
    SPL-eroded heights, apply both. ``router_threads`` > 1 runs the D8 receiver search of
    ``SingleFlowRouter`` on that many threads (the only threaded part of this loop; 0 or 1
    is sequential). Seconds per step exclude building the grid, graph and eroders.
    """
    fs = _import_fastscapelib()
    h = np.array(height0, dtype=np.float64, order="C", copy=True)
    if h.ndim != 2 or min(h.shape) < 3:
        raise ValueError(f"height0 must be a 2-D array of at least 3x3, got {h.shape}")
    if cell <= 0 or dt <= 0 or steps < 0:
        raise ValueError("cell and dt must be > 0 and steps >= 0")

    grid = fs.RasterGrid(list(h.shape), np.array([cell, cell], dtype=np.float64),
                         fs.NodeStatus.FIXED_VALUE)
    router = fs.SingleFlowRouter(n_threads=int(router_threads)) if router_threads > 1 \
        else fs.SingleFlowRouter()
    operators = [router, fs.MSTSinkResolver()] if resolve_sinks else [router]
    flow_graph = fs.FlowGraph(grid, operators)
    spl = fs.SPLEroder(flow_graph, k_coef=float(k), area_exp=float(m), slope_exp=float(n),
                       tolerance=1e-5)
    diffusion = fs.DiffusionADIEroder(grid, float(diffusivity)) if diffusivity > 0 else None

    uplift_dt = np.full(h.shape, float(uplift) * float(dt))
    uplift_dt[[0, -1], :] = 0.0
    uplift_dt[:, [0, -1]] = 0.0
    area = np.empty_like(h)

    start = time.perf_counter()
    for _ in range(steps):
        uplifted = h + uplift_dt
        flow_graph.update_routes(uplifted)
        flow_graph.accumulate(area, 1.0)
        eroded = uplifted - spl.erode(uplifted, area, dt)
        if diffusion is not None:
            eroded = eroded - diffusion.erode(eroded, dt)
        h = eroded
    elapsed = time.perf_counter() - start
    return h, (elapsed / steps if steps else 0.0)
