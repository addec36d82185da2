"""Model-judged metrics: binary judge verdicts (App. C eq. 10) and SocialMem rubric scores (eq. 12).

- :func:`judge_answer`: one call of the binary judge (prompt after App. I.7 Prompt 6); the
  verdict is read strictly by :func:`graphmem.eval.metrics.parse_judge_verdict`: a line that is
  exactly ``Final: Correct`` / ``Final: Incorrect``, else no verdict (counted as not correct).
- :func:`rubric_score`: SocialMem item score ``s_q`` in [0, 1]. Multiple-choice questions get
  0/1 by exact option matching (:func:`option_choice`), as App. C describes for SocialMem's 214
  multiple-choice items; the others are graded by the rubric prompt (after App. I.7 Prompt 7),
  whose JSON answer ``{"score", "rationale"}`` must hold a number in [0, 1].

The judge's token usage is recorded on the judge's own ledger (stage ``judge`` / ``rubric``);
App. D excludes it from the cost totals.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from graphmem.core.errors import LLMError
from graphmem.eval import prompts
from graphmem.eval.metrics import parse_judge_verdict
from graphmem.llm import ChatModel, LLMOutputError, Usage
from graphmem.core.text import strip_think

__all__ = ["Graded", "Verdict", "judge_answer", "option_choice", "rubric_score"]

_LEADING_LETTER = re.compile(r"^[\s*_`\"'(\[]*([A-Za-z])(?:[.:)\]]|\s*$)")
_STATED_LETTER = re.compile(r"\b(?:answer|option|choice)\s*(?:is|:|=)?\s*\(?([A-Za-z])\)?(?=[.:)\]\s,;]|$)", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """One binary judgment.

    Attributes:
        correct: True / False, or None when the judge's answer has no ``Final:`` line.
        text: the judge's whole answer (reasoning and final line).
        usage: the call's token usage (stage ``judge``).
    """

    correct: bool | None
    text: str
    usage: Usage


def judge_answer(
    model: ChatModel, *, question: str, gold: str, answer: str, max_tokens: int = 512
) -> Verdict:
    """Ask the binary judge whether ``answer`` matches ``gold``.

    Args:
        model: the judge (:func:`graphmem.llm.judge_model`).
        question: the question as the system saw it (options included for multiple choice).
        gold: the gold answer (``"C. Mei"`` for multiple choice).
        answer: the system's answer.
        max_tokens: cap on the judge's answer.

    Returns:
        A :class:`Verdict`.

    Raises:
        LLMError: the endpoint failed after retries.

    Source: SpeakerMem-R1 App. C eq. 10, App. I.7 Prompt 6.
    """
    text, usage = model.complete_text(
        [
            {"role": "system", "content": prompts.JUDGE_SYSTEM},
            {"role": "user", "content": prompts.JUDGE_USER.format(question=question, gold=gold, answer=answer)},
        ],
        stage="judge",
        max_tokens=max_tokens,
    )
    return Verdict(parse_judge_verdict(text), text, usage)


def option_choice(answer: str, options: dict[str, str]) -> str | None:
    """The option letter an answer picks, or None when it picks none or several.

    In order: a leading letter (``"C"``, ``"C. Mei"``, ``"(C)"``, ``"**C)** Mei"``); a stated letter
    (``"The answer is C"``); else the one option whose text the answer names (word match,
    case-insensitive) - naming two or more options picks none.
    """
    text = strip_think(answer)
    letters = {k.upper(): k for k in options}
    m = _LEADING_LETTER.match(text)
    if m and m.group(1).upper() in letters:
        return letters[m.group(1).upper()]
    m = _STATED_LETTER.search(text)
    if m and m.group(1).upper() in letters:
        return letters[m.group(1).upper()]
    named = [
        k for k, v in options.items()
        if v.strip() and re.search(rf"(?<!\w){re.escape(v.strip())}(?!\w)", text, re.IGNORECASE)
    ]
    return named[0] if len(named) == 1 else None


@dataclass(frozen=True)
class Graded:
    """One SocialMem item score.

    Attributes:
        score: ``s_q`` in [0, 1], or None when the rubric answer held no usable score.
        method: ``"option"`` (exact option matching, no model call) or ``"rubric"``.
        rationale: the grader's one-sentence rationale (for ``"option"``: which letter was read).
        usage: the rubric call's usage (None for ``"option"``).
        error: why no score could be read ("" otherwise).
    """

    score: float | None
    method: str
    rationale: str = ""
    usage: Usage | None = None
    error: str = ""


def rubric_score(
    model: ChatModel | None,
    *,
    question: str,
    gold: str,
    answer: str,
    category: str,
    options: dict[str, str] | None = None,
    correct_option: str = "",
    max_tokens: int = 300,
) -> Graded:
    """SocialMem item score of one answer.

    Args:
        model: the judge model; may be None for multiple-choice questions only.
        question / gold / answer: as the binary judge gets them.
        category: ``"Q1"`` .. ``"Q9"`` (the type-specific rules of the rubric).
        options / correct_option: a multiple-choice question's options and correct letter;
            given, the score is 1.0 when :func:`option_choice` reads the correct letter, else 0.0.
        max_tokens: cap on the rubric answer.

    Returns:
        A :class:`Graded`. A rubric answer without a JSON object, or whose ``score`` is not a
        number in [0, 1], gives ``score=None`` and says why in ``error``.

    Raises:
        LLMError: the endpoint failed after retries, or no model was given for an open question.

    Source: SpeakerMem-R1 App. C (eq. 12, item scores), App. I.7 Prompt 7.
    """
    if options:
        chosen = option_choice(answer, options)
        score = 1.0 if chosen is not None and chosen == correct_option else 0.0
        return Graded(score, "option", f"option read: {chosen or 'none'}; correct: {correct_option}")
    if model is None:
        raise LLMError("the SocialMem rubric needs a judge model (GRAPHMEM_JUDGE_* or GRAPHMEM_LLM_*)")
    messages = [
        {"role": "system", "content": prompts.RUBRIC_SYSTEM},
        {"role": "user", "content": prompts.RUBRIC_USER.format(
            category=category or "?", question=question, gold=gold, answer=answer)},
    ]
    try:
        value, usage = model.complete_json(messages, stage="rubric", max_tokens=max_tokens)
    except LLMOutputError as e:
        return Graded(None, "rubric", error=f"rubric answer held no JSON: {e.text[:200]!r}")
    if not isinstance(value, dict):
        return Graded(None, "rubric", usage=usage, error="rubric answer is not a JSON object")
    raw = value.get("score")
    rationale = str(value.get("rationale") or "")
    try:
        score = float(raw) if isinstance(raw, (int, float, str)) and not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError):
        score = math.nan
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        return Graded(None, "rubric", rationale, usage, f"score {raw!r} is not a number in [0, 1]")
    return Graded(score, "rubric", rationale, usage)
