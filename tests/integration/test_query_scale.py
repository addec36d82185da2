"""The reads that keep ``ask`` and ``search`` cheap in large groups give the same answers.

- ``read_roster(counts=False)`` (ask's roster) is the roster without the per-person message
  count that reads every message of the group.
- ``group_state`` carries the version of the group's term statistics (the write position of its
  latest message, read from the index's last entry): a write to the group moves it and the
  cached statistics are rebuilt; another group's statistics stay cached.
- ``recall/vector_person_messages`` scores a person exactly up to ``exact_max`` SOURCE
  relationships and, beyond, from the group's own vector index: both branches stay inside the
  person's own messages of the group, best first.
- Expansion reads its neighbours in one round trip and returns what it returned before.
- ``ask`` reads the group's state and roster in one round trip (``group_context``) and the
  fulltext candidates with their documents in one statement (``fulltext_candidates``): both give
  what the separate reads gave, and a write to the group is seen by the next ask and search.
"""

from __future__ import annotations

import numpy as np
import pytest

from graphmem.verbatim.ingest import ingest_conversations
from graphmem.recall.cache import GroupCache
from graphmem.verbatim.roster import read_roster
from graphmem.query import ask
from graphmem.recall.search import (
    expand_hits,
    fulltext_candidates,
    fulltext_ranking,
    group_context,
    group_state,
    hydrate,
    search_messages,
)
from tests.factories import conversation
from tests.factories import runtime_of

pytestmark = pytest.mark.neo4j

EXACT_MAX = 24
TEXTS = [
    "the budget review moves to Friday after the storm",
    "my cat knocked the coffee over the quarterly report",
    "we should book the lighthouse tour before noon",
    "the printer on the third floor is jammed again",
    "the hiking trip needs two more tents and a stove",
]


def _rows(n: int, speakers: tuple[str, ...] = ("Ana", "Ben", "Cy")) -> list[dict]:
    return [{"speaker": speakers[i % len(speakers)], "session": f"s{i // 12}",
             "text": f"{TEXTS[i % len(TEXTS)]} (note {i})"} for i in range(n)]


def test_roster_without_counts_is_the_roster(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, _rows(10))], embedder)
    full = read_roster(store, group_id)
    light = read_roster(store, group_id, counts=False)
    assert [m.messages for m in full] == [4, 3, 3]
    assert [m.model_copy(update={"messages": 0}) for m in full] == light


def test_a_write_moves_the_version_and_rebuilds_only_that_groups_statistics(store, embedder, make_group):
    a, b = make_group("ver-a"), make_group("ver-b")
    for gid in (a, b):
        ingest_conversations(store, [conversation(gid, _rows(6))], embedder)
    cache = GroupCache()
    st_a, st_b = group_state(store, a), group_state(store, b)
    va, vb = st_a.version, st_b.version
    assert va == max(int(r["t"]) for r in store.read_text(
        "MATCH (m:Message {group_id: $g}) RETURN m.turn_created AS t", g=a))
    sa, sb = cache.term_stats(store, st_a), cache.term_stats(store, st_b)
    assert sa.n_docs == 6 and cache.term_stats(store, st_a) is sa  # cached
    assert cache.term_stats(store, group_state(store, a)) is sa  # reading the state again agrees

    more = _rows(6) + [{"speaker": "Ana", "session": "s9", "text": "a zeppelin over the archive"}]
    ingest_conversations(store, [conversation(a, more)], embedder)
    st_a2 = group_state(store, a)
    assert st_a2.version > va
    sa2 = cache.term_stats(store, st_a2)
    assert sa2 is not sa and sa2.n_docs == 7 and sa2.df.get("zeppelin") == 1
    assert group_state(store, b).version == vb
    assert cache.term_stats(store, group_state(store, b)) is sb  # the other group is untouched


def _cosines(store, gid: str, person: str, vec: np.ndarray) -> dict[str, float]:
    rows = store.read_text(
        "MATCH (m:Message {group_id: $g})-[:SOURCE]->(:Person {group_id: $g, id: $p}) "
        "RETURN m.id AS id, m.embedding AS e", g=gid, p=person)
    return {r["id"]: float(np.dot(np.asarray(r["e"]), vec)) for r in rows}


def test_person_rankings_exact_and_from_the_groups_index(store, embedder, make_group):
    gid, other = make_group("person-a"), make_group("person-b")
    for g in (gid, other):  # identical texts and speakers in both groups
        ingest_conversations(store, [conversation(g, _rows(60))], embedder, exact_max=EXACT_MAX)
    state = group_state(store, gid)
    assert state.vector_index
    vec = embedder.encode(["lighthouse tour before noon"])[0]
    truth = {p: _cosines(store, gid, p, vec) for p in ("Ana", "Ben")}

    def read(exact_max: int, oversample: float, k: int = 3) -> dict[str, list[tuple[str, float]]]:
        rows = store.read(
            "recall/vector_person_messages", group_id=gid, person_ids=["Ana", "Ben", "Nobody"],
            vector=vec.tolist(), k=k, max_instant=None, index=state.vector_index,
            exact_max=exact_max, oversample=oversample,
        )
        out: dict[str, list[tuple[str, float]]] = {}
        for r in rows:
            out.setdefault(r["person_id"], []).append((r["id"], r["score"]))
        return out

    exact = read(exact_max=EXACT_MAX, oversample=2.0)  # 20 messages each: exact
    for p in ("Ana", "Ben"):
        best = sorted(truth[p].items(), key=lambda kv: -kv[1])[:3]
        assert [i for i, _ in exact[p]] == [i for i, _ in best]
        assert [s for _, s in exact[p]] == pytest.approx([s for _, s in best], abs=1e-5)
    # index branch: fetch = max(4 k, 2 * 3 * 60 / 20) = 18 <= 20 messages each
    via_index = read(exact_max=0, oversample=2.0)
    assert set(via_index) == {"Ana", "Ben"}
    for p, hits in via_index.items():
        assert 1 <= len(hits) <= 3
        assert all(i in truth[p] for i, _ in hits)  # the person's own messages of this group only
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        assert [s for _, s in hits] == pytest.approx([truth[p][i] for i, _ in hits], abs=1e-5)
    # a fetch larger than the person's messages is more work than the scan: exact again
    assert read(exact_max=0, oversample=10.0) == exact


def test_expansion_returns_the_neighbours_hydrate_gives(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, _rows(30))], embedder)
    anchors = list(hydrate(store, group_id, ["m0005", "m0006", "m0013"]).values())
    out = expand_hits(store, group_id, anchors, 2)
    ids = [h.id for h in out]
    # m0006 is an anchor itself (not repeated as m0005's neighbour); m0011 is another session
    assert ids == ["m0003", "m0004", "m0005", "m0007", "m0006", "m0008", "m0012", "m0013", "m0014", "m0015"]
    plain = hydrate(store, group_id, ids)
    for h in out:
        assert h.model_dump(exclude={"expanded_from"}) == plain[h.id].model_dump(exclude={"expanded_from"})
    assert {h.id: h.expanded_from for h in out if h.expanded_from} == {
        "m0003": "m0005", "m0004": "m0005", "m0007": "m0005", "m0008": "m0006",
        "m0012": "m0013", "m0014": "m0013", "m0015": "m0013"}


def test_group_context_is_the_state_and_the_roster(store, embedder, make_group):
    gid = make_group("ctx")
    ingest_conversations(store, [conversation(gid, _rows(9), name="Trip planning")], embedder)
    ctx = group_context(store, gid)
    assert ctx is not None
    assert ctx.state == group_state(store, gid)
    assert ctx.members == read_roster(store, gid, counts=False) and len(ctx.members) == 3
    assert ctx.name == "Trip planning"
    assert group_context(store, make_group("ctx-none")) is None


def test_fulltext_candidates_in_one_statement_are_the_two_reads(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, _rows(30))], embedder)
    query = "the lighthouse tour and the printer"
    ft, docs = fulltext_candidates(store, group_id, query, 200)
    assert ft == fulltext_ranking(store, group_id, query, 200) and len(ft) >= 12  # + the turns after them
    rows = store.read("recall/message_documents", group_id=group_id, ids=[i for i, _ in ft])
    assert len(rows) == len(ft) == len(docs)
    for r in rows:
        assert {k: docs[r["id"]][k] for k in r} == r
    assert fulltext_candidates(store, group_id, "the and of", 200) == ([], {})


def test_a_write_to_the_group_is_seen_by_the_next_ask_and_search(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, _rows(12))], embedder)
    question = "What did Dora say about the zeppelin?"
    before = ask(runtime_of(store, embedder), group_id, question)
    assert "Dora" not in {m.speaker for m in before.excerpts}
    assert "Dora" not in {r.id for r in before.rows}
    assert search_messages(store, embedder, group_id, "zeppelin", mode="fulltext") == []

    more = _rows(12) + [{"speaker": "Dora", "session": "s9", "text": "the zeppelin landed on the archive roof"}]
    ingest_conversations(store, [conversation(group_id, more)], embedder)
    after = ask(runtime_of(store, embedder), group_id, question)
    assert after.excerpts[0].id == "m0012"  # the new message, found by its rare word
    dora = [r for r in after.rows if r.id == "Dora"]  # the new person is in the roster
    assert len(dora) == 1 and [e.id for e in dora[0].raw] == ["m0012"]
    assert [h.id for h in search_messages(store, embedder, group_id, "zeppelin", mode="fulltext")] == ["m0012"]


def test_hits_built_from_the_rankings_rows_are_the_hydrated_messages(store, embedder, make_group):
    """search and the recall pool take the hits' fields from the rankings' own rows (fulltext
    documents, vector and person reads) instead of a second read: the same messages either way,
    in a group scored exactly and in one with its own vector index."""
    from graphmem.recall.pool import recall_pool
    from graphmem.verbatim.roster import read_roster

    small, large = make_group("fields-exact"), make_group("fields-index")
    for gid in (small, large):
        rows = _rows(40) + [{"speaker": "Dora", "session": "s9", "text": "zeppelin over the lighthouse"}]
        ingest_conversations(store, [conversation(gid, rows)], embedder,
                             exact_max=EXACT_MAX if gid == large else 1000)
    assert not group_state(store, small).vector_index and group_state(store, large).vector_index
    for gid in (small, large):
        for mode in ("hybrid", "fulltext", "vector"):
            hits = search_messages(store, embedder, gid, "lighthouse tour zeppelin", k=8, mode=mode)
            plain = hydrate(store, gid, [h.id for h in hits])
            assert len(hits) == 8
            for h in hits:
                assert h.model_dump(exclude={"score", "ranks"}) == plain[h.id].model_dump(exclude={"score", "ranks"})
        pool = recall_pool(store, embedder, gid, "What did Ana say about the lighthouse?", 20,
                           roster=read_roster(store, gid, counts=False))
        plain = hydrate(store, gid, [h.id for h in pool])
        assert len(pool) == 20
        for h in pool:
            assert h.model_dump(exclude={"score"}) == plain[h.id].model_dump(exclude={"score"})
