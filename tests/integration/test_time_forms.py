"""Time in every form (issue 27, item 7): message times and as-of instants given as ``Z``,
``+00:00``, other offsets, fractional seconds, a date alone, or local times across daylight-
saving changes and midnight compare by instant everywhere (the stored order, Cypher filters,
Python), through the library, the CLI, the HTTP API and MCP. A naive time is read as UTC for
ordering and stored as given, never shifted (docs/reliability.md, "Timestamps").

Europe/Berlin in 2026: summer time starts 2026-03-29 at 02:00 local (+01:00 -> +02:00) and ends
2026-10-25 at 03:00 local (+02:00 -> +01:00), so 02:10+01:00 on 25 October is 40 minutes *after*
02:30+02:00, although its wall clock is earlier.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core.config import Settings
from graphmem.groups.service import append_messages
from graphmem.query import ask
from tests.factories import runtime_of
from tests.processes import ROOT

pytestmark = pytest.mark.neo4j

# (id, ts as sent, ts as stored) - every one mentions the ferry, so one question (top 10) finds them all
FORMS = [
    ("d0", "2026-03-01", "2026-03-01T00:00:00"),  # a date alone: its midnight
    ("n0", "2026-03-01T09:00:00", "2026-03-01T09:00:00"),  # naive: read as UTC, stored as given
    ("f1", "2026-03-01T09:00:00.5Z", "2026-03-01T09:00:00.500000+00:00"),
    ("f2", "2026-03-01T10:00:00.25+01:00", "2026-03-01T10:00:00.250000+01:00"),  # 09:00:00.25Z
    ("m1", "2026-03-02T00:30:00+02:00", "2026-03-02T00:30:00+02:00"),  # 1 March 22:30Z: before m2
    ("m2", "2026-03-01T23:00:00Z", "2026-03-01T23:00:00+00:00"),
    ("s1", "2026-03-29T01:59:30+01:00", "2026-03-29T01:59:30+01:00"),  # spring forward: 00:59:30Z
    ("s2", "2026-03-29T03:00:10+02:00", "2026-03-29T03:00:10+02:00"),  # 40 s later: 01:00:10Z
    ("b1", "2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+02:00"),  # fall back: 00:30Z
    ("b2", "2026-10-25T02:10:00+01:00", "2026-10-25T02:10:00+01:00"),  # 01:10Z, after b1
]
#: the conversation order by instant (the ids sorted by their UTC moment)
ORDER = ["d0", "n0", "f2", "f1", "m1", "m2", "s1", "s2", "b1", "b2"]


def messages() -> list[dict]:
    return [{"id": mid, "speaker": ("Ana", "Ben")[i % 2], "text": f"ferry note {mid}: the boat leaves soon",
             "ts": ts, "session": "s1"} for i, (mid, ts, _) in enumerate(FORMS)]


def test_every_form_is_stored_as_given_and_ordered_by_instant(store, embedder, group_id):
    """The stored ts keeps its offset (``Z`` as ``+00:00``, fractions kept, a naive time naive),
    and turn order, NEXT and the Cypher instant all follow the UTC moment."""
    append_messages(store, embedder, group_id, list(reversed(messages())))  # arrival order reversed
    rows = store.read_text("MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.ts AS ts, m.instant AS i "
                           "ORDER BY m.turn_created", g=group_id)
    assert [r["id"] for r in rows] == ORDER
    stored = {mid: want for mid, _, want in FORMS}
    assert {r["id"]: r["ts"] for r in rows} == stored
    expected = sorted(r["i"] for r in rows)
    assert [r["i"] for r in rows] == expected and len(set(expected)) == len(expected)
    assert rows[ORDER.index("b2")]["i"] - rows[ORDER.index("b1")]["i"] == 40 * 60
    assert rows[ORDER.index("s2")]["i"] - rows[ORDER.index("s1")]["i"] == 40
    assert rows[ORDER.index("n0")]["i"] == datetime.fromisoformat("2026-03-01T09:00:00+00:00").timestamp()
    chain = store.read_text("MATCH p = (a:Message {group_id: $g, id: 'd0'})-[:NEXT*]->(b {id: 'b2'}) "
                            "RETURN [n IN nodes(p) | n.id] AS ids", g=group_id)
    assert chain == [{"ids": ORDER}]


#: as-of instants in other spellings than the messages', and which messages they admit
AS_OF = [
    ("2026-10-25T02:05:00+01:00", "b1"),  # 01:05Z: b1 (00:30Z) in, b2 (01:10Z) out, whatever the wall clocks
    ("2026-10-25T01:20:00Z", "b2"),       # 01:20Z: both in
    ("2026-03-29T03:00:00+02:00", "s1"),  # 01:00:00Z: s1 in, s2 (01:00:10Z) out
    ("2026-03-01T09:00:00.3Z", "f2"),     # fractions: f2 (.25) in, f1 (.5) out
    ("2026-03-01", "d0"),                 # a date alone: its midnight, d0 exactly at it
]


def admitted(last: str) -> set[str]:
    return set(ORDER[: ORDER.index(last) + 1])


def test_as_of_in_any_spelling_admits_by_instant_on_every_surface(store, embedder, group_id):
    """``ask`` as of an instant in another offset or form than the messages: the cited messages
    are exactly those at or before it, through the library, the CLI, the API and MCP."""
    append_messages(store, embedder, group_id, messages())
    q = "When does the ferry boat leave?"
    env = {**os.environ, "COLUMNS": "1000", "HF_HUB_OFFLINE": "1"}
    env = {k: v for k, v in env.items() if not k.startswith("GRAPHMEM_LLM_")}
    with TestClient(create_app(Settings(_env_file=None, derive_jobs_enabled=False))) as client:
        for as_of, last in AS_OF:
            want = admitted(last)
            lib = ask(runtime_of(store, embedder), group_id, q, as_of=as_of)
            assert set(lib.message_ids) == want, (as_of, lib.message_ids)
            r = client.post(f"/groups/{group_id}/ask", json={"question": q, "as_of": as_of})
            assert r.status_code == 200 and set(r.json()["message_ids"]) == want, (as_of, r.text[:300])
        as_of, last = AS_OF[0]
        res = subprocess.run([sys.executable, "-m", "graphmem", "ask", q, "--group", group_id, "--as-of", as_of,
                              "--json"], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
        assert res.returncode == 0, res.stderr
        assert set(json.loads(res.stdout)["message_ids"]) == admitted(last)
        bad = client.post(f"/groups/{group_id}/ask", json={"question": q, "as_of": "25/10/2026 02:05"})
        assert bad.status_code == 422 and bad.json()["field"] == "as_of", bad.text

    mcp = pytest.importorskip("mcp")
    import anyio

    params = mcp.StdioServerParameters(command=sys.executable, args=["-m", "graphmem", "mcp"], env=env,
                                       cwd=str(ROOT))

    async def session() -> None:
        async with mcp.Client(params, read_timeout_seconds=120) as c:
            for as_of, last in AS_OF[:3]:
                r = await c.call_tool("ask", {"group_id": group_id, "question": q, "as_of": as_of,
                                              "evidence_only": True, "view": "full"})
                assert not r.is_error, r.content
                got = json.loads(r.content[0].text)  # the data once, as text (docs/mcp.md, "Results")
                assert set(got["message_ids"]) == admitted(last), (as_of, got)
            r = await c.call_tool("ask", {"group_id": group_id, "question": q, "as_of": "yesterday"})
            assert r.is_error and "as_of" in r.content[0].text

    anyio.run(session)
