"""Person rankings from this process's vector matrices (graphmem.recall.cache).

- In a group with its own vector index, a cached person's ranking is the exact one (the scan of
  every vector the person sent), with the template's order, k and as-of filter.
- The matrices follow the group's writes: a new message is appended (version), an edit, a
  vector filled by ``graphmem embed`` and a forgotten person move ``vector_rev`` and the stale
  matrix is not used again; until it is reloaded, Neo4j answers.
- A late message (placed before stored ones: positions move) and a group loaded again under
  an old id are never missed or mixed up: the ranking stays the exact one.
- A person cached before any of their messages had a vector is ranked once one has.
- With a zero budget (``GRAPHMEM_VECTOR_CACHE_MB=0``) every ranking is Neo4j's.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from graphmem.core.config import get_settings
from graphmem.recall import cache as vector_cache
from graphmem.groups.service import forget_group, forget_person
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.recall.search import group_state
from graphmem.recall.cache import GroupCache, person_rankings
from graphmem.verbatim.vectors import embed_group
from tests.factories import conversation
from tests.integration.test_query_scale import EXACT_MAX, _rows  # a group of 60 turns over 5 topics, 3 speakers

pytestmark = pytest.mark.neo4j

QUERY = "lighthouse tour before noon"


def _exact(store, gid: str, person: str, vec: np.ndarray, k: int, max_instant: float | None = None):
    rows = store.read_text(
        "MATCH (m:Message {group_id: $g})-[:SOURCE]->(:Person {group_id: $g, id: $p}) "
        "WHERE m.embedding IS NOT NULL AND ($t IS NULL OR m.instant <= $t) "
        "RETURN m.id AS id, m.embedding AS e, m.turn_created AS tc", g=gid, p=person, t=max_instant)
    scored = sorted(((float(np.dot(np.asarray(r["e"]), vec)), r["tc"], r["id"]) for r in rows),
                    key=lambda x: (-x[0], x[1]))
    return [(i, s) for s, _, i in scored[:k]]


def _ranked(rows: list[dict]) -> dict[str, list[tuple[str, float]]]:
    out: dict[str, list[tuple[str, float]]] = {}
    for r in rows:
        out.setdefault(r["person_id"], []).append((r["id"], float(r["score"])))
    return out


def _from_cache(rows: list[dict]) -> bool:
    """Rows ranked in this process carry no message fields; Neo4j's template rows do."""
    return bool(rows) and all("text" not in r for r in rows)


def _rank(store, gid: str, vec: np.ndarray, persons=("Ana", "Ben"), k: int = 3, max_instant=None):
    return person_rankings(store, group_state(store, gid), list(persons), vec.tolist(), k, max_instant,
                           exact_max=EXACT_MAX, oversample=2.0, cache=CACHE[0])


def _until_cached(store, gid: str, vec: np.ndarray, persons=("Ana",), timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while True:
        rows = _rank(store, gid, vec, persons)
        if _from_cache(rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


CACHE: list[GroupCache] = []
"""The test's GroupCache (one per test, what a server's Runtime holds)."""


@pytest.fixture(autouse=True)
def _fresh_cache():
    CACHE[:] = [GroupCache()]
    yield
    CACHE.clear()


def warm(store, state, persons) -> int:
    return CACHE[0].warm(store, state, persons)


def test_a_cached_ranking_is_the_exact_one(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, _rows(60))], embedder, exact_max=EXACT_MAX)
    state = group_state(store, group_id)
    assert state.vector_index and CACHE[0].vectors is not None
    vec = embedder.encode([QUERY])[0]

    first = _rank(store, group_id, vec)  # nothing cached yet: Neo4j answers and loads start
    assert not _from_cache(first)
    assert warm(store, state, ["Ana", "Ben"]) > 0
    for k in (1, 3, 20, 50):
        rows = _rank(store, group_id, vec, ("Ben", "Ana", "Nobody"), k=k)
        assert _from_cache(rows)
        assert [r["person_id"] for r in rows] == ["Ben"] * min(k, 20) + ["Ana"] * min(k, 20)
        got = _ranked(rows)
        for p in ("Ana", "Ben"):
            want = _exact(store, group_id, p, vec, k)
            assert [i for i, _ in got[p]] == [i for i, _ in want]
            assert [s for _, s in got[p]] == pytest.approx([s for _, s in want], abs=1e-5)
    # as of an instant: only the messages written by then, as the template filters
    cut = float(store.read_text("MATCH (m:Message {group_id: $g, id: 'm0030'}) RETURN m.instant AS t",
                                g=group_id)[0]["t"])
    got = _ranked(_rank(store, group_id, vec, k=5, max_instant=cut))
    assert [i for i, _ in got["Ana"]] == [i for i, _ in _exact(store, group_id, "Ana", vec, 5, cut)]
    # Neo4j's exact branch of the template gives the same ranking
    template = _ranked(store.read(
        "recall/vector_person_messages", group_id=group_id, person_ids=["Ana", "Ben"], vector=vec.tolist(),
        k=3, max_instant=None, index=state.vector_index, exact_max=1000, oversample=2.0))
    assert {p: [i for i, _ in h] for p, h in _ranked(_rank(store, group_id, vec)).items()} == \
        {p: [i for i, _ in h] for p, h in template.items()}


def test_the_matrices_follow_the_groups_writes(store, embedder, group_id):
    rows = _rows(60)
    ingest_conversations(store, [conversation(group_id, rows)], embedder, exact_max=EXACT_MAX)
    vec = embedder.encode([QUERY])[0]
    warm(store, group_state(store, group_id), ["Ana", "Ben", "Cy"])
    assert _from_cache(_rank(store, group_id, vec))

    # new messages of two cached persons (the same text): appended to their matrices (no
    # reload, one read for both), each ranked first for its sender
    rows.append({"speaker": "Ana", "session": "s9", "text": QUERY, "id": "late-1"})
    rows.append({"speaker": "Ben", "session": "s9", "text": QUERY, "id": "late-b"})
    ingest_conversations(store, [conversation(group_id, rows)], embedder, exact_max=EXACT_MAX)
    after = _ranked(_rank(store, group_id, vec, k=25))
    assert _from_cache(_rank(store, group_id, vec))
    assert after["Ana"][0][0] == "late-1" and after["Ben"][0][0] == "late-b"
    for p in ("Ana", "Ben"):  # each matrix holds exactly its sender's messages, new ones included
        assert [i for i, _ in after[p]] == [i for i, _ in _exact(store, group_id, p, vec, 25)]

    # an edit moves vector_rev: the stale matrix is dropped, Neo4j answers with the new text
    rev = group_state(store, group_id).vector_rev
    rows[3] = {**rows[3], "text": "the lighthouse tour before noon is booked"}  # m0003, Ana's
    ingest_conversations(store, [conversation(group_id, rows)], embedder, exact_max=EXACT_MAX)
    assert group_state(store, group_id).vector_rev == rev + 1
    now = _rank(store, group_id, vec, k=20)
    assert not _from_cache(now)
    want = [i for i, _ in _exact(store, group_id, "Ana", vec, 20)]
    assert "m0003" in want[:3]
    assert [i for i, _ in _ranked(now)["Ana"]] == want
    reloaded = _until_cached(store, group_id, vec)  # the reload started above finishes
    assert _from_cache(reloaded)
    assert [i for i, _ in _ranked(_rank(store, group_id, vec, k=20))["Ana"]] == want

    # vectors filled later by graphmem embed move vector_rev too
    more = rows + [{"speaker": "Ana", "session": "s9", "text": f"{QUERY} again", "id": "late-2"}]
    ingest_conversations(store, [conversation(group_id, more)], embedder, embed="later", exact_max=EXACT_MAX)
    pending = _rank(store, group_id, vec)
    assert _from_cache(pending) and "late-2" not in [i for i, _ in _ranked(pending)["Ana"]]
    rev = group_state(store, group_id).vector_rev
    embed_group(store, embedder, group_id, exact_max=EXACT_MAX)
    assert group_state(store, group_id).vector_rev == rev + 1
    filled = _rank(store, group_id, vec, k=20)
    assert not _from_cache(filled) and "late-2" in [i for i, _ in _ranked(filled)["Ana"]][:3]
    assert _from_cache(_until_cached(store, group_id, vec))

    # forgetting a person deletes their messages and moves vector_rev: no stale ranking survives
    rev = group_state(store, group_id).vector_rev
    forget_person(store, group_id, "Ben", settings=get_settings())
    assert group_state(store, group_id).vector_rev == rev + 1
    assert _ranked(_rank(store, group_id, vec, ("Ben",))) == {}

    # a write that changes nothing (the same input again) leaves the revision alone (the first
    # load below writes Ben's messages again, among the others: a late insert that moves it)
    rev = group_state(store, group_id).vector_rev
    ingest_conversations(store, [conversation(group_id, more)], embedder, exact_max=EXACT_MAX)
    assert group_state(store, group_id).vector_rev == rev + 1
    rev = group_state(store, group_id).vector_rev
    ingest_conversations(store, [conversation(group_id, more)], embedder, exact_max=EXACT_MAX)
    embed_group(store, embedder, group_id, exact_max=EXACT_MAX)
    assert group_state(store, group_id).vector_rev == rev


def test_groups_without_their_own_index_and_a_zero_budget_read_neo4j(store, embedder, make_group):
    small, large = make_group("vc-small"), make_group("vc-large")
    ingest_conversations(store, [conversation(small, _rows(12))], embedder)  # exact_max default: no index
    ingest_conversations(store, [conversation(large, _rows(60))], embedder, exact_max=EXACT_MAX)
    vec = embedder.encode([QUERY])[0]
    assert not group_state(store, small).vector_index
    assert warm(store, group_state(store, small), ["Ana"]) == 0
    assert not _from_cache(_rank(store, small, vec))

    CACHE[:] = [GroupCache(vector_mb=0)]  # GRAPHMEM_VECTOR_CACHE_MB=0
    assert CACHE[0].vectors is None
    assert warm(store, group_state(store, large), ["Ana"]) == 0
    for _ in range(3):
        assert not _from_cache(_rank(store, large, vec))


def _ids(rows: list[dict], person: str) -> list[str]:
    return [i for i, _ in _ranked(rows).get(person, [])]


def test_a_late_message_enters_a_cached_ranking(store, embedder, group_id):
    """A message timed before stored ones is placed among them (their positions move): the
    cached matrices are reloaded, not caught up by position, so the late message is ranked."""
    rows = _rows(60)
    ingest_conversations(store, [conversation(group_id, rows)], embedder, exact_max=EXACT_MAX)
    vec = embedder.encode([QUERY])[0]
    warm(store, group_state(store, group_id), ["Ana", "Ben"])
    assert _from_cache(_rank(store, group_id, vec))
    rev = group_state(store, group_id).vector_rev
    late = {"speaker": "Ana", "session": "s0", "text": QUERY, "id": "late-ana", "ts": "2026-01-01T10:00:05.5"}
    ingest_conversations(store, [conversation(group_id, [late])], embedder, exact_max=EXACT_MAX)  # arrives alone
    assert group_state(store, group_id).vector_rev == rev + 1
    placed = store.read_text("MATCH (m:Message {group_id: $g}) WHERE m.id IN ['late-ana', 'm0059'] "
                             "RETURN m.id AS id, m.turn_created AS tc ORDER BY tc", g=group_id)
    assert [r["id"] for r in placed] == ["late-ana", "m0059"]  # placed among the stored messages
    want = [i for i, _ in _exact(store, group_id, "Ana", vec, 5)]
    assert want[0] == "late-ana"
    assert _ids(_rank(store, group_id, vec, k=5), "Ana") == want
    assert _ids(_until_cached(store, group_id, vec), "Ana")[:3] == want[:3]
    assert _ids(_rank(store, group_id, vec, k=5), "Ana") == want  # from the reloaded matrix
    # an append after that is caught up without a reload, and still exact
    rev = group_state(store, group_id).vector_rev
    ingest_conversations(store, [conversation(group_id, rows + [late, {"speaker": "Ana", "session": "s9",
                                                                        "text": f"{QUERY}!", "id": "end-ana"}])],
                         embedder, exact_max=EXACT_MAX)
    assert group_state(store, group_id).vector_rev == rev
    got = _rank(store, group_id, vec, k=5)
    assert _from_cache(got) and _ids(got, "Ana") == [i for i, _ in _exact(store, group_id, "Ana", vec, 5)]


def test_a_person_cached_without_vectors_is_ranked_once_they_have_one(store, embedder, group_id):
    rows = _rows(60) + [{"speaker": "Dee", "session": "s5", "text": "a note from Dee", "id": "dee-1"}]
    ingest_conversations(store, [conversation(group_id, _rows(60))], embedder, exact_max=EXACT_MAX)
    ingest_conversations(store, [conversation(group_id, rows)], embedder, embed="later", exact_max=EXACT_MAX)
    vec = embedder.encode([QUERY])[0]
    warm(store, group_state(store, group_id), ["Dee"])  # no vector yet: an empty matrix
    assert _ranked(_rank(store, group_id, vec, ("Dee",))) == {}
    rows.append({"speaker": "Dee", "session": "s9", "text": QUERY, "id": "dee-new"})
    ingest_conversations(store, [conversation(group_id, rows)], embedder, exact_max=EXACT_MAX)
    got = _rank(store, group_id, vec, ("Dee",))
    assert _from_cache(got) and _ids(got, "Dee") == ["dee-new"]


def test_a_group_loaded_again_under_its_id_is_not_read_from_the_old_matrices(store, embedder, group_id):
    old = [{**r, "text": f"old volcano {r['text']}"} for r in _rows(60)]
    old[6] = {**old[6], "text": QUERY, "id": "old-match"}  # Ana's
    ingest_conversations(store, [conversation(group_id, old)], embedder, exact_max=EXACT_MAX)
    vec = embedder.encode([QUERY])[0]
    warm(store, group_state(store, group_id), ["Ana"])
    assert _ids(_rank(store, group_id, vec, ("Ana",), k=1), "Ana") == ["old-match"]
    rev = group_state(store, group_id).vector_rev
    forget_group(store, group_id)
    new = _rows(66)  # as many messages or more: the group's version reaches the old one
    ingest_conversations(store, [conversation(group_id, new)], embedder, exact_max=EXACT_MAX)
    assert group_state(store, group_id).vector_rev != rev
    got = _rank(store, group_id, vec, ("Ana",), k=5)
    assert _ids(got, "Ana") == [i for i, _ in _exact(store, group_id, "Ana", vec, 5)]
    assert "old-match" not in _ids(got, "Ana")


def test_a_matrix_larger_than_the_cache_is_not_loaded_again_for_every_query(store, embedder, group_id):
    """A person's matrix that does not fit the whole cache is not kept, and no further load of
    it starts (each would read the person's vectors and throw them away) until the group's
    vector_rev moves; Neo4j ranks the person meanwhile."""
    ingest_conversations(store, [conversation(group_id, _rows(60))], embedder, exact_max=EXACT_MAX)
    state = group_state(store, group_id)
    cache = vector_cache.VectorCache(max_bytes=100)
    assert cache.load(store, state, "Ana").ids  # read once, too large to keep
    assert cache.get_many(store, state, ["Ana"]) == {}
    assert not cache._loading  # no background load started for it
    forget_person(store, group_id, "Ben", settings=get_settings())  # moves vector_rev: one load may try again
    assert cache.get_many(store, group_state(store, group_id), ["Ana"]) == {}
    deadline = time.monotonic() + 10
    while cache._loading:  # the retry ran (and did not fit either)
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert cache._too_big((group_id, "Ana"), group_state(store, group_id))
