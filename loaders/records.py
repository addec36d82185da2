"""Typed records shared by every loader.

A loader turns one input file (or folder) into ``Conversation`` objects, each holding the
messages of one group in conversation order, and ``Question`` objects for benchmarks.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MessageRecord(BaseModel):
    """One verbatim message (System 1 / per_speaker_episodic), as parsed from the input.

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
    """

    model_config = ConfigDict(frozen=True)

    id: str
    group_id: str
    channel: str = ""
    session: str
    session_index: int = Field(ge=0)
    session_ts: str = ""
    turn: int = Field(ge=0)
    speaker: str
    speaker_id: str = ""
    text: str
    ts: str
    reply_to: str = ""
    source_ref: str = ""


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
