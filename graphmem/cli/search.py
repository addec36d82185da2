"""``graphmem search``: System 1 retrieval over one group."""

from __future__ import annotations

import logging
from typing import Annotated

import typer
from rich.table import Table

from graphmem.cli.common import emit_json, err, open_store, out
from graphmem.config import get_settings


def search(
    query: Annotated[str, typer.Argument(help="Free-text query.")],
    group: Annotated[str, typer.Option("--group", "-g", help="Group id to search.")],
    k: Annotated[int, typer.Option("-k", help="Number of hits.")] = 10,
    pool_n: Annotated[int, typer.Option("--pool", help="Recall pool depth per index.")] = 40,
    mode: Annotated[str, typer.Option("--mode", help="hybrid|fulltext|vector")] = "hybrid",
    expand: Annotated[int, typer.Option("--expand", help="Neighbouring turns to add (0-5).")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the hits as JSON.")] = False,
) -> None:
    """System 1 hybrid retrieval (fulltext + vector, reciprocal-rank fusion), group-scoped."""
    from graphmem.embed import get_embedder
    from graphmem.search import group_state, search_messages

    with open_store() as store:
        pending = group_state(store, group).pending
        if pending and mode != "fulltext":
            how = "ranking by fulltext alone" if mode == "hybrid" else "only messages with a vector are ranked"
            err.print(
                f"[yellow]{pending} message(s) of {group} have no vector yet; {how} until "
                f"`graphmem embed --group {group}` has run[/yellow]", soft_wrap=True, highlight=False,
            )
        # said once above; search_messages logs the same warning for library callers
        log = logging.getLogger("graphmem.search")
        level = log.level
        log.setLevel(logging.ERROR)
        try:
            hits = search_messages(
                store, get_embedder(), group, query, k=k, pool_n=pool_n, mode=mode,  # type: ignore[arg-type]
                expand=expand, rrf_k=get_settings().rrf_k,
            )
        finally:
            log.setLevel(level)
    if as_json:
        emit_json([h.as_dict() for h in hits])
        return
    table = Table(show_lines=False)
    for col in ("score", "id", "speaker", "session", "turn", "ts", "text"):
        table.add_column(col, overflow="fold")
    for h in hits:
        score = f"{h.score:.4f}" if not h.expanded_from else f"(+{h.expanded_from})"
        table.add_row(score, h.id, h.speaker, h.session, str(h.turn), h.ts, h.text)
    out.print(table)
