"""Deterministic validation of a Writer answer: one function per action kind.

:func:`validate_actions` walks the answer in output order and hands each action to
:func:`validate_noop`, :func:`validate_add` or :func:`validate_update`; the rules and the
rejection reasons (:data:`REASONS`) are listed in :mod:`graphmem.derived.writer`.

Source: SpeakerMem-R1 App. B.2 ("Action state transitions"), App. E eq. 19-21.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from graphmem.derived import memory
from graphmem.derived.memory import (
    GROUP,
    GROUP_LAYERS,
    LAYERS,
    PERSON_LAYERS,
    UTYPES,
    DerivedRecord,
)
from graphmem.verbatim.roster import Roster
from graphmem.derived.writer.attribution import Attribution, check_attribution
from graphmem.derived.writer.segments import SegmentMessage

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
    "source_not_speaker",
    "reported_claim_source",
    "group_source_single_speaker",
    "update_owner_changed",
    "update_recredits_decision",
    "decision_not_in_source_words",
    "claim_not_in_source_words",
)  # the last seven: graphmem.writer.attribution.ATTRIBUTION_REASONS


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
        support: the FROM messages (conversation order) that attribution was checked against;
            empty only when :func:`validate_actions` ran without the segment's messages.
        confidence: the support tier's confidence (:data:`graphmem.writer.provenance.SUPPORT_CONFIDENCE`), 0.0
            without messages.
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
    support: tuple[SegmentMessage, ...] = ()
    confidence: float = 0.0


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


@dataclass
class AnswerState:
    """What validation of one answer has seen so far (shared by the per-kind validators).

    Attributes:
        roster: the group's roster (owner/source names -> Person ids).
        report: the report being filled.
        head_by_id: current heads by entry id (the pre-state the Writer saw).
        head_keys: ADD key (action, owner, source, layer, normalised content) -> head id.
        seen: action key -> index of the first action with that key in this answer.
        latest_content: head id -> content after this answer's UPDATEs so far.
        chain_tip: head id -> position in ``accepted`` of its latest UPDATE.
        latest_source: head id -> source after this answer's UPDATEs so far.
        accepted: accepted ADD/UPDATE actions in answer order.
        messages: the segment's messages (attribution and FROM are checked against them);
            None skips the attribution rules (a dry score of an answer without its segment).
        from_max: at most this many FROM messages per record.
    """

    roster: Roster
    report: ValidationReport
    head_by_id: dict[str, DerivedRecord]
    head_keys: dict[tuple[str, ...], str]
    seen: dict[tuple[str, ...], int] = field(default_factory=dict)
    latest_content: dict[str, str] = field(default_factory=dict)
    chain_tip: dict[str, int] = field(default_factory=dict)
    latest_source: dict[str, str] = field(default_factory=dict)
    accepted: list[ValidatedAction] = field(default_factory=list)
    messages: Sequence[SegmentMessage] | None = None
    from_max: int = 5

    def reject(self, i: int, kind: str, action: Any, reason: str, detail: str) -> None:
        self.report.outcomes.append(ActionOutcome(
            index=i, kind=kind, status="rejected", reason=reason, detail=detail, action=_clip(action)))

    def accept(self, va: ValidatedAction) -> None:
        self.accepted.append(va)
        self.report.outcomes.append(va.outcome)


def validate_noop(st: AnswerState, i: int, a: Mapping[str, Any]) -> None:
    """NOOP: accepted once per answer; a repeated NOOP is a ``duplicate``."""
    key = ("NOOP",)
    if key in st.seen:
        st.reject(i, "NOOP", a, "duplicate", f"same NOOP as action #{st.seen[key]}")
        return
    st.seen[key] = i
    st.report.outcomes.append(ActionOutcome(index=i, kind="NOOP", status="accepted", applied_as="NOOP",
                                            action=_clip(a)))


def validate_add(st: AnswerState, i: int, kind: str, a: Mapping[str, Any], note: str = "") -> ValidatedAction | None:
    """ADD (or an unresolved UPDATE carrying ADD coordinates): the ADD rules, first failure wins.

    Returns:
        The accepted action (not yet recorded in ``st``), or None when rejected.
    """
    prefix = f"{note}; " if note else ""
    missing = [k for k in ("owner", "source", "layer", "utype", "content") if not _text(a, k)]
    if missing:
        st.reject(i, kind, a, "missing_field", f"{prefix}missing {', '.join(missing)}")
        return None
    owner, why = st.roster.resolve(a["owner"])
    if owner is None:
        st.reject(i, kind, a, "unknown_owner", f"{prefix}owner {why}")
        return None
    source, why = st.roster.resolve(a["source"])
    if source is None:
        st.reject(i, kind, a, "unknown_source", f"{prefix}source {why}")
        return None
    layer = _text(a, "layer").lower()
    if layer not in LAYERS:
        st.reject(i, kind, a, "unknown_layer", f"{prefix}layer {a['layer']!r} is not one of {', '.join(LAYERS)}")
        return None
    utype = _text(a, "utype").lower()
    if utype not in UTYPES:
        st.reject(i, kind, a, "unknown_utype", f"{prefix}utype {a['utype']!r} is not one of {', '.join(UTYPES)}")
        return None
    if layer in GROUP_LAYERS and owner != GROUP:
        st.reject(i, kind, a, "group_layer_needs_group_owner",
                  f"{prefix}{layer} is a GROUP layer but owner is {st.roster.label(owner)!r}")
        return None
    if layer in PERSON_LAYERS and owner == GROUP:
        st.reject(i, kind, a, "person_layer_needs_person_owner",
                  f"{prefix}{layer} is a person layer but owner is GROUP")
        return None
    content = _text(a, "content")
    norm = memory.normalise_content(content)
    if not norm:
        st.reject(i, kind, a, "empty_content", f"{prefix}content has no words")
        return None
    key = ("ADD", owner, source, layer, norm)
    if key in st.seen:
        st.reject(i, kind, a, "duplicate", f"{prefix}same ADD as action #{st.seen[key]}")
        return None
    if key in st.head_keys:
        st.reject(i, kind, a, "duplicate", f"{prefix}already in memory as {st.head_keys[key]}")
        return None
    credit = _credit(st, owner, source, content, utype)
    if credit is not None and credit.reason:
        st.reject(i, kind, a, credit.reason, f"{prefix}{credit.detail}")
        return None
    st.seen[key] = i
    outcome = ActionOutcome(index=i, kind=kind, status="accepted", applied_as="ADD", detail=note,
                            action=_clip(dict(a)))
    va = ValidatedAction("ADD", owner, source, layer, utype, content, outcome)
    if credit is not None:
        va.support, va.confidence = credit.support, credit.confidence
    return va


def _credit(st: AnswerState, owner: str, source: str, content: str, utype: str) -> Attribution | None:
    """:func:`check_attribution` against the segment, or None when validation runs without it."""
    if st.messages is None:
        return None
    return check_attribution(st.messages, owner=owner, source=source, content=content, roster=st.roster,
                             from_max=st.from_max, utype=utype)


def validate_update(st: AnswerState, i: int, a: Mapping[str, Any]) -> None:
    """UPDATE: resolve the head (or fall back to ADD), then the UPDATE rules; records the result."""
    kind = "UPDATE"
    entry_id = _text(a, "entry_id")
    head = st.head_by_id.get(entry_id)
    if head is None:
        if all(_text(a, k) for k in ("owner", "source", "layer", "utype")):
            why = f"entry_id {entry_id!r} is not a current head" if entry_id else "no entry_id"
            va = validate_add(st, i, kind, a, f"unresolved UPDATE ({why}) treated as ADD")
            if va is not None:
                st.accept(va)
            return
        why = (f"entry_id {entry_id!r} is not a current head of this group" if entry_id
               else "UPDATE without entry_id")
        st.reject(i, kind, a, "unresolved_entry_id", f"{why}, and no ADD coordinates to fall back on")
        return
    content = _text(a, "content")
    if not content:
        st.reject(i, kind, a, "missing_field", "missing content")
        return
    norm = memory.normalise_content(content)
    if not norm:
        st.reject(i, kind, a, "empty_content", "content has no words")
        return
    key = ("UPDATE", entry_id, norm)
    if key in st.seen:
        st.reject(i, kind, a, "duplicate", f"same UPDATE as action #{st.seen[key]}")
        return
    current = st.latest_content.get(entry_id, head.content)
    if norm == memory.normalise_content(current):
        st.reject(i, kind, a, "unchanged_update", f"content equals the current state of {entry_id}")
        return
    if _text(a, "owner"):
        owner, _why = st.roster.resolve(a["owner"])
        if owner != head.owner:
            st.reject(i, kind, a, "update_owner_changed",
                      f"{entry_id} is about {st.roster.label(head.owner)!r}; an UPDATE keeps its owner "
                      f"(write an ADD for {_text(a, 'owner')!r})")
            return
    old_source = st.latest_source.get(entry_id, head.source)
    source = old_source
    if _text(a, "source"):
        given_source, why = st.roster.resolve(a["source"])
        if given_source is None:
            st.reject(i, kind, a, "unknown_source", f"source {why}")
            return
        source = given_source
    if source != old_source and head.layer in GROUP_LAYERS and head.utype == "decision":
        st.reject(i, kind, a, "update_recredits_decision",
                  f"{entry_id} is a group decision credited to {st.roster.label(old_source)!r}; an UPDATE "
                  f"cannot hand it to {st.roster.label(source)!r} (a new announcement is an ADD of its own)")
        return
    given_utype = _text(a, "utype").lower()
    # an UPDATE of a decision is checked as one, whatever utype it asks for (a "stance" UPDATE
    # rewrote Dad's group decision while it stayed credited to him)
    checked_utype = "decision" if "decision" in (given_utype, head.utype) else (
        given_utype if given_utype in UTYPES else head.utype)
    credit = _credit(st, head.owner, source, content, checked_utype)
    if credit is not None and credit.reason:
        kept = "keeps" if source == old_source else "gives"
        st.reject(i, kind, a, credit.reason,
                  f"UPDATE of {entry_id} {kept} source {st.roster.label(source)!r}: {credit.detail}")
        return
    st.seen[key] = i
    utype = _text(a, "utype").lower()
    notes = []
    if utype not in UTYPES:
        utype = head.utype
    elif utype != head.utype:
        notes.append(f"utype {head.utype} -> {utype}")
    if source != old_source:
        notes.append(f"source {st.roster.label(old_source)} -> {st.roster.label(source)}")
    if _text(a, "layer"):
        notes.append(f"kept layer of {entry_id} (ignored layer)")
    outcome = ActionOutcome(index=i, kind=kind, status="accepted", applied_as="UPDATE",
                            target=entry_id, detail="; ".join(notes), action=_clip(a))
    va = ValidatedAction("UPDATE", head.owner, source, head.layer, utype, content, outcome,
                         target=entry_id, after=st.chain_tip.get(entry_id))
    if credit is not None:
        va.support, va.confidence = credit.support, credit.confidence
    st.chain_tip[entry_id] = len(st.accepted)
    st.latest_content[entry_id] = content
    st.latest_source[entry_id] = source
    st.accept(va)


def validate_actions(
    actions: Sequence[Any],
    *,
    roster: Roster,
    heads: Sequence[DerivedRecord],
    max_actions: int,
    report: ValidationReport | None = None,
    messages: Sequence[SegmentMessage] | None = None,
    from_max: int = 5,
) -> tuple[list[ValidatedAction], ValidationReport]:
    """Validate a Writer answer's actions against the roster, the current heads and the segment.

    Rules and reasons: see :mod:`graphmem.derived.writer` (SpeakerMem-R1 App. B.2, App. E eq. 19-21).
    The budget and the action type are checked here; each kind then has its own validator.
    With ``messages``, every ADD and UPDATE also passes :func:`check_attribution` (whom it
    credits against who spoke in its FROM messages), and an UPDATE keeps its owner and never
    hands a group decision to another source; each accepted action carries its FROM messages.
    Every write path (``derive``, ``--replay``, the training rollouts) passes them.

    Args:
        actions: the action list (see :func:`coerce_actions`).
        roster: the group's roster.
        heads: the current heads of the group (the pre-state the Writer saw).
        max_actions: the budget; later actions are rejected as ``too_many_actions``.
        report: a report to fill (e.g. one that already lists parse errors); new when None.
        messages: the segment's messages; None checks the coordinates only (no attribution,
            no FROM: for scoring an answer without its segment, never for writing).
        from_max: at most this many FROM messages per record.

    Returns:
        ``(accepted ADD/UPDATE actions in answer order, report)``; NOOPs are in the report only.

    Raises:
        InvalidInputError: ``messages`` holds no non-blank message while an action needs FROM.
    """
    rep = report or ValidationReport()
    rep.max_actions = max_actions
    rep.attempted = len(actions)
    st = AnswerState(
        roster=roster,
        report=rep,
        head_by_id={h.id: h for h in heads},
        head_keys={("ADD", h.owner, h.source, h.layer, memory.normalise_content(h.content)): h.id for h in heads},
        messages=messages,
        from_max=from_max,
    )
    for i, a in enumerate(actions):
        kind_raw = a.get("action") if isinstance(a, dict) else None
        kind = str(kind_raw).strip().upper() if isinstance(kind_raw, str) else "?"
        if i >= max_actions:
            st.reject(i, kind if kind in ("ADD", "UPDATE", "NOOP") else "?", a, "too_many_actions",
                      f"action {i + 1} exceeds the limit of {max_actions}")
            continue
        if not isinstance(a, dict):
            st.reject(i, "?", a, "invalid_action", f"not a JSON object but {type(a).__name__}")
            continue
        if kind not in ("ADD", "UPDATE", "NOOP"):
            st.reject(i, "?", a, "unknown_action",
                      f"action {kind_raw!r} is not ADD, UPDATE or NOOP" if kind_raw is not None else "no 'action' field")
            continue
        if kind == "NOOP":
            validate_noop(st, i, a)
        elif kind == "ADD":
            va = validate_add(st, i, kind, a)
            if va is not None:
                st.accept(va)
        else:
            validate_update(st, i, a)

    rep.accepted = sum(1 for o in rep.outcomes if o.status == "accepted")
    rep.rejected = sum(1 for o in rep.outcomes if o.status == "rejected")
    rep.noops = sum(1 for o in rep.outcomes if o.applied_as == "NOOP")
    return st.accepted, rep
