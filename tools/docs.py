"""Regenerate the parts of the docs that are derived from the code: the table of
terrain arrays (from simcore/fields.py and the process descriptors) in README.md and
docs/architecture.md, between ``<!-- fields:begin -->`` and ``<!-- fields:end -->``.

    python -m tools.docs          rewrite the tables
    python -m tools.docs --check  exit 1 if a table is out of date (the tests do this)
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from simcore.fields import markdown_table
from simcore.processes import FIELDS, PROCESSES

ROOT = Path(__file__).resolve().parent.parent
FILES = (ROOT / "README.md", ROOT / "docs" / "architecture.md")
BEGIN, END = "<!-- fields:begin -->", "<!-- fields:end -->"


def fields_section() -> str:
    """The generated block: one row per terrain array, then which process writes what."""
    writers = {name: [p.name for p in PROCESSES.values() if name in p.writes]
               for name in FIELDS}
    rows = markdown_table(FIELDS).splitlines()
    rows[0] += " written by |"
    rows[1] += "---|"
    for i, name in enumerate(FIELDS, start=2):
        rows[i] += (f" {', '.join(writers[name]) or FIELDS[name].kept_by or '(never changed)'}"
                    " |")
    note = ("Generated from `simcore/fields.py` and the process descriptors by "
            "`python -m tools.docs`. Unit `cell` = world length / cell size in simcore "
            "and in `.npz` states (`metadata[\"units\"]`); on the mesh the float "
            "attributes of `cell` arrays are in the object's local units.")
    return "\n".join([BEGIN, *rows, "", note, END])


def update(text: str, path: Path) -> str:
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no {BEGIN} ... {END} block")
    return pattern.sub(lambda _: fields_section(), text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only check, write nothing")
    args = ap.parse_args(argv)
    stale = []
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        new = update(text, path)
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print("out of date (run python -m tools.docs):", *map(str, stale))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
