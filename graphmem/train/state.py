"""An in-memory copy of the Writer's write path, for rollouts and evaluation without Neo4j.

:class:`MemoryState` holds one group's derived records and applies a Writer answer to them
exactly as ``graphmem derive`` does — same prompt builder (:func:`graphmem.derived.writer.
build_writer_messages`), same validator (:func:`graphmem.derived.writer.validate_actions`), same entry
ids (``e<segment>.<k>``), same record time and ``turn_created`` (from
:func:`graphmem.derived.writer.supporting_messages`, through the validator's attribution rules),
heads listed in the store's order (``turn_created``, then id) — but keeps the records in a list instead of writing them. GRPO
samples G trajectories per network, each with its own state, and must not touch the store
for every sample; a test checks that the prompts this class builds equal those a real derive
run recorded.

Source: SpeakerMem-R1 §3.1-3.2 (Writer contract), App. E (trajectories and positions).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphmem.core.config import Settings, get_settings
from graphmem.llm import extract_json
from graphmem.derived.memory import GROUP, HEAD, SUPERSEDED, DerivedRecord
from graphmem.derived.writer import (
    Roster,
    ValidationReport,
    WriterSegment,
    build_writer_messages,
    coerce_actions,
    max_actions_for,
    record_time,
    validate_actions,
)

__all__ = ["MemoryState", "StepOutcome", "parse_answer"]


def parse_answer(text: str) -> tuple[list[Any] | None, str]:
    """Parse a Writer answer the way ``derive`` does (``extract_json`` then ``coerce_actions``).

    Returns:
        ``(actions, "")`` or ``(None, why)`` when the text holds no usable action list.
    """
    try:
        return coerce_actions(extract_json(text)), ""
    except ValueError as e:
        return None, str(e)[:300]


@dataclass
class StepOutcome:
    """What one Writer answer did to a :class:`MemoryState`.

    Attributes:
        index: 1-based segment index (entry ids ``e<index>.<k>``).
        prompt: the chat messages the Writer saw (system + user).
        pre_state: the heads before the step (what CURRENT MEMORY showed).
        actions: the parsed action list, None when the answer held no usable JSON.
        report: the validation report.
        rejections: rejection reason per rejected action.
        max_actions: the segment's budget.
        new_edges: UPDATE edges this step made (owner, layer, old, new).
    """

    index: int
    prompt: list[dict[str, str]]
    pre_state: list[DerivedRecord]
    actions: list[Any] | None
    report: ValidationReport
    rejections: list[str]
    max_actions: int
    new_edges: list[dict[str, str]] = field(default_factory=list)


class MemoryState:
    """One group's System 2 records in memory, changed only through the Writer's validation.

    Args:
        group_id: the group.
        roster: the group's roster.
        records: records already there (every state, e.g. a trajectory's pre-state heads).
        segments_done: segments written before (the next segment gets index + 1).
        settings: action budget and FROM limit (default: process settings).
    """

    def __init__(
        self,
        group_id: str,
        roster: Roster,
        records: Sequence[DerivedRecord] = (),
        *,
        segments_done: int = 0,
        settings: Settings | None = None,
    ) -> None:
        self.group_id = group_id
        self.roster = roster
        self.records: dict[str, DerivedRecord] = {r.id: r for r in records}
        self.segments_done = segments_done
        self.settings = settings or get_settings()
        self.edges: list[dict[str, str]] = []

    def heads(self) -> list[DerivedRecord]:
        """Current heads in the store's order (``turn_created``, then id)."""
        return sorted((r for r in self.records.values() if r.state == HEAD), key=lambda r: (r.turn_created, r.id))

    def prompt_for(self, segment: WriterSegment) -> tuple[list[dict[str, str]], int]:
        """The Writer's chat messages for ``segment`` on the current state, and its budget."""
        budget = max_actions_for(len(segment.messages), self.settings)
        return build_writer_messages(self.roster, segment, self.heads(), budget), budget

    def apply(self, segment: WriterSegment, answer: str | Sequence[Any] | None) -> StepOutcome:
        """Validate one Writer answer for ``segment`` and apply the accepted actions.

        Args:
            segment: the segment the answer is for.
            answer: the raw answer text (parsed like ``derive``), an already parsed action
                list, or None (no usable answer).

        Returns:
            :class:`StepOutcome` (the prompt is the one for the state *before* the step).
        """
        index = self.segments_done + 1
        prompt, budget = self.prompt_for(segment)
        pre = self.heads()
        report = ValidationReport(segment_id=f"seg-{index:04d}", index=index, session=segment.session,
                                  n_messages=len(segment.messages), max_actions=budget)
        if isinstance(answer, str):
            actions, why = parse_answer(answer)
            if actions is None:
                report.parse_errors.append(why)
        else:
            actions = list(answer) if answer is not None else None
        accepted, report = validate_actions(actions or [], roster=self.roster, heads=pre, max_actions=budget,
                                            report=report, messages=segment.messages,
                                            from_max=self.settings.writer_from_max)
        new_ids: list[str] = []
        edges: list[dict[str, str]] = []
        for k, va in enumerate(accepted, start=1):
            entry_id = f"e{index}.{k}"
            support, confidence = list(va.support), va.confidence  # checked by the attribution rules
            newest = record_time(support, va.source)
            supersedes = new_ids[va.after] if va.after is not None else va.target
            self.records[entry_id] = DerivedRecord(
                id=entry_id, group_id=self.group_id, layer=va.layer, utype=va.utype, content=va.content,
                ts=newest.ts, session=segment.session, turn_created=newest.turn_created, confidence=confidence,
                state=HEAD, segment=report.segment_id, owner=va.owner,
                owner_kind="group" if va.owner == GROUP else "person", source=va.source,
                source_kind="group" if va.source == GROUP else "person", from_ids=[m.id for m in support],
                supersedes=supersedes,
            )
            if supersedes:
                old = self.records[supersedes]
                self.records[supersedes] = old.model_copy(update={"state": SUPERSEDED, "superseded_by": entry_id})
                edges.append({"owner": old.owner, "layer": old.layer, "old": old.content, "new": va.content})
                va.outcome.target = supersedes
            va.outcome.entry_id = entry_id
            new_ids.append(entry_id)
        self.segments_done = index
        self.edges.extend(edges)
        rejections = [o.reason for o in report.outcomes if o.status == "rejected"]
        return StepOutcome(index, prompt, pre, actions, report, rejections, budget, edges)


def canonical_completion(actions: Sequence[Any]) -> str:
    """The Writer answer for an action list, as an SFT target: ``{"actions": [...]}`` compact JSON."""
    return json.dumps({"actions": list(actions)}, ensure_ascii=False, separators=(", ", ": "))


def edges_from_records(records: Sequence[DerivedRecord | Mapping[str, Any]]) -> list[dict[str, str]]:
    """UPDATE edges (owner, layer, old, new) of a set of records, in order of the newer record."""
    rows = [r if isinstance(r, DerivedRecord) else DerivedRecord(**r) for r in records]
    by_id = {r.id: r for r in rows}
    out = []
    for r in sorted(rows, key=lambda r: (r.turn_created, r.id)):
        if r.supersedes and r.supersedes in by_id:
            old = by_id[r.supersedes]
            out.append({"owner": old.owner, "layer": old.layer, "old": old.content, "new": r.content})
    return out
