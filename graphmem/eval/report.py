"""Reports of evaluation runs: summaries, a markdown report and PNG plots.

:func:`summarize` turns one run folder into a :class:`RunSummary` (accuracy, token-F1, LoCoMo
official F1, SocialMem MeanQ/MeanN with the network-bootstrap CI, per-category tables, evidence
recall@k, App. D token costs, latency). :func:`write_report` does this for one run folder, or for
every run folder below a parent folder (baselines, ablations, a top-k grid side by side), and
writes ``report.md``, ``summary.json`` and the plots:

- ``categories.png``: per-category accuracy of every run (evidence recall@k when nothing was
  judged), with the authors' published category row beside it, hatched;
- ``recall.png``: evidence recall@k per run;
- ``grid.png``: the S1 top-k x S2 k grid of App. H (Figures 5 and 6) when the runs form one.

Conventions (SpeakerMem-R1 App. C): accuracy counts every answered question, a judge answer
without a ``Final:`` line as not correct (eq. 10); token-F1 is averaged over answered questions
(eq. 11); MeanQ/MeanN average item scores over questions / over networks (eq. 12), an item the
rubric could not score counting 0; the CI is the percentile bootstrap over network means.
Costs follow App. D: ingest in/out (Writer), QA input (every query-time prompt), answer out;
the judge is excluded and shown apart.

Size (over 500 lines on purpose): the sections of one report (report.md, summary.json and
its PNG plots), mostly table text that reads best in order; the numbers come from
:mod:`graphmem.eval.metrics`.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from graphmem.core.errors import InvalidInputError
from graphmem.eval.benchmarks import CATEGORY_ORDER
from graphmem.eval.metrics import (
    EVIDENCE_BUDGETS,
    AccuracySummary,
    SocialMemSummary,
    binary_accuracy,
    recall_at_budget,
    socialmem_summary,
)
from graphmem.eval.published import (
    PUBLISHED_LABEL,
    load_published,
    paper_category_row,
    paper_main_row,
)
from graphmem.eval.runner import RUN_FILE, QuestionRecord, read_config, read_records, read_run_state

__all__ = ["RunSummary", "find_runs", "summarize", "write_report"]


@dataclass
class CategoryRow:
    """One category of one run: counts and means (percentages 0-100, rubric in [0, 1])."""

    category: str
    n: int = 0
    answered: int = 0
    correct: int = 0
    judged: int = 0
    accuracy: float | None = None
    token_f1: float | None = None
    locomo_f1: float | None = None
    rubric: float | None = None
    recall: float | None = None
    recall_n: int = 0


@dataclass
class Costs:
    """App. D token accounting of a run (judge excluded from ``total``).

    ``qa_input``: prompt tokens of every query-time call; ``answer_out``: completion tokens of
    the answer call; ``module_out``: completion tokens of Project/Select/Sufficiency/rerank (not a
    column of App. D; shown apart); ``total`` = ingest in + ingest out + QA input + answer out
    (App. D); ``total_all`` adds ``module_out``; ``per_question`` = ``total`` / questions.
    """

    writer_calls: int = 0
    ingest_in: int = 0
    ingest_out: int = 0
    qa_calls: int = 0
    qa_input: int = 0
    answer_out: int = 0
    module_out: int = 0
    judge_in: int = 0
    judge_out: int = 0
    total: int = 0
    total_all: int = 0
    per_question: float = 0.0
    by_stage: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class RunSummary:
    """Everything the report says about one run (JSON-serialisable via :meth:`to_dict`)."""

    run_dir: str
    label: str
    config: dict[str, Any]
    n: int = 0
    answered: int = 0
    judged: int = 0
    not_applicable: int = 0
    accuracy: AccuracySummary | None = None
    accuracy_non_ad: AccuracySummary | None = None
    token_f1: float | None = None
    locomo_f1: float | None = None
    locomo_f1_non_ad: float | None = None
    socialmem: SocialMemSummary | None = None
    rubric_unscored: int = 0
    categories: list[CategoryRow] = field(default_factory=list)
    formats: list[CategoryRow] = field(default_factory=list)
    recall: dict[str, dict[str, float]] = field(default_factory=dict)
    recall_scored: int = 0
    costs: Costs = field(default_factory=Costs)
    latency_ms: dict[str, float] = field(default_factory=dict)
    evidence_tokens: dict[str, float] = field(default_factory=dict)  # part -> mean, part_p95 -> p95
    token_curve: dict[str, dict[str, float]] = field(default_factory=dict)  # budget -> recall, excerpts, n
    units: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    question_set: str = ""  # sha256 (16 hex) of the sorted question ids: runs compare only when equal

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        d = asdict(self)
        d["accuracy"] = self.accuracy.to_dict() if self.accuracy else None
        d["accuracy_non_ad"] = self.accuracy_non_ad.to_dict() if self.accuracy_non_ad else None
        d["socialmem"] = self.socialmem.to_dict() if self.socialmem else None
        return d


# --------------------------------------------------------------------------------------------
# summaries
# --------------------------------------------------------------------------------------------


def token_curve(records: list[QuestionRecord], budgets: tuple[int, ...] = EVIDENCE_BUDGETS) -> dict[str, dict[str, float]]:
    """Recall at composed-evidence budgets over the recall-scored records that carry excerpt
    costs (graphmem's): budget (tokens, as a string) -> ``recall`` (mean, [0, 1]), ``excerpts``
    (mean number of excerpts that fit) and ``n`` (questions). The fixed part of a question's
    evidence is its composed total minus its verbatim part (:func:`recall_at_budget`); {} when
    no record has costs."""
    sized = [r for r in records if r.recall_scored and r.evidence_costs and r.evidence_tokens]
    out: dict[str, dict[str, float]] = {}
    if not sized:
        return out
    for b in budgets:
        rec, ks = [], []
        for r in sized:
            fixed = int(r.evidence_tokens.get("total", 0)) - int(r.evidence_tokens.get("verbatim", 0))
            value, k = recall_at_budget(r.evidence_ids, r.gold_evidence, r.evidence_costs, fixed, b)
            rec.append(value or 0.0)
            ks.append(k)
        out[str(b)] = {"recall": sum(rec) / len(rec), "excerpts": sum(ks) / len(ks), "n": float(len(sized))}
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _pct(values: list[float]) -> float | None:
    m = _mean(values)
    return None if m is None else 100.0 * m


def _judged(r: QuestionRecord) -> bool:
    return r.answer is not None and r.applicable and bool(r.judge_text)


def _answered(r: QuestionRecord) -> bool:
    return r.answer is not None and r.applicable


def _category_row(name: str, recs: list[QuestionRecord], k: str) -> CategoryRow:
    answered = [r for r in recs if _answered(r)]
    judged = [r for r in answered if _judged(r)]
    rubric = [r for r in answered if r.rubric_method]
    recall = [x for x in (r.recall.get(k) for r in recs if r.recall_scored) if x is not None]
    return CategoryRow(
        category=name, n=len(recs), answered=len(answered), judged=len(judged),
        correct=sum(1 for r in judged if r.verdict is True),
        accuracy=binary_accuracy([r.verdict for r in judged]).accuracy if judged else None,
        token_f1=_pct([r.token_f1 for r in answered if r.token_f1 is not None]),
        locomo_f1=_pct([r.locomo_f1 for r in answered if r.locomo_f1 is not None]),
        rubric=_mean([r.rubric_score or 0.0 for r in rubric]) if rubric else None,
        recall=_pct([float(x) for x in recall]),
        recall_n=len(recall),
    )


def _ordered(bench: str, names: set[str]) -> list[str]:
    order = CATEGORY_ORDER.get(bench, [])
    return [c for c in order if c in names] + sorted(names - set(order))


def _percentile(values: list[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


_S2_EMPTY = "System 2 is empty"


def summarize(run_dir: Path, *, n_resamples: int = 10_000, seed: int | None = 0) -> RunSummary:
    """Summarise one run folder.

    Args:
        run_dir: a folder written by :func:`graphmem.eval.runner.run_eval`.
        n_resamples / seed: the MeanN bootstrap (App. C: 10,000 resamples).

    Returns:
        A :class:`RunSummary`.

    Raises:
        InvalidInputError: not a run folder, or a record line is unreadable.
    """
    config = read_config(run_dir)
    state = read_run_state(run_dir)
    records = read_records(run_dir)
    bench = config.bench
    s = RunSummary(run_dir=str(run_dir), label=config.label, config=config.model_dump(mode="json"),
                   units=state.get("units", {}))
    s.n = len(records)
    s.question_set = hashlib.sha256("\n".join(sorted(r.id for r in records)).encode("utf-8")).hexdigest()[:16]
    answered = [r for r in records if _answered(r)]
    judged = [r for r in answered if _judged(r)]
    s.answered, s.judged = len(answered), len(judged)
    s.not_applicable = sum(1 for r in records if not r.applicable)
    if judged:
        s.accuracy = binary_accuracy([r.verdict for r in judged])
    if answered:
        s.token_f1 = _pct([r.token_f1 or 0.0 for r in answered])
    if bench == "locomo":
        non_ad = [r for r in judged if r.category != "adversarial"]
        if non_ad:
            s.accuracy_non_ad = binary_accuracy([r.verdict for r in non_ad])
        s.locomo_f1 = _pct([r.locomo_f1 for r in answered if r.locomo_f1 is not None])
        s.locomo_f1_non_ad = _pct([r.locomo_f1 for r in answered if r.locomo_f1 is not None and r.category != "adversarial"])
    if bench == "socialmem" and answered and all(r.rubric_method for r in answered):
        by_net: dict[str, list[float]] = defaultdict(list)
        for r in answered:
            by_net[r.unit].append(r.rubric_score if r.rubric_score is not None else 0.0)
        s.rubric_unscored = sum(1 for r in answered if r.rubric_score is None)
        s.socialmem = socialmem_summary(by_net, n_resamples=n_resamples, seed=seed)

    ks = sorted({k for r in records for k in r.recall}, key=int)
    main_k = "10" if "10" in ks else (ks[-1] if ks else "10")
    scored = [r for r in records if r.recall_scored]
    s.recall_scored = len(scored)
    for k in ks:
        rec = [x for x in (r.recall.get(k) for r in scored) if x is not None]
        hit = [x for x in (r.hit.get(k) for r in scored) if x is not None]
        if rec:
            s.recall[k] = {"recall": sum(rec) / len(rec), "hit": sum(hit) / len(hit) if hit else 0.0, "n": len(rec)}

    by_cat: dict[str, list[QuestionRecord]] = defaultdict(list)
    by_fmt: dict[str, list[QuestionRecord]] = defaultdict(list)
    for r in records:
        by_cat[r.category].append(r)
        by_fmt[r.format].append(r)
    s.categories = [_category_row(c, by_cat[c], main_k) for c in _ordered(bench, set(by_cat))]
    s.formats = [_category_row(f, by_fmt[f], main_k) for f in sorted(by_fmt) if f]

    # costs (App. D)
    c = s.costs
    for u in s.units.values():
        c.writer_calls += int(u.get("writer_calls", 0))
        c.ingest_in += int(u.get("writer_prompt_tokens", 0))
        c.ingest_out += int(u.get("writer_completion_tokens", 0))
    for r in records:
        for stage, v in r.tokens.items():
            agg = c.by_stage.setdefault(stage, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
            for key in agg:
                agg[key] += int(v.get(key, 0))
            c.qa_calls += int(v.get("calls", 0))
            c.qa_input += int(v.get("prompt_tokens", 0))
            if stage == "answer":
                c.answer_out += int(v.get("completion_tokens", 0))
            else:
                c.module_out += int(v.get("completion_tokens", 0))
        for v in r.judge_tokens.values():
            c.judge_in += int(v.get("prompt_tokens", 0))
            c.judge_out += int(v.get("completion_tokens", 0))
    c.total = c.ingest_in + c.ingest_out + c.qa_input + c.answer_out
    c.total_all = c.total + c.module_out
    c.per_question = c.total / s.n if s.n else 0.0

    sized = [r.evidence_tokens for r in records if r.evidence_tokens]
    for part in ("verbatim", "structured", "question", "total"):
        values = [float(t.get(part, 0)) for t in sized]
        if values:
            s.evidence_tokens[part] = sum(values) / len(values)
            s.evidence_tokens[f"{part}_p95"] = _percentile(values, 95)

    s.token_curve = token_curve(records)

    totals = [r.latency_s.get("total", 0.0) * 1000 for r in records]
    retrieve = [r.latency_s.get("retrieve", 0.0) * 1000 for r in records]
    if totals:
        s.latency_ms = {
            "total_p50": _percentile(totals, 50), "total_p95": _percentile(totals, 95),
            "retrieve_p50": _percentile(retrieve, 50), "retrieve_p95": _percentile(retrieve, 95),
        }
    by_note: dict[str, list[str]] = defaultdict(list)
    for u in s.units.values():
        if u.get("note"):
            by_note[u["note"]].append(u["unit"])
    # the units' own "System 2 is empty: ..." notes name the units and the cause; the run's
    # count of them ("System 2 is empty for N of M unit(s) ...") would say it a second time
    s2_by_unit = any(note.startswith(_S2_EMPTY) for note in by_note)
    for inv in state.get("invocations", []):
        for note in inv.get("notes", []):
            if note not in s.notes and not (s2_by_unit and note.startswith(_S2_EMPTY)):
                s.notes.append(note)
    for note, names in by_note.items():
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        s.notes.append(f"{note} ({len(names)} unit(s): {shown})")
    if s.not_applicable:
        s.notes.append(f"{s.not_applicable} question(s) not applicable (e.g. full context over the window)")
    unparsed = sum(1 for r in judged if r.verdict is None)
    if unparsed:
        s.notes.append(f"{unparsed} judge answer(s) without a 'Final:' line, counted as not correct")
    if s.rubric_unscored:
        s.notes.append(f"{s.rubric_unscored} rubric answer(s) without a usable score, counted as 0")
    return s


def find_runs(path: Path) -> list[Path]:
    """Run folders at ``path``: itself when it holds ``run.json``, else every such folder below it
    (at most three levels down), sorted.

    Raises:
        InvalidInputError: no run folder found.
    """
    path = Path(path)
    if (path / RUN_FILE).is_file():
        return [path]
    found = sorted({p.parent for depth in ("*", "*/*", "*/*/*") for p in path.glob(f"{depth}/{RUN_FILE}")})
    if not found:
        raise InvalidInputError(f"no run folder (with {RUN_FILE}) at or below {path}", source=str(path))
    return found


# --------------------------------------------------------------------------------------------
# markdown
# --------------------------------------------------------------------------------------------


def _f(v: float | None, digits: int = 1) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _n(v: int | float) -> str:
    return f"{v:,.0f}" if isinstance(v, int) or float(v).is_integer() else f"{v:,.2f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _acc(a: AccuracySummary | None) -> str:
    return "—" if a is None else f"{a.accuracy:.1f} ({a.correct}/{a.total})"


def _grid_groups(summaries: list[RunSummary]) -> list[list[RunSummary]]:
    groups: dict[tuple[Any, ...], list[RunSummary]] = defaultdict(list)
    for s in summaries:
        c = s.config
        if c["system"] != "speakermem":
            continue
        key = (c["bench"], c["ablate"], c["ask_enabled"], c["answer_model"], c["data"])
        groups[key].append(s)
    out = []
    for runs in groups.values():
        pairs = {(r.config["budgets"].get("top_k"), r.config["budgets"].get("s2_k")) for r in runs}
        if len({p[0] for p in pairs}) >= 2 or len({p[1] for p in pairs}) >= 2:
            out.append(sorted(runs, key=lambda r: (r.config["budgets"].get("s2_k"), r.config["budgets"].get("top_k"))))
    return out


def _headline(s: RunSummary) -> float | None:
    if s.accuracy is not None:
        return s.accuracy.accuracy
    return None


def _question_set_warnings(summaries: list[RunSummary]) -> list[tuple[str, str]]:
    """A note per benchmark whose runs did not score the same questions (a ``--limit``, other
    units, an interrupted run): their rows are then not comparable figure by figure."""
    warnings = []
    for bench in sorted({s.config["bench"] for s in summaries}):
        runs = [s for s in summaries if s.config["bench"] == bench and s.question_set]
        if len({s.question_set for s in runs}) > 1:
            sizes = ", ".join(f"{s.label}: {s.n}" for s in runs)
            warnings.append((bench, "these runs scored different question sets (questions per run: "
                                    f"{sizes}); compare their figures only on the same questions"))
    return warnings


def _markdown(summaries: list[RunSummary], plots: dict[str, str], grids: list[list[RunSummary]]) -> str:
    benches = sorted({s.config["bench"] for s in summaries})
    lines = [f"# graphmem evaluation report — {', '.join(benches)}", ""]
    lines += [
        "Protocol: SpeakerMem-R1 §5.1 and App. C/D. Acc. = binary judge accuracy (eq. 10; a judge answer "
        "without a `Final:` line counts as not correct); token-F1 = set-based token-F1 (eq. 11); "
        "MeanQ/MeanN = SocialMem rubric means over questions / networks (eq. 12) with the 95% "
        "percentile-bootstrap CI over network means; recall@k = share of valid gold evidence messages "
        "among the first k evidence ids (LoCoMo adversarial excluded). Percentages unless noted.",
        "",
        "## Runs",
        "",
    ]
    rows = []
    for s in summaries:
        c = s.config
        b = c.get("budgets") or {}
        budget = (f"S1 k={b.get('top_k')}, n={b.get('recall_n')}, S2 k={b.get('s2_k')}/src {b.get('source_k')}"
                  if c["system"] == "speakermem" else (f"top-{c['top_k']}" if c["system"] in ("bm25", "embed") else "whole conversation"))
        ask = ("on" if c["ask_enabled"] else "off") if c["system"] == "speakermem" else "—"
        rows.append([s.label, c["bench"], budget, ask,
                     c["answer_model"] or "(none)", c["judge_model"] or "(none)", c.get("writer_model") or "(none)",
                     str(len(s.units)), str(s.n), f"`{s.run_dir}`"])
    lines += _table(["run", "bench", "budgets", "ASK", "answerer", "judge", "writer", "units", "questions", "folder"], rows)
    notes = [(s.label, n) for s in summaries for n in s.notes]
    notes += _question_set_warnings(summaries)
    if notes:
        lines += ["", "Notes:", ""] + [f"- **{label}**: {note}" for label, note in notes]

    lines += ["", "## Main results", ""]
    header = ["run", "questions", "answered", "judged", "Acc.", "token-F1"]
    has_locomo = any(s.config["bench"] == "locomo" for s in summaries)
    has_social = any(s.socialmem for s in summaries)
    if has_locomo:
        header += ["Acc. non-AD", "LoCoMo F1", "LoCoMo F1 non-AD"]
    if has_social:
        header += ["MeanQ", "MeanN", "MeanN 95% CI"]
    header += [f"recall@{k}" for k in _all_ks(summaries)]
    rows = []
    for s in summaries:
        row = [s.label, str(s.n), str(s.answered), str(s.judged), _acc(s.accuracy), _f(s.token_f1)]
        if has_locomo:
            row += [_acc(s.accuracy_non_ad), _f(s.locomo_f1), _f(s.locomo_f1_non_ad)]
        if has_social:
            sm = s.socialmem
            row += [_f(sm.mean_q, 3) if sm else "—", _f(sm.mean_n, 3) if sm else "—",
                    f"[{sm.ci_low:.3f}, {sm.ci_high:.3f}]" if sm else "—"]
        row += [_f(100 * s.recall[k]["recall"]) if k in s.recall else "—" for k in _all_ks(summaries)]
        rows.append(row)
    lines += _table(header, rows)
    if has_social:
        sm_any = next(s.socialmem for s in summaries if s.socialmem)
        lines += ["", f"CI: {sm_any.n_resamples:,} bootstrap resamples over networks, seed {sm_any.seed}."]

    for bench in benches:
        group = [s for s in summaries if s.config["bench"] == bench]
        cats = _ordered(bench, {c.category for s in group for c in s.categories})
        judged = any(s.judged for s in group)
        lines += ["", f"## Categories — {bench}", ""]
        if judged:
            lines += ["Accuracy (%) by category (n answered in parentheses):", ""]
            rows = []
            for s in group:
                by = {c.category: c for c in s.categories}
                rows.append([s.label] + [
                    f"{_f(by[c].accuracy)} ({by[c].judged})" if c in by else "—" for c in cats
                ] + [_acc(s.accuracy)])
            lines += _table(["run", *cats, "total"], rows)
            lines += ["", "token-F1 (%) by category:", ""]
            rows = [[s.label] + [_f({c.category: c for c in s.categories}[c].token_f1) if c in {x.category for x in s.categories} else "—" for c in cats] + [_f(s.token_f1)] for s in group]
            lines += _table(["run", *cats, "total"], rows)
        if any(s.socialmem for s in group):
            lines += ["", "Mean rubric score by category (MeanQ within the category):", ""]
            rows = [[s.label] + [_f({c.category: c for c in s.categories}[c].rubric, 3) if c in {x.category for x in s.categories} else "—" for c in cats] for s in group]
            lines += _table(["run", *cats], rows)
        if any(c.recall_n for s in group for c in s.categories):
            k = "10" if "10" in _all_ks(group) else (_all_ks(group) or ["10"])[-1]
            lines += ["", f"Evidence recall@{k} (%) by category (scored questions in parentheses):", ""]
            rows = []
            for s in group:
                by = {c.category: c for c in s.categories}
                rows.append([s.label] + [f"{_f(by[c].recall)} ({by[c].recall_n})" if c in by and by[c].recall_n else "—" for c in cats])
            lines += _table(["run", *cats], rows)
        lines += ["", "Questions per category: " + ", ".join(
            f"{c} {sum(x.n for s in group[:1] for x in s.categories if x.category == c)}" for c in cats)]
        fmts = sorted({f.category for s in group for f in s.formats})
        if judged and len(fmts) > 1:
            lines += ["", "By answer format:", ""]
            rows = [[s.label] + [(lambda f: f"{_f(f.accuracy)} / {_f(f.token_f1)} ({f.judged})" if f else "—")(
                {f.category: f for f in s.formats}.get(name)) for name in fmts] for s in group]
            lines += _table(["run (Acc. / token-F1)", *fmts], rows)

    lines += ["", "## Evidence recall@k (no model needed)", ""]
    ks = _all_ks(summaries)
    rows = [[s.label, str(s.recall_scored)] + [
        (f"{100 * s.recall[k]['recall']:.1f} / {100 * s.recall[k]['hit']:.1f}" if k in s.recall else "—") for k in ks
    ] for s in summaries]
    lines += _table(["run", "scored questions", *[f"recall / hit @{k}" for k in ks]], rows)
    lines += ["", "graphmem's evidence ids are its System 1 excerpts in final order, then the messages "
              "behind its memory slice (raw fallback, FROM provenance); the baselines' are their top-k messages."]
    sized = [s for s in summaries if s.evidence_tokens]
    if sized:
        from graphmem.core.tokens import TOKENIZER

        lines += ["", f"Composed evidence per question, tokens ({TOKENIZER}; counted with or without a model), "
                      "mean / p95:", ""]
        parts = ("verbatim", "structured", "question", "total")
        rows = [[s.label] + [f"{s.evidence_tokens.get(p, 0):.0f} / {s.evidence_tokens.get(p + '_p95', 0):.0f}"
                             for p in parts] for s in sized]
        lines += _table(["run", *parts], rows)
    curved = [s for s in summaries if s.token_curve]
    if curved:
        budgets = [str(b) for b in EVIDENCE_BUDGETS]
        lines += ["", "Recall at composed-evidence budgets (the pool's first k excerpts that fit, with the question "
                      "and memory slice; recall / mean k):", ""]
        rows = [[s.label, str(int(next(iter(s.token_curve.values()))["n"]))] + [
            (f"{100 * s.token_curve[b]['recall']:.1f} / {s.token_curve[b]['excerpts']:.1f}" if b in s.token_curve
             else "—") for b in budgets] for s in curved]
        lines += _table(["run", "scored questions", *[f"≤ {b} tokens" for b in budgets]], rows)

    lines += ["", "## Token costs (App. D; judge excluded)", ""]
    rows = []
    for s in summaries:
        cost = s.costs
        rows.append([s.label, _n(cost.writer_calls), _n(cost.ingest_in), _n(cost.ingest_out), _n(cost.qa_input), _n(cost.answer_out),
                     _n(cost.total), _n(round(cost.per_question, 2)), _n(cost.module_out), f"{_n(cost.judge_in)} / {_n(cost.judge_out)}"])
    lines += _table(["run", "Writer calls", "ingest in", "ingest out", "QA input", "answer out", "total",
                     "avg/question", "QA module out (not in total)", "judge in / out"], rows)
    lines += ["", "Ingest in/out counts every stored Writer segment of the run's units (whenever it was derived)."]
    stage_rows = [[s.label, st, _n(v["calls"]), _n(v["prompt_tokens"]), _n(v["completion_tokens"])]
                  for s in summaries for st, v in s.costs.by_stage.items()]
    if stage_rows:
        lines += ["", "Per stage:", ""] + _table(["run", "stage", "calls", "prompt", "completion"], stage_rows)

    lines += ["", "## Latency per question (ms)", ""]
    rows = [[s.label] + [_f(s.latency_ms.get(k), 0) for k in ("retrieve_p50", "retrieve_p95", "total_p50", "total_p95")]
            for s in summaries]
    lines += _table(["run", "retrieve p50", "retrieve p95", "total p50", "total p95"], rows)

    lines += _published_section(summaries)

    if grids:
        lines += ["", "## S1 top-k × S2 k grid (App. H)", ""]
        for g in grids:
            lines += _grid_table(g)
    if plots:
        lines += ["", "## Plots", ""]
        for name, title in plots.items():
            lines += [f"**{title}**", "", f"![{title}]({name})", ""]
    return "\n".join(lines).rstrip() + "\n"


def _all_ks(summaries: list[RunSummary]) -> list[str]:
    return sorted({k for s in summaries for k in s.recall}, key=int)


def _published_section(summaries: list[RunSummary]) -> list[str]:
    lines = ["", "## Side by side with the published figures", "",
             f"Columns marked **paper** are {PUBLISHED_LABEL}: SpeakerMem-R1 (arXiv:2609.26780v2), "
             "DeepSeek-V4-Flash answerer and GPT-4o-mini judge unless the table says otherwise. "
             "Their runs used other models, data splits (e.g. all 43 SocialMem networks) and Writers, "
             "so the comparison is a sanity check of scale, not a replication claim.", ""]
    rows = []
    for s in summaries:
        c = s.config
        paper = paper_main_row(c["bench"], c["system"], c["ablate"], c["ask_enabled"])
        ours = {
            "accuracy": s.accuracy.accuracy if s.accuracy else None,
            "accuracy_non_ad": s.accuracy_non_ad.accuracy if s.accuracy_non_ad else None,
            "token_f1": s.token_f1,
            "mean_q": s.socialmem.mean_q if s.socialmem else None,
            "mean_n": s.socialmem.mean_n if s.socialmem else None,
            "accuracy_table2": s.accuracy.accuracy if s.accuracy else None,
        }
        for metric, (value, where) in paper.items():
            digits = 3 if metric.startswith("mean") else 1
            rows.append([s.label, metric, _f(ours.get(metric), digits), _f(value, digits if value is not None else 1), where])
    if rows:
        lines += _table(["run", "metric", "ours", "paper", "paper source"], rows)
    else:
        lines += ["(no published row corresponds to these runs)"]
    for s in summaries:
        c = s.config
        row = paper_category_row(c["bench"], c["system"], c["ablate"], c["ask_enabled"])
        if row is None or not s.judged:
            continue
        by = {x.category: x for x in s.categories}
        cats = [k for k in row.values if k in by]
        if not cats:
            continue
        lines += ["", f"Per category, {s.label} vs paper {row.table} ({row.row}):", ""]
        lines += _table(["", *cats], [
            ["ours Acc.", *[_f(by[k].accuracy) for k in cats]],
            ["paper Acc.", *[_f(row.values[k]) for k in cats]],
        ])
    return lines


def _grid_table(runs: list[RunSummary]) -> list[str]:
    s1 = sorted({r.config["budgets"]["top_k"] for r in runs})
    s2 = sorted({r.config["budgets"]["s2_k"] for r in runs})
    cell = {(r.config["budgets"]["top_k"], r.config["budgets"]["s2_k"]): r for r in runs}
    metric = "Acc. / token-F1" if any(r.judged for r in runs) else "recall@10"

    def fmt(r: RunSummary | None) -> str:
        if r is None:
            return "—"
        if r.judged:
            return f"{_f(r.accuracy.accuracy if r.accuracy else None)} / {_f(r.token_f1)}"
        return _f(100 * r.recall["10"]["recall"]) if "10" in r.recall else "—"

    lines = [f"{runs[0].config['bench']}, {metric} (rows S2 k, columns S1 top-k; no ASK, recall-n = S1 top-k):", ""]
    lines += _table(["S2 k \\ S1 k", *map(str, s1)], [[str(b)] + [fmt(cell.get((a, b))) for a in s1] for b in s2])
    paper = load_published()["tables"]["figure6"]["rows"]
    lines += ["", f"Paper (Figure 6, {PUBLISHED_LABEL}; SocialMem held-out 305 questions), Acc. / token-F1:", ""]
    lines += _table(["S2 k \\ S1 k", "5", "10", "20"],
                    [[str(b)] + [f"{paper[f'{a},{b}'][2]:.2f} / {paper[f'{a},{b}'][3]:.2f}" for a in (5, 10, 20)] for b in (2, 4, 6)])
    return lines + [""]


# --------------------------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------------------------


def _plt() -> Any:  # matplotlib.pyplot, imported here (it is not followed: pyproject follow_imports)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plot_categories(summaries: list[RunSummary], path: Path) -> str | None:
    plt = _plt()
    benches = sorted({s.config["bench"] for s in summaries})
    fig, axes = plt.subplots(len(benches), 1, figsize=(11, 3.8 * len(benches)), squeeze=False)
    drawn = False
    titles = []
    for ax, bench in zip(axes[:, 0], benches):
        group = [s for s in summaries if s.config["bench"] == bench]
        judged = any(s.judged for s in group)
        cats = _ordered(bench, {c.category for s in group for c in s.categories})
        series: list[tuple[str, list[float | None], bool]] = []
        counts: dict[str, list[int | None]] = {}  # label -> questions behind each bar (None: no bar)
        for s in group:
            by = {c.category: c for c in s.categories}
            vals = [(by[c].accuracy if judged else by[c].recall) if c in by else None for c in cats]
            series.append((s.label, vals, False))
            counts[s.label] = [((by[c].judged or by[c].n) if judged else (by[c].recall_n or by[c].n)) if c in by
                               else None for c in cats]
            if judged:
                c = s.config
                row = paper_category_row(c["bench"], c["system"], c["ablate"], c["ask_enabled"])
                if row is not None:
                    series.append((f"paper: {row.row} ({row.table})", [row.values.get(k) for k in cats], True))
        if not cats or not any(v is not None for _, vals, _ in series for v in vals):
            ax.set_visible(False)
            continue
        drawn = True
        width = 0.8 / max(1, len(series))
        for i, (label, vals, hatched) in enumerate(series):
            xs = [j + i * width - 0.4 + width / 2 for j in range(len(cats))]
            ys = [v if v is not None else 0.0 for v in vals]
            bars = ax.bar(xs, ys, width, label=label, hatch="//" if hatched else None,
                          alpha=0.55 if hatched else 0.9, edgecolor="black" if hatched else None, linewidth=0.4)
            if not hatched:  # how many questions each of our bars stands on (n=5 reads unlike n=150)
                ax.bar_label(bars, labels=[f"n={k}" if k is not None and v is not None else ""
                                           for k, v in zip(counts[label], vals)], fontsize=6, padding=1)
        most = {c: max((k[j] or 0 for k in counts.values()), default=0) for j, c in enumerate(cats)}
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels([f"{c} (n={most[c]})" if most[c] else c for c in cats], rotation=20, ha="right")
        metric = "accuracy (%)" if judged else "evidence recall@10 (%)"
        ax.set_ylabel(metric)
        ax.set_ylim(0, 100)
        ax.set_title(f"{bench}: {metric} by category (hatched: published by the paper's authors)" if judged
                     else f"{bench}: {metric} by category", fontsize=10)
        ax.legend(fontsize=7, ncol=2)
        ax.grid(axis="y", alpha=0.3)
        titles.append(metric)
    if not drawn:
        plt.close(fig)
        return None
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return "Per-category " + " / ".join(sorted(set(titles)))


def _plot_recall(summaries: list[RunSummary], path: Path) -> str | None:
    ks = _all_ks(summaries)
    runs = [s for s in summaries if s.recall]
    if not ks or not runs:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(runs) * len(ks) / 2), 3.8))
    width = 0.8 / len(runs)
    for i, s in enumerate(runs):
        xs = [j + i * width - 0.4 + width / 2 for j in range(len(ks))]
        ax.bar(xs, [100 * s.recall[k]["recall"] if k in s.recall else 0 for k in ks], width,
               label=f"{s.label} ({s.config['bench']})")
    ax.set_xticks(range(len(ks)))
    ax.set_xticklabels([f"recall@{k}" for k in ks])
    ax.set_ylabel("% of gold evidence retrieved")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Evidence recall@k")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return "Evidence recall@k"


def _plot_grid(runs: list[RunSummary], path: Path) -> str:
    plt = _plt()
    judged = any(r.judged for r in runs)
    s1 = sorted({r.config["budgets"]["top_k"] for r in runs})
    s2 = sorted({r.config["budgets"]["s2_k"] for r in runs})
    cell = {(r.config["budgets"]["top_k"], r.config["budgets"]["s2_k"]): r for r in runs}

    def val(r: RunSummary | None, which: str) -> float | None:
        if r is None:
            return None
        if which == "acc":
            return r.accuracy.accuracy if (judged and r.accuracy) else (100 * r.recall["10"]["recall"] if "10" in r.recall else None)
        return r.token_f1

    panels = [("acc", "Accuracy (%)" if judged else "evidence recall@10 (%)")]
    if judged:
        panels.append(("f1", "token-F1 (%)"))
    fig, axes = plt.subplots(1, len(panels) + 1, figsize=(5 * (len(panels) + 1), 4))
    for ax, (which, title) in zip(axes, panels):
        for b in s2:
            ys = [val(cell.get((a, b)), which) for a in s1]
            pts = [(j, y) for j, y in enumerate(ys) if y is not None]  # S1 values equally spaced, as Fig. 5
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o" if which == "acc" else "s",
                        linestyle="-" if which == "acc" else "--", label=f"S2 k = {b}")
                for j, y in pts:
                    ax.annotate(f"{y:.1f}", (j, y), textcoords="offset points", xytext=(0, 5), fontsize=7, ha="center")
        ax.set_xticks(range(len(s1)))
        ax.set_xticklabels([str(a) for a in s1])
        ax.set_xlabel("S1 top-k")
        ax.set_ylabel(title)
        ax.set_title(title)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    ax = axes[-1]
    import numpy as np

    grid = np.full((len(s2), len(s1)), np.nan)
    for i, b in enumerate(s2):
        for j, a in enumerate(s1):
            v = val(cell.get((a, b)), "acc")
            if v is not None:
                grid[i, j] = v
    im = ax.imshow(grid, origin="lower", cmap="Blues", aspect="auto")
    for i, b in enumerate(s2):
        for j, a in enumerate(s1):
            r = cell.get((a, b))
            text = "—" if r is None else f"{_f(val(r, 'acc'))}" + (f"\n{_f(val(r, 'f1'))}" if judged else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(s1)))
    ax.set_xticklabels([str(a) for a in s1])
    ax.set_yticks(range(len(s2)))
    ax.set_yticklabels([str(b) for b in s2])
    ax.set_xlabel("S1 top-k")
    ax.set_ylabel("S2 k")
    ax.set_title("grid: " + ("Acc. (top) / token-F1 (bottom)" if judged else "recall@10"))
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.suptitle(f"Retrieval-budget sensitivity, {runs[0].config['bench']} (App. H, Figures 5-6 layout)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return "S1 top-k × S2 k grid (App. H)"


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------


def write_report(
    path: Path, *, out: Path | None = None, n_resamples: int = 10_000, seed: int | None = 0, plots: bool = True
) -> tuple[Path, list[RunSummary]]:
    """Write ``report.md``, ``summary.json`` and the PNG plots for the run(s) at ``path``.

    Args:
        path: one run folder, or a folder holding run folders (found by :func:`find_runs`).
        out: where to write (default: ``path``).
        n_resamples / seed: the MeanN bootstrap.
        plots: False skips the PNGs.

    Returns:
        (path of ``report.md``, the summaries in report order).

    Raises:
        InvalidInputError: no run folder found, or an unreadable record.
    """
    runs = find_runs(path)
    summaries = [summarize(r, n_resamples=n_resamples, seed=seed) for r in runs]
    if len({s.config["bench"] for s in summaries}) > 1:  # name the benchmark in every label
        for s in summaries:
            s.label = f"{s.config['bench']}: {s.label}"
    out = Path(out or path)
    out.mkdir(parents=True, exist_ok=True)
    grids = _grid_groups(summaries)
    made: dict[str, str] = {}
    if plots:
        title = _plot_categories(summaries, out / "categories.png")
        if title:
            made["categories.png"] = title
        title = _plot_recall(summaries, out / "recall.png")
        if title:
            made["recall.png"] = title
        for i, g in enumerate(grids):
            name = "grid.png" if i == 0 else f"grid_{i + 1}.png"
            made[name] = _plot_grid(g, out / name)
    report = out / "report.md"
    report.write_text(_markdown(summaries, made, grids), encoding="utf-8")
    (out / "summary.json").write_text(
        json.dumps({"runs": [s.to_dict() for s in summaries], "plots": list(made)}, ensure_ascii=False, indent=2, default=str) + "\n",
        encoding="utf-8",
    )
    return report, summaries
