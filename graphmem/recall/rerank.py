"""Rerankers of the fused recall pool: one interface, the learned head and tail behind it.

A :class:`Reranker` orders the fused pool's ids from what the recall's reads returned
(:class:`graphmem.recall.learned.RecallEvidence`) and returns at most ``n`` of them; it reads
no store. :class:`NoRerank` is the identity; :class:`LearnedHead` re-ranks the first places,
:class:`LearnedTail` chooses the last ones among deeper candidates, :class:`Chain` runs several
in order. :func:`reranker_for` builds the one a :class:`graphmem.recall.recipe.RecallRecipe`
names. The pool keeps the anchors' reserved turns after a reranker ran
(:func:`graphmem.recall.pool.fuse_recall`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from graphmem.recall.learned import (
    RRF_K,
    LearnedWeights,
    RecallEvidence,
    WeightsError,
    evidence_features,
    head_sentence_weights,
    head_weights,
    rerank_head,
    rerank_tail,
    sentence_features,
    tail_candidates,
    tail_features,
    tail_weights,
)
from graphmem.recall.recipe import RecallRecipe

__all__ = ["Chain", "LearnedHead", "LearnedTail", "NoRerank", "Reranker", "reranker_for"]


class Reranker(Protocol):
    """Orders a fused pool (ids, pool order) from the reads' evidence; at most ``n`` ids back.

    ``changes_members``: whether it may bring in ids the pool lacks (the pool then reserves the
    anchors' turns again).
    """

    @property
    def changes_members(self) -> bool: ...

    def rank(self, pool: list[str], evidence: RecallEvidence, n: int) -> list[str]: ...


@dataclass(frozen=True)
class NoRerank:
    """The identity: the fusion's order."""

    changes_members: bool = False

    def rank(self, pool: list[str], evidence: RecallEvidence, n: int) -> list[str]:
        return list(pool)[:n]


def _check(weights: LearnedWeights) -> LearnedWeights:
    if weights.feature_rrf_k != RRF_K:
        raise WeightsError(
            f"learned weights {weights.path}: fitted with feature_rrf_k {weights.feature_rrf_k}, the code computes "
            f"{RRF_K}", path=weights.path,
        )
    return weights


@dataclass(frozen=True)
class LearnedHead:
    """The pool's first ``head_n`` places by the learned head score (:func:`rerank_head`);
    the pool keeps its members. ``sentences``: the score also weighs each turn's rank and gap
    in the turns ranked by their best sentence (:func:`sentence_features`, the weights of
    ``weights/head_sent.json``). ``weights``: None reads ``weights/head.json`` (or
    ``head_sent.json``)."""

    head_n: int
    weights: LearnedWeights | None = None
    changes_members: bool = False
    sentences: bool = False

    def rank(self, pool: list[str], evidence: RecallEvidence, n: int) -> list[str]:
        w = _check(self.weights or (head_sentence_weights() if self.sentences else head_weights()))
        feats = evidence_features(pool, evidence, w.head_n)
        if self.sentences:
            feats = np.hstack([feats, sentence_features(pool, evidence.dense)])
        return rerank_head(pool, feats, self.head_n, w.weights)[:n]


@dataclass(frozen=True)
class LearnedTail:
    """The pool's last ``places`` (never its first ``head_n``) chosen by the learned tail score
    among the pool and the deeper candidates the reads returned (:func:`rerank_tail`).
    ``weights``: None reads ``weights/tail.json``."""

    head_n: int
    places: int
    weights: LearnedWeights | None = None
    changes_members: bool = True

    def rank(self, pool: list[str], evidence: RecallEvidence, n: int) -> list[str]:
        learned = min(self.places, n - self.head_n)
        if learned <= 0:
            return list(pool)[:n]
        w = _check(self.weights or tail_weights())
        cand = tail_candidates(pool, evidence.fulltext, evidence.dense)
        feats = tail_features(cand, evidence_features(cand, evidence, w.head_n), pool, evidence.dense, self.head_n)
        return rerank_tail(pool, cand, feats, learned, n, w.weights)


@dataclass(frozen=True)
class Chain:
    """Several rerankers, each ranking the previous one's output."""

    steps: tuple[Reranker, ...] = field(default_factory=tuple)

    @property
    def changes_members(self) -> bool:
        return any(s.changes_members for s in self.steps)

    def rank(self, pool: list[str], evidence: RecallEvidence, n: int) -> list[str]:
        ids = list(pool)
        for step in self.steps:
            ids = step.rank(ids, evidence, n)
        return ids


def reranker_for(recipe: RecallRecipe) -> Reranker:
    """The reranker ``recipe.learned`` names: the learned head (``learned.head``, weighing the
    sentence ranking with ``learned.head_sentences``) and then the learned tail
    (``learned.tail_places``), or :class:`NoRerank`."""
    steps: list[Reranker] = []
    if recipe.learned.head and recipe.fusion.head_n > 0:
        steps.append(LearnedHead(recipe.fusion.head_n, sentences=recipe.learned.head_sentences))
    if recipe.learned.tail_places > 0:
        steps.append(LearnedTail(recipe.fusion.head_n, recipe.learned.tail_places))
    if not steps:
        return NoRerank()
    return steps[0] if len(steps) == 1 else Chain(tuple(steps))
