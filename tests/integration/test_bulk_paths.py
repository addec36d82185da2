"""Bulk-ingest paths of docs/scale.md against the real Neo4j.

- Encoding batch N+1 while batch N is written (ingest ``embed="now"`` and ``embed_group``)
  keeps every vector on its own message, and a second run changes nothing.
- ``GRAPHMEM_VECTOR_GLOBAL_INDEX=false``: ``schema apply`` drops the store-wide
  ``message_embedding`` index; a group whose own index is not readable is then scored exactly,
  with the same ranking as exact scoring and never another group's message; turning the
  setting back on recreates the index.
- Timestamps in the stored normal form take a fast path that gives the general parse.
"""

from __future__ import annotations

import numpy as np
import pytest

from graphmem.core import times
from graphmem.core.config import get_settings
from graphmem.core.errors import InvalidInputError
from graphmem.core.embed import embedding_text
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.store.schema import apply_schema
from graphmem.store.scope import scope_index
from graphmem.recall.search import group_state, vector_ranking
from graphmem.verbatim.vectors import embed_group
from tests.factories import conversation

pytestmark = pytest.mark.neo4j

WORDS = "budget storm lighthouse printer onboarding tents stove coffee archive zeppelin".split()


def rows(prefix: str, n: int) -> list[dict]:
    speakers = ["Ana", "Ben", "Chloe"]
    return [
        {"id": f"{prefix}-{i:03d}", "speaker": speakers[i % 3], "session": f"s{i // 9}",
         "text": f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} note {i}"}
        for i in range(n)
    ]


def stored_vectors(store, gid: str) -> dict[str, dict]:
    got = store.read_text(
        "MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.speaker AS speaker, m.ts AS ts, "
        "m.text AS text, m.embedding AS embedding, m:PendingEmbedding AS pending", g=gid)
    return {r["id"]: r for r in got}


def assert_vectors_match_texts(store, embedder, gid: str, n: int) -> None:
    got = stored_vectors(store, gid)
    assert len(got) == n and not any(r["pending"] for r in got.values())
    ids = sorted(got)
    want = embedder.encode([embedding_text(_Row(**{k: got[i][k] for k in ("speaker", "ts", "text")}))
                            for i in ids])
    have = np.array([got[i]["embedding"] for i in ids], dtype=np.float32)
    assert np.allclose(have, want, atol=1e-5)  # each vector belongs to its own message


class _Row:
    def __init__(self, speaker: str, ts: str, text: str) -> None:
        self.speaker, self.ts, self.text = speaker, ts, text


def test_ingest_encodes_ahead_and_keeps_vectors_on_their_messages(store, embedder, make_group) -> None:
    gid = make_group("bulk-ahead")
    conv = conversation(gid, rows("a", 23))
    first = ingest_conversations(store, [conv], embedder, batch_size=5, exact_max=1000)
    assert first.messages_written == 23
    assert_vectors_match_texts(store, embedder, gid, 23)
    before = stored_vectors(store, gid)
    again = ingest_conversations(store, [conv], embedder, batch_size=5, exact_max=1000)
    assert (again.messages_written, again.messages_skipped) == (0, 23)
    assert stored_vectors(store, gid) == before


def test_embed_group_encodes_ahead_and_is_idempotent(store, embedder, make_group) -> None:
    gid = make_group("bulk-embed")
    ingest_conversations(store, [conversation(gid, rows("e", 23))], None, embed="later", batch_size=7)
    first = embed_group(store, embedder, gid, batch_size=4, exact_max=1000)
    assert first.embedded == 23 and group_state(store, gid).pending == 0
    assert_vectors_match_texts(store, embedder, gid, 23)
    before = stored_vectors(store, gid)
    assert embed_group(store, embedder, gid, batch_size=4, exact_max=1000).embedded == 0
    assert stored_vectors(store, gid) == before


def index_names(store) -> set[str]:
    return {r["name"] for r in store.read("meta/list_indexes")}


def test_without_the_global_vector_index_search_scores_the_group_exactly(
    store, embedder, make_group, monkeypatch,
) -> None:
    a, b = make_group("bulk-noglobal-a"), make_group("bulk-noglobal-b")
    for gid, prefix in ((a, "a"), (b, "b")):  # identical texts, ids differ by prefix
        ingest_conversations(store, [conversation(gid, rows(prefix, 12))], embedder, exact_max=5)
    monkeypatch.setenv("GRAPHMEM_VECTOR_GLOBAL_INDEX", "false")
    get_settings.cache_clear()
    try:
        apply_schema(store, embedder.dimension, global_vector_index=False)
        assert "message_embedding" not in index_names(store)
        apply_schema(store, embedder.dimension, global_vector_index=False)  # idempotent without it too
        assert "message_embedding" not in index_names(store)
        state = group_state(store, a)
        assert state.vector_index == scope_index(a)
        own = vector_ranking(store, embedder, a, "lighthouse printer", 12, state)
        # the group's own index unreadable (as while it populates): exact scoring, same ids
        store.write("meta/drop_index", name=state.vector_index)
        fallback = vector_ranking(store, embedder, a, "lighthouse printer", 12, state)
        exact = [(r["id"], float(r["score"])) for r in store.read(
            "recall/vector_messages_exact", group_id=a,
            vector=embedder.encode(["lighthouse printer"])[0].tolist(), k=12, max_instant=None)]
        assert fallback == exact and len(fallback) == 12
        assert {i for i, _ in fallback} == {i for i, _ in own}
        assert all(i.startswith("a-") for i, _ in fallback)
    finally:
        monkeypatch.delenv("GRAPHMEM_VECTOR_GLOBAL_INDEX")
        get_settings.cache_clear()
        apply_schema(store, embedder.dimension)
    assert "message_embedding" in index_names(store)
    # with the global index back, the unreadable own index falls back to it (widening)
    back = vector_ranking(store, embedder, a, "lighthouse printer", 12, group_state(store, a))
    assert {i for i, _ in back} == {i for i, _ in fallback}


@pytest.mark.parametrize("text", [
    "2025-07-09T10:00:00", "2025-07-09T10:00:00+05:30", "2025-07-09T10:00:00.123456-01:00",
    "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00",
])
def test_normal_form_timestamps_parse_like_the_general_rule(text: str) -> None:
    fast = times._normal_form(text)
    assert fast is not None and fast.text == text
    assert fast == times.parse_ts(" " + text)  # the leading space forces the general path


@pytest.mark.parametrize("text", [
    "2025-07-09T10:00:00Z", "2025-07-09T10:00:00-00:00", "2025-07-09T10:00:00.000000",
    "2025-07-09 10:00:00", "2025-07-09T10:00:00.12345Z",
])
def test_other_spellings_take_the_general_path(text: str) -> None:
    assert times._normal_form(text) is None
    assert times.parse_ts(text).text != text  # normalised by the general rule


def test_an_offset_minute_of_60_is_refused() -> None:
    assert times._normal_form("2025-07-09T10:00:00+05:60") is None
    with pytest.raises(InvalidInputError):
        times.parse_ts("2025-07-09T10:00:00+05:60")
