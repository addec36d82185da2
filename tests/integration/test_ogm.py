"""``graphmem.ogm`` (neomodel, read-only) against the demo group: the sample chat of
``make demo`` and its replayed Writer actions, loaded under a fresh group id."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

ogm = pytest.importorskip("graphmem.ogm")

from graphmem.core.errors import InvalidInputError, NotFoundError  # noqa: E402
from graphmem.verbatim.ingest import ingest_conversations  # noqa: E402
from graphmem.derived.writer import ReplayWriter, derive_group  # noqa: E402
from loaders import load_conversations  # noqa: E402
from graphmem.core.config import get_settings

pytestmark = pytest.mark.neo4j
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def demo(store, embedder, group_id, driver):
    ingest_conversations(store, load_conversations(EXAMPLES / "sample_chat.jsonl", "jsonl", group=group_id), embedder)
    derive_group(store, group_id, model=ReplayWriter(EXAMPLES / "sample_writer_actions.jsonl"), embedder=embedder, settings=get_settings())
    ogm.connect(driver, store.database)
    return group_id


def test_objects_and_traversals_match_the_graph(store, demo):
    gid = demo
    constraints_before = store.read("meta/list_constraints")
    g = ogm.group(gid)
    roster = {r["id"]: r for r in store.read("query/list_roster", group_id=gid)}
    persons = g.persons()
    assert {p.uid for p in persons} == set(roster) and all(isinstance(p, ogm.Person) for p in persons)
    for p in persons:  # MEMBER_OF and SOURCE agree with the roster's counts
        assert len(p.messages) == roster[p.uid]["messages"]
        assert p.member_of.single().uid == gid

    messages = g.messages()
    assert len(messages) == 18 and messages[0].uid == "s1-01"
    assert messages[0].person().uid == "mom" and messages[0].text.endswith("🦵")  # text byte-exact
    assert messages[1].replies_to.single().uid == "s1-01"
    assert messages[0].next_message.single().uid == messages[1].uid
    assert messages[0].in_session.single().uid == "s1"
    assert {s.uid for s in g.sessions.all()} == {"s1", "s2", "s3"}

    heads = g.records()
    kinds = Counter(type(r).__name__ for r in heads)
    assert set(kinds) == {"Core", "Profile", "Interaction", "Insight"}  # labels -> layer classes
    for r in heads:
        assert r.state == "head" and r.supporting_messages.all(), r  # provenance is never empty
        owner = r.owner()
        if isinstance(r, (ogm.Core, ogm.Profile)):
            assert isinstance(owner, ogm.Person)
        else:
            assert isinstance(owner, ogm.Group) and owner.uid == gid

    # an UPDATE chain through SUPERSEDED_BY, oldest first, the same as the store's own reader
    updated = [r for r in heads if r.supersedes.single() is not None]
    assert updated
    from graphmem.derived import memory

    for r in updated:
        chain = r.history()
        assert chain[-1].uid == r.uid and [v.state for v in chain[:-1]] == ["superseded"] * (len(chain) - 1)
        assert [v.uid for v in chain] == [v.id for v in memory.record_chain(store, gid, r.uid)]
        assert chain[0].history()[-1].uid == r.uid  # walking from the oldest state reaches the head

    # Profile: source differs from owner (what others say about a person)
    profile = next(r for r in heads if isinstance(r, ogm.Profile))
    assert profile.source().uid != profile.owner().uid

    # read-only, and the schema stays graphmem's
    with pytest.raises(InvalidInputError):
        persons[0].save()
    with pytest.raises(InvalidInputError):
        heads[0].delete()
    assert store.read("meta/list_constraints") == constraints_before
    with pytest.raises(NotFoundError):
        ogm.group(gid + "-missing")


def test_records_history_order_and_readable_str(store, demo):
    gid = demo
    from graphmem.derived import memory

    g = ogm.group(gid)
    heads, every = g.records(), g.records(history=True)
    assert {r.state for r in heads} == {"head"}
    superseded = [r for r in every if r.state == "superseded"]
    assert superseded and len(every) == len(heads) + len(superseded)  # history adds the old states
    assert [r.uid for r in g.records(head_only=False)] == [r.uid for r in every]  # older spelling
    for r in every:  # FROM messages in conversation order, the same as the store's provenance read
        want = [m.id for m in memory.record_provenance(store, gid, r.uid)]
        assert [m.uid for m in r.supporting_messages] == want
        assert [m.uid for m in r.supporting_messages.all()] == want
    multi = [r for r in every if len(r.supporting_messages.all()) > 1]
    assert multi, "the sample needs a record written from several messages"
    owner = next(r.owner() for r in heads if isinstance(r, ogm.Core))
    assert all(r.state == "head" for r in owner.records())
    assert len(owner.records(history=True)) >= len(owner.records())

    assert str(g).startswith(f"Group {gid!r}") and "{" not in str(g)  # not neomodel's property dict
    first = g.messages()[0]
    assert str(first) == f"[{first.ts}] {first.speaker}: {' '.join(first.text.split())}"[: len(str(first))]
    assert str(first).startswith(f"[{first.ts}] {first.speaker}: ")
    rec = heads[0]
    assert str(rec).startswith(f"{type(rec).__name__} {rec.uid!r} (head, {rec.utype}): ")
    person = g.persons()[0]
    assert str(person).startswith("Person ") and repr(gid) in str(person) and "{" not in str(person)
