"""``graphmem search``: System 1 retrieval over one group."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from graphmem.cli.common import cells, emit_json, err, out
from graphmem.core.config import get_settings


def search(
    query: Annotated[str, typer.Argument(help="Free-text query.")],
    group: Annotated[str, typer.Option("--group", "-g", help="Group id to search.")],
    k: Annotated[int, typer.Option("-k", help="Number of hits.")] = 10,
    pool_n: Annotated[int, typer.Option("--pool", help="Recall pool depth per index.")] = 40,
    mode: Annotated[str, typer.Option("--mode", help="hybrid|fulltext|vector")] = "hybrid",
    expand: Annotated[int, typer.Option("--expand", help="Neighbouring turns to add (0-5).")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result (hits and how they were ranked) as JSON.")] = False,
    cursor: Annotated[Optional[str], typer.Option("--cursor", help="next_cursor of the previous page (same query and mode).")] = None,
) -> None:
    """System 1 hybrid retrieval (fulltext + vector, reciprocal-rank fusion), group-scoped.

    --json prints {group_id, query, mode, mode_used, vectors_pending, warning, hits, truncated,
    next_cursor}: the same object as GET /groups/{id}/search and the MCP tool search_messages.
    A page holds k hits; when more follow, the next page is --cursor NEXT_CURSOR (the table
    prints it on stderr). Texts over 2,000 characters are cut; graphmem message reads one whole.
    """
    from graphmem.cli.common import open_runtime
    from graphmem.recall.search import search_group
    from graphmem.verbatim.roster import read_roster

    with open_runtime(models=False, warm=mode != "fulltext") as rt:
        result = search_group(
            rt.store, rt.embedder, group, query, k=k, pool_n=pool_n, mode=mode,  # type: ignore[arg-type]  # a str from typer: search_group refuses an unknown mode
            expand=expand, rrf_k=get_settings().rrf_k, cache=rt.cache, tracer=rt.tracer, cursor=cursor,
        )
        # two members who share a display name are told apart as the roster does: "Alex (U02ALEXA)"
        shared = set() if as_json else {m.id for m in read_roster(rt.store, group, counts=False) if m.label != m.name}
    if result.warning:  # on stderr, so --json stays parseable
        err.print(result.warning, style="yellow", soft_wrap=True, highlight=False, markup=False)
    if as_json:
        emit_json(result.model_dump())
        return
    hits = result.hits
    table = Table(show_lines=False)
    for col in ("score", "id", "speaker", "session", "turn", "ts", "text"):
        table.add_column(col, overflow="fold")
    for h in hits:
        score = f"{h.score:.4f}" if not h.expanded_from else f"(+{h.expanded_from})"
        text = h.text + (f" [... {h.text_chars} characters: graphmem message {h.id}]" if h.text_truncated else "")
        speaker = f"{h.speaker} ({h.person_id})" if h.person_id in shared else h.speaker
        table.add_row(*cells(score, h.id, speaker, h.session, h.turn, h.ts, text))
    out.print(table)
    if result.next_cursor is not None:
        err.print(f"more follow: --cursor {result.next_cursor}", soft_wrap=True, highlight=False, markup=False)
