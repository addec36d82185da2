"""SocialMemBench network files (SpeakerMem-R1 ``social_grp_<id>.json`` format).

One file = one network = one :class:`Conversation` (single channel ``""``):

- ``group_id`` = ``meta.network_id``, else the id in ``scenario``
  (``"[socialmembench:grp_0d1e2f3a] ..."``); both must agree when both are present.
  ``name`` = ``scenario``.
- Sessions in ``session_index`` order (ties keep file order); turns in **file order** within a
  session (file order is not always time order, e.g. grp_7a8b9c0d s02, so ``ts`` is not used
  for ordering). ``session`` = ``session_id``, ``session_index`` as in the file,
  ``session_ts`` = the session's ``ts`` (a date, kept as ``YYYY-MM-DD``).
- Message ``id`` = the turn id, kept opaque (``grp_2b3c4d5e_s04_t009b`` exists);
  ``speaker``/``speaker_id`` as given; ``text`` = ``content`` exactly; ``ts`` normalised
  ISO-8601 (naive, as in the source); ``reply_to`` ``""`` for roots.
- Speakers are first names that recur across networks: identity is always scoped by group.

Questions (``qa_pairs``): ``id = "<network_id>/<qa id>"`` (the raw id is in
``extra["qa_id"]``), ``category`` = ``Q1``..``Q9``, ``options`` = the options by letter or ``{}``
(given as an object ``{"A": "Sonia"}``, a list of lettered strings ``["A. Sonia", ...]``, or
either as a JSON string; :func:`loaders._common.parse_options`),
``evidence_ids`` = ``evidence_anchors[].turn_id`` that name a turn of the network. Answers:

- ``multiple_choice``: ``correct_option`` = the letter, ``answer`` = that option's text
  (e.g. ``"Mei"``); the long rationale from the file is kept in ``extra["rationale"]``.
  Use :func:`loaders.question_with_options` for the prompt and the ``"C. Mei"`` gold.
- ``short_answer`` / ``long_form``: ``answer`` = the file's ``answer``; ``correct_option`` =
  ``""``; a short answer's canonical phrase (``correct_option`` in the file, sometimes a
  truncated fragment) is kept in ``extra["canonical_answer"]``.

``extra`` also holds ``answer_format``, ``difficulty``, ``temporal_anchors`` and
``evidence_anchors`` (raw).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, field_validator

from graphmem.core.errors import InvalidInputError
from loaders._common import (
    NonBlankStr,
    SpeakerIdStr,
    item_label,
    PathLike,
    check_unique_ids,
    existing_path,
    parse_date,
    parse_options,
    parse_ts,
    read_json_file,
    validate_item,
)
from graphmem.core.model import Conversation, MessageRecord, Question

__all__ = ["load_conversations", "load_questions", "network_files"]

_SCENARIO_RE = re.compile(r"\[socialmembench:([^\]\s]+)\]")


class SocialTurn(BaseModel):
    """One raw turn of a network file."""

    model_config = ConfigDict(extra="ignore", strict=True)

    turn: NonBlankStr
    speaker: NonBlankStr
    speaker_id: SpeakerIdStr | None = None  # "" would file the speaker as a second person
    content: StrictStr
    ts: StrictStr
    reply_to: StrictStr | None = None


class SocialSession(BaseModel):
    """One raw session (turns validated separately, to name the failing turn)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    session_id: StrictStr
    session_index: StrictInt
    ts: StrictStr | None = None
    topic: StrictStr | None = None
    turns: list[Any]

    @field_validator("session_index")
    @classmethod
    def _non_negative(cls, v: int) -> int:
        if v < 0:
            raise ValueError("must be >= 0")
        return v


class EvidenceAnchor(BaseModel):
    """One raw evidence anchor (extra keys such as ``turn_index`` are allowed)."""

    model_config = ConfigDict(extra="allow", strict=True)

    turn_id: StrictStr


class SocialQA(BaseModel):
    """One raw question of ``qa_pairs``."""

    model_config = ConfigDict(extra="ignore", strict=True)

    id: StrictStr
    category: StrictStr
    question: StrictStr
    answer: StrictStr
    answer_format: StrictStr = ""
    difficulty: StrictStr | None = None
    options: Any = None  # every published form: loaders._common.parse_options
    correct_option: StrictStr | None = None
    evidence_anchors: list[EvidenceAnchor] = []
    temporal_anchors: list[Any] = []


def network_files(path: PathLike) -> list[Path]:
    """The network files named by ``path``.

    Args:
        path: one network file, or a folder; a folder yields its ``*.json`` files sorted by name.

    Raises:
        InvalidInputError: field ``path`` when nothing exists there or a folder holds no
            ``*.json`` file.
    """
    p = existing_path(path)
    if p.is_dir():
        files = sorted(f for f in p.glob("*.json") if f.is_file())
        if not files:
            raise InvalidInputError("folder holds no *.json network file", source=str(p), field="path")
        return files
    return [p]


def _read_network(path: Path) -> tuple[str, str, dict[str, Any]]:
    """Return ``(source, network_id, data)`` of one file."""
    source = str(path)
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise InvalidInputError(
            f"expected a network object, got {type(data).__name__}", source=source, record="top level", field="json"
        )
    meta = data.get("meta")
    meta_id = meta.get("network_id") if isinstance(meta, dict) else None
    scenario = data.get("scenario")
    m = _SCENARIO_RE.search(scenario) if isinstance(scenario, str) else None
    scen_id = m.group(1) if m else None
    if meta_id is not None and (not isinstance(meta_id, str) or not meta_id.strip()):
        raise InvalidInputError(
            f"network_id must be a non-blank string, got {meta_id!r}",
            source=source,
            record="meta",
            field="meta.network_id",
        )
    if meta_id and scen_id and meta_id != scen_id:
        raise InvalidInputError(
            f"meta.network_id {meta_id!r} disagrees with scenario id {scen_id!r}",
            source=source,
            record="meta",
            field="meta.network_id",
        )
    network_id = meta_id or scen_id
    if not network_id:
        raise InvalidInputError(
            "no network id (neither meta.network_id nor '[socialmembench:<id>]' in scenario)",
            source=source,
            record="meta",
            field="meta.network_id",
        )
    return source, network_id, data


def _networks(path: PathLike, group: str | None) -> list[tuple[str, str, dict[str, Any]]]:
    files = network_files(path)
    nets = []
    seen: dict[str, str] = {}
    for f in files:
        source, nid, data = _read_network(f)
        if nid in seen:
            raise InvalidInputError(
                f"network {nid!r} also in {seen[nid]}", source=source, record="meta", field="meta.network_id"
            )
        seen[nid] = source
        nets.append((source, nid, data))
    if group is not None:
        chosen = [n for n in nets if n[1] == group]
        if not chosen:
            raise InvalidInputError(
                f"no network {group!r} (have {', '.join(sorted(seen))})", source=str(path), record=group, field="group"
            )
        return chosen
    return nets


def _sessions(data: dict[str, Any], source: str) -> list[tuple[int, SocialSession]]:
    raw_sessions = data.get("sessions")
    if not isinstance(raw_sessions, list):
        raise InvalidInputError(
            f"sessions must be a list, got {type(raw_sessions).__name__}",
            source=source,
            record="top level",
            field="sessions",
        )
    sessions = []
    for i, raw in enumerate(raw_sessions):
        label = item_label(raw, "session_id", f"sessions[{i}]")
        sessions.append((i, validate_item(SocialSession, raw, source=source, record=label)))
    return sorted(sessions, key=lambda item: (item[1].session_index, item[0]))


def _conversation(source: str, nid: str, data: dict[str, Any]) -> Conversation:
    messages: list[MessageRecord] = []
    for _, session in _sessions(data, source):
        session_ts = ""
        if session.ts is not None:
            session_ts = parse_date(session.ts, source=source, record=session.session_id, field="ts")
        for i, raw in enumerate(session.turns):
            label = item_label(raw, "turn", f"{session.session_id}[{i}]")
            turn = validate_item(SocialTurn, raw, source=source, record=label)
            ts = parse_ts(turn.ts, source=source, record=label, field="ts")
            messages.append(
                MessageRecord(
                    id=turn.turn,
                    group_id=nid,
                    channel="",
                    session=session.session_id,
                    session_index=session.session_index,
                    session_ts=session_ts,
                    turn=i,
                    speaker=turn.speaker,
                    speaker_id=turn.speaker_id or "",
                    text=turn.content,
                    ts=ts.text,
                    reply_to=turn.reply_to or "",
                    source_ref=f"{source}#{turn.turn}",
                )
            )
    check_unique_ids(messages, source=source)
    scenario = data.get("scenario")
    return Conversation(
        group_id=nid, name=scenario if isinstance(scenario, str) else nid, messages=messages, source=source
    )


def load_conversations(path: PathLike, group: str | None = None) -> list[Conversation]:
    """Read SocialMemBench network files.

    Args:
        path: one ``social_grp_<id>.json`` file or a folder of them.
        group: a network id (``"grp_0d1e2f3a"``) to load only that network.

    Returns:
        One :class:`Conversation` per network, in file-name order (582 messages over the 10
        staged networks).

    Raises:
        InvalidInputError: naming the file, the record (turn id, session id, ``meta``) and the
            field, for malformed JSON, a missing network id, a turn without ``speaker`` /
            ``content`` / ``turn``, an unparsable ``ts``, duplicate turn ids or networks, or an
            unknown ``group``.
    """
    return [_conversation(*net) for net in _networks(path, group)]


def _question(raw: Any, index: int, source: str, nid: str, turn_ids: set[str]) -> Question:
    label = item_label(raw, "id", f"qa_pairs[{index}]")
    item = validate_item(SocialQA, raw, source=source, record=label)
    options = parse_options(item.options, source=source, record=label)
    extra: dict[str, object] = {
        "qa_id": item.id,
        "answer_format": item.answer_format,
        "difficulty": item.difficulty or "",
        "temporal_anchors": item.temporal_anchors,
        "evidence_anchors": [a.model_dump() for a in item.evidence_anchors],
    }
    correct = item.correct_option or ""
    if options:
        if correct not in options:
            raise InvalidInputError(
                f"correct_option {correct!r} is not one of the options {sorted(options)}",
                source=source,
                record=label,
                field="correct_option",
            )
        answer = options[correct]
        extra["rationale"] = item.answer
    else:
        if item.answer_format == "multiple_choice":
            raise InvalidInputError(
                "multiple_choice question without options", source=source, record=label, field="options"
            )
        answer = item.answer
        if correct:
            extra["canonical_answer"] = correct
        correct = ""
    evidence: list[str] = []
    dropped: list[str] = []
    for anchor in item.evidence_anchors:
        if anchor.turn_id in turn_ids:
            if anchor.turn_id not in evidence:
                evidence.append(anchor.turn_id)
        else:
            dropped.append(anchor.turn_id)
    if dropped:
        extra["evidence_dropped"] = dropped
    return Question(
        id=f"{nid}/{item.id}",
        group_id=nid,
        question=item.question,
        answer=answer,
        category=item.category,
        evidence_ids=evidence,
        options=dict(options),
        correct_option=correct,
        asker="",
        extra=extra,
    )


def load_questions(path: PathLike, group: str | None = None) -> list[Question]:
    """Read the questions (``qa_pairs``) of SocialMemBench network files.

    Args:
        path: one network file or a folder of them.
        group: a network id to load only that network's questions.

    Returns:
        Questions, network by network in file-name order, each network's in file order
        (77 over the 10 staged networks). See the module docstring for the answer mapping.

    Raises:
        InvalidInputError: record = the question id: missing ``question``/``answer``/``id``/
            ``category``, options that are not an object, a multiple-choice
            ``correct_option`` that is not an option, duplicate question ids in a network;
            also the file-level errors of :func:`load_conversations`.
    """
    questions: list[Question] = []
    for source, nid, data in _networks(path, group):
        turn_ids = {m.id for m in _conversation(source, nid, data).messages}
        raw_qa = data.get("qa_pairs", [])
        if not isinstance(raw_qa, list):
            raise InvalidInputError(
                f"qa_pairs must be a list, got {type(raw_qa).__name__}",
                source=source,
                record="top level",
                field="qa_pairs",
            )
        seen: set[str] = set()
        for i, raw in enumerate(raw_qa):
            q = _question(raw, i, source, nid, turn_ids)
            if q.id in seen:
                raise InvalidInputError(
                    f"duplicate question id {q.id!r}", source=source, record=str(q.extra["qa_id"]), field="id"
                )
            seen.add(q.id)
            questions.append(q)
    return questions
