"""Project: question + roster -> issue, rows, tense (SpeakerMem-R1 §3.3 eq. 4, App. I.3).

The language model proposes the projection (prompt :data:`~graphmem.query.prompts.PROJECT_SYSTEM`);
its output is validated against the roster. A deterministic fallback is used when no model is
configured, the call fails, or the output is unusable:

- rows: persons whose name, alias or id occurs in the question (word boundary, case-insensitive);
  "each / every / everyone / all of / who never / anyone ..." -> ALL; decision and norm words
  (decided, agreed, settled, rule, norm, policy ...) -> GROUP, except for per-person stance
  roll-ups and "who never / who breaks" questions (the norm is only the yardstick there);
  nothing found -> ALL (a too-wide slice costs little, a too-narrow one loses the answer).
- tense: change words (change, used to, originally, at first, before, earlier, history,
  evolve ...) or a past date / session reference -> full; otherwise head.
- issue: the question without names, question words and function words. When no topic word is
  left (only words such as change, happen, decided), the stance/decision words are kept too
  ("How did Ben's opinion change?" -> "opinion change"); see :func:`issue_focus`.

Views ("A's view of B": source A, owner B) are always detected deterministically; for such a
question the fallback reads B's row (memory is filed under whom it is about).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, cast

from graphmem.core.errors import LLMError
from graphmem.llm import ChatModel, LLMOutputError, Usage, estimate_tokens
from graphmem.core.model import ALL, GROUP
from graphmem.query import prompts
from graphmem.query.types import Projection, RosterMember, Tense, View
from graphmem.recall.anchors import ALL_MEMBERS_WORDS as _ALL_WORDS
from graphmem.verbatim.roster import find_persons, name_pattern, resolve_person
from graphmem.core.text import STOP_WORDS, fence, one_line

_NEVER_WORDS = re.compile(
    r"\b(who\s+never|never\s+once|nobody|no\s+one|"
    r"who\s+(?:did|does|do|has|have|had)\s*(?:n't|not)\b|"
    r"who\s+(?:didn't|doesn't|don't|hasn't|haven't|hadn't)|"
    r"violat\w*|break\w*|broke|follow\w*)",
    re.IGNORECASE,
)
_NORM_BREAK = re.compile(
    r"\bwho\b.{0,40}?\b(violat\w*|break\w*|broke|ignor\w*|disregard\w*|follow\w*|compl(?:y|ies|ied)|"
    r"respect\w*|stick\w*|stuck|obey\w*|disobey\w*)\b",
    re.IGNORECASE,
)
_EACH_ONLY = re.compile(r"\b(each|both)\b", re.IGNORECASE)
_GROUP_WORDS = re.compile(
    r"\b(decid\w*|decision\w*|agree\w*|settl\w*|rules?|norms?|polic(?:y|ies)|consensus|"
    r"conclu\w*|finally|final|plan\s+was|responsib\w*|in\s+charge|owns?)\b",
    re.IGNORECASE,
)
_STANCE_WORDS = re.compile(
    r"\b(think\w*|thought|stance\w*|position\w*|view\w*|opinion\w*|feel\w*|felt|prefer\w*|"
    r"stand\w*|attitude\w*|want\w*)\b",
    re.IGNORECASE,
)
_CHANGE_WORDS = re.compile(
    r"\b(chang\w*|used\s+to|originally|original|at\s+first|initially|initial|before|earlier|"
    r"history|histor\w*|evolv\w*|evolution|previous\w*|formerly|anymore|no\s+longer|"
    r"switch\w*|shift\w*|revis\w*|over\s+time|at\s+the\s+time|back\s+then|back\s+in|"
    r"first\s+(?:said|proposed|suggested|wanted)|start\w*\s+(?:with|out))\b",
    re.IGNORECASE,
)
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_PAST_DATE = re.compile(
    r"\b(\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|"
    rf"(?:on|in|by|since|during|back\s+in)\s+(?:the\s+)?(?:{_MONTHS})\b|"
    rf"(?:{_MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b|"
    r"(?:in|by|during|after|before|until)\s+session\s+\d+|session\s+\d+|"
    r"last\s+(?:week|month|year|time)|yesterday|(?:in|back\s+in)\s+(?:19|20)\d{2})",
    re.IGNORECASE,
)
_VIEW_VERBS = (
    r"(?:think|thinks|thought|view|views|viewed|see|sees|saw|perceive|perceives|perceived|"
    r"consider|considers|considered|regard|regards|regarded|believe|believes|believed|feel|feels|"
    r"felt|know|knows|knew|describe|describes|described|opinion|impression|read|reads|judge|"
    r"judges|judged|say|says|said|suspect|suspects|suspected|notice|noticed|notices)"
)
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)


#: Issue words that name the KIND of question, not its topic: a decision ...
_DECISION_FOCUS = re.compile(
    r"^(decid\w*|decision\w*|agree\w*|settl\w*|conclu\w*|resolv\w*|resolution\w*|outcome\w*|"
    r"final\w*|plan|plans|planned)$"
)
#: ... a stance (what someone thinks, wants, prefers) ...
_STANCE_FOCUS = re.compile(
    r"^(opinion\w*|view\w*|stance\w*|position\w*|attitude\w*|think\w*|thought\w*|feel\w*|"
    r"felt|believ\w*|prefer\w*|want\w*|mind)$"
)
#: ... or the shape of the answer (a change, an event): none of these says what it is about.
_GENERIC_ISSUE = re.compile(
    r"^(chang\w*|evolv\w*|evolution|shift\w*|develop\w*|happen\w*|go|goes|going|went|gone|"
    r"make|makes|made|making|turn\w*|end|ended|up|out|over|time|times|before|after|earlier|"
    r"later|originally|initially|first|last|again|used|get|got)$"
)


def issue_word_kind(word: str) -> str:
    """``"decision"``, ``"stance"``, ``"generic"`` (no topic either way) or ``"content"``."""
    w = re.sub(r"['’]s$", "", word.lower().strip("'’-"))
    if _DECISION_FOCUS.match(w):
        return "decision"
    if _STANCE_FOCUS.match(w):
        return "stance"
    if not w or w in STOP_WORDS or w.isdigit() or _GENERIC_ISSUE.match(w):
        return "generic"
    return "content"


def issue_focus(issue: str) -> tuple[bool, list[str]]:
    """Whether an issue constrains retrieval, and the record types it asks about.

    Returns:
        (has_content, utypes): ``has_content`` is False when no word of the issue names a topic
        (only question/function words and words such as change, opinion, view, think, decided,
        decision, stance, happen); ``utypes`` lists ``"decision"`` / ``"stance"`` in the order
        their words first occur in the issue.
    """
    kinds = [issue_word_kind(w) for w in _WORD.findall(issue)]
    focus = [k for k in dict.fromkeys(kinds) if k in ("decision", "stance")]
    return "content" in kinds, focus


def roster_text(roster: Sequence[RosterMember]) -> str:
    """Roster as shown to the model: ``Name (also: alias, ...)``, comma-separated, on one line
    (names are chat text: :func:`graphmem.core.text.one_line`; a member's label where the
    roster marks it, ``"Ana (U1)"`` beside another Ana)."""
    parts = []
    for p in roster:
        name = one_line(p.label or p.name) or p.name
        extra = [one_line(a) for a in p.aliases if a != p.name]
        parts.append(f"{name} (also: {', '.join(extra)})" if extra else name)
    return ", ".join(parts) or "(empty roster)"


def detect_views(question: str, roster: Sequence[RosterMember]) -> list[View]:
    """"A thinks/sees/knows ... B" patterns: source A, owner B (both roster members)."""
    named = find_persons(question, roster)
    views: list[View] = []
    for (pa, a), (pb, b) in zip(named, named[1:]):
        between = question[pa:pb]
        if a != b and re.search(rf"\b{_VIEW_VERBS}\b", between, re.IGNORECASE):
            if not re.search(r"\b(and|or)\b", between, re.IGNORECASE) or re.search(
                rf"\b{_VIEW_VERBS}\b\s+(?:of|about|on|that)?\s*$", between, re.IGNORECASE
            ):
                views.append(View(source_id=a, owner_id=b))
    return views


def fallback_issue(question: str, roster: Sequence[RosterMember]) -> str:
    """The question's content words: names, question words and function words removed."""
    text = _PAST_DATE.sub(" ", question)
    for p in roster:
        for term in sorted({p.name, p.id, *p.aliases}, key=len, reverse=True):
            pat = name_pattern(term)
            if pat is not None:
                text = pat.sub(" ", text)
    words: list[tuple[str, bool]] = []  # (word, kept by the stop-word rule)
    for w in _WORD.findall(text):
        w = w.strip("'’-")
        lw = re.sub(r"['’]s$", "", w.lower())
        if lw and not lw.isdigit():
            words.append((re.sub(r"['’]s$", "", w), lw not in STOP_WORDS))
    kept = [w for w, keep in words if keep]
    if any(issue_word_kind(w) == "content" for w in kept):
        return " ".join(kept)
    if kept:
        # No topic word ("How did Ben's opinion change?" -> "change"): keep the decision and
        # stance words the stop list dropped ("opinion change"), so System 2 knows what kind of
        # record is asked about.
        return " ".join(w for w, keep in words if keep or issue_word_kind(w) != "generic")
    # Nothing but names and question words ("What does Ana think of Bo?"): keep the wording
    # without the names, so the embedding still carries the question's sense.
    return " ".join(_WORD.findall(text)) or question.strip()


def fallback_projection(question: str, roster: Sequence[RosterMember], reason: str = "") -> Projection:
    """Deterministic Project (see the module docstring for the rules)."""
    named = [pid for _, pid in find_persons(question, roster)]
    views = detect_views(question, roster)
    rows: list[str] = []
    norm_break = bool(_NORM_BREAK.search(question))
    all_match = _ALL_WORDS.search(question)
    wants_all = bool(all_match) or norm_break
    if wants_all and not norm_break and len(named) >= 2 and not [
        m for m in _ALL_WORDS.finditer(question) if not _EACH_ONLY.fullmatch(m.group(0))
    ]:
        wants_all = False  # "What do A and B each think ...": the named subset
    never = norm_break or (bool(_NEVER_WORDS.search(question)) and wants_all)
    group = bool(_GROUP_WORDS.search(question))
    per_person_stance = wants_all and bool(_STANCE_WORDS.search(question)) and not re.search(
        r"\b(group|finally|final)\b", question, re.IGNORECASE
    )
    if group and (never or per_person_stance):
        group = False
    if wants_all:
        rows.append(ALL)
    elif views:
        owners = list(dict.fromkeys(v.owner_id for v in views))
        sources = {v.source_id for v in views}
        rows.extend(owners)
        rows.extend(pid for pid in named if pid not in owners and pid not in sources)
    else:
        rows.extend(named)
    if group:
        rows.append(GROUP)
    if not rows:
        rows = [ALL]
    tense: Tense = "full" if (_CHANGE_WORDS.search(question) or _PAST_DATE.search(question)) else "head"
    return _finish(
        Projection(
            issue=fallback_issue(question, roster), rows=rows, tense=tense, views=views,
            method="fallback", fallback_reason=reason or "no answer model is configured",
        ),
        roster,
    )


def _finish(p: Projection, roster: Sequence[RosterMember]) -> Projection:
    by_id = {m.id: m.name for m in roster}
    ids = [r for r in p.rows if r not in (ALL, GROUP)] + [v.source_id for v in p.views] + [
        v.owner_id for v in p.views
    ]
    p.names = {i: by_id.get(i, i) for i in ids}
    return p


def _resolve_name(name: str, roster: Sequence[RosterMember]) -> str | None:
    if not name.strip():
        return None
    pid = resolve_person(name, roster)  # the shared resolver: an ambiguous name is not guessed
    if pid is not None:
        return pid
    # "Mum (Linda)" or "Ben's": fall back to a whole-word search inside the element.
    hits = find_persons(name, roster)
    return hits[0][1] if len(hits) == 1 else None


def parse_projection(value: Any, question: str, roster: Sequence[RosterMember]) -> Projection:
    """Validate the model's JSON against the roster.

    Unknown names are dropped; the issue falls back to the question's content words when empty;
    a tense other than head/full becomes full (when in doubt, extra history is harmless).

    Raises:
        ValueError: the value is unusable (not an object, or no valid row remains).
    """
    if not isinstance(value, dict):
        raise ValueError("projection is not a JSON object")
    raw_rows = value.get("rows")
    if isinstance(raw_rows, str):
        raw_rows = [raw_rows]
    if not isinstance(raw_rows, list):
        raise ValueError("projection has no rows list")
    rows: list[str] = []
    for r in raw_rows:
        if not isinstance(r, str):
            continue
        token = r.strip()
        pid: str | None
        if token.upper() in (ALL, GROUP):
            pid = token.upper()
        else:
            pid = _resolve_name(token, roster)
        if pid is not None and pid not in rows:
            rows.append(pid)
    if not rows:
        raise ValueError(f"no usable row in {raw_rows!r}")
    issue = value.get("issue")
    issue = issue.strip() if isinstance(issue, str) else ""
    tense = value.get("tense")
    tense = tense.strip().lower() if isinstance(tense, str) else ""
    return _finish(
        Projection(
            issue=issue or fallback_issue(question, roster),
            rows=rows,
            tense=cast(Tense, tense) if tense in ("head", "full") else "full",  # checked: one of Tense's values
            views=detect_views(question, roster),
            method="model",
        ),
        roster,
    )


def project(
    question: str, roster: Sequence[RosterMember], model: ChatModel | None
) -> tuple[Projection, list[Usage]]:
    """Run Project.

    Args:
        question: the user's question.
        roster: the group's roster (:func:`graphmem.query.people.read_roster`).
        model: the answer model, or None for the deterministic fallback.

    Returns:
        (projection, usages): ``usages`` holds the model call's usage (empty without a model).
        Never raises for model trouble: failures and unusable output fall back, and
        ``projection.fallback_reason`` says why.
    """
    if model is None:
        return fallback_projection(question, roster), []
    messages = [
        {"role": "system", "content": prompts.PROJECT_SYSTEM},
        {"role": "user", "content": prompts.PROJECT_USER.format(question=question,
                                                                     roster="\n".join(fence("ROSTER", [roster_text(roster)])))},
    ]
    value, usage, error = call_json(model, messages, stage="project", max_tokens=300)
    usages = [usage] if usage is not None else []
    if error:
        return fallback_projection(question, roster, f"project: {error}"), usages
    try:
        return parse_projection(value, question, roster), usages
    except ValueError as e:
        return fallback_projection(question, roster, f"unusable project output: {e}"), usages


def call_json(
    model: ChatModel, messages: list[dict[str, str]], *, stage: str, max_tokens: int
) -> tuple[Any, Usage | None, str]:
    """One JSON call that never raises for model trouble.

    Returns:
        (value, usage, error): ``error`` is "" on success. When the endpoint answered with text
        that holds no JSON, ``usage`` is an estimate (the ledger has the exact counts) and
        ``value`` is None; when the endpoint failed, ``usage`` is None.
    """
    try:
        value, usage = model.complete_json(messages, stage=stage, max_tokens=max_tokens)
        return value, usage, ""
    except LLMOutputError as e:
        prompt = "\n".join(m["content"] for m in messages)
        est = Usage(stage, model.model, estimate_tokens(prompt), estimate_tokens(e.text), 0.0, True)
        return None, est, f"model output had no JSON ({e})"
    except LLMError as e:
        return None, None, f"model call failed ({e})"
