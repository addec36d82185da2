"""Integrity of the conversation (docs/reliability.md, items 1-5 of the reliability issue).

Order by instant whatever the arrival order, concurrent loads, edits, duplicates in one batch,
and erasure of a person — each through the library, the CLI (real `graphmem` processes) and
the HTTP API, against the real Neo4j.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.derived import memory
from graphmem.core.config import Settings
from graphmem.core.errors import ConflictError
from graphmem.groups.service import append_messages, forget_person
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.recall.search import search_messages
from graphmem.derived.writer import load_messages
from tests.factories import conversation
from tests.test_query_fixtures import rec
from graphmem.core.config import get_settings

pytestmark = pytest.mark.neo4j

GRAPHMEM = str(Path(sys.executable).with_name("graphmem"))

# The example: Ben's message (b2) arrives after the reply to it (a3).
A1 = {"id": "a1", "speaker": "Ada", "text": "The boiler is knocking", "ts": "2026-02-02T09:00:00+01:00"}
B2 = {"id": "b2", "speaker": "Ben", "text": "Monday or Wednesday?", "ts": "2026-02-02T09:02:00+01:00"}
A3 = {"id": "a3", "speaker": "Ada", "text": "Wednesday then", "ts": "2026-02-02T09:03:00+01:00", "reply_to": "b2"}


def snapshot(store, gid: str) -> dict:
    """Everything the ordering guarantees cover, without ids of the group or write times."""
    messages = store.read_text(
        "MATCH (m:Message {group_id: $g}) "
        "RETURN m.id AS id, m.turn_created AS turn_created, m.turn AS turn, m.session AS session, "
        "m.search_text AS search_text, m.text AS text, coalesce(m.text_history, []) AS history, "
        "[(m)-[:NEXT]->(n) | n.id] AS next, [(m)-[:REPLY_TO]->(n) | n.id] AS reply_to "
        "ORDER BY m.turn_created", g=gid)
    sessions = store.read_text(
        "MATCH (s:Session {group_id: $g}) RETURN s.id AS id, s.index AS index ORDER BY s.id", g=gid)
    persons = store.read_text(
        "MATCH (p:Person {group_id: $g}) RETURN p.id AS id ORDER BY p.id", g=gid)
    return {"messages": messages, "sessions": sessions, "persons": persons}


def chain(store, gid: str) -> list[list[str]]:
    return [r["ids"] for r in store.read_text(
        "MATCH p = (a:Message {group_id: $g})-[:NEXT*0..]->(b:Message) "
        "WHERE NOT ()-[:NEXT]->(a) AND NOT (b)-[:NEXT]->() RETURN [n IN nodes(p) | n.id] AS ids "
        "ORDER BY ids[0]", g=gid)]


class MemoryWriter:
    """Writes derived records segment by segment through the System 2 store's write path."""

    def __init__(self, store, embedder, group_id: str) -> None:
        self.store, self.embedder, self.group_id, self.index = store, embedder, group_id, 0

    def segment(self, cover: list[str], *specs: dict) -> None:
        self.index += 1
        ts = {r["id"]: r["ts"] for r in self.store.read_text(
            "MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.ts AS ts", g=self.group_id)}
        vectors = self.embedder.encode([s["content"] for s in specs]) if specs else []
        records = [memory.NewRecord(
            id=s["id"], layer=s["layer"], utype=s["utype"], content=s["content"], owner=s["owner"],
            source=s["source"], ts=max(ts[m] for m in s["from_ids"]), session="", turn_created=0,
            from_ids=s["from_ids"], embedding=vectors[i].tolist(), supersedes=s["supersedes"])
            for i, s in enumerate(specs)]
        marker = memory.SegmentMarker(id=f"seg-{self.index:04d}", index=self.index, message_ids=cover,
                                      report={"accepted": [s["content"] for s in specs]})
        memory.write_segment(self.store, self.group_id, marker, records)


@pytest.fixture
def client(store, schema):
    with TestClient(create_app(Settings(_env_file=None))) as c:
        yield c


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([GRAPHMEM, *args], capture_output=True, text=True, timeout=timeout, env=env)


def jsonl(path: Path, gid: str, rows: list[dict], session: str = "s1") -> Path:
    path.write_text("".join(json.dumps({"group": gid, "session": session, **r}) + "\n" for r in rows))
    return path


# ------------------------------------------------------------------------------ 1. order by time


def test_late_message_ends_as_if_on_time_library(store, embedder, make_group):
    late, on_time = make_group("late"), make_group("ontime")
    append_messages(store, embedder, late, [A1, A3])
    w = MemoryWriter(store, embedder, late)
    w.segment(["a1", "a3"])  # derived before the late message arrived
    summary = append_messages(store, embedder, late, [B2])
    assert (summary.messages_written, summary.messages_skipped) == (1, 0)
    append_messages(store, embedder, on_time, [A1, B2, A3])

    assert chain(store, late) == [["a1", "b2", "a3"]]
    got = snapshot(store, late)
    assert [(m["id"], m["turn_created"], m["turn"]) for m in got["messages"]] == [
        ("a1", 0, 0), ("b2", 1, 1), ("a3", 2, 2)]
    by_id = {m["id"]: m for m in got["messages"]}
    assert by_id["a3"]["reply_to"] == ["b2"]  # the reply stored before its parent got its link
    assert by_id["a3"]["search_text"] == "Ben: Monday or Wednesday?\nAda: Wednesday then"
    assert by_id["b2"]["search_text"] == "Ada: The boiler is knocking\nBen: Monday or Wednesday?"
    assert got == snapshot(store, on_time)
    # the late message is pending for the next derive, the derived ones are not
    assert [m.id for m in load_messages(store, late, pending_only=True)] == ["b2"]
    # fulltext finds a3 by the words of the late turn before it
    hits = search_messages(store, embedder, late, "Monday", k=5, mode="fulltext")
    assert {h.id for h in hits} == {"b2", "a3"}


def test_request_order_does_not_beat_timestamps_and_late_sessions_renumber(store, embedder, make_group):
    gid, ref = make_group("req"), make_group("ref")
    s2 = [{**m, "session": "tuesday"} for m in (
        {"id": "t1", "speaker": "Cy", "text": "Plumber came", "ts": "2026-02-03T08:00:00Z"},
        {"id": "t2", "speaker": "Ada", "text": "Finally", "ts": "2026-02-03T08:05:00Z"})]
    s1 = [{**m, "session": "monday"} for m in (A1, B2, A3)]
    # one request in the wrong order, then an earlier session arriving last
    append_messages(store, embedder, gid, [s2[1], s2[0]])
    append_messages(store, embedder, gid, [s1[2], s1[0]])
    append_messages(store, embedder, gid, [s1[1]])
    append_messages(store, embedder, ref, s1 + s2)
    assert chain(store, gid) == [["a1", "b2", "a3", "t1", "t2"]]
    assert snapshot(store, gid) == snapshot(store, ref)
    assert snapshot(store, gid)["sessions"] == [{"id": "monday", "index": 1}, {"id": "tuesday", "index": 2}]


def test_late_message_through_cli_and_api(store, client, make_group, tmp_path):
    cli_gid, api_gid = make_group("cli"), make_group("api")
    first = jsonl(tmp_path / "first.jsonl", cli_gid, [A1, A3])
    second = jsonl(tmp_path / "second.jsonl", cli_gid, [B2])
    for path in (first, second):
        out = cli("ingest", str(path), "--format", "jsonl", "--json")
        assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["messages_written"] == 1
    r = client.post(f"/groups/{api_gid}/messages", json={"messages": [A3, A1]})
    assert r.status_code == 200, r.text
    r = client.post(f"/groups/{api_gid}/messages", json={"messages": [B2]})
    assert r.status_code == 200 and r.json()["messages_written"] == 1
    for gid in (cli_gid, api_gid):
        assert chain(store, gid) == [["a1", "b2", "a3"]]
        by_id = {m["id"]: m for m in snapshot(store, gid)["messages"]}
        assert [by_id[i]["turn"] for i in ("a1", "b2", "a3")] == [0, 1, 2]
        assert by_id["a3"]["reply_to"] == ["b2"]
        assert by_id["a3"]["search_text"].startswith("Ben: Monday or Wednesday?\n")


# ------------------------------------------------------------------------ 2. concurrent loads


def three_sessions(gid: str) -> list[list[dict]]:
    """Three sessions of one channel whose times interleave, so the serial chain crosses them."""
    out = []
    for k, who in enumerate(("Ada", "Ben", "Cy")):
        out.append([{"id": f"{who.lower()}{i}", "speaker": who, "text": f"{who} says thing {i}",
                     "ts": f"2026-02-01T09:{i:02d}:{k * 10:02d}Z", "session": f"s{k + 1}"}
                    for i in range(12)])
    return out


def test_parallel_cli_processes_give_the_serial_graph(store, embedder, make_group, tmp_path):
    par, ser = make_group("par"), make_group("ser")
    files = []
    for k, rows in enumerate(three_sessions(par)):
        files.append(jsonl(tmp_path / f"s{k}.jsonl", par, [{k_: v for k_, v in r.items() if k_ != "session"}
                                                            for r in rows], session=rows[0]["session"]))
    procs = [subprocess.Popen([GRAPHMEM, "ingest", str(f), "--format", "jsonl", "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"}) for f in files]
    outs = [p.communicate(timeout=900) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1][-2000:] for o in outs]
    assert sum(json.loads(o[0])["messages_written"] for o in outs) == 36
    for f in reversed(files):  # serial, in another order
        ingest_conversations(store, [conversation(ser, [
            {**json.loads(line), "id": json.loads(line)["id"]} for line in f.read_text().splitlines()])], embedder)
    got, want = snapshot(store, par), snapshot(store, ser)
    assert [m["turn_created"] for m in got["messages"]] == list(range(36))
    assert got == want
    assert len(chain(store, par)) == 1  # one NEXT chain, no fork, no join
    forks = store.read_text(
        "MATCH (m:Message {group_id: $g}) WHERE COUNT { (m)-[:NEXT]->() } > 1 OR COUNT { ()-[:NEXT]->(m) } > 1 "
        "RETURN count(m) AS n", g=par)
    assert forks == [{"n": 0}]


def test_concurrent_http_posts_give_the_serial_graph(store, embedder, client, make_group):
    par, ser = make_group("hpar"), make_group("hser")
    sessions = three_sessions(par)
    with ThreadPoolExecutor(max_workers=3) as pool:
        codes = list(pool.map(lambda rows: client.post(f"/groups/{par}/messages", json={"messages": rows}),
                              sessions))
    assert [r.status_code for r in codes] == [200, 200, 200], [r.text for r in codes]
    for rows in sessions:
        append_messages(store, embedder, ser, rows)
    assert snapshot(store, par) == snapshot(store, ser)
    assert len(chain(store, par)) == 1


# -------------------------------------------------------------------------------- 3. edits


def test_edit_is_stored_with_history_and_pending(store, embedder, group_id):
    rows = [
        {"id": "m1", "speaker": "Ada", "text": "Dinner at the quayside grill?"},
        {"id": "m2", "speaker": "Ben", "text": "Bring the periwinkle tablecloth."},
        {"id": "m3", "speaker": "Cy", "text": "Sounds good."},
    ]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    MemoryWriter(store, embedder, group_id).segment(
        ["m1", "m2", "m3"], rec("r1", "Ben", "Ben has a periwinkle tablecloth", ["m2"]))
    before = store.read_text("MATCH (m:Message {group_id: $g, id: 'm2'}) RETURN m.embedding AS e", g=group_id)[0]["e"]

    edited = [dict(r) for r in rows]
    edited[1]["text"] = "Bring the saffron tablecloth."
    s = ingest_conversations(store, [conversation(group_id, edited)], embedder)
    assert (s.messages_written, s.messages_edited, s.messages_skipped) == (0, 1, 2)
    m2 = store.read_text(
        "MATCH (m:Message {group_id: $g, id: 'm2'}) RETURN m.text AS text, m.text_history AS h, "
        "size(m.edited_at) AS n, m.search_text AS doc, m.embedding AS e", g=group_id)[0]
    assert (m2["text"], m2["h"], m2["n"]) == ("Bring the saffron tablecloth.", ["Bring the periwinkle tablecloth."], 1)
    assert m2["e"] != before and m2["e"] == pytest.approx(
        embedder.encode(["Ben (2026-01-01): Bring the saffron tablecloth."])[0].tolist(), abs=1e-5)
    m3 = store.read_text("MATCH (m:Message {group_id: $g, id: 'm3'}) RETURN m.search_text AS d", g=group_id)[0]["d"]
    assert m3 == "Ben: Bring the saffron tablecloth.\nCy: Sounds good."
    # the old words are gone from fulltext; the new ones are found
    assert search_messages(store, embedder, group_id, "periwinkle", k=5, mode="fulltext") == []
    assert {h.id for h in search_messages(store, embedder, group_id, "saffron", k=5, mode="fulltext")} == {"m2", "m3"}
    # pending for the next derive; what was derived from it is still there to be reconsidered
    assert [m.id for m in load_messages(store, group_id, pending_only=True)] == ["m2"]

    state = snapshot(store, group_id)
    again = ingest_conversations(store, [conversation(group_id, edited)], embedder)
    assert (again.messages_written, again.messages_edited, again.messages_skipped) == (0, 0, 3)
    assert snapshot(store, group_id) == state  # identical redelivery is a no-op

    moved = [dict(r) for r in edited]
    moved[1]["speaker"] = "Cy"
    with pytest.raises(ConflictError, match="'m2'.*speaker"):
        ingest_conversations(store, [conversation(group_id, moved + [{"id": "m9", "speaker": "Dee", "text": "x"}])], embedder)
    assert snapshot(store, group_id) == state  # nothing of that input was written


def test_older_redelivery_does_not_undo_an_edit(store, embedder, client, make_group):
    """The tester's case: chat export (v1), edit (v2), the older export again. Re-sending a text
    the message already had is a stale redelivery: skipped, text and history unchanged (before,
    it was counted as an edit, v1 came back and every alternation grew text_history by two)."""
    lib, api = make_group("stale"), make_group("staleapi")
    rows = [{"id": f"m{i + 1}", "speaker": speaker, "text": text, "ts": f"2026-01-01T10:00:0{i}"}
            for i, (speaker, text) in enumerate([("Ada", "Dinner at the quayside grill?"),
                                                 ("Ben", "Bring the periwinkle tablecloth."),
                                                 ("Cy", "Sounds good.")])]
    v2 = [dict(r) for r in rows]
    v2[1]["text"] = "Bring the saffron tablecloth."
    ingest_conversations(store, [conversation(lib, rows)], embedder)
    ingest_conversations(store, [conversation(lib, v2)], embedder)
    state = snapshot(store, lib)
    for _ in range(2):  # the older export, twice
        s = ingest_conversations(store, [conversation(lib, rows)], embedder)
        assert (s.messages_written, s.messages_edited, s.messages_skipped) == (0, 0, 3)
        assert snapshot(store, lib) == state
    m2 = store.read_text("MATCH (m:Message {group_id: $g, id: 'm2'}) RETURN m.text AS t, m.text_history AS h, "
                         "size(m.edited_at) AS n", g=lib)
    assert m2 == [{"t": "Bring the saffron tablecloth.", "h": ["Bring the periwinkle tablecloth."], "n": 1}]
    # an input going through v1 then v2 is stale too; a text never seen before is still an edit
    s = ingest_conversations(store, [conversation(lib, rows + [v2[1]])], embedder)
    assert (s.messages_written, s.messages_edited, s.messages_skipped) == (0, 0, 4)
    v3 = [dict(r) for r in rows]
    v3[1]["text"] = "Bring the crimson tablecloth."
    s = ingest_conversations(store, [conversation(lib, v3)], embedder)
    assert (s.messages_written, s.messages_edited, s.messages_skipped) == (0, 1, 2)
    m2 = store.read_text("MATCH (m:Message {group_id: $g, id: 'm2'}) RETURN m.text AS t, m.text_history AS h",
                         g=lib)
    assert m2 == [{"t": "Bring the crimson tablecloth.",
                   "h": ["Bring the periwinkle tablecloth.", "Bring the saffron tablecloth."]}]

    # the HTTP API goes through the same write path
    old, new = {**B2, "text": "Monday or Wednesday?"}, {**B2, "text": "Tuesday or Thursday?"}
    for body, counts in (([A1, old], (2, 0, 0)), ([new], (0, 1, 0)), ([A1, old], (0, 0, 2))):
        r = client.post(f"/groups/{api}/messages", json={"messages": body})
        assert r.status_code == 200, r.text
        assert (r.json()["messages_written"], r.json()["messages_edited"], r.json()["messages_skipped"]) == counts
    row = store.read_text("MATCH (m:Message {group_id: $g, id: 'b2'}) RETURN m.text AS t, m.text_history AS h", g=api)
    assert row == [{"t": "Tuesday or Thursday?", "h": ["Monday or Wednesday?"]}]


def test_edit_through_cli_and_api(store, client, make_group, tmp_path):
    cli_gid, api_gid = make_group("ecli"), make_group("eapi")
    path = jsonl(tmp_path / "a.jsonl", cli_gid, [A1, B2])
    assert cli("ingest", str(path), "--format", "jsonl", "--json").returncode == 0
    path = jsonl(tmp_path / "b.jsonl", cli_gid, [A1, {**B2, "text": "Tuesday or Thursday?"}])
    out = cli("ingest", str(path), "--format", "jsonl", "--json")
    assert out.returncode == 0, out.stderr
    assert {k: json.loads(out.stdout)[k] for k in ("messages_written", "messages_edited", "messages_skipped")} == {
        "messages_written": 0, "messages_edited": 1, "messages_skipped": 1}

    assert client.post(f"/groups/{api_gid}/messages", json={"messages": [A1, B2]}).status_code == 200
    r = client.post(f"/groups/{api_gid}/messages", json={"messages": [{**B2, "text": "Tuesday or Thursday?"}]})
    assert r.status_code == 200 and (r.json()["messages_edited"], r.json()["messages_skipped"]) == (1, 0)
    r = client.post(f"/groups/{api_gid}/messages", json={"messages": [{**B2, "text": "Tuesday or Thursday?"}]})
    assert (r.json()["messages_edited"], r.json()["messages_skipped"]) == (0, 1)
    r = client.post(f"/groups/{api_gid}/messages", json={"messages": [{**B2, "speaker": "Ada"}]})
    assert r.status_code == 409 and "'b2'" in r.json()["detail"] and "speaker" in r.json()["detail"]
    for gid in (cli_gid, api_gid):
        row = store.read_text("MATCH (m:Message {group_id: $g, id: 'b2'}) RETURN m.text AS t, m.text_history AS h",
                              g=gid)
        assert row == [{"t": "Tuesday or Thursday?", "h": ["Monday or Wednesday?"]}]


# -------------------------------------------------------------------- 4. duplicates in a batch


def test_duplicates_inside_one_batch(store, embedder, client, make_group, tmp_path):
    api_gid, cli_gid = make_group("dapi"), make_group("dcli")
    r = client.post(f"/groups/{api_gid}/messages", json={"messages": [A1, B2, dict(B2)]})
    assert r.status_code == 200, r.text
    assert (r.json()["messages_written"], r.json()["messages_skipped"]) == (2, 1)
    r = client.post(f"/groups/{api_gid}/messages", json={"messages": [A3, {**A3, "text": "Thursday then"}]})
    assert r.status_code == 200, r.text
    assert (r.json()["messages_written"], r.json()["messages_edited"], r.json()["messages_skipped"]) == (1, 1, 0)
    row = store.read_text("MATCH (m:Message {group_id: $g, id: 'a3'}) RETURN m.text AS t, m.text_history AS h",
                          g=api_gid)
    assert row == [{"t": "Thursday then", "h": ["Wednesday then"]}]
    r = client.post(f"/groups/{api_gid}/messages", json={"messages": [B2, {**B2, "ts": "2026-02-02T09:09:00+01:00"}]})
    assert r.status_code == 422 and r.json()["field"] == "messages.1.ts"
    assert "different content" not in r.json()["detail"] and "another ts" in r.json()["detail"]

    path = jsonl(tmp_path / "dup.jsonl", cli_gid, [A1, B2, B2])
    out = cli("ingest", str(path), "--format", "jsonl", "--json")
    assert out.returncode == 0, out.stderr
    assert (json.loads(out.stdout)["messages_written"], json.loads(out.stdout)["messages_skipped"]) == (2, 1)


# ------------------------------------------------------------------------------ 5. erasure


def erasure_group(store, embedder, gid: str) -> None:
    rows = [
        {"id": "e1", "speaker": "Ada", "text": "Where should the reunion be?"},
        {"id": "e2", "speaker": "Ben", "text": "My cousin runs the Quillebeuf lodge by the lake."},
        {"id": "e3", "speaker": "Cy", "text": "That sounds lovely, book it."},
        {"id": "e4", "speaker": "Ada", "text": "Agreed."},
    ]
    ingest_conversations(store, [conversation(gid, rows)], embedder)
    MemoryWriter(store, embedder, gid).segment(
        ["e1", "e2", "e3", "e4"],
        rec("x-lodge", "Cy", "Cy likes the Quillebeuf lodge idea", ["e2"]),  # supported by Ben only
        rec("x-book", "Cy", "Cy wants to book the reunion venue", ["e3"]),
    )


def assert_no_trace(store, embedder, gid: str, word: str = "Quillebeuf") -> None:
    for index in ("message_text", "derived_content"):
        found = store.read_text(
            f"CALL db.index.fulltext.queryNodes('{index}', $q) YIELD node WHERE node.group_id = $g "
            "RETURN collect(node.id) AS ids", q=word, g=gid)[0]["ids"]
        assert found == [], index
    vec = embedder.encode([f"the {word} lodge by the lake"])[0].tolist()
    for index in ("message_embedding", "derived_embedding"):
        texts = store.read_text(
            f"CALL db.index.vector.queryNodes('{index}', 10000, $v) YIELD node WHERE node.group_id = $g "
            "RETURN collect(coalesce(node.search_text, '') + ' ' + coalesce(node.text, '') + ' ' + "
            "coalesce(node.content, '')) AS t", v=vec, g=gid)[0]["t"]
        assert texts and not any(word in t for t in texts), index
    for mode in ("hybrid", "fulltext", "vector"):
        assert all(word not in h.text for h in search_messages(store, embedder, gid, word, k=10, mode=mode))
    anywhere = store.read_text(
        "MATCH (n) WHERE n.group_id = $g AND any(k IN keys(n) WHERE "
        "(n[k] IS :: STRING AND n[k] CONTAINS $w) OR (n[k] IS :: LIST<STRING> AND any(x IN n[k] WHERE x CONTAINS $w))) "
        "RETURN count(n) AS n", g=gid, w=word)
    assert anywhere == [{"n": 0}]


def test_erasing_a_person_removes_their_words_everywhere(store, embedder, client, make_group):
    lib, api, cmd = make_group("xlib"), make_group("xapi"), make_group("xcli")
    for gid in (lib, api, cmd):
        erasure_group(store, embedder, gid)
        doc = store.read_text("MATCH (m:Message {group_id: $g, id: 'e3'}) RETURN m.search_text AS d", g=gid)
        assert "Quillebeuf" in doc[0]["d"]  # the neighbour's document quotes Ben
    out = forget_person(store, lib, "Ben", settings=get_settings())
    assert (out.messages_deleted, out.records_deleted) == (1, 1)
    r = client.delete(f"/groups/{api}/persons/Ben")
    assert r.status_code == 200 and r.json()["messages_deleted"] == 1
    done = cli("forget", "--group", cmd, "--person", "Ben", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["messages_deleted"] == 1
    for gid in (lib, api, cmd):
        assert_no_trace(store, embedder, gid)
        by_id = {m["id"]: m for m in snapshot(store, gid)["messages"]}
        assert by_id["e3"]["search_text"] == "Ada: Where should the reunion be?\nCy: That sounds lovely, book it."
        assert [(i, by_id[i]["turn"], by_id[i]["turn_created"]) for i in ("e1", "e3", "e4")] == [
            ("e1", 0, 0), ("e3", 1, 1), ("e4", 2, 2)]
        assert chain(store, gid) == [["e1", "e3", "e4"]]
        kept = store.read_text("MATCH (d:Derived {group_id: $g}) RETURN collect(d.id) AS ids", g=gid)
        assert kept == [{"ids": ["x-book"]}]
