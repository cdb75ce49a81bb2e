"""Before/after pictures of the cold-climate presets (glaciated_range, range_under_ice)
and a valley's cross-section, with the numbers they show.

    python -m tools.ice_pictures [--size 256] [--relief 1800] [--only NAME ...]
                                 [--output-dir docs]

The start is the generator's drained uplands (seed 3, 7.68 km across) rescaled to
``--relief`` metres of relief. Each picture is the start and the result side by side,
hillshaded; ice is drawn pale blue (darker where thicker), snow white, and what the
ice laid (moraines) sandy. Rows go down the picture (+y, the frame's north, is down).
The section picture plots, across the valley where the ice was thickest, the ground
before (grey), after (black) and the ice surface at its thickest (blue).

Prints per preset: runtime, relief, slope median / 99th percentile, the ice's greatest
thickness and area, the depth eroded and laid, and the valley's section (width at
half depth and the exponent b of ``depth ~ |x|^b`` before and after: about 1 for a V,
2 for a U). Needs only numpy (no Blender).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from simcore.analysis.landforms import slope_degrees  # noqa: E402
from simcore.engine.simulation import Simulation  # noqa: E402
from simcore.formats.images import save_png, shaded_relief  # noqa: E402
from simcore.formats.presets import find_preset  # noqa: E402
from simcore.generators.uplands import drained_uplands  # noqa: E402
from simcore.terrain import Terrain  # noqa: E402
from tools.contact_sheet import label  # noqa: E402

EXTENT = 7680.0
PICTURES = {"glaciated_range": "ice_glaciated_range.png",
            "range_under_ice": "ice_range_under_ice.png"}


def picture(height: np.ndarray, cell: float, ice: np.ndarray | None = None,
            snow: np.ndarray | None = None, laid: np.ndarray | None = None) -> np.ndarray:
    """RGB uint8 of world heights ``height`` with ice, snow and laid debris (m)."""
    rgb = shaded_relief(height / cell, laid / cell if laid is not None else None)
    img = rgb.astype(float) / 255.0
    if snow is not None:
        w = np.clip(snow / 2.0, 0.0, 1.0)[..., None] * 0.85
        img = img * (1 - w) + w * np.array([0.97, 0.97, 1.0])
    if ice is not None:
        w = np.clip(ice / 20.0, 0.0, 1.0)[..., None] * 0.75
        tone = np.clip(ice / 400.0, 0.0, 1.0)[..., None]
        blue = np.array([0.80, 0.90, 1.0]) * (1 - tone) + np.array([0.45, 0.62, 0.85]) * tone
        img = img * (1 - w) + w * blue * (0.55 + 0.45 * img.mean(axis=2, keepdims=True))
    return (np.clip(img, 0.0, 1.0) * 255).astype(np.uint8)


def section_fit(x: np.ndarray, z: np.ndarray) -> tuple[float, float]:
    """(b, half-depth width in m) of a section: depth above its lowest point ~ |x|^b
    within the valley's walls (up to the lower of the two crests)."""
    k = int(np.argmin(z))
    left = int(np.argmax(z[:k + 1])) if k > 0 else 0
    right = k + int(np.argmax(z[k:]))
    top = min(z[left], z[right])
    inside = np.arange(len(z))
    m = (inside >= left) & (inside <= right) & (z <= top) & (np.abs(x - x[k]) > 0)
    depth = z - z[k]
    m &= depth > 0.5
    b = float(np.polyfit(np.log(np.abs(x[m] - x[k])), np.log(depth[m]), 1)[0]) \
        if m.sum() > 3 else float("nan")
    half = z[k] + 0.5 * (top - z[k])
    width = float((z[left:right + 1] <= half).sum() * (x[1] - x[0]))
    return b, width


def plot_section(x: np.ndarray, lines: list[tuple[np.ndarray, tuple[int, int, int]]],
                 width: int = 768, height: int = 320) -> np.ndarray:
    """A line plot (RGB uint8) of the profiles in ``lines``, on shared axes."""
    img = np.full((height, width, 3), 255, np.uint8)
    lo = min(float(z.min()) for z, _ in lines)
    hi = max(float(z.max()) for z, _ in lines)
    span = hi - lo or 1.0
    xs = (x - x.min()) / (np.ptp(x) or 1.0) * (width - 21) + 10
    for z, colour in lines:
        ys = (height - 11) - (z - lo) / span * (height - 21)
        px = np.linspace(xs[0], xs[-1], 4 * width)
        py = np.interp(px, xs, ys)
        for dx in (0, 1):
            for dy in (0, 1):
                img[np.clip(py.astype(int) + dy, 0, height - 1),
                    np.clip(px.astype(int) + dx, 0, width - 1)] = colour
    return img


def run(name: str, start: np.ndarray, cell: float, out: Path) -> None:
    preset = find_preset(name)
    terrain = Terrain.from_heights(start, cell)
    ice_max = np.zeros_like(start)
    surface_max = start.copy()
    sim = Simulation(terrain, preset.enabled_params(), seed=preset.seed,
                     particles=preset.work(terrain))
    t0 = time.perf_counter()
    while sim.rounds_done < sim.target_rounds:
        sim.run_round()
        ice = terrain.ice * cell
        thicker = ice > ice_max
        ice_max = np.where(thicker, ice, ice_max)
        surface_max = np.where(thicker, terrain.height() * cell + ice, surface_max)
    seconds = time.perf_counter() - t0
    after = terrain.height() * cell
    ice = terrain.ice * cell
    snow = terrain.snow * cell
    laid = np.maximum(after - start, 0.0)
    slopes = slope_degrees(after / cell)
    print(f"{name}: {seconds:.1f} s, relief {np.ptp(start):.0f} -> {np.ptp(after):.0f} m, "
          f"slope median {np.median(slopes):.1f} p99 {np.percentile(slopes, 99):.1f} deg, "
          f"ice at most {ice_max.max():.0f} m over {(ice_max > 1).mean():.0%} of the map "
          f"(at the end {ice.max():.0f} m over {(ice > 1).mean():.0%}), snow at the end "
          f"{snow.max():.1f} m over {(snow > 0.1).mean():.0%}; eroded at most "
          f"{-(after - start).min():.0f} m, laid at most {laid.max():.0f} m")
    gap = np.full((start.shape[0], 8, 3), 255, np.uint8)
    body = np.concatenate([picture(start, cell), gap,
                           picture(after, cell, ice=ice, snow=snow, laid=laid)], axis=1)
    text = label(f"{name}: before, after", body.shape[1])
    save_png(out / PICTURES[name], np.concatenate([text, body], axis=0))
    # the valley section: through the cell with the thickest ice whose row or column
    # crosses a valley there (the start's lowest point within 3 cells of it, both
    # sides rising 200 m or more within 900 m)
    half = int(round(900.0 / cell))
    picks: list[tuple[int, int, bool, tuple]] = []
    for idx in np.argsort(-ice_max, axis=None)[:4000]:
        r, c = np.unravel_index(int(idx), ice_max.shape)
        if ice_max[r, c] < 50.0:
            break
        if not (half <= r < start.shape[0] - half and half <= c < start.shape[1] - half):
            continue
        if any(abs(r - a) + abs(c - b) < half for a, b, _, _ in picks):
            continue
        for across_row, z in ((True, start[r, c - half:c + half + 1]),
                              (False, start[r - half:r + half + 1, c])):
            if (abs(int(np.argmin(z)) - half) <= 3 and z[:half].max() - z.min() > 200.0
                    and z[half:].max() - z.min() > 200.0):
                picks.append((r, c, across_row, (r, slice(c - half, c + half + 1))
                              if across_row else (slice(r - half, r + half + 1), c)))
                break
    if not picks:
        print(f"{name}: no valley under the ice to draw a section of")
        return
    xs = np.arange(2 * half + 1) * cell
    fits = np.array([(section_fit(xs, start[p])[0], section_fit(xs, after[p])[0])
                     for _, _, _, p in picks])
    fits = fits[np.isfinite(fits).all(axis=1)]
    print(f"{name}: {len(fits)} valley sections under ice thicker than 50 m: median b "
          f"{np.median(fits[:, 0]):.2f} -> {np.median(fits[:, 1]):.2f}, up in "
          f"{(fits[:, 1] > fits[:, 0]).mean():.0%} of them")
    r, c, across_row, pick = picks[0]
    where = f"row {r}" if across_row else f"column {c}"
    z0, z1, s1 = start[pick], after[pick], surface_max[pick]
    x = np.arange(len(z0)) * cell
    b0, w0 = section_fit(x, z0)
    b1, w1 = section_fit(x, z1)
    print(f"{name}: section across {where} ({len(z0) * cell:.0f} m): floor "
          f"{z0.min():.0f} -> {z1.min():.0f} m, b {b0:.2f} -> {b1:.2f}, width at half "
          f"depth {w0:.0f} -> {w1:.0f} m, ice at most {np.max(s1 - z0):.0f} m")
    plot = plot_section(x, [(z0, (150, 150, 150)), (z1, (0, 0, 0)), (s1, (70, 120, 220))])
    text = label(f"{name}: section before grey after black ice blue", plot.shape[1], 2)
    save_png(out / PICTURES[name].replace(".png", "_section.png"),
             np.concatenate([text, plot], axis=0))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--relief", type=float, default=1800.0)
    ap.add_argument("--only", nargs="*", default=list(PICTURES))
    ap.add_argument("--output-dir", default=str(ROOT / "docs"))
    args = ap.parse_args()
    cell = EXTENT / args.size
    start = drained_uplands(args.size, seed=3, cell_size=cell, relief=args.relief)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.only:
        run(name, start, cell, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
