"""SpeakerLevenshtein: owner-bucketed soft matching of derived memory states.

Scores a predicted System 2 state ``M`` against a reference state ``M*`` (the Writer's
structural reward in SpeakerMem-R1 App. E):

- content similarity ``κ̄`` (eq. 13, 15): ``0.60 · F_tok + 0.40 · S_seq`` on normalised tokens;
- coordinate gate ``κ`` (eq. 14): ``κ̄`` when owner, source and layer agree and ``κ̄ ≥ 0.50``,
  else 0;
- per owner ``p`` a maximum-weight one-to-one (Hungarian) alignment and the soft F1
  ``F_p = 2 Σ κ / (|M_p| + |M*_p|)`` (eq. 16);
- ``Φ_SL = 0.80 · mean_p F_p + 0.20 · min_p F_p`` over the owners of both states (eq. 7);
- the update-chain score ``R_chain`` (eq. 17) and ``R_mem = 0.80 Φ_SL + 0.20 R_chain`` (eq. 18).

Despite the name, no edit distance is computed: ``S_seq`` is Python's
``difflib.SequenceMatcher(None, a, b).ratio()`` on the normalised tokens joined with single
spaces (the ratio is therefore taken over the characters of the joined strings, as the
paper's implementation note says; eq. 15 writes it in token units).

Choices where the paper is silent (they follow the SpeakerMemR1 reference code):

- ``F_tok`` is set-based token F1 (duplicates removed), consistent with eq. 11; it and
  ``κ̄`` are 0 when either content has no tokens.
- The owner set ``P`` is the union of owners present in either state, so no owner is empty
  on both sides; an owner present on one side only has ``F_p = 0``. When both states are
  empty ``Φ_SL = 1`` (nothing to get wrong).
- Chain edges are gated on equal owner and layer, and ``κ_chain`` must reach the same 0.50
  threshold; ``R_chain`` is the soft F1 of the one-to-one alignment over all edges; no edges
  on either side gives 1, edges on one side only give 0.
- Tokenisation keeps token order: ``[a-z0-9]+`` runs and single CJK characters (CJK
  ideographs incl. extension A and compatibility block, kana, Hangul syllables) in the order
  they occur in the lower-cased text; other characters separate tokens. (The reference code
  lists all ASCII runs before all CJK characters; for text without CJK both agree.)

Source: SpeakerMem-R1 Sec. 4 eq. 7 and App. E eq. 13-18.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy.optimize import linear_sum_assignment

__all__ = [
    "ALPHA_SEQ",
    "ALPHA_TOK",
    "MATCH_THRESHOLD",
    "ChainEdge",
    "MemoryRecord",
    "MemoryReward",
    "SpeakerLevenshteinScore",
    "chain_score",
    "content_tokens",
    "gated_match",
    "memory_reward",
    "owner_f1",
    "sequence_ratio",
    "soft_match",
    "speaker_levenshtein",
    "token_set_f1",
]

#: Weight of token F1 in κ̄ (eq. 13).
ALPHA_TOK = 0.60
#: Weight of the sequence ratio in κ̄ (eq. 13).
ALPHA_SEQ = 0.40
#: κ̄ below this never matches (eq. 14); also the chain threshold.
MATCH_THRESHOLD = 0.50
#: Φ_SL weights of the owner mean and the worst owner (eq. 7).
W_AVG = 0.80
W_WORST = 0.20
#: κ_chain weights of the old and new states (eq. 17).
W_OLD = 0.50
W_NEW = 0.50
#: R_mem weights of Φ_SL and R_chain (eq. 18).
W_SL = 0.80
W_CHAIN = 0.20

_TOKEN = re.compile(r"[a-z0-9]+|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


class MemoryRecord(BaseModel):
    """One derived record as SpeakerLevenshtein sees it: coordinates and content.

    Attributes:
        owner: whom the record is about (a person id/name, or the group's owner, e.g. "GROUP").
        source: who said or observed it.
        layer: memory layer (per_speaker_core, per_speaker_profile, group_interaction,
            group_insight).
        content: the record text.
    """

    model_config = ConfigDict(frozen=True)

    owner: str
    source: str
    layer: str
    content: str


class ChainEdge(BaseModel):
    """One UPDATE edge (old record superseded by new record) of an owner's layer.

    Attributes:
        owner: owner of the updated record.
        layer: layer of the updated record.
        old: content before the update.
        new: content after the update.
    """

    model_config = ConfigDict(frozen=True)

    owner: str
    layer: str
    old: str
    new: str


# --------------------------------------------------------------------------------------------
# content similarity (eq. 13, 15)
# --------------------------------------------------------------------------------------------


def content_tokens(text: str) -> list[str]:
    """Normalised tokens ``T(c)``: lower-case ``[a-z0-9]+`` runs and single CJK characters.

    Source: SpeakerMem-R1 App. E (normalisation for eq. 15).
    """
    return _TOKEN.findall((text or "").lower())


def token_set_f1(tokens_a: Sequence[str], tokens_b: Sequence[str]) -> float:
    """``F_tok``: F1 of the two token sets, in [0, 1]; 0 when either is empty or none overlap.

    Source: SpeakerMem-R1 App. E, eq. 13 (set form, as eq. 11).
    """
    set_a, set_b = set(tokens_a), set(tokens_b)
    common = len(set_a & set_b)
    if not set_a or not set_b or common == 0:
        return 0.0
    p, r = common / len(set_a), common / len(set_b)
    return 2 * p * r / (p + r)


def sequence_ratio(tokens_a: Sequence[str], tokens_b: Sequence[str]) -> float:
    """``S_seq``: ``SequenceMatcher(None, " ".join(a), " ".join(b)).ratio()``, in [0, 1].

    Source: SpeakerMem-R1 App. E, eq. 15.
    """
    return SequenceMatcher(None, " ".join(tokens_a), " ".join(tokens_b)).ratio()


def _kappa_bar(tokens_a: Sequence[str], tokens_b: Sequence[str]) -> float:
    if not tokens_a or not tokens_b:
        return 0.0
    return ALPHA_TOK * token_set_f1(tokens_a, tokens_b) + ALPHA_SEQ * sequence_ratio(tokens_a, tokens_b)


def soft_match(content_a: str, content_b: str) -> float:
    """``κ̄ = 0.60 · F_tok + 0.40 · S_seq`` of two contents, in [0, 1] (0 if either has no token).

    Source: SpeakerMem-R1 App. E, eq. 13.
    """
    return _kappa_bar(content_tokens(content_a), content_tokens(content_b))


def gated_match(
    predicted: MemoryRecord, reference: MemoryRecord, *, threshold: float = MATCH_THRESHOLD
) -> float:
    """``κ``: ``κ̄`` when owner, source and layer are equal and ``κ̄ ≥ threshold``, else 0.

    Source: SpeakerMem-R1 App. E, eq. 14.
    """
    if (predicted.owner, predicted.source, predicted.layer) != (
        reference.owner,
        reference.source,
        reference.layer,
    ):
        return 0.0
    kappa = soft_match(predicted.content, reference.content)
    return kappa if kappa >= threshold else 0.0


# --------------------------------------------------------------------------------------------
# alignment (eq. 16)
# --------------------------------------------------------------------------------------------


def _aligned_soft_f1(kappa: np.ndarray) -> float:
    """``2 Σ κ / (n_pred + n_ref)`` of the maximum-weight one-to-one alignment of ``kappa``.

    ``kappa`` has shape ``(n_pred, n_ref)``; 1 when both sides are empty, 0 when one is.
    """
    n_pred, n_ref = kappa.shape
    if n_pred == 0 and n_ref == 0:
        return 1.0
    if n_pred == 0 or n_ref == 0:
        return 0.0
    rows, cols = linear_sum_assignment(kappa, maximize=True)
    return float(2.0 * kappa[rows, cols].sum() / (n_pred + n_ref))


def _as_records(records: Iterable[MemoryRecord | Mapping[str, Any]]) -> list[MemoryRecord]:
    return [r if isinstance(r, MemoryRecord) else MemoryRecord.model_validate(r) for r in records]


def _as_edges(edges: Iterable[ChainEdge | Mapping[str, Any]]) -> list[ChainEdge]:
    return [e if isinstance(e, ChainEdge) else ChainEdge.model_validate(e) for e in edges]


def _bucket_kappa(
    predicted: Sequence[MemoryRecord], reference: Sequence[MemoryRecord], threshold: float
) -> np.ndarray:
    pred_tokens = [content_tokens(r.content) for r in predicted]
    ref_tokens = [content_tokens(r.content) for r in reference]
    kappa = np.zeros((len(predicted), len(reference)), dtype=float)
    for i, p in enumerate(predicted):
        for j, g in enumerate(reference):
            if (p.owner, p.source, p.layer) != (g.owner, g.source, g.layer):
                continue
            value = _kappa_bar(pred_tokens[i], ref_tokens[j])
            if value >= threshold:
                kappa[i, j] = value
    return kappa


def owner_f1(
    predicted: Iterable[MemoryRecord | Mapping[str, Any]],
    reference: Iterable[MemoryRecord | Mapping[str, Any]],
    *,
    threshold: float = MATCH_THRESHOLD,
) -> float:
    """``F_p``: soft F1 of one owner bucket under the Hungarian one-to-one alignment.

    ``F_p = 2 Σ_{(i,j) ∈ A*_p} κ_ij / (|M_p| + |M*_p|)`` where ``A*_p`` maximises ``Σ κ``
    (``scipy.optimize.linear_sum_assignment(..., maximize=True)``). A prediction matches at
    most one reference record, so both omissions and over-writing lower ``F_p``.

    Args:
        predicted: the predicted records of this owner (records of other owners never match).
        reference: the reference records of this owner.
        threshold: the κ̄ threshold of eq. 14.

    Returns:
        ``F_p`` in [0, 1]; 0 when exactly one side is empty, 1 when both are.

    Source: SpeakerMem-R1 App. E, eq. 16.
    """
    return _aligned_soft_f1(_bucket_kappa(_as_records(predicted), _as_records(reference), threshold))


@dataclass(frozen=True)
class SpeakerLevenshteinScore:
    """Φ_SL and its parts.

    Attributes:
        phi: ``Φ_SL = w_avg · macro + w_worst · worst`` in [0, 1].
        macro: mean of ``F_p`` over the owner set.
        worst: minimum ``F_p`` over the owner set.
        per_owner: owner -> ``F_p``, owners sorted.
    """

    phi: float
    macro: float
    worst: float
    per_owner: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {"phi": self.phi, "macro": self.macro, "worst": self.worst, "per_owner": dict(self.per_owner)}


def speaker_levenshtein(
    predicted: Iterable[MemoryRecord | Mapping[str, Any]],
    reference: Iterable[MemoryRecord | Mapping[str, Any]],
    *,
    threshold: float = MATCH_THRESHOLD,
    w_avg: float = W_AVG,
    w_worst: float = W_WORST,
) -> SpeakerLevenshteinScore:
    """SpeakerLevenshtein state score ``Φ_SL(M, M*)``.

    Records are bucketed by owner (the group's owner, e.g. "GROUP", is one owner like any
    person); each bucket is aligned on its own (:func:`owner_f1`), so a record filed under
    the wrong owner cannot earn credit in another bucket and owners cannot cancel out.

    Args:
        predicted: predicted records ``M`` (:class:`MemoryRecord` or mappings with the same keys).
        reference: reference records ``M*``.
        threshold: κ̄ threshold (eq. 14).
        w_avg: weight of the owner mean (0.80).
        w_worst: weight of the worst owner (0.20).

    Returns:
        :class:`SpeakerLevenshteinScore`; ``phi = 1`` when both states are empty.

    Raises:
        pydantic.ValidationError: a mapping lacks owner/source/layer/content.

    Source: SpeakerMem-R1 eq. 7 and App. E, eq. 13-16.
    """
    pred_records, ref_records = _as_records(predicted), _as_records(reference)
    pred_buckets: dict[str, list[MemoryRecord]] = {}
    ref_buckets: dict[str, list[MemoryRecord]] = {}
    for record in pred_records:
        pred_buckets.setdefault(record.owner, []).append(record)
    for record in ref_records:
        ref_buckets.setdefault(record.owner, []).append(record)
    owners = sorted(set(pred_buckets) | set(ref_buckets))
    if not owners:
        return SpeakerLevenshteinScore(phi=1.0, macro=1.0, worst=1.0, per_owner={})
    per_owner = {
        owner: _aligned_soft_f1(
            _bucket_kappa(pred_buckets.get(owner, []), ref_buckets.get(owner, []), threshold)
        )
        for owner in owners
    }
    macro = sum(per_owner.values()) / len(per_owner)
    worst = min(per_owner.values())
    return SpeakerLevenshteinScore(
        phi=w_avg * macro + w_worst * worst, macro=macro, worst=worst, per_owner=per_owner
    )


# --------------------------------------------------------------------------------------------
# update chains (eq. 17) and the memory reward (eq. 18)
# --------------------------------------------------------------------------------------------


def chain_score(
    predicted: Iterable[ChainEdge | Mapping[str, Any]],
    reference: Iterable[ChainEdge | Mapping[str, Any]],
    *,
    threshold: float = MATCH_THRESHOLD,
    w_old: float = W_OLD,
    w_new: float = W_NEW,
) -> float:
    """Update-chain score ``R_chain``.

    For edges with equal owner and layer, ``κ_chain = w_old · κ̄(old, old*) + w_new ·
    κ̄(new, new*)``; pairs with different owner or layer, or ``κ_chain < threshold``, score 0.
    ``R_chain`` is the soft F1 ``2 Σ κ_chain / (|E| + |E*|)`` of the maximum-weight one-to-one
    alignment of all edges.

    Args:
        predicted: predicted UPDATE edges (:class:`ChainEdge` or mappings).
        reference: reference UPDATE edges.
        threshold: minimum κ_chain (same 0.50 as eq. 14).
        w_old / w_new: weights of the old and new states (0.50 / 0.50).

    Returns:
        ``R_chain`` in [0, 1]; 1 when neither side has edges, 0 when only one side has.

    Source: SpeakerMem-R1 App. E, eq. 17.
    """
    pred_edges, ref_edges = _as_edges(predicted), _as_edges(reference)
    pred_tokens = [(content_tokens(e.old), content_tokens(e.new)) for e in pred_edges]
    ref_tokens = [(content_tokens(e.old), content_tokens(e.new)) for e in ref_edges]
    kappa = np.zeros((len(pred_edges), len(ref_edges)), dtype=float)
    for i, p in enumerate(pred_edges):
        for j, g in enumerate(ref_edges):
            if (p.owner, p.layer) != (g.owner, g.layer):
                continue
            value = w_old * _kappa_bar(pred_tokens[i][0], ref_tokens[j][0]) + w_new * _kappa_bar(
                pred_tokens[i][1], ref_tokens[j][1]
            )
            if value >= threshold:
                kappa[i, j] = value
    return _aligned_soft_f1(kappa)


@dataclass(frozen=True)
class MemoryReward:
    """The Writer's memory reward and its parts.

    Attributes:
        r_mem: ``w_sl · Φ_SL + w_chain · R_chain`` in [0, 1].
        phi_sl: the state score (eq. 7 / 16).
        r_chain: the update-chain score (eq. 17).
        state: the full :class:`SpeakerLevenshteinScore`.
    """

    r_mem: float
    phi_sl: float
    r_chain: float
    state: SpeakerLevenshteinScore

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {"r_mem": self.r_mem, "phi_sl": self.phi_sl, "r_chain": self.r_chain, "state": self.state.to_dict()}


def memory_reward(
    predicted: Iterable[MemoryRecord | Mapping[str, Any]],
    reference: Iterable[MemoryRecord | Mapping[str, Any]],
    predicted_edges: Iterable[ChainEdge | Mapping[str, Any]] = (),
    reference_edges: Iterable[ChainEdge | Mapping[str, Any]] = (),
    *,
    w_sl: float = W_SL,
    w_chain: float = W_CHAIN,
) -> MemoryReward:
    """``R_mem = 0.80 · Φ_SL(M, M*) + 0.20 · R_chain``.

    Args:
        predicted / reference: records of the predicted and reference states.
        predicted_edges / reference_edges: their UPDATE edges.
        w_sl / w_chain: weights (0.80 / 0.20).

    Source: SpeakerMem-R1 App. E, eq. 18.
    """
    state = speaker_levenshtein(predicted, reference)
    r_chain = chain_score(predicted_edges, reference_edges)
    return MemoryReward(
        r_mem=w_sl * state.phi + w_chain * r_chain, phi_sl=state.phi, r_chain=r_chain, state=state
    )
