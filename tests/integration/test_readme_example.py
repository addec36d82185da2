"""The README's "From Python" example runs as written on the public face (`from graphmem import Memory`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## From Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_library_example_runs_on_memory(store, schema):
    code = _example()
    assert "from graphmem import" in code and "Memory" in code
    gid = f"test-readme-{uuid.uuid4().hex[:8]}"
    code = code.replace('"trip"', repr(gid)) + "\nprint('ROWS', len(found.hits), result.message_ids[:1], report.messages_deleted)\n"
    try:
        out = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], cwd=ROOT,
                             capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert out.returncode == 0, out.stderr[-3000:]
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("ROWS")][-1]
        assert line.startswith("ROWS 3 ['")  # three hits, and the ask cited at least one message
        assert int(line.rsplit(" ", 1)[1]) >= 1  # Ben's messages were erased
        left = store.read_text("MATCH (m:Message {group_id: $g}) WHERE m.speaker = 'Ben' RETURN count(m) AS n", g=gid)
        assert left[0]["n"] == 0
    finally:
        from graphmem.groups.service import forget_group

        forget_group(store, gid)


def test_import_graphmem_loads_neither_the_driver_nor_the_model():
    code = ("import sys, graphmem; assert 'Memory' in graphmem.__all__; "
            "print(sorted(m for m in ('neo4j', 'torch', 'sentence_transformers', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
