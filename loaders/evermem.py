"""EverMemBench(-Dynamic) (Hu et al., arXiv 2602.01313): the Hugging Face layout and the
GitHub evaluation layout (both published releases).

Hugging Face layout (below), or the evaluation layout of the GitHub repository, one folder per
batch: ``dataset/<batch>/dialogue.json`` (or ``dialogue_en.json``)::

    {"dialogues": {"2025-01-09": {"Group 1": [{"speaker": "...", "time": "2025-01-09 09:32:15",
                                               "dialogue": "text"}, ...], ...}, ...}}

and ``dataset/<batch>/qa_<batch>.json``, either ``{"qars": [{"id", "Q", "A", "task_id",
"options"}]}`` or the legacy ``{"questions": [{"question_id", "question", "options": ["A. ..."],
"correct_option", "answer"}]}`` (or that list bare). A batch is one group,
``evermem-<batch>``; a message's ``message_index`` is its own when given, else its 1-based
position in its group's list that day (``text`` is accepted for ``dialogue``, as upstream);
questions have no evidence ids. Everything else maps as in the Hugging Face layout.

Hugging Face layout:

``dialogues.jsonl``, one row per topic-day::

    {"topic_id": "01", "date": "2025-01-09",
     "dialogues": {"Group 1": [{"speaker": "Weihua Zhang", "time": "2025-01-09 09:32:15",
                                "dialogue": "text", "message_index": "1"}, ...],
                   "Group 2": [...], "Group 3": [...]}}

Mapping:

- One :class:`Conversation` per ``topic_id``: ``group_id = "evermem-<topic_id>"``.
- ``channel`` = the group name (``"Group 1"``..``"Group 3"``); channels keep order of first
  appearance. ``session = "<channel>/<date>"`` (``date`` normalised to ``YYYY-MM-DD``; a
  dataframe dump ``"2025-01-09 00:00:00"`` is accepted).
- Message ``id = "<date>|<group>|<message_index>"`` (message_index as in the file, an int is
  written in decimal); ``speaker`` = ``speaker`` (full names; ``speaker_id`` ``""``);
  ``text`` = ``dialogue`` exactly; ``ts`` = ``time`` normalised (``2025-01-09T09:32:15``).
- Order within a channel: by ``time``, stable for ties (file order); ``session_index`` = rank
  of the day within the channel, ``turn`` = position within the day.

``qars.jsonl``, one question per line::

    {"topic_id": "01", "id": "F_SH_Top01_001", "Q": "...", "A": "65%" | "D",
     "R": [{"date": "2025-10-20 00:00:00", "group": "Group 3", "message_index": "4"}, ...],
     "options": null | {"A": "...", "B": "...", "C": "...", "D": "..."}}

``id = "evermem-<topic_id>/<id>"`` (raw id in ``extra["qa_id"]``, its dimension/type prefix
such as ``"F_SH"`` in ``extra["task_code"]``); ``category`` = ``"multiple_choice"`` when
``options`` holds options (an object, a list of lettered strings ``["A. x", ...]`` as in the
legacy question files, or either as a JSON string), else ``"open_ended"``. Multiple choice: ``correct_option`` = the
letter in ``A``, ``answer`` = that option's text. Evidence: each ``R`` entry names a day, a
group and a ``message_index`` that may be a range or list (``"1-6"``, ``"2-3, 6-7"``); it expands
to the ids of the messages that exist (others are listed in ``extra["evidence_dropped"]``; the
raw ``R`` is kept in ``extra["evidence_raw"]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr

from graphmem.core.errors import InvalidInputError
from loaders._common import (
    NonBlankStr,
    Draft,
    PathLike,
    assemble_messages,
    check_unique_ids,
    existing_path,
    iter_jsonl,
    parse_date,
    parse_options,
    parse_ts,
    validate_item,
)
from graphmem.core.model import Conversation, Question
from loaders import evermem_batches  # the GitHub evaluation layout
from loaders.evermem_base import DIALOGUES_FILE, QARS_FILE, _TASK_CODE_RE, _correct_letter, _matches, group_id_of

__all__ = ["expand_message_index", "group_id_of", "load_conversations", "load_questions"]


_MAX_LISTED_RANGE = 1000  # longer ranges with gaps are reported whole, not number by number
_RANGE_RE = re.compile(r"(\d+)\s*-\s*(\d+)")


class EverMessage(BaseModel):
    """One raw message of a group list."""

    model_config = ConfigDict(extra="ignore", strict=True)

    speaker: NonBlankStr
    time: StrictStr
    dialogue: StrictStr
    message_index: StrictStr | StrictInt


class EverDay(BaseModel):
    """One raw ``dialogues.jsonl`` row (messages validated separately, to name the failing one)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    topic_id: StrictStr | StrictInt
    date: StrictStr
    dialogues: dict[str, list[Any]]


class EverEvidence(BaseModel):
    """One raw ``R`` entry."""

    model_config = ConfigDict(extra="ignore", strict=True)

    date: StrictStr
    group: StrictStr
    message_index: StrictStr | StrictInt


class EverQA(BaseModel):
    """One raw ``qars.jsonl`` row."""

    model_config = ConfigDict(extra="ignore", strict=True)

    topic_id: StrictStr | StrictInt
    id: StrictStr
    Q: StrictStr
    A: StrictStr | StrictInt | StrictFloat
    R: list[EverEvidence] | None = None
    options: Any = None  # every published form: loaders._common.parse_options


def _index_key(index: str | int) -> str:
    """Key for matching message indexes: decimal digits compare as numbers (``"04"`` == ``"4"``)."""
    text = str(index).strip()
    return str(int(text)) if text.isdigit() else text


def expand_message_index(value: str | int, available: list[str]) -> tuple[list[str], list[str]]:
    """Expand an evidence ``message_index`` against the indexes that exist.

    Args:
        value: ``"4"``, ``4``, ``"1-6"`` (inclusive range) or ``"2-3, 6-7"`` (comma list of
            indexes and ranges).
        available: the message indexes present for that day and group (raw strings).

    Returns:
        ``(matched, missing)``: raw indexes from ``available`` that the value names, in the
        value's order, and what named nothing: single indexes, the numbers of a range that
        have no message, or the whole range when none matched or it spans 1,000+ numbers.
    """
    keys = {_index_key(a): a for a in available}
    numeric = sorted((int(k), a) for k, a in keys.items() if k.isdigit())
    matched: list[str] = []
    missing: list[str] = []
    for part in str(value).split(","):
        part = part.strip()
        if not part:
            continue
        m = _RANGE_RE.fullmatch(part)
        if m:
            lo, hi = sorted((int(m.group(1)), int(m.group(2))))
            hits = [a for n, a in numeric if lo <= n <= hi]
            if not hits:
                missing.append(part)
            for a in hits:
                if a not in matched:
                    matched.append(a)
            if hits and len(hits) < hi - lo + 1:
                if hi - lo < _MAX_LISTED_RANGE:
                    missing.extend(str(n) for n in range(lo, hi + 1) if str(n) not in keys)
                else:
                    missing.append(part)
        elif _index_key(part) in keys:
            a = keys[_index_key(part)]
            if a not in matched:
                matched.append(a)
        else:
            missing.append(part)
    return matched, missing


@dataclass
class _Topic:
    drafts: list[Draft] = field(default_factory=list)
    # (date, group) -> raw message indexes present
    indexes: dict[tuple[str, str], list[str]] = field(default_factory=dict)


def _resolve(path: PathLike, name: str) -> Path:
    p = existing_path(path)
    if p.is_dir():
        f = p / name
        if not f.is_file():
            raise InvalidInputError(f"folder holds no {name}", source=str(p), field="path")
        return f
    return p


def _read_dialogues(path: Path, group: str | None) -> dict[str, _Topic]:
    source = str(path)
    topics: dict[str, _Topic] = {}
    position = 0
    for lineno, obj in iter_jsonl(path):
        record = f"line {lineno}"
        day = validate_item(EverDay, obj, source=source, record=record)
        topic = str(day.topic_id)
        if not topic.strip():
            raise InvalidInputError("topic_id must not be blank", source=source, record=record, field="topic_id")
        if not _matches(topic, group):
            continue
        date = parse_date(day.date, source=source, record=record, field="date")
        t = topics.setdefault(topic, _Topic())
        gid = group_id_of(topic)
        for channel, items in day.dialogues.items():
            for i, raw in enumerate(items):
                label = f"line {lineno} {channel}[{i}]"
                msg = validate_item(EverMessage, raw, source=source, record=label, prefix=f"dialogues.{channel}.{i}")
                index = str(msg.message_index)
                ts = parse_ts(msg.time, source=source, record=label, field=f"dialogues.{channel}.{i}.time")
                mid = f"{date}|{channel}|{index}"
                t.indexes.setdefault((date, channel), []).append(index)
                t.drafts.append(
                    Draft(
                        id=mid,
                        group_id=gid,
                        channel=channel,
                        session=f"{channel}/{date}" if channel else date,
                        speaker=msg.speaker,
                        speaker_id="",
                        text=msg.dialogue,
                        ts=ts.text,
                        instant=ts.instant,
                        reply_to="",
                        source_ref=f"{source}:{lineno}",
                        position=position,
                    )
                )
                position += 1
    if group is not None and not topics:
        raise InvalidInputError(f"no topic {group!r} in file", source=source, record=group, field="group")
    return topics


def load_conversations(path: PathLike, group: str | None = None) -> list[Conversation]:
    """Read EverMemBench dialogues.

    Args:
        path: ``dialogues.jsonl`` or a folder holding it.
        group: a topic to load only that one, as ``"evermem-01"`` or ``"01"``.

    Returns:
        One :class:`Conversation` per topic in order of first row; messages channel by channel
        (``"Group 1"``.. in order of first appearance), each channel in time order.

    Raises:
        InvalidInputError: naming the file, the record (``line N`` and the message position) and
            the field, for a malformed line, a missing ``topic_id``/``date``/``dialogues``, a
            message without ``speaker``/``dialogue``/``time``/``message_index``, an unparsable
            ``time`` or ``date``, duplicate message ids (same date, group and index), or an
            unknown ``group``.
    """
    batches = evermem_batches.batch_files(path, "dialogue")
    if batches:
        return evermem_batches.load_conversations(batches, path, group)
    p = _resolve(path, DIALOGUES_FILE)
    source = str(p)
    conversations = []
    for topic, t in _read_dialogues(p, group).items():
        check_unique_ids(t.drafts, source=source)
        messages = assemble_messages(t.drafts, by_time=True)
        gid = group_id_of(topic)
        conversations.append(
            Conversation(group_id=gid, name=f"EverMemBench topic {topic}", messages=messages, source=source)
        )
    return conversations


def load_questions(path: PathLike, group: str | None = None, dialogues: PathLike | None = None) -> list[Question]:
    """Read EverMemBench questions and resolve their evidence to message ids.

    Args:
        path: ``qars.jsonl`` or a folder holding it.
        group: a topic to load only its questions (``"evermem-01"`` or ``"01"``).
        dialogues: the matching ``dialogues.jsonl``; default: the one next to ``qars.jsonl``.

    Returns:
        Questions in file order; see the module docstring for ids, categories and evidence.

    Raises:
        InvalidInputError: naming the file, the record (``line N``) and the field, for a
            malformed line, a missing ``id``/``Q``/``A``/``topic_id``, options that are not an
            object of strings, a multiple-choice ``A`` that names no option, a malformed
            ``R`` entry, a duplicate id, or no ``dialogues.jsonl`` to resolve evidence
            (field ``dialogues``).
    """
    batches = evermem_batches.batch_files(path, "qa")
    if batches:
        return evermem_batches.load_questions(batches, path, group)
    q_path = _resolve(path, QARS_FILE)
    source = str(q_path)
    d_path = Path(dialogues) if dialogues is not None else q_path.parent / DIALOGUES_FILE
    if not d_path.is_file():
        raise InvalidInputError(
            f"evidence needs the dialogues file; none at {d_path}", source=source, field="dialogues"
        )
    topics = _read_dialogues(d_path, None)
    questions: list[Question] = []
    seen: set[str] = set()
    for lineno, obj in iter_jsonl(q_path):
        record = f"line {lineno}"
        item = validate_item(EverQA, obj, source=source, record=record)
        topic = str(item.topic_id)
        if not _matches(topic, group):
            continue
        gid = group_id_of(topic)
        qid = f"{gid}/{item.id}"
        if qid in seen:
            raise InvalidInputError(f"duplicate question id {item.id!r}", source=source, record=record, field="id")
        seen.add(qid)
        m = _TASK_CODE_RE.fullmatch(item.id)
        extra: dict[str, object] = {"qa_id": item.id, "task_code": m.group(1) if m else ""}
        answer = str(item.A)
        correct = ""
        options = parse_options(item.options, source=source, record=record)
        if options:
            letter = _correct_letter(answer, options)
            if letter is None:
                raise InvalidInputError(
                    f"answer {answer!r} names none of the options {sorted(options)}",
                    source=source,
                    record=record,
                    field="A",
                )
            correct, answer = letter, options[letter]
        raw_r = [r.model_dump() for r in item.R or []]
        extra["evidence_raw"] = raw_r
        evidence: list[str] = []
        dropped: list[str] = []
        indexes = topics[topic].indexes if topic in topics else {}
        for j, r in enumerate(item.R or []):
            date = parse_date(r.date, source=source, record=record, field=f"R.{j}.date")
            matched, missing = expand_message_index(r.message_index, indexes.get((date, r.group), []))
            for index in matched:
                mid = f"{date}|{r.group}|{index}"
                if mid not in evidence:
                    evidence.append(mid)
            dropped.extend(f"{date}|{r.group}|{part}" for part in missing)
        if dropped:
            extra["evidence_dropped"] = dropped
        questions.append(
            Question(
                id=qid,
                group_id=gid,
                question=item.Q,
                answer=answer,
                category="multiple_choice" if options else "open_ended",
                evidence_ids=evidence,
                options=options,
                correct_option=correct,
                extra=extra,
            )
        )
    if group is not None and not questions:
        raise InvalidInputError(f"no questions for topic {group!r}", source=source, record=group, field="group")
    return questions
