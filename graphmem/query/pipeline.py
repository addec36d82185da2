"""``ask``: Anchor-Separate-Resolve-Compose over both tracks, then the answerer.

Order of work (SpeakerMem-R1 §3.3, App. A "Execution order", B.3):
Project (model or deterministic fallback) -> System 1 path (recall, Select, Expand,
Sufficiency/ASK, top-k) -> System 2 path (rows, per-row retrieval, head/full/as-of, raw
fallback, explicit empty rows) -> Compose -> Answer. The two paths use independent budgets
and share only Project's output, so System 2 runs in a worker thread beside System 1 (an ask
waits for the longer path, not for both; the result is the same).

Without an answer model the pipeline still runs Project (fallback) and both paths and returns
the composed evidence with ``answer=None``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from graphmem.verbatim.space import check_space
from graphmem.core import limits
from graphmem.core.language import mismatch_note
from graphmem.core.config import Settings
from graphmem.runtime import Runtime
from graphmem.store.db import Store
from graphmem.core.embed import Embedder
from graphmem.core.errors import InvalidInputError, NotFoundError, no_group
from graphmem.llm import ChatModel, Usage
from graphmem.llm.timing import Stopwatch
from graphmem.llm.usage import usage_by_stage
from graphmem.query.compose import answer as run_answer
from graphmem.query.compose import compose_evidence, evidence_tokens, excerpt_tokens
from graphmem.query.people import read_roster
from graphmem.query.project import project
from graphmem.query.system1 import System1Result, run_system1
from graphmem.query.system2 import System2Result, ablate_rows, run_system2
from graphmem.query.translate import rewrite_question
from graphmem.query.types import Ablation, AskResult, Budgets, StageUsage, Tense
from graphmem.verbatim.roster import Roster, RosterMember
from graphmem.recall.search import group_context
from graphmem.core.times import parse_as_of, to_instant  # noqa: F401  (parse_as_of re-exported)

NO_MODEL_NOTE = (
    "no answer model is set (GRAPHMEM_LLM_BASE_URL and GRAPHMEM_LLM_MODEL); Project used its "
    "deterministic fallback and the composed evidence is shown instead of an answer"
)


def budgets_from(
    settings: Settings,
    *,
    ask_enabled: bool | None = None,
    s1_k: int | None = None,
    s2_k: int | None = None,
    source_k: int | None = None,
    recall_n: int | None = None,
) -> Budgets:
    """The budgets of one ask: the settings, with the given overrides.

    Raises:
        InvalidInputError: a budget out of range (:mod:`graphmem.core.limits`: s1_k 1-100, s2_k and
            source_k 0-50, recall n 1-1000; the others >= 0).
    """
    b = Budgets(
        recall_n=settings.s1_recall_n if recall_n is None else recall_n,
        top_k=settings.s1_top_k if s1_k is None else s1_k,
        expand_anchors=settings.s1_expand_anchors,
        expand_window=settings.s1_expand_window,
        ask_enabled=settings.s1_ask_enabled if ask_enabled is None else ask_enabled,
        ask_pool_n=settings.s1_ask_pool_n,
        s2_k=settings.s2_k if s2_k is None else s2_k,
        source_k=settings.s2_source_k if source_k is None else source_k,
        fallback_k=settings.s2_fallback_k,
        min_cosine=settings.s2_min_cosine,
    )
    # One set of limits for the CLI, the API and library callers (graphmem.core.limits).
    limits.check_budget(b.top_k, field="s1_k", low=1, high=limits.MAX_S1_K)
    limits.check_budget(b.s2_k, field="s2_k", low=0, high=limits.MAX_S2_K)
    limits.check_budget(b.source_k, field="source_k", low=0, high=limits.MAX_SOURCE_K)
    limits.check_budget(b.recall_n, field="recall_n", low=1, high=limits.MAX_RECALL_N)
    for name in ("expand_anchors", "expand_window", "ask_pool_n", "fallback_k"):
        if getattr(b, name) < 0:
            raise InvalidInputError(f"{name} must not be negative", field=name)
    if b.expand_window > 5:
        raise InvalidInputError("expand window must be at most 5", field="expand_window")
    return b


class BatchedEmbedder(Embedder):
    """The caller's embedder with a per-ask cache: texts known up front are encoded in one batch.

    ``ask`` prefetches the question and the issue together (one forward pass instead of two);
    System 1 and System 2 then get their vectors from the cache. Unknown texts go to the
    wrapped embedder.
    """

    def __init__(self, inner: Embedder) -> None:  # no super().__init__: nothing is loaded here
        self.inner = inner
        self._cache: dict[str, Any] = {}

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def loaded(self) -> bool:
        return self.inner.loaded

    def warm(self) -> float:
        return self.inner.warm()

    def prefetch(self, texts: list[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            for text, vec in zip(todo, self.inner.encode(todo)):
                self._cache[text] = vec

    def encode(self, texts: list[str], show_progress: bool = False) -> np.ndarray:
        if texts and all(t in self._cache for t in texts):
            return np.stack([self._cache[t] for t in texts])
        return self.inner.encode(texts, show_progress)


def _usage_by_stage(usages: list[Usage]) -> dict[str, StageUsage]:
    return {
        stage: StageUsage(calls=t.calls, prompt_tokens=t.prompt_tokens,
                          completion_tokens=t.completion_tokens, model_s=t.latency_s)
        for stage, t in usage_by_stage(usages).items()
    }


def _roster_at(
    store: Store, group_id: str, max_instant: float | None, members: list[RosterMember] | None = None
) -> list[RosterMember]:
    """The group's roster; as of an instant, only the persons who had spoken by then.

    ``members``: the roster already read (:func:`graphmem.recall.search.group_context`); None reads it.
    """
    roster = members if members is not None else read_roster(store, group_id, counts=False)
    if not roster:  # ask never uses the message counts (read_roster counts=False)
        from graphmem.groups.service import get_group

        get_group(store, group_id)  # "no group 'x'" for an unknown group, as every group read
        raise NotFoundError(f"group {group_id!r} has no roster (nothing ingested)")
    if max_instant is not None:  # as-of: a person who had not spoken yet is not in the answer
        seen = {r["id"] for r in store.read("query/persons_seen_by", group_id=group_id,
                                            max_instant=max_instant)}
        roster = [m for m in roster if m.id in seen]
    return roster


def _compose(question: str, projection: Any, excerpts: list[Any], rows: list[Any], as_of_text: str,
             roster: list[RosterMember], s: Settings) -> Any:
    """The answerer's evidence (:func:`compose_evidence` with the settings' budgets)."""
    return compose_evidence(
        question, projection, excerpts, rows, as_of_text, roster=Roster(roster),
        max_tokens=s.evidence_max_tokens, max_message_chars=s.evidence_message_max_chars,
    )


def answer_system1_only(rt: Runtime, result: AskResult, model: ChatModel) -> tuple[str, Usage]:
    """Answer ``result``'s question again from its System 1 evidence alone.

    The System 1-only arm of the terminal QA gain (SpeakerMem-R1 eq. 8): the projection and
    the System 1 excerpts of an earlier :func:`ask` are composed with no System 2 rows (what
    ``ask(..., ablate="s2")`` composes when System 1 returns the same excerpts) and answered
    by ``model``. System 1 is not run again, so both arms share the very same System 1
    evidence even when Select or Sufficiency would answer differently a second time.

    Args:
        rt: the runtime (its store: the roster is read again for the labels; its settings:
            the evidence budgets).
        result: an :class:`AskResult` of :func:`ask` (with System 1 run).
        model: the answerer.

    Returns:
        ``(answer text, usage)``.

    Raises:
        NotFoundError: the group has no roster. LLMError: the answer call failed.
    """
    s = rt.settings
    _text, max_instant = parse_as_of(result.as_of or None)
    roster = _roster_at(rt.store, result.group_id, max_instant)
    composed = _compose(result.question, result.projection, result.excerpts, [], result.as_of, roster, s)
    return run_answer(model, composed.text, max_tokens=s.answer_max_tokens)


def ask(
    rt: Runtime,
    group_id: str,
    question: str,
    *,
    budgets: Budgets | None = None,
    as_of: str | datetime | None = None,
    tense: Tense | None = None,
    ablate: Ablation | None = None,
) -> AskResult:
    """Answer ``question`` about group ``group_id`` from both memory tracks.

    Args:
        rt: the runtime: its store, its embedder (the one the vectors were built with), its
            group cache, its tracer (span ``graphmem.ask`` with a child per stage), its settings
            (constants and default budgets) and its answer model ``rt.answer``; with no answer
            model, Project falls back to its deterministic rules, System 1 keeps the fused
            order, and no answer is produced (the result carries the composed evidence).
        group_id: the group (memory space).
        question: the question, free text.
        budgets: this ask's budgets (:func:`budgets_from` the settings with overrides, e.g.
            ``budgets_from(rt.settings, s1_k=5, ask_enabled=False)``); None: the settings'.
        as_of: answer from the state that held at this time (ISO-8601; naive = UTC): derived
            chains show the version current then, and messages written later are left out.
        tense: force ``"head"`` or ``"full"`` instead of Project's choice.
        ablate: remove one path (SpeakerMem-R1 §5.3, Fig. 4): ``"s1"`` no verbatim track,
            ``"s2"`` no derived track, ``"s2-group"`` no Interaction/Insight records,
            ``"s2-person"`` no Core/Profile records (rows are filtered after retrieval).

    Returns:
        An :class:`AskResult` with the answer (or None), the projection, the excerpts, the
        memory slice rows, every message and record id behind them, token counts and wall
        times per stage.

    Raises:
        InvalidInputError: empty, too long (> 4000 characters) or not valid Unicode question
            (lone surrogate), bad budget or unparsable ``as_of``.
        NotFoundError: the group has no roster or no messages.
        LLMError: the answer call failed after retries (Project, Select and Sufficiency
            failures degrade to their fallbacks instead and are named in ``note``).
        StoreUnavailableError: Neo4j failed.
    """
    s = rt.settings
    store, model = rt.store, rt.answer
    if not question or not limits.has_visible(question):
        raise InvalidInputError("question is empty (no visible character)", field="question")
    if len(question) > limits.MAX_QUESTION_CHARS:
        raise InvalidInputError(
            f"question is {len(question)} characters long; at most {limits.MAX_QUESTION_CHARS} are allowed",
            field="question",
        )
    limits.check_text(question, field="question")
    if tense is not None and tense not in ("head", "full"):
        raise InvalidInputError("tense must be 'head' or 'full'", field="tense")
    if ablate is not None and ablate not in ("s1", "s2", "s2-group", "s2-person"):
        raise InvalidInputError("ablate must be one of s1, s2, s2-group, s2-person", field="ablate")
    if budgets is None:
        budgets = budgets_from(s)
    as_of_text, max_instant = parse_as_of(as_of)
    notes: list[str] = []
    with rt.tracer.span("graphmem.ask", group_id=group_id):
        stages = rt.stages("graphmem.ask", group_id=group_id)
        with stages.stage("project") as st:
            # one round trip for the group's state (version, vector index ...) and its roster,
            # shared by both paths and both recalls of this ask
            context = group_context(store, group_id)
            if context is None:  # the words every group read uses for an unknown group
                raise no_group(group_id)
            check_space(group_id, context.state.embed_space, rt.embedder)  # vectors of another model: refused
            roster = _roster_at(store, group_id, max_instant, context.members)
            # a question in another language than the group's is searched as its rewrite into
            # the group's language (with an answer model; graphmem.query.translate)
            t = Stopwatch()
            rewrite = rewrite_question(store, group_id, question, model)
            rewrite_s = t.elapsed_s
            st.usages += rewrite.usages
            searched = rewrite.question
            if rewrite.note:
                notes.append(rewrite.note)
            projection, used = project(searched, roster, model)
            st.usages += used
            if tense is not None:
                projection.tense = tense
        if rewrite.usages:
            stages.timings_s["rewrite"] = rewrite_s

        # the question's vectors; on a Runtime's first ask the embedder's model loads here, as
        # the child span graphmem.embedder.load of this stage's span
        with rt.tracer.span("graphmem.ask.embed", group_id=group_id):
            t = Stopwatch()
            embedder = BatchedEmbedder(rt.embedder)
            embedder.prefetch([searched, projection.issue])
            stages.timings_s["embed"] = t.elapsed_s
        if model is not None and projection.method == "fallback":
            notes.append(f"Project fell back to its rules: {projection.fallback_reason}")

        # The two paths share nothing but the projection: System 2 (store reads only) runs in a
        # worker thread while System 1 (store reads and model calls) runs here, so an ask waits
        # for the longer of the two instead of their sum. Each keeps its own budgets and timings.
        def system2() -> tuple[System2Result, float]:
            t2 = Stopwatch()
            out = System2Result()
            if ablate != "s2":
                out = run_system2(
                    store, embedder, group_id, projection, budgets, max_instant=max_instant, rrf_k=s.rrf_k,
                    max_candidates=s.s2_max_candidates,
                    members=None if max_instant is None else [m.id for m in roster], context=context,
                    cache=rt.cache,
                )
            return out, t2.elapsed_s

        s1 = System1Result()
        with stages.stage("system1", timing="_system1") as st1, stages.stage("system2", timing="_system2"):
            s2_future = store.in_background(system2)
            try:
                if ablate != "s1":
                    s1 = run_system1(
                        store, embedder, group_id, searched, budgets, model, max_instant=max_instant,
                        roster=roster, projection=projection, recall=rt.recipe, state=context.state,
                        cache=rt.cache,
                    )
                    st1.usages += s1.usages
            finally:
                s2, s2_s = s2_future.result()  # System 2's error, if any, surfaces here
        timings = stages.timings_s
        for overlapping in ("_system1", "_system2"):  # System 1 reports its own stages, System 2 its thread's time
            timings.pop(overlapping, None)
        timings.update(s1.timings_s)
        timings["s2"] = s2_s
        notes += s1.notes
        if ablate in ("s2-group", "s2-person"):
            s2.rows = ablate_rows(s2.rows, ablate)

        with stages.stage("compose"):
            composed = _compose(question, projection, s1.excerpts, s2.rows, as_of_text, roster, s)
            evidence = composed.text
            tokens = evidence_tokens(composed)
            pool_tokens = excerpt_tokens(question, projection, s1.pool, Roster(roster), s.evidence_message_max_chars)
            if composed.clipped:
                notes.append(f"{len(composed.clipped)} long message(s) clipped around the matching passage "
                             f"(msg {', '.join(composed.clipped)})")
            if composed.cut:
                notes.append(f"evidence cut to fit {s.evidence_max_tokens} tokens: {'; '.join(composed.cut)}")
            language = "" if rewrite.rewritten or rewrite.note else mismatch_note(question, [e.text for e in s1.excerpts])
            if language:  # the embedder is English-only: say that other-language evidence may be missed
                notes.append(language)
            message_ids: dict[str, None] = {}
            record_ids: dict[str, None] = {}
            for e in s1.excerpts:
                message_ids[e.id] = None
            for row in s2.rows:
                for e in row.raw:
                    message_ids[e.id] = None
                for c in row.cells:
                    for v in [*c.history, c.current]:
                        record_ids[v.id] = None
                        for mid in v.from_ids:
                            message_ids[mid] = None

        text: str | None = None
        if model is not None:
            with stages.stage("answer") as st:
                text, usage = run_answer(model, evidence, max_tokens=s.answer_max_tokens)
                st.usages.append(usage)
        else:
            notes.insert(0, NO_MODEL_NOTE)
        usages = stages.usages

    return AskResult(
        group_id=group_id,
        question=question,
        search_question=searched if rewrite.rewritten else "",
        answer=text,
        note="; ".join(notes),
        projection=projection,
        excerpts=s1.excerpts,
        rows=s2.rows,
        ask_query=s1.ask_query,
        evidence=evidence,
        evidence_tokens=tokens,
        message_ids=list(message_ids),
        record_ids=list(record_ids),
        pool_ids=s1.pool_ids,
        pool_tokens=pool_tokens,
        as_of=as_of_text,
        budgets=budgets,
        usage=_usage_by_stage(usages),
        timings_s=timings,
        s2_timings_s=s2.timings_s,
        model=model.model if model is not None else "",
    )
