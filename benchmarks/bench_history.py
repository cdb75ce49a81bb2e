"""An erosion history of 10,000 entries (``--quick``: 2,000) on a 64² grid in the bpy
module: the time to record them, the memory they take (resident memory of the process
before and after, and the entries' JSON text), the History panel's draw (its draw()
and the list's visible rows, as Blender calls them: the list itself is drawn by
Blender's C code, which filters and scrolls without calling Python per entry), reading
every entry as Rebuild does before it runs, the export's history list, and saving and
opening the .blend. Every 10th entry carries a 64² rain mask (a gradient), the rest
the default preset's settings alone."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _rss() -> int:
    """Resident memory of this process, bytes (Linux: /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def run(quick: bool) -> list[dict]:
    import bpy

    from tools.stage import import_staged
    te = import_staged()
    from terrain_erosion.simcore.formats import history as fmt
    from terrain_erosion.simcore.formats.presets import find_preset

    sys_path = str(ROOT / "tests")
    import sys
    if sys_path not in sys.path:
        sys.path.insert(0, sys_path)
    from blender_helpers import PanelRecorder, add_grid

    count = 2000 if quick else 10_000
    bpy.ops.wm.read_factory_settings(use_empty=True)
    te.register()
    try:
        obj = add_grid(bpy, n=64, name="Hills")
        s = obj.terrain_erosion
        preset = find_preset("default")
        params = preset.enabled_params()
        rain = np.linspace(0, 1, 64 * 64).reshape(64, 64)
        before = _rss()
        t0 = time.perf_counter()
        for i in range(count):
            entry = fmt.run_entry("erode" if i % 3 else "step", preset.name, params, i, 0,
                                  4, 0.0, 1.0, None, True, True, False,
                                  {"rain": rain} if i % 10 == 0 else {})
            te.data.history.record(s, entry)
        record = time.perf_counter() - t0
        after = _rss()
        text = sum(len(e.data) for e in s.history)
        panel = bpy.types.TERRAIN_PT_history
        ul = bpy.types.TERRAIN_UL_history

        def draw() -> None:
            panel.draw(type("P", (), {"layout": PanelRecorder([])})(), bpy.context)
            for i in range(s.history_index - 3, s.history_index + 1):  # 4 visible rows
                ul.draw_item(None, bpy.context, PanelRecorder([]), None, s.history[i], 0,
                             None, "", i)

        draws = []
        for _ in range(20):
            t = time.perf_counter()
            draw()
            draws.append(time.perf_counter() - t)
        t = time.perf_counter()
        recipes = te.data.history.enabled_recipes(s)
        parse = time.perf_counter() - t
        assert len(recipes) == count
        t = time.perf_counter()
        exported = json.dumps(te.data.history.exported(s))
        export = time.perf_counter() - t
        with tempfile.TemporaryDirectory() as folder:
            path = str(Path(folder) / "history.blend")
            t = time.perf_counter()
            bpy.ops.wm.save_as_mainfile(filepath=path, compress=False)
            save = time.perf_counter() - t
            size = Path(path).stat().st_size
            t = time.perf_counter()
            bpy.ops.wm.open_mainfile(filepath=path)
            load = time.perf_counter() - t
        return [{"name": f"history of {count:,} entries (64x64 grid)",
                 "record_s": round(record, 2),
                 "rss_growth_mb": round((after - before) / 2**20, 1),
                 "json_text_mb": round(text / 2**20, 1),
                 "panel_draw_ms_median": round(1e3 * float(np.median(draws)), 2),
                 "panel_draw_ms_max": round(1e3 * max(draws), 2),
                 "read_all_entries_s": round(parse, 2),
                 "export_list_s": round(export, 2),
                 "export_list_mb": round(len(exported) / 2**20, 1),
                 "save_s": round(save, 2), "blend_mb": round(size / 2**20, 1),
                 "open_s": round(load, 2)}]
    finally:
        te.unregister()


if __name__ == "__main__":
    for row in run(quick=False):
        print(row)
