"""LoCoMo (``locomo10.json``, Maharana et al., ACL 2024).

The file is a JSON list of samples ``{"sample_id", "conversation", "qa", ...}``. Mapping:

- One :class:`Conversation` per ``sample_id`` (``group_id = sample_id``, e.g. ``"conv-26"``,
  ``name = "<speaker_a> & <speaker_b>"``), single channel ``""``.
- Sessions: only ``session_<N>`` keys holding lists, sorted by ``N`` numerically (``session_10``
  after ``session_9``); dangling ``session_<N>_date_time`` keys without a list are ignored.
  ``session = "session_<N>"``, ``session_index`` = 1-based rank in that order.
- Every turn gets its session's time: ``"1:56 pm on 8 May, 2023"`` -> ``"2023-05-08T13:56:00"``
  (naive, as in the source), also used as ``session_ts``.
- Message ``id`` = ``dia_id`` (``"D1:3"``); ``turn`` = position in the session list; file order.
- Image turns: when ``blip_caption`` exists, ``" [shares a photo: <caption>]"`` is appended to the
  text (some questions depend on the caption); otherwise text is kept exactly.

Questions (``qa``): ``id = "<sample_id>/q<index>"`` (0-based index in the ``qa`` list),
``category = str(category)``, answer cast to ``str``. Category 5 (adversarial) gets the gold
:data:`ABSTENTION_ANSWER`; ``adversarial_answer`` (and any original ``answer``) is kept in
``extra``. Evidence entries are split on ``[;\\s]+`` and validated against the conversation's
``dia_id`` set; ids that are malformed or point to no turn are dropped (listed in
``extra["evidence_dropped"]``), the raw list is always kept in ``extra["evidence_raw"]``.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr

from graphmem.core.errors import InvalidInputError
from loaders._common import NonBlankStr, PathLike, check_unique_ids, existing_path, item_label, read_json_file, validate_item
from graphmem.core.model import Conversation, MessageRecord, Question

__all__ = ["ABSTENTION_ANSWER", "clean_evidence", "load_conversations", "load_questions", "parse_locomo_datetime"]

ABSTENTION_ANSWER = "There is no information available in the conversation to answer this question."
"""Gold answer for category-5 (adversarial) questions, as used by SpeakerMem-R1."""

_SESSION_RE = re.compile(r"session_(\d+)")
_EVIDENCE_SPLIT_RE = re.compile(r"[;\s]+")
_LOCOMO_TS_RE = re.compile(r"\s*(\d{1,2}):(\d{2})\s*([AaPp][Mm])\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*")
_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}


class LocomoTurn(BaseModel):
    """One raw LoCoMo turn (image fields other than the caption are ignored)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    speaker: NonBlankStr
    dia_id: NonBlankStr
    text: StrictStr
    blip_caption: StrictStr | None = None


class LocomoQA(BaseModel):
    """One raw LoCoMo question."""

    model_config = ConfigDict(extra="ignore", strict=True)

    question: StrictStr
    answer: StrictStr | StrictInt | StrictFloat | None = None
    adversarial_answer: StrictStr | StrictInt | StrictFloat | None = None
    evidence: list[StrictStr] = []
    category: StrictInt


def parse_locomo_datetime(value: Any, *, source: str = "", record: str = "", field: str = "") -> str:
    """Convert a LoCoMo session time to naive ISO-8601.

    Locale-independent equivalent of ``strptime(value, "%I:%M %p on %d %B, %Y")``.

    Args:
        value: e.g. ``"1:56 pm on 8 May, 2023"``.
        source, record, field: where the value came from, for errors.

    Returns:
        ``"2023-05-08T13:56:00"``.

    Raises:
        InvalidInputError: when ``value`` is not a string in that format or not a real date.
    """
    m = _LOCOMO_TS_RE.fullmatch(value) if isinstance(value, str) else None
    month = _MONTHS.get(m.group(5).lower()) if m else None
    if m is None or month is None:
        raise InvalidInputError(
            f"unparsable session time {value!r} (expected e.g. '1:56 pm on 8 May, 2023')",
            source=source,
            record=record,
            field=field,
        )
    hour12, minute = int(m.group(1)), int(m.group(2))
    if not 1 <= hour12 <= 12:
        raise InvalidInputError(f"hour out of range in {value!r}", source=source, record=record, field=field)
    hour = hour12 % 12 + (12 if m.group(3).lower() == "pm" else 0)
    try:
        dt = datetime(int(m.group(6)), month, int(m.group(4)), hour, minute)
    except ValueError as e:
        raise InvalidInputError(f"invalid date {value!r}: {e}", source=source, record=record, field=field) from e
    return dt.isoformat()


def _samples(path: PathLike) -> tuple[str, list[dict[str, Any]]]:
    p = existing_path(path)
    source = str(p)
    data = read_json_file(p)
    if not isinstance(data, list):
        raise InvalidInputError(
            f"expected a JSON list of samples, got {type(data).__name__}",
            source=source,
            record="top level",
            field="json",
        )
    samples = []
    seen: set[str] = set()
    for i, s in enumerate(data):
        if not isinstance(s, dict):
            raise InvalidInputError(
                f"expected a sample object, got {type(s).__name__}", source=source, record=f"sample {i}", field="json"
            )
        sid = s.get("sample_id")
        if not isinstance(sid, str) or not sid.strip():
            raise InvalidInputError(
                f"missing or non-string sample_id (got {sid!r})", source=source, record=f"sample {i}", field="sample_id"
            )
        if sid in seen:
            raise InvalidInputError(
                f"duplicate sample_id {sid!r}", source=source, record=f"sample {i}", field="sample_id"
            )
        seen.add(sid)
        samples.append(s)
    return source, samples


def _select(samples: list[dict[str, Any]], group: str | None, source: str) -> list[dict[str, Any]]:
    if group is None:
        return samples
    chosen = [s for s in samples if s["sample_id"] == group]
    if not chosen:
        raise InvalidInputError(
            f"no sample {group!r} in file (have {', '.join(s['sample_id'] for s in samples)})",
            source=source,
            record=group,
            field="group",
        )
    return chosen


def _session_keys(conv: dict[str, Any]) -> list[tuple[int, str]]:
    """``[(N, "session_N"), ...]`` for keys holding lists, numerically sorted."""
    keys = []
    for key, value in conv.items():
        m = _SESSION_RE.fullmatch(key)
        if m and isinstance(value, list):
            keys.append((int(m.group(1)), key))
    return sorted(keys)


def _conversation_obj(sample: dict[str, Any], source: str) -> dict[str, Any]:
    conv = sample.get("conversation")
    if not isinstance(conv, dict):
        raise InvalidInputError(
            f"missing or non-object conversation (got {type(conv).__name__})",
            source=source,
            record=sample["sample_id"],
            field="conversation",
        )
    return conv


def _conversation(sample: dict[str, Any], source: str) -> Conversation:
    sid = sample["sample_id"]
    conv = _conversation_obj(sample, source)
    messages: list[MessageRecord] = []
    for rank, (_, key) in enumerate(_session_keys(conv), start=1):
        ts_key = f"{key}_date_time"
        if ts_key not in conv:
            raise InvalidInputError(f"session {key} has no {ts_key}", source=source, record=sid, field=ts_key)
        session_ts = parse_locomo_datetime(conv[ts_key], source=source, record=sid, field=ts_key)
        for i, raw in enumerate(conv[key]):
            label = item_label(raw, "dia_id", f"{key}[{i}]")
            record = f"{sid}/{label}"
            turn = validate_item(LocomoTurn, raw, source=source, record=record)
            text = turn.text
            if turn.blip_caption is not None:
                text = f"{text} [shares a photo: {turn.blip_caption}]"
            messages.append(
                MessageRecord(
                    id=turn.dia_id,
                    group_id=sid,
                    channel="",
                    session=key,
                    session_index=rank,
                    session_ts=session_ts,
                    turn=i,
                    speaker=turn.speaker,
                    speaker_id="",
                    text=text,
                    ts=session_ts,
                    reply_to="",
                    source_ref=f"{source}#{sid}/{key}[{i}]",
                )
            )
    check_unique_ids(messages, source=source)
    a, b = conv.get("speaker_a"), conv.get("speaker_b")
    name = f"{a} & {b}" if isinstance(a, str) and isinstance(b, str) else sid
    return Conversation(group_id=sid, name=name, messages=messages, source=source)


def load_conversations(path: PathLike, group: str | None = None) -> list[Conversation]:
    """Read the conversations of a LoCoMo file.

    Args:
        path: ``locomo10.json`` (a JSON list of samples).
        group: a ``sample_id`` to load only that conversation.

    Returns:
        One :class:`Conversation` per sample, in file order (10 with 5,882 messages in total for
        ``locomo10.json``).

    Raises:
        InvalidInputError: naming the file, the record (``sample_id`` or
            ``sample_id/dia_id``) and the field, for malformed JSON, a missing ``sample_id``,
            a turn without ``speaker``/``text``/``dia_id``, a missing or unparsable
            ``session_N_date_time``, a duplicate ``dia_id``, or an unknown ``group``.
    """
    source, samples = _samples(path)
    return [_conversation(s, source) for s in _select(samples, group, source)]


def _dia_ids(sample: dict[str, Any], source: str) -> set[str]:
    conv = _conversation_obj(sample, source)
    ids = set()
    for _, key in _session_keys(conv):
        for turn in conv[key]:
            if isinstance(turn, dict) and isinstance(turn.get("dia_id"), str):
                ids.add(turn["dia_id"])
    return ids


def clean_evidence(raw: list[str], valid: set[str]) -> tuple[list[str], list[str]]:
    """Split evidence entries on ``[;\\s]+`` and keep the ids that name a turn.

    Args:
        raw: evidence entries as in the file, e.g. ``["D8:6; D9:17", "D"]``.
        valid: the conversation's ``dia_id`` set.

    Returns:
        ``(kept, dropped)``: kept ids in first-seen order without duplicates
        (``["D8:6", "D9:17"]``), and the pieces that were dropped (``["D"]``).
    """
    kept: list[str] = []
    dropped: list[str] = []
    for entry in raw:
        for piece in _EVIDENCE_SPLIT_RE.split(entry):
            if not piece:
                continue
            if piece in valid:
                if piece not in kept:
                    kept.append(piece)
            else:
                dropped.append(piece)
    return kept, dropped


def load_questions(path: PathLike, group: str | None = None) -> list[Question]:
    """Read the questions of a LoCoMo file.

    Args:
        path: ``locomo10.json``.
        group: a ``sample_id`` to load only that conversation's questions.

    Returns:
        Questions in file order (1,986 for ``locomo10.json``); ``extra`` holds
        ``evidence_raw`` (always), ``evidence_dropped`` (when non-empty),
        ``adversarial_answer`` and ``original_answer`` (category 5, when present).

    Raises:
        InvalidInputError: record ``<sample_id>/q<index>``: missing/non-string ``question``,
            missing ``answer`` outside category 5, non-integer ``category``, non-list
            ``evidence``; also the file-level errors of :func:`load_conversations`.
    """
    source, samples = _samples(path)
    questions: list[Question] = []
    for sample in _select(samples, group, source):
        sid = sample["sample_id"]
        valid = _dia_ids(sample, source)
        qa = sample.get("qa", [])
        if not isinstance(qa, list):
            raise InvalidInputError(
                f"qa must be a list, got {type(qa).__name__}", source=source, record=sid, field="qa"
            )
        for i, raw in enumerate(qa):
            qid = f"{sid}/q{i}"
            item = validate_item(LocomoQA, raw, source=source, record=qid)
            extra: dict[str, object] = {"evidence_raw": list(item.evidence)}
            if item.category == 5:
                answer = ABSTENTION_ANSWER
                if item.adversarial_answer is not None:
                    extra["adversarial_answer"] = str(item.adversarial_answer)
                if item.answer is not None:
                    extra["original_answer"] = str(item.answer)
            else:
                if item.answer is None:
                    raise InvalidInputError("missing answer", source=source, record=qid, field="answer")
                answer = str(item.answer)
            kept, dropped = clean_evidence(item.evidence, valid)
            if dropped:
                extra["evidence_dropped"] = dropped
            questions.append(
                Question(
                    id=qid,
                    group_id=sid,
                    question=item.question,
                    answer=answer,
                    category=str(item.category),
                    evidence_ids=kept,
                    extra=extra,
                )
            )
    return questions
