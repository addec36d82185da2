"""Input rules and limits (issue 10 items 6-9): the same input is accepted or refused the same way
by the library, the command line (a real ``graphmem`` process) and the HTTP API, against the real
Neo4j; a refusal names record and field, has one error shape and writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core import limits
from graphmem.core import times
from graphmem.core.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.query import ask
from tests.factories import conversation
from tests.factories import ask_budgets, runtime_of

pytestmark = pytest.mark.neo4j

GRAPHMEM = str(Path(sys.executable).parent / "graphmem")
EDGE_TS = ["9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+14:00", "2026-03-01T10:00:00Z"]


def cli(*args: str) -> subprocess.CompletedProcess:
    """Run the real command line (its error wrapper included) in a child process."""
    env = {**os.environ, "COLUMNS": "1000"}  # one error line, not wrapped by rich
    return subprocess.run([GRAPHMEM, *args], capture_output=True, text=True, timeout=300, env=env)


def stored(store, gid: str) -> list[dict]:
    return store.read_text(
        "MATCH (m:Message {group_id: $g})-[:IN_SESSION]->(s:Session) "
        "RETURN m.id AS id, m.ts AS ts, m.session AS session, s.id AS sid, m.instant AS instant "
        "ORDER BY m.turn_created", g=gid,
    )


def node_count(store, gid: str) -> int:
    rows = store.read_text("MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) RETURN count(n) AS n", g=gid)
    return rows[0]["n"]


def write_jsonl(path: Path, lines: list[dict]) -> Path:
    # ensure_ascii=True writes a lone surrogate as the escape "\ud83d", as an old client would
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture
def client(store, schema):
    with TestClient(create_app(Settings(_env_file=None))) as c:
        yield c


# ----------------------------------------------------------------------------- timestamps


def test_timestamp_rule_accepts_calendar_edges_and_orders_by_instant():
    late, early, mid = (times.parse_ts(t) for t in EDGE_TS)
    assert early.instant < mid.instant < late.instant
    assert (early.text, late.text, mid.text) == (
        "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00", "2026-03-01T10:00:00+00:00")
    assert early.instant == -62135596800.0 - 14 * 3600  # before 0001-01-01T00:00Z
    for bad in ("0000-12-31T00:00:00", "10000-01-01T00:00:00", "2026-01-01T00:00:00+24:00"):
        with pytest.raises(InvalidInputError) as e:
            times.parse_ts(bad, record="r1", field="ts")
        assert (e.value.record, e.value.field) == ("r1", "ts")


def test_edge_timestamps_same_graph_from_library_cli_and_api(store, embedder, make_group, client, tmp_path):
    rows = [{"id": f"m{i}", "speaker": "Ana", "text": f"note {i}", "ts": ts, "channel": "ops", "session": "day"}
            for i, ts in enumerate(EDGE_TS)]
    via_lib, via_cli, via_api = make_group("lib"), make_group("cli"), make_group("api")
    from loaders import load_conversations

    path = write_jsonl(tmp_path / "edges.jsonl", [{"group": via_lib, **r} for r in rows])
    ingest_conversations(store, load_conversations(path, "jsonl"), embedder)
    path = write_jsonl(tmp_path / "edges2.jsonl", [{"group": via_cli, **r} for r in rows])
    res = cli("ingest", str(path), "--format", "jsonl", "--json", "--no-progress")
    assert res.returncode == 0, res.stderr
    r = client.post(f"/groups/{via_api}/messages", json={"messages": rows})
    assert r.status_code == 200, r.text

    lib, cl, api = stored(store, via_lib), stored(store, via_cli), stored(store, via_api)
    # Ordered by instant (the library and CLI order by time; the API's ids keep request order,
    # so compare by id): every entry point stores the same normal form.
    by_id = lambda rs: {x["id"]: (x["ts"], x["session"], x["sid"], x["instant"]) for x in rs}  # noqa: E731
    assert by_id(lib) == by_id(cl) == by_id(api)
    assert by_id(api)["m2"] == ("2026-03-01T10:00:00+00:00", "ops/day", "ops/day", times.instant(EDGE_TS[2]))
    assert [x["id"] for x in cl] == ["m1", "m2", "m0"]  # by instant


# ----------------------------------------------------------------------------- refusals

BAD_MESSAGES = [  # (what, message fields, field named in the error)
    ("lone surrogate in text", {"text": "broken \ud83d emoji"}, "text"),
    ("text too long", {"text": "x" * (limits.MAX_TEXT_CHARS + 1)}, "text"),
    ("lone surrogate in speaker", {"speaker": "Ana\udc00"}, "speaker"),
    ("id too long", {"id": "x" * 5000}, "id"),
    ("control character in id", {"id": "m\n1"}, "id"),
    ("unparsable ts", {"ts": "2026-02-30T10:00:00"}, "ts"),
    ("reply to itself", {"reply_to": "ok1"}, "reply_to"),
    # '/' separates channel and session in stored session ids: "a/b" without a channel was
    # the session "b" of channel "a" (found by a messy-input trial)
    ("slash in a session without channel", {"session": "a/b"}, "session"),
]


def _good(i: int = 0, **kw) -> dict:
    return {"id": f"ok{i}", "speaker": "Ana", "text": "fine", "ts": f"2026-03-01T10:00:0{i}", **kw}


@pytest.mark.parametrize(("what", "bad", "field"), BAD_MESSAGES, ids=[b[0] for b in BAD_MESSAGES])
def test_library_refuses_bad_message_and_writes_nothing(store, embedder, group_id, what, bad, field):
    rows = [_good(0), _good(1, **bad)]
    with pytest.raises(InvalidInputError) as e:
        ingest_conversations(store, [conversation(group_id, rows)], embedder)
    assert (e.value.record, e.value.field) == ("row 1", field), what
    assert node_count(store, group_id) == 0  # not even the group or a person


APPEND_SHAPES = [  # what a library caller hands graphmem.groups.service.append_messages that is not a message
    ("no ts", {"id": "m1", "speaker": "Ana", "text": "hi"}, "ts"),
    ("no id", {"speaker": "Ana", "text": "hi", "ts": "2026-03-01T10:01:00Z"}, "id"),
    ("no text", {"id": "m1", "speaker": "Ana", "ts": "2026-03-01T10:01:00Z"}, "text"),
    ("no speaker", {"id": "m1", "text": "hi", "ts": "2026-03-01T10:01:00Z"}, "speaker"),
    ("text int", {"id": "m1", "speaker": "Ana", "text": 5, "ts": "2026-03-01T10:01:00Z"}, "text"),
    ("speaker list", {"id": "m1", "speaker": ["Ana"], "text": "hi", "ts": "2026-03-01T10:01:00Z"}, "speaker"),
    ("reply_to int", {"id": "m1", "speaker": "Ana", "text": "hi", "ts": "2026-03-01T10:01:00Z", "reply_to": 3},
     "reply_to"),
    ("not a mapping", "m1 Ana hi", "message"),
    # a misspelt key was ignored: the message was stored without its reply link
    ("unknown key", {"id": "m1", "speaker": "Ana", "text": "hi", "ts": "2026-03-01T10:01:00Z", "replyTo": "m0"},
     "replyTo"),
    # "" was taken as "no id": the message went to a second person keyed by the display name
    ("empty speaker_id", {"id": "m1", "speaker": "Ana", "speaker_id": "", "text": "hi", "ts": "2026-03-01T10:01:00Z"},
     "speaker_id"),
]


@pytest.mark.parametrize(("what", "bad", "field"), APPEND_SHAPES, ids=[b[0] for b in APPEND_SHAPES])
def test_library_append_refuses_wrong_shape_naming_message_and_field(store, embedder, group_id, what, bad, field):
    from graphmem.groups.service import append_messages

    good = {"id": "m0", "speaker": "Ana", "text": "fine", "ts": "2026-03-01T10:00:00Z"}
    with pytest.raises(InvalidInputError) as e:  # not KeyError, AttributeError or pydantic's error
        append_messages(store, embedder, group_id, [good, bad])
    assert (e.value.source, e.value.record, e.value.field) == ("api", "request message 1", field), what
    assert node_count(store, group_id) == 0


def test_library_append_refuses_a_bad_group_or_no_message(store, embedder, group_id):
    from graphmem.groups.service import append_messages

    good = {"id": "m0", "speaker": "Ana", "text": "fine", "ts": "2026-03-01T10:00:00Z"}
    for bad in (None, 5, "a/b", ""):  # was pydantic's ValidationError dump for None and 5
        with pytest.raises(InvalidInputError) as e:
            append_messages(store, embedder, bad, [good])  # type: ignore[arg-type]
        assert e.value.field == "group", bad
    with pytest.raises(InvalidInputError) as e:  # was: an empty group created
        append_messages(store, embedder, group_id, [])
    assert e.value.field == "messages"
    assert node_count(store, group_id) == 0


def test_a_null_optional_field_is_the_field_left_out_on_every_face(store, embedder, make_group, client, tmp_path):
    """"reply_to": null and "channel": null were refused by the HTTP API and MCP (422: not a
    string) but read as "none" by JSON Lines and Memory.append mappings. One rule now: an
    optional field sent as null is the field left out. Found by a messy-input trial."""
    from pydantic import TypeAdapter

    from graphmem.groups.service import append_messages
    from graphmem.mcp_args import Messages
    from loaders import load_conversations

    row = {"id": "n1", "speaker": "Ana", "text": "null means none", "ts": "2026-03-01T10:00:00Z",
           "session": "s", "reply_to": None, "channel": None}
    via_jsonl, via_lib, via_api, via_mcp = (make_group(p) for p in ("jsonl", "lib", "api", "mcp"))
    path = write_jsonl(tmp_path / "null.jsonl", [{"group": via_jsonl, **row}])
    ingest_conversations(store, load_conversations(path, "jsonl"), embedder)
    append_messages(store, embedder, via_lib, [row])
    r = client.post(f"/groups/{via_api}/messages", json={"messages": [row]})
    assert r.status_code == 200, r.text
    # the MCP tool's argument model (what append_messages is validated with before it runs)
    checked = TypeAdapter(Messages).validate_python([{**row, "speaker_id": None, "kind": None, "edited_ts": None,
                                                      "attachments": None, "mentions": None}])
    append_messages(store, embedder, via_mcp, [m.model_dump() for m in checked])
    got = [store.read_text("MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.channel AS channel, "
                           "m.session AS session, m.reply_to AS reply_to, m.kind AS kind", g=g)
           for g in (via_jsonl, via_lib, via_api, via_mcp)]
    assert got[0] == got[1] == got[2] == got[3] == [
        {"id": "n1", "channel": "", "session": "s", "reply_to": "", "kind": ""}], got
    for required in ("id", "speaker", "text", "ts"):  # a required field sent as null is missing
        r = client.post(f"/groups/{via_api}/messages", json={"messages": [{**row, required: None}]})
        assert r.status_code == 422 and r.json()["field"] == f"messages.0.{required}", r.text


def test_stats_of_an_unknown_group_is_an_error(store, group_id):
    res = cli("stats", "--group", group_id)  # was: exit 0 with an empty table
    assert res.returncode == 1 and f"no group {group_id!r}" in res.stderr, res.stderr


def test_search_budgets_must_be_integers(store, embedder, group_id):
    from graphmem.recall.search import search_messages

    ingest_conversations(store, [conversation(group_id, [_good(0)])], embedder)
    for kw in ({"k": "5"}, {"k": 2.5}, {"k": True}, {"pool_n": "40"}, {"expand": 1.5}):
        with pytest.raises(InvalidInputError) as e:  # was a TypeError from the comparison or slice
            search_messages(store, embedder, group_id, "fine", **kw)  # type: ignore[arg-type]
        assert e.value.field == next(iter(kw)), kw


def test_ask_refuses_an_unknown_field_over_http(store, embedder, group_id, client):
    """A misspelt ``as_of`` ("asOf") was ignored: the answer came from the current state."""
    ingest_conversations(store, [conversation(group_id, [_good(0)])], embedder)
    r = client.post(f"/groups/{group_id}/ask", json={"question": "what is fine?", "asOf": "2026-03-01T10:00:00Z"})
    assert r.status_code == 422 and r.json()["field"].endswith("asOf"), r.json()


@pytest.mark.parametrize(("what", "bad", "field"), BAD_MESSAGES, ids=[b[0] for b in BAD_MESSAGES])
def test_cli_refuses_bad_message_names_line_and_field_and_writes_nothing(store, group_id, tmp_path, what, bad, field):
    path = write_jsonl(tmp_path / "bad.jsonl", [{"group": group_id, "session": "s", **_good(0)},
                                                {"group": group_id, "session": "s", **_good(1, **bad)}])
    res = cli("ingest", str(path), "--format", "jsonl", "--no-progress")
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    assert "record line 2" in res.stderr and f"field '{field}'" in res.stderr, res.stderr
    assert node_count(store, group_id) == 0


@pytest.mark.parametrize(("what", "bad", "field"), BAD_MESSAGES, ids=[b[0] for b in BAD_MESSAGES])
def test_api_refuses_bad_message_with_one_error_shape_and_writes_nothing(store, group_id, client, what, bad, field):
    body = json.dumps({"messages": [_good(0), _good(1, **bad)]})  # ascii escapes, as old clients send
    r = client.post(f"/groups/{group_id}/messages", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    got = r.json()
    assert set(got) == {"detail", "error", "field"} and got["error"] == "InvalidInputError"
    assert got["field"].split(".")[-1] == field, got
    assert "x" * 300 not in r.text and "\\ud83d" not in r.text.lower()  # no echo of the input
    assert node_count(store, group_id) == 0
    assert client.get(f"/groups/{group_id}/roster").status_code == 404


def test_group_id_grammar_is_the_same_everywhere(store, embedder, make_group, client, tmp_path):
    slashed = make_group("a") + "/b"
    with pytest.raises(InvalidInputError) as e:
        ingest_conversations(store, [conversation(slashed, [_good(0)])], embedder)
    assert e.value.field == "group" and "'/'" in str(e.value)
    path = write_jsonl(tmp_path / "g.jsonl", [{"group": slashed, "session": "s", **_good(0)}])
    res = cli("ingest", str(path), "--format", "jsonl", "--no-progress")
    assert res.returncode == 1 and "field 'group'" in res.stderr
    long_gid = "g" * 5000
    r = client.post(f"/groups/{long_gid}/messages", json={"messages": [_good(0)]})
    # the route's {group_id} is checked before the body (as MCP checks its group_id argument)
    assert r.status_code == 422 and r.json()["field"] == "group_id" and long_gid not in r.text
    for gid in (slashed, long_gid, slashed.split("/")[0]):
        assert node_count(store, gid) == 0


def test_channel_qualified_session_is_the_library_rule(store, embedder, group_id):
    # a record whose session is not "<channel>/<session>" is refused, whoever built it
    rows = [{**_good(0), "channel": "ops", "session": "day"}]
    with pytest.raises(InvalidInputError) as e:
        ingest_conversations(store, [conversation(group_id, rows)], embedder)
    assert e.value.field == "session" and "channel-qualified" in str(e.value)
    with pytest.raises(InvalidInputError) as e:
        limits.session_id("a/b", "day")
    assert e.value.field == "channel"
    assert limits.session_id("ops", "day") == "ops/day" and limits.session_id("", "day") == "day"


# ----------------------------------------------------------------------------- error bodies


def test_request_validation_errors_have_the_documented_shape_without_echo(client, group_id, store):
    many = [{"id": f"m{i}", "speaker": "Ana", "text": "word " * 10, "ts": "2026-03-01T10:00:00"}
            for i in range(limits.MAX_MESSAGES_PER_REQUEST + 1)]
    r = client.post(f"/groups/{group_id}/messages", json={"messages": many})
    assert r.status_code == 422
    assert r.json()["field"] == "messages" and r.json()["error"] == "InvalidInputError"
    assert len(r.content) < 1000  # not the 800 KB request back
    # a lone surrogate beside another refused field: still 422 with the shape (never a 500 from
    # encoding the echoed input), the first field named and the others counted
    raw = '{"messages": [{"id": "m1", "speaker": "A", "text": "hi \\ud83d", "ts": 5}]}'
    r = client.post(f"/groups/{group_id}/messages", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422 and set(r.json()) == {"detail", "error", "field"}
    assert r.json()["field"] == "messages.0.text" and "1 more problem" in r.json()["detail"]
    r = client.post(f"/groups/{group_id}/messages", content="{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and set(r.json()) == {"detail", "error", "field"}
    # bytes that are not UTF-8 (a Latin-1 client): the same shape, not FastAPI's bare 400
    latin1 = '{"messages": [{"id": "m1", "speaker": "A", "text": "caf\xe9", "ts": "2026-03-01T10:00:00"}]}'
    r = client.post(f"/groups/{group_id}/messages", content=latin1.encode("latin-1"),
                    headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["field"] == "body" and r.json()["error"] == "InvalidInputError"
    assert "UTF-8" in r.json()["detail"]
    assert client.get("/no/such/route").status_code == 404  # other HTTP errors keep FastAPI's answer
    assert node_count(store, group_id) == 0


# ----------------------------------------------------------------------------- limits


def test_budget_limits_are_one_set_for_library_cli_and_api(store, embedder, group_id, client):
    ingest_conversations(store, [conversation(group_id, [_good(0)])], embedder)
    with pytest.raises(InvalidInputError) as e:
        ask(runtime_of(store, embedder), group_id, "what is fine?", budgets=ask_budgets(s1_k=limits.MAX_S1_K + 1))
    assert e.value.field == "s1_k"
    with pytest.raises(InvalidInputError) as e:
        ask(runtime_of(store, embedder), group_id, "what is \ud83d?")
    assert e.value.field == "question"
    with pytest.raises(InvalidInputError) as e:  # a zero-width space only: was answered
        ask(runtime_of(store, embedder), group_id, "\u200b")
    assert e.value.field == "question"
    res = cli("ask", "what is fine?", "--group", group_id, "--s1-k", "1000000000", "--json")
    assert res.returncode == 1 and "field 's1_k'" in res.stderr and "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1, res.stderr  # one line, though stderr is a pipe (was wrapped at 80)
    r = client.post(f"/groups/{group_id}/ask", json={"question": "what is fine?", "s1_k": 1000000000})
    assert r.status_code == 422 and r.json()["field"] == "s1_k"
    r = client.post(f"/groups/{group_id}/ask", content='{"question": "what is \\ud83d?"}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["field"] == "question"
    # the boundary itself is accepted everywhere
    assert ask(runtime_of(store, embedder), group_id, "what is fine?", budgets=ask_budgets(s1_k=limits.MAX_S1_K)).budgets.top_k == limits.MAX_S1_K


# ----------------------------------------------------------------------------- blank segments

BLANKS = [  # session s1 has words; every message of s2 is blank
    {"id": "w1", "speaker": "Ana", "text": "Let's sail on Friday at nine.", "session": "s1"},
    {"id": "w2", "speaker": "Bo", "text": "Friday works, I'll bring the keys.", "session": "s1"},
    {"id": "b1", "speaker": "Ana", "text": "   ", "session": "s2"},
    {"id": "b2", "speaker": "Bo", "text": "\n\t", "session": "s2"},
]


def store_with_legacy_blanks(store, embedder, gid: str, rows: list[dict]) -> None:
    """Messages whose text is blank, as a store written before blank text was refused holds
    them: ingested with words, then given their blank text in the database (ingest refuses it
    now, docs/reliability.md; what was stored stays readable and derivable)."""
    ingest_conversations(store, [conversation(gid, [dict(r, text=r["text"] if r["text"].strip() else "was blank")
                                                    for r in rows])], embedder)
    blanks = [{"id": r["id"], "text": r["text"]} for r in rows if not r["text"].strip()]
    store.write_tx(lambda tx: tx.run("UNWIND $rows AS r MATCH (m:Message {group_id: $g, id: r.id}) "
                                     "SET m.text = r.text", rows=blanks, g=gid).consume())


def _segments(store, gid: str) -> dict[str, dict]:
    from graphmem.derived import memory

    return {s.session: {"skipped": s.skipped, "calls": s.calls} for s in memory.list_segments(store, gid)}


def test_blank_segment_gets_no_writer_call_library(store, embedder, group_id):
    from graphmem.derived.writer import derive_group
    from tests.scripted_llm import Reply, ScriptedLLM

    store_with_legacy_blanks(store, embedder, group_id, BLANKS)
    with ScriptedLLM() as server:
        server.route(ScriptedLLM.any_message_contains("SESSION: s1\n"), Reply.json({"actions": [
            {"action": "ADD", "owner": "Ana", "source": "Ana", "layer": "per_speaker_core", "utype": "fact",
             "content": "Ana plans to sail on Friday at nine"}]}))
        server.handler = Reply.json({"actions": [{"action": "NOOP"}]})
        summary = derive_group(store, group_id, model=server.chat_model(), embedder=embedder,
                               settings=Settings(_env_file=None, llm_max_retries=0))
        asked = [json.dumps(b["messages"]) for b in server.chat_requests]
    assert len(asked) == 1 and "SESSION: s1" in asked[0]  # s2 was never sent
    assert (summary.segments_written, summary.segments_skipped, summary.records_added) == (2, 1, 1)
    assert _segments(store, group_id) == {"s1": {"skipped": "", "calls": 1}, "s2": {"skipped": "blank", "calls": 0}}


def test_record_resting_only_on_blank_messages_is_refused(store, embedder, group_id):
    from graphmem.derived import memory

    store_with_legacy_blanks(store, embedder, group_id, BLANKS)
    vec = embedder.encode(["Ana said something"])[0].tolist()
    bad = memory.NewRecord(id="r1", layer="per_speaker_core", utype="fact", content="Ana said something",
                           owner="Ana", source="Ana", ts="2026-01-01T10:00:02", from_ids=["b1", "b2"], embedding=vec)
    marker = memory.SegmentMarker(id="seg-0001", index=1, session="s2", message_ids=["b1", "b2"])
    with pytest.raises(InvalidInputError) as e:
        memory.write_segment(store, group_id, marker, [bad])
    assert (e.value.record, e.value.field) == ("r1", "from_ids")
    assert memory.list_segments(store, group_id) == [] and memory.list_records(store, group_id) == []
    # one readable supporting message is enough
    ok = bad.model_copy(update={"from_ids": ["b1", "w1"]})
    assert memory.write_segment(store, group_id, marker.model_copy(update={"message_ids": ["b1", "w1"]}), [ok]).created == ["r1"]


def test_blank_segments_need_no_writer_cli_and_api(store, embedder, make_group, client):
    blank_only = [dict(r, id=f"x{i}") for i, r in enumerate(BLANKS[2:])]
    via_cli, via_api = make_group("cli"), make_group("api")
    for gid in (via_cli, via_api):
        store_with_legacy_blanks(store, embedder, gid, blank_only)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHMEM_LLM_", "GRAPHMEM_WRITER_"))}
    res = subprocess.run([GRAPHMEM, "derive", "--group", via_cli, "--no-progress"], capture_output=True,
                         text=True, timeout=300, env={**env, "COLUMNS": "1000"})
    assert res.returncode == 0, res.stderr  # no Writer configured, and none needed
    assert "1 skipped as blank (no Writer call)" in res.stdout, res.stdout
    r = client.post(f"/groups/{via_api}/derive")  # the test app has no Writer model either
    assert r.status_code == 200, r.text
    assert (r.json()["segments_skipped"], r.json()["calls"], r.json()["done"]) == (1, 0, True)
    for gid in (via_cli, via_api):
        assert _segments(store, gid) == {"s2": {"skipped": "blank", "calls": 0}}


# ----------------------------------------------------------------------------- blank text


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\u200b"], ids=["empty", "spaces", "newline-tab", "zero-width"])
def test_blank_text_is_stored_flagged_and_an_edit_to_it_is_an_edit(store, embedder, group_id, tmp_path, text):
    """Issue 26: a message without a visible character is stored verbatim (flagged ``no_text``,
    no search document) by the library and the first-load importer alike; an edit of a stored
    message to such a text is an edit (history kept). CLI, API and MCP:
    tests/integration/test_chat_import.py."""
    from graphmem.verbatim.bulk_import import write_csv

    ingest_conversations(store, [conversation(group_id, [_good(0)])], embedder)
    s = ingest_conversations(store, [conversation(group_id, [_good(1), _good(2, text=text)])], embedder)
    assert s.messages_written == 2
    s = ingest_conversations(store, [conversation(group_id, [{**_good(0), "text": text}])], embedder)
    assert s.messages_edited == 1
    got = store.read_text("MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.text AS text, m.no_text AS flag, "
                          "m.search_text IS NULL AND m.embedding IS NULL AS no_doc, m.text_history AS history, "
                          "m:PendingEmbedding AS pending ORDER BY m.id", g=group_id)
    assert got == [{"id": "ok0", "text": text, "flag": True, "no_doc": True, "history": ["fine"], "pending": False},
                   {"id": "ok1", "text": "fine", "flag": False, "no_doc": False, "history": None, "pending": False},
                   {"id": "ok2", "text": text, "flag": True, "no_doc": True, "history": None, "pending": False}]
    summary = write_csv([conversation(group_id, [_good(1), _good(2, text=text)])], tmp_path / "csv")
    assert summary.messages_written == 2


# ----------------------------------------------------------------------------- looked-up ids


@pytest.mark.parametrize("bad, why", [
    ("", "id is empty"),
    ("x" * (limits.MAX_ID_CHARS + 1), f"at most {limits.MAX_ID_CHARS}"),
    ("a\udcff", "lone UTF-16 surrogate U+DCFF"),
    (5, "id must be a string, got int"),
])
def test_library_refuses_a_bad_looked_up_id_naming_the_parameter(store, embedder, make_group, bad, why):
    """Every Memory method that looks an id up checks it as MCP and the HTTP API do: empty,
    over-long, a lone surrogate (a UnicodeEncodeError inside the driver before) or not a string
    is an InvalidInputError naming the parameter; the long id is not echoed."""
    from graphmem import Memory

    gid = make_group()
    ingest_conversations(store, [conversation(gid, [{"speaker": "Ben", "text": "ridge trail"},
                                                    {"speaker": "Ana", "text": "lake trail"}])], embedder)
    mem = Memory(runtime_of(store, embedder))
    calls = {
        "message_id": lambda: mem.message(gid, bad),
        "record_id": lambda: mem.provenance(gid, bad),
        "person_id": lambda: mem.person(group_id=gid, person_id=bad),
        "group_id": lambda: mem.search(bad, "ridge"),
    }
    for field, call in calls.items():
        with pytest.raises(InvalidInputError) as e:
            call()
        assert e.value.field == field and why in str(e.value), (field, str(e.value)[:300])
        assert len(str(e.value)) < 400
    with pytest.raises(InvalidInputError, match="record_id"):
        mem.history(gid, bad)
    with pytest.raises(InvalidInputError, match="person_id"):
        mem.forget_person(gid, bad)
    assert len(mem.roster(gid)) == 2  # a good id still works, nothing was erased


def test_cli_refuses_an_argument_that_is_not_utf8_in_one_line(store, embedder, make_group, tmp_path):
    """An argument that is not UTF-8 (``--group $'\\xff'``) is refused before any work, in one
    line naming its place and byte (a UnicodeEncodeError traceback before); a file name may hold
    any bytes, so an existing path is the command's to read."""
    gid = make_group()
    ingest_conversations(store, [conversation(gid, [{"speaker": "Ben", "text": "ridge trail"}])], embedder)
    env = {**os.environ, "COLUMNS": "1000"}
    for args, place in (([b"roster", b"--group", b"a\xff"], 3), ([b"search", b"--group", gid.encode(), b"caf\xff"], 4),
                        ([b"message", b"--group", gid.encode(), b"\xffm1"], 4)):
        res = subprocess.run([GRAPHMEM.encode(), *args], capture_output=True, timeout=300, env=env)
        stderr = res.stderr.decode("utf-8", "replace")
        assert res.returncode == 1, (args, stderr[-800:])
        assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr[-800:]
        assert f"argument {place} is not UTF-8 text (byte 0xFF" in stderr, stderr
    odd_bytes = bytes(tmp_path) + b"/chat\xff.jsonl"
    with open(odd_bytes, "w", encoding="utf-8") as f:
        f.write(json.dumps({"id": "m1", "speaker": "Ana", "session": "s1", "text": "hello",
                            "ts": "2026-05-10T09:00:00+00:00"}) + "\n")
    new_gid = make_group()
    try:
        res = subprocess.run([GRAPHMEM.encode(), b"ingest", odd_bytes, b"--format", b"jsonl", b"--group",
                              new_gid.encode(), b"--json"], capture_output=True, timeout=300, env=env)
        assert res.returncode == 0, res.stderr.decode("utf-8", "replace")[-800:]
        assert json.loads(res.stdout)["messages_written"] == 1
    finally:
        os.unlink(odd_bytes)


def test_api_refuses_an_over_long_group_id_like_mcp_and_the_library(client):
    """A route's {group_id} over MAX_ID_CHARS characters is a 422 (MCP and the library refuse
    it as invalid too), not a 404 echoing it."""
    long_id = "g" * (limits.MAX_ID_CHARS + 1)
    for path in (f"/groups/{long_id}/search?q=ridge", f"/groups/{long_id}/roster", f"/groups/{long_id}/graph",
                 f"/groups/{long_id}/persons/ben/memory", f"/groups/{long_id}/records/r1/provenance",
                 f"/groups/{long_id}/export", f"/groups/{long_id}/jobs"):
        r = client.get(path)
        assert r.status_code == 422, (path, r.status_code, r.text[:300])
        assert long_id not in r.text
