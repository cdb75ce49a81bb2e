"""The one PNG codec (simcore/formats/images.py): 8/16-bit gray and RGB written byte for
byte as the PNG standard lays them out (checked here with zlib and struct only), read
back exactly, and anything else refused with a message naming the file."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from simcore.errors import InputFileError
from simcore.formats import images

RNG = np.random.default_rng(5)


def chunk(tag: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + tag + body + struct.pack(
        ">I", zlib.crc32(tag + body))


def png(head: tuple, rows: list[bytes]) -> bytes:
    """A PNG from its IHDR fields and its filtered rows (filter byte first)."""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", *head))
            + chunk(b"IDAT", zlib.compress(b"".join(rows), 6)) + chunk(b"IEND", b""))


def pixels(shape, dtype):
    return RNG.integers(0, np.iinfo(dtype).max + 1, shape).astype(dtype)


@pytest.mark.parametrize("shape", [(5, 7), (5, 7, 3), (1, 1), (1, 9, 3)])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("up", [False, True])
def test_every_kind_reads_back_exactly(shape, dtype, up):
    px = pixels(shape, dtype)
    back = images.png_pixels(images.png_bytes(px, up=up))
    assert back.dtype == dtype and np.array_equal(back, px)


def test_the_bytes_are_the_standard_layout():
    """Unfiltered: filter byte 0 then the samples (16-bit big-endian); Up: filter byte
    2 then each byte minus the byte above (mod 256), the first row as it is."""
    rgb = pixels((3, 4, 3), np.uint8)
    assert images.png_bytes(rgb) == png((4, 3, 8, 2, 0, 0, 0),
                                        [b"\0" + r.tobytes() for r in rgb])
    gray = pixels((4, 2), np.uint16)
    be = gray.astype(">u2").view(np.uint8).reshape(4, 4).astype(np.int64)
    up = [be[0]] + [(be[r] - be[r - 1]) % 256 for r in range(1, 4)]
    assert images.png_bytes(gray, up=True) == png(
        (2, 4, 16, 0, 0, 0, 0), [b"\2" + bytes(r.astype(np.uint8)) for r in up])


def test_save_png_writes_the_unfiltered_rgb_png(tmp_path):
    rgb = pixels((6, 5, 3), np.uint8)
    path = images.save_png(tmp_path / "p.png", rgb)
    assert path.read_bytes() == images.png_bytes(rgb)
    assert np.array_equal(images.read_png(path), rgb)


def test_rows_filtered_sub_are_read():
    """Sub (each byte plus the byte one pixel to its left), as other writers use it."""
    gray = pixels((3, 5), np.uint16)
    be = gray.astype(">u2").view(np.uint8).reshape(3, 10).astype(np.int64)
    sub = be.copy()
    sub[:, 2:] = (be[:, 2:] - be[:, :-2]) % 256
    blob = png((5, 3, 16, 0, 0, 0, 0), [b"\1" + bytes(r.astype(np.uint8)) for r in sub])
    assert np.array_equal(images.png_pixels(blob), gray)


def test_other_pixels_cannot_be_written():
    for bad in (np.zeros((3, 3), np.float32), np.zeros((3, 3, 4), np.uint8),
                np.zeros(3, np.uint8)):
        with pytest.raises(ValueError, match="uint8 or uint16"):
            images.png_bytes(bad)


@pytest.mark.parametrize("blob,why", [
    (b"GIF89a" + bytes(40), "signature"),
    (png((2, 2, 8, 3, 0, 0, 0), [b"\0\0\0"] * 2), "grayscale or RGB"),   # palette
    (png((2, 2, 8, 6, 0, 0, 0), [b"\0" + bytes(8)] * 2), "grayscale or RGB"),  # alpha
    (png((2, 2, 8, 0, 0, 0, 1), [b"\0\0\0"] * 2), "interlaced"),
    (png((2, 2, 4, 0, 0, 0, 0), [b"\0\0"] * 2), "8- or 16-bit"),
    (png((2, 2, 8, 0, 0, 0, 0), [b"\4\0\0"] * 2), "row filter 4"),       # Paeth
    (png((3, 3, 8, 0, 0, 0, 0), [b"\0\0\0"] * 2), "do not decode"),      # too short
    (png((2, 2, 8, 0, 0, 0, 0), [b"\0\0\0"] * 2)[:40], "do not decode"),  # cut
    (png((2, 2, 8, 0, 0, 0, 0), [b"\0\0\0"] * 2)[:20], "grayscale or RGB"),  # no IHDR
])
def test_anything_else_is_refused_naming_the_file(tmp_path, blob, why):
    path = tmp_path / "x.png"
    path.write_bytes(blob)
    with pytest.raises(ValueError, match=why):
        images.png_pixels(blob)
    with pytest.raises(InputFileError, match=f"{path}.*{why}"):
        images.read_png(path)
    with pytest.raises(InputFileError, match="^a tile of ours: export again$"):
        images.read_png(path, "a tile of ours: export again")


def test_a_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputFileError, match="missing.png"):
        images.read_png(tmp_path / "missing.png")
