"""Attribution: whom a derived record credits, checked against who spoke in its FROM messages.

The rules hold for every ADD and UPDATE whatever the Writer model answered, so no text in a
chat can change who is credited (DESIGN.md "Guarantees"; docs/writer.md "Attribution";
docs/security.md "Attribution"). :func:`graphmem.writer.validate.validate_actions` calls
:func:`check_attribution` for each action; the UPDATE-only rules (``update_owner_changed``,
``update_recredits_decision``) live there beside the other UPDATE rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from graphmem.derived.memory import GROUP
from graphmem.verbatim.roster import Roster
from graphmem.derived.writer.provenance import reported_claim, supporting_messages, words_elsewhere
from graphmem.derived.writer.segments import SegmentMessage

#: The attribution reasons among :data:`graphmem.writer.validate.REASONS`: who a record credits,
#: checked against who spoke in its FROM messages (docs/writer.md "Attribution").
ATTRIBUTION_REASONS: tuple[str, ...] = (
    "source_not_speaker",
    "reported_claim_source",
    "group_source_single_speaker",
    "update_owner_changed",
    "update_recredits_decision",
    "decision_not_in_source_words",
    "claim_not_in_source_words",
)


#: Words that state a decision, whatever utype the record was given ("Dad decided ..." filed as
#: a stance or a fact is held to the decision rule too).
DECISION_WORDS = re.compile(r"\b(decid\w*|decision\w*|settl\w*|final|finali[sz]\w*|chose|chosen|choices?)\b",
                            re.IGNORECASE)


@dataclass(frozen=True)
class Attribution:
    """The outcome of :func:`check_attribution` for one record.

    Attributes:
        support: the FROM messages, conversation order (chosen even when refused).
        confidence: the support tier's confidence.
        reason: "" when the credit holds, else one of :data:`ATTRIBUTION_REASONS`.
        detail: why, naming the people and messages involved.
    """

    support: tuple[SegmentMessage, ...]
    confidence: float
    reason: str = ""
    detail: str = ""


def check_from(support: Sequence[SegmentMessage], *, source: str, roster: Roster) -> tuple[str, str]:
    """The rules on who spoke in a record's FROM messages, for a record whose FROM is given
    rather than picked: an imported one (:func:`graphmem.groups.export.import_group`), which
    also passes :func:`check_attribution` against its segment's messages (that one picks FROM
    itself and applies these rules to what it picked).

    - a person SOURCE is the speaker of at least one FROM message -> else ``source_not_speaker``;
    - GROUP as SOURCE needs FROM messages from at least two distinct members -> else
      ``group_source_single_speaker``.

    Returns:
        ``(reason, detail)``: ``("", "")`` when the credit holds, else one of
        :data:`ATTRIBUTION_REASONS` and why, naming the people.
    """
    speakers = {m.person_id for m in support}
    if source == GROUP:
        if len(speakers) < 2:
            who = ", ".join(repr(roster.label(p)) for p in sorted(speakers)) or "nobody"
            return ("group_source_single_speaker",
                    f"GROUP as source needs messages from two members; the messages behind this record are "
                    f"from {who} only")
        return "", ""
    if source not in speakers:
        return ("source_not_speaker",
                f"source {roster.label(source)!r} sent none of the messages behind this record; a record is "
                "credited only to a speaker of its messages")
    return "", ""


def check_attribution(
    messages: Sequence[SegmentMessage],
    *,
    owner: str,
    source: str,
    content: str,
    roster: Roster,
    from_max: int = 5,
    utype: str = "",
) -> Attribution:
    """Check whom a record credits against who spoke in the messages it is written FROM.

    The rules hold whatever the Writer model answered (a chat message that tells the model to
    credit someone cannot move the credit):

    - a person SOURCE is the speaker of at least one FROM message (FROM always includes a
      message of theirs when they spoke in the segment) -> else ``source_not_speaker``;
    - a person SOURCE is not someone whom another member's message *reports*: when a message
      by another member names the source and carries more of the record's words than anything
      the source wrote, the record is that member's claim about them (SOURCE = the reporter,
      OWNER = the one named) -> ``reported_claim_source``;
    - GROUP as SOURCE needs FROM messages from at least two distinct members ->
      else ``group_source_single_speaker``;
    - a decision (``utype`` "decision", or content that states one: :data:`DECISION_WORDS`; ADD
      or UPDATE) credited to a person is in that person's own words: when another member's
      message carries its words and the source said none of them, or fewer than half of two or
      more (:func:`graphmem.writer.provenance.words_elsewhere`), it is that member's account
      ("my father has made the final decision ...", whoever it names or does not name) ->
      ``decision_not_in_source_words``;
    - any other record credited to a person is in that person's words or answers another's:
      when another member's message carries its words, the person said none of them, or fewer
      than half of two or more (one shared word is not the matter), and wrote nothing after
      that message (no reply that could agree or answer), the words are
      that member's claim ("my father took the money from the fund", naming nobody, beside
      Dad's earlier "ok") -> ``claim_not_in_source_words``. A short reply *after* a proposal
      or question still carries a stance or a fact ("Shall we take the ridge trail?" - "fine
      by me").

    Args:
        messages: the segment's messages.
        owner / source: Person ids or :data:`GROUP`.
        content: the record's content.
        roster: the group's roster.
        from_max: at most this many FROM messages.
        utype: the record's update type (``decision`` turns on the decision rule; an UPDATE of a
            decision passes ``decision`` whatever utype it asks for).

    Returns:
        An :class:`Attribution` (``reason`` "" when the credit holds).

    Raises:
        InvalidInputError: the segment has no non-blank message.
    """
    support, confidence, _tier = supporting_messages(messages, owner=owner, source=source, content=content,
                                                     roster=roster, limit=from_max)
    found = tuple(support)
    if source == GROUP:  # two members among the messages it picked
        reason, detail = check_from(found, source=source, roster=roster)
        return Attribution(found, confidence, reason, detail)
    name = roster.label(source)
    if not any(m.person_id == source for m in support):
        return Attribution(found, confidence, "source_not_speaker",
                           f"source {name!r} did not speak in this segment; a record is credited only to "
                           "a speaker of its messages")
    report = reported_claim(messages, source=source, content=content, roster=roster)
    if report is not None:
        reporter = roster.label(report.person_id) if report.person_id in roster else report.speaker
        return Attribution(found, confidence, "reported_claim_source",
                           f"the record's words are {reporter!r}'s report about {name!r} (message "
                           f"{report.id}), not {name!r}'s own: source {reporter!r}, owner {name!r}")
    if utype == "decision" or DECISION_WORDS.search(content):
        other = words_elsewhere(messages, source=source, content=content, roster=roster)
        if other is not None:
            teller = roster.label(other.person_id) if other.person_id in roster else other.speaker
            return Attribution(found, confidence, "decision_not_in_source_words",
                               f"a decision is credited to whoever states it, and nothing {name!r} wrote "
                               f"here carries its words; they are {teller!r}'s (message {other.id}): "
                               f"source {teller!r}")
        return Attribution(found, confidence)
    other = words_elsewhere(messages, source=source, content=content, roster=roster)
    if other is not None and not any(m.person_id == source and m.turn_created > other.turn_created
                                     for m in messages if m.text.strip()):
        teller = roster.label(other.person_id) if other.person_id in roster else other.speaker
        return Attribution(found, confidence, "claim_not_in_source_words",
                           f"nothing {name!r} wrote here carries the record's words, and {name!r} wrote nothing "
                           f"after {teller!r}'s message {other.id} that carries them: the words are "
                           f"{teller!r}'s claim (source {teller!r}, owner as it is about)")
    return Attribution(found, confidence)
