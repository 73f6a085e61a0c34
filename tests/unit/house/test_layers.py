"""The house's layering: kbflow's modules import only modules of their own layer or below, and no package
has an import cycle (read from the source, every import counted, those inside functions too)."""

from __future__ import annotations

import ast
import pathlib

from conftest import REPO

ROOT = REPO / "kbflow"

#: the layers of the flow, lowest first; a module belongs to the first prefix it matches (longest wins)
LAYERS: list[tuple[str, ...]] = [
    # what knows nothing of the flow: errors, lazy imports, the tables' schemas, how text is read
    ("kbflow.errors", "kbflow._lazy", "kbflow.schema", "kbflow.text"),
    ("kbflow.config",),
    ("kbflow.records",),  # records, their ids, scopes, labels and pictures
    ("kbflow.lake", "kbflow.usage"),  # the lake's tables; who uses them (keys, logs, insights)
    ("kbflow.sources", "kbflow.chunk", "kbflow.embed"),
    ("kbflow.index",),
    ("kbflow.retrieve",),
    ("kbflow.claims",),
    ("kbflow.pipeline", "kbflow.evaluate"),
    ("kbflow.service", "kbflow.cli", "kbflow"),  # "kbflow": the package itself, the public API
]

#: upward imports still in the house, each to move up in its next pass (none left)
KNOWN_UPWARD: set[tuple[str, str]] = set()


def _module(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in ROOT.rglob("*.py")}


def _imports(name: str, path: pathlib.Path) -> set[str]:
    """The kbflow modules ``name`` imports, wherever the import is (``from kbflow import schema`` is
    ``kbflow.schema``; a name that is not a module is the package's own)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = list(ast.walk(tree))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "kbflow")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            if base.split(".")[0] != "kbflow":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in MODULES else base)
    return out


def _layer(module: str) -> int:
    best, found = -1, None
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), i
    assert found is not None, f"{module} is in no layer of tests/test_layers.py"
    return found


def test_every_module_imports_only_its_own_layer_or_below():
    upward = set()
    for name, path in MODULES.items():
        for target in _imports(name, path):
            if _layer(target) > _layer(name):
                upward.add((name, target))
    new = sorted(upward - KNOWN_UPWARD)
    assert not new, f"imports reaching a higher layer: {new}"
    gone = sorted(KNOWN_UPWARD - upward)
    assert not gone, f"no longer imported, strike from KNOWN_UPWARD: {gone}"


def _cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan), each a set of modules that import each
    other, directly or through one another."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                out.add(frozenset(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return out


#: modules of one package that still import each other (inside functions), to be untangled in the house's
#: next pass; a new cycle fails, and a cycle broken must be struck from here
KNOWN_CYCLES: set[frozenset[str]] = set()


def test_no_package_has_an_import_cycle():
    def package(module: str) -> str:
        return module.rpartition(".")[0]

    graph = {
        name: {t for t in _imports(name, path) if t in MODULES and t != name and package(t) == package(name)}
        for name, path in MODULES.items()
    }
    cycles = _cycles(graph)
    new = [sorted(c) for c in cycles - KNOWN_CYCLES]
    assert not new, f"import cycles inside a package: {new}"
    gone = [sorted(c) for c in KNOWN_CYCLES - cycles]
    assert not gone, f"cycles no longer there, strike from KNOWN_CYCLES: {gone}"


def test_the_fusion_names_config_accepts_are_the_fusions_retrieval_has():
    from kbflow.config import FUSION_NAMES
    from kbflow.retrieve.fusion import FUSIONS

    assert tuple(FUSIONS) == FUSION_NAMES
