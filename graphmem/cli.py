"""The ``graphmem`` command line (typer). Commands stay thin: parse, call the library, print."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from graphmem.config import get_settings
from graphmem.errors import GraphMemError

app = typer.Typer(
    help="graphmem: speaker-centred dual-track memory for multi-party dialogue on Neo4j.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
neo4j_app = typer.Typer(help="Run a real local Neo4j Community server.", no_args_is_help=True)
schema_app = typer.Typer(help="Constraints and indexes.", no_args_is_help=True)
app.add_typer(neo4j_app, name="neo4j")
app.add_typer(schema_app, name="schema")

out = Console()
err = Console(stderr=True)


def emit_json(obj: object) -> None:
    """Print ``obj`` as JSON on stdout (UTF-8, not ASCII-escaped)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")


@contextmanager
def open_store() -> Iterator["Store"]:  # noqa: F821
    """Open the driver for one command and close it afterwards."""
    from graphmem.db import Store, open_driver

    driver = open_driver(get_settings())
    try:
        yield Store(driver)
    finally:
        driver.close()


def run_cli() -> None:
    """Entry point wrapper: graphmem errors become a one-line message and exit status 1."""
    try:
        app()
    except GraphMemError as e:
        err.print(f"[red]error:[/red] {e}", markup=True, highlight=False)
        raise SystemExit(1) from None


# ----------------------------------------------------------------------------- neo4j
@neo4j_app.command("start")
def neo4j_start() -> None:
    """Assemble (first time: from Maven Central) and start the local server; wait until ready."""
    from graphmem.local_server import LocalServer

    server = LocalServer(get_settings())
    was_running = server.pid() is not None
    st = server.start()
    word = "already running" if was_running else "started"
    out.print(f"Neo4j {st.version} {word} (pid {st.pid})")
    out.print(f"  Bolt:    {st.bolt_uri}")
    out.print(f"  Browser: {st.browser_url}")
    out.print(f"  Home:    {st.home}")


@neo4j_app.command("stop")
def neo4j_stop() -> None:
    """Stop the server this folder started (never any other process)."""
    from graphmem.local_server import LocalServer

    stopped = LocalServer(get_settings()).stop()
    out.print("Neo4j stopped" if stopped else "Neo4j was not running (from this home)")


@neo4j_app.command("status")
def neo4j_status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Say whether the local server runs, and where."""
    from graphmem.local_server import LocalServer

    st = LocalServer(get_settings()).status()
    data = {
        "running": st.running, "pid": st.pid, "bolt": st.bolt_uri, "browser": st.browser_url,
        "home": str(st.home), "version": st.version,
    }
    if as_json:
        emit_json(data)
    else:
        out.print(f"Neo4j {'running (pid %s)' % st.pid if st.running else 'not running'}")
        out.print(f"  Bolt: {st.bolt_uri}  Browser: {st.browser_url}  Home: {st.home}")
    if not st.running:
        raise typer.Exit(3)


# ----------------------------------------------------------------------------- schema
@schema_app.command("apply")
def schema_apply(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Create constraints, fulltext and vector indexes (idempotent); wait until ONLINE."""
    from graphmem.embed import get_embedder
    from graphmem.schema import apply_schema

    dims = get_embedder().dimension
    with open_store() as store:
        report = apply_schema(store, dims)
    if as_json:
        emit_json({"constraints": report.constraints, "indexes": report.indexes, "dimensions": dims})
    else:
        out.print(
            f"schema applied: {len(report.constraints)} constraints, "
            f"{len(report.indexes)} indexes ONLINE, vector dimension {dims}"
        )


# ----------------------------------------------------------------------------- ingest
@app.command("ingest")
def ingest(
    path: Annotated[Path, typer.Argument(help="File or folder to load.")],
    fmt: Annotated[str, typer.Option(
        "--format", "-f",
        help="jsonl (generic chat: one JSON object per line), locomo (locomo10.json), socialmem "
             "(network file or folder), groupmem (channel file or folder), evermem (folder with "
             "dialogues.jsonl)",
    )] = "jsonl",
    group: Annotated[Optional[str], typer.Option("--group", help="Group id (override/select).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress")] = True,
) -> None:
    """Load a transcript into System 1 (idempotent by message id)."""
    from graphmem.embed import get_embedder
    from graphmem.ingest import ingest_conversations
    from loaders import load_conversations

    conversations = load_conversations(path, fmt, group=group)
    with open_store() as store:
        summary = ingest_conversations(
            store, conversations, get_embedder(),
            batch_size=get_settings().write_batch_size, progress=progress and sys.stderr.isatty(),
        )
    if as_json:
        emit_json(summary.as_dict())
    else:
        out.print(
            f"{summary.groups} group(s), {summary.sessions} sessions, {summary.persons} persons: "
            f"{summary.messages_written} messages written, {summary.messages_skipped} skipped"
        )


# ----------------------------------------------------------------------------- search
@app.command("search")
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
    from graphmem.search import search_messages

    with open_store() as store:
        hits = search_messages(
            store, get_embedder(), group, query, k=k, pool_n=pool_n, mode=mode,  # type: ignore[arg-type]
            expand=expand, rrf_k=get_settings().rrf_k,
        )
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


# ----------------------------------------------------------------------------- stats
@app.command("stats")
def stats(
    group: Annotated[Optional[str], typer.Option("--group", "-g", help="Only this group.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Node and relationship counts (whole store or one group)."""
    with open_store() as store:
        nodes = {r["label"]: r["count"] for r in store.read("stats/count_nodes", group_id=group)}
        rels = {r["type"]: r["count"] for r in store.read("stats/count_relationships", group_id=group)}
        groups = store.read("stats/list_groups") if group is None else []
    if as_json:
        emit_json({"group": group, "nodes": nodes, "relationships": rels, "groups": groups})
        return
    table = Table(title=f"graphmem stats{' for ' + group if group else ''}")
    table.add_column("kind")
    table.add_column("name")
    table.add_column("count", justify="right")
    for k_, v in nodes.items():
        table.add_row("node", k_, str(v))
    for k_, v in rels.items():
        table.add_row("relationship", k_, str(v))
    out.print(table)
    if groups:
        out.print(f"{len(groups)} group(s): " + ", ".join(f"{g['id']} ({g['messages']} msgs)" for g in groups))


# Commands of the other areas register themselves on `app` when imported.
from graphmem import cli_derive  # noqa: E402,F401
from graphmem import cli_query  # noqa: E402,F401
from graphmem import cli_view  # noqa: E402,F401
from graphmem import cli_eval  # noqa: E402,F401
