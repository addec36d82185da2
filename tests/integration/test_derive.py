"""`derive`: the Writer over real Neo4j and the scripted OpenAI-compatible server.

The real openai client and HTTP path run; each test works under its own group.
"""

from __future__ import annotations

import json
import re
import threading

import pytest
from typer.testing import CliRunner

from graphmem.derived import memory
from graphmem.core.config import Settings, get_settings
from graphmem.core.errors import LLMError
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.llm import LLMOutputError
from graphmem.derived.memory import GROUP
from graphmem.derived.writer import derive_group
from tests.factories import conversation
from tests.scripted_llm import Reply, ScriptedLLM

pytestmark = pytest.mark.neo4j

FAMILY = [
    {"speaker": "Mom", "text": "My knee still hurts.", "session": "s1", "ts": "2026-03-05T10:00:00"},   # m0000
    {"speaker": "Cara", "text": "Mom needs the easy trail.", "session": "s1", "ts": "2026-03-05T10:01:00"},  # m0001
    {"speaker": "Ben", "text": "The ridge has better views.", "session": "s1", "ts": "2026-03-05T10:02:00"},  # m0002
    {"speaker": "Dad", "text": "Let's take the easy trail.", "session": "s2", "ts": "2026-03-18T09:00:00"},  # m0003
    {"speaker": "Ben", "text": "I still prefer the ridge, but I could live with a mix.", "session": "s2",
     "ts": "2026-03-18T09:01:00"},  # m0004
    {"speaker": "Dad", "text": "Easy trail for everyone, that's settled.", "session": "s3",
     "ts": "2026-05-02T18:00:00"},  # m0005
    {"speaker": "Cara", "text": "I'll stay with Mom.", "session": "s3", "ts": "2026-05-02T18:01:00"},  # m0006
    {"speaker": "Ben", "text": "Okay, easy trail it is.", "session": "s3", "ts": "2026-05-02T18:02:00"},  # m0007
    {"speaker": "Ben", "text": "The trail was great after all.", "session": "s4", "ts": "2026-05-10T12:00:00"},  # m0008
    {"speaker": "Mom", "text": "My knee held up fine.", "session": "s4", "ts": "2026-05-10T12:01:00"},  # m0009
]


def settings(**kw) -> Settings:
    return Settings(_env_file=None, **kw)


def in_session(name: str):
    return ScriptedLLM.any_message_contains(f"SESSION: {name}\n")


def answer(*actions) -> Reply:
    return Reply.json({"actions": list(actions)})


def add(owner, source, layer, utype, content):
    return {"action": "ADD", "owner": owner, "source": source, "layer": layer, "utype": utype, "content": content}


def upd(entry_id, content):
    return {"action": "UPDATE", "entry_id": entry_id, "content": content}


NOOP = {"action": "NOOP"}


def script_family(server: ScriptedLLM) -> None:
    """A plausible Writer for FAMILY: ADD, cross-person, GROUP decision, UPDATE chain, NOOP."""
    server.route(in_session("s1"), answer(
        add("Mom", "Mom", "per_speaker_core", "fact", "her knee still hurts"),
        add("Mom", "Cara", "per_speaker_profile", "observation", "needs the easy trail"),
        add("Ben", "Ben", "per_speaker_core", "stance", "prefers the ridge for its views"),
    ))
    server.route(in_session("s2"), answer(
        upd("e1.3", "still prefers the ridge but could live with a mix"),
        add("GROUP", "Dad", "group_interaction", "decision", "the family takes the easy trail"),
    ))
    server.route(in_session("s3"), answer(
        upd("e2.1", "accepts the easy trail"),
        NOOP,
    ))
    server.route(in_session("s4"), answer(NOOP))


def run(store, embedder, gid, server, **kw):
    model = kw.pop("model", None) or server.chat_model()
    return derive_group(store, gid, model=model, embedder=embedder, settings=kw.pop("settings", settings()), **kw)


def snapshot(store, gid):
    nodes = store.read_text(
        "MATCH (n {group_id: $g}) RETURN labels(n) AS l, n.id AS id, n.state AS state, n.content AS c "
        "ORDER BY id", g=gid)
    rels = store.read_text(
        "MATCH (a {group_id: $g})-[r]->(b) RETURN a.id AS a, type(r) AS t, b.id AS b ORDER BY a, t, b", g=gid)
    group = store.read_text("MATCH (g:Group {id: $g}) RETURN properties(g) AS p", g=gid)
    return nodes, rels, group


@pytest.fixture
def family(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, FAMILY)], embedder)
    return group_id


def sessions_asked(server: ScriptedLLM) -> list[str]:
    found = []
    for body in server.chat_requests:
        text = body["messages"][-1]["content"]
        found.append(re.search(r"SESSION: (\S+)", text).group(1))
    return found


# ------------------------------------------------------------------------------ the happy path
def test_add_update_noop_cross_person_and_group_decision(store, embedder, family, scripted_llm):
    script_family(scripted_llm)
    summary = run(store, embedder, family, scripted_llm)
    gid = family

    assert (summary.segments_written, summary.records_added, summary.records_updated, summary.noops) == (4, 4, 2, 2)
    assert summary.calls == 4 and summary.actions_rejected == 0
    assert summary.prompt_tokens > 0 and summary.completion_tokens > 0

    heads = {h.id: h for h in memory.current_heads(store, gid)}
    assert set(heads) == {"e1.1", "e1.2", "e2.2", "e3.1"}

    # cross-person: Cara says Mom needs the easy trail -> owner Mom, source Cara, FROM Cara's message
    cross = heads["e1.2"]
    assert (cross.owner, cross.source, cross.layer) == ("Mom", "Cara", "per_speaker_profile")
    assert cross.from_ids == ["m0001"] and cross.confidence == 0.9
    # a decision announced by one person is a GROUP record, sourced to that person
    decision = heads["e2.2"]
    assert (decision.owner, decision.owner_kind, decision.source, decision.layer, decision.utype) == (
        GROUP, "group", "Dad", "group_interaction", "decision")
    assert decision.from_ids == ["m0003"] and decision.ts == "2026-03-18T09:00:00" and decision.session == "s2"
    assert store.read_text(
        "MATCH (:Derived:Interaction {group_id: $g, id: 'e2.2'})-[:OWNER]->(o:Group) RETURN o.id AS id", g=gid
    ) == [{"id": gid}]

    # a chain of three states: head and full
    head = heads["e3.1"]
    assert (head.content, head.owner, head.source, head.layer, head.supersedes) == (
        "accepts the easy trail", "Ben", "Ben", "per_speaker_core", "e2.1")
    chain = memory.record_chain(store, gid, "e3.1")
    assert [(c.id, c.state, c.content) for c in chain] == [
        ("e1.3", "superseded", "prefers the ridge for its views"),
        ("e2.1", "superseded", "still prefers the ridge but could live with a mix"),
        ("e3.1", "head", "accepts the easy trail"),
    ]
    assert [c.ts for c in chain] == ["2026-03-05T10:02:00", "2026-03-18T09:01:00", "2026-05-02T18:02:00"]
    assert [c.from_ids for c in chain] == [["m0002"], ["m0004"], ["m0007"]]
    # chains are walkable in Cypher (as in Neo4j Browser)
    walk = store.read_text(
        "MATCH p = (a:Derived {group_id: $g, id: 'e1.3'})-[:SUPERSEDED_BY*]->(h {state: 'head'}) "
        "RETURN [n IN nodes(p) | n.id] AS ids", g=gid)
    assert walk == [{"ids": ["e1.3", "e2.1", "e3.1"]}]
    # every derived node has exactly one OWNER, one SOURCE and >= 1 FROM, and an embedding
    links = store.read_text(
        "MATCH (d:Derived {group_id: $g}) RETURN d.id AS id, COUNT { (d)-[:OWNER]->() } AS o, "
        "COUNT { (d)-[:SOURCE]->() } AS s, COUNT { (d)-[:FROM]->(:Message) } AS f, size(d.embedding) AS dim",
        g=gid)
    assert len(links) == 6
    assert all(r["o"] == 1 and r["s"] == 1 and r["f"] >= 1 and r["dim"] == embedder.dimension for r in links)

    # what the Writer saw: the second prompt lists the first segment's heads
    second = scripted_llm.chat_requests[1]["messages"][-1]["content"]
    assert "e1.3 [per_speaker_core|Ben(by Ben)@2026-03-05] prefers the ridge for its views" in second
    assert "e1.2 [per_speaker_profile|Mom(by Cara)@2026-03-05] needs the easy trail" in second
    assert scripted_llm.chat_requests[0]["response_format"] == {"type": "json_object"}

    # reports and usage are stored per segment
    segs = memory.list_segments(store, gid)
    assert [(s.index, s.session, s.added, s.updated, s.calls) for s in segs] == [
        (1, "s1", 3, 0, 1), (2, "s2", 1, 1, 1), (3, "s3", 0, 1, 1), (4, "s4", 0, 0, 1)]
    assert all(s.stage == "writer" and s.prompt_tokens > 0 and s.model == scripted_llm.model for s in segs)
    assert segs[2].report["outcomes"][0]["entry_id"] == "e3.1"
    assert segs[2].report["outcomes"][0]["target"] == "e2.1"


def test_state_as_of_follows_the_chain(store, embedder, family, scripted_llm):
    script_family(scripted_llm)
    run(store, embedder, family, scripted_llm)
    ben = lambda at: [r.content for r in memory.state_as_of(store, family, at) if r.owner == "Ben"]  # noqa: E731
    assert ben("2026-03-10") == ["prefers the ridge for its views"]
    assert ben("2026-04-01") == ["still prefers the ridge but could live with a mix"]
    assert ben("2026-06-01") == ["accepts the easy trail"]


def test_speaker_levenshtein_scores_the_written_memory(store, embedder, family, scripted_llm):
    from graphmem.eval.speaker_levenshtein import speaker_levenshtein

    script_family(scripted_llm)
    run(store, embedder, family, scripted_llm)
    heads = memory.current_heads(store, family)
    written = [{"owner": h.owner, "source": h.source, "layer": h.layer, "content": h.content} for h in heads]
    assert speaker_levenshtein(written, written).phi == pytest.approx(1.0)
    # the same content filed under the wrong owner earns nothing for that owner
    swapped = [dict(r, owner="Cara") if r["owner"] == "Mom" and r["source"] == "Cara" else r for r in written]
    assert speaker_levenshtein(swapped, written).phi < 0.9


# ------------------------------------------------------------------------------ validation in the pipeline
def test_rejections_are_reported_stored_and_not_written(store, embedder, family, scripted_llm):
    scripted_llm.route(in_session("s1"), answer(
        add("Ben", "Ben", "per_speaker_core", "stance", "prefers the ridge"),
        add("Zed", "Ben", "per_speaker_core", "fact", "a stranger"),                       # unknown_owner
        add("Ben", "Ben", "group_insight", "observation", "likes views"),                  # group layer, person owner
        add("GROUP", "Dad", "per_speaker_core", "fact", "the family hikes"),               # person layer, GROUP owner
        add("Ben", "Ben", "per_speaker_core", "stance", "Prefers the ridge."),             # duplicate
        upd("e0.0", "something new"),                                                      # unresolved_entry_id
        {"action": "UPDATE", "entry_id": "e0.0", "owner": "Cara", "source": "Cara",
         "layer": "per_speaker_profile", "utype": "observation", "content": "cares for Mom"},  # -> ADD
        {"action": "MERGE"},                                                               # unknown_action
    ))  # 8 actions: the limit for 3 messages
    scripted_llm.route(in_session("s2"), answer(
        upd("e1.1", "prefers the ridge!"),                                                 # unchanged_update
        add("Ben", "Ben", "per_speaker_core", "mood", "x"),                                # unknown_utype
        add("Ben", "Ben", "core", "fact", "y"),                                            # unknown_layer
    ))
    scripted_llm.handler = lambda body: Reply.json({"actions": [NOOP]})
    summary = run(store, embedder, family, scripted_llm)

    assert summary.rejections == {
        "unknown_owner": 1, "group_layer_needs_group_owner": 1, "person_layer_needs_person_owner": 1,
        "duplicate": 1, "unresolved_entry_id": 1, "unknown_action": 1, "unknown_utype": 1, "unknown_layer": 1,
        "unchanged_update": 1}
    heads = sorted(memory.current_heads(store, family), key=lambda h: h.id)
    assert [(h.id, h.owner, h.content) for h in heads] == [
        ("e1.1", "Ben", "prefers the ridge"), ("e1.2", "Cara", "cares for Mom")]
    assert summary.records_updated == 0
    rep = memory.list_segments(store, family)[0].report
    assert rep["accepted"] == 2 and rep["rejected"] == 6 and rep["attempted"] == 8


def test_actions_over_the_limit_are_cut(store, embedder, family, scripted_llm):
    many = [add("Ben", "Ben", "per_speaker_core", "fact", f"fact number {i}") for i in range(10)]
    scripted_llm.route(in_session("s1"), answer(*many))  # 3 messages -> limit max(8, 6) = 8
    scripted_llm.handler = lambda body: Reply.json({"actions": [NOOP]})
    summary = run(store, embedder, family, scripted_llm)
    assert summary.rejections == {"too_many_actions": 2}
    assert len(memory.current_heads(store, family)) == 8
    assert "at most 8 actions" in scripted_llm.chat_requests[0]["messages"][-1]["content"]


# ------------------------------------------------------------------------------ failures and resume
def test_malformed_json_is_retried_then_accepted(store, embedder, family, scripted_llm):
    scripted_llm.enqueue(Reply.malformed_json(), answer(add("Ben", "Ben", "per_speaker_core", "stance", "likes ridges")))
    scripted_llm.handler = lambda body: Reply.json({"actions": [NOOP]})
    summary = run(store, embedder, family, scripted_llm, max_segments=1)
    assert summary.calls == 2 and summary.rejections == {"parse_error": 1}
    seg = memory.list_segments(store, family)[0]
    assert len(seg.report["parse_errors"]) == 1 and seg.calls == 2 and seg.added == 1
    assert [u["stage"] for u in seg.report["usage"]] == ["writer", "writer"]
    assert sum(u["prompt_tokens"] for u in seg.report["usage"]) == seg.prompt_tokens


def test_malformed_json_every_time_stops_with_a_clear_error_and_writes_nothing(store, embedder, family, scripted_llm):
    script_family(scripted_llm)
    run(store, embedder, family, scripted_llm, max_segments=1)
    before = snapshot(store, family)
    scripted_llm.reset()
    scripted_llm.handler = lambda body: Reply.text("Sure! Here are the actions: ADD Ben likes ridges")
    with pytest.raises(LLMOutputError, match=r"segment 2 .*no usable JSON action list after 2 answer"):
        run(store, embedder, family, scripted_llm)
    assert len(scripted_llm.chat_requests) == 2  # writer_parse_retries = 1
    assert snapshot(store, family) == before


def test_malformed_json_can_be_skipped_with_its_report(store, embedder, family, scripted_llm):
    scripted_llm.handler = lambda body: Reply.json({"memories": []})  # JSON, but no action list
    summary = run(store, embedder, family, scripted_llm, settings=settings(writer_on_parse_error="skip"),
                  max_segments=1)
    assert summary.segments_written == 1 and summary.rejections == {"parse_error": 2}
    seg = memory.list_segments(store, family)[0]
    assert seg.added == 0 and len(seg.report["parse_errors"]) == 2 and seg.calls == 2
    assert memory.current_heads(store, family) == []


def test_server_errors_are_retried_then_fail_cleanly(store, embedder, family, scripted_llm):
    scripted_llm.enqueue(Reply.http_error(503), answer(add("Ben", "Ben", "per_speaker_core", "stance", "likes ridges")))
    summary = run(store, embedder, family, scripted_llm, max_segments=1)
    assert summary.segments_written == 1 and summary.calls == 1  # one call, two HTTP attempts
    assert len(scripted_llm.chat_requests) == 2
    before = snapshot(store, family)

    scripted_llm.reset()
    scripted_llm.handler = lambda body: Reply.http_error(500)
    with pytest.raises(LLMError, match=r"segment 2 .*after 3 attempt"):
        run(store, embedder, family, scripted_llm)
    assert len(scripted_llm.chat_requests) == 3  # max_retries = 2
    assert snapshot(store, family) == before


def test_timeouts_are_retried_then_fail_cleanly(store, embedder, family, scripted_llm):
    scripted_llm.handler = lambda body: Reply.slow(3.0, '{"actions": [{"action": "NOOP"}]}')
    before = snapshot(store, family)
    model = scripted_llm.chat_model(timeout_s=0.3, max_retries=1)
    with pytest.raises(LLMError, match="Timeout|timed out"):
        run(store, embedder, family, scripted_llm, model=model)
    assert len(scripted_llm.chat_requests) == 2
    assert snapshot(store, family) == before


def test_resume_after_failure_on_segment_3_without_duplicates(store, embedder, family, scripted_llm):
    script_family(scripted_llm)
    scripted_llm._routes.insert(0, type(scripted_llm._routes[0])(in_session("s3"), Reply.http_error(502), None))
    with pytest.raises(LLMError, match="segment 3"):
        run(store, embedder, family, scripted_llm)
    assert [s.index for s in memory.list_segments(store, family)] == [1, 2]
    assert {h.id for h in memory.current_heads(store, family)} == {"e1.1", "e1.2", "e2.1", "e2.2"}
    assert sessions_asked(scripted_llm) == ["s1", "s2", "s3", "s3", "s3"]

    scripted_llm.reset()
    script_family(scripted_llm)
    summary = run(store, embedder, family, scripted_llm)
    assert (summary.segments_before, summary.segments_written) == (2, 2)
    assert sessions_asked(scripted_llm) == ["s3", "s4"]  # continues at the first unwritten segment
    assert [s.index for s in memory.list_segments(store, family)] == [1, 2, 3, 4]
    records = memory.list_records(store, family)
    assert len(records) == 6 and len({r.id for r in records}) == 6
    assert [c.id for c in memory.record_chain(store, family, "e1.3")] == ["e1.3", "e2.1", "e3.1"]
    covers = store.read_text(
        "MATCH (s:Segment {group_id: $g})-[:COVERS]->(m) RETURN m.id AS m, count(s) AS n ORDER BY m", g=family)
    assert len(covers) == len(FAMILY) and all(r["n"] == 1 for r in covers)


def test_rerun_on_a_finished_group_changes_nothing(store, embedder, family, scripted_llm):
    script_family(scripted_llm)
    run(store, embedder, family, scripted_llm)
    before = snapshot(store, family)
    calls = len(scripted_llm.chat_requests)
    summary = run(store, embedder, family, scripted_llm)
    assert (summary.segments_planned, summary.segments_written, summary.calls) == (0, 0, 0)
    assert len(scripted_llm.chat_requests) == calls
    assert snapshot(store, family) == before
    # and no Writer is needed for that
    again = derive_group(store, family, model=None, embedder=embedder, settings=settings())
    assert again.segments_planned == 0 and snapshot(store, family) == before


def test_new_messages_are_derived_by_the_next_run(store, embedder, family, scripted_llm):
    script_family(scripted_llm)
    run(store, embedder, family, scripted_llm)
    more = FAMILY + [{"speaker": "Cara", "text": "Next time the lake?", "session": "s5", "ts": "2026-06-01T10:00:00"}]
    ingest_conversations(store, [conversation(family, more)], embedder)
    scripted_llm.route(in_session("s5"), answer(add("Cara", "Cara", "per_speaker_core", "stance", "wants the lake next")))
    summary = run(store, embedder, family, scripted_llm)
    assert (summary.segments_before, summary.segments_written, summary.records_added) == (4, 1, 1)
    assert memory.get_record(store, family, "e5.1").from_ids == ["m0010"]


def test_no_writer_configured_is_a_clear_error(store, embedder, family):
    with pytest.raises(LLMError, match="GRAPHMEM_WRITER_BASE_URL"):
        derive_group(store, family, model=None, embedder=embedder, settings=settings())


def test_window_segments(store, embedder, group_id, scripted_llm):
    rows = [{"speaker": ["Ana", "Bo"][i % 2], "text": f"point number {i}", "session": "s1"} for i in range(60)]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    scripted_llm.handler = lambda body: Reply.json({"actions": [NOOP]})
    summary = run(store, embedder, group_id, scripted_llm, settings=settings(writer_segment="window", writer_window=25))
    segs = memory.list_segments(store, group_id)
    assert [(s.n_messages, s.max_actions, s.mode) for s in segs] == [(25, 50, "window"), (25, 50, "window"), (10, 20, "window")]
    assert summary.calls == 3
    assert "SESSION: s1 (part 2 of 3)" in scripted_llm.chat_requests[1]["messages"][-1]["content"]


def test_derive_one_group_while_another_is_ingested(store, embedder, make_group, scripted_llm):
    mine, other = make_group(), make_group()
    ingest_conversations(store, [conversation(mine, FAMILY)], embedder)
    script_family(scripted_llm)
    big = [{"speaker": f"P{i % 7}", "text": f"message {i} about the weather", "session": f"s{i // 50}"}
           for i in range(400)]
    errors: list[BaseException] = []

    def ingest_other() -> None:
        try:
            ingest_conversations(store, [conversation(other, big)], embedder, batch_size=50)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    thread = threading.Thread(target=ingest_other)
    thread.start()
    summary = run(store, embedder, mine, scripted_llm)
    thread.join(timeout=120)
    assert not errors and not thread.is_alive()
    assert summary.segments_written == 4
    assert store.read_text("MATCH (m:Message {group_id: $g}) RETURN count(m) AS n", g=other) == [{"n": 400}]
    assert store.read_text("MATCH (d:Derived {group_id: $g}) RETURN count(d) AS n", g=other) == [{"n": 0}]


# ------------------------------------------------------------------------------ command line
def test_cli_derive_prints_cost_and_reports(store, family, scripted_llm, monkeypatch):
    from graphmem.cli import app

    scripted_llm.route(in_session("s4"), answer(NOOP, add("Zed", "Zed", "per_speaker_core", "fact", "who?")))
    script_family(scripted_llm)  # routes registered first win
    for key, value in scripted_llm.settings_env("GRAPHMEM_WRITER").items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GRAPHMEM_LLM_MAX_RETRIES", "0")
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        result = runner.invoke(app, ["derive", "--group", family, "--no-progress"])
        assert result.exit_code == 0, result.output
        assert "4 of 4 pending segment(s) written" in result.output
        assert "records: 4 added, 2 updated" in result.output
        assert "4 calls" in result.output and "prompt" in result.output and "wall" in result.output
        assert "unknown_owner 1" in result.output

        again = runner.invoke(app, ["derive", "--group", family, "--no-progress"])
        assert again.exit_code == 0 and "nothing to derive (4 segment(s) already written)" in again.output

        rep = runner.invoke(app, ["derive", "--group", family, "--report"])
        assert rep.exit_code == 0, rep.output
        assert "seg-0001" in rep.output and "seg-0004" in rep.output
        assert "unknown_owner" in rep.output and "-> e3.1 (supersedes e2.1)" in rep.output

        one = runner.invoke(app, ["derive", "--group", family, "--report", "--segment", "2", "--json"])
        assert one.exit_code == 0, one.output
        assert [s["index"] for s in json.loads(one.output)] == [2]
    finally:
        get_settings.cache_clear()
