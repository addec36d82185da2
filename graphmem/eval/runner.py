"""Benchmark runs: one system over one benchmark, per-question records, resumable.

A run lives in a folder (RUN_DIR):

- ``run.json``: the run's configuration (:class:`RunConfig`) and, after each invocation, the
  units' ingest/derive state and the outcome counts.
- ``records.jsonl``: one :class:`QuestionRecord` per finished question, appended as questions
  finish (any order under concurrency). A question whose id is already there is skipped, so an
  interrupted run continues where it stopped; a different configuration in the same folder is
  refused (use a new folder).
- ``errors.jsonl``: questions that failed (endpoint errors after retries), with the error;
  they are not in ``records.jsonl`` and are tried again by the next invocation.

Order of work (SpeakerMem-R1 §5.1: memory construction, question-conditioned retrieval, answer
generation, judging): for ``speakermem`` each unit is ingested into its own group (idempotent:
a unit already stored writes nothing) and derived by the Writer when one is configured
(resumable: segments already written are not asked again); without a Writer, System 2 holds
whatever an earlier derive wrote, and the run says so. The baselines read the benchmark files
directly and need no database. Then each question is answered, judged (binary judge; SocialMem
rubric) and scored (token-F1, LoCoMo official F1, evidence recall@k). Without an answer model
every system still retrieves, and records evidence ids and recall.

Size (over 500 lines on purpose): one resumable run loop (units, per-unit ingest and derive,
concurrent questions, judging, records, run config); the systems
(:mod:`graphmem.eval.systems`) and the reports (:mod:`graphmem.eval.report`) are apart.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from graphmem.core.config import Settings
from graphmem.store.db import Store
from graphmem.core.embed import Embedder, space_of
from graphmem.core.errors import GraphMemError, InvalidInputError, LLMError
from graphmem.eval.benchmarks import (
    BENCHES,
    BenchData,
    Unit,
    answer_format,
    category_of,
    load_bench,
    question_text,
    recall_scored,
)
from graphmem.eval.judge import judge_answer, rubric_score
from graphmem.eval.metrics import hit_at_k, locomo_official_f1, recall_at_k, token_f1
from graphmem.eval.systems import (
    ABLATIONS,
    SYSTEMS,
    EvalSystem,
    FullContext,
    LockedEmbedder,
    RetrievalBaseline,
    SpeakerMem,
)
from graphmem.llm import ChatModel, Stopwatch
from graphmem.core.times import now_iso
from graphmem.core.model import Question
from graphmem.recall.recipe import named_recipe

logger = logging.getLogger(__name__)

RUN_FILE = "run.json"
RECORDS_FILE = "records.jsonl"
ERRORS_FILE = "errors.jsonl"

#: Configuration fields that must be equal for a folder to be resumed.
IDENTITY_FIELDS = (
    "bench", "system", "ablate", "recipe", "recipe_settings", "embed_model", "ask_enabled", "s1_k", "s2_k",
    "recall_n", "top_k", "group_prefix", "answer_model", "judge_model",
)


def _now() -> str:
    return now_iso()


class RunConfig(BaseModel):
    """The configuration of one run (``run.json``).

    Attributes:
        bench / system / ablate: what is evaluated (ablate None = the full system).
        recipe: graphmem's recall recipe by name (:data:`graphmem.recall.recipe.RECIPE_VARIANTS`;
            None = the product's, ``speakermem``).
        recipe_settings: every field of that recipe (speakermem; ``{}`` otherwise): a name stays
            when the product's recipe changes, so a folder written by the recipe before a change
            is not resumed as if it were this one's.
        embed_model: the embedder's model (systems that embed; "" otherwise), for the same reason.
        data / questions: input paths as given.
        ask_enabled: False for ``--no-ask``.
        s1_k / s2_k / recall_n: graphmem budgets (None = the settings' defaults, recorded as
            resolved values in ``budgets``).
        top_k: messages the BM25 / Embed baselines pass on.
        group_prefix: namespace in front of every unit's group id.
        units: unit filter (None = all); limit: questions cap (None = all).
        answer_model / judge_model / writer_model: model names ("" = not configured).
        budgets: the resolved graphmem budgets (for the report).
        created: when the folder was first used (UTC, ISO-8601).
    """

    bench: str
    system: str
    ablate: str | None = None
    recipe: str | None = None
    recipe_settings: dict[str, Any] = Field(default_factory=dict)
    embed_model: str = ""
    data: str
    questions: str | None = None
    ask_enabled: bool = True
    s1_k: int | None = None
    s2_k: int | None = None
    recall_n: int | None = None
    top_k: int = 10
    group_prefix: str = ""
    units: list[str] | None = None
    limit: int | None = None
    answer_model: str = ""
    judge_model: str = ""
    writer_model: str = ""
    budgets: dict[str, Any] = Field(default_factory=dict)
    created: str = ""

    @property
    def label(self) -> str:
        """Short name of the run: ``speakermem``, ``speakermem (no ASK)``, ``speakermem w/o S2``, ``bm25``."""
        name = self.system
        if self.system == "speakermem":
            if self.ablate:
                name += " w/o " + {"s1": "S1", "s2": "S2", "s2-group": "S2-group", "s2-person": "S2-person"}[self.ablate]
            if self.recipe and self.recipe != "speakermem":
                name += f" [recipe {self.recipe}]"
            if not self.ask_enabled:
                name += " (no ASK)"
            if self.s1_k is not None or self.s2_k is not None:
                name += f" [S1 k={self.budgets.get('top_k', self.s1_k)}, S2 k={self.budgets.get('s2_k', self.s2_k)}]"
        elif self.system in ("bm25", "embed") and self.top_k != 10:
            name += f" [top-{self.top_k}]"
        return name


class QuestionRecord(BaseModel):
    """One finished question (a line of ``records.jsonl``).

    Attributes:
        id / unit / group_id: question id, natural unit id, store group id.
        bench / system / ablate: the run.
        category: the reporting category (:func:`graphmem.eval.benchmarks.category_of`).
        format: multiple_choice / open_ended / long_form / short_answer / open.
        question: the text the system got (options, asker included); gold: the judged gold.
        gold_raw: the file's answer (LoCoMo official F1 scores against it).
        answer: the system's answer (None: no answer model, or not applicable).
        applicable: False when the system cannot run on this unit (full context too long).
        evidence_ids: evidence message ids, best first; s1_ids: graphmem's System 1 excerpts.
        record_ids: derived records shown (graphmem).
        gold_evidence: valid gold evidence ids; recall_scored: counts in recall@k.
        recall / hit: ``{"k": value}`` for each cut-off (None when not scored).
        verdict: the binary judge (None: not judged or no ``Final:`` line; see ``judge_text``).
        token_f1: set-based token-F1 in [0, 1] (App. C eq. 11); None without an answer.
        locomo_f1: LoCoMo official F1 in [0, 1] (LoCoMo only).
        rubric_score / rubric_method / rubric_rationale / rubric_error: SocialMem item score.
        evidence_tokens: tokens of the composed evidence per part (graphmem;
            :data:`graphmem.core.tokens.TOKENIZER`), also when no model runs.
        evidence_costs: tokens of the excerpt line of each leading evidence id (graphmem's
            recall pool, in order): the report's recall at composed-evidence budgets.
        tokens: stage -> calls / prompt_tokens / completion_tokens (the system's calls);
        judge_tokens: the same for the judge (excluded from App. D totals).
        latency_s: ``retrieve``, ``answer``, ``judge``, ``total`` seconds; timings_s: the
            system's own per-stage seconds.
        note: remarks from the system and the runner.
        extra: benchmark fields kept for reporting (qa_id, difficulty, task_code, ...).
        finished: UTC time the record was written.
    """

    id: str
    unit: str
    group_id: str
    bench: str
    system: str
    ablate: str | None = None
    category: str = ""
    format: str = ""
    question: str
    gold: str
    gold_raw: str = ""
    answer: str | None = None
    applicable: bool = True
    evidence_ids: list[str] = Field(default_factory=list)
    s1_ids: list[str] = Field(default_factory=list)
    record_ids: list[str] = Field(default_factory=list)
    gold_evidence: list[str] = Field(default_factory=list)
    recall_scored: bool = False
    recall: dict[str, float | None] = Field(default_factory=dict)
    hit: dict[str, float | None] = Field(default_factory=dict)
    verdict: bool | None = None
    judge_text: str = ""
    token_f1: float | None = None
    locomo_f1: float | None = None
    rubric_score: float | None = None
    rubric_method: str = ""
    rubric_rationale: str = ""
    rubric_error: str = ""
    evidence_tokens: dict[str, int] = Field(default_factory=dict)
    evidence_costs: list[int] = Field(default_factory=list)
    tokens: dict[str, dict[str, int]] = Field(default_factory=dict)
    judge_tokens: dict[str, dict[str, int]] = Field(default_factory=dict)
    latency_s: dict[str, float] = Field(default_factory=dict)
    timings_s: dict[str, float] = Field(default_factory=dict)
    note: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)
    finished: str = ""


class UnitInfo(BaseModel):
    """State of one unit's group after preparation (``run.json`` ``units``).

    Attributes:
        unit / group_id: natural id and store group.
        messages: messages in the benchmark file; written: written by this invocation.
        embedded_now: stored messages of the group that had no vector (deferred by an earlier
            ``embed="later"`` write) and were embedded by this invocation before scoring.
        segments: Writer segments stored for the group; derived_now: written by this invocation.
        records: derived (System 2) records stored for the group.
        writer_calls / writer_prompt_tokens / writer_completion_tokens: Writer usage summed
            over every stored segment (App. D "ingest in/out"), whenever it was derived.
        note: e.g. "System 2 is empty: no Writer is configured".
    """

    unit: str
    group_id: str
    messages: int = 0
    written: int = 0
    embedded_now: int = 0
    segments: int = 0
    derived_now: int = 0
    records: int = 0
    writer_calls: int = 0
    writer_prompt_tokens: int = 0
    writer_completion_tokens: int = 0
    note: str = ""


@dataclass
class RunOutcome:
    """What one invocation of :func:`run_eval` did.

    Attributes:
        run_dir: the folder.
        total: questions in scope; skipped: already recorded before; done: recorded now;
        failed: questions that raised (in ``errors.jsonl``); not_applicable: recorded with
        ``applicable=False``.
        units: per-unit state; notes: run-level remarks (no answerer, no judge, empty S2).
        wall_s: seconds of this invocation.
    """

    run_dir: Path
    total: int = 0
    skipped: int = 0
    done: int = 0
    failed: int = 0
    not_applicable: int = 0
    units: dict[str, UnitInfo] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0


# --------------------------------------------------------------------------------------------
# run folder
# --------------------------------------------------------------------------------------------


def read_records(run_dir: Path) -> list[QuestionRecord]:
    """Every record of a run folder, in file order (a torn last line is ignored).

    Raises:
        InvalidInputError: a line (other than a torn last one) is not a valid record.
    """
    path = Path(run_dir) / RECORDS_FILE
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[QuestionRecord] = []
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(QuestionRecord.model_validate_json(line))
        except ValueError as e:
            if i == len(lines):  # a write cut short by a crash: that question runs again
                logger.warning("%s: ignoring a torn last line", path)
                continue
            raise InvalidInputError(f"not a question record: {e}", source=str(path), record=f"line {i}") from e
    return out


def read_config(run_dir: Path) -> RunConfig:
    """The run's configuration.

    Raises:
        InvalidInputError: no ``run.json`` in the folder, or it is not valid.
    """
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        raise InvalidInputError(f"no {RUN_FILE} in {run_dir} (not a run folder)", source=str(run_dir))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return RunConfig.model_validate(data["config"])
    except (ValueError, KeyError) as e:
        raise InvalidInputError(f"unreadable run file: {e}", source=str(path)) from e


def read_run_state(run_dir: Path) -> dict[str, Any]:
    """The whole ``run.json`` (``config``, ``units``, ``invocations``), ``{}`` when absent."""
    path = Path(run_dir) / RUN_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


def _identity_value(cfg: RunConfig, name: str) -> object:
    """One identity field of ``cfg`` as resumption compares it: no ``--recipe`` is the product's
    recipe, so a run started with ``--recipe speakermem`` resumes without it and the reverse."""
    value = getattr(cfg, name)
    if name == "recipe" and cfg.system == "speakermem" and value is None:
        return "speakermem"
    return value


def _recipe_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The fields two recipes' settings differ in, ``stage.field`` by name."""
    if not old:
        return "not recorded in the folder (made before runs recorded their recipe)"
    out = []
    for stage in sorted(set(old) | set(new)):
        a, b = old.get(stage) or {}, new.get(stage) or {}
        out += [f"{stage}.{k} {a.get(k)!r} in the folder, {b.get(k)!r} now"
                for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return ", ".join(out)


def _check_identity(old: RunConfig, new: RunConfig, run_dir: Path) -> None:
    diffs = [
        f"recipe_settings: {_recipe_diff(old.recipe_settings, new.recipe_settings)}" if name == "recipe_settings"
        else f"{name}: {getattr(old, name)!r} in the folder, {getattr(new, name)!r} now"
        for name in IDENTITY_FIELDS
        if _identity_value(old, name) != _identity_value(new, name)
    ]
    if diffs:
        raise InvalidInputError(
            f"{run_dir} holds a run with another configuration ({'; '.join(diffs)}); "
            "use a new --out folder to run this one", source=str(run_dir), field="out",
        )


# --------------------------------------------------------------------------------------------
# units: ingest and derive
# --------------------------------------------------------------------------------------------


def prepare_units(
    store: Store,
    embedder: Embedder,
    units: list[Unit],
    *,
    writer: ChatModel | None,
    settings: Settings,
    derive: bool,
    log: Callable[[str], None] = logger.info,
) -> dict[str, UnitInfo]:
    """Ingest each unit into its group (idempotent) and derive System 2 when a Writer is set.

    Args:
        store: open store (schema applied).
        embedder: the message embedder.
        units: the units to prepare.
        writer: the Writer model, or None (nothing is derived; stored segments are used).
        settings: ingest batch size, Writer segmenting and budgets.
        derive: False for systems that read only System 1.
        log: progress messages.

    Returns:
        ``{unit_id: UnitInfo}``.

    Raises:
        InvalidInputError: a unit's messages are invalid (nothing of that unit is written).
        LLMError: the Writer failed (segments written before stay; a re-run resumes).
        StoreUnavailableError: Neo4j failed.
    """
    from graphmem.derived import memory
    from graphmem.verbatim.ingest import ingest_conversations
    from graphmem.recall.search import group_state
    from graphmem.verbatim.vectors import embed_group
    from graphmem.derived.writer import derive_group

    out: dict[str, UnitInfo] = {}
    for unit in units:
        gid = unit.group_id
        summary = ingest_conversations(store, [unit.conversation], embedder, batch_size=settings.write_batch_size)
        info = UnitInfo(unit=unit.unit_id, group_id=gid, messages=len(unit.conversation.messages),
                        written=summary.messages_written)
        if summary.messages_written:
            log(f"{unit.unit_id}: {summary.messages_written} messages ingested into group {gid}")
        # a group stored before with its vectors deferred (embed="later", the first-load
        # importer, an interrupted embed) is scored only once every message has its vector:
        # the ingest above skips stored messages, vectors or not
        if group_state(store, gid).pending:  # one read; embed_group takes the group's lease (a write)
            filled = embed_group(store, embedder, gid, batch_size=max(settings.embed_batch_size, 1000),
                                 exact_max=settings.vector_exact_max)
            info.embedded_now = filled.embedded
            log(f"{unit.unit_id}: {filled.embedded} stored messages of group {gid} had no vector; embedded now")
        if derive and writer is not None:
            d = derive_group(store, gid, model=writer, embedder=embedder, settings=settings)
            info.derived_now = d.segments_written
            if d.segments_written:
                log(f"{unit.unit_id}: {d.segments_written} Writer segment(s) derived, "
                    f"{d.records_added} records added, {d.records_updated} updated")
        if derive:
            segments = memory.list_segments(store, gid)
            info.segments = len(segments)
            info.writer_calls = sum(s.calls for s in segments)
            info.writer_prompt_tokens = sum(s.prompt_tokens for s in segments)
            info.writer_completion_tokens = sum(s.completion_tokens for s in segments)
            counts = {r["label"]: r["count"] for r in store.read("stats/count_nodes", group_id=gid)}
            info.records = int(counts.get("Derived", 0))
            if writer is None and not segments:
                info.note = "System 2 is empty: no Writer is configured (GRAPHMEM_WRITER_* / GRAPHMEM_LLM_*)"
        out[unit.unit_id] = info
    return out


# --------------------------------------------------------------------------------------------
# one question
# --------------------------------------------------------------------------------------------


def _ks(settings: Settings) -> list[int]:
    try:
        ks = sorted({int(x) for x in settings.eval_recall_ks.split(",") if x.strip()})
    except ValueError as e:
        raise InvalidInputError(f"eval_recall_ks must be integers: {settings.eval_recall_ks!r}", field="eval_recall_ks") from e
    if not ks or ks[0] < 1:
        raise InvalidInputError("eval_recall_ks needs cut-offs >= 1", field="eval_recall_ks")
    return ks


def _usage(u: Any) -> dict[str, int]:
    return {"calls": 1, "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens}


def evaluate_question(
    bench: str,
    unit: Unit,
    q: Question,
    system: EvalSystem,
    *,
    judge: ChatModel | None,
    settings: Settings,
    ks: list[int],
    ablate: str | None = None,
) -> QuestionRecord:
    """Run one question through a system, the judge and the metrics.

    Raises:
        LLMError: the answer or judge endpoint failed after retries.
        GraphMemError: the system failed (e.g. the group is not ingested).
    """
    total = Stopwatch()
    text, gold = question_text(q)
    out = system.answer(unit, text)
    rec = QuestionRecord(
        id=q.id, unit=unit.unit_id, group_id=unit.group_id, bench=bench, system=system.name, ablate=ablate,
        category=category_of(bench, q), format=answer_format(bench, q), question=text, gold=gold,
        gold_raw=q.answer, answer=out.answer, applicable=out.applicable, evidence_ids=out.evidence_ids,
        s1_ids=out.s1_ids, record_ids=out.record_ids, evidence_tokens=out.evidence_tokens,
        evidence_costs=out.evidence_costs, tokens=out.usage, timings_s=out.timings_s, note=out.note,
        extra={k: v for k, v in q.extra.items() if k in ("qa_id", "difficulty", "task_code", "answer_format")},
    )
    valid = unit.message_ids
    rec.gold_evidence = [e for e in dict.fromkeys(q.evidence_ids) if e in valid]
    rec.recall_scored = recall_scored(bench, q) and bool(rec.gold_evidence) and system.name != "full-context"
    for k in ks:
        rec.recall[str(k)] = recall_at_k(out.evidence_ids, rec.gold_evidence, k) if rec.recall_scored else None
        rec.hit[str(k)] = hit_at_k(out.evidence_ids, rec.gold_evidence, k) if rec.recall_scored else None
    rec.latency_s["retrieve"] = out.timings_s.get("retrieve", 0.0)
    rec.latency_s["answer"] = out.timings_s.get("answer", 0.0)
    notes = [out.note] if out.note else []
    if out.answer is not None:
        rec.token_f1 = token_f1(out.answer, gold)
        if bench == "locomo" and q.category in ("1", "2", "3", "4", "5"):
            rec.locomo_f1 = locomo_official_f1(out.answer, q.answer, int(q.category))
        judging = Stopwatch()
        if judge is not None:
            v = judge_answer(judge, question=text, gold=gold, answer=out.answer, max_tokens=settings.eval_judge_max_tokens)
            rec.verdict, rec.judge_text = v.correct, v.text
            rec.judge_tokens["judge"] = _usage(v.usage)
            if v.correct is None:
                notes.append("judge gave no 'Final: Correct/Incorrect' line")
        else:
            notes.append("no judge model: not judged")
        if bench == "socialmem" and (judge is not None or q.options):
            g = rubric_score(
                judge, question=text, gold=gold, answer=out.answer, category=q.category,
                options=q.options or None, correct_option=q.correct_option,
                max_tokens=settings.eval_rubric_max_tokens,
            )
            rec.rubric_score, rec.rubric_method = g.score, g.method
            rec.rubric_rationale, rec.rubric_error = g.rationale, g.error
            if g.usage is not None:
                rec.judge_tokens["rubric"] = _usage(g.usage)
        rec.latency_s["judge"] = judging.elapsed_s
    rec.latency_s["total"] = total.elapsed_s
    rec.note = "; ".join(dict.fromkeys(n for n in notes if n))
    rec.finished = _now()
    return rec


# --------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------


@dataclass
class RunOptions:
    """What ``graphmem eval run`` was asked to do (see :class:`RunConfig` for the fields)."""

    bench: str
    data: Path
    system: str
    out: Path
    questions: Path | None = None
    ablate: str | None = None
    recipe: str | None = None
    ask_enabled: bool = True
    s1_k: int | None = None
    s2_k: int | None = None
    recall_n: int | None = None
    limit: int | None = None
    units: list[str] | None = None
    concurrency: int = 1
    group_prefix: str = ""


def _validate(opts: RunOptions) -> None:
    if opts.bench not in BENCHES:
        raise InvalidInputError(f"--bench must be one of {', '.join(BENCHES)}", field="bench")
    if opts.system not in SYSTEMS:
        raise InvalidInputError(f"--system must be one of {', '.join(SYSTEMS)}", field="system")
    if opts.ablate is not None and opts.ablate not in ABLATIONS:
        raise InvalidInputError(f"--ablate must be one of {', '.join(ABLATIONS)}", field="ablate")
    if opts.ablate is not None and opts.system != "speakermem":
        raise InvalidInputError("--ablate applies to --system speakermem only", field="ablate")
    if opts.recipe is not None:
        if opts.system != "speakermem":
            raise InvalidInputError("--recipe applies to --system speakermem only", field="recipe")
        named_recipe(opts.recipe)  # RecipeError (an InvalidInputError) for an unknown name
    if opts.concurrency < 1:
        raise InvalidInputError("--concurrency must be at least 1", field="concurrency")
    if opts.limit is not None and opts.limit < 1:
        raise InvalidInputError("--limit must be at least 1", field="limit")
    for name in ("s1_k", "s2_k", "recall_n"):
        v = getattr(opts, name)
        if v is not None and v < (0 if name == "s2_k" else 1):
            raise InvalidInputError(f"--{name.replace('_', '-')} is out of range", field=name)


def _select_questions(data: BenchData, limit: int | None) -> list[tuple[Unit, Question]]:
    pairs = [(u, q) for u in data.units for q in u.questions]
    return pairs[:limit] if limit else pairs


def run_eval(
    opts: RunOptions,
    *,
    settings: Settings,
    store: Store | None,
    embedder: Embedder | None,
    answer: ChatModel | None,
    judge: ChatModel | None,
    writer: ChatModel | None = None,
    log: Callable[[str], None] = logger.info,
    on_record: Callable[[QuestionRecord | None, int, int], None] | None = None,
    system: EvalSystem | None = None,
) -> RunOutcome:
    """Run one system over one benchmark into ``opts.out`` (resumable).

    Args:
        opts: what to run.
        settings: budgets, eval settings.
        store: open store (needed for ``speakermem``; unused by the baselines).
        embedder: the embedder (``speakermem`` and ``embed``).
        answer: the answer model (the same for every system), or None: retrieval only.
        judge: the judge model, or None: answers are not judged (SocialMem multiple-choice
            items are still scored by option matching).
        writer: the Writer, or None: nothing is derived.
        log: progress messages.
        on_record: called after each question with (record or None on failure, finished, total).
        system: use this system instead of building ``opts.system`` (tests, custom systems);
            its ``name`` must equal ``opts.system``.

    Returns:
        A :class:`RunOutcome`.

    Raises:
        InvalidInputError: bad options, unreadable data, or a folder holding another run.
        GraphMemError: preparing the units failed (ingest, Writer, store).
    """
    _validate(opts)
    watch = Stopwatch()
    data = load_bench(opts.bench, opts.data, questions=opts.questions, group_prefix=opts.group_prefix,
                      units=opts.units)
    pairs = _select_questions(data, opts.limit)
    top_k = opts.s1_k if opts.s1_k is not None else settings.eval_baseline_top_k
    space = space_of(embedder) if opts.system in ("speakermem", "embed") else None
    recipe = named_recipe(opts.recipe or "speakermem")  # the run's identity records what it runs
    config = RunConfig(
        bench=opts.bench, system=opts.system, ablate=opts.ablate, recipe=opts.recipe,
        recipe_settings=recipe.model_dump() if opts.system == "speakermem" else {},
        embed_model=space.model if space is not None else "", data=str(opts.data),
        questions=str(opts.questions) if opts.questions else None,
        ask_enabled=opts.ask_enabled, s1_k=opts.s1_k, s2_k=opts.s2_k, recall_n=opts.recall_n, top_k=top_k,
        group_prefix=opts.group_prefix, units=opts.units, limit=opts.limit,
        answer_model=answer.model if answer else "", judge_model=judge.model if judge else "",
        writer_model=writer.model if writer else "", created=_now(),
    )
    run_dir = Path(opts.out)
    run_dir.mkdir(parents=True, exist_ok=True)
    state = read_run_state(run_dir)
    if state:
        old = read_config(run_dir)
        _check_identity(old, config, run_dir)
        config.created = old.created
    done_ids = {r.id for r in read_records(run_dir)}
    todo = [(u, q) for u, q in pairs if q.id not in done_ids]
    outcome = RunOutcome(run_dir=run_dir, total=len(pairs), skipped=len(pairs) - len(todo))
    if data.orphans:
        outcome.notes.append(
            "questions without a conversation left out: "
            + ", ".join(f"{u} ({n})" for u, n in sorted(data.orphans.items()))
        )
    if answer is None:
        outcome.notes.append("no answer model is set (GRAPHMEM_LLM_BASE_URL, GRAPHMEM_LLM_MODEL): "
                             "retrieval only - evidence ids and recall@k are recorded, nothing is answered or judged")
    elif judge is None:
        outcome.notes.append("no judge model is set (GRAPHMEM_JUDGE_* or GRAPHMEM_LLM_*): answers are not judged")

    # the system
    if system is not None:
        if system.name != opts.system:
            raise InvalidInputError(f"the given system is {system.name!r}, not {opts.system!r}", field="system")
    elif opts.system == "speakermem":
        if store is None or embedder is None:
            raise InvalidInputError("--system speakermem needs the store and the embedder", field="system")
        embedder = LockedEmbedder(embedder) if opts.concurrency > 1 else embedder
        sm = SpeakerMem(store, embedder, model=answer, settings=settings, ask_enabled=opts.ask_enabled,
                        s1_k=opts.s1_k, s2_k=opts.s2_k, recall_n=opts.recall_n, ablate=opts.ablate,
                        recipe=recipe)
        system = sm
    elif opts.system in ("bm25", "embed"):
        if opts.system == "embed" and embedder is None:
            raise InvalidInputError("--system embed needs the embedder", field="system")
        system = RetrievalBaseline(
            opts.system, model=answer, top_k=top_k,
            embedder=LockedEmbedder(embedder) if embedder is not None and opts.concurrency > 1 else embedder,
            cache_dir=settings.home / "eval-cache", max_tokens=settings.answer_max_tokens,
        )
    else:
        system = FullContext(model=answer, window_tokens=settings.eval_full_context_window_tokens,
                             max_tokens=settings.answer_max_tokens)

    if isinstance(system, SpeakerMem):
        config.budgets = system.budgets.model_dump()

    # units (graphmem only: the baselines read the files)
    needed = list(dict.fromkeys(u.unit_id for u, _ in pairs))
    units = [data.unit(uid) for uid in needed]
    if opts.system == "speakermem":
        assert store is not None and embedder is not None
        outcome.units = prepare_units(store, embedder, units, writer=writer, settings=settings,
                                      derive=opts.ablate not in ("s2",), log=log)
        empty = [i.unit for i in outcome.units.values() if i.segments == 0 and opts.ablate != "s2"]
        if empty:
            outcome.notes.append(
                f"System 2 is empty for {len(empty)} of {len(units)} unit(s) (no Writer configured and "
                "nothing derived before): graphmem answers from System 1 only"
            )
        elif writer is None and opts.ablate != "s2":
            outcome.notes.append("no Writer configured: System 2 as stored by an earlier derive")
    else:
        outcome.units = {u.unit_id: UnitInfo(unit=u.unit_id, group_id=u.group_id,
                                             messages=len(u.conversation.messages)) for u in units}

    state = {
        "config": config.model_dump(mode="json"),
        "units": {k: v.model_dump() for k, v in outcome.units.items()},
        "invocations": state.get("invocations", []) if state else [],
    }
    _write_json(run_dir / RUN_FILE, state)

    ks = _ks(settings)
    records_path = run_dir / RECORDS_FILE
    errors_path = run_dir / ERRORS_FILE
    lock = threading.Lock()
    finished = 0

    def work(unit: Unit, q: Question) -> QuestionRecord:
        return evaluate_question(opts.bench, unit, q, system, judge=judge, settings=settings, ks=ks,
                                 ablate=opts.ablate)

    def keep(rec: QuestionRecord | None, q: Question, error: BaseException | None) -> None:
        nonlocal finished
        with lock:
            finished += 1
            if rec is not None:
                with records_path.open("a", encoding="utf-8") as f:
                    f.write(rec.model_dump_json() + "\n")
                outcome.done += 1
                outcome.not_applicable += 0 if rec.applicable else 1
            else:
                outcome.failed += 1
                with errors_path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps({"id": q.id, "unit": q.group_id, "error": f"{type(error).__name__}: {error}",
                                        "at": _now()}, ensure_ascii=False) + "\n")
                log(f"{q.id}: failed ({type(error).__name__}: {error}); a re-run tries it again")
        if on_record is not None:
            on_record(rec, finished, len(todo))

    try:
        if opts.concurrency == 1:
            for unit, q in todo:
                try:
                    keep(work(unit, q), q, None)
                except (LLMError, GraphMemError) as e:
                    keep(None, q, e)
        else:
            with ThreadPoolExecutor(max_workers=opts.concurrency) as pool:
                pending: dict[Future[QuestionRecord], Question] = {}
                queue = list(todo)
                try:
                    while queue or pending:
                        while queue and len(pending) < 2 * opts.concurrency:
                            unit, q = queue.pop(0)
                            pending[pool.submit(work, unit, q)] = q
                        finished_now, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                        for fut in finished_now:
                            q = pending.pop(fut)
                            try:
                                keep(fut.result(), q, None)
                            except (LLMError, GraphMemError) as e:
                                keep(None, q, e)
                except BaseException:
                    for fut in pending:
                        fut.cancel()
                    raise
    finally:
        outcome.wall_s = watch.elapsed_s
        state["invocations"].append({
            "at": _now(), "questions": outcome.total, "skipped": outcome.skipped, "done": outcome.done,
            "failed": outcome.failed, "wall_s": round(outcome.wall_s, 3), "notes": outcome.notes,
        })
        _write_json(run_dir / RUN_FILE, state)
    return outcome
