"""Build installable extension zips: stage the package, add the numba and llvmlite wheels
each platform needs (never numpy: Blender's own is used), then run Blender's own
``blender_ext.py build --split-platforms`` from the bpy wheel and validate.

    python build.py package [--platform linux-x64] [--python 3.11]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.stage import stage  # noqa: E402

PINS = ["numba==0.68.1", "llvmlite==0.50.0"]
PLATFORMS = {  # Blender platform -> pip platform tag (numba has no macos-x64/windows-arm64)
    "linux-x64": "manylinux_2_28_x86_64",
    "windows-x64": "win_amd64",
    "macos-arm64": "macosx_12_0_arm64",
}


def blender_scripts() -> Path:
    out = subprocess.run([sys.executable, "-c",
                          "import bpy; print(bpy.utils.system_resource('SCRIPTS'))"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip().splitlines()[-1])


def download_wheels(dest: Path, platforms: list[str], pythons: list[str]) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    for plat in platforms:
        for py in pythons:
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                   "--only-binary=:all:", "--python-version", py, "--platform",
                   PLATFORMS[plat], "-d", str(dest), *PINS]
            if subprocess.call(cmd) != 0:
                raise SystemExit(f"error: could not download wheels for {plat}, Python {py}")
    tags = {PLATFORMS[p].split("_", 2)[-1] if p != "windows-x64" else "win_amd64"
            for p in platforms}
    cps = {"cp" + py.replace(".", "") for py in pythons}
    return sorted(w for w in dest.glob("*.whl")
                  if any(t in w.name for t in tags) and any(f"-{c}-" in w.name for c in cps))


def build(platforms: list[str], pythons: list[str], out_dir: Path) -> list[Path]:
    pkg = stage(ROOT / "build" / "package")
    shutil.rmtree(pkg / "wheels", ignore_errors=True)
    shutil.rmtree(pkg / "__pycache__", ignore_errors=True)
    for cache in pkg.rglob("__pycache__"):
        shutil.rmtree(cache)
    wheels = download_wheels(ROOT / "build" / "wheels", platforms, pythons)
    (pkg / "wheels").mkdir()
    for w in wheels:
        shutil.copy2(w, pkg / "wheels" / w.name)
    manifest = (pkg / "blender_manifest.toml").read_text()
    listed = ",\n".join(f'  "./wheels/{w.name}"' for w in wheels)
    manifest = manifest.replace(
        'platforms = ["windows-x64", "linux-x64", "macos-arm64"]',
        "platforms = [" + ", ".join(f'"{p}"' for p in platforms) + "]\n\nwheels = [\n"
        + listed + ",\n]")
    (pkg / "blender_manifest.toml").write_text(manifest)
    scripts = blender_scripts()
    tool = scripts / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
    tags = scripts / "modules" / "_bpy_internal" / "extensions" / "tags.py"
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("terrain_erosion-*.zip"):
        old.unlink()
    for args in (["validate", f"--valid-tags={tags}", str(pkg)],
                 ["build", "--source-dir", str(pkg), "--output-dir", str(out_dir),
                  "--split-platforms", f"--valid-tags={tags}"]):
        if subprocess.call([sys.executable, str(tool), *args]) != 0:
            raise SystemExit(f"error: blender_ext.py {args[0]} failed")
    return sorted(out_dir.glob("terrain_erosion-*.zip"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platform", action="append", choices=sorted(PLATFORMS),
                    help="only this platform (repeatable; default: all)")
    ap.add_argument("--python", action="append", choices=["3.11", "3.13"],
                    help="Python of the target Blender: 3.11 = 4.2-5.0, 3.13 = 5.1+ "
                         "(default: both)")
    ap.add_argument("--output", default=str(ROOT / "dist"))
    args = ap.parse_args(argv)
    zips = build(args.platform or list(PLATFORMS), args.python or ["3.11", "3.13"],
                 Path(args.output))
    for z in zips:
        print(f"built {z} ({z.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
