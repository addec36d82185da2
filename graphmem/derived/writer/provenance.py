"""Provenance of a derived record: the supporting messages (FROM) and the confidence.

Source: SpeakerMem-R1 §3.2 (FROM links), App. E (confidence).
"""

from __future__ import annotations

from collections.abc import Sequence

from graphmem.derived import memory
from graphmem.core.errors import InvalidInputError
from graphmem.derived.memory import GROUP
from graphmem.verbatim.roster import Roster, RosterEntry
from graphmem.core.text import FUNCTION_WORDS
from graphmem.derived.writer.segments import SegmentMessage


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:6]


def _content_words(text: str) -> set[str]:
    return {_stem(w) for w in memory.normalise_content(text).split() if w not in FUNCTION_WORDS and len(w) > 1}


def _shared_words(words: set[str], text: str) -> set[str]:
    """Which of ``words`` (stemmed content words) ``text`` holds."""
    return words & {_stem(w) for w in memory.normalise_content(text).split()}


def _mentions(text_norm: str, entry: RosterEntry | None) -> bool:
    if entry is None:
        return False
    padded = f" {text_norm} "
    for name in {entry.name, entry.id, *entry.aliases}:
        n = memory.normalise_content(name)
        if n and f" {n} " in padded:
            return True
    return False


#: Confidence per support tier of :func:`supporting_messages`.
SUPPORT_CONFIDENCE = {"related+overlap": 0.9, "related": 0.7, "overlap": 0.5, "segment": 0.3}


def supporting_messages(
    messages: Sequence[SegmentMessage],
    *,
    owner: str,
    source: str,
    content: str,
    roster: Roster,
    limit: int = 5,
) -> tuple[list[SegmentMessage], float, str]:
    """Pick the segment messages a record is written FROM, and the record's confidence.

    A message is *related* when the source (a person) spoke it, or - for a person owner - the
    owner spoke it or it names the owner (display name, id or alias); when owner and source
    are both GROUP every message is related. *Overlap* is the number of content words
    (lower-cased, stop words dropped, light stemming) shared with the record. The first
    non-empty tier wins, at most ``limit`` messages of it ranked by overlap then recency,
    returned in conversation order:

    ======================  ==========
    tier                    confidence
    ======================  ==========
    related and overlap     0.9
    related                 0.7
    overlap                 0.5
    whole segment           0.3
    ======================  ==========

    Blank messages (whitespace only) are never chosen. So the result is never empty for a
    segment with at least one non-blank message.

    The choice shows whom the record credits where the segment allows it: a person source who
    spoke in the segment always has one of their messages among the result (it replaces the
    weakest), and for GROUP as source a second member's message of the same tier replaces the
    weakest when the chosen ones all come from one member. Whether the credit holds is decided
    by :func:`graphmem.writer.attribution.check_attribution`, which refuses the record otherwise.

    Returns:
        ``(messages, confidence, tier name)``.
    """
    messages = [m for m in messages if m.text.strip()]  # a blank message supports nothing
    if not messages:
        raise InvalidInputError("a segment without a non-blank message has no supporting messages")
    words = _content_words(content)
    owner_entry = roster.entry(owner) if owner != GROUP else None
    scored = []
    for m in messages:
        norm = memory.normalise_content(m.text)
        overlap = len(words & {_stem(w) for w in norm.split()})
        if owner == GROUP and source == GROUP:
            related = True
        else:
            related = (source != GROUP and m.person_id == source) or (
                owner != GROUP and (m.person_id == owner or _mentions(norm, owner_entry)))
        scored.append((m, related, overlap))
    tiers = (
        ("related+overlap", [s for s in scored if s[1] and s[2] > 0]),
        ("related", [s for s in scored if s[1]]),
        ("overlap", [s for s in scored if s[2] > 0]),
        ("segment", scored),
    )
    for name, pool in tiers:
        if pool:
            ranked = sorted(pool, key=lambda s: (s[2], s[0].turn_created), reverse=True)
            best = _with_attribution(ranked[: max(1, limit)], ranked, scored, source=source, limit=limit)
            chosen = sorted((s[0] for s in best), key=lambda m: m.turn_created)
            return chosen, SUPPORT_CONFIDENCE[name], name
    raise AssertionError("unreachable")  # the last tier holds every message


_Scored = tuple[SegmentMessage, bool, int]


def _with_attribution(
    best: list[_Scored], ranked: list[_Scored], scored: list[_Scored], *, source: str, limit: int,
) -> list[_Scored]:
    """Make the chosen messages show who the record is credited to, where the segment allows it.

    A person source: when none of the chosen messages is theirs but they spoke in the segment,
    their best message (overlap, then recency) takes the place of the weakest chosen one. GROUP
    as source: when the chosen messages come from one member only, the best message of another
    member *in the same tier* takes that place (a message sharing no word with the record does
    not speak for the group). What cannot be fixed here is refused by
    :func:`graphmem.writer.attribution.check_attribution`.
    """
    keep = max(1, limit - 1)
    if source != GROUP:
        if any(s[0].person_id == source for s in best):
            return best
        own = sorted((s for s in scored if s[0].person_id == source),
                     key=lambda s: (s[2], s[0].turn_created), reverse=True)
        return best[:keep] + own[:1] if own else best
    speakers = {s[0].person_id for s in best}
    if len(speakers) >= 2:
        return best
    others = [s for s in ranked if s[0].person_id not in speakers]
    return best[:keep] + others[:1] if others else best


def _name_words(roster: Roster) -> set[str]:
    """Stemmed words of every roster name, id and alias (not evidence of what was said)."""
    words: set[str] = set()
    for e in roster.entries:
        for name in {e.name, e.id, *e.aliases}:
            words |= {_stem(w) for w in memory.normalise_content(name).split()}
    return words


def reported_claim(
    messages: Sequence[SegmentMessage], *, source: str, content: str, roster: Roster,
) -> SegmentMessage | None:
    """The message that shows a record credited to ``source`` is someone else's report about them.

    "Dad decided we take the ridge trail", written by Ana, is Ana's claim about Dad: the
    record's words are in Ana's message that names Dad, not in anything Dad wrote. This finds
    the message by another member that names ``source`` (display name, id or alias) and shares
    more of the record's content words (names left out) than the best of ``source``'s own
    messages in the segment; ties go to ``source``.

    Args:
        messages: the segment's messages.
        source: a Person id (GROUP never has a report: returns None).
        content: the record's content.
        roster: the group's roster.

    Returns:
        The reporting message (most overlap, then most recent), or None when the record's words
        are at least as much ``source``'s own.
    """
    if source == GROUP:
        return None
    entry = roster.entry(source)
    words = _content_words(content) - _name_words(roster)
    if entry is None or not words:
        return None
    own = 0
    reports: list[tuple[int, int, SegmentMessage]] = []
    for m in messages:
        if not m.text.strip():
            continue
        overlap = len(_shared_words(words, m.text))
        if m.person_id == source:
            own = max(own, overlap)
        elif _mentions(memory.normalise_content(m.text), entry):
            reports.append((overlap, m.turn_created, m))
    strongest = max(reports, key=lambda r: (r[0], r[1]), default=None)
    return strongest[2] if strongest is not None and strongest[0] > own else None


def words_elsewhere(
    messages: Sequence[SegmentMessage], *, source: str, content: str, roster: Roster,
) -> SegmentMessage | None:
    """The message whose words a record credited to ``source`` carries rather than ``source``'s own.

    Let ``A`` be the record's content words (names left out) found in the other member's
    message that holds most of them, and ``S`` those found in anything ``source`` wrote in the
    segment. That message is returned when ``S`` is empty and ``A`` is not, or when ``A`` holds
    two words or more and ``source`` said fewer than half of them. One word of the source's own
    ("fine with whatever you pick" -> "Dad made the final *pick*: we take the ridge trail") no
    longer carries a decision whose matter is another member's words; a decision that repeats
    most of a proposal's words ("ridge trail on Saturday, final") still does. Unlike
    :func:`reported_claim` the other message need not name ``source``.

    Args:
        messages: the segment's messages.
        source: a Person id (GROUP: returns None).
        content: the record's content.
        roster: the group's roster.
    """
    if source == GROUP:
        return None
    words = _content_words(content) - _name_words(roster)
    if not words:
        return None
    own: set[str] = set()
    best: tuple[int, int, SegmentMessage, set[str]] | None = None
    for m in messages:
        if not m.text.strip():
            continue
        shared = _shared_words(words, m.text)
        if m.person_id == source:
            own |= shared
        elif shared and (best is None or (len(shared), m.turn_created) > best[:2]):
            best = (len(shared), m.turn_created, m, shared)
    if best is None:
        return None
    theirs = best[3]
    if not own or (len(theirs) >= 2 and 2 * len(own & theirs) < len(theirs)):
        return best[2]
    return None


def record_time(support: Sequence[SegmentMessage], source: str) -> SegmentMessage:
    """The message that dates a record: the newest FROM message its source spoke (a person
    source), or the newest FROM message (GROUP as source).

    Raises:
        InvalidInputError: a person source spoke none of ``support`` (the attribution rules of
            :func:`graphmem.writer.attribution.check_attribution` refuse such a record first), or
            ``support`` is empty.
    """
    spoken = list(support) if source == GROUP else [m for m in support if m.person_id == source]
    if not spoken:
        raise InvalidInputError(f"source {source!r} spoke none of the record's supporting messages",
                                field="source")
    return max(spoken, key=lambda m: m.turn_created)
