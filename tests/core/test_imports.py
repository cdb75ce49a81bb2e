"""The house in layers: every import in simcore and addon goes down the layers of
docs/architecture.md, no module imports another module's private name, and no two
modules import each other (directly or round a circle). Imports inside functions count
like the ones at the top: a lazy import is still a dependency."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: simcore, lowest layer first: a module imports its own layer or a lower one. The model
#: is the package's top level; each folder is a layer. ``x.*`` is a folder and all in
#: it; a plain name is that module only.
SIMCORE_LAYERS = (
    ("model", ("simcore", "simcore.errors", "simcore.params", "simcore.fields",
               "simcore.fileio", "simcore.process", "simcore.rock", "simcore.terrain")),
    ("kernels", ("simcore.kernels.*",)),
    ("algorithms", ("simcore.algorithms.*",)),
    ("processes", ("simcore.processes.*",)),
    ("engine", ("simcore.engine.*",)),
    ("generators", ("simcore.generators.*",)),
    ("analysis", ("simcore.analysis.*",)),
    ("formats", ("simcore.formats.*",)),
    ("pipeline", ("simcore.pipeline.*",)),
    ("distributed", ("simcore.distributed.*",)),
    ("cli", ("simcore.cli.*", "simcore.__main__")),
)

#: the one import that goes up, and why: the terrain's arrays are the core ones plus
#: those the processes declare, found by discovery (``Terrain`` asks the registry when
#: it makes its arrays; the processes' modules import ``Terrain`` for its type)
ALLOWED_UP = {("simcore.terrain", "simcore.processes")}

#: addon, lowest first; simcore is below all of it (addon -> simcore, never back). The
#: mesh data layer (grids, the run, masks, write-back; no UI classes), the shared UI
#: (settings, the error boundary, panel bases), then one module per feature (its
#: operators, panels and properties), then registration.
ADDON_LAYERS = (
    ("simcore", ("addon.simcore.*",)),
    ("data", ("addon.data.*",)),
    ("ui", ("addon.ui.*",)),
    ("features", ("addon.features.*",)),
    ("registration", ("addon",)),
)


def _modules(package: str) -> dict[str, Path]:
    base = ROOT / package
    out = {}
    for path in sorted(base.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(importer: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".") if is_pkg else importer.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(modules: dict[str, Path]) -> list[tuple[str, str, str | None, int]]:
    """(importer, imported module, imported attribute or None, line) for every import
    of a module of ``modules`` (the add-on's ``.simcore`` is simcore itself)."""
    found = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(name, is_pkg, node)
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in modules:
                        found.append((name, sub, None, node.lineno))
                    elif target in modules:
                        found.append((name, target, alias.name, node.lineno))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        found.append((name, alias.name, None, node.lineno))
    return found


def _layer(module: str, layers) -> int:
    rank = None
    for i, (_, names) in enumerate(layers):
        for p in names:
            folder = p.removesuffix(".*")
            if module == folder or (p.endswith(".*") and module.startswith(folder + ".")):
                rank = i
    if rank is None:
        raise AssertionError(f"{module} is in no layer of tests/core/test_imports.py: add its "
                             "folder to a layer (and to docs/architecture.md)")
    return rank


def layer_violations(modules, layers) -> list[str]:
    bad = []
    for importer, target, _, line in imports_of(modules):
        a, b = _layer(importer, layers), _layer(target, layers)
        if b > a and (importer, target) not in ALLOWED_UP:
            bad.append(f"{importer}:{line} imports {target} ({layers[a][0]} -> "
                       f"{layers[b][0]}: up a layer)")
    return bad


def private_violations(modules) -> list[str]:
    return [f"{importer}:{line} imports {target}.{attr} (a private name of another module)"
            for importer, target, attr, line in imports_of(modules)
            if attr and attr.startswith("_") and not attr.startswith("__")
            and target != importer]


def circles(modules) -> list[list[str]]:
    """Strongly connected groups of modules (Tarjan); a package counts as its
    ``__init__``."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for importer, target, _, _ in imports_of(modules):
        if target != importer:
            graph[importer].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def _addon_modules() -> dict[str, Path]:
    mods = _modules("addon")
    # the staged package puts simcore inside the add-on: ``.simcore`` from addon/x.py
    for name, path in _modules("simcore").items():
        mods["addon." + name] = path
    return mods


def test_simcore_imports_go_down_its_layers():
    assert layer_violations(_modules("simcore"), SIMCORE_LAYERS) == []


def test_addon_imports_go_down_its_layers():
    mods = {k: v for k, v in _addon_modules().items()}
    bad = [v for v in layer_violations(mods, ADDON_LAYERS)
           if not v.startswith("addon.simcore")]
    assert bad == []


def test_no_module_imports_a_private_name_of_another():
    bad = private_violations(_modules("simcore")) + [
        v for v in private_violations(_addon_modules()) if not v.startswith("addon.simcore")]
    assert bad == []


@pytest.mark.parametrize("package", ["simcore", "addon"])
def test_no_import_circles(package):
    mods = _modules("simcore") if package == "simcore" else _addon_modules()
    # a package's __init__ that re-exports its own modules is not a circle of two layers
    assert circles(mods) == []


def test_the_checks_find_a_planted_violation(tmp_path):
    """The walker is not blind: a kernel that imports the simulation, a process that
    imports a private helper of another, and two modules that import each other are
    each found."""
    pkg = tmp_path / "simcore"
    for rel, text in {
        "__init__.py": "",
        "terrain.py": "",
        "kernels/__init__.py": "",
        "kernels/primitives.py": "from ..engine.simulation import Simulation\n",
        "engine/__init__.py": "",
        "engine/simulation.py": "def run():\n    from ..kernels import primitives\n",
        "processes/__init__.py": "",
        "processes/a.py": "from .b import _helper\n",
        "processes/b.py": "def _helper():\n    pass\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        mods = _modules("simcore")
        assert layer_violations(mods, SIMCORE_LAYERS) == [
            "simcore.kernels.primitives:1 imports simcore.engine.simulation "
            "(kernels -> engine: up a layer)"]
        assert private_violations(mods) == [
            "simcore.processes.a:1 imports simcore.processes.b._helper "
            "(a private name of another module)"]
        assert circles(mods) == [["simcore.engine.simulation", "simcore.kernels.primitives"]]
    finally:
        ROOT = saved
