"""Generic chat format (``--format jsonl``): one JSON object per line.

Line schema::

    {"group": "team-a", "session": "2025-07-01", "speaker": "Mei", "text": "hi 👋",
     "ts": "2025-07-01T10:00:00+02:00",
     "id": "m1", "speaker_id": "u_17", "reply_to": "m0", "channel": "general"}   # optional

``group``, ``session``, ``speaker``, ``text`` and ``ts`` are required strings (``group`` may be
left out when the caller overrides it); ``id``, ``speaker_id``, ``reply_to`` and ``channel`` are
optional strings (``null`` = absent). Other keys are ignored. Blank lines are skipped.

Rules:
- Text is kept exactly as decoded from JSON (no stripping, no Unicode normalisation). It may be
  empty but must be a string; ``speaker``, ``group`` and ``session`` must be non-blank.
- ``ts``: ISO-8601 with or without offset (see :func:`loaders._common.parse_ts`), normalised to
  ``YYYY-MM-DDTHH:MM:SS[.ffffff][+HH:MM]``; a given offset is kept (``Z`` -> ``+00:00``).
- Order within (group, channel): by the real instant (naive timestamps read as UTC), stable for
  ties (file order). ``turn`` = position within the session in that order; ``session_index`` =
  1-based order of the session's first message within the channel; ``session_ts`` = ``ts`` of
  that first message.
- A message without ``id`` gets ``"<session>:<k>"`` (``"<channel>/<session>:<k>"`` when a
  channel is given), ``k`` = 0-based index of the line among the lines of the same
  (group, channel, session) in file order, so ids are stable across runs and under appends.
  Such a positional id may not be another line's id in the same group (a line giving
  ``"s:1"`` as its id beside the second id-less line of session ``s``): the two would be one
  message, the later an edit of the earlier; the later line is refused (field ``id``).
- A message id repeated within a group must repeat the message (skipped by ingest) or change
  only its text (an edit: the later text is stored, the earlier kept as history).
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict, StrictStr

from graphmem.core import limits
from graphmem.core.errors import InvalidInputError
from loaders._common import (
    NonBlankStr,
    SpeakerIdStr,
    Draft,
    PathLike,
    Reject,
    assemble_messages,
    existing_path,
    iter_jsonl,
    parse_ts,
    record_label,
    unique_id_errors,
    validate_item,
)
from graphmem.core.model import Conversation

__all__ = ["JsonlLine", "load_conversations"]


class JsonlLine(BaseModel):
    """One raw line of the generic chat format (strict: strings must be JSON strings)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    group: StrictStr | None = None
    session: NonBlankStr
    speaker: NonBlankStr
    text: StrictStr
    ts: StrictStr
    id: StrictStr | None = None
    speaker_id: SpeakerIdStr | None = None  # "" would key the speaker by display name: a second person
    reply_to: StrictStr | None = None
    channel: StrictStr | None = None


def load_conversations(path: PathLike, group: str | None = None,
                       rejects: list[Reject] | None = None) -> list[Conversation]:
    """Read a chat export in the generic JSON-lines format.

    Args:
        path: the ``.jsonl`` file.
        group: when given, overrides the ``group`` of every line (lines may then omit it).
        rejects: when a list, a bad line (malformed JSON, a missing or wrong field, a group id
            outside the id grammar, a repeated or clashing id) is appended to it as a
            :class:`loaders._common.Reject` and skipped (``--on-bad-record skip``); the first
            occurrence of an id is kept.

    Returns:
        One :class:`Conversation` per group, in order of the group's first line; each holds its
        messages channel by channel (channels in order of first line), each channel in
        conversation order. ``name`` = group id, ``source`` = the file path.

    Raises:
        InvalidInputError: naming the file, the record (``line N``) and the field, for a
            malformed JSON line (field ``json``), a missing/blank/non-string required field, a
            non-string optional field, an unparsable ``ts``, a group id outside the id grammar
            (field ``group``: the line's; an override's names no line), a positional id (of a
            line without ``id``) that another line of the group has (field ``id``, both lines
            named) or a message ``id`` repeated with another speaker, speaker_id, session,
            channel, ts or reply_to (the field is named).
    """
    p = existing_path(path)
    source = str(p)
    if group is not None and not group.strip():
        raise InvalidInputError("group override must not be blank", source=source, field="group")
    if group is not None:  # the whole input's group: no line to name
        limits.check_id(group, field="group", source=source, slash=False)
    drafts: dict[str, list[Draft]] = {}
    counters: dict[tuple[str, str, str], int] = {}
    lines: dict[int, tuple[dict[str, object], bool]] = {}  # position -> (raw line, id from its place)
    position = 0
    for lineno, obj in iter_jsonl(p, rejects):
        record = f"line {lineno}"
        at = position
        if rejects is None:
            position = _add_line(obj, lineno, source, group, counters, drafts, position)
        else:
            try:
                position = _add_line(obj, lineno, source, group, counters, drafts, position)
            except InvalidInputError as e:
                rejects.append(Reject(source, record, e.field, e.reason, obj))
        if position > at:
            lines[at] = (obj, obj.get("id") is None)
    made = {at for at, (_, positional) in lines.items() if positional}

    def refuse(items: list[Draft], errors: Iterator[tuple[Draft, InvalidInputError]]) -> list[Draft]:
        """``items`` less the lines ``errors`` refuses (each to ``rejects``; the first raised without)."""
        refused: set[int] = set()
        for d, error in errors:
            if rejects is None:
                raise error
            rejects.append(Reject(source, error.record, error.field, error.reason, lines[d.position][0]))
            refused.add(d.position)
        return [d for d in items if d.position not in refused]

    conversations = []
    for gid, items in drafts.items():
        items = refuse(items, _positional_id_clashes(items, made, source))
        items = refuse(items, unique_id_errors(items, source=source, edits=True))
        messages = assemble_messages(items, by_time=True)
        conversations.append(Conversation(group_id=gid, name=gid, messages=messages, source=source))
    return conversations


def _positional_id_clashes(items: list[Draft], made: set[int], source: str
                           ) -> Iterator[tuple[Draft, InvalidInputError]]:
    """Each draft of one group (file order) whose id is an earlier line's while one of the two
    was made from a line's place (``made``: the positions of the lines without ``id``), so two
    messages would be stored as one, with the error that refuses it.

    A repeated id that both lines give is left to :func:`loaders._common.check_unique_ids` (a
    redelivery or an edit). A line refused here is never the first holder of its id.
    """
    first: dict[str, Draft] = {}
    for d in items:
        prev = first.setdefault(d.id, d)
        if prev is d or (prev.position not in made and d.position not in made):
            continue

        def said(x: Draft) -> str:
            where = record_label(x.source_ref, source)
            return (f"{where} has no id and gets it from its place in its session" if x.position in made
                    else f"{where} gives it as its id")

        yield d, InvalidInputError(
            f"message id {d.id!r} is given to two messages: {said(prev)}, {said(d)}; a line without "
            "\"id\" gets \"<session>:<k>\" (its place among the session's lines), and one id would store "
            "the two as one message, the later as an edit of the earlier: give the lines their own ids",
            source=source, record=record_label(d.source_ref, source), field="id")


def _add_line(obj: dict[str, object], lineno: int, source: str, group: str | None,
              counters: dict[tuple[str, str, str], int], drafts: dict[str, list[Draft]], position: int) -> int:
    """Validate one decoded line and append its draft; returns the next position.

    Raises:
        InvalidInputError: the line's first problem (file, ``line N``, field).
    """
    record = f"line {lineno}"
    line = validate_item(JsonlLine, obj, source=source, record=record)
    gid = group if group is not None else line.group
    if gid is None or not gid.strip():
        raise InvalidInputError(
            "missing or blank group (give it on the line or as an override)",
            source=source,
            record=record,
            field="group",
        )
    if group is None:  # the line's own group: refused naming the line (an override is checked once)
        limits.check_id(gid, field="group", record=record, source=source, slash=False)
    channel = line.channel or ""
    key = (gid, channel, line.session)
    k = counters.get(key, 0)
    counters[key] = k + 1
    if line.id is not None:
        if not line.id.strip():
            raise InvalidInputError("id must not be blank", source=source, record=record, field="id")
        mid = line.id
    else:
        mid = f"{channel}/{line.session}:{k}" if channel else f"{line.session}:{k}"
    ts = parse_ts(line.ts, source=source, record=record, field="ts")
    drafts.setdefault(gid, []).append(
        Draft(
            id=mid,
            group_id=gid,
            channel=channel,
            # Session ids must be unique in the group: qualified by channel (the normal form).
            session=limits.session_id(channel, line.session, record=record, source=source),
            speaker=line.speaker,
            speaker_id=line.speaker_id or "",
            text=line.text,
            ts=ts.text,
            instant=ts.instant,
            reply_to=line.reply_to or "",
            source_ref=f"{source}:{lineno}",
            position=position,
        )
    )
    position += 1
    return position
