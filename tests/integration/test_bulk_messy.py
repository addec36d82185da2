"""Messy bulk input, found by trying to break the bulk path (real Neo4j, real embedder):
concurrent loads of one input report exact counts, and vectors always belong to the stored
text (an edit during ``graphmem embed`` is not given the old text's vector)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from graphmem.ingest import ingest_conversations
from graphmem.search import group_state
from graphmem.vectors import embed_group
from tests.factories import conversation

pytestmark = pytest.mark.neo4j


class MeanwhileEmbedder:
    """The real embedder; on its first ``encode`` it first runs ``meanwhile`` (another load or
    edit, through the real library), so the caller's next write finds it committed: the
    interleaving two processes can produce, made deterministic."""

    def __init__(self, inner, meanwhile: Callable[[], object]) -> None:
        self.inner, self.meanwhile = inner, meanwhile
        self.dimension = inner.dimension

    def encode(self, texts, *args, **kwargs):
        if self.meanwhile is not None:
            run, self.meanwhile = self.meanwhile, None
            run()
        return self.inner.encode(texts, *args, **kwargs)


def counts(s) -> tuple[int, int, int]:
    return s.messages_written, s.messages_edited, s.messages_skipped


def test_concurrent_loads_of_one_input_count_each_line_once(store, embedder, group_id):
    """Two loads of the same input, the second committing while the first encodes: between
    them every line is written, edited or skipped exactly once (the loser's in-input edits were
    counted as edits as well as skipped before)."""
    rows = [{"id": f"m{i}", "speaker": "Ana" if i % 2 else "Ben", "text": f"line {i} about the ferry",
             "ts": f"2026-01-01T10:00:{i:02d}"} for i in range(10)]
    rows += [dict(rows[2], text="line 2 about the ferry, corrected"),
             dict(rows[5], text="line 5, first fix"), dict(rows[5], text="line 5, second fix")]
    conv = conversation(group_id, rows)
    inner = []
    racing = MeanwhileEmbedder(embedder, lambda: inner.append(ingest_conversations(store, [conv], embedder)))
    outer = ingest_conversations(store, [conv], racing)
    assert counts(inner[0]) == (10, 3, 0)
    assert counts(outer) == (0, 0, 13)
    history = store.read_text("MATCH (m:Message {group_id: $g}) RETURN sum(size(coalesce(m.text_history, []))) AS h",
                              g=group_id)
    assert history == [{"h": 3}]

    # the same with edits of stored messages: one load applies them, the other skips them
    edits = [dict(rows[0], text="line 0, revised"), dict(rows[0], text="line 0, revised again"),
             dict(rows[1], text="line 1, revised")]
    conv = conversation(group_id, edits)
    inner.clear()
    racing = MeanwhileEmbedder(embedder, lambda: inner.append(ingest_conversations(store, [conv], embedder)))
    outer = ingest_conversations(store, [conv], racing)
    assert counts(inner[0]) == (0, 3, 0)
    assert counts(outer) == (0, 0, 3)
