"""The pool's first and last places by learned linear scores over what the recall already read.

The fusion (:func:`graphmem.recall.pool.fuse_recall`) sees only ranks. Its first ``head_n``
places are the excerpts when no model is set, so they are re-ranked here by a linear score
over a dozen features of each pool turn - its place in the pool, its rank and score in the
fulltext ranking, in the dense ranking over the context window and by its own cosine, its
NEXT neighbours' best cosine, its rank in a named person's and in the time anchor's sub-pools,
and whether a named person sent it. The pool keeps its members: the ``head_n`` best-scored
turns come first, the rest follow in the pool's order. The product's head
(``learned.head_sentences``, ninth round) also weighs each turn's rank and score gap in the
turns ranked by their best sentence (:func:`sentence_features`, :data:`HEAD_SENT_FEATURES`):
a long turn one clause of which answers the question ranks by that clause.

The pool's last places are chosen the same way (:func:`rerank_tail`): a second linear score
(the same features; whether the turn is in the pool; its rank and score gap in
:func:`sentence_order`, the turns by their best sentence; and how much of the re-ranked head
shares its session) picks them among the pool's tail and the deeper candidates the reads
returned (the fulltext ranking, the dense ranking over the context window and by own cosine,
and the sentence order, :data:`TAIL_DEPTH` deep each).

The weights are JSON artifacts (``graphmem/recall/weights/head.json``, ``head_sent.json`` and ``tail.json``,
:class:`LearnedWeights`): a logistic regression (P(turn is evidence | features), class-balanced,
features standardised, the scaling folded into the weights) with its feature names, head
length, the data and split it was fitted on, the code version and its metrics. They are fitted
by ``bench/recall_ltr.py [--sentences] --export`` (docs/query.md says how to refit them) and
refused at load when their feature names differ from :data:`FEATURES` / :data:`HEAD_SENT_FEATURES`
/ :data:`TAIL_FEATURES`. They use no
benchmark id, name or phrasing: only ranks, scores and the question's anchors. Nothing here
reads the store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from graphmem.core.errors import GraphMemError

FEATURES = (
    "pool_place", "in_head", "ft_rank", "ft_score", "ctx_rank", "ctx_gap", "own_rank", "own_gap",
    "nb_gap", "person_rank", "named_speaker", "time_rank",
)
"""Feature names, in the column order of :func:`head_features`."""

HEAD_SENT_FEATURES = (*FEATURES, "sent_rank", "sent_gap")
"""Columns of the sentence-aware head (``learned.head_sentences``): :data:`FEATURES`, then the
turn's rank and score gap in :func:`sentence_order` (:func:`sentence_features`)."""

TAIL_FEATURES = (*FEATURES, "in_pool", "sent_rank", "sent_gap", "head_session")
"""Columns of :func:`tail_features`: :data:`FEATURES`, then 1.0 for a turn of the fused pool,
its rank and score gap in :func:`sentence_order`, and how much of the re-ranked head shares
its session."""

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
"""Where the fitted weights live (shipped in the wheel)."""


class WeightsError(GraphMemError):
    """A learned-weights artifact that does not fit the code (``path``: the file)."""

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path


@dataclass(frozen=True)
class LearnedWeights:
    """One fitted linear score, as read from its JSON artifact.

    Attributes:
        name: "head" or "tail".
        features: the feature names, in column order (must equal the code's list).
        weights: float64 (len(features),): raw-feature weights (coefficients divided by the
            features' standard deviations); a turn's score is their dot product with its
            features. Only the order matters: no intercept.
        head_n: the head length the features were computed with (``in_head``, the tail's
            ``head_session``).
        feature_rrf_k: the constant of the reciprocal-rank features, 1 / (k + rank).
        fitted_on / code_version / metrics: what it was fitted on (data, split, command), the
            graphmem version and commit, and its out-of-fold figures (free-form).
        path: the file it was read from.
    """

    name: str
    features: tuple[str, ...]
    weights: np.ndarray
    head_n: int
    feature_rrf_k: int
    fitted_on: dict[str, Any]
    code_version: dict[str, Any]
    metrics: dict[str, Any]
    path: Path

    def as_json(self) -> dict[str, Any]:
        """The artifact's JSON object (what :func:`load_weights` reads)."""
        return {
            "name": self.name, "features": list(self.features), "weights": [float(w) for w in self.weights],
            "head_n": self.head_n, "feature_rrf_k": self.feature_rrf_k, "fitted_on": self.fitted_on,
            "code_version": self.code_version, "metrics": self.metrics,
        }


def load_weights(path: Path, features: tuple[str, ...]) -> LearnedWeights:
    """Read a weights artifact and check it against the code's ``features``.

    Raises:
        WeightsError: the file is missing or not valid JSON, lacks a field, its feature names
            differ from ``features`` (the message names both lists' differences), or it has
            not one weight per feature.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        names = tuple(str(f) for f in raw["features"])
        weights = np.asarray(raw["weights"], dtype=np.float64)
        out = LearnedWeights(
            name=str(raw["name"]), features=names, weights=weights, head_n=int(raw["head_n"]),
            feature_rrf_k=int(raw["feature_rrf_k"]), fitted_on=dict(raw.get("fitted_on", {})),
            code_version=dict(raw.get("code_version", {})), metrics=dict(raw.get("metrics", {})), path=path,
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise WeightsError(f"learned weights {path}: cannot be read ({e!r})", path=path) from e
    if names != tuple(features):
        missing = [f for f in features if f not in names]
        unknown = [f for f in names if f not in features]
        raise WeightsError(
            f"learned weights {path}: feature names differ from the code's "
            f"(the code's not in the file: {missing}; the file's not in the code: {unknown}; "
            f"order: file {list(names)} vs code {list(features)}); refit with bench/recall_ltr.py --export",
            path=path,
        )
    if weights.shape != (len(features),):
        raise WeightsError(f"learned weights {path}: {weights.shape} weights for {len(features)} features", path=path)
    return out


@lru_cache(maxsize=None)
def head_weights() -> LearnedWeights:
    """The product's head weights (``weights/head.json``), read once per process."""
    return load_weights(WEIGHTS_DIR / "head.json", FEATURES)


@lru_cache(maxsize=None)
def head_sentence_weights() -> LearnedWeights:
    """The product's sentence-aware head weights (``weights/head_sent.json``), read once per process."""
    return load_weights(WEIGHTS_DIR / "head_sent.json", HEAD_SENT_FEATURES)


@lru_cache(maxsize=None)
def tail_weights() -> LearnedWeights:
    """The product's tail weights (``weights/tail.json``), read once per process."""
    return load_weights(WEIGHTS_DIR / "tail.json", TAIL_FEATURES)


TAIL_DEPTH = 150
"""How deep each of the fulltext, context-window and own-cosine rankings feeds the tail's candidates."""

RRF_K = 20
"""Constant of the reciprocal-rank features, 1 / (RRF_K + rank), as the fusion's ``rrf_k``
(the weights record it: ``feature_rrf_k``, checked by the rerankers)."""


@dataclass
class DenseEvidence:
    """What the dense reads scored, for the features (all cosines in [-1, 1]).

    Attributes:
        own: the dense read, (id, the turn's own cosine to the query), best first.
        context: the dense ranking over the context window, (id, score in [-1.5, 1.5]), best
            first (empty when the context window is off).
        cosines: id -> own cosine of every message the reads scored (the dense read, the
            context window's ring and the ring's NEXT neighbours).
        neighbours: id -> its NEXT neighbours, for the ring's messages.
        senders: id -> the sender's person id, for the ring's messages the dense read did
            not return (it returns its own messages' senders).
        sentences: the turns of several sentences by their best sentence, (id, max(own
            cosine, best sentence's cosine)), best first (:func:`graphmem.recall.cache.sentence_ranking`; empty
            when it did not run).
        sessions: id -> the message's session id, for every message the reads returned.
    """

    own: list[tuple[str, float]] = field(default_factory=list)
    context: list[tuple[str, float]] = field(default_factory=list)
    cosines: dict[str, float] = field(default_factory=dict)
    neighbours: dict[str, list[str]] = field(default_factory=dict)
    senders: dict[str, str | None] = field(default_factory=dict)
    sentences: list[tuple[str, float]] = field(default_factory=list)
    sessions: dict[str, str | None] = field(default_factory=dict)


def _rr(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / (RRF_K + rank)


def head_features(
    pool: list[str],
    fulltext: list[tuple[str, float]],
    dense: DenseEvidence,
    person_vector: dict[str, list[str]],
    window: list[str],
    senders: dict[str, str | None],
    *,
    head_n: int | None = None,
) -> np.ndarray:
    """The feature matrix of the pool's turns (shape len(pool) x len(FEATURES), floats).

    Args:
        pool: the fused pool's ids, in pool order.
        fulltext: the fulltext ranking, (id, group-local BM25 score >= 0), best first.
        dense: the dense reads' scores (:class:`DenseEvidence`).
        person_vector: named person id -> that person's turns by cosine, best first.
        window: the time anchor's turns by cosine, best first.
        senders: message id -> the sender's person id (None or missing: unknown).
        head_n: the head length of ``in_head`` (None: the one the head weights were fitted with).

    A cosine the reads did not return (a turn found by fulltext alone, far down the dense
    order) counts as the lowest the dense read returned: it is at most that.
    """
    ft_rank = {m: r for r, (m, _) in enumerate(fulltext, 1)}
    ft_max = max((s for _, s in fulltext), default=0.0) or 1.0
    ft_score = dict(fulltext)
    own_rank = {m: r for r, (m, _) in enumerate(dense.own, 1)}
    own_max = dense.own[0][1] if dense.own else 0.0
    own_floor = dense.own[-1][1] if dense.own else 0.0
    ctx_rank = {m: r for r, (m, _) in enumerate(dense.context, 1)}
    ctx = dict(dense.context)
    ctx_max = dense.context[0][1] if dense.context else 0.0
    ctx_floor = dense.context[-1][1] if dense.context else 0.0
    person_rank: dict[str, int] = {}
    for own in person_vector.values():
        for r, m in enumerate(own, 1):
            person_rank[m] = min(person_rank.get(m, r), r)
    named = set(person_vector)
    time_rank = {m: r for r, m in enumerate(window, 1)}
    in_head = head_weights().head_n if head_n is None else head_n
    rows = []
    for pos, m in enumerate(pool):
        nbs = [dense.cosines[j] for j in dense.neighbours.get(m, []) if j in dense.cosines]
        rows.append([
            1.0 / (1 + pos), float(pos < in_head), _rr(ft_rank.get(m)), ft_score.get(m, 0.0) / ft_max,
            _rr(ctx_rank.get(m)), ctx.get(m, ctx_floor) - ctx_max,
            _rr(own_rank.get(m)), dense.cosines.get(m, own_floor) - own_max,
            (max(nbs) if nbs else own_floor) - own_max,
            _rr(person_rank.get(m)), float(senders.get(m) in named) if named else 0.0, _rr(time_rank.get(m)),
        ])
    return np.array(rows, dtype=float).reshape(len(pool), len(FEATURES))


def rerank_head(pool: list[str], features: np.ndarray, head_n: int, weights: np.ndarray | None = None) -> list[str]:
    """The pool with its ``head_n`` best-scored turns first (ties: pool order), the rest in pool order.

    Args:
        pool: ids in pool order.
        features: :func:`head_features` of ``pool``.
        head_n: how many places are re-ranked (0: the pool unchanged).
        weights: one per feature (None: the fitted :func:`head_weights`).

    Returns:
        The same ids, re-ordered.
    """
    if head_n <= 0 or not pool:
        return list(pool)
    score = features @ (head_weights().weights if weights is None else weights)
    order = sorted(range(len(pool)), key=lambda k: (-score[k], k))
    head = [pool[k] for k in order[:head_n]]
    chosen = set(head)
    return head + [m for m in pool if m not in chosen]


def tail_candidates(pool: list[str], fulltext: list[tuple[str, float]], dense: DenseEvidence,
                    depth: int = TAIL_DEPTH) -> list[str]:
    """The pool, then the turns the reads returned that it lacks (ids, pool order first).

    The fulltext ranking, the dense ranking over the context window, the dense read by own
    cosine and :func:`sentence_order`, each cut to ``depth``; no store access.
    """
    more = [m for m, _ in fulltext[:depth]] + [m for m, _ in dense.context[:depth]] + [m for m, _ in dense.own[:depth]]
    more += [m for m, _ in sentence_order(dense)[:depth]]
    return list(dict.fromkeys([*pool, *more]))


def sentence_order(dense: DenseEvidence) -> list[tuple[str, float]]:
    """The turns by their best sentence: ``dense.sentences`` (turns of several sentences, scored
    max(own cosine, best sentence's cosine)), with the dense read's other turns by their own
    cosine, best first (ties: the sentences' read first). Cosines in [-1, 1].

    A question about one clause of a long turn meets that clause's vector, not the turn's
    average (docs/lab/recall-rounds.md, eighth round).
    """
    scored = dict(dense.sentences)
    merged = dense.sentences + [(m, c) for m, c in dense.own if m not in scored]
    return sorted(merged, key=lambda x: -x[1])


def sentence_features(ids: list[str], dense: DenseEvidence) -> np.ndarray:
    """Each turn's rank and score gap in :func:`sentence_order` (shape len(ids) x 2, floats):
    ``sent_rank`` 1 / (RRF_K + rank) (0 outside the order) and ``sent_gap`` its score there
    minus the best (a turn outside it: its own cosine, at most the lowest of the order; a turn
    no read scored: that lowest). A long turn whose one clause answers ranks by that clause
    (docs/lab/recall-rounds.md, eighth and ninth rounds)."""
    order = sentence_order(dense)
    s_rank = {m: r for r, (m, _) in enumerate(order, 1)}
    s_score = dict(order)
    s_max = order[0][1] if order else 0.0
    s_floor = order[-1][1] if order else 0.0
    rows = [[_rr(s_rank.get(m)), s_score.get(m, min(dense.cosines.get(m, s_floor), s_floor)) - s_max] for m in ids]
    return np.array(rows, dtype=float).reshape(len(ids), 2)


def tail_features(candidates: list[str], features: np.ndarray, pool: list[str], dense: DenseEvidence,
                  head_n: int) -> np.ndarray:
    """The tail's feature matrix (shape len(candidates) x len(TAIL_FEATURES)).

    Args:
        candidates: :func:`tail_candidates` of ``pool`` (the pool first, in its order).
        features: :func:`head_features` of ``candidates``.
        pool: the pool after :func:`rerank_head`.
        dense: the dense reads (sentences and sessions).
        head_n: the re-ranked head's length.

    A candidate outside the pool has no place (0 in the first two columns) and 0 in
    ``in_pool``. ``sent_rank`` is 1 / (RRF_K + rank) in :func:`sentence_order` (0 outside it),
    ``sent_gap`` its score there minus the best (a turn outside it: its own cosine, at most the
    lowest of the order); ``head_session`` sums 1 / (RRF_K + place) over the head's turns in the
    candidate's session (0 when its session is unknown).
    """
    x = features.copy()
    x[len(pool):, :2] = 0.0
    by_session: dict[str, float] = {}
    for place, m in enumerate(pool[:head_n], 1):
        sess = dense.sessions.get(m)
        if sess is not None:
            by_session[sess] = by_session.get(sess, 0.0) + _rr(place)
    extra = []
    for k, m in enumerate(candidates):
        sess = dense.sessions.get(m)
        extra.append([float(k < len(pool)), by_session.get(sess, 0.0) if sess is not None else 0.0])
    more = np.array(extra, dtype=float).reshape(len(candidates), 2)
    sent = sentence_features(candidates, dense)
    return np.hstack([x, more[:, :1], sent, more[:, 1:]])


def rerank_tail(pool: list[str], candidates: list[str], features: np.ndarray, learned: int, n: int,
                weights: np.ndarray | None = None) -> list[str]:
    """The pool's first ``n - learned`` places, then the ``learned`` best-scored other candidates.

    Args:
        pool: ids in pool order (after :func:`rerank_head`).
        candidates: :func:`tail_candidates` of the pool.
        features: :func:`tail_features` of ``candidates``.
        learned: how many of the last places the score chooses (0: the pool unchanged).
        n: the pool's size.
        weights: one per :data:`TAIL_FEATURES` (None: the fitted :func:`tail_weights`).

    Returns:
        At most ``n`` ids (ties: candidate order).
    """
    if learned <= 0 or not pool:
        return list(pool)
    keep = pool[: max(0, min(len(pool), n - learned))]
    kept = set(keep)
    score = features @ (tail_weights().weights if weights is None else weights)
    rest = sorted((k for k, m in enumerate(candidates) if m not in kept), key=lambda k: (-score[k], k))
    return keep + [candidates[k] for k in rest[: n - len(keep)]]


class RecallEvidence(Protocol):
    """What the recall's reads returned (:class:`graphmem.recall.pool.RecallInputs` has it)."""

    fulltext: list[tuple[str, float]]
    dense: DenseEvidence
    person_vector: dict[str, list[str]]
    window: list[str]
    senders: dict[str, str | None]


def evidence_features(ids: list[str], reads: RecallEvidence, head_n: int | None = None) -> np.ndarray:
    """:func:`head_features` of ``ids`` from what the reads returned."""
    return head_features(ids, reads.fulltext, reads.dense, reads.person_vector, reads.window, reads.senders,
                         head_n=head_n)


def learned_order(pool: list[str], reads: RecallEvidence, head_n: int, tail_learned: int, n: int) -> list[str]:
    """The pool with its first ``head_n`` places re-ranked (:func:`rerank_head`), then its last
    ``tail_learned`` chosen among the deeper candidates (:func:`rerank_tail`); at most ``n`` ids.
    The tail never takes the first ``head_n`` places (a pool of 15 gets 5 learned places).
    The caller keeps the anchors' turns in the result. The rerankers of
    :mod:`graphmem.recall.rerank` in one call (the product's two, in order).
    """
    ids = rerank_head(pool, evidence_features(pool, reads), head_n)
    learned = min(tail_learned, n - head_n)
    if learned <= 0:
        return ids
    cand = tail_candidates(ids, reads.fulltext, reads.dense)
    return rerank_tail(ids, cand, tail_features(cand, evidence_features(cand, reads), ids, reads.dense, head_n),
                       learned, n)
