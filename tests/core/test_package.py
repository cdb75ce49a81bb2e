"""The built extension zip (cp311 + cp313 wheels) installs into a clean Blender user folder
of the running Blender line, enables without policy warnings, loads numba from its bundled
wheels and erodes a grid with the default preset, trees included."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tools.package import dump_toml

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.blender
PY_TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"

INSTALL = r"""
import sys, bpy
bpy.ops.extensions.package_install_files(filepath=sys.argv[1], repo='user_default',
                                         enable_on_install=True)
assert 'bl_ext.user_default.terrain_erosion' in bpy.context.preferences.addons, 'not enabled'
print('INSTALLED')
"""

# A fresh Blender session: the extensions' site-packages now come before the venv's, so
# numba is loaded from the zip's wheels, as in a real Blender.
ENABLE_AND_RUN = r"""
import sys, numpy as np, bpy, addon_utils
name = 'bl_ext.user_default.terrain_erosion'
addon_utils.enable(name, default_set=True)
addon_utils._extensions_warnings_get._is_first = True
warnings = addon_utils._extensions_warnings_get()
assert not warnings, warnings
mod = sys.modules[name]
import numba
print('NUMBA-FROM', numba.__file__)
prefs = bpy.context.preferences.addons[name].preferences
prefs.threads = 1
assert mod.simcore.kernels.parallel.threads() == 1, 'the thread cap in the preferences applies'
prefs.threads = 0
assert mod.simcore.kernels.parallel.threads() == mod.simcore.kernels.parallel.most_threads()
bpy.ops.mesh.primitive_grid_add(x_subdivisions=31, y_subdivisions=31, size=4)
obj = bpy.context.active_object
me = obj.data
co = np.empty(len(me.vertices) * 3, np.float32)
me.attributes['position'].data.foreach_get('vector', co)
co[2::3] = np.sin(co[0::3] * 2) * 0.4 + co[1::3] * 0.3
me.attributes['position'].data.foreach_set('vector', co)
code = mod.features.batch.main(['--object', obj.name, '--preset', 'default', '--particles', '3000'])
assert code == 0, code
s = obj.terrain_erosion
assert s.trees.enabled and s.droplets.enabled and s.hydrology.enabled, 'the default preset'
assert 'te_sediment' in me.attributes and 'te_trees' in me.attributes
trees = s.trees_object
assert trees is not None and len(trees.data.vertices) > 0, 'trees were planted'
dg = bpy.context.evaluated_depsgraph_get()
inst = [i for i in dg.object_instances if i.is_instance and i.parent.name == trees.name]
assert len(inst) == len(trees.data.vertices), (len(inst), len(trees.data.vertices))
print('TREES', len(inst))
print('PACKAGE-OK')
"""


def test_manifest_writer_round_trips():
    data = {"id": "x", "n": 3, "ok": True, "s": 'quote " and \\ back',
            "wheels": ["./wheels/a-1-cp311-cp311-win_amd64.whl"] * 5,
            "permissions": {"files": "Read"}, "build": {"paths": ["a", "b"]}}
    assert tomllib.loads(dump_toml(data)) == data


@pytest.mark.cold
def test_built_zip_installs_enables_and_erodes_with_trees(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-m", "tools.package", "--platform", "linux-x64",
                            "--output", str(dist)], capture_output=True, text=True, cwd=ROOT)
    assert build.returncode == 0, build.stdout + build.stderr
    zips = list(dist.glob("terrain_erosion-*-linux_x64.zip"))
    assert len(zips) == 1
    names = zipfile.ZipFile(zips[0]).namelist()
    assert "blender_manifest.toml" in names and "__init__.py" in names
    assert "simcore/processes/droplets.py" in names and "presets/default.toml" in names
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]
    assert not [n for n in names if "numpy" in n], "never bundle numpy"
    wheels = sorted(n for n in names if n.endswith(".whl"))
    for tag in ("cp311", "cp313"):
        for dist_name in ("numba", "llvmlite"):
            assert [w for w in wheels if w.startswith(f"wheels/{dist_name}-")
                    and f"-{tag}-" in w and "x86_64" in w], (dist_name, tag, wheels)
    manifest = tomllib.loads(zipfile.ZipFile(zips[0]).read("blender_manifest.toml").decode())
    assert manifest["build"]["generated"]["platforms"] == ["linux-x64"]

    user = tmp_path / "user"
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(user)}
    env.pop("NUMBA_CACHE_DIR", None)
    install = subprocess.run([sys.executable, "-c", INSTALL, str(zips[0])], env=env,
                             capture_output=True, text=True, cwd=tmp_path)
    assert "INSTALLED" in install.stdout, install.stdout[-3000:] + install.stderr[-3000:]
    run = subprocess.run([sys.executable, "-c", ENABLE_AND_RUN], env=env,
                         capture_output=True, text=True, cwd=tmp_path)
    assert "PACKAGE-OK" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
    site = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    numba_from = next(ln for ln in run.stdout.splitlines() if ln.startswith("NUMBA-FROM"))
    assert f".local/lib/{site}/site-packages/numba" in numba_from, numba_from
    installed = {p.name.split("-")[0] for p in user.rglob("*.dist-info")}
    assert {"numba", "llvmlite"} <= installed
    cached = list(user.rglob(f"numba_cache/**/*.py{PY_TAG[2:]}.nbi"))
    assert cached, "kernels are cached in the extension's user folder"
