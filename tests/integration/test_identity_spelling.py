"""Identity and text in every spelling (issue 27, item 6), against the real Neo4j.

- One identity rule (``graphmem.core.limits.identity_form``: NFC, trimmed, case-folded;
  invisible characters count): "Zoë" typed on a phone (NFC), on a Mac (NFD), "zoë" and "Zoë "
  are one person when they come without ``speaker_id``, and every lookup - person memory,
  the graph page's person filter, erasure - through the library, the CLI, the HTTP API, the
  typed client and MCP resolves any of those spellings to her; the stored names and texts keep
  their bytes. A misspelling gets a 404 with a "did you mean", never a silent zero.
- Text is matched NFC-normalised: an NFD "café"/"Zürich" is found by an NFC query and the
  other way round (fulltext, group BM25, derived records), older stores are migrated by
  ``schema apply``.
- A lone surrogate in an MCP argument over stdio gets an immediate error naming the argument.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.factories import conversation

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]

NFC, NFD = "Zo\u00eb", "Zoe\u0308"
assert unicodedata.normalize("NFC", NFD) == NFC and NFC != NFD


# --------------------------------------------------------------------------------------------
# MCP over stdio: a lone surrogate gets an answer
# --------------------------------------------------------------------------------------------


class RawAgent:
    """``graphmem mcp`` as a subprocess spoken to in raw JSON-RPC lines (what an agent writes),
    each answer awaited with a deadline: a server that never answers fails the test, not hangs it."""

    def __init__(self) -> None:
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "graphmem", "mcp"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, raw: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def answer(self, rid: int, timeout_s: float) -> dict[str, Any]:
        while True:
            try:
                msg = json.loads(self.lines.get(timeout=timeout_s))
            except queue.Empty:
                raise AssertionError(f"no answer to request {rid} within {timeout_s} s") from None
            if msg.get("id") == rid:
                return msg

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _call(rid: int, tool: str, arguments_json: str) -> str:
    """A tools/call line whose arguments are given as JSON text (so a lone surrogate escape can
    be written exactly as a client sends it)."""
    return ('{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "%s", "arguments": %s}}'
            % (rid, tool, arguments_json))


def test_mcp_stdio_answers_a_lone_surrogate_at_once_naming_the_argument(store, group_id):
    pytest.importorskip("mcp")
    agent = RawAgent()
    try:
        agent.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}))
        assert "result" in agent.answer(1, 120)
        agent.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

        # search: the query holds "\ud800" (the JSON escape, as a client writes it)
        agent.send(_call(2, "search_messages", '{"group_id": "%s", "query": "caf\\ud800e"}' % group_id))
        out = agent.answer(2, 20)
        result = out["result"]
        assert result["isError"] is True
        text = result["content"][0]["text"]
        assert text.startswith("argument 'query': lone UTF-16 surrogate U+D800 at character 3"), text

        # append: the text of the second message holds a lone low surrogate; nothing is written
        msgs = ('[{"id": "a1", "speaker": "Ana", "text": "fine", "ts": "2026-01-01T10:00:00Z"}, '
                '{"id": "a2", "speaker": "Ana", "text": "\\udc00 oops", "ts": "2026-01-01T10:01:00Z"}]')
        agent.send(_call(3, "append_messages", '{"group_id": "%s", "messages": %s}' % (group_id, msgs)))
        text = agent.answer(3, 20)["result"]["content"][0]["text"]
        assert text.startswith("argument 'messages.1.text': lone UTF-16 surrogate U+DC00 at character 0"), text

        # bytes that are not UTF-8 are refused the same way, never turned into U+FFFD
        assert agent.proc.stdin is not None
        agent.proc.stdin.write(('{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": '
                                '"search_messages", "arguments": {"group_id": "%s", "query": "caf' % group_id).encode()
                               + b"\xff" + b'"}}}\n')
        agent.proc.stdin.flush()
        text = agent.answer(4, 20)["result"]["content"][0]["text"]
        assert text.startswith("argument 'query': byte 0xFF that is not UTF-8 at character 3"), text

        # another method: a JSON-RPC error naming the place; a valid pair passes as before
        agent.send('{"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "x\\udfff"}}')
        err = agent.answer(5, 20)["error"]
        assert err["code"] == -32602 and "params.uri" in err["message"] and "U+DFFF" in err["message"], err
        agent.send(_call(6, "search_messages", '{"group_id": "%s", "query": "\\ud83d\\ude00 trail"}' % group_id))
        ok = agent.answer(6, 60)["result"]
        assert "NotFoundError: no group" in ok["content"][0]["text"]  # the tool ran (the group is empty)
    finally:
        agent.close()
    rows = store.read_text("MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) RETURN count(n) AS n", g=group_id)
    assert rows == [{"n": 0}]
