"""The built extension zip installs into a clean Blender user folder, enables without
policy warnings, loads numba from its bundled wheels and erodes a grid."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

INSTALL_AND_RUN = r"""
import sys, numpy as np, bpy
zip_path = sys.argv[1]
bpy.ops.extensions.package_install_files(filepath=zip_path, repo='user_default',
                                         enable_on_install=True)
name = 'bl_ext.user_default.terrain_erosion'
assert name in bpy.context.preferences.addons, 'not enabled'
import addon_utils
addon_utils._extensions_warnings_get._is_first = True
warnings = addon_utils._extensions_warnings_get()
assert not warnings, warnings
mod = sys.modules[name]
bpy.ops.mesh.primitive_grid_add(x_subdivisions=23, y_subdivisions=23)
obj = bpy.context.active_object
me = obj.data
co = np.empty(len(me.vertices) * 3, np.float32)
me.attributes['position'].data.foreach_get('vector', co)
co[2::3] = np.sin(co[0::3] * 3) * 0.3 + co[1::3] * 0.2
me.attributes['position'].data.foreach_set('vector', co)
code = mod.batch.main(['--object', obj.name, '--particles', '2000'])
assert code == 0, code
assert 'te_sediment' in me.attributes
print('PACKAGE-OK')
"""


def test_built_zip_installs_enables_and_erodes(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, str(ROOT / "tools" / "package.py"),
                            "--platform", "linux-x64", "--python", "3.11",
                            "--output", str(dist)], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    zips = list(dist.glob("terrain_erosion-*-linux_x64.zip"))
    assert len(zips) == 1
    import zipfile
    names = zipfile.ZipFile(zips[0]).namelist()
    assert "blender_manifest.toml" in names and "__init__.py" in names
    assert "simcore/hydraulic.py" in names and "presets/default.toml" in names
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]
    assert not [n for n in names if "numpy" in n], "never bundle numpy"
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    env.pop("NUMBA_CACHE_DIR", None)
    run = subprocess.run([sys.executable, "-c", INSTALL_AND_RUN, str(zips[0])], env=env,
                         capture_output=True, text=True, cwd=tmp_path)
    assert "PACKAGE-OK" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
    bundled = list((tmp_path / "user").rglob(".local/lib/python3.11/site-packages/numba/"
                                            "__init__.py"))
    assert bundled, "the numba wheel was installed into the extensions' site-packages"
