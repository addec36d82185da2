"""The systems under evaluation behind one interface: graphmem (with ablations) and the baselines.

Every system turns (unit, question text) into a :class:`SystemOutput`: the answer (None when no
answer model is configured), the evidence message ids in rank order, token usage per stage and
wall times. The answer model is the same for every system, and so is the judge (the runner's).

graphmem (``speakermem``) runs :func:`graphmem.query.ask` unchanged. The ablations of §5.3 /
Fig. 4 / Table 22 run the same steps (:func:`graphmem.query.project.project`,
:func:`graphmem.query.system1.run_system1`, :func:`graphmem.query.system2.run_system2`,
:func:`graphmem.query.compose.compose`, :func:`graphmem.query.compose.answer`) with one path
taken away:

- ``s1`` (w/o S1): no verbatim track - no System 1 excerpts, and no raw fallback in S2 rows.
- ``s2`` (w/o S2): no derived track - the memory slice has no rows.
- ``s2-group`` (w/o S2-group): the GROUP layers (Interaction, Insight) are removed: the GROUP
  row and every group-owned cell are dropped from the slice.
- ``s2-person`` (w/o S2-person): the PERSON layers (Core, Profile) are removed: person rows
  and person-owned cells are dropped from the slice.

The S2 ablations filter the slice after retrieval; per-row budgets are per owner, so the kept
rows are the ones the full system shows (a person row's source cell about GROUP is the one
place where a dropped group cell could have let another source cell in).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast

import numpy as np

from graphmem.core.config import Settings
from graphmem.store.db import Store
from graphmem.core.embed import Embedder
from graphmem.core.errors import InvalidInputError
from graphmem.eval.baselines import (
    BM25Retriever,
    EmbedRetriever,
    answer_from_messages,
    answer_prompt,
    full_context_prompt,
)
from graphmem.eval.benchmarks import Unit
from graphmem.llm import ChatModel, Stopwatch, Usage
from graphmem.query import ask
from graphmem.query.pipeline import budgets_from
from graphmem.query.types import Ablation
from graphmem.recall.cache import GroupCache
from graphmem.recall.recipe import SPEAKERMEM_POOL, RecallRecipe
from graphmem.runtime import Runtime

SYSTEMS: tuple[str, ...] = ("speakermem", "bm25", "embed", "full-context")
"""Systems ``graphmem eval run`` evaluates (the ``--system`` choices)."""

ABLATIONS: tuple[str, ...] = ("s1", "s2", "s2-group", "s2-person")
"""Ablations of graphmem (the ``--ablate`` choices; paper Fig. 4 / Table 22 row names)."""


@dataclass
class SystemOutput:
    """What one system produced for one question.

    Attributes:
        answer: the answer, or None when no answer model is configured / not applicable.
        evidence_ids: message ids behind the evidence, best first (graphmem: System 1
            excerpts in final order, then raw-fallback and FROM messages of the slice).
        s1_ids: graphmem's System 1 excerpt ids (baselines: the retrieved ids).
        record_ids: derived record ids shown (graphmem only).
        usage: stage -> ``{"calls", "prompt_tokens", "completion_tokens"}``.
        timings_s: wall seconds per step (``retrieve``, ``answer``, and graphmem's stages).
        note: remarks (no answerer, degraded stages, not applicable).
        applicable: False when the system cannot run on this unit (full context too long).
        context_tokens: estimated prompt size for full context (0 otherwise).
        evidence_tokens: graphmem's composed evidence per part (``verbatim``, ``structured``,
            ``question``, ``total``; :data:`graphmem.core.tokens.TOKENIZER`), with or without a model.
        evidence_costs: graphmem: tokens of the excerpt line of each of the first
            ``len(evidence_costs)`` ``evidence_ids`` (those of the recall pool, in order;
            :attr:`graphmem.core.results.AskResult.pool_tokens`): the recall-vs-tokens curve.
    """

    answer: str | None
    evidence_ids: list[str] = field(default_factory=list)
    s1_ids: list[str] = field(default_factory=list)
    record_ids: list[str] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    timings_s: dict[str, float] = field(default_factory=dict)
    note: str = ""
    applicable: bool = True
    context_tokens: int = 0
    evidence_tokens: dict[str, int] = field(default_factory=dict)
    evidence_costs: list[int] = field(default_factory=list)


class EvalSystem(Protocol):
    """A system the runner can evaluate."""

    name: str

    def answer(self, unit: Unit, question: str) -> SystemOutput:
        """Retrieve evidence for ``question`` in ``unit`` and answer it (when a model is set)."""
        ...


def _usage_dict(usages: list[Usage]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for u in usages:
        s = out.setdefault(u.stage, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        s["calls"] += 1
        s["prompt_tokens"] += u.prompt_tokens
        s["completion_tokens"] += u.completion_tokens
    return out


NO_ANSWERER = "no answer model is set (GRAPHMEM_LLM_BASE_URL and GRAPHMEM_LLM_MODEL): retrieval only"


class LockedEmbedder(Embedder):
    """The caller's embedder behind a lock (sentence-transformers encoding is not thread-safe)."""

    def __init__(self, inner: Embedder) -> None:  # nothing is loaded here
        self.inner = inner
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return str(getattr(self.inner, "model_name", ""))

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def encode(self, texts: list[str], show_progress: bool = False) -> np.ndarray:
        with self._lock:
            return self.inner.encode(texts, show_progress)


# --------------------------------------------------------------------------------------------
# baselines
# --------------------------------------------------------------------------------------------


class RetrievalBaseline:
    """BM25 or Embed: top-k single messages, then the shared answerer.

    Args:
        kind: ``"bm25"`` or ``"embed"``.
        model: the answer model, or None (retrieval only).
        top_k: messages passed to the answerer (the paper: 10).
        embedder: needed for ``"embed"``.
        cache_dir: where Embed keeps message matrices (None = no cache).
        max_tokens: cap on the answer.
    """

    def __init__(
        self, kind: str, *, model: ChatModel | None, top_k: int = 10, embedder: Embedder | None = None,
        cache_dir: Path | None = None, max_tokens: int = 512,
    ) -> None:
        if kind not in ("bm25", "embed"):
            raise InvalidInputError(f"unknown retrieval baseline {kind!r}", field="system")
        if kind == "embed" and embedder is None:
            raise InvalidInputError("the embed baseline needs an embedder", field="embedder")
        if top_k < 1:
            raise InvalidInputError("top-k must be at least 1", field="s1_k")
        self.name = kind
        self.model = model
        self.top_k = top_k
        self.embedder = embedder
        self.cache_dir = cache_dir
        self.max_tokens = max_tokens
        self._index: dict[str, BM25Retriever | EmbedRetriever] = {}
        self._lock = threading.Lock()

    def retriever(self, unit: Unit) -> BM25Retriever | EmbedRetriever:
        """The unit's index, built on first use (once, also under concurrency)."""
        with self._lock:
            r = self._index.get(unit.unit_id)
            if r is None:
                msgs = unit.conversation.messages
                if self.name == "bm25":
                    r = BM25Retriever(msgs)
                else:
                    assert self.embedder is not None  # __init__ refuses "embed" without one
                    r = EmbedRetriever(msgs, self.embedder, self.cache_dir)
                self._index[unit.unit_id] = r
            return r

    def answer(self, unit: Unit, question: str) -> SystemOutput:
        watch = Stopwatch()
        # ranked as deep as graphmem's recall pool so recall@40 compares like with like; the
        # answerer still gets only the top-k, as the paper runs the baseline
        ranked = self.retriever(unit).rank(question, max(self.top_k, POOL_DEPTH))
        hits = ranked[: self.top_k]
        out = SystemOutput(answer=None, evidence_ids=[m.id for m in ranked], s1_ids=[m.id for m in hits])
        out.timings_s["retrieve"] = watch.elapsed_s
        if self.model is None:
            out.note = NO_ANSWERER
            return out
        watch = Stopwatch()
        text, usage = answer_from_messages(self.model, question, hits, max_tokens=self.max_tokens)
        out.timings_s["answer"] = watch.elapsed_s
        out.answer, out.usage = text, _usage_dict([usage])
        return out


POOL_DEPTH = 40
"""How deep the baselines rank for recall@k (graphmem's recall pool n, App. A)."""


class FullContext:
    """The whole conversation as context, when it fits the window.

    Args:
        model: the answer model, or None.
        window_tokens: the configured context window (prompt estimate must be at most this).
        max_tokens: cap on the answer.
    """

    name = "full-context"

    def __init__(self, *, model: ChatModel | None, window_tokens: int, max_tokens: int = 512) -> None:
        self.model = model
        self.window_tokens = window_tokens
        self.max_tokens = max_tokens

    def answer(self, unit: Unit, question: str) -> SystemOutput:
        messages = list(unit.conversation.messages)
        prompt, n_tokens = full_context_prompt(question, messages)
        out = SystemOutput(answer=None, context_tokens=n_tokens)
        if n_tokens + self.max_tokens > self.window_tokens:
            out.applicable = False
            out.note = (f"not applicable: the conversation needs ~{n_tokens:,} prompt tokens, over the "
                        f"{self.window_tokens:,}-token window (GRAPHMEM_EVAL_FULL_CONTEXT_WINDOW_TOKENS)")
            return out
        if self.model is None:
            out.note = NO_ANSWERER
            return out
        watch = Stopwatch()
        text, usage = answer_prompt(self.model, prompt, max_tokens=self.max_tokens)  # built once above
        out.timings_s["answer"] = watch.elapsed_s
        out.answer, out.usage = text, _usage_dict([usage])
        return out


# --------------------------------------------------------------------------------------------
# graphmem
# --------------------------------------------------------------------------------------------


class SpeakerMem:
    """graphmem's full pipeline, or one of its ablations.

    Args:
        store: open store (units ingested, derived when a Writer ran).
        embedder: the embedder the vectors were built with.
        model: the answer model, or None (deterministic Project fallback, retrieval only).
        settings: budgets and constants.
        ask_enabled: False = ``--no-ask`` (no Sufficiency/ASK).
        s1_k / s2_k: budget overrides (None = settings).
        recall_n: System 1 recall pool size override (App. H sets it equal to S1 top-k).
        ablate: one of :data:`ABLATIONS`, or None.
        recipe: the recall pool's recipe (default the product's; a lab variant for an
            ablation: :func:`graphmem.recall.recipe.named_recipe`).
    """

    name = "speakermem"

    def __init__(
        self, store: Store, embedder: Embedder, *, model: ChatModel | None, settings: Settings,
        ask_enabled: bool = True, s1_k: int | None = None, s2_k: int | None = None,
        recall_n: int | None = None, ablate: str | None = None, recipe: RecallRecipe = SPEAKERMEM_POOL,
    ) -> None:
        if ablate is not None and ablate not in ABLATIONS:
            raise InvalidInputError(f"unknown ablation {ablate!r}; expected one of {', '.join(ABLATIONS)}", field="ablate")
        self.store = store
        self.embedder = embedder
        self.model = model
        update: dict[str, object] = {}
        if recall_n is not None:
            update["s1_recall_n"] = recall_n
        if ablate == "s1":
            update["s2_fallback_k"] = 0  # the raw fallback is verbatim-track evidence
        self.settings = settings.model_copy(update=update) if update else settings
        self.ask_enabled = ask_enabled
        self.s1_k = s1_k
        self.s2_k = s2_k
        self.ablate = cast("Ablation | None", ablate)  # checked against ABLATIONS above
        self.budgets = budgets_from(self.settings, ask_enabled=ask_enabled, s1_k=s1_k, s2_k=s2_k)
        # the caller owns store and embedder: the Runtime is never closed here; its GroupCache
        # is the run's recall cache (no I/O here)
        self.runtime = Runtime(self.settings, store=store, embedder=embedder, answer=model,
                               cache=GroupCache(self.settings.vector_cache_mb), recipe=recipe)

    def answer(self, unit: Unit, question: str) -> SystemOutput:
        watch = Stopwatch()
        result = ask(self.runtime, unit.group_id, question, budgets=self.budgets, ablate=self.ablate)
        wall = watch.elapsed_s
        s1_ids = [e.id for e in result.excerpts]
        # the final excerpts first, then the rest of the recall pool Select would rank (recall@40
        # is pool recall), then the other messages behind the composed evidence
        evidence = list(dict.fromkeys([*s1_ids, *result.pool_ids, *result.message_ids]))
        usage = {
            stage: {"calls": u.calls, "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens}
            for stage, u in result.usage.items()
        }
        timings = dict(result.timings_s)
        timings["answer"] = timings.get("answer", 0.0)
        timings["retrieve"] = max(0.0, wall - timings["answer"])
        cost = dict(zip(result.pool_ids, result.pool_tokens))
        costs: list[int] = []
        for mid in evidence:  # the leading ids whose excerpt line is known (the pool's)
            if mid not in cost:
                break
            costs.append(cost[mid])
        return SystemOutput(
            answer=result.answer, evidence_ids=evidence, s1_ids=s1_ids, record_ids=list(result.record_ids),
            usage=usage, timings_s=timings, note=result.note, evidence_tokens=dict(result.evidence_tokens),
            evidence_costs=costs,
        )

