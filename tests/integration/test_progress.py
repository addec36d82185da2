"""Progress that moves (issue 28, item 6): ingest with embedding and `graphmem embed` count
messages as they are encoded, against a known total, not once per written batch."""

from __future__ import annotations

import re

import pytest

from graphmem.core.embed import Embedder
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.verbatim.vectors import embed_group
from tests.factories import conversation

pytestmark = pytest.mark.neo4j


def rows(n: int) -> list[dict]:
    return [{"id": f"p{i}", "speaker": "Ana", "text": f"note {i} about the trip plans",
             "ts": f"2026-01-01T10:{i // 60:02d}:{i % 60:02d}"} for i in range(n)]


def counts(err: str, total: int) -> list[int]:
    return [int(m) for m in re.findall(rf"(\d+)/{total}\b", err)]


def test_ingest_and_embed_bars_move_while_encoding(store, group_id, capfd):
    small = Embedder(batch_size=16, sentence_vectors=False)
    ingest_conversations(store, [conversation(group_id, rows(96))], small, batch_size=1000, progress=True)
    seen = counts(capfd.readouterr().err, 96)
    assert seen and seen[-1] == 96
    assert any(0 < n < 96 for n in seen), seen  # one written batch, yet the bar moved inside it

    later = group_id + "-later"
    try:
        ingest_conversations(store, [conversation(later, rows(80))], None, embed="later")
        capfd.readouterr()
        embed_group(store, small, later, batch_size=1000, progress=True)
        seen = counts(capfd.readouterr().err, 80)  # the total is known: tqdm shows n/80 and an ETA
        assert seen and seen[-1] == 80 and any(0 < n < 80 for n in seen), seen
    finally:
        from graphmem.groups.service import forget_group

        forget_group(store, later)


def cli_with_tty_stderr(*args: str) -> tuple[int, str, str]:
    """Run ``graphmem ARGS`` with stderr on a pseudo-terminal (as in a user's shell) and stdout on
    a pipe; returns (exit code, stdout, what the terminal showed)."""
    import os
    import pty
    import subprocess
    import sys

    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a 100-column terminal
    proc = subprocess.Popen([sys.executable, "-m", "graphmem", *args], stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL, text=True)
    os.close(slave)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    stdout = proc.stdout.read() if proc.stdout else ""
    os.close(master)
    return proc.wait(timeout=300), stdout, shown.decode("utf-8", "replace")


def test_cli_bars_show_on_a_terminal_only_and_never_with_json(group_id, tmp_path):
    """On a terminal, ingest and embed draw n/total; ``--json`` (a program reads the output) and
    a pipe draw nothing on stderr."""
    import json
    import subprocess
    import sys

    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps({"group": group_id, "session": "s1", **r}) + "\n" for r in rows(40)))
    rc, _, shown = cli_with_tty_stderr("ingest", str(path), "--format", "jsonl", "--embed", "later")
    assert rc == 0, shown
    rc, stdout, shown = cli_with_tty_stderr("embed", "--group", group_id, "--json")
    assert rc == 0 and json.loads(stdout)["embedded"] == 40, (stdout, shown)
    assert not counts(shown, 40), shown  # --json: quiet even on a terminal
    rc, _, shown = cli_with_tty_stderr("embed", "--group", group_id, "--rebuild")
    assert rc == 0 and counts(shown, 40) and counts(shown, 40)[-1] == 40, shown  # a terminal: the bar
    piped = subprocess.run([sys.executable, "-m", "graphmem", "embed", "--group", group_id, "--rebuild"],
                           capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0 and not counts(piped.stderr, 40), piped.stderr  # a pipe: no bar
