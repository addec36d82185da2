"""``graphmem ingest``: load a transcript into System 1."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from graphmem.cli.common import emit_json, open_store, out
from graphmem.core.config import get_settings
from graphmem.core.errors import InvalidInputError

if TYPE_CHECKING:
    from graphmem.core.model import Conversation

FORMAT_HELP = ("jsonl (generic chat: one JSON object per line), locomo (locomo10.json), socialmem "
               "(network file or folder), groupmem (channel file or folder), evermem (folder with "
               "dialogues.jsonl, or a batch folder / dataset folder of the GitHub layout with dialogue.json), "
               "slack (workspace export folder or zip), discord (DiscordChatExporter JSON), telegram "
               "(Telegram Desktop result.json), whatsapp (Export chat .txt or .zip), auto (detect; "
               "says what it found on stderr), graphmem-export (a `graphmem export` file, into a group "
               "that does not exist yet); docs/import.md, docs/export.md")


def load_input(path: Path, fmt: str, group: str | None, on_bad_record: str,
               rejects: Path | None) -> tuple[list[Conversation], int]:
    """Parse ``path`` for ``ingest`` and ``neo4j import``: detect ``auto`` (said on stderr),
    and with ``on_bad_record="skip"`` leave out every bad record (the loader's and the input
    rules of ingest's validation) and write each to ``rejects`` as one JSON line ``{"source",
    "record", "field", "rule", "raw"}``.

    Returns:
        (the conversations to write, number of records rejected).

    Raises:
        typer.BadParameter: ``on_bad_record`` not fail/skip, or skip without ``--rejects``.
        InvalidInputError: with ``fail``, the first bad record (file, record, field).
    """
    from graphmem.verbatim.ingest import split_invalid
    from loaders import Reject, detect_format, load_conversations

    if on_bad_record not in ("fail", "skip"):
        raise typer.BadParameter("--on-bad-record must be fail or skip")
    if on_bad_record == "skip" and rejects is None:
        raise typer.BadParameter("--on-bad-record skip needs --rejects FILE (where the bad records go)")
    if fmt == "auto":
        fmt = detect_format(path)
        print(f"detected format: {fmt}", file=sys.stderr)
    if on_bad_record == "fail":
        return load_conversations(path, fmt, group=group), 0
    bad: list[Reject] = []
    conversations = load_conversations(path, fmt, group=group, rejects=bad)
    kept: list[Conversation] = []
    for conv in conversations:
        good, refused = split_invalid(conv)
        kept.append(good)
        for m, e in refused:
            bad.append(Reject(e.source or conv.source, e.record, e.field, e.reason, m.model_dump(mode="json")))
    assert rejects is not None
    with rejects.open("w", encoding="utf-8") as fh:
        for r in bad:
            fh.write(json.dumps(r.as_dict(), ensure_ascii=False, default=str) + "\n")
    return [c for c in kept if c.messages], len(bad)


def _summary_line(summary: Any) -> str:
    rejected = f", {summary.messages_rejected} rejected" if summary.messages_rejected else ""
    renamed = "".join(f"\nchannel renamed since it was stored, kept under its stored name: {r}"
                      for r in summary.channels_renamed)
    return (f"{summary.groups} group(s), {summary.sessions} sessions, {summary.persons} persons: "
            f"{summary.messages_written} messages written, {summary.messages_edited} edited, "
            f"{summary.messages_skipped} skipped{rejected}{renamed}")


def ingest(
    path: Annotated[Path, typer.Argument(help="File or folder to load.")],
    fmt: Annotated[Optional[str], typer.Option("--format", "-f", help=FORMAT_HELP,
                                               show_default="jsonl")] = None,
    group: Annotated[Optional[str], typer.Option("--group", help="Group id (override/select).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress")] = True,
    embed: Annotated[str, typer.Option(
        "--embed",
        help="now: compute vectors while loading; later: store messages at once (fulltext "
             "search works), fill vectors afterwards with `graphmem embed --group G`",
    )] = "now",
    on_bad_record: Annotated[str, typer.Option(
        "--on-bad-record", help="fail (default: nothing is written, the error names file, record and "
        "field) or skip (every good record loads; each bad one goes to --rejects)")] = "fail",
    rejects: Annotated[Optional[Path], typer.Option(
        "--rejects", help="JSONL file for the records skipped by --on-bad-record skip "
        "(source, record, field, rule, raw)")] = None,
) -> None:
    """Load a transcript into System 1 (idempotent by message id)."""
    from graphmem.cli.common import command_embedder, show_progress
    from graphmem.verbatim.ingest import ingest_conversations
    if embed not in ("now", "later"):
        raise typer.BadParameter("--embed must be now or later")
    if fmt == "graphmem-export":
        _import_export(path, group, as_json)
        return
    try:
        conversations, n_rejected = load_input(path, fmt or "jsonl", group, on_bad_record, rejects)
    except InvalidInputError as e:
        if fmt is not None or not e.source or e.record not in ("", "line 1"):
            raise
        # no --format: the file was read as JSON Lines; a chat export or a benchmark file fails
        # there, at its first line or as a whole, with an error about JSON or UTF-8 that says
        # nothing of the format (an error naming a later line is of a file that reads as JSON
        # Lines: a repeated id, a bad value; the hint would mislead)
        hinted = InvalidInputError(
            f"{e.reason} (read as JSON Lines, the default --format; for a chat export or a benchmark "
            "file pass --format, or --format auto to detect it)",
            source=e.source, record=e.record, field=e.field)
        hinted.value = e.value
        raise hinted from None
    s = get_settings()
    with open_store() as store:
        summary = ingest_conversations(
            store, conversations, command_embedder() if embed == "now" else None,
            batch_size=s.write_batch_size if embed == "now" else s.bulk_batch_size,
            progress=show_progress(progress, as_json), embed=embed, exact_max=s.vector_exact_max,
            workers=s.ingest_workers,
        )
    summary.messages_rejected = n_rejected
    if as_json:
        emit_json(summary.as_dict())
    else:
        out.print(_summary_line(summary))


def _import_export(path: Path, group: Optional[str], as_json: bool) -> None:
    """``--format graphmem-export``: a group export into a new group (graphmem.groups.export)."""
    from graphmem.cli.common import command_embedder
    from graphmem.groups.export import import_group, read_export

    lines = read_export(path)
    with open_store() as store:
        summary = import_group(store, command_embedder(), lines, group_id=group, source=path.name)
    if as_json:
        emit_json(summary.model_dump())
    else:
        out.print(
            f"{summary.group_id}: {summary.persons} persons, {summary.sessions} sessions, {summary.messages} "
            f"messages ({summary.edits} edits), {summary.segments} segments, {summary.records} records imported"
        )
