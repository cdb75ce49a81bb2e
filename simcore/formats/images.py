"""Pictures of heightmaps without extra libraries: shaded relief and an 8-bit PNG writer."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..fileio import atomic_write


def shaded_relief(height: np.ndarray, sediment: np.ndarray | None = None,
                  azimuth_deg: float = 315.0, altitude_deg: float = 40.0,
                  exaggeration: float = 2.0, pool: np.ndarray | None = None) -> np.ndarray:
    """RGB uint8 (rows, cols, 3): hillshade of ``height`` (cell units) tinted by
    elevation; where ``sediment`` is given, loose material shows sandy; where ``pool``
    (water depth, cell units) is given, standing water (pool > 0) is drawn blue on its
    flat surface, darker where deeper. NaN/inf heights are refused (a picture of them
    would be garbage)."""
    height = np.asarray(height, dtype=np.float64)
    if height.ndim != 2 or min(height.shape) < 2:
        raise UserError(f"a shaded relief needs a 2-D grid of at least 2x2 heights, got "
                        f"shape {height.shape}")
    if not np.isfinite(height).all():
        raise UserError("the heights have NaN/inf values: fill them before shading")
    gy, gx = np.gradient(height * exaggeration)
    az, alt = np.radians(azimuth_deg), np.radians(altitude_deg)
    light = np.array([np.cos(alt) * np.sin(az), -np.cos(alt) * np.cos(az), np.sin(alt)])
    norm = np.sqrt(gx * gx + gy * gy + 1.0)
    shade = np.clip((-gx * light[0] - gy * light[1] + light[2]) / norm, 0.0, 1.0)
    span = float(np.ptp(height)) or 1.0
    t = (height - height.min()) / span
    low, high = np.array([0.35, 0.45, 0.28]), np.array([0.78, 0.74, 0.68])
    color = low + (high - low) * t[..., None]
    if sediment is not None:
        sand = np.clip(sediment / (np.percentile(sediment, 99) + 1e-9), 0.0, 1.0)[..., None]
        color = color * (1 - 0.7 * sand) + np.array([0.86, 0.76, 0.52]) * 0.7 * sand
    rgb = color * (0.25 + 0.75 * shade[..., None])
    if pool is not None:
        rgb = _water(rgb, height, np.asarray(pool, dtype=np.float64), light, exaggeration)
    return (np.clip(rgb, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)


#: colours of shallow and deep water (0..1 RGB)
SHALLOW, DEEP = np.array([0.36, 0.60, 0.78]), np.array([0.05, 0.16, 0.38])


def _water(rgb: np.ndarray, height: np.ndarray, pool: np.ndarray, light: np.ndarray,
           exaggeration: float) -> np.ndarray:
    """``rgb`` with every cell where ``pool`` > 0 painted as water: blue from shallow to
    deep (the 95th percentile of the depths, so any cell size reads alike), lit as the
    water surface (ground + pool)."""
    if pool.shape != height.shape:
        raise UserError(f"pool grid {pool.shape} does not match the heights {height.shape}")
    wet = np.isfinite(pool) & (pool > 0.0)
    if not wet.any():
        return rgb
    gy, gx = np.gradient((height + np.where(wet, pool, 0.0)) * exaggeration)
    norm = np.sqrt(gx * gx + gy * gy + 1.0)
    shade = np.clip((-gx * light[0] - gy * light[1] + light[2]) / norm, 0.0, 1.0)
    deep = max(float(np.percentile(pool[wet], 95)), 1e-12)
    t = np.clip(np.where(wet, pool, 0.0) / deep, 0.0, 1.0)[..., None]
    water = (SHALLOW + (DEEP - SHALLOW) * t) * (0.6 + 0.4 * shade[..., None])
    return np.where(wet[..., None], water, rgb)


def save_png(path: str | Path, rgb: np.ndarray) -> Path:
    """Write an RGB uint8 image (rows, cols, 3) as PNG."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    rows, cols = rgb.shape[:2]
    raw = b"".join(b"\x00" + rgb[r].tobytes() for r in range(rows))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    png = (b"\x89PNG\r\n\x1a\n"
           + chunk(b"IHDR", struct.pack(">IIBBBBB", cols, rows, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
    return atomic_write(Path(path), lambda f: f.write(png))
