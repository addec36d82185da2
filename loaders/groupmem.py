"""GroupMemBench (Yang et al., arXiv 2605.14498): domain conversation files and question sets.

Conversation file (upstream ``data/final/<Domain>/synthetic_domain_channels_rolevariants_<Domain>.json``):
a JSON object keyed by channel name, each value a list of messages::

    {"#treasury-ops": [{"msg_node": "Msg_1", "content": "Q3 &amp; Q4 ...", "author": "User_3",
                        "role": "Compliance Officer", "timestamp": "2025-07-09T01:42:41",
                        "reply_to": null, "phase_name": "...", "topic": "...", ...}, ...], ...}

Mapping:

- One :class:`Conversation` per domain: ``group_id`` = ``name`` = the domain, taken from the
  file name ``..._rolevariants_<Domain>.json``, else the file name without ``.json``.
- ``channel`` = the channel key; channels keep file order.
- ``id`` = ``msg_node``; ``text`` = ``html.unescape(content)`` (nothing else changed);
  ``speaker`` = ``speaker_id`` = ``author`` (pseudonymous ``User_<n>``; ``role`` is not kept);
  ``ts`` normalised ISO-8601; ``reply_to`` = the replied ``msg_node`` or ``""``.
- Order within a channel: by timestamp, stable for ties (the lists are chronological upstream,
  so this is file order there).
- ``session`` = ``"<channel>/<YYYY-MM-DD>"``: the calendar date of the message (in its own
  offset) within its channel. The source has no session notion (``phase_name`` spans weeks and
  overlaps across channels); one channel-day is a natural chat episode and keeps Writer
  segments small. ``session_index`` = 1-based rank of that date within the channel,
  ``session_ts`` = ``ts`` of the day's first message.

Questions: ``questions/<Domain>/<qtype>.jsonl``, one JSON object per line
``{"id": "multi_hop_1", "question": ..., "answer": ..., "asking_user_id": "User_7"}``.
``id`` = ``"<Domain>/<qtype>/<id>"``, ``category`` = ``qtype`` (the file name),
``asker`` = ``asking_user_id``, answer cast to ``str``, no evidence, no options.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, StrictInt, StrictStr

from graphmem.core.errors import InvalidInputError
from loaders._common import (
    NonBlankStr,
    item_label,
    Draft,
    PathLike,
    assemble_messages,
    check_unique_ids,
    date_of,
    existing_path,
    iter_jsonl,
    parse_ts,
    read_json_file,
    validate_item,
)
from graphmem.core.model import Conversation, Question

__all__ = ["domain_of", "load_conversations", "load_questions"]

_DOMAIN_RE = re.compile(r"rolevariants_(.+)\.json$", re.IGNORECASE)


class GroupMemMessage(BaseModel):
    """One raw message of a channel list (tags and decision metadata are ignored)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    msg_node: NonBlankStr
    content: StrictStr
    author: NonBlankStr
    timestamp: StrictStr
    role: StrictStr | None = None
    reply_to: StrictStr | None = None


class GroupMemQuestion(BaseModel):
    """One raw question line."""

    model_config = ConfigDict(extra="ignore", strict=True)

    id: StrictStr
    question: StrictStr
    answer: StrictStr | StrictBool | StrictInt | StrictFloat
    asking_user_id: StrictStr | None = None


def domain_of(path: Path) -> str:
    """Domain name of a conversation file: ``..._rolevariants_Finance.json`` -> ``"Finance"``.

    Falls back to the file name without its ``.json`` suffix.
    """
    m = _DOMAIN_RE.search(path.name)
    return m.group(1) if m else path.stem


def _conversation_files(path: PathLike) -> list[Path]:
    p = existing_path(path)
    if p.is_file():
        return [p]
    files = sorted(f for f in list(p.glob("*.json")) + list(p.glob("*/*.json")) if f.is_file())
    if not files:
        raise InvalidInputError(
            "folder holds no conversation file (*.json or <Domain>/*.json)", source=str(p), field="path"
        )
    return files


def _conversation(path: Path) -> Conversation:
    source = str(path)
    domain = domain_of(path)
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise InvalidInputError(
            f"expected an object keyed by channel name, got {type(data).__name__}",
            source=source,
            record="top level",
            field="json",
        )
    drafts: list[Draft] = []
    for channel, items in data.items():
        if not isinstance(items, list):
            raise InvalidInputError(
                f"channel value must be a list of messages, got {type(items).__name__}",
                source=source,
                record=f"channel {channel}",
                field=channel,
            )
        for i, raw in enumerate(items):
            label = item_label(raw, "msg_node", f"{channel}[{i}]")
            msg = validate_item(GroupMemMessage, raw, source=source, record=label)
            ts = parse_ts(msg.timestamp, source=source, record=label, field="timestamp")
            drafts.append(
                Draft(
                    id=msg.msg_node,
                    group_id=domain,
                    channel=channel,
                    session=f"{channel}/{date_of(ts.text)}" if channel else date_of(ts.text),
                    speaker=msg.author,
                    speaker_id=msg.author,
                    text=html.unescape(msg.content),
                    ts=ts.text,
                    instant=ts.instant,
                    reply_to=msg.reply_to or "",
                    source_ref=f"{source}#{channel}/{msg.msg_node}",
                    position=len(drafts),
                )
            )
    check_unique_ids(drafts, source=source)
    messages = assemble_messages(drafts, by_time=True)
    return Conversation(group_id=domain, name=domain, messages=messages, source=source)


def load_conversations(path: PathLike, group: str | None = None) -> list[Conversation]:
    """Read GroupMemBench domain conversation files.

    Args:
        path: one conversation file, or a folder holding them directly or as
            ``<Domain>/<file>.json`` (e.g. upstream ``data/final``).
        group: a domain name (``"Finance"``) to load only that domain.

    Returns:
        One :class:`Conversation` per domain in file-path order; messages channel by channel
        (file order of channels), each channel in time order.

    Raises:
        InvalidInputError: naming the file, the record (``msg_node`` or ``channel[i]``) and the
            field, for malformed JSON, a non-list channel, a message without ``msg_node`` /
            ``content`` / ``author`` / ``timestamp``, an unparsable ``timestamp``, duplicate
            ``msg_node`` ids, two files of one domain, or an unknown ``group``.
    """
    files = _conversation_files(path)
    if group is not None:
        chosen = [f for f in files if domain_of(f) == group]
        if not chosen:
            raise InvalidInputError(
                f"no domain {group!r} (have {', '.join(sorted({domain_of(f) for f in files}))})",
                source=str(path),
                record=group,
                field="group",
            )
        files = chosen
    seen: dict[str, str] = {}
    for f in files:
        if domain_of(f) in seen:
            raise InvalidInputError(
                f"domain {domain_of(f)!r} also in {seen[domain_of(f)]}", source=str(f), record=f.name, field="path"
            )
        seen[domain_of(f)] = str(f)
    return [_conversation(f) for f in files]


def _question_files(path: PathLike) -> list[Path]:
    p = existing_path(path)
    if p.is_file():
        return [p]
    files = sorted(f for f in list(p.glob("*.jsonl")) + list(p.glob("*/*.jsonl")) if f.is_file())
    if not files:
        raise InvalidInputError(
            "folder holds no question file (<qtype>.jsonl or <Domain>/<qtype>.jsonl)", source=str(p), field="path"
        )
    return files


def _answer_text(value: str | bool | int | float) -> str:
    return json.dumps(value) if isinstance(value, bool) else str(value)


def load_questions(path: PathLike, group: str | None = None) -> list[Question]:
    """Read GroupMemBench question files.

    Args:
        path: one ``<Domain>/<qtype>.jsonl`` file, a domain folder (``questions/Finance``) or
            the ``questions`` folder holding domain folders. The domain is the name of the
            folder a file lies in.
        group: a domain name to load only that domain's questions.

    Returns:
        Questions in file-path order (qtype files sorted by name), each file in line order
        (214 for ``questions/Finance``).

    Raises:
        InvalidInputError: naming the file, the record (``line N``) and the field, for a
            malformed line, a missing/non-string ``id``/``question``, a missing ``answer``,
            duplicate ids within a file, or an unknown ``group``.
    """
    files = _question_files(path)
    if group is not None:
        files = [f for f in files if f.parent.name == group]
        if not files:
            raise InvalidInputError(f"no questions for domain {group!r}", source=str(path), record=group, field="group")
    questions: list[Question] = []
    for f in files:
        source = str(f)
        domain, qtype = f.parent.name, f.stem
        seen: set[str] = set()
        for lineno, obj in iter_jsonl(f):
            record = f"line {lineno}"
            item = validate_item(GroupMemQuestion, obj, source=source, record=record)
            qid = f"{domain}/{qtype}/{item.id}"
            if qid in seen:
                raise InvalidInputError(f"duplicate question id {item.id!r}", source=source, record=record, field="id")
            seen.add(qid)
            questions.append(
                Question(
                    id=qid,
                    group_id=domain,
                    question=item.question,
                    answer=_answer_text(item.answer),
                    category=qtype,
                    asker=item.asking_user_id or "",
                    extra={"qa_id": item.id},
                )
            )
    return questions
