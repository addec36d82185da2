"""Writer-R1 rewards: pure functions of one Writer answer, its validation and memory states.

Every function here is deterministic and free of I/O, so each term of the paper's return can
be checked by hand (``tests/unit/test_train_rewards.py`` does). The terms, with the paper's
default weights:

==========================  =====================================================  ==========
term                        definition                                              source
==========================  =====================================================  ==========
``R_valid``                 ``0.25 R_json + 0.35 R_schema + 0.25 R_dup + 0.15      eq. 19
                            R_stop`` (:func:`validity_reward`)
``P``                       ``-0.25 z_json - 0.15 z_act - 0.10 z_count - 0.10      eq. 20-21
                            z_len`` (:func:`structural_penalty`)
``Φ_SL``                    owner-bucketed soft F1 with coordinate gate and         eq. 7, 13-16
                            Hungarian alignment (:func:`state_agreement`)
``R_chain``                 soft F1 of UPDATE edges (:func:`chain_agreement`)       eq. 17
``R_mem``                   ``0.80 Φ_SL + 0.20 R_chain``                            eq. 18
``R_QA``                    ``QA(S1+S2) - QA(S1)`` on the same S1 evidence          eq. 8, 22
                            (:func:`qa_gain`)
``r_{g,t}``                 ``0.20 R_valid + 0.45 R_mem + P + 0.35 γ^{T-1-t}        eq. 9
                            R_QA``, γ = 0.95 (:func:`position_return`)
``Â_{g,t}``                 0 when σ_t < 0.02, else ``clip((r-μ_t)/σ_t, ±3)``       eq. 23-24
                            (:func:`group_advantages`)
==========================  =====================================================  ==========

Where the paper leaves a choice open, the choice made here (each also stated on its function):

- *Schema-valid* (eq. 19) means: not rejected by :func:`graphmem.derived.writer.validate_actions` for a
  schema reason (:data:`SCHEMA_REASONS`: malformed action, unknown action/owner/source/layer/
  utype, scope mismatch, empty content, UPDATE of no current head). Duplicates and unchanged
  UPDATEs are scored by ``R_dup`` / ``R_stop`` instead, actions past the budget by ``z_count``.
- ``z_act`` (eq. 21) is 1 when validation rejected any action for a reason other than
  ``too_many_actions`` (that one is ``z_count``).
- Action keys: owner and source are resolved through the roster (so ``"mom"`` and ``"Mom"`` are
  one person), content is :func:`graphmem.derived.memory.normalise_content`.

Size (over 500 lines on purpose): every reward term of the paper lives here next to its
equation, so the table above maps one-to-one onto this file.

Source: SpeakerMem-R1 §4 (eq. 7-9) and App. E (eq. 13-27).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from graphmem.eval.speaker_levenshtein import (
    ChainEdge,
    MemoryRecord,
    SpeakerLevenshteinScore,
    chain_score,
    speaker_levenshtein,
)
from graphmem.derived.memory import DerivedRecord, normalise_content

__all__ = [
    "ADV_CLIP",
    "GAMMA",
    "SCHEMA_REASONS",
    "SIGMA_MIN",
    "Penalty",
    "RewardWeights",
    "Validity",
    "action_key",
    "chain_agreement",
    "group_advantages",
    "kl_estimate",
    "memory_agreement",
    "novel_flags",
    "position_return",
    "qa_gain",
    "qa_score",
    "state_agreement",
    "structural_penalty",
    "to_edges",
    "to_records",
    "validity_reward",
]

#: Discount of the terminal QA gain per position before the end (eq. 9).
GAMMA = 0.95
#: Positions whose within-group reward std is below this get no update (eq. 24).
SIGMA_MIN = 0.02
#: Advantages are clipped to ``[-ADV_CLIP, ADV_CLIP]`` (eq. 24).
ADV_CLIP = 3.0

#: Validation rejections that make an action schema-invalid (eq. 19, R_schema).
SCHEMA_REASONS = frozenset({
    "invalid_action",
    "unknown_action",
    "missing_field",
    "unknown_owner",
    "unknown_source",
    "unknown_layer",
    "unknown_utype",
    "group_layer_needs_group_owner",
    "person_layer_needs_person_owner",
    "empty_content",
    "unresolved_entry_id",
})


@dataclass(frozen=True)
class RewardWeights:
    """The paper's reward weights (defaults) — every one can be overridden.

    Attributes:
        valid / mem / qa: weights of ``R_valid``, ``R_mem`` and the terminal ``R_QA`` (eq. 9).
        gamma: discount of ``R_QA`` per position before the end (eq. 9).
        json / schema / dup / stop: the parts of ``R_valid`` (eq. 19).
        eta_json / eta_act / eta_count / eta_len: structural penalty sizes (eq. 21).
        sl / chain: weights of ``Φ_SL`` and ``R_chain`` in ``R_mem`` (eq. 18).
    """

    valid: float = 0.20
    mem: float = 0.45
    qa: float = 0.35
    gamma: float = GAMMA
    json: float = 0.25
    schema: float = 0.35
    dup: float = 0.25
    stop: float = 0.15
    eta_json: float = 0.25
    eta_act: float = 0.15
    eta_count: float = 0.10
    eta_len: float = 0.10
    sl: float = 0.80
    chain: float = 0.20


DEFAULT_WEIGHTS = RewardWeights()


# --------------------------------------------------------------------------------------------
# action validity (eq. 19)
# --------------------------------------------------------------------------------------------


def _resolve(roster: Any, name: Any) -> str:
    if roster is not None:
        resolved: str | None
        resolved, _why = roster.resolve(name)
        if resolved is not None:
            return resolved
    return " ".join(str(name).split()).casefold() if isinstance(name, str) else repr(name)


def _kind(action: Any) -> str:
    if not isinstance(action, Mapping):
        return "?"
    raw = action.get("action")
    return raw.strip().upper() if isinstance(raw, str) else "?"


def _field(action: Mapping[str, Any], key: str) -> str:
    value = action.get(key)
    return " ".join(value.split()) if isinstance(value, str) else ""


def action_key(action: Any, roster: Any = None) -> tuple[str, ...]:
    """The duplicate key of one action (eq. 19, ``R_dup``).

    ADD: ``("ADD", owner, source, layer, normalised content)``; UPDATE: ``("UPDATE",
    entry_id, normalised content)``; NOOP: ``("NOOP",)``; anything else: ``("?", repr)``.
    Owner and source go through ``roster.resolve`` when a roster is given (Person id or
    ``GROUP``), else they are case-folded.
    """
    kind = _kind(action)
    if kind == "NOOP":
        return ("NOOP",)
    if kind == "ADD":
        return ("ADD", _resolve(roster, action.get("owner")), _resolve(roster, action.get("source")),
                _field(action, "layer").lower(), normalise_content(_field(action, "content")))
    if kind == "UPDATE":
        return ("UPDATE", _field(action, "entry_id"), normalise_content(_field(action, "content")))
    return ("?", repr(action))


def novel_flags(
    actions: Sequence[Any], *, heads: Sequence[DerivedRecord], roster: Any = None
) -> list[bool]:
    """Which actions are *novel* (App. E, definition behind ``R_stop``).

    - a NOOP is novel when it is the only NOOP of the answer;
    - an ADD is novel when its key occurs once in the answer and no current head has it;
    - an UPDATE is novel when its ``entry_id`` is a current head (pre-state) and its
      normalised content differs from that head's; anything else is not novel.

    Args:
        actions: the answer's actions, in order.
        heads: the pre-state the Writer saw (current heads).
        roster: resolves owner/source names (a :class:`graphmem.derived.writer.Roster`), optional.

    Returns:
        One bool per action.
    """
    keys = [action_key(a, roster) for a in actions]
    counts = Counter(keys)
    head_by_id = {h.id: h for h in heads}
    head_keys = {("ADD", h.owner, h.source, h.layer, normalise_content(h.content)) for h in heads}
    flags = []
    for a, key in zip(actions, keys):
        kind = key[0]
        if kind == "NOOP":
            flags.append(counts[key] == 1)
        elif kind == "ADD":
            flags.append(counts[key] == 1 and key not in head_keys)
        elif kind == "UPDATE":
            head = head_by_id.get(key[1])
            flags.append(head is not None and key[2] != normalise_content(head.content) and bool(key[2]))
        else:
            flags.append(False)
    return flags


@dataclass(frozen=True)
class Validity:
    """``R_valid`` and its four parts, each in [0, 1] (eq. 19)."""

    json: float
    schema: float
    dup: float
    stop: float
    value: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def validity_reward(
    actions: Sequence[Any] | None,
    rejections: Iterable[str],
    *,
    heads: Sequence[DerivedRecord],
    roster: Any = None,
    weights: RewardWeights = DEFAULT_WEIGHTS,
) -> Validity:
    """Action validity ``R_valid = w_json R_json + w_schema R_schema + w_dup R_dup + w_stop R_stop``.

    With ``n`` attempted actions (the answer's list length):

    - ``R_json`` = 1 when the answer parsed to an action list (``actions`` is not None);
    - ``R_schema`` = clip(schema-valid / n, 0, 1), schema-valid = n minus the actions rejected
      for a reason in :data:`SCHEMA_REASONS`; 0 for invalid JSON;
    - ``R_dup`` = clip(distinct :func:`action_key` / n, 0, 1);
    - ``R_stop`` = 1 when the last action is novel (:func:`novel_flags`): the answer stopped
      right after its last novel action;
    - ``n = 0`` (or invalid JSON) makes all four parts and ``R_valid`` zero.

    Args:
        actions: the parsed action list, None when the answer held no usable JSON.
        rejections: the rejection reason of every rejected action (from the
            :class:`graphmem.derived.writer.ValidationReport`).
        heads: pre-state (current heads the Writer saw).
        roster: resolves owner/source names for the keys.
        weights: w_json 0.25, w_schema 0.35, w_dup 0.25, w_stop 0.15.

    Returns:
        :class:`Validity`; ``value`` in [0, 1].

    Source: SpeakerMem-R1 App. E, eq. 19.
    """
    if actions is None or len(actions) == 0:
        return Validity(0.0, 0.0, 0.0, 0.0, 0.0)
    n = len(actions)
    schema_bad = sum(1 for r in rejections if r in SCHEMA_REASONS)
    r_schema = min(1.0, max(0.0, (n - schema_bad) / n))
    r_dup = min(1.0, len({action_key(a, roster) for a in actions}) / n)
    r_stop = 1.0 if novel_flags(actions, heads=heads, roster=roster)[-1] else 0.0
    r_json = 1.0
    value = weights.json * r_json + weights.schema * r_schema + weights.dup * r_dup + weights.stop * r_stop
    return Validity(r_json, r_schema, r_dup, r_stop, value)


# --------------------------------------------------------------------------------------------
# structural penalties (eq. 20-21)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Penalty:
    """``P_{g,t}`` (<= 0) and its indicators (eq. 21)."""

    invalid_json: bool
    invalid_actions: bool
    too_many_actions: bool
    hit_length: bool
    value: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def structural_penalty(
    actions: Sequence[Any] | None,
    rejections: Iterable[str],
    *,
    max_actions: int,
    finish_reason: str | None = None,
    weights: RewardWeights = DEFAULT_WEIGHTS,
) -> Penalty:
    """Structural penalty ``P = -η_json z_json - η_act z_act - η_count z_count - η_len z_len``.

    - ``z_json``: the answer held no usable JSON action list (``actions`` is None);
    - ``z_act``: validation rejected some action for a reason other than ``too_many_actions``;
    - ``z_count``: more actions than ``max_actions = max(8, 2|X_t|)`` (eq. 20);
    - ``z_len``: generation stopped at the length limit (``finish_reason == "length"``).

    Args:
        actions: parsed action list or None.
        rejections: rejection reasons of the rejected actions.
        max_actions: the segment's budget (:func:`graphmem.derived.writer.max_actions_for`).
        finish_reason: the model's finish reason, if known.
        weights: η_json 0.25, η_act 0.15, η_count 0.10, η_len 0.10.

    Returns:
        :class:`Penalty`; ``value`` in [-0.60, 0].

    Source: SpeakerMem-R1 App. E, eq. 20-21.
    """
    reasons = list(rejections)
    z_json = actions is None
    z_act = any(r != "too_many_actions" for r in reasons)
    z_count = actions is not None and len(actions) > max_actions
    z_len = finish_reason == "length"
    value = -(weights.eta_json * z_json + weights.eta_act * z_act + weights.eta_count * z_count
              + weights.eta_len * z_len)
    return Penalty(z_json, z_act, z_count, z_len, float(value) + 0.0)


# --------------------------------------------------------------------------------------------
# state and chain agreement (eq. 7, 13-18)
# --------------------------------------------------------------------------------------------


def to_records(state: Iterable[DerivedRecord | Mapping[str, Any]]) -> list[MemoryRecord]:
    """Derived records (or mappings with owner/source/layer/content) as SpeakerLevenshtein records."""
    out = []
    for r in state:
        d = r.model_dump() if isinstance(r, DerivedRecord) else r
        out.append(MemoryRecord(owner=d["owner"], source=d["source"], layer=d["layer"], content=d["content"]))
    return out


def to_edges(edges: Iterable[ChainEdge | Mapping[str, Any]]) -> list[ChainEdge]:
    """UPDATE edges (mappings with owner/layer/old/new) as :class:`ChainEdge`."""
    return [e if isinstance(e, ChainEdge) else ChainEdge.model_validate(dict(e)) for e in edges]


def state_agreement(
    predicted: Iterable[DerivedRecord | Mapping[str, Any]],
    reference: Iterable[DerivedRecord | Mapping[str, Any]],
) -> SpeakerLevenshteinScore:
    """``Φ_SL(M, M*) = 0.80 · mean_p F_p + 0.20 · min_p F_p`` over owner buckets.

    ``F_p`` is the soft F1 of the maximum-weight one-to-one (Hungarian) alignment of owner
    ``p``'s records, with ``κ = κ̄`` only where owner, source and layer agree and
    ``κ̄ = 0.6 F_tok + 0.4 S_seq ≥ 0.5``. Computed by
    :func:`graphmem.eval.speaker_levenshtein.speaker_levenshtein`.

    Args:
        predicted: the candidate state ``M`` (heads), records or mappings.
        reference: the reference state ``M*``.

    Returns:
        Score with ``phi`` in [0, 1] (1 when both states are empty).

    Source: SpeakerMem-R1 eq. 7 and App. E eq. 13-16.
    """
    return speaker_levenshtein(to_records(predicted), to_records(reference))


def chain_agreement(
    predicted: Iterable[ChainEdge | Mapping[str, Any]], reference: Iterable[ChainEdge | Mapping[str, Any]]
) -> float:
    """``R_chain``: soft F1 of UPDATE edges, ``κ_chain = 0.5 κ̄(old) + 0.5 κ̄(new)`` on equal owner
    and layer (:func:`graphmem.eval.speaker_levenshtein.chain_score`).

    Returns:
        Value in [0, 1]; 1 when neither side has an edge, 0 when only one side has.

    Source: SpeakerMem-R1 App. E, eq. 17.
    """
    return chain_score(to_edges(predicted), to_edges(reference))


def memory_agreement(
    predicted: Iterable[DerivedRecord | Mapping[str, Any]],
    reference: Iterable[DerivedRecord | Mapping[str, Any]],
    predicted_edges: Iterable[ChainEdge | Mapping[str, Any]] = (),
    reference_edges: Iterable[ChainEdge | Mapping[str, Any]] = (),
    *,
    weights: RewardWeights = DEFAULT_WEIGHTS,
) -> tuple[float, float, float]:
    """``R_mem = w_SL Φ_SL + w_chain R_chain`` (0.80 / 0.20).

    Returns:
        ``(R_mem, Φ_SL, R_chain)``, each in [0, 1].

    Source: SpeakerMem-R1 App. E, eq. 18.
    """
    phi = state_agreement(predicted, reference).phi
    chain = chain_agreement(predicted_edges, reference_edges)
    return weights.sl * phi + weights.chain * chain, phi, chain


# --------------------------------------------------------------------------------------------
# terminal QA gain (eq. 8, 22)
# --------------------------------------------------------------------------------------------


def qa_score(verdicts: Sequence[bool | float]) -> float:
    """``QA(E; M) = (1/|Q|) Σ_q J(Ans(q, E; M), a*_q)``: mean binary judge verdict, in [0, 1].

    Raises:
        ValueError: no question.

    Source: SpeakerMem-R1 App. E, eq. 22.
    """
    if len(verdicts) == 0:
        raise ValueError("QA score needs at least one judged question")
    return float(sum(float(v) for v in verdicts) / len(verdicts))


def qa_gain(with_system2: Sequence[bool | float], system1_only: Sequence[bool | float]) -> float:
    """``R_QA = QA(System 1 + System 2; M_T) - QA(System 1; M_T)``, in [-1, 1].

    Both verdict lists must judge the same questions in the same order (same System 1
    evidence), so questions already answerable from verbatim memory earn the Writer nothing.

    Raises:
        ValueError: the two lists differ in length or are empty.

    Source: SpeakerMem-R1 §4, eq. 8 (with eq. 22).
    """
    if len(with_system2) != len(system1_only):
        raise ValueError(f"QA gain needs the same questions on both sides "
                         f"({len(with_system2)} vs {len(system1_only)} verdicts)")
    return qa_score(with_system2) - qa_score(system1_only)


# --------------------------------------------------------------------------------------------
# per-position return (eq. 9) and group-relative advantages (eq. 23-24)
# --------------------------------------------------------------------------------------------


def position_return(
    *,
    r_valid: float,
    r_mem: float,
    penalty: float,
    r_qa: float | None,
    t: int,
    n_positions: int,
    weights: RewardWeights = DEFAULT_WEIGHTS,
) -> float:
    """``r_{g,t} = w_valid R_valid + w_mem R_mem + P + w_QA γ^{T-1-t} R_QA``.

    Args:
        r_valid / r_mem / penalty: this position's terms (eq. 19, 18, 21).
        r_qa: the trajectory's terminal QA gain (eq. 8); None when no answerer/judge is
            configured: the QA term is then left out (contributes 0).
        t: 0-based writing position; n_positions: T, the trajectory's number of positions.
        weights: w_valid 0.20, w_mem 0.45, w_QA 0.35, γ 0.95.

    Raises:
        ValueError: t outside [0, T).

    Source: SpeakerMem-R1 §4, eq. 9.
    """
    if not 0 <= t < n_positions:
        raise ValueError(f"position t={t} outside [0, {n_positions})")
    value = weights.valid * r_valid + weights.mem * r_mem + penalty
    if r_qa is not None:
        value += weights.qa * weights.gamma ** (n_positions - 1 - t) * r_qa
    return float(value)


def group_advantages(
    returns: Sequence[Sequence[float]] | np.ndarray, *, sigma_min: float = SIGMA_MIN, clip: float = ADV_CLIP
) -> np.ndarray:
    """Position-wise group-relative advantages.

    For returns ``r`` of shape ``(G, T)`` (G trajectories of one network, T aligned writing
    positions; NaN marks a position a trajectory does not have), per position t:
    ``μ_t = mean_g r_{g,t}``, ``σ_t = sqrt(mean_g (r_{g,t} - μ_t)^2)`` (population std, 1/G),
    and ``Â_{g,t} = 0`` when ``σ_t < sigma_min``, else ``clip((r_{g,t} - μ_t)/σ_t, -clip, clip)``.
    NaN positions get advantage 0.

    Returns:
        float64 array (G, T).

    Raises:
        ValueError: returns are not two-dimensional.

    Source: SpeakerMem-R1 App. E, eq. 23-24.
    """
    r = np.asarray(returns, dtype=float)
    if r.ndim != 2:
        raise ValueError(f"returns must have shape (G, T), got {r.shape}")
    adv = np.zeros_like(r)
    for t in range(r.shape[1]):
        col = r[:, t]
        present = ~np.isnan(col)
        if present.sum() == 0:
            continue
        vals = col[present]
        mu = vals.mean()
        sigma = float(np.sqrt(((vals - mu) ** 2).mean()))
        if sigma < sigma_min:
            continue
        adv[present, t] = np.clip((vals - mu) / sigma, -clip, clip)
    return adv


def kl_estimate(logp_ref: np.ndarray | Sequence[float], logp: np.ndarray | Sequence[float]) -> np.ndarray:
    """Per-token KL estimate ``d = exp(δ) - δ - 1`` with ``δ = log π_ref - log π_θ`` (>= 0).

    Source: SpeakerMem-R1 App. E, eq. 27.
    """
    delta = np.asarray(logp_ref, dtype=float) - np.asarray(logp, dtype=float)
    kl: np.ndarray = np.exp(delta) - delta - 1.0
    return kl
