"""Replaying recorded Writer actions through the real validation and write path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem.derived import memory
from graphmem.core.config import get_settings
from graphmem.core.errors import InvalidInputError
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.derived.writer import ReplayWriter, derive_group
from loaders import load_conversations

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]


def test_sample_actions_replay_into_chains_and_rerun_is_a_no_op(store, embedder, group_id):
    convs = load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=group_id)
    ingest_conversations(store, convs, embedder)
    replay = ReplayWriter(ROOT / "examples" / "sample_writer_actions.jsonl")
    first = derive_group(store, group_id, model=replay, embedder=embedder, settings=get_settings())
    assert (first.segments_written, first.records_added, first.records_updated) == (3, 14, 3)
    assert first.actions_rejected == 0 and first.calls == 0

    heads = {r.id: r for r in memory.current_heads(store, group_id)}
    assert "e1.3" not in heads and "e2.2" not in heads and "e3.2" in heads  # Ben's stance chain
    chain = memory.record_chain(store, group_id, "e3.2")
    assert [r.id for r in chain] == ["e1.3", "e2.2", "e3.2"]
    # a record's time is its source's own latest supporting message (Ben spoke at 20:31 and 20:40
    # in session s2; Cara's 20:36 message about Ben is not his)
    assert chain[1].ts in {"2026-03-18T20:31:00+01:00", "2026-03-18T20:40:00+01:00"}
    decision = heads["e3.1"]
    assert (decision.owner, decision.source, decision.layer) == ("GROUP", "dad", "group_interaction")
    claim = heads["e2.4"]  # Cara's claim about Ben: owner Ben, source Cara
    assert (claim.owner, claim.source) == ("ben", "cara")
    behind = memory.record_provenance(store, group_id, "e3.1")
    assert {m.id for m in behind} == {"s3-01", "s3-05"}  # Dad's two messages behind the decision

    again = derive_group(store, group_id, model=replay, embedder=embedder, settings=get_settings())
    assert again.segments_written == 0 and again.segments_planned == 0

    # a late message at the start of s1: every segment's positions follow its messages (a
    # messy-input trial: the records' moved, the segments' kept their old numbers)
    from graphmem.groups.service import append_messages

    late = {"id": "s1-00", "session": "s1", "speaker": "Dad", "speaker_id": "dad", "text": "Planning thread",
            "ts": "2026-03-05T18:00:00+01:00"}
    append_messages(store, embedder, group_id, [late])
    rows = store.read_text(
        "MATCH (s:Segment {group_id: $g})-[:COVERS]->(m:Message) RETURN s.id AS id, s.first_turn_created AS first, "
        "s.last_turn_created AS last, min(m.turn_created) AS lo, max(m.turn_created) AS hi", g=group_id)
    assert len(rows) == 3 and all((r["first"], r["last"]) == (r["lo"], r["hi"]) for r in rows), rows
    assert min(r["first"] for r in rows) == 1  # the late message took position 0


def test_replay_file_errors_name_the_line_and_field(tmp_path):
    bad = tmp_path / "w.jsonl"
    bad.write_text('{"session": "s1", "actions": []}\n{"session": "s1", "actions": []}\n')
    with pytest.raises(InvalidInputError, match=r"record line 2.*field 'session'"):
        ReplayWriter(bad)
    bad.write_text('{"session": "s1", "actions": {}}\n')
    with pytest.raises(InvalidInputError, match="field 'actions'"):
        ReplayWriter(bad)
    bad.write_text("{not json\n")
    with pytest.raises(InvalidInputError, match="record line 1"):
        ReplayWriter(bad)
    # a line that is JSON but no object (a messy-input trial: it was "missing session")
    bad.write_text('{"session": "s1", "actions": []}\n[1]\n')
    with pytest.raises(InvalidInputError, match=r"record line 2: a line is a JSON object .*not list"):
        ReplayWriter(bad)


def test_replay_needs_session_segments(store, embedder, group_id):
    convs = load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=group_id)
    ingest_conversations(store, convs, embedder)
    settings = get_settings().model_copy(update={"writer_segment": "window"})
    with pytest.raises(InvalidInputError, match="session segments"):
        derive_group(store, group_id, model=ReplayWriter(ROOT / "examples" / "sample_writer_actions.jsonl"),
                     embedder=embedder, settings=settings)


def test_replay_line_naming_no_session_of_the_group_is_refused_and_nothing_is_derived(store, embedder, group_id,
                                                                                      tmp_path):
    # A group with channels stores sessions as "<channel>/<session>": a hand-written file that
    # says "s1" would silently derive nothing and mark the segments done (a corrected file could
    # then not be replayed). The line is refused instead, and the corrected file replays.
    rows = [{"group": group_id, "channel": "general", "session": "s1", "id": f"m{i}", "speaker": who,
             "text": text, "ts": f"2026-05-04T09:0{i}:00+02:00"}
            for i, (who, text) in enumerate([("Ana", "Decision: Basel hotel in June."),
                                              ("Raj", "I disagree, Zermatt is better.")])]
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ingest_conversations(store, load_conversations(chat, "jsonl"), embedder)
    action = {"action": "ADD", "owner": "Raj", "source": "Raj", "layer": "per_speaker_core", "utype": "stance",
              "content": "Raj prefers Zermatt over Basel"}
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(json.dumps({"session": "s1", "actions": [action]}) + "\n")
    with pytest.raises(InvalidInputError) as e:
        derive_group(store, group_id, model=ReplayWriter(wrong), embedder=embedder, settings=get_settings())
    assert (e.value.record, e.value.field) == ("line 1", "session")
    assert "'general/s1'" in str(e.value)  # the session ids the file must use
    assert memory.list_segments(store, group_id) == []  # nothing marked derived

    right = tmp_path / "right.jsonl"
    right.write_text(json.dumps({"session": "general/s1", "actions": [action]}) + "\n")
    done = derive_group(store, group_id, model=ReplayWriter(right), embedder=embedder, settings=get_settings())
    assert (done.segments_written, done.records_added) == (1, 1)
