"""EverMemBench, GitHub evaluation layout (the layout is described in :mod:`loaders.evermem`).

``dataset/<batch>/dialogue.json`` (or ``dialogue_en.json``) and ``dataset/<batch>/qa_<batch>.json``;
one batch is one group ``evermem-<batch>``. :func:`batch_files` finds them;
:mod:`loaders.evermem` dispatches here when a path holds this layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr

from graphmem.core.errors import InvalidInputError
from graphmem.core.model import Conversation, Question
from loaders._common import (
    NonBlankStr,
    Draft,
    PathLike,
    assemble_messages,
    check_unique_ids,
    existing_path,
    parse_date,
    parse_options,
    parse_ts,
    read_json_file,
    validate_item,
)
from loaders.evermem_base import DIALOGUES_FILE, QARS_FILE, _TASK_CODE_RE, _correct_letter, _matches, group_id_of

__all__ = ["batch_files", "load_conversations", "load_questions"]


class EverBatchMessage(BaseModel):
    """One raw message of the evaluation layout (``message_index`` optional, ``text`` accepted)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    speaker: NonBlankStr
    time: StrictStr
    dialogue: StrictStr | None = None
    text: StrictStr | None = None
    message_index: StrictStr | StrictInt | None = None


class EverBatchQA(BaseModel):
    """One raw question of ``qa_<batch>.json``: the ``qars`` form or the legacy form."""

    model_config = ConfigDict(extra="ignore", strict=True)

    id: StrictStr | None = None
    Q: StrictStr | None = None
    A: StrictStr | StrictInt | StrictFloat | None = None
    question_id: StrictStr | None = None
    question: StrictStr | None = None
    answer: StrictStr | StrictInt | StrictFloat | None = None
    correct_option: StrictStr | None = None
    options: Any = None


def batch_files(path: PathLike, kind: str) -> list[tuple[str, Path]]:
    """``(batch, file)`` pairs of the evaluation layout at ``path`` ([] for the HF layout).

    ``kind`` "dialogue": ``dialogue.json`` (else ``dialogue_en.json``); "qa": ``qa_<batch>.json``.
    ``path`` is such a file, a batch folder, or a folder of batch folders.
    """
    p = existing_path(path)

    def pick(folder: Path) -> Path | None:
        if kind == "dialogue":
            return next((folder / n for n in ("dialogue.json", "dialogue_en.json") if (folder / n).is_file()), None)
        f = folder / f"qa_{folder.name}.json"
        return f if f.is_file() else next(iter(sorted(folder.glob("qa_*.json"))), None)

    if p.is_file():
        name = p.name
        ok = name.startswith("dialogue") if kind == "dialogue" else name.startswith("qa_")
        return [(p.parent.name, p)] if ok and p.suffix == ".json" else []
    if (p / DIALOGUES_FILE).is_file() or (p / QARS_FILE).is_file():
        return []
    own = pick(p)
    if own is not None:
        return [(p.name, own)]
    return [(d.name, f) for d in sorted(x for x in p.iterdir() if x.is_dir()) if (f := pick(d)) is not None]


def _no_unit(path: PathLike, group: str | None) -> list[Any]:
    raise InvalidInputError(f"no batch {group!r} here", source=str(path), record=str(group), field="group")


def load_conversations(batches: list[tuple[str, Path]], path: PathLike, group: str | None) -> list[Conversation]:
    """One :class:`Conversation` per batch of :func:`batch_files` (``group`` selects one).

    Raises:
        InvalidInputError: naming file, record and field (see :mod:`loaders.evermem`); field
            ``group`` when ``group`` names no batch.
    """
    return [_batch_conversation(f, b) for b, f in batches if _matches(b, group)] or _no_unit(path, group)


def load_questions(batches: list[tuple[str, Path]], path: PathLike, group: str | None) -> list[Question]:
    """The questions of every batch of :func:`batch_files` (``group`` selects one), file order.

    Raises:
        InvalidInputError: naming file, record and field (see :mod:`loaders.evermem`); field
            ``group`` when ``group`` names no batch.
    """
    return [q for b, f in batches if _matches(b, group) for q in _batch_questions(f, b)] or _no_unit(path, group)


def _batch_conversation(path: Path, batch: str) -> Conversation:
    source = str(path)
    data = read_json_file(path)
    days = data.get("dialogues") if isinstance(data, dict) else None
    if not isinstance(days, dict):
        raise InvalidInputError("expected an object with a 'dialogues' object (date -> groups)",
                                source=source, record="top level", field="dialogues")
    gid = group_id_of(batch)
    drafts: list[Draft] = []
    for raw_date, groups in days.items():
        date = parse_date(raw_date, source=source, record=f"dialogues.{raw_date}", field="dialogues")
        if not isinstance(groups, dict):
            raise InvalidInputError("expected an object of group -> messages", source=source,
                                    record=f"dialogues.{raw_date}", field=f"dialogues.{raw_date}")
        for channel, items in groups.items():
            where = f"dialogues.{raw_date}.{channel}"
            if not isinstance(items, list):
                raise InvalidInputError("expected a list of messages", source=source, record=where, field=where)
            for i, raw in enumerate(items):
                label = f"{where}[{i}]"
                msg = validate_item(EverBatchMessage, raw, source=source, record=label, prefix=f"{where}.{i}")
                text = msg.dialogue if msg.dialogue is not None else msg.text
                if text is None:
                    raise InvalidInputError("message has no 'dialogue' (or 'text')", source=source,
                                            record=label, field=f"{where}.{i}.dialogue")
                ts = parse_ts(msg.time, source=source, record=label, field=f"{where}.{i}.time")
                index = str(msg.message_index) if msg.message_index is not None else str(i + 1)
                drafts.append(Draft(
                    id=f"{date}|{channel}|{index}", group_id=gid, channel=channel,
                    session=f"{channel}/{date}" if channel else date, speaker=msg.speaker, speaker_id="", text=text,
                    ts=ts.text, instant=ts.instant, reply_to="", source_ref=f"{source}#{label}",
                    position=len(drafts),
                ))
    check_unique_ids(drafts, source=source)
    messages = assemble_messages(drafts, by_time=True)
    return Conversation(group_id=gid, name=f"EverMemBench batch {batch}", messages=messages, source=source)


def _batch_questions(path: Path, batch: str) -> list[Question]:
    source = str(path)
    data = read_json_file(path)
    if isinstance(data, dict) and isinstance(data.get("qars"), list):
        items, legacy = data["qars"], False
    elif isinstance(data, dict) and isinstance(data.get("questions"), list):
        items, legacy = data["questions"], True
    elif isinstance(data, list):
        items, legacy = data, True
    else:
        raise InvalidInputError("expected {'qars': [...]}, {'questions': [...]} or a list of questions",
                                source=source, record="top level", field="qars")
    gid = group_id_of(batch)
    out: list[Question] = []
    seen: set[str] = set()
    for i, raw in enumerate(items):
        label = f"{'questions' if legacy else 'qars'}[{i}]"
        item = validate_item(EverBatchQA, raw, source=source, record=label)
        qid = item.question_id if legacy else item.id
        text = item.question if legacy else item.Q
        gold = item.answer if legacy else item.A
        for name, value in (("question_id" if legacy else "id", qid), ("question" if legacy else "Q", text),
                            ("answer" if legacy else "A", gold)):
            if value is None or (isinstance(value, str) and not value.strip()):
                raise InvalidInputError("missing or blank", source=source, record=label, field=name)
        assert qid is not None and text is not None and gold is not None
        if qid in seen:
            raise InvalidInputError(f"duplicate question id {qid!r}", source=source, record=label,
                                    field="question_id" if legacy else "id")
        seen.add(qid)
        options = parse_options(item.options, source=source, record=label)
        answer, correct = str(gold), ""
        if options:
            letter = _correct_letter(item.correct_option or answer, options)
            if letter is None:  # an answer given as the option's text
                letter = next((k for k, v in options.items() if v.strip().casefold() == answer.strip().casefold()), None)
            if letter is None:
                raise InvalidInputError(f"answer names none of the options {sorted(options)}", source=source,
                                        record=label, field="correct_option" if legacy else "A")
            correct, answer = letter, options[letter]
        m = _TASK_CODE_RE.fullmatch(qid)
        out.append(Question(
            id=f"{gid}/{qid}", group_id=gid, question=text, answer=answer,
            category="multiple_choice" if options else "open_ended", evidence_ids=[], options=options,
            correct_option=correct, extra={"qa_id": qid, "task_code": m.group(1) if m else ""},
        ))
    return out
