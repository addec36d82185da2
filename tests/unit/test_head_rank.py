"""The learned re-ranking of the pool's first places (graphmem.query.head_rank): features from
the reads' ranks and cosines, members and tail order kept, and the fitted weights prefer a turn
every ranking puts first over one that only the fusion placed high."""

from __future__ import annotations

import numpy as np
import pytest

from graphmem.query.head_rank import FEATURES, WEIGHTS, DenseEvidence, head_features, rerank_head


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
