"""The package layout keeps its promises: no import cycle anywhere, dependencies point down the
layer table, the library never imports the HTTP shell or the format parsers, and nothing in the
repository imports a path that moved.

Every ``import`` counts, at module level, inside functions and relative ones alike; only imports
under ``if TYPE_CHECKING:`` are left out (they never run). A long module is a warning, not a
failure: the size says where to look, not what to do.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import networkx as nx
import pytest

from graphmem._moved import MOVED

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("graphmem", "api", "loaders")
LONG_MODULE_LINES = 500

#: layer of each part (longest matching prefix wins); a module may import its own layer or lower.
LAYERS: dict[str, int] = {
    "graphmem._moved": 0,
    "graphmem.core": 0,
    "graphmem.llm": 0,
    "loaders": 1,  # format parsers: typed records from files, never the store
    "graphmem.store": 1,
    "graphmem.verbatim": 2,
    "graphmem.recall": 3,
    "graphmem.derived": 3,
    # the Runtime composes the store, the embedder, the models and the recall cache; the query
    # and group services take it (graphmem/runtime.py)
    "graphmem.runtime": 4,
    "graphmem.query": 4,
    "graphmem.groups": 4,
    # the faces: they compose the library with the parsers and the HTTP shell
    "graphmem.facade": 5,
    "graphmem.analyst": 5,
    "graphmem.access": 5,  # API keys and their group scopes (API and MCP)
    "graphmem.boundary": 5,  # the ASGI boundary in front of the API and MCP over HTTP
    # uvicorn loads this protocol by import string in each server process, so it reads its
    # setting itself, as a shell does
    "graphmem.boundary_h11": 6,
    "graphmem.views": 5,
    "graphmem.ogm": 5,
    "graphmem.client": 5,
    "graphmem.mcp_args": 5,  # the typed arguments of the MCP tools and their refusals
    "graphmem.mcp_server": 6,
    "graphmem.mcp_stdio": 6,  # the stdio transport of the MCP server (graphmem mcp)
    "graphmem.eval": 6,
    "graphmem.train": 6,
    "api": 6,
    "graphmem.cli": 7,
    "graphmem.__main__": 7,
    "graphmem": 7,  # the package's public face re-exports from every layer below it
}
LAYER_NAMES = {0: "core", 1: "store/loaders", 2: "verbatim", 3: "recall/derived", 4: "query/groups",
               5: "faces", 6: "shells", 7: "command line and public face"}


def _modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """Modules of ours that ``path`` imports anywhere (functions included, ``TYPE_CHECKING``
    blocks left out); ``from pkg import mod`` counts as importing ``pkg.mod``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if "TYPE_CHECKING" in ast.unparse(node.test):
                for n in node.orelse:
                    self.visit(n)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            for a in node.names:
                mod = a.name
                while mod and mod not in known:
                    mod = mod.rpartition(".")[0]
                if mod:
                    out.add(mod)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                if f"{base}.{a.name}" in known:
                    out.add(f"{base}.{a.name}")
                elif base in known:
                    out.add(base)

    Visitor().visit(tree)
    out.discard(name)
    return out


def _layer(name: str) -> int:
    best = max((p for p in LAYERS if name == p or name.startswith(p + ".")), key=len, default=None)
    assert best is not None, f"{name} has no layer: add its package to LAYERS in {__file__}"
    return LAYERS[best]


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    known = _modules()
    g = nx.DiGraph()
    for name, path in known.items():
        g.add_node(name)
        for dep in _imports(path, name, known):
            # importing a submodule runs its package's __init__ first; that edge is implied,
            # a package importing its own submodules is not a cycle
            if not name.startswith(dep + "."):
                g.add_edge(name, dep)
    return g


def test_no_import_cycle_function_level_included(graph: nx.DiGraph) -> None:
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"import cycles: {cycles}"


def test_dependencies_point_down_the_layer_table(graph: nx.DiGraph) -> None:
    upward = []
    for a, b in graph.edges:
        la, lb = _layer(a), _layer(b)
        if lb > la and not b == "graphmem":  # `from graphmem import __version__` is fine anywhere
            upward.append(f"{a} ({LAYER_NAMES[la]}) imports {b} ({LAYER_NAMES[lb]})")
    assert not upward, "imports against the layer table:\n" + "\n".join(sorted(upward))


def test_the_library_imports_neither_the_http_shell_nor_the_parsers(graph: nx.DiGraph) -> None:
    bad = [f"{a} -> {b}" for a, b in graph.edges
           if a.startswith("graphmem") and _layer(a) < 6 and (b == "api" or b.startswith(("api.", "loaders")))]
    assert not bad, bad


def test_nothing_in_the_repository_imports_a_moved_path() -> None:
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        if any(part in {".venv", ".git", ".graphmem"} for part in path.parts) or path.name == "_moved.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            hit = [n for n in names if n in MOVED or n == "api.schemas"]
            if hit:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {hit[0]}")
    assert not offenders, offenders


def test_long_modules_are_a_warning_not_a_rule() -> None:
    for name, path in _modules().items():
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > LONG_MODULE_LINES:
            warnings.warn(f"{name} has {lines} lines (over {LONG_MODULE_LINES}): split it where it has two jobs",
                          UserWarning, stacklevel=1)
