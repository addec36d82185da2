"""The domain model: constants, input records, and the one stored-message shape.

- Constants: the reserved :data:`GROUP` owner, :data:`ALL` (Project's every-row marker), the
  derived layers and record types (SpeakerMem-R1 §3.1, App. B.1) and record states.
- Input records: :class:`MessageRecord` / :class:`Conversation` (what a loader or the API
  hands to ingest) and :class:`Question` (benchmarks).
- :class:`Projection` (with :class:`View`) is a question projected to rows, an issue and a
  tense (SpeakerMem-R1 §3.3 eq. 4): Project writes it, the recall pool and System 2 read it.
- :class:`Message` is the verbatim message every shape shares (id, channel, session, turn, ts,
  speaker, text); :class:`StoredMessage` adds what System 1 stored (person_id, turn_created).
  The Writer's ``SegmentMessage``, provenance's ``ProvenanceMessage`` and the ask pipeline's
  ``Excerpt`` extend them; :class:`MessageRecord` extends :class:`Message`.

Nothing here touches Neo4j or a model; loaders, the library and the API import it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from graphmem.core.limits import has_visible

__all__ = [
    "ALL",
    "GROUP",
    "GROUP_LAYERS",
    "HEAD",
    "LAYERS",
    "LAYER_LABELS",
    "PERSON_LAYERS",
    "STATES",
    "SUPERSEDED",
    "UTYPES",
    "record_label",
    "Attachment",
    "Conversation",
    "KINDS",
    "Message",
    "MessageRecord",
    "Question",
    "StoredMessage",
    "Projection",
    "Tense",
    "View",
]

#: Reserved owner/source name of the group itself (GROUP scope).
GROUP = "GROUP"
#: Project's row marker for "every person of the roster".
ALL = "ALL"

#: Layer code name (the Writer contract) -> graph label. The only labels ever written.
LAYER_LABELS: dict[str, str] = {
    "per_speaker_core": "Core",
    "per_speaker_profile": "Profile",
    "group_interaction": "Interaction",
    "group_insight": "Insight",
}
#: All derived layers, in the paper's order.
LAYERS: tuple[str, ...] = tuple(LAYER_LABELS)
#: PERSON-scoped layers: the owner is a Person.
PERSON_LAYERS: frozenset[str] = frozenset({"per_speaker_core", "per_speaker_profile"})
#: GROUP-scoped layers: the owner is the Group node (owner name :data:`GROUP`).
GROUP_LAYERS: frozenset[str] = frozenset({"group_interaction", "group_insight"})
#: Record types of derived records (DESIGN.md; the paper's ``utterance`` is System 1 only).
UTYPES: tuple[str, ...] = ("fact", "stance", "observation", "decision", "relation")

#: States of a derived record version.
HEAD = "head"
SUPERSEDED = "superseded"
STATES: tuple[str, ...] = (HEAD, SUPERSEDED)


class Message(BaseModel):
    """One verbatim message: the fields every message shape shares.

    Attributes:
        id: message id, unique within its group.
        channel: channel inside the group ("" when the source has a single channel).
        session: session id, unique within the group.
        turn: 0-based position of the message inside its session.
        ts: ISO-8601 timestamp (a timezone given in the input is kept).
        speaker: display name of the speaker at the time of the message.
        text: message text, exactly as received (never normalised or truncated).
    """

    id: str
    channel: str = ""
    session: str
    turn: int = 0
    ts: str
    speaker: str
    text: str


class StoredMessage(Message):
    """A message as System 1 stores it: a :class:`Message` with its speaker's Person and write order.

    Attributes:
        person_id: the speaker's Person id in the group (speaker_id, else display name).
        turn_created: write order in the group (0-based, increasing with every new message).
    """

    person_id: str
    turn_created: int


#: Who a message's words belong to: ``""`` a person (the speaker), ``"bot"`` an app or bot
#: posting under an account, ``"system"`` a platform line ("joined", "changed the subject").
#: Bot and system messages are stored and ordered like any message but are never a person's
#: own words: the Writer gets none of them as evidence (docs/import.md).
KINDS: tuple[str, ...] = ("", "bot", "system")


class Attachment(BaseModel):
    """One file attached to a message, as the export names it.

    Attributes:
        name: file name or path as written in the export (``"IMG-20250701-WA0003.jpg"``).
        media_type: the platform's kind or MIME type (``"image/jpeg"``, ``"photo"``,
            ``"sticker"``), or "" when the export gives none.
    """

    model_config = ConfigDict(frozen=True)

    name: str = ""
    media_type: str = ""


class MessageRecord(Message):
    """One verbatim message (System 1 / per_speaker_episodic), as parsed from the input.

    The input record a loader (or the API) hands to ingest; a :class:`Message` with its place.

    Attributes:
        id: message id as given by the source (unique within its group), e.g. ``"D1:3"``.
        group_id: the memory space this message belongs to (conversation, network, domain...).
        channel: channel inside the group ("" when the source has a single channel).
        session: session id, unique within the group (loaders qualify it by channel when needed).
        session_index: 1-based order of the session within its channel.
        session_ts: ISO-8601 time of the session start, or "" when unknown.
        turn: 0-based position of the message inside its session, in conversation order.
        speaker: display name of the speaker at the time of this message.
        speaker_id: stable speaker id when the source has one, else "".
        text: message text, exactly as received (never normalised or truncated).
        ts: ISO-8601 timestamp; a timezone given in the input is kept.
        reply_to: id of the message this one replies to, or "".
        source_ref: where the record came from ("file.jsonl:12"), for error messages.
        kind: ``""`` (a person's message), ``"bot"`` or ``"system"`` (:data:`KINDS`).
        attachments: files attached to the message, in export order (an attachment-only
            message has text "" and at least one).
        mentions: person ids (speaker ids) the text mentions, in order of first mention; the
            text keeps the mention as shown (``"@Mei"``).
        edited_ts: ISO-8601 time of the platform's last edit, or "" (never edited or unknown).
        edited: whether the platform marks the message as edited (with or without a time).
        id_from_content: the id is derived from the message's time, speaker and text because
            the format has none (WhatsApp): an edit gives it a new id, which the ingest joins
            to the stored message it replaces (:mod:`graphmem.verbatim.ingest`).
        order_instant: the message's order key as stored before (epoch seconds, at or after
            ``ts``): a group export's (:mod:`graphmem.groups.export`), so a message that arrived
            late, or whose input's order raised it, keeps its place. None (every loader and the
            API): its instant, raised to the latest before it in its channel's input order.
    """

    model_config = ConfigDict(frozen=True)

    group_id: str
    session_index: int = Field(ge=0)
    session_ts: str = ""
    turn: int = Field(ge=0)
    speaker_id: str = ""
    reply_to: str = ""
    source_ref: str = ""
    kind: Literal["", "bot", "system"] = ""
    attachments: tuple[Attachment, ...] = ()
    mentions: tuple[str, ...] = ()
    edited_ts: str = ""
    edited: bool = False
    id_from_content: bool = False
    order_instant: float | None = None

    @property
    def no_text(self) -> bool:
        """True when the text has no visible character (blank, whitespace, zero-width only or
        attachment-only): stored verbatim, not indexed for search, not Writer evidence."""
        return not has_visible(self.text)


def record_label(source_ref: str, source: str) -> str:
    """The record part of a :attr:`MessageRecord.source_ref`, for error messages.

    ``"chat.jsonl:12"`` -> ``"line 12"``; ``"f.json#conv-26/D1:3"`` -> ``"conv-26/D1:3"``;
    anything else is returned as is.
    """
    if source_ref.startswith(source + ":"):
        return "line " + source_ref[len(source) + 1 :]
    if source_ref.startswith(source + "#"):
        return source_ref[len(source) + 1 :]
    return source_ref


class Conversation(BaseModel):
    """The messages of one group, in conversation order (the order NEXT follows).

    Attributes:
        group_id: unique id of the memory space.
        name: human-readable name of the group.
        messages: messages in conversation order.
        source: file the conversation was read from.
    """

    group_id: str
    name: str = ""
    messages: list[MessageRecord]
    source: str = ""


class Question(BaseModel):
    """One benchmark question.

    Attributes:
        id: question id, unique within the benchmark run (e.g. ``"conv-26/q17"``).
        group_id: the group (memory space) the question is about.
        question: question text (for multiple choice, without the options).
        answer: gold answer as a string (integers are cast to str).
        category: benchmark category label (LoCoMo "1".."5", SocialMem "Q1".."Q9", ...).
        evidence_ids: ids of the gold evidence messages within the group (validated ids only).
        options: multiple-choice options by letter, or {} for open questions.
        correct_option: the correct letter for multiple choice, or "".
        asker: speaker id / name of the person asking (first-person questions), or "".
        extra: format-specific fields kept for reporting (difficulty, answer_format, ...).
    """

    id: str
    group_id: str
    question: str
    answer: str
    category: str = ""
    evidence_ids: list[str] = Field(default_factory=list)
    options: dict[str, str] = Field(default_factory=dict)
    correct_option: str = ""
    asker: str = ""
    extra: dict[str, object] = Field(default_factory=dict)


Tense = Literal["head", "full"]
"""``"head"``: the current state only; ``"full"``: update chains with their times."""


class View(BaseModel):
    """A source-owner constraint: the question asks how ``source_id`` sees ``owner_id``."""

    source_id: str
    owner_id: str


class Projection(BaseModel):
    """Output of Project (SpeakerMem-R1 §3.3 eq. 4, App. I.3).

    Attributes:
        issue: the one matter asked about (a short noun phrase).
        rows: ``"ALL"``, ``"GROUP"`` and person ids, in the order given.
        tense: ``"head"`` (current state only) or ``"full"`` (update chains with times).
        views: source-owner constraints ("A's view of B" -> source A, owner B).
        names: person id -> display name, for every person id in ``rows`` or ``views``.
        method: ``"model"`` when the language model's projection was used, else ``"fallback"``.
        fallback_reason: why the deterministic fallback was used ("" for ``"model"``).
    """

    issue: str
    rows: list[str]
    tense: Tense
    views: list[View] = Field(default_factory=list)
    names: dict[str, str] = Field(default_factory=dict)
    method: Literal["model", "fallback"] = "fallback"
    fallback_reason: str = ""
