"""The package's import graph: no import cycles, and no module imports a higher layer.

Layer order (docs/architecture.md): errors, signature, fmt, types, _version < storage < stats
< llm < exec < data < retrieval < metrics < questions
< analysis (judging < answers < exam < gating) < report < api < serve < cli and the package itself.  Every
``import`` statement counts, at module level or inside a function (a lazy import is still a dependency),
except ``from ragexam import __version__``, which reads the version (``ragexam._version``).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS = (
    ("ragexam._version", "ragexam._lazy", "ragexam.errors", "ragexam.signature", "ragexam.fmt", "ragexam.types"),
    ("ragexam.storage",),
    ("ragexam.stats",),
    ("ragexam.llm",),
    ("ragexam.exec",),
    ("ragexam.data",),
    ("ragexam.retrieval",),
    ("ragexam.metrics",),
    ("ragexam.questions",),
    ("ragexam.analysis.judging",),
    ("ragexam.analysis.answers",),
    ("ragexam.analysis.exam",),
    ("ragexam.analysis.gating", "ragexam.analysis"),
    ("ragexam.report",),
    ("ragexam.api",),
    ("ragexam.serve",),
)


def layer(module: str) -> int:
    """The index of ``module``'s layer; anything not listed (cli, api, the package) is the top."""
    for i, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return len(LAYERS)


def modules(src: Path, package: str = "ragexam") -> Dict[str, Path]:
    out = {}
    for path in (src / package).rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(src: Path, package: str = "ragexam") -> Dict[str, Set[str]]:
    """``{module: {module it imports}}`` over the package (modules only; a name imported from a
    module counts as that module, a submodule imported from a package as the submodule)."""
    mods = modules(src, package)

    def resolve(name: str) -> str:
        while name not in mods and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    graph: Dict[str, Set[str]] = {}
    for mod, path in mods.items():
        deps: Set[str] = set()
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(resolve(a.name) for a in node.names if a.name.split(".")[0] == package)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".")[: len(mod.split(".")) - node.level + (1 if is_pkg else 0)]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                if name.split(".")[0] != package:
                    continue
                for a in node.names:
                    if name == package and a.name == "__version__":
                        deps.add(f"{package}._version")
                    elif f"{name}.{a.name}" in mods:
                        deps.add(f"{name}.{a.name}")
                    else:
                        deps.add(resolve(name))
        deps.discard(mod)
        graph[mod] = deps
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def upward(graph: Dict[str, Set[str]]) -> List[str]:
    return sorted(f"{m} -> {t}" for m, deps in graph.items() for t in deps if layer(t) > layer(m))


def test_no_import_cycles():
    assert cycles(imports(SRC)) == []


def test_no_module_imports_a_higher_layer():
    assert upward(imports(SRC)) == []


def test_the_checks_find_a_cycle_and_an_upward_import(tmp_path):
    pkg = tmp_path / "ragexam"
    for rel, text in {
        "__init__.py": "",
        "storage/__init__.py": "",
        "storage/a.py": "def f():\n    from ragexam.report import b  # lazy, still a dependency\n",
        "report/__init__.py": "",
        "report/b.py": "from ragexam.storage.a import f\n",
        "data/__init__.py": "",
        "data/x.py": "from . import y\n",
        "data/y.py": "from ragexam.data import x\nfrom ragexam import __version__\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text, encoding="utf-8")
    graph = imports(tmp_path)
    assert graph["ragexam.data.y"] == {"ragexam.data.x", "ragexam._version"}
    assert cycles(graph) == [["ragexam.data.x", "ragexam.data.y"], ["ragexam.report.b", "ragexam.storage.a"]]
    assert upward(graph) == ["ragexam.storage.a -> ragexam.report.b"]
