"""Progress that moves (issue 28, item 6): ingest with embedding and `graphmem embed` count
messages as they are encoded, against a known total, not once per written batch."""

from __future__ import annotations

import re

import pytest

from graphmem.core.embed import Embedder
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.verbatim.vectors import embed_group
from tests.factories import conversation

pytestmark = pytest.mark.neo4j


def rows(n: int) -> list[dict]:
    return [{"id": f"p{i}", "speaker": "Ana", "text": f"note {i} about the trip plans",
             "ts": f"2026-01-01T10:{i // 60:02d}:{i % 60:02d}"} for i in range(n)]


def counts(err: str, total: int) -> list[int]:
    return [int(m) for m in re.findall(rf"(\d+)/{total}\b", err)]


def test_ingest_and_embed_bars_move_while_encoding(store, group_id, capfd):
    small = Embedder(batch_size=16, sentence_vectors=False)
    ingest_conversations(store, [conversation(group_id, rows(96))], small, batch_size=1000, progress=True)
    seen = counts(capfd.readouterr().err, 96)
    assert seen and seen[-1] == 96
    assert any(0 < n < 96 for n in seen), seen  # one written batch, yet the bar moved inside it

    later = group_id + "-later"
    try:
        ingest_conversations(store, [conversation(later, rows(80))], None, embed="later")
        capfd.readouterr()
        embed_group(store, small, later, batch_size=1000, progress=True)
        seen = counts(capfd.readouterr().err, 80)  # the total is known: tqdm shows n/80 and an ETA
        assert seen and seen[-1] == 80 and any(0 < n < 80 for n in seen), seen
    finally:
        from graphmem.groups.service import forget_group

        forget_group(store, later)
