"""Writer trajectories: one JSONL line per Writer segment, the unit of SFT and GRPO.

``graphmem train collect --group G`` runs the Writer over the group's pending segments through
``graphmem derive``'s own loop (:func:`graphmem.derived.writer.derive_group`: a teacher endpoint, or a
:class:`graphmem.derived.writer.ReplayWriter` for recorded / hand-written actions) and records, per
segment, a :class:`WriterStep`: the exact Writer input (the prompt built by
:func:`graphmem.derived.writer.build_writer_messages` from the roster, the segment and the pre-state
heads the model was shown), the actions, the validation report, the resulting memory state
(heads) and the update chain so far. The System 2 it builds is stored as ``derive`` would store
it.

Each line carries ``prompt_version``, a hash of the Writer's system prompt (the contract): a
trajectory recorded under another contract is refused for training unless asked for.

Source: SpeakerMem-R1 App. E ("Training data": teacher trajectories per writing segment).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from graphmem.derived import memory
from graphmem.core.errors import InvalidInputError
from graphmem.derived.memory import DerivedRecord
from graphmem.train.state import canonical_completion, edges_from_records
from graphmem.derived.writer import (
    WRITER_SYSTEM_PROMPT,
    Roster,
    SegmentMessage,
    WriterSegment,
    build_writer_messages,
    load_roster,
)

__all__ = [
    "FORMAT",
    "WriterStep",
    "collect_group",
    "networks",
    "prompt_version",
    "read_steps",
    "write_steps",
]

#: Format tag of a trajectory line.
FORMAT = "graphmem.derived.writer-trajectory/1"


def prompt_version() -> str:
    """Version of the Writer input: 16 hex digits of a SHA-256 over the system prompt (the
    contract) and the user message rendered for a fixed probe (roster, one head, one message),
    so a change to either the contract or the input layout changes the version."""
    roster = Roster([{"id": "p1", "name": "Ada"}, {"id": "p2", "name": "Bo"}])
    msg = SegmentMessage(id="m1", session="s1", turn=0, ts="2026-01-02T03:04:05+00:00", turn_created=1,
                         text="probe text", speaker="Ada", person_id="p1")
    head = DerivedRecord(id="e1.1", group_id="g", layer="per_speaker_core", utype="fact", content="probe record",
                         ts="2026-01-01T00:00:00+00:00", owner="p2", owner_kind="person", source="p1",
                         source_kind="person")
    probe = build_writer_messages(roster, WriterSegment("s1", "", 1, 1, (msg,)), [head], 8)
    text = WRITER_SYSTEM_PROMPT + "\x00" + json.dumps(probe, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _sha(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()[:16]


class WriterStep(BaseModel):
    """One writing position of one network: Writer input, teacher output, outcome.

    Attributes:
        format / prompt_version: :data:`FORMAT` and :func:`prompt_version` of the contract.
        prompt_sha: hash of this step's chat messages (changes when anything shown changes).
        group_id: the network (Group id).
        position / index: 0-based writing position t, and the segment index (entry ids
            ``e<index>.<k>``).
        session / channel / part / parts: the segment (as :class:`graphmem.derived.writer.WriterSegment`).
        roster: the group's Persons (id, name, speaker_id, aliases).
        messages: the segment's messages (:class:`graphmem.derived.writer.SegmentMessage` fields).
        max_actions: the action budget ``max(8, 2|X_t|)``.
        pre_state: heads shown as CURRENT MEMORY (stored records, every field).
        prompt: ``[{"role": "system", ...}, {"role": "user", ...}]`` exactly as sent.
        completion: the teacher's answer as an SFT target: ``{"actions": [...]}`` JSON text.
        actions: the teacher's action list.
        report: the validation report (``ValidationReport.model_dump()``).
        post_state: heads after the step (the reference state ``M*_t``).
        chain: every UPDATE edge (owner, layer, old, new) made from the first recorded step up to
            this one (reference for ``R_chain``).
        teacher: the Writer that produced the actions (model name or ``replay:<file>``).
    """

    format: str = FORMAT
    prompt_version: str
    prompt_sha: str
    group_id: str
    position: int = Field(ge=0)
    index: int = Field(ge=1)
    session: str
    channel: str = ""
    part: int = 1
    parts: int = 1
    roster: list[dict[str, Any]]
    messages: list[SegmentMessage]
    max_actions: int
    pre_state: list[DerivedRecord]
    prompt: list[dict[str, str]]
    completion: str
    actions: list[Any]
    report: dict[str, Any]
    post_state: list[DerivedRecord]
    chain: list[dict[str, str]] = Field(default_factory=list)
    teacher: str = ""

    def segment(self) -> WriterSegment:
        """This step's segment."""
        return WriterSegment(self.session, self.channel, self.part, self.parts, tuple(self.messages))

    def make_roster(self) -> Roster:
        """This step's roster."""
        return Roster(self.roster)


def collect_group(
    store: Any,
    group_id: str,
    *,
    model: Any,
    embedder: Any,
    settings: Any = None,
    max_segments: int | None = None,
) -> list[WriterStep]:
    """Run the Writer over a group's pending segments (as ``derive``) and record every step.

    Args:
        store: open store (group ingested; schema applied).
        group_id: the group.
        model: the teacher Writer (:func:`graphmem.llm.writer_model`) or a
            :class:`graphmem.derived.writer.ReplayWriter`.
        embedder: embeds the new records (as ``derive``).
        settings: Writer settings (default: process settings).
        max_segments: stop after this many segments.

    Returns:
        One :class:`WriterStep` per written segment, in order (positions start at 0 for the
        first segment this run wrote). A segment whose messages are all blank gets no Writer
        call from ``derive`` and so no step; it still uses up its segment index, which the
        next step's ``index`` shows.

    Raises:
        NotFoundError, LLMError, StoreUnavailableError: as :func:`graphmem.derived.writer.derive_group`.
    """
    from graphmem.derived.writer import ReplayWriter, derive_group

    _name, roster, _done = load_roster(store, group_id)
    persons = [{"id": e.id, "name": e.name, "aliases": list(e.aliases)} for e in roster.entries]
    answers: list[list[Any] | None] = []
    if isinstance(model, ReplayWriter):
        original_actions_for = model.actions_for

        def recording_actions_for(segment: WriterSegment) -> list[Any]:
            actions = original_actions_for(segment)
            answers.append(actions)
            return actions

        model.actions_for = recording_actions_for  # type: ignore[method-assign]  # a recording wrapper on this one instance
    else:
        original_complete_json = model.complete_json

        def recording_complete_json(*args: Any, **kwargs: Any) -> Any:
            value, usage = original_complete_json(*args, **kwargs)
            answers.append(value)
            return value, usage

        model.complete_json = recording_complete_json

    steps: list[WriterStep] = []
    pre = memory.current_heads(store, group_id)
    before = {tuple(e.values()) for e in edges_from_records(memory.list_records(store, group_id, heads_only=False))}
    teacher = model.model

    def on_segment(segment: WriterSegment, report: Any, _summary: Any) -> None:
        nonlocal pre
        if segment.blank:  # derive made no Writer call (nothing to read): no writing position
            answers.clear()
            return
        post = memory.current_heads(store, group_id)
        every = memory.list_records(store, group_id, heads_only=False)
        raw = answers[-1] if answers else []
        from graphmem.derived.writer import coerce_actions

        try:
            actions = coerce_actions(raw) if raw is not None else []
        except ValueError:
            actions = []
        prompt = build_writer_messages(roster, segment, pre, report.max_actions)
        steps.append(WriterStep(
            prompt_version=prompt_version(), prompt_sha=_sha(prompt), group_id=group_id,
            position=len(steps), index=report.index, session=segment.session, channel=segment.channel,
            part=segment.part, parts=segment.parts, roster=persons, messages=list(segment.messages),
            max_actions=report.max_actions, pre_state=pre, prompt=prompt,
            completion=canonical_completion(actions), actions=actions, report=report.model_dump(),
            post_state=post, chain=[e for e in edges_from_records(every) if tuple(e.values()) not in before],
            teacher=teacher,
        ))
        answers.clear()
        pre = post

    from graphmem.core.config import get_settings  # the training runner is a shell: its default settings

    derive_group(store, group_id, model=model, embedder=embedder, settings=settings or get_settings(),
                 on_segment=on_segment, max_segments=max_segments)
    return steps


def write_steps(path: str | Path, steps: Iterable[WriterStep], *, append: bool = False) -> int:
    """Write steps as JSONL (one line each); returns the number written."""
    n = 0
    with Path(path).open("a" if append else "w", encoding="utf-8") as f:
        for step in steps:
            f.write(step.model_dump_json() + "\n")
            n += 1
    return n


def read_steps(paths: str | Path | Sequence[str | Path], *, any_version: bool = False) -> list[WriterStep]:
    """Read trajectory JSONL file(s).

    Args:
        paths: one file or several.
        any_version: accept lines recorded under another Writer contract (prompt hash).

    Returns:
        The steps, in file order.

    Raises:
        InvalidInputError: unreadable file, malformed line (names file, line and field), or a
            ``prompt_version`` other than the current contract's (unless ``any_version``).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    current = prompt_version()
    steps: list[WriterStep] = []
    for path in paths:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise InvalidInputError(f"cannot read trajectory file: {e}", source=str(path)) from e
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                step = WriterStep.model_validate_json(line)
            except ValidationError as e:
                first = e.errors()[0]
                field = ".".join(str(x) for x in first.get("loc", ()))
                raise InvalidInputError(f"not a Writer trajectory line: {first.get('msg')}", source=str(path),
                                        record=f"line {n}", field=field) from e
            if step.prompt_version != current and not any_version:
                raise InvalidInputError(
                    f"recorded under Writer prompt {step.prompt_version}, current is {current} "
                    "(re-collect, or pass --any-version)", source=str(path), record=f"line {n}",
                    field="prompt_version")
            steps.append(step)
    return steps


def networks(steps: Sequence[WriterStep]) -> dict[str, list[WriterStep]]:
    """Steps grouped by network (group id), each list ordered by position.

    Raises:
        InvalidInputError: a network's positions are not 0..T-1 without gaps or repeats.
    """
    out: dict[str, list[WriterStep]] = {}
    for s in steps:
        out.setdefault(s.group_id, []).append(s)
    for gid, items in out.items():
        items.sort(key=lambda s: s.position)
        positions = [s.position for s in items]
        if positions != list(range(len(items))):
            raise InvalidInputError(f"network {gid!r} has positions {positions}, expected 0..{len(items) - 1}",
                                    record=gid, field="position")
    return out
