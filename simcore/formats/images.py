"""Pictures of heightmaps without extra libraries: shaded relief, and the project's one
PNG codec.

:func:`png_bytes` encodes 8- or 16-bit grayscale or RGB pixels (16-bit samples
big-endian, as PNG says; first row = top of the picture; zlib level 6), every row
unfiltered or every row filtered 'Up' (smooth maps compress far better);
:func:`save_png` writes an RGB picture with it. :func:`read_png` decodes what
:func:`png_bytes` writes (and any PNG limited to the same: grayscale or RGB, 8 or 16
bits, no interlacing, rows filtered None, Sub or Up). Everything that writes PNG
(previews, contact sheets, game-engine tiles) goes through these.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from ..errors import InputFileError, UserError, describe_os_error
from ..fileio import atomic_write, check_input


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


# ------------------------------------------------------------------ PNG

SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: PNG colour type of each channel count (gray, RGB) and back
COLOR_TYPES = {1: 0, 3: 2}
CHANNELS = {t: n for n, t in COLOR_TYPES.items()}
#: PNG row filter types: the two :func:`png_bytes` writes, and Sub (read only)
NONE, SUB, UP = 0, 1, 2


def _chunk(tag: bytes, body: bytes) -> bytes:
    return (struct.pack(">I", len(body)) + tag + body
            + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF))


def png_bytes(pixels: np.ndarray, up: bool = False) -> bytes:
    """The PNG of ``pixels``: (rows, cols) grayscale or (rows, cols, 3) RGB, uint8 or
    uint16 (16-bit samples stored big-endian), first row = top of the picture. With
    ``up`` every row is filtered 'Up' (the difference to the row above: smooth maps
    compress far better), else stored as it is. ValueError for other pixels."""
    pixels = np.asarray(pixels)
    channels = 1 if pixels.ndim == 2 else (pixels.shape[2] if pixels.ndim == 3 else 0)
    if channels not in COLOR_TYPES or pixels.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"a PNG takes (rows, cols) or (rows, cols, 3) uint8 or uint16 "
                         f"pixels, not {pixels.shape} {pixels.dtype}")
    bits = 16 if pixels.dtype == np.uint16 else 8
    rows, cols = pixels.shape[:2]
    raw = np.ascontiguousarray(pixels, ">u2" if bits == 16 else np.uint8)
    raw = raw.view(np.uint8).reshape(rows, -1)
    data = np.empty((rows, raw.shape[1] + 1), np.uint8)
    data[:, 0] = UP if up else NONE
    data[:, 1:] = raw
    if up:
        data[1:, 1:] -= raw[:-1]  # uint8 arithmetic wraps, as the filter wants
    head = struct.pack(">IIBBBBB", cols, rows, bits, COLOR_TYPES[channels], 0, 0, 0)
    return (SIGNATURE + _chunk(b"IHDR", head)
            + _chunk(b"IDAT", zlib.compress(data.tobytes(), 6)) + _chunk(b"IEND", b""))


def png_pixels(blob: bytes) -> np.ndarray:
    """The pixels of a PNG file's bytes, as :func:`png_bytes` takes them (uint8 or
    uint16; (rows, cols) gray or (rows, cols, 3) RGB; first row = top). Only what
    :func:`png_bytes` writes, filter Sub too; ValueError for anything else (a palette,
    alpha, interlacing, other filters, a damaged file)."""
    if blob[:8] != SIGNATURE:
        raise ValueError("no PNG signature")
    pos, head, idat = 8, None, []
    while pos + 8 <= len(blob):
        n, tag = struct.unpack(">I4s", blob[pos:pos + 8])
        body = blob[pos + 8:pos + 8 + n]
        if tag == b"IHDR" and len(body) == 13:
            head = struct.unpack(">IIBBBBB", body)
        elif tag == b"IDAT":
            idat.append(body)
        elif tag == b"IEND":
            break
        pos += 12 + n
    if head is None or head[2] not in (8, 16) or head[3] not in CHANNELS \
            or head[4:] != (0, 0, 0):
        raise ValueError("not 8- or 16-bit grayscale or RGB, or interlaced")
    cols, rows, bits, color = head[:4]
    channels = CHANNELS[color]
    bpp = channels * bits // 8  # bytes per pixel
    try:
        data = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
        data = data.reshape(rows, cols * bpp + 1).copy()
    except (zlib.error, ValueError):
        raise ValueError("its image data do not decode to its size") from None
    out = data[:, 1:]
    for r in range(rows):
        kind = data[r, 0]
        if kind == SUB:  # a running sum per byte of a pixel
            for k in range(bpp):
                out[r, k::bpp] = np.cumsum(out[r, k::bpp], dtype=np.uint64).astype(np.uint8)
        elif kind == UP and r > 0:
            out[r] += out[r - 1]
        elif kind not in (NONE, UP):
            raise ValueError(f"row filter {kind} (only None, Sub and Up are read)")
    shape = (rows, cols) if channels == 1 else (rows, cols, channels)
    if bits == 16:
        return out.copy().view(">u2").reshape(shape).astype(np.uint16)
    return out.copy().reshape(shape)


def read_png(path: str | Path, not_ours: str = "") -> np.ndarray:
    """The pixels of the PNG file ``path`` (:func:`png_pixels`); InputFileError naming
    the file when it cannot be read, or saying ``not_ours`` (default: what it is not)
    when it is not such a PNG."""
    path = check_input(Path(path))
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise InputFileError(describe_os_error(exc, path, "read")) from None
    try:
        return png_pixels(blob)
    except ValueError as exc:
        raise InputFileError(not_ours or f"{path} is not a PNG Terrain Erosion reads "
                             f"({exc}): save it as an 8- or 16-bit grayscale or RGB "
                             "PNG") from None


def save_png(path: str | Path, rgb: np.ndarray) -> Path:
    """Write an RGB uint8 image (rows, cols, 3) as PNG (rows unfiltered)."""
    png = png_bytes(np.ascontiguousarray(rgb, dtype=np.uint8))
    return atomic_write(Path(path), lambda f: f.write(png))
