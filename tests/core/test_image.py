"""Shaded relief: standing water is drawn blue (``simcore shade``), dry land unchanged."""

import numpy as np
import pytest

from simcore.cli.main import main
from simcore.errors import UserError
from simcore.formats.images import shaded_relief
from simcore.formats.states import save_state
from simcore.terrain import Terrain


def bowl(n=40):
    yy, xx = np.mgrid[0:n, 0:n]
    height = 0.02 * ((xx - n / 2) ** 2 + (yy - n / 2) ** 2)
    pool = np.maximum(3.0 - height, 0.0)  # a lake up to level 3
    return height, pool


def is_blue(rgb):
    rgb = rgb.astype(int)
    return (rgb[..., 2] > rgb[..., 0] + 30) & (rgb[..., 2] > rgb[..., 1])


def test_pools_are_blue_and_dry_land_is_unchanged():
    height, pool = bowl()
    plain = shaded_relief(height)
    wet = shaded_relief(height, pool=pool)
    assert is_blue(wet[pool > 0]).all()
    assert not is_blue(plain[pool > 0]).any()
    assert np.array_equal(wet[pool <= 0], plain[pool <= 0])
    # deeper water is darker
    centre, shore = wet[20, 20].astype(int).sum(), wet[20, 8].astype(int).sum()
    assert pool[20, 20] > pool[20, 8] > 0 and centre < shore
    # no pool: the same picture as before
    assert np.array_equal(shaded_relief(height, pool=np.zeros_like(height)), plain)
    with pytest.raises(UserError):
        shaded_relief(height, pool=np.zeros((3, 3)))


def test_shade_command_draws_the_pools_of_a_state(tmp_path):
    height, pool = bowl()
    terrain = Terrain.from_heights(height, 1.0)
    terrain.pool[:] = pool
    state = tmp_path / "lake.npz"
    save_state(state, terrain, {})
    png = tmp_path / "lake.png"
    assert main(["shade", "--input", str(state), "--output", str(png)]) == 0
    import struct
    import zlib
    data = png.read_bytes()
    w, h = struct.unpack(">II", data[16:24])
    idat = data[data.index(b"IDAT") + 4:data.index(b"IEND") - 8]
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + 3 * w)[:, 1:]
    rgb = raw.reshape(h, w, 3)
    assert is_blue(rgb[pool > 0]).all() and not is_blue(rgb[pool <= 0]).any()
