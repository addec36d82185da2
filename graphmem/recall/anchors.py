"""Anchors of a question: the people, times and sessions it names (SpeakerMem-R1 §3.3 Anchor).

"Global top-k returns only frequent members and misses infrequent or late-arriving ones": System
1 therefore gives each anchor its own sub-pool on its own budget (see
:mod:`graphmem.query.system1`). This module only reads the question; it never touches the store.

- **People**: roster members named in the question by name, alias or speaker id
  (:func:`graphmem.verbatim.roster.find_persons`). "Each / every / who never ..." questions ask
  about every member (:attr:`Anchors.every_member`).
- **Time**: calendar dates ("2023-05-08", "8 May 2023", "May 8, 2023", "May 8th"), months
  ("in March 2023", "March 2023") and years ("in 2023") become instant windows
  ``[start, end)`` in UTC (a date without a year matches that day in every year the group
  spans); "session 3" / "by Session 2" become session indexes.
- **Change**: "used to", "changed", "at first", "now" ... questions want the earliest and the
  latest turns on the matter.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Sequence

from graphmem.verbatim.roster import find_persons
from graphmem.core.model import Projection
from graphmem.verbatim.roster import RosterMember


#: words that ask about every member ("each", "who never", ...); Project reads them too
ALL_MEMBERS_WORDS = re.compile(
    r"\b(each|every|everyone|everybody|all\s+of|all\s+the\s+members|all\s+members|anyone|"
    r"anybody|nobody|no\s+one|who\s+never|never\s+once|which\s+members?|whole\s+group|"
    r"who\s+(?:did|does|do|has|have|had|was|were|is|are)\s*(?:n't|not)\b|"
    r"who\s+(?:didn't|doesn't|don't|hasn't|haven't|hadn't|wasn't|weren't|isn't|aren't))",
    re.IGNORECASE,
)
_MONTH_NAMES = {
    name.lower(): i for i, name in enumerate(calendar.month_name) if name
} | {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name} | {"sept": 9}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTH_NAMES, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"

_DATE_PATTERNS = [
    re.compile(r"\b(?P<year>(?:19|20)\d{2})-(?P<mnum>[01]\d)-(?P<day>[0-3]\d)\b"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b(?!\s*(?:am|pm|:))", re.IGNORECASE),
]
_MONTH_ONLY = re.compile(rf"\b(?:in|during|since|by|of|back\s+in)?\s*{_MONTH}(?:\s+{_YEAR})?\b", re.IGNORECASE)
_YEAR_ONLY = re.compile(rf"\b(?:in|during|since|of|back\s+in)\s+{_YEAR}\b", re.IGNORECASE)
_SESSION = re.compile(r"\bsession\s+(\d{1,3})\b", re.IGNORECASE)
_CHANGE = re.compile(
    r"\b(chang\w*|used\s+to|originally|at\s+first|initially|evolv\w*|shift\w*|switch\w*|"
    r"no\s+longer|anymore|over\s+time|now|before|after|earlier|later|first|latest|last|"
    r"still|became|become|turn\w*\s+(?:into|out))\b",
    re.IGNORECASE,
)
# Month names that are also everyday words count only when capitalised or next to a number.
_AMBIGUOUS_MONTHS = {"may", "march", "mar", "jun", "jan", "dec", "oct", "nov", "aug", "sep", "apr", "feb", "jul"}


@dataclass
class Anchors:
    """What a question pins down.

    Attributes:
        persons: ids of the roster members named, in order of appearance.
        every_member: the question asks about every member ("each", "everyone", "who never").
        windows: instant windows ``(start, end)`` in epoch seconds (UTC), end exclusive.
        sessions: session indexes named ("session 2").
        change: the question is about a change over time.
    """

    persons: list[str] = field(default_factory=list)
    every_member: bool = False
    windows: list[tuple[float, float]] = field(default_factory=list)
    sessions: list[int] = field(default_factory=list)
    change: bool = False


def _utc(y: int, m: int, d: int) -> float:
    return datetime(y, m, d, tzinfo=timezone.utc).timestamp()


def _day_window(y: int, m: int, d: int) -> tuple[float, float] | None:
    try:
        start = _utc(y, m, d)
    except ValueError:
        return None
    return start, start + 86_400.0


def _month_window(y: int, m: int) -> tuple[float, float]:
    end = _utc(y + 1, 1, 1) if m == 12 else _utc(y, m + 1, 1)
    return _utc(y, m, 1), end


def _month_of(token: str) -> int | None:
    return _MONTH_NAMES.get(token.lower().rstrip("."))


def time_windows(question: str, years: Sequence[int] = ()) -> list[tuple[float, float]]:
    """Instant windows named by ``question`` (see the module docstring).

    Args:
        question: free text.
        years: the years the group spans, used for dates given without a year.

    Returns:
        ``(start, end)`` epoch seconds (UTC), end exclusive, in order of appearance, no repeats.
    """
    out: list[tuple[float, float]] = []
    taken: list[tuple[int, int]] = []

    def add(w: tuple[float, float] | None, span: tuple[int, int]) -> None:
        if w is not None and w not in out:
            out.append(w)
        taken.append(span)

    for pat in _DATE_PATTERNS:
        for m in pat.finditer(question):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            groups = m.groupdict()
            month = int(groups["mnum"]) if groups.get("mnum") else _month_of(groups["month"])
            if month is None or not 1 <= month <= 12:
                continue
            day = int(groups["day"])
            ys = [int(groups["year"])] if groups.get("year") else list(years)
            for y in ys:
                add(_day_window(y, month, day), m.span())
            if not ys:
                taken.append(m.span())
    for m in _MONTH_ONLY.finditer(question):
        if any(a < m.end() and m.start() < b for a, b in taken):
            continue
        word = m.group("month")
        if word.lower().rstrip(".") in _AMBIGUOUS_MONTHS and not (word[0].isupper() and (m.group("year") or m.group(0)[: m.start("month") - m.start()].strip())):
            continue  # "may", "March" as a verb: only "in March", "March 2023" count
        month = _month_of(word)
        ys = [int(m.group("year"))] if m.group("year") else list(years)
        for y in ys:
            add(_month_window(y, month), m.span())  # type: ignore[arg-type]  # month: the month group only matches _MONTH_NAMES' keys, so never None
    for m in _YEAR_ONLY.finditer(question):
        if any(a < m.end() and m.start() < b for a, b in taken):
            continue
        y = int(m.group("year"))
        add((_utc(y, 1, 1), _utc(y + 1, 1, 1)), m.span())
    return out


def find_anchors(
    question: str,
    roster: Sequence[RosterMember],
    projection: Projection | None = None,
    years: Sequence[int] = (),
) -> Anchors:
    """The anchors of ``question``.

    Args:
        question: free text.
        roster: the group's members.
        projection: Project's output when available: its person rows join the named persons.
        years: the years the group's messages span (for dates without a year).
    """
    persons = [pid for _, pid in find_persons(question, roster)]
    if projection is not None:
        ids = {m.id for m in roster}
        persons += [r for r in projection.rows if r in ids and r not in persons]
    return Anchors(
        persons=persons,
        every_member=bool(ALL_MEMBERS_WORDS.search(question)),
        windows=time_windows(question, years),
        sessions=list(dict.fromkeys(int(s) for s in _SESSION.findall(question))),
        change=bool(_CHANGE.search(question)) or (projection is not None and projection.tense == "full"),
    )
