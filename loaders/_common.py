"""Helpers shared by the format loaders: file reading, validation, ordering (timestamps: graphmem.core.times).

Nothing here touches Neo4j. Every failure is raised as
:class:`graphmem.core.errors.InvalidInputError` naming the file (``source``), the record (line
number, message id or index) and the field.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, StrictStr, StringConstraints, ValidationError

from graphmem.core.errors import InvalidInputError
from graphmem.core.limits import existing_path
from graphmem.core.redelivery import first_difference, fixed_fields
from graphmem.core.text import short_repr as _short
from graphmem.core.times import ParsedTs, date_of, parse_date, parse_ts
from graphmem.core.model import Attachment, MessageRecord, Question, record_label

PathLike = str | os.PathLike[str]

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "Draft",
    "ParsedTs",
    "PathLike",
    "assemble_messages",
    "check_unique_ids",
    "unique_id_errors",
    "date_of",
    "existing_path",
    "iter_jsonl",
    "parse_date",
    "parse_options",
    "parse_ts",
    "question_with_options",
    "read_json_file",
    "record_label",
    "validate_item",
]


# --------------------------------------------------------------------------- files


def read_json_file(path: Path) -> Any:
    """Parse one JSON document (UTF-8; a leading BOM is ignored).

    Returns:
        The decoded JSON value (strings exactly as in the file).

    Raises:
        InvalidInputError: field ``path`` when the file cannot be read; field ``json`` with
            record ``line L col C`` when it is not valid UTF-8 JSON.
    """
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InvalidInputError(f"cannot read file: {e}", source=str(path), field="path") from e
    return parse_json_bytes(raw, str(path))


def read_zip_member(z: zipfile.ZipFile, name: str, source: str) -> bytes:
    """The bytes of member ``name`` of an open zip.

    Raises:
        InvalidInputError: field ``path`` (``source`` names the zip and member) when the member
            cannot be unpacked: damaged (CRC, deflate stream, cut short), encrypted, or packed
            with a compression method Python cannot read. zipfile raises each as its own
            exception type, which no caller expects from a bad input.
    """
    try:
        return z.read(name)
    except KeyError as e:
        raise InvalidInputError(f"the zip holds no {name!r}", source=source, field="path") from e
    except RuntimeError as e:  # zipfile: "File ... is encrypted, password required for extraction"
        raise InvalidInputError(f"cannot unpack {name!r}: it is encrypted", source=source, field="path") from e
    except NotImplementedError as e:
        raise InvalidInputError(f"cannot unpack {name!r}: its compression method is not supported",
                                source=source, field="path") from e
    except (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError) as e:
        raise InvalidInputError(f"cannot unpack {name!r}: the zip is damaged", source=source, field="path") from e


def parse_json_bytes(raw: bytes, source: str) -> Any:
    """Parse one JSON document from ``raw`` (UTF-8, a leading BOM ignored), errors naming ``source``
    (a file, or ``archive.zip:member``).

    Raises:
        InvalidInputError: field ``encoding`` (not UTF-8, record ``line L``) or ``json`` (record
            ``line L col C``; none when it nests deeper than the parser goes).
    """
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InvalidInputError(
            f"not valid UTF-8 at byte {e.start}", source=source, record=f"line {line}", field="encoding"
        ) from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInputError(
            f"malformed JSON: {e.msg}", source=source, record=f"line {e.lineno} col {e.colno}", field="json"
        ) from e
    except RecursionError:  # "[[[[...": no export nests this deep
        raise InvalidInputError("JSON nested too deeply", source=source, field="json") from None


@dataclass
class Reject:
    """One bad record skipped under ``--on-bad-record skip`` (a line of the rejects JSONL file).

    Attributes:
        source: the file; record: line number or message id / index; field: the offending
            field; rule: why it was refused; raw: the raw record as read (JSON value or line).
    """

    source: str
    record: str
    field: str
    rule: str
    raw: Any

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def iter_jsonl(path: Path, rejects: list[Reject] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line of a JSON-lines file.

    Lines are split on ``\\n`` bytes only (never on U+2028 or other Unicode separators, which may
    legally appear raw inside JSON strings), so message text survives byte-exact.

    Args:
        path: the ``.jsonl`` file.

    Yields:
        1-based line number and the decoded JSON object of that line. Blank lines are skipped.
        With ``rejects`` (a list), a line that is not valid UTF-8 or not a JSON object is
        appended to it as a :class:`Reject` (raw = the line as text) and skipped.

    Raises:
        InvalidInputError: record ``line N`` and field ``json`` for a malformed line or a line that
            is not a JSON object; field ``encoding`` for invalid UTF-8; field ``path`` when the
            file cannot be read.
    """
    try:
        fh = path.open("rb")
    except OSError as e:
        raise InvalidInputError(f"cannot read file: {e}", source=str(path), field="path") from e
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                continue
            try:
                yield lineno, _decode_line(path, lineno, raw)
            except InvalidInputError as e:
                if rejects is None:
                    raise
                rejects.append(Reject(str(path), f"line {lineno}", e.field, e.reason,
                                      raw.decode("utf-8", "backslashreplace").rstrip("\r\n")))


def _decode_line(path: Path, lineno: int, raw: bytes) -> dict[str, Any]:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInputError(
            f"not valid UTF-8 at byte {e.start} of the line",
            source=str(path),
            record=f"line {lineno}",
            field="encoding",
        ) from e
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise InvalidInputError(
            f"malformed JSON line: {e.msg} (col {e.colno})",
            source=str(path),
            record=f"line {lineno}",
            field="json",
        ) from e
    if not isinstance(obj, dict):
        raise InvalidInputError(
            f"expected a JSON object, got {type(obj).__name__}",
            source=str(path),
            record=f"line {lineno}",
            field="json",
        )
    return obj


# --------------------------------------------------------------------------- validation


def _require_text(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


#: A strict string that holds more than whitespace (speaker names, ids, sessions of raw items).
NonBlankStr = Annotated[StrictStr, AfterValidator(_require_text)]

#: A speaker id, when the key is there: not empty ("" would key the speaker by display name,
#: a second person beside the one with the id; leave the key out when there is none).
SpeakerIdStr = Annotated[StrictStr, StringConstraints(min_length=1)]


def item_label(raw: Any, key: str, fallback: str) -> str:
    """The label an error uses for one raw input item: its own id under ``key`` when that is a
    string, else ``fallback`` (its position, e.g. ``"sessions[3]"``)."""
    value = raw.get(key) if isinstance(raw, dict) else None
    return value if isinstance(value, str) else fallback


def validate_item(model: type[M], data: Any, *, source: str, record: str, prefix: str = "") -> M:
    """Validate one raw input item with a pydantic model, re-raising as a domain error.

    Args:
        model: pydantic model describing the raw item.
        data: the decoded JSON value.
        source: file path for the error.
        record: record label for the error (line number, message id, index).
        prefix: dotted path prefixed to the field name in the error (e.g. ``"qa"``).

    Returns:
        The validated model instance.

    Raises:
        InvalidInputError: naming ``source``, ``record`` and the first offending field.
    """
    if not isinstance(data, dict):
        raise InvalidInputError(
            f"expected a JSON object, got {type(data).__name__}",
            source=source,
            record=record,
            field=prefix or "json",
        )
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(_data_path(data, err["loc"], missing=err["type"] == "missing"))
        field = ".".join(p for p in (prefix, loc) if p) or "json"
        got = err.get("input")
        detail = err["msg"]
        if err["type"] != "missing":
            detail += f" (got {type(got).__name__} {_short(got)})"
        raise InvalidInputError(detail, source=source, record=record, field=field) from e


def _data_path(data: Any, loc: tuple[Any, ...], *, missing: bool) -> list[str]:
    """The parts of a pydantic error location that name keys/indexes of ``data``.

    Union branches add tags such as ``"str"`` or ``"int"`` to the location; those are skipped.
    """
    parts: list[str] = []
    current = data
    for i, part in enumerate(loc):
        if isinstance(current, dict) and part in current:
            current = current[part]
            parts.append(str(part))
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
            parts.append(str(part))
        elif missing and i == len(loc) - 1:
            parts.append(str(part))
    return parts


# --------------------------------------------------------------------------- timestamps
# parse_ts, ParsedTs, parse_date and date_of live in graphmem.core.times (re-exported above).


# --------------------------------------------------------------------------- ordering


@dataclass
class Draft:
    """A message before its place in the conversation is known.

    Attributes:
        position: 0-based position in the input (file order), used to break ties stably.
        instant: epoch seconds of ``ts`` (for ordering by time; :mod:`graphmem.core.times`).
        session_ts: explicit session start time, or None to use the first message's ``ts``.
        raw: the record as read, kept under ``--on-bad-record skip`` for the rejects file when
            a check across records refuses it (:func:`unique_id_errors`); None otherwise.
    """

    id: str
    group_id: str
    channel: str
    session: str
    speaker: str
    speaker_id: str
    text: str
    ts: str
    instant: float
    reply_to: str
    source_ref: str
    position: int
    session_ts: str | None = None
    kind: Literal["", "bot", "system"] = ""
    attachments: tuple[Attachment, ...] = ()
    mentions: tuple[str, ...] = ()
    edited_ts: str = ""
    edited: bool = False
    id_from_content: bool = False
    raw: Any = field(default=None, repr=False, compare=False)


def assemble_messages(drafts: list[Draft], *, by_time: bool) -> list[MessageRecord]:
    """Order the drafts of one group and assign ``session_index`` and ``turn``.

    Channels keep the order in which they first appear in the input; the returned list holds
    every channel's messages contiguously, each channel in conversation order. Consecutive
    messages of the same channel are consecutive in conversation (the NEXT chain is per channel).

    Args:
        drafts: messages of one group, in input order (``position`` increasing).
        by_time: order each channel by ``(instant, position)`` (stable for equal instants);
            when False keep input order.

    Returns:
        Message records; ``session_index`` is the 1-based order of each session's first
        message within its channel, ``turn`` the 0-based position inside its session, and
        ``session_ts`` the explicit session time or else the ``ts`` of the session's first
        message.
    """
    channels: dict[str, list[Draft]] = {}
    for d in drafts:
        channels.setdefault(d.channel, []).append(d)
    out: list[MessageRecord] = []
    for items in channels.values():
        ordered = sorted(items, key=lambda d: (d.instant, d.position)) if by_time else list(items)
        session_index: dict[str, int] = {}
        session_ts: dict[str, str] = {}
        turns: dict[str, int] = {}
        for d in ordered:
            if d.session not in session_index:
                session_index[d.session] = len(session_index) + 1
                session_ts[d.session] = d.session_ts if d.session_ts is not None else d.ts
            turn = turns.get(d.session, 0)
            turns[d.session] = turn + 1
            out.append(
                MessageRecord(
                    id=d.id,
                    group_id=d.group_id,
                    channel=d.channel,
                    session=d.session,
                    session_index=session_index[d.session],
                    session_ts=session_ts[d.session],
                    turn=turn,
                    speaker=d.speaker,
                    speaker_id=d.speaker_id,
                    text=d.text,
                    ts=d.ts,
                    reply_to=d.reply_to,
                    source_ref=d.source_ref,
                    kind=d.kind,
                    attachments=d.attachments,
                    mentions=d.mentions,
                    edited_ts=d.edited_ts,
                    edited=d.edited,
                    id_from_content=d.id_from_content,
                )
            )
    return out


def check_unique_ids(
    messages: Sequence[MessageRecord | Draft], *, source: str, edits: bool = False, renames: bool = False
) -> None:
    """Check that a repeated message id within a group is a redelivery (or, where the format
    carries edits, an edit): :func:`unique_id_errors`, its first error raised.

    Raises:
        InvalidInputError: record = the second occurrence (its ``source_ref``).
    """
    for _, error in unique_id_errors(messages, source=source, edits=edits, renames=renames):
        raise error


_M = TypeVar("_M", bound=MessageRecord | Draft)


def unique_id_errors(
    messages: Sequence[_M], *, source: str, edits: bool = False, renames: bool = False
) -> Iterator[tuple[_M, InvalidInputError]]:
    """Each later occurrence of a message id that is not a redelivery (or, where the format
    carries edits, an edit) of its first occurrence, with the error that refuses it, in input
    order. A refused occurrence is left out of the comparison: every later one is compared with
    the first (``--on-bad-record skip`` rejects the refused ones and keeps the rest).

    The same id may occur again with identical content (ingest skips it). With ``edits`` (chat
    exports: the generic JSON-lines format) it may also come back with other text only, which
    ingest stores as an edit of the earlier text; then the repeat is compared by the rule of a
    stored message (:mod:`graphmem.core.redelivery`): another speaker, speaker id, channel,
    session, ts (as instants) or reply_to is an error naming that field, while the same instant
    in another UTC offset (and so maybe another day's session), a time without offset and the
    same local time with one, and a reply link on one side only are the same message. Without
    ``edits`` (benchmark files, where a repeated id with other content is corrupt data) any
    difference is an error on field ``id``.

    Args:
        messages: messages or drafts, in input order (the later occurrence is reported).
        source: file path for the error.
        edits: whether the format may repeat an id with new text.
        renames: whether a repeat may show the same ``speaker_id`` under another display name
            (platform exports, which write each export day's name; two exports of one channel
            in one folder); without it the display name must repeat as written.

    Yields:
        (the later occurrence, :class:`InvalidInputError` with record = that occurrence (its
        ``source_ref``) and the field that differs).
    """
    seen: dict[tuple[str, str], tuple[str, MessageRecord | Draft]] = {}
    fixed = ("speaker", "speaker_id", "session", "channel", "ts", "reply_to")
    for m in messages:
        key = (m.group_id, m.id)
        where = record_label(m.source_ref, source) or m.id
        if key in seen:
            first_where, first = seen[key]
            diff: str | None
            if edits:  # the rule of a repeat of a stored message: one rule in and across inputs
                diff = first_difference(fixed_fields(first), fixed_fields(m))
                diff = "speaker_id" if diff == "person" else diff
                if diff is None and not renames and first.speaker != m.speaker:
                    diff = "speaker"
            else:
                # the person is the user id, and two exports of one channel in one input write
                # the display name of their day (a renamed user), as ingest allows
                same_person = renames and bool(m.speaker_id) and first.speaker_id == m.speaker_id
                diff = next((f for f in fixed if getattr(first, f) != getattr(m, f)
                             and not (f == "speaker" and same_person)), None)
                if diff is None and first.text != m.text:
                    diff = "text"
            if diff is not None:
                yield m, InvalidInputError(
                    f"message id {m.id!r} in group {m.group_id!r} appears again with another {diff} "
                    f"({_short(getattr(first, diff))} at {first_where}, here {_short(getattr(m, diff))}); "
                    + ("a repeated id may only repeat the message or change its text" if edits
                       else "a repeated id must repeat the same message"),
                    source=source,
                    record=where,
                    field=diff if edits else "id",
                )
            continue
        seen[key] = (where, m)


# --------------------------------------------------------------------------- questions

_LETTERED = re.compile(r"\s*\(?([A-Za-z])\s*[.):]\s*(.*)", re.DOTALL)


def parse_options(value: Any, *, source: str, record: str, field: str = "options") -> dict[str, str]:
    """Multiple-choice options in any form the public benchmark releases use, as ``{letter: text}``.

    Accepted forms:

    - none: ``null``, ``{}`` or ``[]`` (an open question);
    - an object ``{"A": "Sonia", "B": "Bernard"}`` (SocialMemBench network files, EverMemBench
      ``qars.jsonl``);
    - a list of lettered strings ``["A. Sonia", "B. Bernard"]`` (other SocialMemBench networks,
      the legacy EverMemBench question files); ``"A) x"``, ``"(A) x"`` and ``"A: x"`` too,
      letters upper-cased;
    - either of them as a JSON string (the ``options_json`` column of the Hugging Face exports).

    Returns:
        Options by letter, in the given order (``{}`` for none). Texts are kept as given.

    Raises:
        InvalidInputError: naming ``field`` for anything else: a value that is not one of
            those forms, an option text that is not a string, a list entry without a leading
            letter, a letter given twice, or an empty key.
    """
    def bad(why: str) -> InvalidInputError:
        return InvalidInputError(why, source=source, record=record, field=field)

    if value is None:
        return {}
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError as e:
            raise bad(f"options string is not JSON: {e.msg}") from e
        if isinstance(decoded, str):
            raise bad("options must be an object or a list, not a string")
        return parse_options(decoded, source=source, record=record, field=field)
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key, text in value.items():
            if not isinstance(text, str):
                raise bad(f"option {key!r} must be a string, got {type(text).__name__}")
            if not str(key).strip():
                raise bad("an option has an empty letter")
            out[str(key)] = text
        return out
    if isinstance(value, list):
        out = {}
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise bad(f"option {i} must be a string like 'A. text', got {type(item).__name__}")
            m = _LETTERED.fullmatch(item)
            if m is None:
                raise bad(f"option {i} {_short(item)} does not start with a letter ('A. text')")
            letter = m.group(1).upper()
            if letter in out:
                raise bad(f"option letter {letter!r} is given twice")
            out[letter] = m.group(2).strip()
        return out
    raise bad(f"options must be an object or a list of 'A. text' strings, got {type(value).__name__}")



def question_with_options(q: Question) -> tuple[str, str]:
    """Render a question for an answerer and the gold answer it should be judged against.

    For multiple choice (``q.options`` non-empty) the options are appended one per line in
    letter order and the gold is ``"<letter>. <option text>"``, as SpeakerMem-R1's loaders do::

        ("Who ...?\\nOptions:\\nA. Josh\\nB. Leon\\nC. Mei\\nD. Priya", "C. Mei")

    Open questions are returned unchanged: ``(q.question, q.answer)``.

    Args:
        q: the question.

    Returns:
        ``(prompt_text, gold_answer)``.

    Raises:
        InvalidInputError: field ``correct_option`` when a multiple-choice question's correct
            letter is not one of its options.
    """
    if not q.options:
        return q.question, q.answer
    if q.correct_option not in q.options:
        raise InvalidInputError(
            f"correct option {q.correct_option!r} is not one of {sorted(q.options)}",
            record=q.id,
            field="correct_option",
        )
    lines = [q.question, "Options:"] + [f"{k}. {q.options[k]}" for k in sorted(q.options)]
    return "\n".join(lines), f"{q.correct_option}. {q.options[q.correct_option]}"
