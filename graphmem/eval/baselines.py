"""The paper's baselines: BM25 and Embed over single messages (top-10), and full context.

As SpeakerMem-R1 runs them (§5.1, App. F.5; SpeakerMemR1 ``run_baseline.py``): one message is
one document and only its text is indexed; speaker and time are shown to the answerer but not
indexed.

- BM25: ``rank_bm25.BM25Okapi`` (k1 = 1.5, b = 0.75) over lower-cased ``[A-Za-z0-9_]+`` tokens,
  no stemming, no stop words; ties keep conversation order.
- Embed: all-MiniLM-L6-v2 through :mod:`graphmem.core.embed` (L2-normalised vectors, cosine = dot
  product) over the message text; the message matrix is cached on disk per model and unit.
- Full context: the whole conversation in order when the answer prompt fits the configured
  window (``eval_full_context_window_tokens``, counted at ~4 characters per token), else the
  question is marked "not applicable" (the paper runs full context only where it fits).

The retrieved messages are numbered and tagged like graphmem's excerpts
(:func:`graphmem.query.compose.excerpt_line`) and answered with
:data:`graphmem.eval.prompts.BASELINE_ANSWER_SYSTEM`.
"""

from __future__ import annotations

import hashlib
import re
import threading
from pathlib import Path

import numpy as np

from graphmem.core.embed import Embedder
from graphmem.eval import prompts
from graphmem.llm import ChatModel, Usage, estimate_tokens
from graphmem.query.compose import excerpt_line
from graphmem.query.types import Excerpt
from graphmem.core.text import strip_think
from graphmem.core.model import MessageRecord

__all__ = [
    "BM25Retriever",
    "EmbedRetriever",
    "answer_from_messages",
    "bm25_tokens",
    "full_context_prompt",
    "messages_text",
]

_TOKEN = re.compile(r"[A-Za-z0-9_]+")


def bm25_tokens(text: str) -> list[str]:
    """BM25 tokens: lower-cased ``[A-Za-z0-9_]+`` runs (numbers, times and user ids kept)."""
    return [t.lower() for t in _TOKEN.findall(text or "")]


class BM25Retriever:
    """BM25 over a unit's single messages.

    Args:
        messages: the unit's messages (documents), in conversation order.
    """

    def __init__(self, messages: list[MessageRecord]) -> None:
        from rank_bm25 import BM25Okapi

        self.messages = list(messages)
        corpus = [bm25_tokens(m.text) for m in self.messages]
        # BM25Okapi divides by the mean document length: an all-empty corpus gets a dummy token
        self._bm25 = BM25Okapi(corpus if any(corpus) else [["\0"]] * max(1, len(corpus)))

    def rank(self, query: str, k: int) -> list[MessageRecord]:
        """The ``k`` best messages for ``query``, best first (ties: conversation order).

        A query with no tokens returns no message.
        """
        q = bm25_tokens(query)
        if not q or not self.messages:
            return []
        scores = np.asarray(self._bm25.get_scores(q), dtype=float)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.messages[i] for i in order]


class EmbedRetriever:
    """Dense cosine retrieval over a unit's single messages.

    Args:
        messages: the unit's messages, in conversation order.
        embedder: the sentence embedder (L2-normalised output).
        cache_dir: where the message matrix is kept between runs (None = no cache). The file
            name hashes the model name and every message text, so a changed unit is re-encoded.
    """

    def __init__(self, messages: list[MessageRecord], embedder: Embedder, cache_dir: Path | None = None) -> None:
        self.messages = list(messages)
        self.embedder = embedder
        self._lock = threading.Lock()
        texts = [m.text for m in self.messages]
        matrix: np.ndarray | None = None
        path: Path | None = None
        if cache_dir is not None:
            digest = hashlib.sha1(
                "\x1f".join([str(getattr(embedder, "model_name", "")), *texts]).encode("utf-8")
            ).hexdigest()[:20]
            path = Path(cache_dir) / f"embed-{digest}-n{len(texts)}.npy"
            if path.is_file():
                matrix = np.load(path)
        if matrix is None:
            matrix = embedder.encode(texts) if texts else np.zeros((0, 1), dtype=np.float32)
            if path is not None and texts:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp.npy")
                np.save(tmp, matrix)
                tmp.replace(path)
        self.matrix = np.asarray(matrix, dtype=np.float32)

    def rank(self, query: str, k: int) -> list[MessageRecord]:
        """The ``k`` messages most similar to ``query`` (cosine), best first."""
        if not self.messages or not query.strip():
            return []
        with self._lock:
            vec = self.embedder.encode([query])[0]
        scores = self.matrix @ np.asarray(vec, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.messages[i] for i in order]


def _excerpt(m: MessageRecord) -> Excerpt:
    return Excerpt(id=m.id, speaker=m.speaker, session=m.session, turn=m.turn, ts=m.ts, channel=m.channel, text=m.text)


def messages_text(messages: list[MessageRecord]) -> str:
    """Numbered passages, one a line: ``1. (Mei @ 2025-10-20T18:38:00, msg t4) text``."""
    if not messages:
        return "(none)"
    return "\n".join(f"{i}. {excerpt_line(_excerpt(m))}" for i, m in enumerate(messages, start=1))


def _prompt(question: str, messages: list[MessageRecord]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": prompts.BASELINE_ANSWER_SYSTEM},
        {"role": "user", "content": prompts.BASELINE_ANSWER_USER.format(
            question=question, passages=messages_text(messages))},
    ]


def full_context_prompt(question: str, messages: list[MessageRecord]) -> tuple[list[dict[str, str]], int]:
    """The full-context answer prompt and its estimated size in tokens (~4 characters each)."""
    prompt = _prompt(question, messages)
    return prompt, estimate_tokens("\n".join(m["content"] for m in prompt))


def answer_from_messages(
    model: ChatModel, question: str, messages: list[MessageRecord], *, max_tokens: int = 512
) -> tuple[str, Usage]:
    """Answer ``question`` from the given messages (stage ``answer``).

    Returns:
        (answer text without any ``<think>`` block, usage).

    Raises:
        LLMError: the endpoint failed after retries.
    """
    return answer_prompt(model, _prompt(question, messages), max_tokens=max_tokens)


def answer_prompt(model: ChatModel, prompt: list[dict[str, str]], *, max_tokens: int = 512) -> tuple[str, Usage]:
    """Send an already built answer prompt (stage ``answer``); (text without ``<think>``, usage)."""
    text, usage = model.complete_text(prompt, stage="answer", max_tokens=max_tokens)
    return strip_think(text), usage
