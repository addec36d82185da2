"""System 1 hybrid search against the real Neo4j server."""

from __future__ import annotations

import pytest

from graphmem.core.errors import InvalidInputError, NotFoundError
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.recall.search import lucene_query, rrf, search_messages
from tests.factories import conversation

pytestmark = pytest.mark.neo4j

TALK = [
    {"speaker": "Ana", "text": "The quarterly budget review moved to Thursday."},
    {"speaker": "Bo", "text": "I booked the projector for the budget review."},
    {"speaker": "Cy", "text": "My cat knocked over the coffee again."},
    {"speaker": "Ana", "text": "Please send slides before the meeting."},
    {"speaker": "Bo", "text": "The sailing trip is postponed because of the storm."},
    {"speaker": "Cy", "text": "Storm warnings all weekend, stay safe."},
]


def test_rrf_fuses_by_reciprocal_rank():
    fused = rrf({"a": ["x", "y", "z"], "b": ["y", "w"]}, rrf_k=60)
    ids = [i for i, _, _ in fused]
    assert ids == ["y", "x", "w", "z"]  # y: 1/62 + 1/61 beats x: 1/61
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[0][2] == {"a": 2, "b": 1}


def test_lucene_query_neutralises_syntax():
    assert lucene_query('budget AND (review) OR "x" NOT y:z~ *') == "budget and review or x not y z"


def test_search_is_scoped_to_the_group(store, embedder, make_group):
    mine, other = make_group(), make_group()
    ingest_conversations(store, [conversation(mine, TALK)], embedder)
    # The other group says the same words many times: it must never leak into mine.
    noisy = [{"speaker": "Eve", "text": "budget review budget review storm", "id": f"x{i}"} for i in range(60)]
    ingest_conversations(store, [conversation(other, noisy)], embedder)
    for mode in ("hybrid", "fulltext", "vector"):
        hits = search_messages(store, embedder, mine, "budget review storm", k=10, mode=mode)
        assert hits, mode
        assert {h.id for h in hits} <= {f"m{i:04d}" for i in range(len(TALK))}, mode
        assert all(h.speaker != "Eve" for h in hits)


def test_hybrid_ranks_the_relevant_messages_first(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, TALK)], embedder)
    hits = search_messages(store, embedder, group_id, "when is the budget review", k=3)
    assert hits[0].id in {"m0000", "m0001"}
    assert {h.id for h in hits[:2]} == {"m0000", "m0001"}
    assert hits[0].score >= hits[1].score >= hits[2].score
    top = hits[0]
    assert top.speaker in {"Ana", "Bo"} and top.session == "s1" and top.ts.startswith("2026-01-01T10:")
    vec = search_messages(store, embedder, group_id, "bad weather", k=2, mode="vector")
    assert {h.id for h in vec} == {"m0004", "m0005"}  # no shared words: only the vector finds them
    assert all(0.0 <= h.score <= 1.0 for h in vec)


def test_expand_adds_neighbouring_turns(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, TALK)], embedder)
    # vector mode: its document is the message alone ("speaker (date): text"), while a fulltext
    # document also holds the previous turn, so the turn after the cat message would match too
    hits = search_messages(store, embedder, group_id, "my cat knocked over the coffee", k=1, mode="vector", expand=1)
    assert [h.id for h in hits] == ["m0001", "m0002", "m0003"]
    assert [h.expanded_from for h in hits] == ["m0002", "", "m0002"]


def test_search_errors(store, embedder, group_id):
    with pytest.raises(NotFoundError):
        search_messages(store, embedder, group_id, "anything")
    ingest_conversations(store, [conversation(group_id, TALK)], embedder)
    with pytest.raises(InvalidInputError, match="field 'query'"):
        search_messages(store, embedder, group_id, "   ")
    with pytest.raises(InvalidInputError, match="field 'expand'"):
        search_messages(store, embedder, group_id, "x", expand=9)


def test_expand_stays_inside_the_session(store, embedder, group_id):
    rows = [
        {"speaker": "Ana", "text": "Session one ends with this goodbye.", "session": "s1"},
        {"speaker": "Bo", "text": "The lighthouse tour starts at noon.", "session": "s2"},
        {"speaker": "Cy", "text": "I'll bring sandwiches.", "session": "s2"},
    ]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    hits = search_messages(store, embedder, group_id, "lighthouse tour at noon", k=1, mode="vector", expand=1)
    assert [h.id for h in hits] == ["m0001", "m0002"]  # m0000 is the previous turn, but of session s1


WEATHER = [
    {"speaker": "Ana", "text": "The budget for the storm shelter is tight."},
    {"speaker": "Bo", "text": "Storm damage on the pier, the storm was strong."},
    {"speaker": "Cy", "text": "Budget meeting notes are in the shared folder."},
    {"speaker": "Ana", "text": "Another storm is coming, storm season again."},
    {"speaker": "Bo", "text": "The ferry is delayed by the storm."},
    {"speaker": "Cy", "text": "Coffee machine is broken, budget for a new one?"},
    {"speaker": "Ana", "text": "Storm or not, the picnic happens."},
    {"speaker": "Bo", "text": "Delayed budget approval means no new kayaks."},
]
WEATHER_QUERIES = ["budget storm", "storm delayed", "budget approval for the ferry", "new storm shelter"]


def test_loading_other_groups_changes_nothing_in_a_groups_search_results(store, embedder, make_group):
    """Issue 11: the fulltext side ranks by the group's own BM25 statistics, not Lucene's
    index-wide ones, so other groups with a skewed vocabulary move nothing (ids, order, scores)."""
    mine = make_group()
    ingest_conversations(store, [conversation(mine, WEATHER)], embedder)

    def results() -> dict[tuple[str, str], list[tuple[str, float, dict[str, int]]]]:
        return {
            (mode, q): [(h.id, round(h.score, 12), h.ranks) for h in search_messages(
                store, embedder, mine, q, k=8, mode=mode)]
            for mode in ("fulltext", "hybrid") for q in WEATHER_QUERIES
        }

    before = results()
    assert all(before.values())
    # other tenants: "budget" and "delayed" in every message, long documents, "storm" never
    for n in range(3):
        noisy = [
            {"speaker": f"X{i % 4}", "text": f"budget budget delayed report {'approval figures ' * (i % 5)}line {i}"}
            for i in range(150)
        ]
        ingest_conversations(store, [conversation(make_group(), noisy)], embedder)
    # no GroupCache passed: the group's statistics are read again, nothing cached carries the answer
    assert results() == before
    # every fulltext hit contains a query word (no neighbour smoothing in search)
    hits = search_messages(store, embedder, mine, "kayaks", k=8, mode="fulltext")
    assert [h.id for h in hits] == ["m0007"] and hits[0].score > 0
