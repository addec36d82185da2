"""``graphmem neo4j password`` (issue 24, point 2): prints the local store's password on stdout
alone, says on stderr where it came from, and the environment variable wins. No database."""

from __future__ import annotations

import os
import subprocess
import sys

from graphmem.core.config import password_file


def _run(home, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "GRAPHMEM_NEO4J_PASSWORD"}
    return subprocess.run([sys.executable, "-m", "graphmem", "neo4j", "password"], capture_output=True, text=True,
                          env={**base, "GRAPHMEM_HOME": str(home), "COLUMNS": "1000", **env}, timeout=120)


def test_prints_the_stored_password_and_the_variable_wins(tmp_path):
    home = tmp_path / "gm"
    res = _run(home)  # no store yet: nothing to print
    assert res.returncode == 1 and "graphmem neo4j start" in res.stderr and res.stdout == ""
    home.mkdir()
    password_file(home).write_text("abc-from-file")
    res = _run(home)
    assert res.returncode == 0 and res.stdout == "abc-from-file\n"
    assert str(password_file(home).resolve()) in res.stderr
    res = _run(home, GRAPHMEM_NEO4J_PASSWORD="xyz-from-env")
    assert res.returncode == 0 and res.stdout == "xyz-from-env\n" and "GRAPHMEM_NEO4J_PASSWORD" in res.stderr


def test_a_new_password_is_never_taken_for_an_option():
    """``neo4j-admin dbms set-initial-password <password>`` read a password beginning with ``-``
    as an option and the first start failed ('Missing required parameter'): passwords are
    letters and digits only, 32 of them."""
    from graphmem.store.local_server import new_password

    seen = {new_password() for _ in range(2000)}
    assert len(seen) == 2000 and all(len(p) == 32 and p.isalnum() and p.isascii() for p in seen)
