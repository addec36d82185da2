"""``graphmem ingest``: load a transcript into System 1."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from graphmem.cli.common import emit_json, open_store, out
from graphmem.core.config import get_settings


def ingest(
    path: Annotated[Path, typer.Argument(help="File or folder to load.")],
    fmt: Annotated[str, typer.Option(
        "--format", "-f",
        help="jsonl (generic chat: one JSON object per line), locomo (locomo10.json), socialmem "
             "(network file or folder), groupmem (channel file or folder), evermem (folder with "
             "dialogues.jsonl, or a batch folder / dataset folder of the GitHub layout with dialogue.json), "
             "graphmem-export (a `graphmem export` file, into a group that does not exist yet)",
    )] = "jsonl",
    group: Annotated[Optional[str], typer.Option("--group", help="Group id (override/select).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress")] = True,
    embed: Annotated[str, typer.Option(
        "--embed",
        help="now: compute vectors while loading; later: store messages at once (fulltext "
             "search works), fill vectors afterwards with `graphmem embed --group G`",
    )] = "now",
) -> None:
    """Load a transcript into System 1 (idempotent by message id)."""
    from graphmem.cli.common import command_embedder
    from graphmem.verbatim.ingest import ingest_conversations
    from loaders import load_conversations

    if embed not in ("now", "later"):
        raise typer.BadParameter("--embed must be now or later")
    if fmt == "graphmem-export":
        _import_export(path, group, as_json)
        return
    conversations = load_conversations(path, fmt, group=group)
    s = get_settings()
    with open_store() as store:
        summary = ingest_conversations(
            store, conversations, command_embedder() if embed == "now" else None,
            batch_size=s.write_batch_size if embed == "now" else s.bulk_batch_size,
            progress=progress and sys.stderr.isatty(), embed=embed, exact_max=s.vector_exact_max,
            workers=s.ingest_workers,
        )
    if as_json:
        emit_json(summary.as_dict())
    else:
        out.print(
            f"{summary.groups} group(s), {summary.sessions} sessions, {summary.persons} persons: "
            f"{summary.messages_written} messages written, {summary.messages_edited} edited, "
            f"{summary.messages_skipped} skipped"
        )


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
