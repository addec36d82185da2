"""Chat text and names are data on the command line too: rich reads ``[...]`` in a printed string
as markup, so a display name ``[/]`` crashed ``graphmem roster`` / ``search`` / ``summary``
(MarkupError) and ``[link=...]`` or ``[bold]`` changed what the terminal showed. Table cells
are plain text now (``graphmem.cli.common.cells``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from graphmem.verbatim.ingest import ingest_conversations
from tests.factories import conversation

pytestmark = pytest.mark.neo4j
NAME = "[/]Mal[link=http://evil.example]ory"
TEXT = "[bold red]the ferry[/] is cancelled [link=http://evil.example]click[/link]"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphmem", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "400"})


def test_names_and_texts_print_as_written(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, [
        {"speaker": NAME, "text": TEXT}, {"speaker": "Ana", "text": "ok, the ferry then"}])], embedder)
    for args in (["roster", "--group", group_id], ["search", "--group", group_id, "ferry cancelled", "-k", "2"],
                 ["summary", "--group", group_id], ["groups", "--limit", "1000"]):
        res = cli(*args)
        assert res.returncode == 0 and "Traceback" not in res.stderr, (args, res.stderr[-1500:])
        if args[0] != "groups":
            assert NAME in res.stdout, (args, res.stdout[-1500:])
    assert TEXT in cli("search", "--group", group_id, "ferry cancelled", "-k", "2").stdout
