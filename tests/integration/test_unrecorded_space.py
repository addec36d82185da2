"""Groups whose vectors were written before graphmem recorded embedding spaces (0.1 stores):
their vectors are plain all-MiniLM-L6-v2's, so the default model (with the chat update) must
refuse them on every path that ranks or writes vectors, never claim them as its own, and
``graphmem embed --rebuild --all`` must move them over (graphmem.verbatim.space.UNRECORDED)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphmem.core.embed import BASE_MODEL, DEFAULT_MODEL, EmbeddingSpace
from graphmem.core.errors import EmbeddingSpaceError
from graphmem.recall.search import group_state, search_group
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.verbatim.space import UNRECORDED, claim_space, same_space, stale_groups
from graphmem.verbatim.vectors import embed_group
from loaders import load_conversations
from tests.factories import conversation, runtime_of

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]


def record(store, gid):
    return store.read_text(
        "MATCH (g:Group {id: $g}) RETURN g.embed_model AS model, g.embed_backend AS backend, "
        "g.embed_dimension AS dim, COUNT { MATCH (m:Message {group_id: $g}) } AS n, "
        "COUNT { MATCH (m:Message {group_id: $g}) WHERE m.embedding IS NOT NULL } AS vectors", g=gid)[0]


def as_before_0_2(store, gid):
    """The group as a 0.1 store holds it: vectors, no record of who wrote them."""
    store.write_tx(lambda tx: tx.run("MATCH (g:Group {id: $g}) REMOVE g.embed_model, g.embed_backend, "
                                     "g.embed_dimension", g=gid).consume())


def test_unrecorded_vectors_are_refused_everywhere_and_rebuilt_by_rebuild_all(store, embedder, group_id):
    ingest_conversations(store, load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl",
                                                   group=group_id), embedder)
    as_before_0_2(store, group_id)
    before = record(store, group_id)
    assert before["model"] is None and before["vectors"] > 0
    assert group_state(store, group_id).embed_space == UNRECORDED

    with pytest.raises(EmbeddingSpaceError) as info:
        search_group(store, embedder, group_id, "which trail", k=3)
    assert "before graphmem recorded their model" in str(info.value)
    assert f"graphmem embed --group {group_id} --rebuild" in str(info.value)
    assert "GRAPHMEM_EMBED_BACKEND" not in str(info.value)  # no backend holds these vectors
    with pytest.raises(EmbeddingSpaceError):
        from graphmem.query import ask

        ask(runtime_of(store, embedder), group_id, "Which trail did the family choose?")
    late = conversation(group_id, [{"id": "late-1", "speaker": "Ben", "text": "I still prefer the lake loop"}])
    with pytest.raises(EmbeddingSpaceError):  # refused before any write
        ingest_conversations(store, [late], embedder)
    with pytest.raises(EmbeddingSpaceError):
        embed_group(store, embedder, group_id)
    with pytest.raises(EmbeddingSpaceError):
        claim_space(store, group_id, embedder)
    after = record(store, group_id)
    assert after == before  # nothing written, and nobody claimed the group for its own model

    assert dict(stale_groups(store, embedder))[group_id] == UNRECORDED
    env = {**os.environ, "GRAPHMEM_EMBED_BACKEND": "onnx"}
    cmd = [sys.executable, "-m", "graphmem", "embed", "--rebuild", "--all", "--json", "--no-progress"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    rebuilt = {r["group_id"]: r for r in json.loads(out.stdout)["rebuilt"]}
    assert rebuilt[group_id]["embedded"] == before["vectors"]
    row = record(store, group_id)
    assert (row["model"], row["backend"], row["vectors"]) == (DEFAULT_MODEL, "onnx", before["vectors"])
    assert group_id not in dict(stale_groups(store, embedder))
    assert search_group(store, embedder, group_id, "which trail", k=3).hits


def test_a_group_without_vectors_is_not_stale_and_takes_the_first_embedders_space(store, embedder, group_id):
    ingest_conversations(store, load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl",
                                                   group=group_id), None, embed="later")
    assert record(store, group_id)["model"] is None
    assert group_state(store, group_id).embed_space is None
    assert group_id not in dict(stale_groups(store, embedder))  # nothing to rebuild
    summary = embed_group(store, embedder, group_id)
    row = record(store, group_id)
    assert summary.embedded == row["vectors"] == row["n"] and row["model"] == DEFAULT_MODEL


def test_unrecorded_vectors_match_plain_minilm_on_either_backend_and_nothing_else():
    assert same_space(UNRECORDED, EmbeddingSpace(BASE_MODEL, "onnx", 384))
    assert same_space(UNRECORDED, EmbeddingSpace(BASE_MODEL, "torch", 384))
    assert not same_space(UNRECORDED, EmbeddingSpace(DEFAULT_MODEL, "onnx", 384))
    assert not same_space(EmbeddingSpace(BASE_MODEL, "onnx", 384), EmbeddingSpace(BASE_MODEL, "torch", 384))
