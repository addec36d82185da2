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
            best = sorted(pool, key=lambda s: (s[2], s[0].turn_created), reverse=True)[: max(1, limit)]
            chosen = sorted((s[0] for s in best), key=lambda m: m.turn_created)
            return chosen, SUPPORT_CONFIDENCE[name], name
    raise AssertionError("unreachable")  # the last tier holds every message
