"""The derived-record store (graphmem.derived.memory) against the real Neo4j server."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from graphmem.derived import memory
from graphmem.core.errors import ConflictError, InvalidInputError, NotFoundError
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.derived.memory import GROUP, NewRecord, SegmentMarker
from tests.factories import conversation

TALK = [
    {"speaker": "Mom", "text": "My knee still hurts.", "ts": "2026-03-05T10:00:00"},
    {"speaker": "Cara", "text": "Mom needs the easy trail.", "ts": "2026-03-05T10:01:00"},
    {"speaker": "Ben", "text": "The ridge has better views.", "ts": "2026-03-18T09:00:00", "session": "s2"},
    {"speaker": "Dad", "text": "Let's take the easy trail.", "ts": "2026-03-18T09:05:00", "session": "s2"},
    {"speaker": "Ben", "text": "Okay, easy trail.", "ts": "2026-05-02T18:00:00", "session": "s3"},
]

DIM = 384


def vec(i: int = 0) -> list[float]:
    v = [0.0] * DIM
    v[i % DIM] = 1.0
    return v


def rec(id_: str, content: str, *, owner: str = "Ben", source: str = "Ben", layer: str = "per_speaker_core",
        utype: str = "stance", ts: str = "2026-03-18T09:00:00", from_ids=("m0002",), supersedes=None,
        turn_created: int = 2) -> NewRecord:
    return NewRecord(
        id=id_, layer=layer, utype=utype, content=content, owner=owner, source=source, ts=ts,
        session="s2", turn_created=turn_created, confidence=0.9, from_ids=list(from_ids),
        embedding=vec(len(id_)), supersedes=supersedes,
    )


def marker(index: int, ids: list[str], session: str = "s1") -> SegmentMarker:
    return SegmentMarker(id=f"seg-{index:04d}", index=index, session=session, message_ids=ids,
                         report={"accepted": len(ids)}, model="test", calls=1, prompt_tokens=10)


@pytest.fixture
def talk(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, TALK)], embedder)
    return group_id


# ------------------------------------------------------------------------------ unit (no db)
def test_layer_whitelist_and_scope():
    assert memory.layer_label("per_speaker_core") == "Core"
    assert memory.layer_label("group_insight") == "Insight"
    assert memory.layer_scope("group_interaction") == "GROUP"
    assert memory.layer_scope("per_speaker_profile") == "PERSON"
    with pytest.raises(InvalidInputError):
        memory.layer_label("Core) DETACH DELETE (n")


def test_normalise_content_ignores_case_punctuation_and_spacing():
    assert memory.normalise_content("  The Ridge,  has better VIEWS! ") == "the ridge has better views"
    assert memory.normalise_content("Привет, Мир") == "привет мир"  # any script survives
    assert memory.normalise_content("...") == ""


def test_new_record_rejects_scope_mismatch_and_missing_provenance():
    with pytest.raises(ValidationError, match="owned by GROUP"):
        rec("e1", "decided", owner="Dad", layer="group_interaction")
    with pytest.raises(ValidationError, match="owned by a person"):
        rec("e1", "likes views", owner=GROUP)
    with pytest.raises(ValidationError, match="at least one"):
        rec("e1", "likes views", from_ids=())
    with pytest.raises(ValidationError, match="unknown utype"):
        rec("e1", "likes views", utype="opinion")
    with pytest.raises(ValidationError, match="empty"):
        rec("e1", " ?! ")


def test_to_instant_reads_naive_times_as_utc():
    assert memory.to_instant("1970-01-01T00:01:00") == 60.0
    assert memory.to_instant("1970-01-01T01:00:00+01:00") == 0.0
    with pytest.raises(InvalidInputError):
        memory.to_instant("yesterday")


# ------------------------------------------------------------------------------ integration
pytestmark_db = pytest.mark.neo4j  # unit tests above need no database


@pytestmark_db
def test_write_add_and_read_heads_with_links(store, talk):
    gid = talk
    records = [
        rec("e1.1", "prefers the ridge for its views", from_ids=["m0002"]),
        rec("e1.2", "the group takes the easy trail", owner=GROUP, source="Dad", layer="group_interaction",
            utype="decision", from_ids=["m0003"], ts="2026-03-18T09:05:00", turn_created=3),
        rec("e1.3", "needs an easy trail because of her knee", owner="Mom", source="Cara",
            layer="per_speaker_profile", utype="observation", from_ids=["m0001", "m0000"]),
    ]
    result = memory.write_segment(store, gid, marker(1, ["m0000", "m0001", "m0002", "m0003"]), records)
    assert result.created == ["e1.1", "e1.2", "e1.3"] and result.superseded == []

    heads = {r.id: r for r in memory.current_heads(store, gid)}
    assert set(heads) == {"e1.1", "e1.2", "e1.3"}
    decision = heads["e1.2"]
    assert (decision.owner, decision.owner_kind, decision.source, decision.source_kind) == (GROUP, "group", "Dad", "person")
    assert decision.scope == "GROUP" and decision.utype == "decision" and decision.segment == "seg-0001"
    cross = heads["e1.3"]
    assert (cross.owner, cross.source, cross.owner_name) == ("Mom", "Cara", "Mom")
    assert cross.from_ids == ["m0000", "m0001"]  # conversation order
    assert all(r.state == "head" and r.supersedes is None for r in heads.values())

    # labels, OWNER -> Group node, embedding stored
    row = store.read_text(
        "MATCH (d:Derived {group_id: $g, id: 'e1.2'})-[:OWNER]->(o:Group) "
        "RETURN labels(d) AS labels, o.id AS owner, size(d.embedding) AS dim", g=gid,
    )[0]
    assert sorted(row["labels"]) == ["Derived", "Interaction"] and row["owner"] == gid and row["dim"] == DIM

    only_mom = memory.current_heads(store, gid, owners=["Mom"])
    assert [r.id for r in only_mom] == ["e1.3"]
    assert [r.id for r in memory.current_heads(store, gid, layers=["group_interaction"])] == ["e1.2"]
    prov = memory.record_provenance(store, gid, "e1.3")
    assert [(p.id, p.speaker) for p in prov] == [("m0000", "Mom"), ("m0001", "Cara")]
    assert prov[0].text == "My knee still hurts."

    segs = memory.list_segments(store, gid)
    assert [(s.id, s.index, s.n_messages, s.report) for s in segs] == [("seg-0001", 1, 4, {"accepted": 4})]


@pytestmark_db
def test_update_chain_of_three_states_head_full_and_as_of(store, talk):
    gid = talk
    memory.write_segment(store, gid, marker(1, ["m0000", "m0001"]), [
        rec("e1.1", "prefers the ridge", ts="2026-03-05T10:00:00", from_ids=["m0000"]),
    ])
    memory.write_segment(store, gid, marker(2, ["m0002", "m0003"], "s2"), [
        rec("e2.1", "torn between ridge and easy trail", supersedes="e1.1", ts="2026-03-18T09:00:00",
            from_ids=["m0002"]),
    ])
    memory.write_segment(store, gid, marker(3, ["m0004"], "s3"), [
        rec("e3.1", "accepts the easy trail", supersedes="e2.1", ts="2026-05-02T18:00:00", from_ids=["m0004"]),
    ])
    heads = memory.current_heads(store, gid)
    assert [(h.id, h.content, h.supersedes) for h in heads] == [("e3.1", "accepts the easy trail", "e2.1")]
    for any_state in ("e1.1", "e2.1", "e3.1"):
        chain = memory.record_chain(store, gid, any_state)
        assert [(c.id, c.position, c.state) for c in chain] == [
            ("e1.1", 0, "superseded"), ("e2.1", 1, "superseded"), ("e3.1", 2, "head")]
        assert [c.ts[:10] for c in chain] == ["2026-03-05", "2026-03-18", "2026-05-02"]
    assert chain[0].superseded_by == "e2.1" and chain[1].supersedes == "e1.1"
    # the new states inherit owner/source/layer; nothing was deleted
    assert {(c.owner, c.source, c.layer) for c in chain} == {("Ben", "Ben", "per_speaker_core")}
    assert len(memory.list_records(store, gid)) == 3
    chains = memory.record_chains(store, gid, ["e3.1", "nope"])
    assert list(chains) == ["e3.1"]

    assert [r.id for r in memory.state_as_of(store, gid, "2026-03-01T00:00:00")] == []
    assert [r.id for r in memory.state_as_of(store, gid, "2026-03-10T00:00:00")] == ["e1.1"]
    assert [r.id for r in memory.state_as_of(store, gid, "2026-03-18T09:00:00")] == ["e2.1"]
    assert [r.id for r in memory.state_as_of(store, gid, "2026-06-01T00:00:00")] == ["e3.1"]


@pytestmark_db
def test_a_segment_is_all_or_nothing(store, talk):
    gid = talk
    memory.write_segment(store, gid, marker(1, ["m0000"]), [rec("e1.1", "prefers the ridge", from_ids=["m0000"])])
    before = store.read_text("MATCH (n {group_id: $g}) RETURN count(n) AS n", g=gid)[0]["n"]

    # unknown owner: the first record was fine, but nothing of the segment stays
    with pytest.raises(InvalidInputError, match="Zed"):
        memory.write_segment(store, gid, marker(2, ["m0001"]), [
            rec("e2.1", "fine record", from_ids=["m0001"]),
            rec("e2.2", "about a stranger", owner="Zed", from_ids=["m0001"]),
        ])
    # unknown supporting message
    with pytest.raises(InvalidInputError):
        memory.write_segment(store, gid, marker(2, ["m0001"]), [rec("e2.1", "x y", from_ids=["m9999"])])
    # UPDATE of something that is not a head (it does not exist)
    with pytest.raises(ConflictError, match="not current heads"):
        memory.write_segment(store, gid, marker(2, ["m0001"]), [rec("e2.1", "x y", supersedes="e0.0")])
    # the same messages again / a wrong index
    with pytest.raises(ConflictError, match="already written"):
        memory.write_segment(store, gid, marker(2, ["m0000"]), [])
    with pytest.raises(ConflictError, match="index"):
        memory.write_segment(store, gid, marker(5, ["m0001"]), [])
    # an entry id that exists
    with pytest.raises(ConflictError):
        memory.write_segment(store, gid, marker(2, ["m0001"]), [rec("e1.1", "again", from_ids=["m0001"])])

    after = store.read_text("MATCH (n {group_id: $g}) RETURN count(n) AS n", g=gid)[0]["n"]
    assert after == before
    assert [s.index for s in memory.list_segments(store, gid)] == [1]
    # the failed attempts did not bump the group's segment counter either
    memory.write_segment(store, gid, marker(2, ["m0001"]), [])
    assert [s.index for s in memory.list_segments(store, gid)] == [1, 2]


@pytestmark_db
def test_two_updates_of_one_head_in_a_segment_chain_in_order(store, talk):
    gid = talk
    memory.write_segment(store, gid, marker(1, ["m0000"]), [rec("e1.1", "ridge", from_ids=["m0000"])])
    memory.write_segment(store, gid, marker(2, ["m0002"]), [
        rec("e2.1", "undecided", supersedes="e1.1"),
        rec("e2.2", "easy trail", supersedes="e2.1"),
    ])
    assert [c.id for c in memory.record_chain(store, gid, "e1.1")] == ["e1.1", "e2.1", "e2.2"]
    assert [h.id for h in memory.current_heads(store, gid)] == ["e2.2"]


@pytestmark_db
def test_missing_things_raise_not_found(store, talk):
    with pytest.raises(NotFoundError):
        memory.get_record(store, talk, "e9.9")
    with pytest.raises(NotFoundError):
        memory.record_chain(store, talk, "e9.9")
    with pytest.raises(NotFoundError):
        memory.record_provenance(store, talk, "e9.9")
    with pytest.raises(NotFoundError):
        memory.write_segment(store, "no-such-group-x", marker(1, ["m0000"]), [])
