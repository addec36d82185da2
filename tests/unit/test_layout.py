"""The package layout keeps its promises: no import cycle, no oversized module without a reason."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("graphmem", "api", "loaders")
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _top_level_imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """Modules of ours that ``path`` imports when it is imported (not inside functions or
    ``if TYPE_CHECKING``); ``from pkg import mod`` counts as importing ``pkg.mod``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def visit(stmts: list[ast.stmt]) -> None:
        for node in stmts:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name in known)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for a in node.names:
                    if f"{base}.{a.name}" in known:
                        out.add(f"{base}.{a.name}")
                    elif base in known:
                        out.add(base)

    visit(tree.body)
    out.discard(name)
    return out


def test_no_import_cycle():
    known = _modules()
    graph = nx.DiGraph()
    for name, path in known.items():
        graph.add_node(name)
        for dep in _top_level_imports(path, name, known):
            # importing a submodule runs its package's __init__ first; that edge is implied,
            # a package importing its own submodules is not a cycle
            if not name.startswith(dep + "."):
                graph.add_edge(name, dep)
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"import cycles: {cycles}"


def test_no_module_over_500_lines_without_a_reason():
    oversized = []
    for name, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_LINES:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if "Size (over 500 lines on purpose)" not in doc:
                oversized.append(f"{name} ({text.count(chr(10))} lines)")
    assert not oversized, f"split these or say why at the top: {oversized}"
