"""Request and response models of the HTTP API (per resource: ...Create in, ...Public out)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from graphmem.core import limits
from graphmem.core.errors import InvalidInputError
from graphmem.core.model import Attachment


def _message_text(value: str) -> str:
    """The library's rule for message text (:func:`graphmem.core.limits.check_message_text`), so the
    request model refuses what ingest would (a text too long, a lone surrogate), field ``text``;
    a text without a visible character is stored, flagged ``no_text``."""
    try:
        limits.check_message_text(value)
    except InvalidInputError as e:
        raise PydanticCustomError("message_text", e.reason) from e
    return value


MessageText = Annotated[str, AfterValidator(_message_text)]


class HealthPublic(BaseModel):
    """``GET /health``: ``status`` is "ok" when Neo4j answered."""

    status: Literal["ok"]
    neo4j: str
    version: str


class NewMessage(BaseModel):
    """One message to append: the one input type of the library (:meth:`graphmem.Memory.append`),
    the HTTP API (``POST /groups/{id}/messages``), the MCP tool ``append_messages`` and the typed
    client (the input rules of docs/reliability.md apply, as for the CLI).

    Attributes:
        id: message id, unique within the group; sending the same id again with the same
            content is a no-op, with new text an edit (the earlier text is kept as history).
        speaker: display name; speaker_id: stable id when the source has one (leave it out
            otherwise: "" is refused, it would file the speaker as a second person).
        text: the message text, stored exactly as sent; refused when it holds a lone UTF-16
            surrogate. A text with no visible character (empty, whitespace, zero-width only: an
            attachment-only message) is stored, flagged ``no_text``: not searchable, not
            Writer evidence, still in the conversation order and a reply target.
        ts: ISO-8601 time (a timezone given is kept; ``Z`` is stored as ``+00:00``).
        session: session name (default "main"); channel: channel inside the group ("" = none).
            With a channel the stored session id is ``"<channel>/<session>"``, as the loaders
            store it.
        reply_to: id of the message this one answers, or "".
        kind: "" (a person's words), "bot" or "system" (a platform line): bot and system
            messages are stored but never given to the Writer as a person's statement.
        attachments: files attached ({"name", "media_type"}), in order.
        mentions: person ids (speaker ids) the text mentions; the text keeps them as shown.
        edited_ts: ISO-8601 time of the platform's last edit of the text, or "".

    A field not listed here is refused (422, ``unknown field``): a misspelt ``replyTo`` used to
    be dropped and the message stored without its reply link. An optional field (one with a
    default) sent as null is the field left out, as JSON Lines and ``Memory.append`` read it
    (``"reply_to": null`` was a 422 here and "no reply" there).
    """

    # the schema's description is written for API users and agents (the docstring is for maintainers)
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "description": "One chat message. Unknown fields are refused; an optional field sent as null is "
                       "left out; a message id sent again with the same text is stored once, with a new "
                       "text it is an edit."})

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        """Leave out the optional fields (those with a default) sent as null: their defaults apply."""
        if isinstance(data, dict):
            fields = cls.model_fields
            return {k: v for k, v in data.items() if v is not None or k not in fields or fields[k].is_required()}
        return data

    id: str = Field(min_length=1, max_length=limits.MAX_ID_CHARS,
                    description="Message id, unique within the group, e.g. \"m1\".")
    speaker: str = Field(min_length=1, max_length=limits.MAX_NAME_CHARS,
                         description="The speaker's display name, e.g. \"Ben\".")
    speaker_id: str | None = Field(default=None, min_length=1, max_length=limits.MAX_ID_CHARS,
                                   description="A stable id of the speaker when the source has one (leave it "
                                               "out otherwise); the person's id then follows it.")
    text: MessageText = Field(description="The text, stored exactly as sent, at most 100,000 characters; a "
                                          "text with no visible character (an attachment-only message, a sticker) "
                                          "is stored flagged no_text and is not searched.")
    ts: str = Field(json_schema_extra={"format": "date-time"},
                    description="When it was sent, ISO-8601, e.g. \"2026-05-10T08:00:00Z\" (a time without a "
                                "zone is UTC; a zone given is kept).")
    session: str = Field(default="main", min_length=1, max_length=limits.MAX_ID_CHARS,
                         description="The session (conversation) it belongs to.")
    channel: str = Field(default="", max_length=limits.MAX_ID_CHARS,
                         description="The channel inside the group, or \"\" for none.")
    reply_to: str = Field(default="", max_length=limits.MAX_ID_CHARS,
                          description="The id of the message this one answers, or \"\".")
    kind: Literal["", "bot", "system"] = Field(
        default="", description="\"\" for a person's message, \"bot\" for an app posting, \"system\" for a "
                                "platform line (joined, renamed): stored, never a person's own words.")
    attachments: list[Attachment] = Field(default_factory=list, max_length=1000,
                                          description="Files attached, as the platform names them.")
    mentions: list[str] = Field(default_factory=list, max_length=1000,
                                description="Person ids the text mentions (the text stays as shown).")
    edited_ts: str = Field(default="", description="When the platform says it was last edited (ISO-8601), or \"\".")


MessageCreate = NewMessage
"""The API's name for :class:`NewMessage` (the same type)."""


class MessagesCreate(BaseModel):
    """``POST /groups/{group_id}/messages``: messages, placed by their time.

    Attributes:
        name: the group's display name when the group is created by this call.
        messages: 1 to 10,000 messages.

    Other fields are refused (422, ``unknown field``), as in each message.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="", max_length=limits.MAX_NAME_CHARS)
    messages: list[NewMessage] = Field(min_length=1, max_length=limits.MAX_MESSAGES_PER_REQUEST)


class IngestPublic(BaseModel):
    """What an append wrote: ``messages_written`` new, ``messages_edited`` new text under a
    stored id (or a later version of an id earlier in the request), ``messages_skipped``
    identical to what is stored or a text the message had before (a stale redelivery).
    ``channels_renamed``: channels of the input filed under the name they were stored with
    (renamed since; ``"<group>: <input name> -> <stored name>"``)."""

    group_id: str
    messages_written: int
    messages_edited: int
    messages_skipped: int
    persons_created: int
    sessions_created: int
    group_created: bool
    channels_renamed: list[str] = Field(default_factory=list)


class EmbedPublic(BaseModel):
    """``POST /groups/{group_id}/embed``: ``embedded`` vectors written by this call (0 when none
    was missing), ``messages`` in the group, ``vector_index`` the group's own vector index ("" while
    it is scored exactly), ``waited_s`` seconds spent waiting for another run of the group."""

    group_id: str
    embedded: int
    messages: int
    vector_index: str = ""
    waited_s: float = 0.0


class ChatImportCreate(BaseModel):
    """``POST /groups/{group_id}/imports``: one platform chat export, as the platform wrote it
    (docs/import.md), into the group of the path.

    Attributes:
        format: ``slack``, ``discord`` (DiscordChatExporter JSON), ``telegram`` (``result.json``),
            ``whatsapp`` (the ``.txt``) or ``auto`` (told from the content's layout).
        content: the export file's text (UTF-8): WhatsApp's ``.txt``, a DiscordChatExporter
            ``.json``, Telegram's ``result.json``.
        content_base64: a ``.zip`` in base64: a Slack workspace export or the zip WhatsApp shares.
        on_bad_record: ``fail`` (default: nothing is written when a record is bad; 422 names
            it) or ``skip`` (every good record is written; the bad ones come back in ``rejects``).

    Exactly one of ``content`` and ``content_base64``; the request body is bounded by
    ``GRAPHMEM_API_MAX_REQUEST_MB`` (413). Other fields are refused (422).
    """

    model_config = ConfigDict(extra="forbid")

    format: Literal["auto", "slack", "discord", "telegram", "whatsapp"] = "auto"
    content: str | None = None
    content_base64: str | None = None
    on_bad_record: Literal["fail", "skip"] = "fail"

    @model_validator(mode="after")
    def _one_content(self) -> ChatImportCreate:
        if (self.content is None) == (self.content_base64 is None):
            raise ValueError("give exactly one of content (the export's text) and content_base64 (a zip)")
        return self


class RejectPublic(BaseModel):
    """One bad record left out by ``on_bad_record=skip``: where it is (``source``: ``upload``
    or ``upload.zip:<member>``; ``record``: line or message id), the ``field`` and the ``rule``
    broken, and the record as read (``raw``)."""

    source: str
    record: str
    field: str
    rule: str
    raw: Any = None


class ChatImportPublic(IngestPublic):
    """What an import wrote (the counts of :class:`IngestPublic`), the ``format`` read, and the
    records left out under ``on_bad_record=skip``: ``messages_rejected`` in all, the first 100
    in ``rejects`` (``rejects_truncated`` when there were more)."""

    format: str
    messages_rejected: int = 0
    rejects: list[RejectPublic] = Field(default_factory=list)
    rejects_truncated: bool = False


class DerivePublic(BaseModel):
    """``POST /groups/{group_id}/derive``: the Writer run (synchronous; call again to continue).

    Attributes:
        segments_written / segments_planned: this call's work (planned is capped by
            ``max_segments``).
        segments_skipped: written segments with nothing to read (every message blank): no
            Writer call was made for them.
        records_added / records_updated: derived records created by ADD / UPDATE.
        actions_attempted / actions_rejected / noops: Writer actions of this call.
        rejections: ``{reason: count}`` of the rejected actions (docs/writer.md "Validation"),
            e.g. ``{"source_not_speaker": 1}`` for a record credited to someone who did not speak.
        pending_messages: messages no segment covers yet; 0 means derivation is complete.
        done: ``pending_messages == 0``.
        calls / prompt_tokens / completion_tokens / model_s / wall_s: Writer cost of this call.
    """

    group_id: str
    model: str
    segments_before: int
    segments_planned: int
    segments_written: int
    segments_skipped: int = 0
    messages: int
    records_added: int
    records_updated: int
    actions_attempted: int
    actions_rejected: int
    noops: int
    rejections: dict[str, int] = Field(default_factory=dict)
    calls: int
    prompt_tokens: int
    completion_tokens: int
    model_s: float
    wall_s: float
    pending_messages: int
    done: bool


class AskCreate(BaseModel):
    """``POST /groups/{group_id}/ask``.

    Attributes:
        question: the question.
        ask: run Sufficiency/ASK (default: GRAPHMEM_S1_ASK_ENABLED).
        s1_k / s2_k / source_k: budgets (defaults from the settings: 10 / 2 / 1; limits in
            :mod:`graphmem.core.limits`, the same for the CLI).
        as_of: answer from the state at this ISO-8601 time.
        tense: force "head" or "full" instead of Project's choice.

    An unknown field ("asOf") is refused (422), as for messages: ignoring it would answer a
    different question than the one asked (here: from the current state instead of the past).
    """

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=limits.MAX_QUESTION_CHARS)
    ask: bool | None = None
    s1_k: int | None = Field(default=None, ge=1, le=limits.MAX_S1_K)
    s2_k: int | None = Field(default=None, ge=0, le=limits.MAX_S2_K)
    source_k: int | None = Field(default=None, ge=0, le=limits.MAX_SOURCE_K)
    as_of: str | None = None
    tense: Literal["head", "full"] | None = None


class DeriveJobAccepted(BaseModel):
    """``POST /groups/{group_id}/derive?background=true`` (202): the job that derives the group.

    Attributes:
        job_id: poll ``GET /jobs/{job_id}`` (``status_url``) for its progress.
        created: False when a job of this group was already queued or running (one per group).
    """

    job_id: str
    group_id: str
    created: bool
    status_url: str
