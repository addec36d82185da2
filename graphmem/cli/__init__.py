"""The ``graphmem`` command line (typer). Commands stay thin: parse, call the library, print.

One module per command group, named after the command: :mod:`~graphmem.cli.neo4j`,
:mod:`~graphmem.cli.schema`, :mod:`~graphmem.cli.ingest`, :mod:`~graphmem.cli.embed`, :mod:`~graphmem.cli.search`,
:mod:`~graphmem.cli.stats`, :mod:`~graphmem.cli.forget`, :mod:`~graphmem.cli.derive`, :mod:`~graphmem.cli.ask`,
:mod:`~graphmem.cli.serve`, :mod:`~graphmem.cli.mcp`, :mod:`~graphmem.cli.summary`,
:mod:`~graphmem.cli.eval`. The
modules import only :mod:`graphmem.cli.common`; this file assembles the app (no import cycle).
"""

from __future__ import annotations

import logging
import os
import sys

import typer
from pydantic import ValidationError
from rich.markup import escape

from graphmem.cli import ask, derive, embed, export, forget, ingest, lists, mcp, neo4j, schema, search, serve, stats, summary
from graphmem.cli import train
from graphmem.cli import eval as eval_group
from graphmem.cli.common import emit_json, err, open_store, out
from graphmem.core.config import get_settings
from graphmem.core.errors import GraphMemError, InvalidInputError
from graphmem.core.redact import MASK, redact_text

__all__ = ["app", "emit_json", "err", "open_store", "out", "run_cli"]

app = typer.Typer(
    help="graphmem: speaker-centred dual-track memory for multi-party dialogue on Neo4j.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(neo4j.app, name="neo4j")
app.add_typer(schema.app, name="schema")
app.command("ingest")(ingest.ingest)
app.command("embed")(embed.embed)
app.command("search")(search.search)
app.command("groups")(lists.groups)
app.command("roster")(lists.roster)
app.command("jobs")(lists.jobs)
app.command("message")(lists.message)
app.command("stats")(stats.stats)
app.command("forget")(forget.forget)
app.command("export")(export.export)
app.command("derive")(derive.derive)
app.command("ask")(ask.ask_command)
app.command("serve")(serve.serve_command)
app.command("mcp")(mcp.mcp_command)
app.command("summary")(summary.summary_cmd)
app.add_typer(eval_group.eval_app, name="eval")
app.add_typer(train.app, name="train")


def _group_hint(error: GraphMemError) -> GraphMemError:
    """The error of a group id that names no group, with a "did you mean" when a group of the
    store resembles it (as the library, the API and MCP say it); else the error as it was."""
    if not getattr(error, "missing_group", ""):
        return error
    from graphmem.cli.common import open_store
    from graphmem.groups.service import with_group_hint

    try:
        with open_store() as store:
            return with_group_hint(store, error)
    except GraphMemError:
        return error


def _check_arguments(argv: list[str]) -> None:
    """Refuse, before any work, an argument that is not UTF-8 (Python reads its bytes as lone
    surrogates, ``\\udcff``, which no store, index or hash can take: ``--group $'\\xff'`` was a
    ``UnicodeEncodeError`` traceback). An argument naming an existing file is a path and is
    left to the command: a file name may hold any bytes.

    Raises:
        InvalidInputError: naming the argument's place and the first byte that is not UTF-8.
    """
    for place, arg in enumerate(argv, start=1):
        bad = next((i for i, ch in enumerate(arg) if "\ud800" <= ch <= "\udfff"), None)
        if bad is None or os.path.lexists(arg):
            continue
        byte = ord(arg[bad]) - 0xDC00 if "\udc80" <= arg[bad] <= "\udcff" else None
        what = f"byte 0x{byte:02X}" if byte is not None else f"U+{ord(arg[bad]):04X}"
        raise InvalidInputError(f"argument {place} is not UTF-8 text ({what} at character {bad}); "
                                "give ids, names and questions as UTF-8")


def run_cli() -> None:
    """Entry point wrapper: graphmem errors become a one-line message and exit status 1.

    One line also when stderr is not a terminal (no wrapping at 80 columns, for logs), and the
    text is printed as is (brackets in it are not markup). The driver's notices of a
    transaction it retries are not shown: the retry is routine, and a final failure is reported.
    """
    logging.getLogger("neo4j").setLevel(logging.ERROR)
    try:
        _check_arguments(sys.argv[1:])
        get_settings()  # a GRAPHMEM_* setting that does not parse fails here, in one line (below)
        app()
    except GraphMemError as e:
        e = _group_hint(e)
        # the refused value is shown here only, to the user who gave it (never in API/MCP bodies)
        got = f" (got {e.value})" if isinstance(e, InvalidInputError) and e.value is not None else ""
        err.print(f"[red]error:[/red] {escape(redact_text(str(e)) + got)}", markup=True, highlight=False,
                  soft_wrap=True)
        raise SystemExit(1) from None
    except ValidationError as e:  # a GRAPHMEM_* setting that does not parse
        if e.title != "Settings":
            raise
        for problem in e.errors():
            name = "GRAPHMEM_" + "_".join(str(p) for p in problem["loc"]).upper()
            shown = problem.get("input")
            if any(w in name for w in ("KEY", "PASSWORD", "SECRET", "TOKEN")):
                shown = MASK
            elif isinstance(shown, str):
                shown = redact_text(shown)
            msg = f"setting {name}={shown!r}: {problem['msg']}"
            err.print(f"[red]error:[/red] {escape(msg)}", markup=True, highlight=False, soft_wrap=True)
        raise SystemExit(1) from None
