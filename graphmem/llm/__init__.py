"""Language models: the OpenAI-compatible client, token usage, and stage timing.

- :mod:`graphmem.llm.client`: :class:`ChatModel` (chat completions with retries and defensive
  JSON parsing), :class:`LLMOutputError`, :func:`extract_json`, and the factories
  :func:`writer_model`, :func:`answer_model`, :func:`judge_model` (None when no endpoint is set).
- :mod:`graphmem.llm.usage`: :class:`Usage` per call, :class:`StageTotals`, :func:`sum_usage`
  (the one sum), :class:`TokenLedger`, :func:`estimate_tokens`.
- :mod:`graphmem.llm.timing`: :class:`Stopwatch`.

Every name stays importable from ``graphmem.llm``.
"""

from graphmem.llm.client import (
    PLACEHOLDER_API_KEY,
    TRANSIENT_STATUSES,
    ChatModel,
    LLMOutputError,
    Message,
    answer_model,
    extract_json,
    judge_model,
    writer_model,
)
from graphmem.llm.timing import Stopwatch
from graphmem.llm.usage import StageTotals, TokenLedger, Usage, estimate_tokens, sum_usage

__all__ = [
    "PLACEHOLDER_API_KEY",
    "TRANSIENT_STATUSES",
    "ChatModel",
    "LLMOutputError",
    "Message",
    "StageTotals",
    "Stopwatch",
    "TokenLedger",
    "Usage",
    "answer_model",
    "estimate_tokens",
    "extract_json",
    "judge_model",
    "sum_usage",
    "writer_model",
]
