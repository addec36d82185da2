"""``graphmem groups``, ``graphmem roster``, ``graphmem jobs`` and ``graphmem message``: the lists of
the HTTP API and MCP (``GET /groups``, ``/groups/{g}/roster``, ``/groups/{g}/jobs``,
``/groups/{g}/messages/{id}``) on the command line.

Each list prints one page (``--limit``; ``--cursor`` for the next one); ``--all`` walks every
page. ``--json`` prints the page as the API answers it (``truncated``, ``next_cursor``); the
table says on stderr how to read on.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer
from rich.table import Table
from rich.text import Text

from graphmem.cli.common import cells, emit_json, err, open_store, out
from graphmem.core.paging import DEFAULT_LIMIT

Limit = Annotated[int, typer.Option("--limit", "-n", help="Items on the page.")]
Cursor = Annotated[Optional[str], typer.Option("--cursor", help="next_cursor of the previous page.")]
All = Annotated[bool, typer.Option("--all", help="Walk every page (with --json: one object per page, one per line).")]
Json = Annotated[bool, typer.Option("--json", help="Print the page as JSON (truncated, next_cursor).")]


def _pages(read: Callable[[str | None], Any], cursor: str | None, every: bool) -> list[Any]:
    """The page at ``cursor``, or with ``every`` it and all pages after it."""
    pages = [read(cursor)]
    while every and pages[-1].next_cursor is not None:
        pages.append(read(pages[-1].next_cursor))
    return pages


def _more(page: Any, command: str) -> None:
    if page.next_cursor is not None:
        err.print(f"more follow: {command} --cursor {page.next_cursor}", soft_wrap=True, highlight=False, markup=False)


def _emit(pages: list[Any], every: bool) -> None:
    if every:
        import sys

        for page in pages:  # JSON Lines: one page per line
            sys.stdout.write(page.model_dump_json() + "\n")
        return
    emit_json(pages[0].model_dump())


def groups(limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None, every: All = False, as_json: Json = False) -> None:
    """The groups of the store, by id, with their sizes (``GET /groups``)."""
    from graphmem.groups.service import list_groups

    with open_store() as store:
        pages = _pages(lambda c: list_groups(store, limit=limit, cursor=c), cursor, every)
    if as_json:
        _emit(pages, every)
        return
    table = Table()
    for col in ("id", "name", "persons", "messages"):
        table.add_column(col, overflow="fold")
    for page in pages:
        for g in page.groups:
            table.add_row(*cells(g.id, g.name, g.persons, g.messages))
    out.print(table)
    _more(pages[-1], f"graphmem groups --limit {limit}")


def roster(
    group: Annotated[str, typer.Option("--group", "-g", help="Group id.")],
    limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None, every: All = False, as_json: Json = False,
) -> None:
    """The people of a group, by id, with their message counts (``GET /groups/{id}/roster``).
    Exit status 1 for an unknown group."""
    from graphmem.verbatim.roster import roster_page

    with open_store() as store:
        pages = _pages(lambda c: roster_page(store, group, limit=limit, cursor=c), cursor, every)
    if as_json:
        _emit(pages, every)
        return
    table = Table(title=Text(f"{group}: {pages[0].total} people"))
    for col in ("id", "name", "messages", "aliases"):
        table.add_column(col, overflow="fold")
    for page in pages:
        for p in page.persons:
            table.add_row(*cells(p.id, p.label or p.name, p.messages, ", ".join(a for a in p.aliases if a != p.name)))
    out.print(table)
    _more(pages[-1], f"graphmem roster --group {shlex.quote(group)} --limit {limit}")


def jobs(
    group: Annotated[str, typer.Option("--group", "-g", help="Group id.")],
    limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None, every: All = False, as_json: Json = False,
) -> None:
    """A group's background derive jobs, newest first, with their progress (``GET
    /groups/{id}/jobs``). Exit status 1 for an unknown group."""
    from graphmem.core.config import get_settings
    from graphmem.groups.jobs import list_derive_jobs

    settings = get_settings()
    with open_store() as store:
        pages = _pages(lambda c: list_derive_jobs(store, group, settings, limit=limit, cursor=c), cursor, every)
    if as_json:
        _emit(pages, every)
        return
    table = Table(title=Text(f"{group}: derive jobs"))
    for col in ("id", "state", "created_at", "segments", "error"):
        table.add_column(col, overflow="fold")
    for page in pages:
        for j in page.jobs:
            table.add_row(*cells(j.id, j.state, j.created_at, f"{j.segments_done}/{j.segments_total}", j.error))
    out.print(table)
    _more(pages[-1], f"graphmem jobs --group {shlex.quote(group)} --limit {limit}")


def message(
    message_id: Annotated[str, typer.Argument(help="Message id.")],
    group: Annotated[str, typer.Option("--group", "-g", help="Group id.")],
    as_json: Json = False,
) -> None:
    """One whole message (``GET /groups/{id}/messages/{message_id}``): what a list cut short
    (``text_truncated``), with its full text. Exit status 1 for an unknown group or message."""
    from graphmem.query.people import get_message

    with open_store() as store:
        msg = get_message(store, group, message_id)
    if as_json:
        emit_json(msg.model_dump())
        return
    out.print(f"{msg.speaker} @ {msg.ts} (session {msg.session}, turn {msg.turn}, "
              f"{msg.text_chars} characters)", highlight=False)
    out.print(msg.text, markup=False, highlight=False, soft_wrap=True)
