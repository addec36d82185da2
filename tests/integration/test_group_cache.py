"""One GroupCache per process (graphmem.recall.cache): the BM25 term statistics and the vector
matrices follow the group's one freshness key (vector_rev, version), so an erasure leaves no
stale statistics behind in a running process (issue 23)."""

from __future__ import annotations

import pytest

from graphmem.core.config import get_settings
from graphmem.groups.service import append_messages, forget_person
from graphmem.recall.cache import GroupCache
from graphmem.recall.lexical import analyze
from graphmem.recall.search import group_state, search_messages
from graphmem.verbatim.ingest import ingest_conversations
from tests.factories import conversation

pytestmark = pytest.mark.neo4j

# Ben's turns say "zeppelin"; erasing them closes up the write positions (the version drops),
# and new turns bring the version back: only vector_rev says that the group's text changed
CHAT = [
    {"speaker": "Ana", "text": "Shall we plan the picnic for Sunday?"},
    {"speaker": "Ben", "text": "A zeppelin ride before the picnic would be grand."},
    {"speaker": "Cy", "text": "I will bring lemonade to the picnic."},
    {"speaker": "Ben", "text": "The zeppelin leaves at nine, picnic after."},
    {"speaker": "Ben", "text": "Zeppelin tickets for everyone at the picnic."},
    {"speaker": "Ana", "text": "Picnic blankets are in my car."},
]
LATER = [
    {"id": "late-1", "speaker": "Cy", "text": "More lemonade for the picnic.", "ts": "2030-01-01T10:00:00"},
    {"id": "late-2", "speaker": "Ana", "text": "Picnic games at noon.", "ts": "2030-01-01T10:01:00"},
    {"id": "late-3", "speaker": "Cy", "text": "See you all at the picnic.", "ts": "2030-01-01T10:02:00"},
]
QUERY = "picnic lemonade zeppelin"


def test_an_erasure_leaves_no_stale_term_statistics_in_the_processs_cache(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, CHAT)], embedder)
    cache = GroupCache()  # what a server's Runtime holds for the whole process
    before = search_messages(store, embedder, group_id, QUERY, k=10, mode="fulltext", cache=cache)
    assert {h.speaker for h in before} == {"Ana", "Ben", "Cy"}
    version = group_state(store, group_id).version

    forget_person(store, group_id, "Ben", settings=get_settings())
    moved = [group_state(store, group_id).version]
    for row in LATER:  # new turns until the write position is where it was before the erasure
        if moved[-1] >= version:
            break
        append_messages(store, embedder, group_id, [row])
        moved.append(group_state(store, group_id).version)
    state = group_state(store, group_id)
    assert moved[0] < version == state.version, moved

    after = search_messages(store, embedder, group_id, QUERY, k=10, mode="fulltext", cache=cache)
    fresh = search_messages(store, embedder, group_id, QUERY, k=10, mode="fulltext", cache=GroupCache())
    assert after and {h.speaker for h in after} == {"Ana", "Cy"}
    # the same cache scores as one that never saw Ben's words: N and df count the turns stored now
    assert [(h.id, h.score) for h in after] == [(f.id, pytest.approx(f.score, rel=1e-12)) for f in fresh]
    stats = cache.term_stats(store, state)
    assert stats.n_docs == 3 + len(moved) - 1 and analyze("zeppelin")[0] not in stats.df
    rebuilt = GroupCache().term_stats(store, state)
    assert (stats.n_docs, stats.avgdl, stats.df) == (rebuilt.n_docs, rebuilt.avgdl, rebuilt.df)
