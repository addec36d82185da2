"""Sentences of a turn (graphmem.core.text.split_sentences, graphmem.core.embed.sentence_texts) and the
process's sentence matrix (graphmem.recall.cache.SentenceMatrix): docs/query.md, eighth round."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from graphmem.core.config import Settings
from graphmem.core.embed import Embedder, sentence_texts
from graphmem.core.text import split_sentences
from graphmem.recall.cache import SentenceMatrix


def test_a_turn_splits_after_sentence_ends_and_before_a_caption():
    assert split_sentences("Sure thing.") == []  # one sentence: the turn's vector is enough
    assert split_sentences("") == []
    assert split_sentences("We went hiking! It rained? Then sun.") == ["We went hiking!", "It rained?", "Then sun."]
    assert split_sentences("Look at this [shares a photo: a dog on a beach]") == [
        "Look at this", "[shares a photo: a dog on a beach]"]
    assert split_sentences("Yes. ! No.") == ["Yes.", "No."]  # a piece of one character is dropped
    # other scripts' sentence ends: CJK full stops need no space after them
    assert split_sentences("今天很好。我们去公园吧！你来吗？") == ["今天很好。", "我们去公园吧！", "你来吗？"]
    assert split_sentences("هل أنت بخير؟ نعم أنا بخير.") == ["هل أنت بخير؟", "نعم أنا بخير."]
    assert split_sentences("好。") == []
    many = " ".join(f"Part {i}." for i in range(12))
    assert split_sentences(many) == [f"Part {i}." for i in range(8)]  # at most 8, the first ones


def test_sentence_texts_name_the_speaker_and_day_and_follow_the_setting(monkeypatch):
    m = SimpleNamespace(speaker="Bo", ts="2026-03-02T10:00:00+01:00", text="We left early. The lake was calm.")
    assert sentence_texts(m) == ["Bo (2026-03-02): We left early.", "Bo (2026-03-02): The lake was calm."]
    assert sentence_texts(m, enabled=False) == []
    monkeypatch.setenv("GRAPHMEM_SENTENCE_VECTORS", "false")
    assert Embedder.from_settings(Settings()).sentence_vectors is False
    monkeypatch.delenv("GRAPHMEM_SENTENCE_VECTORS")
    assert Embedder.from_settings(Settings()).sentence_vectors is True


def _unit(*v: float) -> list[float]:
    a = np.array(v, dtype=np.float32)
    return (a / np.linalg.norm(a)).tolist()


def test_the_sentence_matrix_ranks_a_turn_by_its_best_row():
    """Rows: each turn's own vector, then its sentences'. A turn whose one sentence points at
    the query beats a turn whose whole vector is closer than that turn's whole vector; the
    as-of time leaves out later turns and turns without a time; ties go to the earlier write."""
    own = [_unit(1, 1, 0), _unit(0, 1, 0), _unit(0, 1, 0), _unit(1, 0, 1)]
    sents = [[_unit(0, 1, 1)], [_unit(1, 0, 0), _unit(0, 0, 1)], [_unit(1, 0, 0)], [_unit(0, 1, 0)]]
    vectors, starts = [], []
    for o, ss in zip(own, sents):
        starts.append(len(vectors))
        vectors += [o, *ss]
    m = SentenceMatrix(
        starts=np.array(starts), ids=["a", "b", "c", "d"], sessions=["s1", "s1", "s2", None],
        persons=["ana", "bo", "bo", "cy"], vectors=np.array(vectors, dtype=np.float32),
        turn_created=np.array([3, 1, 2, 4]), instants=np.array([10.0, 20.0, 30.0, np.nan]),
        version=4, vector_rev=1,
    )
    q = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    rows = m.ranking(q, 10, None)
    assert [r["id"] for r in rows] == ["b", "c", "a", "d"]  # b and c tie at 1.0: b was written first
    assert rows[0]["score"] == pytest.approx(1.0) and rows[2]["score"] == pytest.approx(2 ** -0.5)
    assert rows[0]["session"] == "s1" and rows[0]["person_id"] == "bo"
    assert [r["id"] for r in m.ranking(q, 10, 25.0)] == ["b", "a"]  # c is later, d has no time
    assert [r["id"] for r in m.ranking(q, 1, None)] == ["b"]
