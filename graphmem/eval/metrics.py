"""Answer metrics of the SpeakerMem-R1 evaluation protocol.

- :func:`token_f1` / :func:`mean_token_f1`: set-based token-F1 (App. C, eq. 11).
- :func:`parse_judge_verdict` / :func:`binary_accuracy`: binary judge accuracy (App. C, eq. 10)
  from the fixed judge prompt's ``Final: Correct`` / ``Final: Incorrect`` line.
- :func:`locomo_official_f1`: the LoCoMo "official" F1, as SpeakerMemR1's ``run_locomo.py``
  computes it (default) or as the upstream LoCoMo ``task_eval/evaluation.py`` does.
- :func:`mean_q`, :func:`mean_n`, :func:`bootstrap_mean_n_ci`, :func:`socialmem_summary`:
  SocialMem MeanQ / MeanN (App. C, eq. 12) and the 95% network-bootstrap CI of MeanN.
- :func:`recall_at_k`, :func:`hit_at_k`, :func:`mean_recall_at_k`: evidence retrieval recall.

Scores in [0, 1] unless a docstring says "percentage" (0-100).

Size (over 500 lines on purpose): every metric of the paper's tables, each small and pure,
kept side by side with its equation so the definitions can be checked against one another.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from graphmem.core.errors import InvalidInputError
from graphmem.core.text import strip_think

__all__ = [
    "AccuracySummary",
    "RecallSummary",
    "SocialMemSummary",
    "answer_tokens",
    "binary_accuracy",
    "bootstrap_mean_n_ci",
    "hit_at_k",
    "locomo_official_f1",
    "mean_n",
    "mean_q",
    "mean_recall_at_k",
    "mean_token_f1",
    "normalize_answer",
    "parse_judge_verdict",
    "recall_at_k",
    "socialmem_summary",
    "token_f1",
    "token_prf",
]


# --------------------------------------------------------------------------------------------
# token-F1 (eq. 11)
# --------------------------------------------------------------------------------------------


def normalize_answer(text: str) -> str:
    """Normalise an answer as App. C eq. 11 prescribes.

    Lowercase, strip surrounding whitespace, strip trailing periods, collapse runs of
    whitespace to one space. Nothing else: punctuation inside the text and articles stay.

    Source: SpeakerMem-R1 App. C, eq. 11 (and its supplementary ``compute_metrics.norm``).
    """
    stripped = (text or "").strip().lower().rstrip(".")
    return " ".join(stripped.split())


def answer_tokens(text: str) -> set[str]:
    """The token set of eq. 11: whitespace tokens of :func:`normalize_answer`, deduplicated."""
    return set(normalize_answer(text).split())


def token_prf(prediction: str, gold: str) -> tuple[float, float, float]:
    """Precision, recall and F1 of one answer on token sets.

    ``p = |A ∩ G| / |A|``, ``r = |A ∩ G| / |G|``, ``f = 2pr / (p + r)`` with ``A``, ``G`` the
    token sets of prediction and gold; all three are 0 when either set is empty or the sets
    do not overlap.

    Returns:
        ``(p, r, f)``, each in [0, 1].

    Source: SpeakerMem-R1 App. C, eq. 11.
    """
    predicted, reference = answer_tokens(prediction), answer_tokens(gold)
    common = len(predicted & reference)
    if not predicted or not reference or common == 0:
        return 0.0, 0.0, 0.0
    p, r = common / len(predicted), common / len(reference)
    return p, r, 2 * p * r / (p + r)


def token_f1(prediction: str, gold: str) -> float:
    """Set-based token-F1 of one answer, in [0, 1] (see :func:`token_prf`).

    Source: SpeakerMem-R1 App. C, eq. 11.
    """
    return token_prf(prediction, gold)[2]


def mean_token_f1(predictions: Sequence[str], golds: Sequence[str]) -> float:
    """Token-F1 averaged with equal question weights, as a percentage (0-100).

    Args:
        predictions: one answer per question.
        golds: the gold answers, aligned with ``predictions``.

    Raises:
        InvalidInputError: the sequences differ in length or are empty.

    Source: SpeakerMem-R1 App. C, eq. 11.
    """
    if len(predictions) != len(golds):
        raise InvalidInputError(
            f"{len(predictions)} predictions but {len(golds)} gold answers", field="golds"
        )
    if not predictions:
        raise InvalidInputError("token-F1 of zero questions is undefined", field="predictions")
    return 100.0 * sum(token_f1(p, g) for p, g in zip(predictions, golds, strict=True)) / len(predictions)


# --------------------------------------------------------------------------------------------
# binary judge accuracy (eq. 10)
# --------------------------------------------------------------------------------------------

_FINAL_LINE = re.compile(r"^Final:[ \t]*(Correct|Incorrect)$")


def parse_judge_verdict(text: str) -> bool | None:
    """Read the verdict of the binary judge (App. I, Prompt 6).

    The verdict is a line that is exactly ``Final: Correct`` or ``Final: Incorrect`` (spaces
    around it and between ``Final:`` and the word are tolerated; case, Markdown and trailing
    punctuation are not). When several such lines occur, the last one wins. ``<think>``
    blocks are ignored.

    Returns:
        True (Correct), False (Incorrect) or None (no verdict line: a parse failure; report
        it, do not count it as correct).
    """
    verdict: bool | None = None
    for line in strip_think(text).splitlines():
        match = _FINAL_LINE.match(line.strip())
        if match:
            verdict = match.group(1) == "Correct"
    return verdict


@dataclass(frozen=True)
class AccuracySummary:
    """Binary accuracy of a set of judged questions.

    Attributes:
        accuracy: percentage (0-100) of questions judged correct; unparsed verdicts count
            as not correct (``j_i = 0``), as eq. 10 requires.
        correct / incorrect / unparsed: counts; they sum to ``total``.
        total: number of questions.
    """

    accuracy: float
    correct: int
    incorrect: int
    unparsed: int
    total: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)


def binary_accuracy(verdicts: Iterable[bool | None]) -> AccuracySummary:
    """Question-level binary accuracy, ``Acc. = 100/Q * Σ j_i``.

    Args:
        verdicts: one per question, as :func:`parse_judge_verdict` returns them.

    Raises:
        InvalidInputError: no verdicts.

    Source: SpeakerMem-R1 App. C, eq. 10.
    """
    items = list(verdicts)
    if not items:
        raise InvalidInputError("accuracy of zero questions is undefined", field="verdicts")
    correct = sum(1 for v in items if v is True)
    incorrect = sum(1 for v in items if v is False)
    unparsed = len(items) - correct - incorrect
    return AccuracySummary(100.0 * correct / len(items), correct, incorrect, unparsed, len(items))


# --------------------------------------------------------------------------------------------
# LoCoMo official F1
# --------------------------------------------------------------------------------------------

LocomoVariant = Literal["speakermem", "locomo"]
_ABSTAIN_MARKERS = ("no information available", "not mentioned")
_PUNCTUATION = frozenset(string.punctuation)


def _normalize_speakermem(text: str) -> str:
    # SpeakerMemR1 run_locomo._norm: lowercase, drop articles, keep alphanumerics and
    # whitespace only (punctuation is deleted, not replaced), collapse whitespace.
    lowered = re.sub(r"\b(a|an|the)\b", " ", text.lower())
    kept = "".join(c for c in lowered if c.isalnum() or c.isspace())
    return " ".join(kept.split())


def _f1_speakermem(prediction: str, gold: str) -> float:
    predicted, reference = _normalize_speakermem(prediction).split(), _normalize_speakermem(gold).split()
    if not predicted or not reference:
        return float(predicted == reference)  # both empty -> 1.0, as the reference code does
    same = sum((Counter(predicted) & Counter(reference)).values())
    if same == 0:
        return 0.0
    p, r = same / len(predicted), same / len(reference)
    return 2 * p * r / (p + r)


def _porter_stem() -> Any:
    try:
        from nltk.stem import PorterStemmer
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise InvalidInputError(
            "variant='locomo' needs the Porter stemmer from nltk (pip install nltk)", field="variant"
        ) from e
    return PorterStemmer().stem


def _normalize_locomo(text: str) -> str:
    # LoCoMo task_eval/evaluation.normalize_answer: drop commas, lowercase, drop ASCII
    # punctuation, drop a/an/the/and, collapse whitespace.
    lowered = text.replace(",", "").lower()
    kept = "".join(c for c in lowered if c not in _PUNCTUATION)
    return " ".join(re.sub(r"\b(a|an|the|and)\b", " ", kept).split())


def _f1_locomo(prediction: str, gold: str, stem: Any) -> float:
    predicted = [stem(w) for w in _normalize_locomo(prediction).split()]
    reference = [stem(w) for w in _normalize_locomo(gold).split()]
    same = sum((Counter(predicted) & Counter(reference)).values())
    if same == 0:
        return 0.0
    p, r = same / len(predicted), same / len(reference)
    return 2 * p * r / (p + r)


def locomo_official_f1(
    prediction: str, gold: str | int, category: int, *, variant: LocomoVariant = "speakermem"
) -> float:
    """LoCoMo's "official" per-question F1, in [0, 1].

    Both variants share the category rules: category 5 (adversarial) scores 1 when the
    lower-cased prediction contains ``"no information available"`` or ``"not mentioned"``
    and 0 otherwise (the gold is not read); category 3 (open-domain) cuts the gold at the
    first ``;``; category 1 (multi-hop) splits the gold into sub-answers and averages their
    F1s; categories 2 and 4 compare whole strings. Token F1 is multiset (SQuAD-style).

    ``variant="speakermem"`` (default) reproduces SpeakerMemR1 ``run_locomo.official_score``,
    the figure SpeakerMem-R1 reports: normalisation lowercases, removes the articles
    a/an/the, deletes every non-alphanumeric character and collapses whitespace; no
    stemming; category-1 gold is split on ``,`` and ``;`` and the whole prediction is scored
    against each part; when prediction or gold normalises to nothing the score is 1.0 if
    both do, else 0.0.

    ``variant="locomo"`` reproduces snap-research/LoCoMo ``task_eval/evaluation.py``: commas
    and ASCII punctuation removed, articles and "and" removed, Porter stemming (nltk);
    category-1 prediction and gold are both split on ``,`` and each gold part takes its best
    prediction part; an empty side scores 0.

    Args:
        prediction: the system's answer.
        gold: the gold answer (LoCoMo has a few integer answers; they are cast to str).
        category: LoCoMo category 1-5.
        variant: which reference implementation to follow.

    Raises:
        InvalidInputError: category outside 1-5, unknown variant, or ``variant="locomo"``
            without nltk installed.
    """
    if category not in (1, 2, 3, 4, 5):
        raise InvalidInputError(f"LoCoMo category must be 1-5, got {category!r}", field="category")
    if variant not in ("speakermem", "locomo"):
        raise InvalidInputError(f"unknown variant {variant!r}", field="variant")
    prediction = prediction or ""
    if category == 5:
        lowered = prediction.lower()
        return 1.0 if any(marker in lowered for marker in _ABSTAIN_MARKERS) else 0.0
    gold_text = str(gold)
    if category == 3:
        gold_text = gold_text.split(";")[0].strip()
    if variant == "speakermem":
        if category == 1:
            parts = [p.strip() for p in re.split(r"[;,]", gold_text) if p.strip()] or [gold_text]
            return sum(_f1_speakermem(prediction, part) for part in parts) / len(parts)
        return _f1_speakermem(prediction, gold_text)
    stem = _porter_stem()
    if category == 1:
        predictions = [p.strip() for p in prediction.split(",")]
        golds = [g.strip() for g in gold_text.split(",")]
        return float(np.mean([max(_f1_locomo(p, g, stem) for p in predictions) for g in golds]))
    return _f1_locomo(prediction, gold_text, stem)


# --------------------------------------------------------------------------------------------
# SocialMem MeanQ / MeanN (eq. 12)
# --------------------------------------------------------------------------------------------


def _network_scores(scores_by_network: Mapping[str, Iterable[float]]) -> dict[str, np.ndarray]:
    if not scores_by_network:
        raise InvalidInputError("no networks", field="scores_by_network")
    out: dict[str, np.ndarray] = {}
    for network, scores in scores_by_network.items():
        values = np.asarray(list(scores), dtype=float)
        if values.size == 0:
            raise InvalidInputError(f"network {network!r} has no scored questions", record=str(network))
        if not np.all(np.isfinite(values)) or values.min() < 0.0 or values.max() > 1.0:
            raise InvalidInputError(
                f"network {network!r} has scores outside [0, 1]", record=str(network), field="scores"
            )
        out[str(network)] = values
    return out


def mean_q(scores_by_network: Mapping[str, Iterable[float]]) -> float:
    """MeanQ: the mean of all item-level scores, every question weighted equally.

    Args:
        scores_by_network: network id -> item-level scores ``s_q`` in [0, 1].

    Returns:
        A score in [0, 1].

    Raises:
        InvalidInputError: no networks, a network without questions, or a score outside [0, 1].

    Source: SpeakerMem-R1 App. C, eq. 12.
    """
    networks = _network_scores(scores_by_network)
    return float(np.concatenate(list(networks.values())).mean())


def mean_n(scores_by_network: Mapping[str, Iterable[float]]) -> float:
    """MeanN: the mean over networks of each network's mean score (networks weighted equally).

    Args / Raises: as :func:`mean_q`.

    Source: SpeakerMem-R1 App. C, eq. 12.
    """
    networks = _network_scores(scores_by_network)
    return float(np.mean([values.mean() for values in networks.values()]))


def bootstrap_mean_n_ci(
    scores_by_network: Mapping[str, Iterable[float]],
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of MeanN over networks.

    The per-network means are the bootstrap units: each resample draws ``N`` of them with
    replacement (``numpy.random.Generator.integers`` from ``default_rng(seed)``) and takes
    their mean; the interval is the ``(1-confidence)/2`` and ``(1+confidence)/2`` percentiles
    (2.5th/97.5th for 95%, ``numpy.percentile`` linear interpolation) of the resampled means.
    Same inputs and seed give the same interval.

    Args:
        scores_by_network: network id -> item-level scores in [0, 1].
        n_resamples: number of bootstrap resamples (the paper uses 10,000).
        seed: generator seed (None draws fresh entropy: not reproducible).
        confidence: coverage in (0, 1).

    Returns:
        ``(low, high)`` in [0, 1], ``low <= high``.

    Raises:
        InvalidInputError: bad scores (see :func:`mean_q`), ``n_resamples < 1`` or
            ``confidence`` outside (0, 1).

    Source: SpeakerMem-R1 App. C (95% CI of MeanN: 43 network means, 10,000 resamples).
    """
    if n_resamples < 1:
        raise InvalidInputError(f"n_resamples must be >= 1, got {n_resamples}", field="n_resamples")
    if not 0.0 < confidence < 1.0:
        raise InvalidInputError(f"confidence must be in (0, 1), got {confidence}", field="confidence")
    networks = _network_scores(scores_by_network)
    means = np.array([values.mean() for values in networks.values()], dtype=float)
    rng = np.random.default_rng(seed)
    n = means.size
    resampled = np.empty(n_resamples, dtype=float)
    chunk = max(1, 4_000_000 // n)  # bound the index matrix to ~32 MB
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        resampled[start:stop] = means[idx].mean(axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(resampled, [tail, 100.0 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class SocialMemSummary:
    """SocialMem aggregate scores.

    Attributes:
        mean_q: MeanQ in [0, 1] (questions weighted equally).
        mean_n: MeanN in [0, 1] (networks weighted equally).
        ci_low / ci_high: bootstrap confidence interval of MeanN.
        confidence: coverage of the interval (0.95).
        n_networks / n_questions: counts.
        n_resamples / seed: bootstrap settings.
    """

    mean_q: float
    mean_n: float
    ci_low: float
    ci_high: float
    confidence: float
    n_networks: int
    n_questions: int
    n_resamples: int
    seed: int | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)


def socialmem_summary(
    scores_by_network: Mapping[str, Iterable[float]],
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    confidence: float = 0.95,
) -> SocialMemSummary:
    """MeanQ, MeanN and the bootstrap CI of MeanN in one record.

    Args / Raises: as :func:`bootstrap_mean_n_ci`.

    Source: SpeakerMem-R1 App. C, eq. 12.
    """
    networks = _network_scores(scores_by_network)
    low, high = bootstrap_mean_n_ci(networks, n_resamples=n_resamples, seed=seed, confidence=confidence)
    return SocialMemSummary(
        mean_q=mean_q(networks),
        mean_n=mean_n(networks),
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        n_networks=len(networks),
        n_questions=int(sum(v.size for v in networks.values())),
        n_resamples=n_resamples,
        seed=seed,
    )


# --------------------------------------------------------------------------------------------
# evidence recall@k
# --------------------------------------------------------------------------------------------


def _top_k(ranked_ids: Sequence[str], k: int) -> set[str]:
    if k < 1:
        raise InvalidInputError(f"k must be >= 1, got {k}", field="k")
    top: list[str] = []
    for item in ranked_ids:  # a repeated id does not take a second slot
        if item not in top:
            top.append(item)
            if len(top) == k:
                break
    return set(top)


def _valid_gold(gold_ids: Iterable[str], valid_ids: Collection[str] | None) -> set[str]:
    return {g for g in gold_ids if g and (valid_ids is None or g in valid_ids)}


def recall_at_k(
    ranked_ids: Sequence[str],
    gold_ids: Iterable[str],
    k: int,
    *,
    valid_ids: Collection[str] | None = None,
) -> float | None:
    """Fraction of the gold evidence ids found among the first ``k`` distinct ranked ids.

    Args:
        ranked_ids: retrieved ids, best first (repeats are skipped, they take no slot).
        gold_ids: gold evidence ids (duplicates and empty strings ignored).
        k: cut-off, >= 1.
        valid_ids: when given, gold ids outside it (e.g. ids that name no message) are dropped.

    Returns:
        Recall in [0, 1], or None when the question has no valid gold id (not scored).

    Raises:
        InvalidInputError: ``k < 1``.
    """
    gold = _valid_gold(gold_ids, valid_ids)
    top = _top_k(ranked_ids, k)
    if not gold:
        return None
    return len(gold & top) / len(gold)


EVIDENCE_BUDGETS = (500, 1000, 2000, 5000)
"""Composed-evidence budgets (tokens) of the report's recall-vs-tokens curve."""


def recall_at_budget(
    ranked_ids: Sequence[str],
    gold_ids: Iterable[str],
    costs: Sequence[int],
    fixed: int,
    budget: int,
) -> tuple[float | None, int]:
    """Recall of the longest prefix of ``ranked_ids`` whose composed evidence fits ``budget``.

    Args:
        ranked_ids: retrieved ids, best first.
        gold_ids: gold evidence ids.
        costs: tokens of the excerpt line of each of the first ``len(costs)`` ranked ids (only
            those can be shown).
        fixed: tokens of the rest of the composed evidence (question, memory slice, the
            instructions around them): paid whatever the number of excerpts.
        budget: tokens of the whole composed evidence, >= 0.

    Returns:
        (recall in [0, 1] of the first k ids, or None when no gold id is given; k, the number
        of excerpts that fit: the largest k <= len(costs) with fixed + sum(costs[:k]) <= budget,
        0 when not even the fixed part fits).

    Source: issue 29 item 2 (recall at composed-evidence budgets; SpeakerMem-R1 §5 reports
    9,713 tokens per question with ASK).
    """
    k, used = 0, fixed
    for c in costs:
        if used + c > budget:
            break
        used += c
        k += 1
    gold = _valid_gold(gold_ids, None)
    if not gold:
        return None, k
    return (len(gold & _top_k(ranked_ids, k)) / len(gold) if k else 0.0), k


def hit_at_k(
    ranked_ids: Sequence[str],
    gold_ids: Iterable[str],
    k: int,
    *,
    valid_ids: Collection[str] | None = None,
) -> float | None:
    """1.0 when any valid gold id is among the first ``k`` distinct ranked ids, else 0.0.

    Args / Returns / Raises: as :func:`recall_at_k` (None when no valid gold id).
    """
    gold = _valid_gold(gold_ids, valid_ids)
    top = _top_k(ranked_ids, k)
    if not gold:
        return None
    return 1.0 if gold & top else 0.0


@dataclass(frozen=True)
class RecallSummary:
    """Mean evidence recall over questions.

    Attributes:
        k: cut-off.
        recall: mean recall@k over scored questions, in [0, 1] (0.0 when none is scored).
        hit: mean hit@k over scored questions, in [0, 1].
        n_scored: questions with at least one valid gold id.
        n_skipped: questions without one (left out of both means).
    """

    k: int
    recall: float
    hit: float
    n_scored: int
    n_skipped: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)


def mean_recall_at_k(
    runs: Iterable[tuple[Sequence[str], Iterable[str]]],
    k: int,
    *,
    valid_ids: Collection[str] | None = None,
) -> RecallSummary:
    """Mean recall@k and hit@k over questions that have a valid gold id.

    Args:
        runs: ``(ranked_ids, gold_ids)`` per question.
        k: cut-off, >= 1.
        valid_ids: as in :func:`recall_at_k`, applied to every question.

    Raises:
        InvalidInputError: ``k < 1``.
    """
    if k < 1:
        raise InvalidInputError(f"k must be >= 1, got {k}", field="k")
    recalls: list[float] = []
    hits: list[float] = []
    skipped = 0
    for ranked, gold in runs:
        gold_set = _valid_gold(gold, valid_ids)
        recall = recall_at_k(ranked, gold_set, k)
        if recall is None:
            skipped += 1
            continue
        recalls.append(recall)
        hits.append(hit_at_k(ranked, gold_set, k) or 0.0)
    n = len(recalls)
    return RecallSummary(
        k=k,
        recall=sum(recalls) / n if n else 0.0,
        hit=sum(hits) / n if n else 0.0,
        n_scored=n,
        n_skipped=skipped,
    )
