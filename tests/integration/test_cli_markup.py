"""Chat text and names are data on the command line too: rich reads ``[...]`` in a printed string
as markup, so a display name ``[/]`` crashed ``graphmem roster`` / ``search`` / ``summary``
(MarkupError) and ``[link=...]`` or ``[bold]`` changed what the terminal showed. Table cells
are plain text now (``graphmem.cli.common.cells``)."""

from __future__ import annotations

import json
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


ESC_NAME = "Mal\x1b[2Jory"  # clear the screen
ESC_TEXT = "the ferry\x1b]52;c;cm0gLXJmIH4=\x07 is cancelled\x1b]8;;http://evil.example\x1b\\ click\x1b]8;;\x1b\\\r!"


def test_terminal_control_sequences_in_chat_text_are_shown_not_obeyed(store, embedder, group_id):
    """A chat text or name holding ESC sequences (clear the screen, write the clipboard with
    OSC 52, a hidden OSC 8 link) or a carriage return prints as visible ``\\x1b`` / ``\\x07`` /
    ``\\x0d`` escapes in every human-readable command, and stays byte-exact in the store and in
    ``--json`` output (``graphmem.cli.common.terminal_safe``)."""
    ingest_conversations(store, [conversation(group_id, [
        {"speaker": ESC_NAME, "text": ESC_TEXT}, {"speaker": "Ana", "text": "ok, the ferry then"}])], embedder)
    # (ask's evidence lays a message out on one line: its carriage return is a space there)
    shown_text = ESC_TEXT.split("\r")[0].replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    for args in (["roster", "--group", group_id], ["search", "--group", group_id, "ferry cancelled", "-k", "2"],
                 ["summary", "--group", group_id], ["ask", "--group", group_id, "Is the ferry cancelled?"],
                 ["message", "--group", group_id, "m0000"]):
        res = cli(*args)
        assert res.returncode == 0, (args, res.stderr[-1500:])
        for stream in (res.stdout, res.stderr):
            assert "\x1b" not in stream and "\x07" not in stream and "\r" not in stream, (args, stream[-800:])
        if args[0] == "roster":
            assert "Mal\\x1b[2Jory" in res.stdout, res.stdout
        if args[0] in ("search", "ask"):
            assert shown_text in res.stdout, (args, res.stdout[-1500:])
    raw = cli("message", "--group", group_id, "m0000", "--json")
    assert raw.returncode == 0 and json.loads(raw.stdout)["text"] == ESC_TEXT, raw.stdout[-800:]
    assert store.read_text("MATCH (m:Message {group_id: $g, speaker: $s}) RETURN m.text AS t",
                           g=group_id, s=ESC_NAME)[0]["t"] == ESC_TEXT


def test_two_people_of_one_name_are_told_apart_and_hints_quote_the_group(store, embedder, make_group):
    """A new-user trial: ``search`` showed two different people as "Alex", ``summary`` doubled
    the id ("Alex (U02ALEXA) (U02ALEXA)"), and a hint printed an id with a space unquoted
    (``graphmem derive --group Trip 2025`` breaks when pasted)."""
    gid = make_group("Trip 2025")
    ingest_conversations(store, [conversation(gid, [
        {"speaker": "Alex", "speaker_id": "U02ALEXA", "text": "the ferry leaves at nine"},
        {"speaker": "Alex", "speaker_id": "U03ALEXB", "text": "the ferry is cancelled"},
        {"speaker": "Mei", "speaker_id": "U01MEI", "text": "ferry or bus then?"}])], embedder)
    found = cli("search", "--group", gid, "ferry", "-k", "3")
    assert found.returncode == 0, found.stderr[-800:]
    assert "Alex (U02ALEXA)" in found.stdout and "Alex (U03ALEXB)" in found.stdout, found.stdout
    assert "Mei (U01MEI)" not in found.stdout  # a name nobody shares stays as it is
    summary = cli("summary", "--group", gid)
    assert summary.returncode == 0, summary.stderr[-800:]
    assert "Alex (U02ALEXA)" in summary.stdout and "(U02ALEXA) (U02ALEXA)" not in summary.stdout, summary.stdout
    assert f"graphmem derive --group '{gid}'" in summary.stdout, summary.stdout


def test_every_line_that_prints_a_group_id_prints_it_as_stored(store, embedder, make_group, tmp_path):
    """Group ids are data too, and the id rule allows ``[`` and ``]``: ``[bold]`` in an id was
    read as markup by the lines that print ids outside table cells (``stats``' group list,
    ``export``'s summary, ``derive``'s "nothing to derive"), so the id shown, the one an
    operator copies into the next command, was not the stored one. The consoles print plain
    text now; markup only where a call asks for it."""
    gid = make_group("[bold]team")
    ingest_conversations(store, [conversation(gid, [
        {"speaker": "Ana", "text": "the ferry is cancelled"}, {"speaker": "Ben", "text": "bus then"}])], embedder)
    stats = cli("stats")
    assert stats.returncode == 0, stats.stderr[-800:]
    assert f"{gid} (2 msgs)" in stats.stdout, stats.stdout[-1500:]
    exported = cli("export", "--group", gid, "--out", str(tmp_path / "g.jsonl"))
    assert exported.returncode == 0 and f"{gid}: " in exported.stdout, (exported.stdout, exported.stderr[-800:])
    summary = cli("summary", "--group", gid)
    assert summary.returncode == 0 and f"({gid})" in summary.stdout, (summary.stdout, summary.stderr[-800:])
    report = cli("derive", "--group", gid, "--report")
    assert report.returncode == 0 and f"group {gid}: no written segment" in report.stdout, (report.stdout,
                                                                                          report.stderr[-800:])
