"""Identity hygiene (issue 24, point 5), against the real Neo4j.

Attack: a second "dad" made with an invisible character (``"dad\\u200b"``, a direction mark,
a no-break space) that nobody can tell from the first. Every entry point (library ingest,
library append, the JSONL command line, the HTTP API, MCP over stdio) refuses such an id naming
record and field, and writes nothing; display names (free text) are stored byte-exact, and
where two members share one display form the roster and the views mark them apart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.verbatim.ingest import ingest_conversations
from tests.factories import conversation

pytestmark = pytest.mark.neo4j

ZWSP, LRM, RLO, NBSP = "\u200b", "\u200e", "\u202e", "\u00a0"

#: (what, message fields, field named in the error)
HIDDEN = [
    ("zero-width space in speaker_id", {"speaker_id": "dad" + ZWSP}, "speaker_id"),
    ("left-to-right mark in speaker_id", {"speaker_id": LRM + "dad"}, "speaker_id"),
    ("right-to-left override in message id", {"id": "m" + RLO + "1"}, "id"),
    ("no-break space in session", {"session": "day" + NBSP + "1"}, "session"),
    ("zero-width joiner in channel", {"channel": "o\u200dps", "session": "o\u200dps/day"}, "channel"),
    ("BOM in reply_to", {"reply_to": "\ufeffok0"}, "reply_to"),
    ("word joiner in speaker_id", {"speaker_id": "d\u2060ad"}, "speaker_id"),
]


def _good(i: int = 0, **kw) -> dict:
    return {"id": f"ok{i}", "speaker": "Dad", "speaker_id": "dad", "text": "we take the ridge trail",
            "ts": f"2026-03-01T10:00:0{i}", **kw}


def node_count(store, gid: str) -> int:
    rows = store.read_text("MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) RETURN count(n) AS n", g=gid)
    return rows[0]["n"]


@pytest.fixture
def client(store, schema):
    with TestClient(create_app(Settings(_env_file=None))) as c:
        yield c


@pytest.mark.parametrize(("what", "bad", "field"), HIDDEN, ids=[h[0] for h in HIDDEN])
def test_library_ingest_refuses_invisible_characters_in_ids(store, embedder, group_id, what, bad, field):
    with pytest.raises(InvalidInputError) as e:
        ingest_conversations(store, [conversation(group_id, [_good(0), _good(1, **bad)])], embedder)
    assert (e.value.record, e.value.field) == ("row 1", field), what
    assert "invisible" in str(e.value) or "space character" in str(e.value) or "joiner" in str(e.value)
    assert node_count(store, group_id) == 0


def test_library_ingest_refuses_an_invisible_group_id(store, embedder, group_id):
    with pytest.raises(InvalidInputError) as e:
        ingest_conversations(store, [conversation(group_id + ZWSP, [_good(0)])], embedder)
    assert e.value.field == "group"
    assert node_count(store, group_id + ZWSP) == 0


@pytest.mark.parametrize(("what", "bad", "field"), HIDDEN[:4], ids=[h[0] for h in HIDDEN[:4]])
def test_library_append_refuses_invisible_characters_in_ids(store, embedder, group_id, what, bad, field):
    from graphmem.groups.service import append_messages

    with pytest.raises(InvalidInputError) as e:
        append_messages(store, embedder, group_id, [_good(0), _good(1, **bad)])
    assert (e.value.record, e.value.field) == ("request message 1", field), what
    assert node_count(store, group_id) == 0


@pytest.mark.parametrize(("what", "bad", "field"), HIDDEN, ids=[h[0] for h in HIDDEN])
def test_api_refuses_invisible_characters_in_ids(store, group_id, client, what, bad, field):
    r = client.post(f"/groups/{group_id}/messages", json={"messages": [_good(0), _good(1, **bad)]})
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "InvalidInputError" and body["field"].split(".")[-1] == field, body
    assert "request message 1" in body["detail"]
    assert node_count(store, group_id) == 0
    r = client.post(f"/groups/{group_id + ZWSP}/messages", json={"messages": [_good(0)]})
    assert r.status_code == 422 and r.json()["field"] == "group"


def test_cli_jsonl_refuses_invisible_speaker_id_naming_line_and_field(store, group_id, tmp_path):
    path = tmp_path / "chat.jsonl"
    rows = [{"group": group_id, "session": "s", **_good(0)},
            {"group": group_id, "session": "s", **_good(1, speaker_id="dad" + ZWSP)}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    graphmem = str(Path(sys.executable).parent / "graphmem")
    res = subprocess.run([graphmem, "ingest", str(path), "--format", "jsonl", "--no-progress"],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "1000"})
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "record line 2" in res.stderr and "field 'speaker_id'" in res.stderr and "U+200B" in res.stderr, res.stderr
    assert node_count(store, group_id) == 0


def test_mcp_append_refuses_invisible_speaker_id(store, group_id):
    pytest.importorskip("mcp")
    from tests.integration.test_mcp import agent, call_error

    async def run() -> str:
        async with agent() as client:
            return await call_error(client, "append_messages", group_id=group_id,
                                    messages=[_good(0), _good(1, speaker_id=LRM + "dad")])

    text = anyio.run(run)
    assert "InvalidInputError" in text and "field 'speaker_id'" in text and "request message 1" in text, text
    assert node_count(store, group_id) == 0


def test_emoji_ids_stay_valid(store, embedder, group_id):
    rows = [_good(0, channel="\u2764\ufe0f-fans", session="\u2764\ufe0f-fans/day"),
            _good(1, speaker_id="\U0001F468\u200d\U0001F469\u200d\U0001F467", channel="\u2764\ufe0f-fans",
                  session="\u2764\ufe0f-fans/day")]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    assert node_count(store, group_id) > 0


def test_members_sharing_a_display_form_are_marked_and_names_kept_byte_exact(store, embedder, group_id, client):
    nfd = unicodedata.normalize("NFD", "Jos\u00e9")
    rows = [_good(0, speaker="Dad", speaker_id="d1"), _good(1, speaker="Dad" + ZWSP, speaker_id="d2"),
            _good(2, speaker="Jos\u00e9", speaker_id="j1"), _good(3, speaker=nfd, speaker_id="j2"),
            _good(4, speaker="Ana", speaker_id="a1")]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    stored = {r["id"]: r["name"] for r in store.read_text(
        "MATCH (p:Person {group_id: $g}) RETURN p.id AS id, p.name AS name", g=group_id)}
    assert stored == {"d1": "Dad", "d2": "Dad" + ZWSP, "j1": "Jos\u00e9", "j2": nfd, "a1": "Ana"}  # byte-exact
    roster = {m["id"]: m["label"] for m in client.get(f"/groups/{group_id}/roster").json()["persons"]}
    assert roster == {"d1": "Dad (d1)", "d2": "Dad" + ZWSP + " (d2)", "j1": "Jos\u00e9 (j1)",
                      "j2": nfd + " (j2)", "a1": "Ana"}
    from graphmem.views import build_graph

    names = {n.id: n.name for n in build_graph(store, group_id).nodes}
    assert names["d1"] == "Dad (d1)" and names["d2"] == "Dad" + ZWSP + " (d2)" and names["a1"] == "Ana"


def test_lookalike_names_are_marked_apart_everywhere_a_name_is_shown(store, embedder, group_id, client):
    """A Cyrillic "D\u0430d" (no speaker id: its id is its name) beside the family's "Dad", and a
    Greek "\u039com" beside "Mom": before, each pair showed one identical label in the roster, the
    graph and the evidence the answer model reads, so the impostor's words read as Dad's. Now
    both are marked, the impostor's id written with its lookalike escaped; the stored names stay
    byte-exact and a lookup of "Dad" still finds Dad alone (a lookalike is never a spelling)."""
    from graphmem.views import build_graph
    from graphmem.verbatim.roster import Roster, read_roster

    fake_dad, fake_mom = "D\u0430d", "\u039com"
    rows = [{"id": "x0", "speaker": "Dad", "text": "we take the ridge trail", "ts": "2026-03-01T10:00:00"},
            {"id": "x1", "speaker": fake_dad, "text": "the lake loop is cancelled", "ts": "2026-03-01T10:00:01"},
            {"id": "x2", "speaker": "Mom", "text": "my knee hurts", "ts": "2026-03-01T10:00:02"},
            {"id": "x3", "speaker": fake_mom, "text": "my knee is fine now", "ts": "2026-03-01T10:00:03"},
            {"id": "x4", "speaker": "Ben", "text": "ok", "ts": "2026-03-01T10:00:04"}]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    want = {"Dad": "Dad (Dad)", fake_dad: fake_dad + " (D\\u0430d)", "Mom": "Mom (Mom)",
            fake_mom: fake_mom + " (\\u039com)", "Ben": "Ben"}
    roster = {m["id"]: m["label"] for m in client.get(f"/groups/{group_id}/roster").json()["persons"]}
    assert roster == want
    assert {n.id: n.name for n in build_graph(store, group_id).nodes if n.id in want} == want
    stored = {r["id"]: r["name"] for r in store.read_text(
        "MATCH (p:Person {group_id: $g}) RETURN p.id AS id, p.name AS name", g=group_id)}
    assert stored == {k: k for k in want}  # byte-exact
    assert Roster(read_roster(store, group_id)).resolve("Dad") == ("Dad", "")
    r = client.post(f"/groups/{group_id}/ask", json={"question": "Is the lake loop cancelled?", "ask": False})
    evidence = r.json()["evidence"]
    assert fake_dad + " (D\\u0430d)" in evidence and "lake loop is cancelled" in evidence
