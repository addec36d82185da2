"""Token accounting: one :class:`Usage` per chat completion, sums per stage, a shared ledger.

:func:`sum_usage` is the one place usages are added up; the Writer's per-segment cost, the
ask pipeline's per-stage usage and the evaluation's totals are all read from it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["StageTotals", "TokenLedger", "Usage", "estimate_tokens", "sum_usage", "usage_by_stage"]


@dataclass(frozen=True)
class Usage:
    """Token usage and latency of one chat completion.

    Attributes:
        stage: pipeline stage that made the call (free text, e.g. ``"writer"``, ``"answer"``).
        model: model name sent to the endpoint.
        prompt_tokens: input tokens as reported by the server (or estimated, see ``estimated``).
        completion_tokens: output tokens, likewise.
        latency_s: wall-clock seconds of the whole call, retries and backoff included.
        estimated: True when the server sent no ``usage`` block and the counts are a rough
            estimate (about four characters per token).
        attempts: HTTP requests made for this call (1 when the first one succeeded).
    """

    stage: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    estimated: bool = False
    attempts: int = 1

    @property
    def total_tokens(self) -> int:
        """prompt_tokens + completion_tokens."""
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (includes ``total_tokens``)."""
        return {**asdict(self), "total_tokens": self.total_tokens}


@dataclass(frozen=True)
class StageTotals:
    """Summed usage of several calls (one stage, or all of them).

    Attributes:
        calls: number of calls.
        prompt_tokens / completion_tokens / total_tokens: summed token counts.
        latency_s: summed wall-clock seconds.
        estimated_calls: how many of the calls carry estimated (not server-reported) counts.
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    latency_s: float = 0.0
    estimated_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)


def sum_usage(calls: Sequence[Usage]) -> StageTotals:
    """The one token-usage sum: calls, tokens, seconds and estimated calls over ``calls``."""
    return StageTotals(
        calls=len(calls),
        prompt_tokens=sum(c.prompt_tokens for c in calls),
        completion_tokens=sum(c.completion_tokens for c in calls),
        total_tokens=sum(c.total_tokens for c in calls),
        latency_s=sum(c.latency_s for c in calls),
        estimated_calls=sum(1 for c in calls if c.estimated),
    )


def usage_by_stage(calls: Sequence[Usage]) -> dict[str, StageTotals]:
    """:func:`sum_usage` per stage, keyed by stage name, stages in first-seen order."""
    by_stage: dict[str, list[Usage]] = {}
    for call in calls:
        by_stage.setdefault(call.stage, []).append(call)
    return {stage: sum_usage(stage_calls) for stage, stage_calls in by_stage.items()}


class TokenLedger:
    """Thread-safe record of every chat completion's :class:`Usage`.

    Several :class:`ChatModel` objects may share one ledger (e.g. Writer and answerer of one
    benchmark run); totals are then kept per stage.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Usage] = []

    def record(self, usage: Usage) -> None:
        """Append one call's usage."""
        with self._lock:
            self._calls.append(usage)

    @property
    def calls(self) -> tuple[Usage, ...]:
        """All recorded calls, in recording order."""
        with self._lock:
            return tuple(self._calls)

    def __len__(self) -> int:
        with self._lock:
            return len(self._calls)

    def reset(self) -> None:
        """Forget every recorded call."""
        with self._lock:
            self._calls.clear()

    def totals(self) -> dict[str, StageTotals]:
        """Per-stage sums, keyed by stage name, stages in first-seen order."""
        return usage_by_stage(self.calls)

    def total(self) -> StageTotals:
        """Sums over every recorded call."""
        return sum_usage(self.calls)

    def summary(self) -> dict[str, Any]:
        """JSON-serialisable summary.

        Returns:
            ``{"calls", "prompt_tokens", "completion_tokens", "total_tokens", "latency_s",
            "estimated_calls", "models": [..], "by_stage": {stage: {same keys}}}``.
        """
        calls = self.calls
        return {
            **sum_usage(calls).to_dict(),
            "models": sorted({c.model for c in calls}),
            "by_stage": {stage: totals.to_dict() for stage, totals in self.totals().items()},
        }


def estimate_tokens(text: str) -> int:
    """Rough token count of ``text`` (about four characters per token; 0 for empty text)."""
    return math.ceil(len(text) / 4) if text else 0
