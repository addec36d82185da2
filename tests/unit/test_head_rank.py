"""The learned re-ranking of the pool's first places (graphmem.recall.learned): features from
the reads' ranks and cosines, members and tail order kept, and the fitted weights prefer a turn
every ranking puts first over one that only the fusion placed high. The learned tail: the pool's
last places chosen among the pool's tail and the deeper candidates the reads returned, the
anchors' turns kept."""

from __future__ import annotations

import numpy as np
import pytest

from graphmem.recall.anchors import Anchors
from graphmem.recall.learned import (
    FEATURES,
    TAIL_FEATURES,
    DenseEvidence,
    head_features,
    head_weights,
    learned_order,
    rerank_head,
    rerank_tail,
    tail_candidates,
    sentence_order,
    tail_features,
    tail_weights,
)
from graphmem.recall.pool import RecallInputs, fuse_recall
from graphmem.recall.recipe import SPEAKERMEM_POOL

WEIGHTS = head_weights().weights
TAIL_WEIGHTS = tail_weights().weights


def _dense() -> DenseEvidence:
    d = DenseEvidence(own=[("a", 0.9), ("b", 0.7), ("c", 0.5)], context=[("b", 1.2), ("a", 1.0)])
    d.cosines = {"a": 0.9, "b": 0.7, "c": 0.5, "n": 0.8}
    d.neighbours = {"a": ["n"], "b": []}
    return d


def test_features_follow_the_reads_and_fill_what_they_did_not_score():
    pool = ["a", "b", "x"]
    X = head_features(pool, [("x", 4.0), ("a", 2.0)], _dense(), {"ana": ["b", "a"]}, ["x"],
                      {"a": "ana", "b": "ben", "x": "cy"})
    f = {name: X[:, k] for k, name in enumerate(FEATURES)}
    assert X.shape == (3, len(FEATURES))
    assert f["pool_place"].tolist() == [1.0, 0.5, pytest.approx(1 / 3)]
    assert f["ft_rank"].tolist() == [pytest.approx(1 / 22), 0.0, pytest.approx(1 / 21)]
    assert f["ft_score"].tolist() == [0.5, 0.0, 1.0]
    assert f["ctx_rank"].tolist() == [pytest.approx(1 / 22), pytest.approx(1 / 21), 0.0]
    assert f["ctx_gap"].tolist() == pytest.approx([-0.2, 0.0, -0.2])  # x unscored: the lowest read
    assert f["own_gap"].tolist() == pytest.approx([0.0, -0.2, -0.4])  # x: at most the lowest read
    assert f["nb_gap"].tolist() == pytest.approx([-0.1, -0.4, -0.4])  # a's neighbour n; none known
    assert f["person_rank"].tolist() == [pytest.approx(1 / 22), pytest.approx(1 / 21), 0.0]
    assert f["named_speaker"].tolist() == [1.0, 0.0, 0.0]  # only "ana" is named
    assert f["time_rank"].tolist() == [0.0, 0.0, pytest.approx(1 / 21)]


def test_rerank_keeps_the_members_and_the_tails_order():
    pool = [f"m{i}" for i in range(15)]
    X = np.zeros((15, len(FEATURES)))
    w = np.zeros(len(FEATURES))
    w[0] = 1.0
    X[12, 0] = 5.0  # m12 scores highest
    X[:, 0] += np.linspace(1, 0, 15)
    out = rerank_head(pool, X, 10, w)
    assert out[0] == "m12" and sorted(out) == sorted(pool)
    assert out[10:] == [m for m in pool if m not in out[:10]]  # the rest in pool order
    assert rerank_head(pool, X, 0, w) == pool


def test_the_fitted_weights_lift_a_turn_every_ranking_puts_first():
    """Place 12 in the fused pool, but first in fulltext, dense and the context window and sent
    by the person the question names: it enters the first ten ahead of places that only the
    fusion's agreement put there."""
    pool = [f"m{i}" for i in range(20)]
    star = "m12"
    fulltext = [(star, 9.0)] + [(m, 1.0) for m in pool if m != star]
    d = DenseEvidence(own=[(star, 0.8)] + [(m, 0.3) for m in pool if m != star])
    d.context = [(star, 1.1)] + [(m, 0.4) for m in pool if m != star]
    d.cosines = dict(d.own)
    X = head_features(pool, fulltext, d, {"ana": [star]}, [], {m: ("ana" if m == star else "ben") for m in pool})
    assert rerank_head(pool, X, 10, WEIGHTS)[0] == star


def test_tail_candidates_are_the_pool_then_what_the_reads_returned():
    d = _dense()
    cand = tail_candidates(["b", "x"], [("x", 4.0), ("f", 2.0), ("g", 1.0)], d, depth=2)
    assert cand == ["b", "x", "f", "a"]  # fulltext and context cut to 2 deep ("g" out), no repeats
    assert tail_candidates(["b"], [], DenseEvidence()) == ["b"]


def test_tail_features_give_no_place_to_a_turn_outside_the_pool():
    d = _dense()
    cand = tail_candidates(["b", "x"], [("x", 4.0), ("f", 2.0)], d)
    X = tail_features(cand, head_features(cand, [("x", 4.0), ("f", 2.0)], d, {}, [], {}), ["b", "x"], d, 10)
    f = {name: X[:, k] for k, name in enumerate(TAIL_FEATURES)}
    assert X.shape == (len(cand), len(TAIL_FEATURES)) == (5, len(FEATURES) + 4)
    assert f["pool_place"].tolist() == [1.0, 0.5, 0.0, 0.0, 0.0]
    assert f["in_head"].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert f["in_pool"].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert f["ft_score"].tolist() == [0.0, 1.0, 0.5, 0.0, 0.0]  # the reads' scores as for the head


def test_a_long_turn_is_found_by_its_best_sentence():
    """A turn of several sentences whose one sentence matches the question joins the tail's
    candidates by the sentence read (it is in no other read), ranked by that sentence's cosine."""
    d = _dense()
    d.sentences = [("long", 0.9), ("a", 0.85)]
    order = sentence_order(d)
    assert [m for m, _ in order][:2] == ["long", "a"]  # max(own, best sentence) first
    assert len(order) == len({m for m, _ in order})  # a turn of both reads once
    fulltext = [("x", 4.0), ("f", 2.0)]
    cand = tail_candidates(["b", "x"], fulltext, d)
    assert "long" in cand
    X = tail_features(cand, head_features(cand, fulltext, d, {}, [], {}), ["b", "x"], d, 10)
    f = {name: X[:, k] for k, name in enumerate(TAIL_FEATURES)}
    k = cand.index("long")
    assert f["sent_rank"][k] == 1.0 / 21 and f["sent_gap"][k] == 0.0
    assert f["sent_rank"][cand.index("f")] == 0.0 and f["sent_gap"][cand.index("f")] < 0.0  # not in the order


def test_head_session_counts_the_head_turns_of_the_candidates_session():
    """A deep turn of the session the head's first turns come from scores by their places; a
    turn of another session, or of an unknown one, scores 0."""
    d = _dense()
    pool = ["b", "x"]
    d.sessions = {"b": "s1", "x": "s1", "a": "s1", "f": "s2"}
    cand = tail_candidates(pool, [("x", 4.0), ("f", 2.0)], d)
    X = tail_features(cand, head_features(cand, [("x", 4.0), ("f", 2.0)], d, {}, [], {}), pool, d, 10)
    f = {name: X[:, k] for k, name in enumerate(TAIL_FEATURES)}
    assert f["head_session"][cand.index("a")] == 1.0 / 21 + 1.0 / 22
    assert f["head_session"][cand.index("f")] == 0.0
    unknown = [m for m in cand if m not in d.sessions]
    assert unknown and all(f["head_session"][cand.index(m)] == 0.0 for m in unknown)


def test_rerank_tail_keeps_the_first_places_and_picks_the_best_of_the_rest():
    pool = [f"m{i}" for i in range(8)]
    cand = pool + ["d1", "d2", "d3"]
    w = np.zeros(len(TAIL_FEATURES))
    w[2] = 1.0
    X = np.zeros((len(cand), len(TAIL_FEATURES)))
    X[cand.index("d2"), 2] = 3.0
    X[cand.index("m7"), 2] = 2.0
    X[cand.index("d3"), 2] = 1.0
    out = rerank_tail(pool, cand, X, 3, 8, w)
    assert out == pool[:5] + ["d2", "m7", "d3"]  # the first n - learned kept in order
    assert rerank_tail(pool, cand, X, 0, 8, w) == pool
    assert rerank_tail(pool[:3], cand[:3] + ["d2"], X[[0, 1, 2, 9]], 3, 8, w)[:3] == pool[:3]  # short pool


def test_the_fitted_tail_weights_take_in_a_deep_turn_every_ranking_found():
    """Place 41 and beyond are not in the fused pool; one turn there is third in the fulltext,
    the context window and own cosine and sent by the named person: the learned tail takes it
    into the pool's last places in place of a turn that only the fusion's agreement kept."""
    pool = [f"m{i}" for i in range(40)]
    star = "deep"
    others = [m for m in pool]
    fulltext = [(m, 5.0 - k * 0.1) for k, m in enumerate(others[:2])] + [(star, 4.5)] + \
        [(m, 1.0) for m in others[2:20]]
    d = DenseEvidence(own=[(m, 0.8 - 0.01 * k) for k, m in enumerate(others[:2])] + [(star, 0.78)])
    d.context = [(m, 1.2 - 0.01 * k) for k, m in enumerate(others[:2])] + [(star, 1.18)]
    d.cosines = dict(d.own)
    senders = {m: "ben" for m in pool} | {star: "ana"}
    cand = tail_candidates(pool, fulltext, d)
    X = tail_features(cand, head_features(cand, fulltext, d, {"ana": [star]}, [], senders), pool, d, 10)
    out = rerank_tail(pool, cand, X, 10, 40, TAIL_WEIGHTS)
    assert star in out and len(out) == 40 and out[:30] == pool[:30]


def test_the_learned_tail_keeps_the_anchors_turns_in_the_pool():
    """A named person's only turn, kept on the anchor's budget, stays in the pool even when the
    learned tail takes deeper candidates (ten turns the dense reads put first and the fulltext
    ranking just below the fused pool's depth, which the fused rankings had cut off) into the
    last places."""
    ids = [f"m{i}" for i in range(40)]
    deep = [f"d{i}" for i in range(10)]
    rare = "rare"
    d = DenseEvidence(own=[(m, 0.95 - 0.001 * k) for k, m in enumerate(deep)]
                      + [(m, 0.9 - 0.005 * k) for k, m in enumerate(ids)])
    d.context = [(m, 1.35 - 0.001 * k) for k, m in enumerate(deep)] + [(m, 1.3 - 0.005 * k) for k, m in enumerate(ids)]
    d.cosines = dict(d.own) | {rare: 0.1}
    fulltext = [(m, 10.0 - 0.1 * k) for k, m in enumerate(ids + deep)]
    inputs = RecallInputs(anchors=Anchors(persons=["ana"]), fulltext=fulltext,
                          vector=ids, vector_plain=ids, person_vector={"ana": [rare]}, dense=d,
                          senders={m: "ben" for m in ids + deep} | {rare: "ana"})
    no_tail = [m for m, _ in fuse_recall(inputs, 40, recipe=SPEAKERMEM_POOL.evolve(learned={"tail_places": 0}))]
    pool = [m for m, _ in fuse_recall(inputs, 40, recipe=SPEAKERMEM_POOL)]
    assert rare in no_tail and not set(deep) & set(no_tail)
    assert rare in pool and len(pool) == 40 == len(set(pool))
    # the tail takes deep turns (eight with the fitted weights; it keeps one fused turn), and
    # the anchor's turn keeps its place all the same
    assert len(set(deep) & set(pool)) >= 8 and set(pool[30:]) <= set(deep) | {rare} | set(no_tail[30:])
    assert pool[:30] == no_tail[:30]


def test_the_learned_tail_never_takes_the_first_places():
    """A pool of 12 with head_n 10 gets 2 learned places; one of 10 gets none."""
    d = DenseEvidence(own=[(f"d{i}", 0.99) for i in range(5)] + [(f"m{i}", 0.5) for i in range(12)])
    d.context = [(m, 1.4) for m, _ in d.own[:5]]
    d.cosines = dict(d.own)
    pool = [f"m{i}" for i in range(12)]
    ft = [(m, 9.0) for m, _ in d.own[:5]]
    reads = RecallInputs(anchors=Anchors(), fulltext=ft, dense=d)
    out = learned_order(pool, reads, 10, 10, 12)
    assert out[:10] == rerank_head(pool, head_features(pool, ft, d, {}, [], {}), 10)[:10]
    # the two learned places come from the pool's own last two and the five deep turns
    assert len(out) == 12 == len(set(out)) and set(out[10:]) <= {"m10", "m11"} | {f"d{i}" for i in range(5)}
    assert sorted(learned_order(pool[:10], reads, 10, 10, 10)) == sorted(pool[:10])


def test_sentence_features_rank_a_turn_by_its_best_sentence():
    from graphmem.recall.learned import sentence_features

    d = DenseEvidence(own=[("a", 0.6), ("b", 0.5), ("c", 0.4)])
    d.cosines = dict(d.own) | {"far": 0.1}
    d.sentences = [("c", 0.9), ("a", 0.6)]  # c's second sentence answers; a has one sentence as good as itself
    x = sentence_features(["c", "a", "b", "far", "unread"], d)
    assert x[:, 0].tolist() == pytest.approx([1 / 21, 1 / 22, 1 / 23, 0.0, 0.0])  # order: c, a, then b by own cosine
    assert x[:, 1].tolist() == pytest.approx([0.0, -0.3, -0.4, -0.8, -0.4])  # far: its own cosine; unread: the floor (b)


def test_the_sentence_aware_head_lifts_a_turn_whose_one_sentence_answers():
    """Place 25 of the fused pool and middling in every turn-level ranking, but its best sentence
    is the closest to the question of the whole group: the head of ``learned.head_sentences``
    puts it in the first ten, the sixth round's head does not."""
    from graphmem.recall.rerank import LearnedHead

    pool = [f"m{i}" for i in range(40)]
    star = "m25"
    d = DenseEvidence(own=[(m, 0.6 - 0.005 * k) for k, m in enumerate(pool)])
    d.context = [(m, 0.9 - 0.005 * k) for k, m in enumerate(pool)]
    d.cosines = dict(d.own)
    d.sentences = [(star, 0.85)] + [(m, c) for m, c in d.own if m != star]
    reads = RecallInputs(anchors=Anchors(), fulltext=[(m, 10.0 - 0.2 * k) for k, m in enumerate(pool)], dense=d)
    plain = LearnedHead(10).rank(pool, reads, 40)
    aware = LearnedHead(10, sentences=True).rank(pool, reads, 40)
    assert star not in plain[:10] and star in aware[:10]
    assert sorted(aware) == sorted(pool)  # the head keeps the pool's members
