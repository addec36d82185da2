"""The derive loop: segment -> Writer call (or replay) -> validation -> records -> one write.

Source: SpeakerMem-R1 §3.1-3.2, App. E eq. 19-21.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from graphmem.derived import memory
from graphmem.core.config import Settings
from graphmem.store.db import Store
from graphmem.core.embed import Embedder
from graphmem.core.errors import InvalidInputError, LLMError
from graphmem.core import telemetry
from graphmem.llm import ChatModel, LLMOutputError, Stopwatch, TokenLedger, Usage, sum_usage
from graphmem.derived.memory import NewRecord
from graphmem.verbatim.roster import Roster
from graphmem.verbatim.space import claim_space
from graphmem.derived.writer.prompt import build_writer_messages
from graphmem.derived.writer.attribution import ATTRIBUTION_REASONS
from graphmem.derived.writer.provenance import record_time
from graphmem.derived.writer.segments import (
    WriterSegment,
    load_group,
    load_messages,
    max_actions_for,
    plan_segments,
)
from graphmem.derived.writer.validate import ValidationReport, coerce_actions, validate_actions

logger = logging.getLogger(__name__)


#: Token-accounting stage name of Writer calls.
STAGE = "writer"

#: Times one :func:`derive_group` run plans its segments again after erasures (or edits of a
#: segment's messages) that landed while it ran, before it gives up with
#: :class:`graphmem.derived.memory.ErasedMeanwhile` (or ``EditedMeanwhile``).
MAX_REPLANS = 5


@dataclass
class DeriveSummary:
    """Outcome and cost of one :func:`derive_group` run.

    Attributes:
        group_id / model: what ran.
        segments_before: segments already written when the run started.
        segments_planned / segments_written: segments this run had to write / wrote.
        segments_skipped: written segments that had nothing to read (every message blank):
            no Writer call, a marker with ``skipped = "blank"`` (counted in segments_written).
        messages: messages in the written segments.
        records_added / records_updated: records created by ADD / UPDATE.
        actions_attempted / actions_rejected / noops: action counts over all reports.
        rejections: ``{reason: count}`` over the run.
        calls / prompt_tokens / completion_tokens: Writer usage (stage "writer"), retries of
            unparseable answers included.
        model_s: seconds spent in Writer calls; wall_s: seconds of the whole run.
        replans: times the run planned its segments again because a person (or the group)
            was erased while it ran (nothing the Writer read before the erasure is written).
        reports: the validation report of every written segment.
    """

    group_id: str
    model: str = ""
    segments_before: int = 0
    segments_planned: int = 0
    segments_written: int = 0
    segments_skipped: int = 0
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
    replans: int = 0
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
        InvalidInputError: unreadable file, a malformed line, or a session listed twice; at
            derive time (:meth:`check_sessions`) a session the group does not have.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.model = f"replay:{self.path.name}"
        self.ledger = TokenLedger()
        self.by_session: dict[str, list[Any]] = {}
        self.line_of: dict[str, int] = {}
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
            if not isinstance(item, dict):
                raise InvalidInputError(
                    f"a line is a JSON object {{\"session\": ..., \"actions\": [...]}}, not {type(item).__name__}",
                    source=str(self.path), record=f"line {n}")
            session = item.get("session")
            if not isinstance(session, str) or not session:
                raise InvalidInputError("missing session", source=str(self.path), record=f"line {n}", field="session")
            if not isinstance(item.get("actions"), list):
                raise InvalidInputError("actions must be a list", source=str(self.path), record=f"line {n}", field="actions")
            if session in self.by_session:
                raise InvalidInputError(f"session {session!r} listed twice", source=str(self.path), record=f"line {n}", field="session")
            self.by_session[session] = item["actions"]
            self.line_of[session] = n

    def check_sessions(self, known: list[str]) -> None:
        """Refuse a file line whose session the group does not have (before anything is written).

        Without this check such a line would be silently unused and its session derived as a
        NOOP, and a corrected file could not be replayed (the segment is already written). The
        usual cause: a session of a group with channels is stored as ``"<channel>/<session>"``.

        Raises:
            InvalidInputError: naming the line and field ``session``, with the group's session ids.
        """
        have = set(known)
        for session, n in sorted(self.line_of.items(), key=lambda kv: kv[1]):
            if session not in have:
                shown = ", ".join(repr(k) for k in known[:8]) + (" ..." if len(known) > 8 else "")
                raise InvalidInputError(
                    f"session {session!r} is not a session of this group (its sessions: {shown}); "
                    "nothing was derived", source=str(self.path), record=f"line {n}", field="session")

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
    settings: Settings,
    progress: bool = False,
    on_segment: SegmentCallback | None = None,
    max_segments: int | None = None,
    tracer: telemetry.Tracer = telemetry.NO_TRACER,
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
        settings: segment mode, window, budgets, retries.
        progress: show a progress bar (messages) on stderr.
        on_segment: called after each written segment with (segment, report, summary so far).
        max_segments: stop after writing this many segments (None = all).
        tracer: where the span of each segment (``graphmem.writer.segment``) goes.

    Returns:
        A :class:`DeriveSummary`.

    Raises:
        NotFoundError: the group does not exist.
        LLMError: no Writer is configured while segments are pending, or the endpoint failed
            after retries; :class:`graphmem.llm.LLMOutputError` when no answer held a usable
            action list (``writer_on_parse_error = "fail"``). Segments written before stay.
        ConflictError: another run wrote the same segment meanwhile, or the group is being
            erased (:func:`graphmem.groups.service.erase_group`). A person erased while the run
            works does not stop it: the segment in flight is not written (its Writer input may
            hold the erased words) and the run plans again from what is stored (``replans``);
            :class:`graphmem.derived.memory.ErasedMeanwhile` after :data:`MAX_REPLANS` of them.
            A message of the segment in flight edited meanwhile is handled alike (the segment
            is not written, the edited text is read again; ``EditedMeanwhile`` after as many).
        StoreUnavailableError: Neo4j failed; nothing of the current segment is written.
    """
    s = settings
    watch = Stopwatch()
    _name, roster, segments_before, erasures = load_group(store, group_id)
    pending = load_messages(store, group_id, pending_only=True)
    segments = plan_segments(pending, s.writer_segment, s.writer_window)
    if max_segments is not None:
        segments = segments[: max(0, max_segments)]
    summary = DeriveSummary(group_id=group_id, model=model.model if model else "",
                            segments_before=segments_before, segments_planned=len(segments))
    if not segments:
        summary.wall_s = watch.elapsed_s
        return summary
    if isinstance(model, ReplayWriter):
        if s.writer_segment != "session":
            raise InvalidInputError("replay needs session segments (GRAPHMEM_WRITER_SEGMENT=session)",
                                    field="writer_segment")
        model.check_sessions([r["id"] for r in store.read("writer/list_sessions", group_id=group_id)])
    if model is None and not all(sg.blank for sg in segments):
        raise LLMError(
            f"group {group_id!r} has {len(pending)} messages to derive but no Writer endpoint is "
            "configured: set GRAPHMEM_WRITER_BASE_URL and GRAPHMEM_WRITER_MODEL (or GRAPHMEM_LLM_*)"
        )
    bar = tqdm(total=sum(len(sg.messages) for sg in segments), unit="msg", desc=f"derive {group_id}",
               disable=not progress)
    base = segments_before
    try:
        n = 0
        while n < len(segments):
            seg = segments[n]
            index = base + n + 1
            with tracer.span("graphmem.writer.segment", group_id=group_id, **{
                "segment.index": index, "segment.session": seg.session,
                "segment.messages": len(seg.messages)}) as span:
                try:
                    report = _derive_segment(store, group_id, seg, index, roster, model, embedder, s, summary,
                                             where=f"group {group_id!r}, segment {index} ({n + 1}/{len(segments)} "
                                                   f"of this run, session {seg.session})", erasures=erasures)
                except (memory.ErasedMeanwhile, memory.EditedMeanwhile) as e:
                    # a person was erased, or a message of the segment edited, after this run read
                    # the group: what the Writer read may hold erased words or an old text, so
                    # nothing of it was written; read the group again (the erased messages are gone
                    # from the plan, the edited ones read anew) and go on
                    summary.replans += 1
                    if summary.replans > MAX_REPLANS:
                        raise
                    what = "erased" if isinstance(e, memory.ErasedMeanwhile) else "edited"
                    logger.warning("group %r: data was %s during segment %d; planning again", group_id, what, index)
                    _name, roster, base, erasures = load_group(store, group_id)
                    segments = plan_segments(load_messages(store, group_id, pending_only=True),
                                             s.writer_segment, s.writer_window)
                    if max_segments is not None:
                        segments = segments[: max(0, max_segments - summary.segments_written)]
                    summary.segments_planned = summary.segments_written + len(segments)
                    n = 0
                    continue
                if tracer.enabled:
                    written = [o.applied_as for o in report.outcomes if o.entry_id]
                    span.set_attributes({
                        "graphmem.model_calls": len(report.usage),
                        "graphmem.prompt_tokens": sum(int(u["prompt_tokens"]) for u in report.usage),
                        "graphmem.completion_tokens": sum(int(u["completion_tokens"]) for u in report.usage),
                        "graphmem.records_added": written.count("ADD"),
                        "graphmem.records_updated": written.count("UPDATE"),
                        "graphmem.actions_rejected": report.rejected,
                    })
            bar.update(len(seg.messages))
            bar.set_postfix(records=summary.records_added + summary.records_updated, refresh=False)
            if on_segment is not None:
                on_segment(seg, report, summary)
            n += 1
    finally:
        bar.close()
        summary.wall_s = watch.elapsed_s
    return summary


def _derive_segment(
    store: Store, group_id: str, seg: WriterSegment, index: int, roster: Roster,
    model: ChatModel | ReplayWriter | None, embedder: Embedder, s: Settings, summary: DeriveSummary, where: str,
    erasures: int | None = None,
) -> ValidationReport:
    segment_id = f"seg-{index:04d}"
    budget = max_actions_for(len(seg.messages), s)
    report = ValidationReport(segment_id=segment_id, index=index, session=seg.session,
                              n_messages=len(seg.messages), max_actions=budget)
    if seg.blank:  # nothing to read: no Writer call; the marker says why
        memory.write_segment(store, group_id, memory.SegmentMarker(
            id=segment_id, index=index, session=seg.session, channel=seg.channel, mode=s.writer_segment,
            message_ids=seg.message_ids, first_turn_created=seg.messages[0].turn_created,
            last_turn_created=seg.messages[-1].turn_created, ts_first=seg.messages[0].ts,
            ts_last=seg.messages[-1].ts, max_actions=budget, report=report.model_dump(), stage=STAGE,
            skipped="blank",
        ), [], erasures=erasures, versions={m.id: m.edits for m in seg.messages})
        summary.segments_written += 1
        summary.segments_skipped += 1
        summary.messages += len(seg.messages)
        summary.reports.append(report)
        return report
    assert model is not None  # derive_group refuses to run without one when a segment has text
    heads = memory.current_heads(store, group_id)
    prompt = build_writer_messages(roster, seg, heads, budget)
    ledger_start = len(model.ledger)
    try:
        if isinstance(model, ReplayWriter):
            actions: list[Any] | None = model.actions_for(seg)
        else:
            actions = _call_writer(model, prompt, report, s, where)
    finally:
        spent = sum_usage(_usage_since(model, ledger_start))
        summary.calls += spent.calls
        summary.prompt_tokens += spent.prompt_tokens
        summary.completion_tokens += spent.completion_tokens
        summary.model_s += spent.latency_s
    # every action passes the attribution rules against this segment's messages (who is
    # credited must have spoken in the record's FROM), whatever the Writer (or the file) says
    accepted, report = validate_actions(actions or [], roster=roster, heads=heads, max_actions=budget,
                                        report=report, messages=seg.evidence, from_max=s.writer_from_max)
    for o in report.outcomes:  # a refused credit may be a chat steering the Writer: say so (no content)
        if o.status == "rejected" and o.reason in ATTRIBUTION_REASONS:
            logger.warning("group %r, %s: Writer action #%d refused: %s", group_id, segment_id, o.index, o.reason)

    # code fills id, ts, turn_created, confidence and FROM; embeddings before the transaction
    records: list[NewRecord] = []
    contents = [va.content for va in accepted]
    if contents:
        claim_space(store, group_id, embedder)
    vectors = embedder.encode(contents) if contents else None
    new_ids: list[str] = []
    for k, va in enumerate(accepted, start=1):
        entry_id = f"e{index}.{k}"
        support, confidence = list(va.support), va.confidence  # checked by the attribution rules
        newest = record_time(support, va.source)
        supersedes = new_ids[va.after] if va.after is not None else va.target
        records.append(NewRecord(
            id=entry_id, layer=va.layer, utype=va.utype, content=va.content, owner=va.owner,
            source=va.source, ts=newest.ts, session=seg.session, turn_created=newest.turn_created,
            confidence=confidence, from_ids=[m.id for m in support],
            embedding=vectors[k - 1].tolist(), supersedes=supersedes,  # type: ignore[index]  # vectors: set when accepted
        ))
        new_ids.append(entry_id)
        va.outcome.entry_id = entry_id
        if supersedes:
            va.outcome.target = supersedes

    usage = _usage_since(model, ledger_start)
    spent = sum_usage(usage)
    report.usage = [u.to_dict() for u in usage]
    marker = memory.SegmentMarker(
        id=segment_id, index=index, session=seg.session, channel=seg.channel, mode=s.writer_segment,
        message_ids=seg.message_ids,
        first_turn_created=seg.messages[0].turn_created, last_turn_created=seg.messages[-1].turn_created,
        ts_first=seg.messages[0].ts, ts_last=seg.messages[-1].ts, max_actions=budget,
        attempted=report.attempted, accepted=report.accepted, rejected=report.rejected,
        added=sum(1 for va in accepted if va.kind == "ADD"),
        updated=sum(1 for va in accepted if va.kind == "UPDATE"),
        report=report.model_dump(), stage=STAGE, model=model.model, calls=spent.calls,
        prompt_tokens=spent.prompt_tokens, completion_tokens=spent.completion_tokens,
        latency_s=round(spent.latency_s, 4),
    )
    memory.write_segment(store, group_id, marker, records, erasures=erasures,
                         versions={m.id: m.edits for m in seg.messages})

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
