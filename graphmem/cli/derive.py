"""``graphmem derive``: the Writer builds System 2 for one group (resumable), or shows reports.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from graphmem.cli.common import emit_json, err, open_store, out
from graphmem.core.config import get_settings
from graphmem.core.errors import GraphMemError, InvalidInputError

if TYPE_CHECKING:
    from graphmem.derived.writer import DeriveSummary, ValidationReport, WriterSegment


def _cost_lines(summary: DeriveSummary) -> list[str]:
    rejected = ", ".join(f"{k} {v}" for k, v in sorted(summary.rejections.items())) or "none"
    per100 = ""
    if summary.messages:
        f = 100.0 / summary.messages
        per100 = (
            f"; per 100 messages: {summary.calls * f:.1f} calls, "
            f"{summary.prompt_tokens * f:,.0f} prompt + {summary.completion_tokens * f:,.0f} completion tokens"
        )
    return [
        f"group {summary.group_id}: {summary.segments_written} of {summary.segments_planned} pending "
        f"segment(s) written ({summary.segments_before} before this run), {summary.messages} messages"
        + (f"; {summary.segments_skipped} skipped as blank (no Writer call)" if summary.segments_skipped else ""),
        f"records: {summary.records_added} added, {summary.records_updated} updated; actions: "
        f"{summary.actions_attempted} attempted, {summary.noops} NOOP, {summary.actions_rejected} "
        f"rejected ({rejected})",
        f"Writer {summary.model or '-'}: {summary.calls} calls, {summary.prompt_tokens:,} prompt + "
        f"{summary.completion_tokens:,} completion tokens, {summary.model_s:.1f} s in the model, "
        f"{summary.wall_s:.1f} s wall{per100}",
    ]


def derive(
    group: Annotated[str, typer.Option("--group", "-g", help="Group id to derive.")],
    report: Annotated[bool, typer.Option("--report", help="Print the stored validation reports; derive nothing.")] = False,
    segment: Annotated[Optional[int], typer.Option("--segment", help="With --report: only this segment index.")] = None,
    mode: Annotated[Optional[str], typer.Option("--segment-mode", help="session|window (default GRAPHMEM_WRITER_SEGMENT).")] = None,
    window: Annotated[Optional[int], typer.Option("--window", help="Messages per window (default GRAPHMEM_WRITER_WINDOW).")] = None,
    max_segments: Annotated[Optional[int], typer.Option("--max-segments", help="Stop after this many segments.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary / the reports as JSON.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress")] = True,
    replay: Annotated[
        Optional[Path],
        typer.Option("--replay", help="Replay recorded Writer actions (JSONL, one line per session) "
                     "through the same validation instead of calling a model."),
    ] = None,
) -> None:
    """The Writer builds System 2 (four derived layers) for a group; resumable, idempotent."""
    from graphmem.store.db import quiet_notifications

    quiet_notifications()  # "label does not exist" on a store without derived memory yet
    if report:
        _print_reports(group, segment, as_json)
        return

    from graphmem.cli.common import command_embedder, show_progress
    from graphmem.llm import TokenLedger, writer_model
    from graphmem.derived.writer import ReplayWriter, derive_group

    update: dict[str, object] = {}
    if mode is not None:
        if mode not in ("session", "window"):
            raise InvalidInputError(f"--segment-mode must be session or window, not {mode!r}")
        update["writer_segment"] = mode
    if window is not None:
        update["writer_window"] = window
    settings = get_settings().model_copy(update=update)
    ledger = TokenLedger()
    model = ReplayWriter(replay) if replay is not None else writer_model(settings, ledger=ledger)
    written: list[int] = []

    def on_segment(_seg: WriterSegment, _report: ValidationReport, summary: DeriveSummary) -> None:
        written.append(summary.segments_written)

    try:
        with open_store() as store:
            summary = derive_group(
                store, group, model=model, embedder=command_embedder(), settings=settings,
                progress=show_progress(progress, as_json), on_segment=on_segment,
                max_segments=max_segments,
            )
    except KeyboardInterrupt:
        err.print(
            f"interrupted: {len(written)} segment(s) written in this run; the current one was not. "
            f"Run `graphmem derive --group {shlex.quote(group)}` again to resume.", highlight=False, soft_wrap=True,
        )
        raise typer.Exit(130) from None
    except GraphMemError:
        if written:
            err.print(f"{len(written)} segment(s) were written before the failure; a re-run resumes "
                      "at the first unwritten segment.", highlight=False, soft_wrap=True)
        raise
    finally:
        if model is not None:
            model.close()
    if as_json:
        data = summary.as_dict()
        data["usage"] = ledger.summary()
        emit_json(data)
        return
    if summary.segments_planned == 0:
        out.print(f"group {group}: nothing to derive ({summary.segments_before} segment(s) already written)",
                  highlight=False, soft_wrap=True)
        return
    for line in _cost_lines(summary):
        out.print(line, highlight=False, soft_wrap=True)


def _print_reports(group: str, segment: int | None, as_json: bool) -> None:
    from graphmem.derived import memory
    from graphmem.derived.writer import ValidationReport

    with open_store() as store:
        segments = memory.list_segments(store, group)
    if segment is not None:
        segments = [s for s in segments if s.index == segment]
    if as_json:
        emit_json([s.model_dump() for s in segments])
        return
    if not segments:
        out.print(f"group {group}: no written segment{'' if segment is None else f' with index {segment}'}",
                  highlight=False, soft_wrap=True)
        return
    for s in segments:
        out.print(ValidationReport(**s.report).render(), highlight=False, markup=False, soft_wrap=True)
    out.print(
        f"stored Writer usage for {group} (stage writer): {len(segments)} segment(s), "
        f"{sum(s.n_messages for s in segments)} messages, {sum(s.calls for s in segments)} calls, "
        f"{sum(s.prompt_tokens for s in segments):,} prompt + {sum(s.completion_tokens for s in segments):,} "
        f"completion tokens, {sum(s.latency_s for s in segments):.1f} s in the model; records "
        f"{sum(s.added for s in segments)} added, {sum(s.updated for s in segments)} updated; "
        f"{sum(s.rejected for s in segments)} actions rejected",
        highlight=False, soft_wrap=True,
    )
