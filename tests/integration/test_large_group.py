"""Very large groups (issue 27, item 10): a group of 5,000 members with 5,000 derived records.
Its roster is paged on every surface (library, HTTP API, typed client, CLI, MCP; one MCP result
of the whole roster would be ~0.6 MB), the Writer's prompt stays bounded when a scripted Writer
derives a new stretch of it, and the graph is capped with a notice and narrows by person."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import anyio
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.main import create_app
from graphmem.cli import app as cli
from graphmem.client import GraphMemClient
from graphmem.core.config import Settings
from graphmem.core.model import Conversation, MessageRecord
from graphmem.core.paging import RESULT_BYTES, json_size
from graphmem.core.results import RosterPage
from graphmem.derived import memory
from graphmem.derived.writer import derive_group
from graphmem.groups.service import append_messages, forget_group
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.verbatim.roster import read_roster, roster_page
from graphmem.verbatim.space import claim_space
from graphmem.views.graph import build_graph
from tests.integration.test_paging import api_page, walk
from tests.scripted_llm import Reply

pytestmark = pytest.mark.neo4j
N = 5000
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
#: Bytes the user message of one Writer call may take in this group (all 5,000 members and
#: records listed, it is ~0.65 MB).
PROMPT_BOUND_BYTES = 64_000


def pid(i: int) -> str:
    return f"u{i:04d}"


@pytest.fixture(scope="module")
def big(store, embedder, schema) -> Iterator[str]:
    gid = f"big-{uuid.uuid4().hex[:10]}"
    msgs = [MessageRecord(id=f"m{i:04d}", group_id=gid, session="s1", session_index=1, turn=i,
                          speaker=f"Member{i:04d}", speaker_id=pid(i), text=f"Hello from member {i}, about hiking.",
                          ts=(T0 + timedelta(seconds=i)).isoformat(), source_ref=str(i)) for i in range(N)]
    ingest_conversations(store, [Conversation(group_id=gid, name="big", messages=msgs, source="test")], None,
                         embed="later")
    claim_space(store, gid, embedder)  # as derive does before it writes record vectors
    vector = [1.0] + [0.0] * (embedder.dimension - 1)
    records = [memory.NewRecord(id=f"e1.{i}", layer="per_speaker_core", utype="fact",
                                content=f"Member{i:04d} likes hiking on weekends", owner=pid(i), source=pid(i),
                                ts=m.ts, session="s1", turn_created=i, from_ids=[m.id], embedding=vector)
               for i, m in enumerate(msgs)]
    marker = memory.SegmentMarker(id="seg-0001", index=1, session="s1", message_ids=[m.id for m in msgs])
    memory.write_segment(store, gid, marker, records)
    try:
        yield gid
    finally:
        forget_group(store, gid)


def test_the_roster_of_5000_members_is_paged_on_every_surface(store, big):
    everyone = sorted(pid(i) for i in range(N))
    lib = walk(lambda c: roster_page(store, big, limit=1000, cursor=c), lambda p: [m.id for m in p.persons])
    assert [len(p) for p in lib] == [1000] * 5 and [x for p in lib for x in p] == everyone
    one = roster_page(store, big, limit=3)
    assert one.total == N and [(m.id, m.messages, m.label) for m in one.persons] == [
        ("u0000", 1, "Member0000"), ("u0001", 1, "Member0001"), ("u0002", 1, "Member0002")]
    # the whole roster in one result, as MCP answered before: far over an agent's tool output
    assert json_size(RosterPage(group_id=big, persons=read_roster(store, big))) > 500_000

    with TestClient(create_app(Settings(_env_file=None))) as api:
        http = walk(api_page(api, f"/groups/{big}/roster", limit=500), lambda p: [m["id"] for m in p.persons])
        assert len(http) == 10 and [x for p in http for x in p] == everyone
        assert [m.id for m in GraphMemClient("http://testserver", http=api).roster(big)] == everyone
    res = CliRunner().invoke(cli, ["roster", "--group", big, "--limit", "1000", "--all", "--json"])
    assert res.exit_code == 0, res.output
    assert [m["id"] for line in res.stdout.splitlines() for m in json.loads(line)["persons"]] == everyone

    pytest.importorskip("mcp")
    from tests.integration.test_mcp import agent
    from tests.integration.test_mcp_paging import Pages

    async def session() -> None:
        async with agent("--group", big) as c:
            t = Pages(c)
            pages = await t.walk("roster", group_id=big, limit=1000)  # cut by size, not by limit
            assert all(p["total"] == N for p in pages) and len(pages) > 5
            assert [m["id"] for p in pages for m in p["persons"]] == everyone
            assert max(t.sizes) <= RESULT_BYTES

    anyio.run(session)


def test_the_writer_prompt_stays_bounded(store, embedder, big, scripted_llm):
    append_messages(store, embedder, big, [
        {"id": "n1", "speaker": "Member0007", "speaker_id": pid(7), "session": "s2",
         "text": "Has anyone asked Member0042 about the trip?", "ts": "2026-02-01T10:00:00Z"},
        {"id": "n2", "speaker": "Member0013", "speaker_id": pid(13), "session": "s2",
         "text": "I will, and Member0099 wants to come too.", "ts": "2026-02-01T10:01:00Z"}])
    scripted_llm.handler = lambda body: Reply.json({"actions": [{"action": "NOOP"}]})
    summary = derive_group(store, big, model=scripted_llm.chat_model(), embedder=embedder,
                           settings=Settings(_env_file=None))
    assert summary.segments_written == 1 and len(scripted_llm.chat_requests) == 1
    user = scripted_llm.chat_requests[0]["messages"][-1]["content"]
    assert len(user.encode("utf-8")) < PROMPT_BOUND_BYTES, len(user.encode("utf-8"))
    first_line = user.split("\n", 1)[0]
    assert first_line.startswith("PARTICIPANTS: Member0007, Member0013, Member0042, Member0099, ")
    assert f"of {N} members" in first_line and f"of the group's {N} current records" in user
    for rid in ("e1.7", "e1.13", "e1.42", "e1.99"):  # what the speakers and the people named hold
        assert f"\n{rid} [" in user, rid


def test_the_graph_of_a_large_group_is_capped_and_narrows_by_person(store, big):
    g = build_graph(store, big)
    people = [n for n in g.nodes if n.kind == "person"]
    assert len(g.nodes) == 150 and len(people) == 149 and g.truncated and g.nodes_total == N + 1
    assert g.notice.startswith(f"Showing 149 of {N} people") and "Narrow by person" in g.notice
    shown = {n.id for n in g.nodes}
    assert all(r.source in shown and r.owner in shown for r in g.records) and len(g.records) <= 500
    one = build_graph(store, big, person=pid(4321), max_nodes=20)
    assert pid(4321) in {n.id for n in one.nodes} and len(one.nodes) == 20
    assert [r.id for r in one.records] == ["e1.4321"]
    with TestClient(create_app(Settings(_env_file=None))) as api:
        body = api.get(f"/groups/{big}/graph", params={"max_nodes": 30, "max_records": 10}).json()
        assert len(body["nodes"]) == 30 and len(body["records"]) <= 10 and body["truncated"] is True
        assert body["records_total"] >= len(body["records"]) and body["notice"]
        assert api.get(f"/groups/{big}/graph", params={"max_nodes": 1}).status_code == 422


def test_a_roster_row_stays_small_whatever_the_persons_history(store, group_id):
    """One person who wrote under 600 display names (one speaker_id) made a 122 KB roster row,
    past the 64 KB a page holds (a page always holds its first row): a roster page lists the
    latest 20 names and counts them all."""
    from graphmem.core.results import ROSTER_ALIASES_SHOWN
    from graphmem.verbatim.roster import read_roster, roster_page

    rows = [{"id": f"r{i:04d}", "speaker": f"Renamed person number {i:04d} " + "x" * 160, "speaker_id": "U1",
             "text": f"note {i}", "ts": f"2026-01-01T{i // 3600:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z"}
            for i in range(600)]
    append_messages(store, None, group_id, rows, embed="later")
    page = roster_page(store, group_id, max_bytes=RESULT_BYTES)
    [row] = page.persons
    assert len(row.aliases) == ROSTER_ALIASES_SHOWN and row.aliases_total == 600
    assert row.aliases == [r["speaker"] for r in rows][-ROSTER_ALIASES_SHOWN:]  # the latest names
    assert json_size(page) < RESULT_BYTES
    assert len(read_roster(store, group_id)[0].aliases) == 600  # the store and the library keep them all
