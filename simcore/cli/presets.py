"""``python -m simcore presets``: the shipped presets, one line each."""

from __future__ import annotations

import argparse

from ..errors import UserError


def add_parser(sub) -> None:
    p = sub.add_parser("presets", help="list the shipped presets")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..formats.presets import load_preset, preset_files

    for name, path in preset_files().items():
        try:
            p = load_preset(path)
        except UserError as exc:
            print(f"{name:16s} BROKEN: {exc}")
            continue
        print(f"{name:16s} {p.name}: {p.description} "
              f"[{', '.join(p.enabled_params())}; {p.particles} particles]")
    return 0
