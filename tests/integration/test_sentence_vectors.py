"""Sentence vectors of System 1 (Message.sentence_embeddings) against the real Neo4j: every write
path stores them, an edit replaces them, and the process's sentence matrix
(graphmem.recall.cache.sentence_ranking) scores a turn by its best sentence (docs/query.md,
eighth round)."""

from __future__ import annotations

import copy

import time
from types import SimpleNamespace
from datetime import datetime, timezone

import numpy as np
import pytest

from graphmem.recall import cache as vector_cache
from graphmem.core.config import get_settings
from graphmem.core.embed import embedding_text, sentence_texts
from graphmem.groups.service import forget_person
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.recall.search import group_state
from graphmem.recall.cache import GroupCache, sentence_ranking
from graphmem.verbatim.vectors import embed_group
from tests.factories import conversation

pytestmark = pytest.mark.neo4j

LONG = ("We drove up to the lake on Saturday. The kids caught three trout before lunch! "
        "Then it rained all afternoon.")
ROWS = [
    {"speaker": "Ana", "text": "How was the weekend?"},
    {"speaker": "Bo", "text": LONG},
    {"speaker": "Ana", "text": "Sounds lovely."},
]


def _stored(store, group_id: str) -> dict[str, list[float] | None]:
    rows = store.read_text(
        "MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.sentence_embeddings AS s", g=group_id)
    return {r["id"]: r["s"] for r in rows}


def _expected(embedder, group_id: str, rows: list[dict]) -> dict[str, np.ndarray | None]:
    out: dict[str, np.ndarray | None] = {}
    for m in conversation(group_id, rows).messages:
        texts = sentence_texts(m)
        out[m.id] = embedder.encode(texts).ravel() if texts else None
    return out


def _check(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for mid, w in want.items():
        if w is None:
            assert got[mid] is None, mid
        else:
            assert got[mid] is not None and len(got[mid]) == len(w), mid
            np.testing.assert_allclose(np.array(got[mid]), w, atol=1e-5)


def test_ingest_stores_the_sentences_of_a_long_turn_once(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, ROWS)], embedder)
    got = _stored(store, group_id)
    want = _expected(embedder, group_id, ROWS)
    assert [len(v) // embedder.dimension for v in want.values() if v is not None] == [3]
    _check(got, want)
    summary = ingest_conversations(store, [conversation(group_id, ROWS)], embedder)  # idempotent
    assert summary.messages_written == 0 and summary.messages_edited == 0
    assert _stored(store, group_id) == got


def test_an_edit_replaces_or_removes_the_sentence_vectors(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, ROWS)], embedder)
    edited = [ROWS[0], {"speaker": "Bo", "text": "We stayed home."},
              {"speaker": "Ana", "text": "Sounds lovely. Next time bring the kids!"}]
    summary = ingest_conversations(store, [conversation(group_id, edited)], embedder)
    assert summary.messages_edited == 2
    got = _stored(store, group_id)
    assert got["m0001"] is None  # one sentence now: the old sentences' vectors are gone
    _check(got, _expected(embedder, group_id, edited))


def test_embed_later_fills_the_sentence_vectors(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, ROWS)], embedder, embed="later")
    assert all(v is None for v in _stored(store, group_id).values())
    embed_group(store, embedder, group_id)
    _check(_stored(store, group_id), _expected(embedder, group_id, ROWS))


CACHE: list[GroupCache] = [GroupCache()]
"""The process's GroupCache as a server holds it (replaced by the test that needs its own)."""


def _ranking(store, group_id: str, q: np.ndarray, max_instant: float | None = None) -> list[dict]:
    return sentence_ranking(store, group_state(store, group_id), q.tolist(), 10, max_instant, load_max=5000,
                            cache=CACHE[0])


def test_the_sentence_ranking_scores_a_turn_by_its_best_sentence(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, ROWS)], embedder)
    q = embedder.encode(["Which fish did the kids catch?"])[0]
    rows = _ranking(store, group_id, q)
    assert [r["id"] for r in rows] == ["m0001"]  # only the turn of several sentences
    long_msg = conversation(group_id, ROWS).messages[1]
    sentences = embedder.encode(sentence_texts(long_msg)) @ q
    whole = float(embedder.encode([embedding_text(long_msg)])[0] @ q)
    assert rows[0]["score"] == pytest.approx(max(whole, float(sentences.max())), abs=1e-4)
    assert float(sentences.max()) > whole  # the trout sentence is closer than the whole turn
    assert rows[0]["session"] == "s1" and rows[0]["person_id"] == "Bo"
    before = datetime.fromisoformat(long_msg.ts).replace(tzinfo=timezone.utc).timestamp() - 1
    assert _ranking(store, group_id, q, max_instant=before) == []  # as of before it was said


@pytest.mark.parametrize("background", [True, False])
def test_the_sentence_matrix_follows_edits_new_messages_and_erasure(store, embedder, group_id, background):
    """The process's matrix is used only while it matches the group: an edit that leaves one
    sentence drops the turn, a new long turn joins (at once when no background load would
    bring it: the one-shot CLI), and an erased person's turns are gone."""
    CACHE[:] = [GroupCache(background_loads=background)]
    try:
        _follow(store, embedder, group_id)
    finally:
        CACHE[:] = [GroupCache()]


def _follow(store, embedder, group_id: str) -> None:
    ingest_conversations(store, [conversation(group_id, ROWS)], embedder)
    q = embedder.encode(["Which fish did the kids catch?"])[0]
    assert [r["id"] for r in _ranking(store, group_id, q)] == ["m0001"]
    more = ROWS + [{"speaker": "Cy", "text": "I caught a pike once. It was huge!"}]
    ingest_conversations(store, [conversation(group_id, more)], embedder)
    # the matrix behind the group's version serves (it lacks only the new turn) while a fresh
    # one loads in the background
    deadline = time.monotonic() + 10
    while (got := {r["id"] for r in _ranking(store, group_id, q)}) != {"m0001", "m0003"}:
        assert got == {"m0001"} and time.monotonic() < deadline
        time.sleep(0.05)
    edited = [ROWS[0], {"speaker": "Bo", "text": "We stayed home."}, ROWS[2], more[3]]
    ingest_conversations(store, [conversation(group_id, edited)], embedder)
    assert [r["id"] for r in _ranking(store, group_id, q)] == ["m0003"]  # the cached matrix was stale
    forget_person(store, group_id, "Cy", settings=get_settings())
    assert _ranking(store, group_id, q) == []


def _ingest_without_sentences(store, embedder, group_id: str, monkeypatch) -> None:
    """ROWS stored with vectors but no sentence vectors (an embedder with sentence_vectors off,
    as ``GRAPHMEM_SENTENCE_VECTORS=false`` makes it; the same model, copied, not reloaded)."""
    off = copy.copy(embedder)
    off.sentence_vectors = False
    ingest_conversations(store, [conversation(group_id, ROWS)], off)


def test_embed_sentences_fills_a_store_written_without_them(store, embedder, group_id, monkeypatch):
    """Messages stored with vectors but without sentence vectors (an older store, or the
    setting off) get them from `embed --sentences`, once: a second run writes nothing."""
    _ingest_without_sentences(store, embedder, group_id, monkeypatch)
    assert all(v is None for v in _stored(store, group_id).values())
    assert embed_group(store, embedder, group_id).sentences == 0  # only with sentences=True
    first = embed_group(store, embedder, group_id, sentences=True, batch_size=2)  # pages of 2
    assert (first.embedded, first.sentences) == (0, 1)
    _check(_stored(store, group_id), _expected(embedder, group_id, ROWS))
    assert embed_group(store, embedder, group_id, sentences=True).sentences == 0


def test_embed_sentences_from_the_command_line(store, embedder, group_id, monkeypatch):
    from typer.testing import CliRunner

    from graphmem.cli import app

    _ingest_without_sentences(store, embedder, group_id, monkeypatch)
    res = CliRunner().invoke(app, ["embed", "--group", group_id, "--sentences", "--json"])
    assert res.exit_code == 0, res.output
    assert '"sentences": 1' in res.output
    _check(_stored(store, group_id), _expected(embedder, group_id, ROWS))


def test_an_edit_writing_the_instant_with_another_offset_keeps_the_stored_date(store, embedder, group_id):
    """The same instant spelt with another UTC offset is the same message, so the edit is taken;
    the message keeps its stored ts, and its vectors (turn and sentences) are those of the
    message as stored ("Ann (2026-01-01): ..."), not of the input's date."""
    first = [{"id": "a1", "speaker": "Ann", "text": "Hello. World.", "ts": "2026-01-01T23:30:00-05:00"}]
    edit = [{"id": "a1", "speaker": "Ann", "text": "Hello again. New world!", "ts": "2026-01-02T04:30:00Z"}]
    ingest_conversations(store, [conversation(group_id, first)], embedder)
    assert ingest_conversations(store, [conversation(group_id, edit)], embedder).messages_edited == 1
    row = store.read_text(
        "MATCH (m:Message {group_id: $g, id: 'a1'}) RETURN m.speaker AS speaker, m.ts AS ts, m.text AS text, "
        "m.embedding AS e, m.sentence_embeddings AS s", g=group_id)[0]
    assert row["ts"] == first[0]["ts"] and row["text"] == edit[0]["text"]
    stored = SimpleNamespace(speaker=row["speaker"], ts=row["ts"], text=row["text"])
    np.testing.assert_allclose(np.array(row["s"]), embedder.encode(sentence_texts(stored)).ravel(), atol=1e-5)
    np.testing.assert_allclose(np.array(row["e"]), embedder.encode([embedding_text(stored)])[0], atol=1e-5)


def test_a_sentence_matrix_larger_than_the_cache_is_not_loaded_for_every_query(store, embedder, group_id):
    """With a cache too small for the group's matrix, the query that loads it uses it, and the
    next ones go without sentences instead of reading the group again each time; an edit
    (a new vector_rev) lets one load try again."""
    ingest_conversations(store, [conversation(group_id, ROWS)], embedder)
    cache = vector_cache.VectorCache(max_bytes=100)
    first = cache.sentences(store, group_state(store, group_id), load_max=5000)
    assert first is not None and first.ids == ["m0001"] and first.nbytes > 100
    assert cache.sentences(store, group_state(store, group_id), load_max=5000) is None
    edited = [ROWS[0], ROWS[1], {"speaker": "Ana", "text": "Sounds lovely. Well done!"}]
    ingest_conversations(store, [conversation(group_id, edited)], embedder)
    again = cache.sentences(store, group_state(store, group_id), load_max=5000)
    assert again is not None and sorted(again.ids) == ["m0001", "m0002"]
