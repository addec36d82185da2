"""Compare our per-question verdicts with another system's published per-question records.

The other side is one JSONL file, or a folder of them (searched recursively), e.g. the
SpeakerMem-R1 authors' released results
``results/main/<model>/<with_ask|without_ask>/<bench>/<unit>/speakermem__<category>.jsonl``,
whose lines look like ``{"id", "query", "gold", "context", "agent_answer", "judge_answer",
"verdict"}``. Field names are found by common aliases and can be set explicitly
(``field_map``); the unit and category come from the record, else from the file's folder and
``<system>__<category>.jsonl`` name.

Matching: a record matches one of ours when its id equals our question id (``conv-26/q3``), or
its (unit, id) equals our (unit, raw id) (``grp_0d1e2f3a`` + ``Q4_c0s2c2``), or - failing ids -
its unit and normalised question text equal ours.

Verdicts on their side: a boolean, ``correct``/``incorrect`` (``wrong``, ``unclear``...), 0/1,
or a judge text read by :func:`graphmem.eval.metrics.parse_judge_verdict` (also a bare
``Correct``/``Incorrect``). Questions without a verdict on either side are listed but not
counted in agreement.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from graphmem.core.errors import InvalidInputError
from graphmem.eval.metrics import parse_judge_verdict
from graphmem.eval.runner import QuestionRecord, read_records

__all__ = ["ALIASES", "Agreement", "Comparison", "compare_records", "compare_run", "comparison_markdown", "read_other"]

#: Field -> names tried in order (first present wins).
ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "qa_id", "question_id", "qid", "uid"),
    "unit": ("unit", "group_id", "network", "network_id", "sample_id", "conversation", "topic_id", "domain"),
    "category": ("category", "qtype", "query_type", "type", "cat"),
    "question": ("question", "query", "q", "Q"),
    "gold": ("gold", "answer", "gold_answer", "golden_answer", "reference", "A"),
    "prediction": ("prediction", "agent_answer", "pred", "response", "generated_answer", "system_answer", "output"),
    "verdict": ("verdict", "judgment", "judgement", "is_correct", "correct", "label", "judge_answer", "judge"),
}

_CORRECT = {"correct", "true", "yes", "1", "right", "pass"}
_INCORRECT = {"incorrect", "false", "no", "0", "wrong", "fail"}


def _verdict(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".").lower()
        if word in _CORRECT:
            return True
        if word in _INCORRECT:
            return False
        parsed = parse_judge_verdict(value)
        if parsed is not None:
            return parsed
        last = value.strip().splitlines()[-1].strip().strip("*").strip(".").lower() if value.strip() else ""
        if last in ("correct", "final: correct"):
            return True
        if last in ("incorrect", "final: incorrect"):
            return False
    return None


def _norm_q(text: str) -> str:
    text = (text or "").split("\nOptions:")[0]
    text = re.sub(r"^\[asked by [^\]]*\]\s*", "", text)
    return " ".join(re.findall(r"\w+", text.lower()))


@dataclass
class OtherRecord:
    """One record of the other system, in our terms."""

    id: str
    unit: str = ""
    category: str = ""
    question: str = ""
    gold: str = ""
    prediction: str = ""
    verdict: bool | None = None
    source: str = ""


def _pick(obj: dict[str, Any], name: str, field_map: dict[str, str]) -> Any:
    if name in field_map:
        return obj.get(field_map[name])
    for alias in ALIASES[name]:
        if alias in obj and obj[alias] not in (None, ""):
            return obj[alias]
    return None


_FILE_CATEGORY = re.compile(r"__(.+)$")


def read_other(path: Path, *, field_map: dict[str, str] | None = None) -> list[OtherRecord]:
    """Read another system's per-question records.

    Args:
        path: a JSONL file, or a folder searched recursively for ``*.jsonl``.
        field_map: our field name (id, unit, category, question, gold, prediction, verdict) ->
            their field name, overriding the aliases.

    Raises:
        InvalidInputError: nothing at ``path``, a line that is not a JSON object, an unknown
            field in ``field_map``, or a record without an id or a question.
    """
    fm = dict(field_map or {})
    unknown = set(fm) - set(ALIASES)
    if unknown:
        raise InvalidInputError(f"unknown field(s) in the mapping: {', '.join(sorted(unknown))}; "
                                f"use {', '.join(ALIASES)}", field="map")
    path = Path(path)
    files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    if not path.exists() or not files:
        raise InvalidInputError(f"no JSONL records at {path}", source=str(path))
    out: list[OtherRecord] = []
    for f in files:
        m = _FILE_CATEGORY.search(f.stem)
        file_cat = m.group(1) if m else ""
        file_unit = f.parent.name if path.is_dir() and f.parent != path else ""
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise InvalidInputError(f"not JSON: {e}", source=str(f), record=f"line {i}") from e
            if not isinstance(obj, dict):
                raise InvalidInputError("not a JSON object", source=str(f), record=f"line {i}")
            rid, question = _pick(obj, "id", fm), _pick(obj, "question", fm)
            if rid in (None, "") and not question:
                raise InvalidInputError("record has neither an id nor a question", source=str(f), record=f"line {i}")
            out.append(OtherRecord(
                id=str(rid or ""), unit=str(_pick(obj, "unit", fm) or file_unit),
                category=str(_pick(obj, "category", fm) or file_cat), question=str(question or ""),
                gold=str(_pick(obj, "gold", fm) or ""), prediction=str(_pick(obj, "prediction", fm) or ""),
                verdict=_verdict(_pick(obj, "verdict", fm)), source=f"{f}:{i}",
            ))
    return out


@dataclass
class Agreement:
    """Verdict agreement over matched questions that have a verdict on both sides."""

    n: int = 0
    agree: int = 0
    both_correct: int = 0
    both_wrong: int = 0
    only_ours: int = 0
    only_theirs: int = 0
    ours_acc: float | None = None
    theirs_acc: float | None = None
    agreement: float | None = None
    kappa: float | None = None

    def finish(self) -> Agreement:
        if self.n:
            self.ours_acc = 100.0 * (self.both_correct + self.only_ours) / self.n
            self.theirs_acc = 100.0 * (self.both_correct + self.only_theirs) / self.n
            self.agreement = 100.0 * self.agree / self.n
            po = self.agree / self.n
            p_ours = (self.both_correct + self.only_ours) / self.n
            p_theirs = (self.both_correct + self.only_theirs) / self.n
            pe = p_ours * p_theirs + (1 - p_ours) * (1 - p_theirs)
            self.kappa = (po - pe) / (1 - pe) if pe < 1 else None
        return self


@dataclass
class Comparison:
    """Outcome of :func:`compare_records`.

    Attributes:
        overall: agreement over every matched question with both verdicts.
        by_category: the same per category (ours).
        matched / only_in_ours / only_in_theirs: counts of matched and unmatched questions.
        unjudged: matched questions where a verdict is missing on one side.
        rows: per matched question ``{"id", "category", "ours", "theirs", "our_answer", "their_answer"}``.
    """

    overall: Agreement = field(default_factory=Agreement)
    by_category: dict[str, Agreement] = field(default_factory=dict)
    matched: int = 0
    only_in_ours: int = 0
    only_in_theirs: int = 0
    unjudged: int = 0
    match_kinds: dict[str, int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)


def _add(a: Agreement, ours: bool, theirs: bool) -> None:
    a.n += 1
    a.agree += int(ours == theirs)
    a.both_correct += int(ours and theirs)
    a.both_wrong += int(not ours and not theirs)
    a.only_ours += int(ours and not theirs)
    a.only_theirs += int(theirs and not ours)


def compare_records(ours: list[QuestionRecord], theirs: list[OtherRecord]) -> Comparison:
    """Match the two sides question by question and count verdict agreement.

    Returns:
        A :class:`Comparison`; categories are ours (the benchmark's reporting categories).
    """
    by_id = {r.id: r for r in ours}
    by_unit_raw: dict[tuple[str, str], QuestionRecord] = {}
    by_text: dict[tuple[str, str], QuestionRecord] = {}
    for r in ours:
        raw = str(r.extra.get("qa_id") or r.id.rsplit("/", 1)[-1])
        by_unit_raw[(r.unit, raw)] = r
        by_text[(r.unit, _norm_q(r.question))] = r
    text_only = {}
    for r in ours:  # question text alone, when it is unique across units
        key = _norm_q(r.question)
        text_only[key] = None if key in text_only else r
    cmp = Comparison()
    seen: set[str] = set()
    for t in theirs:
        mine, kind = None, ""
        if t.id and t.id in by_id:
            mine, kind = by_id[t.id], "id"
        elif t.id and (t.unit, t.id) in by_unit_raw:
            mine, kind = by_unit_raw[(t.unit, t.id)], "unit+id"
        elif t.question and (t.unit, _norm_q(t.question)) in by_text:
            mine, kind = by_text[(t.unit, _norm_q(t.question))], "unit+question"
        elif t.question and text_only.get(_norm_q(t.question)) is not None:
            mine, kind = text_only[_norm_q(t.question)], "question"
        if mine is None or mine.id in seen:
            cmp.only_in_theirs += 1
            continue
        seen.add(mine.id)
        cmp.matched += 1
        cmp.match_kinds[kind] = cmp.match_kinds.get(kind, 0) + 1
        row = {"id": mine.id, "category": mine.category, "ours": mine.verdict, "theirs": t.verdict,
               "their_category": t.category, "our_answer": mine.answer, "their_answer": t.prediction}
        cmp.rows.append(row)
        if mine.verdict is None or t.verdict is None:
            cmp.unjudged += 1
            continue
        _add(cmp.overall, mine.verdict, t.verdict)
        _add(cmp.by_category.setdefault(mine.category, Agreement()), mine.verdict, t.verdict)
    cmp.only_in_ours = sum(1 for r in ours if r.id not in seen)
    cmp.overall.finish()
    for a in cmp.by_category.values():
        a.finish()
    return cmp


def _f(v: float | None, d: int = 1) -> str:
    return "—" if v is None else f"{v:.{d}f}"


def comparison_markdown(cmp: Comparison, *, ours_label: str, theirs_label: str) -> str:
    """A markdown summary of a :class:`Comparison` (overall and per-category tables)."""
    lines = [f"# Verdict comparison: {ours_label} vs {theirs_label}", "",
             f"Matched {cmp.matched} question(s) ({', '.join(f'{k} {v}' for k, v in sorted(cmp.match_kinds.items())) or 'none'}); "
             f"only in ours {cmp.only_in_ours}, only in theirs {cmp.only_in_theirs}; "
             f"{cmp.unjudged} matched without a verdict on one side (not counted).", ""]
    header = ["", "n", "agreement %", "Cohen's κ", "both correct", "only ours", "only theirs", "both wrong",
              "ours Acc. %", "theirs Acc. %"]

    def row(name: str, a: Agreement) -> str:
        return "| " + " | ".join([name, str(a.n), _f(a.agreement), _f(a.kappa, 3), str(a.both_correct), str(a.only_ours),
                                   str(a.only_theirs), str(a.both_wrong), _f(a.ours_acc), _f(a.theirs_acc)]) + " |"

    lines += ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|", row("all", cmp.overall)]
    lines += [row(c, a) for c, a in sorted(cmp.by_category.items())]
    return "\n".join(lines) + "\n"


def compare_run(run_dir: Path, other: Path, *, field_map: dict[str, str] | None = None) -> Comparison:
    """:func:`compare_records` of a run folder's records against another system's records."""
    return compare_records(read_records(run_dir), read_other(other, field_map=field_map))
