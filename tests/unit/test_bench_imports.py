"""The benchmark and lab scripts call graphmem's public names only (issue 23): a bench that
imports ``_name`` from graphmem mirrors or leans on an internal, which then cannot move."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _private_imports(path: Path) -> list[str]:
    """``module.name`` for every underscore name imported from graphmem in ``path`` (functions
    included), and every underscore module of graphmem imported."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "graphmem":
            parts = node.module.split(".")
            found += [f"{node.module} (private module)"] if any(p.startswith("_") for p in parts) else []
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names
                      if a.name.split(".")[0] == "graphmem" and any(p.startswith("_") for p in a.name.split("."))]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__"
              and node.args and isinstance(node.args[0], ast.Constant)
              and str(node.args[0].value).startswith("graphmem")):
            found.append(f"__import__({node.args[0].value!r})")
    return found


def test_no_bench_script_imports_a_private_name_from_graphmem():
    scripts = sorted(BENCH.glob("*.py"))
    assert scripts, BENCH
    bad = {p.name: got for p in scripts if (got := _private_imports(p))}
    assert not bad, f"private graphmem imports in bench/: {bad}"


def test_the_check_sees_a_private_import(tmp_path):
    script = tmp_path / "lab.py"
    script.write_text("def f():\n    from graphmem.recall.pool import _fuse_once, fuse_recall\n"
                      "import graphmem._moved\n", encoding="utf-8")
    assert sorted(_private_imports(script)) == ["graphmem._moved", "graphmem.recall.pool._fuse_once"]
