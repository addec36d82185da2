"""A group id that names no group gets the same "did you mean" on every face: the library
(``Memory``) and the CLI as the API and MCP give it (tests/integration/test_mcp_schemas.py), and
the library's roster refuses an unknown group like its roster page does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from graphmem import Memory
from graphmem.core.config import get_settings
from graphmem.core.errors import NotFoundError
from tests.processes import ROOT

pytestmark = pytest.mark.neo4j

MSGS = [{"id": "m1", "speaker": "Ben", "text": "The ridge trail, then the lake loop.", "ts": "2026-05-10T09:00:00Z"}]


def test_library_and_cli_hint_at_a_group_like_the_one_named(make_group):
    gid = make_group("Trip")
    wrong = gid.lower()  # differs by case only
    unknown = make_group("nothing-like-it")
    with Memory.open(get_settings()) as mem:
        mem.append(gid, MSGS)
        calls = {
            "ask": lambda g: mem.ask(g, "Which trail?"),
            "search": lambda g: mem.search(g, "ridge"),
            "roster": lambda g: mem.roster(g),
            "roster_page": lambda g: mem.roster_page(g),
            "person": lambda g: mem.person(g, "Ben"),
            "jobs": lambda g: mem.jobs(g),
            "forget_group": lambda g: mem.forget_group(g),
        }
        for name, call in calls.items():
            with pytest.raises(NotFoundError) as caught:
                call(wrong)
            assert str(caught.value) == f"no group {wrong!r}; did you mean {gid!r}?", (name, caught.value)
            with pytest.raises(NotFoundError) as caught:
                call(unknown)
            assert str(caught.value) == f"no group {unknown!r}", (name, caught.value)
        assert [m.id for m in mem.roster(gid)] == ["Ben"]  # the group itself is untouched
    res = subprocess.run([sys.executable, "-m", "graphmem", "search", "--group", wrong, "ridge"],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "1000"}, cwd=ROOT)
    assert res.returncode == 1 and f"no group {wrong!r}; did you mean {gid!r}?" in res.stderr, res.stderr
