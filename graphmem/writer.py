"""System 2 Writer: segments -> Writer model -> deterministic validation -> derived records.

For every segment of a group's not-yet-derived messages (a whole session, or windows of
``writer_window`` messages inside a session), the Writer model reads the roster, the session,
the time, the CURRENT MEMORY (every head of the group, one line each:
``<entry_id> [layer|owner(by source)@date] content``) and the NEW MESSAGES, and answers
``{"actions": [...]}`` with ADD / UPDATE / NOOP actions. Deterministic code then

1. validates every action (:func:`validate_actions`, rules below) and keeps a per-segment
   :class:`ValidationReport` (accepted, rejected with reason) that is stored on the segment
   marker and printable (:meth:`ValidationReport.render`, ``graphmem derive --report``);
2. fills what the model never writes: entry id (``e<segment>.<k>``), group, session, ts,
   turn_created, confidence and FROM links (:func:`supporting_messages`); an UPDATE inherits
   owner, source and layer from the head it replaces;
3. embeds the new contents (before the transaction) and writes the segment atomically with
   its resume marker (:func:`graphmem.memory.write_segment`).

Validation rules (SpeakerMem-R1 App. B.2 "Action state transitions" and App. E eq. 19-21),
applied to the actions in output order; the first failing rule is the rejection reason:

- answer without usable JSON -> ``parse_error`` (the call is repeated ``writer_parse_retries``
  times; then the run stops with a clear error, or with ``writer_on_parse_error = "skip"`` the
  segment is stored with its report and no record);
- actions past ``max_actions = max(8, 2 x |segment|)`` -> ``too_many_actions``;
- an action that is not a JSON object -> ``invalid_action``; an action type other than
  ADD / UPDATE / NOOP -> ``unknown_action``; a required field missing -> ``missing_field``;
- ADD: owner / source outside roster ∪ {GROUP} -> ``unknown_owner`` / ``unknown_source``;
  unknown layer / utype -> ``unknown_layer`` / ``unknown_utype``; a GROUP layer whose owner is
  not GROUP -> ``group_layer_needs_group_owner``; a person layer owned by GROUP ->
  ``person_layer_needs_person_owner``; no words in content -> ``empty_content``;
- UPDATE whose entry_id is not a current head of this group: treated as an ADD when it carries
  the ADD coordinates (owner, source, layer, utype) - then every ADD rule applies - else
  ``unresolved_entry_id``; UPDATE whose normalised content equals the head's ->
  ``unchanged_update``;
- duplicates -> ``duplicate``: ADD key = (action, owner, source, layer, normalised content),
  repeated in the output or equal to a head already in memory; UPDATE key = (action, entry_id,
  normalised content); NOOP key = the action type.

Two UPDATEs of one head in one answer are applied in order (old -> first -> second), so the
chain never forks.

Supporting messages (FROM), chosen among the segment's messages (never empty); see
:func:`supporting_messages`.

Source: SpeakerMem-R1 §3.1-3.2, App. B.2, App. E eq. 19-21, App. I.2 (Writer contract; the
prompt below is our own wording of that contract).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from tqdm import tqdm

from graphmem import memory
from graphmem.config import Settings, get_settings
from graphmem.db import Store
from graphmem.embed import Embedder
from graphmem.errors import InvalidInputError, LLMError, NotFoundError
from graphmem.llm import ChatModel, LLMOutputError, TokenLedger, Usage
from graphmem.roster import Roster, RosterEntry
from graphmem.text import FUNCTION_WORDS
from graphmem.times import date_of, short_ts
from graphmem.memory import GROUP, GROUP_LAYERS, LAYERS, PERSON_LAYERS, UTYPES, DerivedRecord, NewRecord

logger = logging.getLogger(__name__)

__all__ = [
    "REASONS",
    "STAGE",
    "ActionOutcome",
    "DeriveSummary",
    "Roster",
    "SegmentMessage",
    "ValidatedAction",
    "ValidationReport",
    "WriterSegment",
    "build_writer_messages",
    "coerce_actions",
    "derive_group",
    "load_roster",
    "max_actions_for",
    "memory_line",
    "plan_segments",
    "supporting_messages",
    "validate_actions",
]

#: Token-accounting stage name of Writer calls.
STAGE = "writer"

#: Every rejection reason a report can carry.
REASONS: tuple[str, ...] = (
    "parse_error",
    "too_many_actions",
    "invalid_action",
    "unknown_action",
    "missing_field",
    "unknown_owner",
    "unknown_source",
    "unknown_layer",
    "unknown_utype",
    "group_layer_needs_group_owner",
    "person_layer_needs_person_owner",
    "empty_content",
    "unresolved_entry_id",
    "unchanged_update",
    "duplicate",
)

# --------------------------------------------------------------------------------------------
# messages, roster, segments
# --------------------------------------------------------------------------------------------


class SegmentMessage(BaseModel):
    """One stored message as the Writer sees it (read from System 1).

    Attributes: id, channel, session, turn (0-based in its session), ts (ISO-8601),
    turn_created (write order in the group), text, speaker (display name), person_id.
    """

    id: str
    channel: str = ""
    session: str
    turn: int = 0
    ts: str
    turn_created: int
    text: str
    speaker: str
    person_id: str


@dataclass(frozen=True)
class WriterSegment:
    """One Writer input unit: consecutive messages of one session.

    Attributes:
        session / channel: where the messages come from.
        part / parts: 1-based window number within the session's pending messages, and how
            many windows that session has (1 / 1 in session mode).
        messages: the messages in conversation order (at least one).
    """

    session: str
    channel: str
    part: int
    parts: int
    messages: tuple[SegmentMessage, ...]

    @property
    def message_ids(self) -> list[str]:
        return [m.id for m in self.messages]


def plan_segments(
    messages: Sequence[SegmentMessage], mode: str = "session", window: int = 25
) -> list[WriterSegment]:
    """Cut messages into Writer segments.

    Sessions are taken in order of their first message (``turn_created``), messages inside a
    session in ``turn_created`` order. ``"session"`` makes one segment per session;
    ``"window"`` cuts each session into consecutive windows of ``window`` messages (the last
    may be shorter). Applied to the not-yet-derived messages only, so a resumed run plans the
    same remaining segments.

    Raises:
        InvalidInputError: unknown mode or window < 1.
    """
    if mode not in ("session", "window"):
        raise InvalidInputError(f"writer segment mode must be 'session' or 'window', not {mode!r}",
                                field="writer_segment")
    if window < 1:
        raise InvalidInputError(f"writer window must be >= 1, got {window}", field="writer_window")
    by_session: dict[str, list[SegmentMessage]] = {}
    for m in sorted(messages, key=lambda m: m.turn_created):
        by_session.setdefault(m.session, []).append(m)
    segments: list[WriterSegment] = []
    for session, msgs in by_session.items():  # dict keeps first-message order
        size = len(msgs) if mode == "session" else window
        chunks = [msgs[i : i + size] for i in range(0, len(msgs), size)]
        for part, chunk in enumerate(chunks, start=1):
            segments.append(WriterSegment(session, chunk[0].channel, part, len(chunks), tuple(chunk)))
    return segments


def max_actions_for(n_messages: int, settings: Settings | None = None) -> int:
    """Writer action budget ``max(8, 2 x |segment|)``.

    Source: SpeakerMem-R1 App. E, eq. 20.
    """
    s = settings or get_settings()
    return max(s.writer_min_actions, s.writer_actions_per_message * n_messages)


def load_roster(store: Store, group_id: str) -> tuple[str, Roster, int]:
    """Read the group's name, roster and number of written Writer segments.

    Raises:
        NotFoundError: the group does not exist.
    """
    rows = store.read("derive/get_roster", group_id=group_id)
    if not rows:
        raise NotFoundError(f"group {group_id!r} does not exist (ingest its messages first)")
    row = rows[0]
    return str(row["name"] or group_id), Roster(row["persons"]), int(row["segments"] or 0)


def load_messages(store: Store, group_id: str, *, pending_only: bool = True) -> list[SegmentMessage]:
    """The group's messages in conversation order (only those no segment covers yet, by default)."""
    rows = store.read("derive/list_messages", group_id=group_id, pending_only=pending_only)
    return [SegmentMessage(**{k: v for k, v in r.items() if k != "instant"}) for r in rows]


# --------------------------------------------------------------------------------------------
# the prompt (our own wording of the contract in SpeakerMem-R1 App. I.2)
# --------------------------------------------------------------------------------------------

WRITER_SYSTEM_PROMPT = """\
You keep the long-term memory of a group chat with several participants. Every message is \
already archived word for word, so do not copy messages. Your job: read a new stretch of the \
conversation and decide which structured memory records to add or revise, so that later one can \
look up what each person is like, what people think of one another, what the group as a whole \
settled on, and how any of that changed over time.

LAYERS (use these exact names)
- per_speaker_core: lasting things about ONE person - identity, circumstances, firm positions, \
and behaviour that keeps coming back.
- per_speaker_profile: how a person is seen - what one participant observes, claims or believes \
about another. If A says something about B, the record is about B and comes from A.
- group_interaction: what happens between people or to the group: joint events, relationships \
and DECISIONS. Always owned by GROUP.
- group_insight: the group's norms, shared beliefs, consensus, and exceptions to them. Always \
owned by GROUP. Mention a member who handles a norm differently only when the messages show it; \
never assume who follows a norm.

OWNER AND SOURCE
- owner = whom (or GROUP) the record is ABOUT; source = who SAID or showed it.
- When one person announces or confirms what the group has settled ("so that's decided", "we're \
going with X", "agreed, X it is"), it is a group decision: owner GROUP, source that person, \
layer group_interaction, utype decision. "I'd rather do X" is only that person's own stance.
- Never file one person's matter under someone else.
- Use the names exactly as listed under PARTICIPANTS, or GROUP.

ACTIONS (return nothing else)
{"action": "ADD", "owner": "<about whom>", "source": "<who said it>", "layer": "<layer>", \
"utype": "fact|stance|observation|decision|relation", "content": "<the record>"}
{"action": "UPDATE", "entry_id": "<id from CURRENT MEMORY>", "content": "<the new state only>"}
{"action": "NOOP"}

WHEN TO UPDATE INSTEAD OF ADD
- Before any ADD, look through CURRENT MEMORY (and what you already wrote in this answer). If a \
record already covers the same matter - same item, same person and topic - do not add a second \
one. UPDATE it if its state moved on; otherwise write nothing about it.
- A matter has moved on when a number or progress figure changed, a date or deadline moved, a \
status changed (planned -> done, blocked -> fixed), a view or plan changed, or a later, more \
precise statement replaces a vaguer one. The same behaviour showing up again is also an UPDATE: \
say that it happened again and when.
- The new content must really differ from the record it replaces. Same value, same status, same \
meaning: no UPDATE.
- Only use entry ids listed in CURRENT MEMORY. Write only the new state ("Y", never "was X, now \
Y"), and do not repeat owner, source or layer: the old record's are kept.
- When different people disagree, each view is a separate ADD under its own owner; one person's \
view is never an UPDATE of another's.
- Agreeing with, repeating or confirming something already recorded is not new: no action.

WHAT A RECORD HOLDS
- One record = one fact, one stance or one observation. Several distinct points from one person \
make several records, not one summary.
- Record behaviour as well as stated facts: habits, things someone avoids, roles someone keeps \
taking, topics someone dodges, recurring ways of replying. Describe what happened; do not guess \
motives. A person's own pattern goes to per_speaker_core, how others see them to \
per_speaker_profile. If someone spoke a lot in this stretch and you recorded nothing about them, \
you probably missed something.
- Nothing the messages do not support. Stay close to the speakers' own words without pasting \
whole messages, and write in the language of the conversation.

OUTPUT: one JSON object and nothing else: {"actions": [ ... ]}. If nothing is worth recording, \
answer {"actions": [{"action": "NOOP"}]}."""


def memory_line(record: DerivedRecord, roster: Roster) -> str:
    """One CURRENT MEMORY line: ``<entry_id> [layer|owner(by source)@date] content``."""
    owner = GROUP if record.owner_kind == "group" else roster.label(record.owner)
    source = GROUP if record.source_kind == "group" else roster.label(record.source)
    content = " ".join(record.content.split())
    return f"{record.id} [{record.layer}|{owner}(by {source})@{date_of(record.ts)}] {content}"


def build_writer_messages(
    roster: Roster,
    segment: WriterSegment,
    heads: Sequence[DerivedRecord],
    max_actions: int,
) -> list[dict[str, str]]:
    """The chat messages of one Writer call: the fixed system prompt and the segment's input.

    Args:
        roster: the group's roster.
        segment: the new messages.
        heads: every current head of the group's derived memory.
        max_actions: the action budget for this segment.

    Returns:
        ``[{"role": "system", ...}, {"role": "user", ...}]``.
    """
    first, last = segment.messages[0], segment.messages[-1]
    part = f" (part {segment.part} of {segment.parts})" if segment.parts > 1 else ""
    channel = f" in channel {segment.channel}" if segment.channel else ""
    memory_lines = [memory_line(h, roster) for h in heads] or ["(empty - nothing recorded yet)"]
    message_lines = [
        f"[{short_ts(m.ts)}] {roster.label(m.person_id) if m.person_id in roster else m.speaker}: "
        f"{' '.join(m.text.split())}"
        for m in segment.messages
    ]
    participants = ", ".join(e.label for e in roster.entries)
    user = "\n".join([
        f"PARTICIPANTS: {participants} (and GROUP for the group as a whole)",
        f"SESSION: {segment.session}{channel}{part}",
        f"TIME: {short_ts(first.ts)} to {short_ts(last.ts)}",
        "",
        "CURRENT MEMORY (latest state of every record of this group; "
        "format: <entry_id> [layer|owner(by source)@date] content)",
        *memory_lines,
        "",
        f"NEW MESSAGES ({len(segment.messages)})",
        *message_lines,
        "",
        f"LIMIT: at most {max_actions} actions. Stop after your last new action, close the JSON "
        "at once, and never repeat an action.",
        'Return {"actions": [...]}',
    ])
    return [{"role": "system", "content": WRITER_SYSTEM_PROMPT}, {"role": "user", "content": user}]


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


class ActionOutcome(BaseModel):
    """What validation made of one action of the Writer's answer.

    Attributes:
        index: 0-based position in the answer.
        kind: ADD / UPDATE / NOOP as written ("?" when unreadable).
        status: ``"accepted"`` or ``"rejected"``.
        reason: rejection reason (one of :data:`REASONS`), "" when accepted.
        detail: human-readable explanation (or a note on an accepted action, e.g. an
            unresolved UPDATE accepted as ADD).
        applied_as: what was written: ADD / UPDATE / NOOP, "" when rejected.
        entry_id: id of the record written (set after writing), "" otherwise.
        target: the head an UPDATE replaced, "" otherwise.
        action: the action as the model wrote it (long strings cut to 500 characters).
    """

    index: int
    kind: str
    status: Literal["accepted", "rejected"]
    reason: str = ""
    detail: str = ""
    applied_as: str = ""
    entry_id: str = ""
    target: str = ""
    action: Any = None


class ValidationReport(BaseModel):
    """Validation report of one segment (stored on its marker; printable with :meth:`render`).

    Attributes:
        segment_id / index / session: which segment.
        n_messages / max_actions: segment size and its action budget.
        attempted: actions in the answer that was used (0 after a parse error).
        accepted / rejected / noops: counts (NOOPs are accepted and write nothing).
        parse_errors: one message per answer that held no usable JSON (each led to a new call).
        outcomes: one :class:`ActionOutcome` per action, in answer order.
        usage: token accounting of every Writer call for this segment (stage, model,
            prompt_tokens, completion_tokens, total_tokens, latency_s, estimated, attempts).
    """

    segment_id: str = ""
    index: int = 0
    session: str = ""
    n_messages: int = 0
    max_actions: int = 0
    attempted: int = 0
    accepted: int = 0
    rejected: int = 0
    noops: int = 0
    parse_errors: list[str] = Field(default_factory=list)
    outcomes: list[ActionOutcome] = Field(default_factory=list)
    usage: list[dict[str, Any]] = Field(default_factory=list)

    def rejection_counts(self) -> dict[str, int]:
        """``{reason: count}`` over the rejected actions (plus ``parse_error`` per failed answer)."""
        counts: dict[str, int] = {}
        if self.parse_errors:
            counts["parse_error"] = len(self.parse_errors)
        for o in self.outcomes:
            if o.status == "rejected":
                counts[o.reason] = counts.get(o.reason, 0) + 1
        return counts

    def render(self) -> str:
        """Plain-text report, one line per action."""
        head = (
            f"{self.segment_id} (#{self.index}, session {self.session}, {self.n_messages} messages, "
            f"limit {self.max_actions}): {self.attempted} attempted, {self.accepted} accepted "
            f"({self.noops} NOOP), {self.rejected} rejected"
        )
        lines = [head]
        for i, err in enumerate(self.parse_errors, start=1):
            lines.append(f"  ✗ answer {i}: parse_error - {err}")
        for o in self.outcomes:
            mark = "✓" if o.status == "accepted" else "✗"
            what = o.applied_as or o.kind
            if o.status == "accepted":
                where = f" -> {o.entry_id}" if o.entry_id else ""
                if o.target:
                    where += f" (supersedes {o.target})"
                note = f"  [{o.detail}]" if o.detail else ""
                lines.append(f"  {mark} #{o.index} {what}{where}: {_brief(o.action)}{note}")
            else:
                lines.append(f"  {mark} #{o.index} {what} {o.reason}: {o.detail}")
        return "\n".join(lines)


def _brief(action: Any, limit: int = 120) -> str:
    if not isinstance(action, dict):
        return repr(action)[:limit]
    if str(action.get("action", "")).upper() == "NOOP":
        return "NOOP"
    parts = [f"{k}={action[k]}" for k in ("owner", "source", "layer", "utype", "entry_id") if action.get(k)]
    content = " ".join(str(action.get("content", "")).split())
    text = f"{' '.join(parts)} | {content}" if parts else content
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class ValidatedAction:
    """An accepted ADD or UPDATE, with coordinates resolved to Person ids / :data:`GROUP`.

    Attributes:
        kind: ``"ADD"`` or ``"UPDATE"`` (an unresolved UPDATE accepted as ADD is ``"ADD"``).
        owner / source / layer / utype / content: the record to write (an UPDATE carries the
            coordinates of the head it replaces).
        target: for an UPDATE, the head entry_id (pre-state) it replaces, else None.
        after: for a second UPDATE of the same head in one answer, the position (in the list
            of accepted actions) of the earlier UPDATE it chains onto, else None.
        outcome: the report entry of this action.
    """

    kind: Literal["ADD", "UPDATE"]
    owner: str
    source: str
    layer: str
    utype: str
    content: str
    outcome: ActionOutcome
    target: str | None = None
    after: int | None = None


def coerce_actions(value: Any) -> list[Any]:
    """The action list in a parsed Writer answer.

    Accepts ``{"actions": [...]}`` (the contract), a bare list, or a single action object.

    Raises:
        ValueError: anything else (counted as a parse error).
    """
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        if "actions" in value:
            actions = value["actions"]
            if isinstance(actions, list):
                return actions
            raise ValueError(f"'actions' is a {type(actions).__name__}, not a list")
        if "action" in value:
            return [value]
        raise ValueError(f"JSON object without 'actions' (keys: {sorted(value)[:8]})")
    raise ValueError(f"JSON {type(value).__name__} instead of an object with 'actions'")


def _clip(value: Any, limit: int = 500) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "..."
    if isinstance(value, dict):
        return {str(k): _clip(v, limit) for k, v in list(value.items())[:20]}
    if isinstance(value, list):
        return [_clip(v, limit) for v in value[:20]]
    return value


def _text(action: Mapping[str, Any], key: str) -> str:
    value = action.get(key)
    return " ".join(value.split()) if isinstance(value, str) else ""


def validate_actions(
    actions: Sequence[Any],
    *,
    roster: Roster,
    heads: Sequence[DerivedRecord],
    max_actions: int,
    report: ValidationReport | None = None,
) -> tuple[list[ValidatedAction], ValidationReport]:
    """Validate a Writer answer's actions against the roster and the current heads.

    Rules and reasons: see the module docstring (SpeakerMem-R1 App. B.2, App. E eq. 19-21).

    Args:
        actions: the action list (see :func:`coerce_actions`).
        roster: the group's roster.
        heads: the current heads of the group (the pre-state the Writer saw).
        max_actions: the budget; later actions are rejected as ``too_many_actions``.
        report: a report to fill (e.g. one that already lists parse errors); new when None.

    Returns:
        ``(accepted ADD/UPDATE actions in answer order, report)``; NOOPs are in the report only.
    """
    rep = report or ValidationReport()
    rep.max_actions = max_actions
    rep.attempted = len(actions)
    head_by_id = {h.id: h for h in heads}
    head_keys = {("ADD", h.owner, h.source, h.layer, memory.normalise_content(h.content)): h.id for h in heads}
    seen: dict[tuple[str, ...], int] = {}
    latest_content: dict[str, str] = {}  # head id -> content after this answer's UPDATEs so far
    chain_tip: dict[str, int] = {}  # head id -> position in `accepted` of its latest UPDATE
    accepted: list[ValidatedAction] = []

    def reject(i: int, kind: str, action: Any, reason: str, detail: str) -> None:
        rep.outcomes.append(ActionOutcome(
            index=i, kind=kind, status="rejected", reason=reason, detail=detail, action=_clip(action)))

    def check_add(i: int, kind: str, a: Mapping[str, Any], note: str) -> ValidatedAction | None:
        prefix = f"{note}; " if note else ""
        missing = [k for k in ("owner", "source", "layer", "utype", "content") if not _text(a, k)]
        if missing:
            reject(i, kind, a, "missing_field", f"{prefix}missing {', '.join(missing)}")
            return None
        owner, why = roster.resolve(a["owner"])
        if owner is None:
            reject(i, kind, a, "unknown_owner", f"{prefix}owner {why}")
            return None
        source, why = roster.resolve(a["source"])
        if source is None:
            reject(i, kind, a, "unknown_source", f"{prefix}source {why}")
            return None
        layer = _text(a, "layer").lower()
        if layer not in LAYERS:
            reject(i, kind, a, "unknown_layer", f"{prefix}layer {a['layer']!r} is not one of {', '.join(LAYERS)}")
            return None
        utype = _text(a, "utype").lower()
        if utype not in UTYPES:
            reject(i, kind, a, "unknown_utype", f"{prefix}utype {a['utype']!r} is not one of {', '.join(UTYPES)}")
            return None
        if layer in GROUP_LAYERS and owner != GROUP:
            reject(i, kind, a, "group_layer_needs_group_owner",
                   f"{prefix}{layer} is a GROUP layer but owner is {roster.label(owner)!r}")
            return None
        if layer in PERSON_LAYERS and owner == GROUP:
            reject(i, kind, a, "person_layer_needs_person_owner",
                   f"{prefix}{layer} is a person layer but owner is GROUP")
            return None
        content = _text(a, "content")
        norm = memory.normalise_content(content)
        if not norm:
            reject(i, kind, a, "empty_content", f"{prefix}content has no words")
            return None
        key = ("ADD", owner, source, layer, norm)
        if key in seen:
            reject(i, kind, a, "duplicate", f"{prefix}same ADD as action #{seen[key]}")
            return None
        if key in head_keys:
            reject(i, kind, a, "duplicate", f"{prefix}already in memory as {head_keys[key]}")
            return None
        seen[key] = i
        outcome = ActionOutcome(index=i, kind=kind, status="accepted", applied_as="ADD", detail=note,
                                action=_clip(dict(a)))
        return ValidatedAction("ADD", owner, source, layer, utype, content, outcome)

    for i, a in enumerate(actions):
        kind_raw = a.get("action") if isinstance(a, dict) else None
        kind = str(kind_raw).strip().upper() if isinstance(kind_raw, str) else "?"
        if i >= max_actions:
            reject(i, kind if kind in ("ADD", "UPDATE", "NOOP") else "?", a, "too_many_actions",
                   f"action {i + 1} exceeds the limit of {max_actions}")
            continue
        if not isinstance(a, dict):
            reject(i, "?", a, "invalid_action", f"not a JSON object but {type(a).__name__}")
            continue
        if kind not in ("ADD", "UPDATE", "NOOP"):
            reject(i, "?", a, "unknown_action",
                   f"action {kind_raw!r} is not ADD, UPDATE or NOOP" if kind_raw is not None else "no 'action' field")
            continue
        if kind == "NOOP":
            key = ("NOOP",)
            if key in seen:
                reject(i, kind, a, "duplicate", f"same NOOP as action #{seen[key]}")
                continue
            seen[key] = i
            rep.outcomes.append(ActionOutcome(index=i, kind=kind, status="accepted", applied_as="NOOP",
                                              action=_clip(a)))
            continue
        if kind == "ADD":
            va = check_add(i, kind, a, "")
            if va is not None:
                accepted.append(va)
                rep.outcomes.append(va.outcome)
            continue
        # UPDATE
        entry_id = _text(a, "entry_id")
        head = head_by_id.get(entry_id)
        if head is None:
            if all(_text(a, k) for k in ("owner", "source", "layer", "utype")):
                why = f"entry_id {entry_id!r} is not a current head" if entry_id else "no entry_id"
                va = check_add(i, kind, a, f"unresolved UPDATE ({why}) treated as ADD")
                if va is not None:
                    accepted.append(va)
                    rep.outcomes.append(va.outcome)
                continue
            why = (f"entry_id {entry_id!r} is not a current head of this group" if entry_id
                   else "UPDATE without entry_id")
            reject(i, kind, a, "unresolved_entry_id", f"{why}, and no ADD coordinates to fall back on")
            continue
        content = _text(a, "content")
        if not content:
            reject(i, kind, a, "missing_field", "missing content")
            continue
        norm = memory.normalise_content(content)
        if not norm:
            reject(i, kind, a, "empty_content", "content has no words")
            continue
        key = ("UPDATE", entry_id, norm)
        if key in seen:
            reject(i, kind, a, "duplicate", f"same UPDATE as action #{seen[key]}")
            continue
        current = latest_content.get(entry_id, head.content)
        if norm == memory.normalise_content(current):
            reject(i, kind, a, "unchanged_update", f"content equals the current state of {entry_id}")
            continue
        seen[key] = i
        utype = _text(a, "utype").lower()
        notes = []
        if utype not in UTYPES:
            utype = head.utype
        elif utype != head.utype:
            notes.append(f"utype {head.utype} -> {utype}")
        given = {k: _text(a, k) for k in ("owner", "source", "layer") if _text(a, k)}
        if given:
            notes.append(f"kept owner/source/layer of {entry_id} (ignored {', '.join(sorted(given))})")
        outcome = ActionOutcome(index=i, kind=kind, status="accepted", applied_as="UPDATE",
                                target=entry_id, detail="; ".join(notes), action=_clip(a))
        va = ValidatedAction("UPDATE", head.owner, head.source, head.layer, utype, content, outcome,
                             target=entry_id, after=chain_tip.get(entry_id))
        chain_tip[entry_id] = len(accepted)
        latest_content[entry_id] = content
        accepted.append(va)
        rep.outcomes.append(outcome)

    rep.accepted = sum(1 for o in rep.outcomes if o.status == "accepted")
    rep.rejected = sum(1 for o in rep.outcomes if o.status == "rejected")
    rep.noops = sum(1 for o in rep.outcomes if o.applied_as == "NOOP")
    return accepted, rep


# --------------------------------------------------------------------------------------------
# provenance (FROM) and confidence
# --------------------------------------------------------------------------------------------

def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:6]


def _content_words(text: str) -> set[str]:
    return {_stem(w) for w in memory.normalise_content(text).split() if w not in FUNCTION_WORDS and len(w) > 1}


def _mentions(text_norm: str, entry: RosterEntry | None) -> bool:
    if entry is None:
        return False
    padded = f" {text_norm} "
    for name in {entry.name, entry.id, *entry.aliases}:
        n = memory.normalise_content(name)
        if n and f" {n} " in padded:
            return True
    return False


#: Confidence per support tier of :func:`supporting_messages`.
SUPPORT_CONFIDENCE = {"related+overlap": 0.9, "related": 0.7, "overlap": 0.5, "segment": 0.3}


def supporting_messages(
    messages: Sequence[SegmentMessage],
    *,
    owner: str,
    source: str,
    content: str,
    roster: Roster,
    limit: int = 5,
) -> tuple[list[SegmentMessage], float, str]:
    """Pick the segment messages a record is written FROM, and the record's confidence.

    A message is *related* when the source (a person) spoke it, or - for a person owner - the
    owner spoke it or it names the owner (display name, id or alias); when owner and source
    are both GROUP every message is related. *Overlap* is the number of content words
    (lower-cased, stop words dropped, light stemming) shared with the record. The first
    non-empty tier wins, at most ``limit`` messages of it ranked by overlap then recency,
    returned in conversation order:

    ======================  ==========
    tier                    confidence
    ======================  ==========
    related and overlap     0.9
    related                 0.7
    overlap                 0.5
    whole segment           0.3
    ======================  ==========

    So the result is never empty for a non-empty segment.

    Returns:
        ``(messages, confidence, tier name)``.
    """
    if not messages:
        raise InvalidInputError("a segment without messages has no supporting messages")
    words = _content_words(content)
    owner_entry = roster.entry(owner) if owner != GROUP else None
    scored = []
    for m in messages:
        norm = memory.normalise_content(m.text)
        overlap = len(words & {_stem(w) for w in norm.split()})
        if owner == GROUP and source == GROUP:
            related = True
        else:
            related = (source != GROUP and m.person_id == source) or (
                owner != GROUP and (m.person_id == owner or _mentions(norm, owner_entry)))
        scored.append((m, related, overlap))
    tiers = (
        ("related+overlap", [s for s in scored if s[1] and s[2] > 0]),
        ("related", [s for s in scored if s[1]]),
        ("overlap", [s for s in scored if s[2] > 0]),
        ("segment", scored),
    )
    for name, pool in tiers:
        if pool:
            best = sorted(pool, key=lambda s: (s[2], s[0].turn_created), reverse=True)[: max(1, limit)]
            chosen = sorted((s[0] for s in best), key=lambda m: m.turn_created)
            return chosen, SUPPORT_CONFIDENCE[name], name
    raise AssertionError("unreachable")  # the last tier holds every message


# --------------------------------------------------------------------------------------------
# the derive loop
# --------------------------------------------------------------------------------------------


@dataclass
class DeriveSummary:
    """Outcome and cost of one :func:`derive_group` run.

    Attributes:
        group_id / model: what ran.
        segments_before: segments already written when the run started.
        segments_planned / segments_written: segments this run had to write / wrote.
        messages: messages in the written segments.
        records_added / records_updated: records created by ADD / UPDATE.
        actions_attempted / actions_rejected / noops: action counts over all reports.
        rejections: ``{reason: count}`` over the run.
        calls / prompt_tokens / completion_tokens: Writer usage (stage "writer"), retries of
            unparseable answers included.
        model_s: seconds spent in Writer calls; wall_s: seconds of the whole run.
        reports: the validation report of every written segment.
    """

    group_id: str
    model: str = ""
    segments_before: int = 0
    segments_planned: int = 0
    segments_written: int = 0
    messages: int = 0
    records_added: int = 0
    records_updated: int = 0
    actions_attempted: int = 0
    actions_rejected: int = 0
    noops: int = 0
    rejections: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_s: float = 0.0
    wall_s: float = 0.0
    reports: list[ValidationReport] = field(default_factory=list)

    def as_dict(self, *, with_reports: bool = False) -> dict[str, Any]:
        """JSON-serialisable summary (reports only when asked)."""
        data = {k: v for k, v in self.__dict__.items() if k != "reports"}
        if with_reports:
            data["reports"] = [r.model_dump() for r in self.reports]
        return data


SegmentCallback = Callable[[WriterSegment, ValidationReport, DeriveSummary], None]


class ReplayWriter:
    """A Writer that replays recorded action lists instead of calling a model.

    The file is JSONL, one line per session: ``{"session": "<session id>", "actions": [...]}``
    with actions in the Writer's output format (App. I.2 contract). The replayed actions go
    through exactly the same validation, coordinate filling and graph writes as a model's
    answer, so a recorded or hand-written Writer transcript (e.g. the shipped
    ``examples/sample_writer_actions.jsonl``, or a teacher model's run) can be re-applied
    without an endpoint. UPDATE actions name entry ids the way a live run would assign them
    (``e<segment>.<k>``). Replay requires session segments (``writer_segment = "session"``).

    Raises:
        InvalidInputError: unreadable file, a malformed line, or a session listed twice.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.model = f"replay:{self.path.name}"
        self.ledger = TokenLedger()
        self.by_session: dict[str, list[Any]] = {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise InvalidInputError(f"cannot read replay file: {e}", source=str(self.path)) from e
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as e:
                raise InvalidInputError(f"malformed JSON: {e.msg}", source=str(self.path), record=f"line {n}") from e
            session = item.get("session") if isinstance(item, dict) else None
            if not isinstance(session, str) or not session:
                raise InvalidInputError("missing session", source=str(self.path), record=f"line {n}", field="session")
            if not isinstance(item.get("actions"), list):
                raise InvalidInputError("actions must be a list", source=str(self.path), record=f"line {n}", field="actions")
            if session in self.by_session:
                raise InvalidInputError(f"session {session!r} listed twice", source=str(self.path), record=f"line {n}", field="session")
            self.by_session[session] = item["actions"]

    def actions_for(self, segment: WriterSegment) -> list[Any]:
        """The recorded actions of ``segment``'s session ([] = nothing recorded, a NOOP)."""
        return list(self.by_session.get(segment.session, []))

    def close(self) -> None:
        """Nothing to release (same interface as :class:`graphmem.llm.ChatModel`)."""


def _usage_since(model: ChatModel | ReplayWriter, start: int) -> list[Usage]:
    return [u for u in model.ledger.calls[start:] if u.stage == STAGE]


def _call_writer(
    model: ChatModel, messages: list[dict[str, str]], report: ValidationReport, settings: Settings,
    where: str,
) -> list[Any] | None:
    """Call the Writer until an answer holds an action list; None when skipped after parse errors."""
    attempts = 1 + max(0, settings.writer_parse_retries)
    last: LLMOutputError | None = None
    for _ in range(attempts):
        try:
            value, _usage = model.complete_json(messages, stage=STAGE, max_tokens=settings.writer_max_tokens)
            return coerce_actions(value)
        except LLMOutputError as e:
            last = e
            report.parse_errors.append(f"{e}"[:300])
        except ValueError as e:
            last = LLMOutputError(f"stage '{STAGE}': the answer's JSON is not an action list: {e}",
                                  stage=STAGE, model=model.model)
            report.parse_errors.append(f"{e}"[:300])
        except LLMError as e:
            raise LLMError(f"{where}: {e}") from e
    if settings.writer_on_parse_error == "skip":
        return None
    assert last is not None
    raise LLMOutputError(
        f"{where}: no usable JSON action list after {attempts} answer(s): {last}",
        stage=STAGE, model=model.model, text=last.text, finish_reason=last.finish_reason,
    ) from last


def derive_group(
    store: Store,
    group_id: str,
    *,
    model: ChatModel | ReplayWriter | None,
    embedder: Embedder,
    settings: Settings | None = None,
    progress: bool = False,
    on_segment: SegmentCallback | None = None,
    max_segments: int | None = None,
) -> DeriveSummary:
    """Build System 2 for a group: run the Writer over every segment not yet derived.

    Resumable and idempotent: the messages a written segment covers are never asked again, so
    after a crash or Ctrl-C the next run starts at the first unwritten segment, and a run on
    a finished group makes no call and writes nothing. Messages ingested later are derived by
    the next run. Each segment is committed in one transaction with its marker.

    Args:
        store: open store (schema applied, messages ingested).
        group_id: the group.
        model: the Writer (:func:`graphmem.llm.writer_model`), or a :class:`ReplayWriter`;
            may be None when nothing is pending.
        embedder: embeds new record contents (before each write transaction).
        settings: segment mode, window, budgets, retries (default: process settings).
        progress: show a progress bar (messages) on stderr.
        on_segment: called after each written segment with (segment, report, summary so far).
        max_segments: stop after writing this many segments (None = all).

    Returns:
        A :class:`DeriveSummary`.

    Raises:
        NotFoundError: the group does not exist.
        LLMError: no Writer is configured while segments are pending, or the endpoint failed
            after retries; :class:`graphmem.llm.LLMOutputError` when no answer held a usable
            action list (``writer_on_parse_error = "fail"``). Segments written before stay.
        ConflictError: another run wrote the same segment meanwhile.
        StoreUnavailableError: Neo4j failed; nothing of the current segment is written.
    """
    s = settings or get_settings()
    started = time.perf_counter()
    _name, roster, segments_before = load_roster(store, group_id)
    pending = load_messages(store, group_id, pending_only=True)
    segments = plan_segments(pending, s.writer_segment, s.writer_window)
    if max_segments is not None:
        segments = segments[: max(0, max_segments)]
    summary = DeriveSummary(group_id=group_id, model=model.model if model else "",
                            segments_before=segments_before, segments_planned=len(segments))
    if not segments:
        summary.wall_s = time.perf_counter() - started
        return summary
    if isinstance(model, ReplayWriter) and s.writer_segment != "session":
        raise InvalidInputError("replay needs session segments (GRAPHMEM_WRITER_SEGMENT=session)",
                                field="writer_segment")
    if model is None:
        raise LLMError(
            f"group {group_id!r} has {len(pending)} messages to derive but no Writer endpoint is "
            "configured: set GRAPHMEM_WRITER_BASE_URL and GRAPHMEM_WRITER_MODEL (or GRAPHMEM_LLM_*)"
        )
    bar = tqdm(total=sum(len(sg.messages) for sg in segments), unit="msg", desc=f"derive {group_id}",
               disable=not progress)
    try:
        for n, seg in enumerate(segments):
            index = segments_before + n + 1
            report = _derive_segment(store, group_id, seg, index, roster, model, embedder, s, summary,
                                     where=f"group {group_id!r}, segment {index} ({n + 1}/{len(segments)} "
                                           f"of this run, session {seg.session})")
            bar.update(len(seg.messages))
            bar.set_postfix(records=summary.records_added + summary.records_updated, refresh=False)
            if on_segment is not None:
                on_segment(seg, report, summary)
    finally:
        bar.close()
        summary.wall_s = time.perf_counter() - started
    return summary


def _derive_segment(
    store: Store, group_id: str, seg: WriterSegment, index: int, roster: Roster,
    model: ChatModel | ReplayWriter, embedder: Embedder, s: Settings, summary: DeriveSummary, where: str,
) -> ValidationReport:
    segment_id = f"seg-{index:04d}"
    budget = max_actions_for(len(seg.messages), s)
    heads = memory.current_heads(store, group_id)
    report = ValidationReport(segment_id=segment_id, index=index, session=seg.session,
                              n_messages=len(seg.messages), max_actions=budget)
    prompt = build_writer_messages(roster, seg, heads, budget)
    ledger_start = len(model.ledger)
    try:
        if isinstance(model, ReplayWriter):
            actions: list[Any] | None = model.actions_for(seg)
        else:
            actions = _call_writer(model, prompt, report, s, where)
    finally:
        usage = _usage_since(model, ledger_start)
        summary.calls += len(usage)
        summary.prompt_tokens += sum(u.prompt_tokens for u in usage)
        summary.completion_tokens += sum(u.completion_tokens for u in usage)
        summary.model_s += sum(u.latency_s for u in usage)
    accepted, report = validate_actions(actions or [], roster=roster, heads=heads, max_actions=budget,
                                        report=report)

    # code fills id, ts, turn_created, confidence and FROM; embeddings before the transaction
    records: list[NewRecord] = []
    contents = [va.content for va in accepted]
    vectors = embedder.encode(contents) if contents else None
    new_ids: list[str] = []
    for k, va in enumerate(accepted, start=1):
        entry_id = f"e{index}.{k}"
        support, confidence, _tier = supporting_messages(
            seg.messages, owner=va.owner, source=va.source, content=va.content, roster=roster,
            limit=s.writer_from_max,
        )
        # the record's time: the source's own latest supporting message when the source spoke
        # in the support, else the latest supporting message
        spoken = [m for m in support if m.person_id == va.source] or support
        newest = max(spoken, key=lambda m: m.turn_created)
        supersedes = new_ids[va.after] if va.after is not None else va.target
        records.append(NewRecord(
            id=entry_id, layer=va.layer, utype=va.utype, content=va.content, owner=va.owner,
            source=va.source, ts=newest.ts, session=seg.session, turn_created=newest.turn_created,
            confidence=confidence, from_ids=[m.id for m in support],
            embedding=vectors[k - 1].tolist(), supersedes=supersedes,
        ))
        new_ids.append(entry_id)
        va.outcome.entry_id = entry_id
        if supersedes:
            va.outcome.target = supersedes

    usage = _usage_since(model, ledger_start)
    report.usage = [u.to_dict() for u in usage]
    marker = memory.SegmentMarker(
        id=segment_id, index=index, session=seg.session, channel=seg.channel, mode=s.writer_segment,
        message_ids=seg.message_ids,
        first_turn_created=seg.messages[0].turn_created, last_turn_created=seg.messages[-1].turn_created,
        ts_first=seg.messages[0].ts, ts_last=seg.messages[-1].ts, max_actions=budget,
        attempted=report.attempted, accepted=report.accepted, rejected=report.rejected,
        added=sum(1 for va in accepted if va.kind == "ADD"),
        updated=sum(1 for va in accepted if va.kind == "UPDATE"),
        report=report.model_dump(), stage=STAGE, model=model.model, calls=len(usage),
        prompt_tokens=sum(u.prompt_tokens for u in usage),
        completion_tokens=sum(u.completion_tokens for u in usage),
        latency_s=round(sum(u.latency_s for u in usage), 4),
    )
    memory.write_segment(store, group_id, marker, records)

    summary.segments_written += 1
    summary.messages += len(seg.messages)
    summary.records_added += marker.added
    summary.records_updated += marker.updated
    summary.actions_attempted += report.attempted
    summary.actions_rejected += report.rejected
    summary.noops += report.noops
    for reason, count in report.rejection_counts().items():
        summary.rejections[reason] = summary.rejections.get(reason, 0) + count
    summary.reports.append(report)
    return report
