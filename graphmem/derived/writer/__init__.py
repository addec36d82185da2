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
   owner and layer from the head it replaces, and its source unless it names a new one;
3. embeds the new contents (before the transaction) and writes the segment atomically with
   its resume marker (:func:`graphmem.derived.memory.write_segment`).

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
  normalised content); NOOP key = the action type;
- attribution (:func:`check_attribution`, against the segment's messages, whatever the model
  wrote): a person source who is not the speaker of any FROM message -> ``source_not_speaker``;
  a source whom another member's message reports (that message names them and carries more of
  the record's words than anything they wrote) -> ``reported_claim_source``; GROUP as source
  with FROM messages from fewer than two members -> ``group_source_single_speaker``; an UPDATE
  naming another owner than its head's -> ``update_owner_changed``; an UPDATE that would give a
  group decision another source -> ``update_recredits_decision``; a decision (ADD or UPDATE)
  credited to a person none of whose words in the segment it shares, while another member's
  message does -> ``decision_not_in_source_words``; any other record credited to a person none
  of whose words it shares, carried by another member's message the person wrote nothing after
  -> ``claim_not_in_source_words``. An UPDATE may change the
  source of any other record, to a speaker of its new FROM messages.

Two UPDATEs of one head in one answer are applied in order (old -> first -> second), so the
chain never forks.

Supporting messages (FROM), chosen among the segment's messages (never empty); see
:func:`supporting_messages`.

Source: SpeakerMem-R1 §3.1-3.2, App. B.2, App. E eq. 19-21, App. I.2 (Writer contract; the
prompt below is our own wording of that contract).
"""

from __future__ import annotations

from graphmem.verbatim.roster import Roster, RosterEntry
from graphmem.derived.writer.derive import (
    STAGE,
    DeriveSummary,
    ReplayWriter,
    SegmentCallback,
    derive_group,
)
from graphmem.derived.writer.prompt import (
    WRITER_SYSTEM_PROMPT,
    build_writer_messages,
    memory_line,
)
from graphmem.derived.writer.provenance import SUPPORT_CONFIDENCE, record_time, reported_claim, supporting_messages
from graphmem.derived.writer.segments import (
    SegmentMessage,
    WriterSegment,
    load_messages,
    load_roster,
    max_actions_for,
    plan_segments,
)
from graphmem.derived.writer.attribution import ATTRIBUTION_REASONS, Attribution, check_attribution, check_from
from graphmem.derived.writer.validate import (
    REASONS,
    ActionOutcome,
    ValidatedAction,
    ValidationReport,
    coerce_actions,
    validate_actions,
)

__all__ = [
    "ATTRIBUTION_REASONS",
    "REASONS",
    "STAGE",
    "SUPPORT_CONFIDENCE",
    "WRITER_SYSTEM_PROMPT",
    "ActionOutcome",
    "Attribution",
    "DeriveSummary",
    "ReplayWriter",
    "Roster",
    "RosterEntry",
    "SegmentCallback",
    "SegmentMessage",
    "ValidatedAction",
    "ValidationReport",
    "WriterSegment",
    "build_writer_messages",
    "check_attribution",
    "check_from",
    "coerce_actions",
    "derive_group",
    "load_messages",
    "load_roster",
    "max_actions_for",
    "memory_line",
    "plan_segments",
    "record_time",
    "reported_claim",
    "supporting_messages",
    "validate_actions",
]
