"""``graphmem neo4j start|stop|import|status|password``: the real local Neo4j Community server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from graphmem.cli.common import emit_json, open_store, out, err
from graphmem.core.config import get_settings
from graphmem.llm.timing import Stopwatch

app = typer.Typer(help="Run a real local Neo4j Community server.", no_args_is_help=True)


@app.command("start")
def start() -> None:
    """Assemble (first time: from Maven Central) and start the local server; wait until ready."""
    from graphmem.store.local_server import LocalServer

    server = LocalServer(get_settings())
    was_running = server.pid() is not None
    st = server.start()
    word = "already running" if was_running else "started"
    out.print(f"Neo4j {st.version} {word} (pid {st.pid})")
    out.print(f"  Bolt:    {st.bolt_uri}")
    out.print(f"  Browser: {st.browser_url}")
    out.print(f"  Home:    {st.home}")
    s = server.settings
    if s.password_source == "file":
        out.print(f"  Login:   user {s.neo4j_user}, password in {server.password_path} "
                  "(print it with `graphmem neo4j password`)")
    elif s.password_source == "legacy":
        err.print("[yellow]warning:[/yellow] this store still uses the old published fixed password; "
                  "replace it with `graphmem neo4j password --rotate` "
                  "(docs/security.md, \"Local store\")", markup=True, highlight=False, soft_wrap=True)


@app.command("password")
def password(
    rotate: Annotated[bool, typer.Option(
        "--rotate", help="Replace the running store's password with a new random one first.")] = False,
) -> None:
    """Print the local store's Neo4j password (for Neo4j Browser or cypher-shell), on stdout alone.

    It is generated on the first `graphmem neo4j start` and kept in <GRAPHMEM_HOME>/neo4j-password
    (mode 0600); GRAPHMEM_NEO4J_PASSWORD, when set, is used instead. --rotate gives a running
    store a new random password (also the upgrade of a store made with the old fixed password).
    """
    from graphmem.core.errors import LocalServerError
    from graphmem.store.local_server import LocalServer

    server = LocalServer(get_settings())
    s = server.settings
    if rotate:
        server.rotate_password()
        err.print(f"new password stored in {server.password_path}", highlight=False, soft_wrap=True)
    elif s.password_source == "none":
        raise LocalServerError(f"no local store under {s.home} yet: `graphmem neo4j start` makes one and its password")
    where = {"given": "from GRAPHMEM_NEO4J_PASSWORD", "file": f"from {server.password_path}",
             "legacy": "the old fixed password (replace it: graphmem neo4j password --rotate)",
             "none": ""}[s.password_source]
    if not rotate:
        err.print(f"user {s.neo4j_user}, password {where}", highlight=False, soft_wrap=True)
    typer.echo(s.neo4j_password.get_secret_value())


@app.command("stop")
def stop() -> None:
    """Stop the server this folder started (never any other process)."""
    from graphmem.store.local_server import LocalServer

    stopped = LocalServer(get_settings()).stop()
    out.print("Neo4j stopped" if stopped else "Neo4j was not running (from this home)")


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="File or folder to load (as for `graphmem ingest`).")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="as for `graphmem ingest` (jsonl, locomo, socialmem, "
                                     "groupmem, evermem, slack, discord, telegram, whatsapp, auto)")] = "jsonl",
    group: Annotated[Optional[str], typer.Option("--group", help="Group id (override/select).")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace a database that holds data (any node; a stopped server's database "
        "cannot be checked and counts as data).")] = False,
    csv_dir: Annotated[Optional[Path], typer.Option("--csv-dir", help="Where the CSV files go.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    on_bad_record: Annotated[str, typer.Option(
        "--on-bad-record", help="fail (default: nothing is stopped nor written) or skip (good records "
        "load, each bad one goes to --rejects)")] = "fail",
    rejects: Annotated[Optional[Path], typer.Option("--rejects", help="JSONL file for skipped records")] = None,
) -> None:
    """First load into an empty local store with neo4j-admin import.

    Checks the input and writes the CSV files while a running server keeps running (a bad
    record is named with file, line and field, and nothing is stopped or replaced); then stops
    the server, imports, starts it and applies the schema (indexes build in bulk). If the
    importer fails, the database is put back as it was and the server started again. Writes the
    graph `ingest --embed later` writes. Fill vectors afterwards with `graphmem embed --group G`.

    An empty database (no node: a fresh `graphmem neo4j start`, schema applied or not) needs no
    --overwrite; the running server is asked. A stopped server cannot be asked, so its existing
    database is refused without --overwrite: start it first to have it checked. Either refusal
    comes before the input is read and before anything is stopped.

    It pays off from some tens of thousands of messages: stop, import, start and schema cost
    about a minute whatever the size (a running `graphmem serve` gets errors meanwhile); below that,
    `graphmem ingest --embed later` is faster.
    """
    import tempfile
    import threading

    from graphmem.core.private_files import csv_folder
    from graphmem.verbatim.bulk_import import import_conversations
    from graphmem.verbatim.bulk_jsonl import import_jsonl
    from graphmem.cli.common import command_embedder
    from graphmem.store.local_server import LocalServer
    from graphmem.store.schema import apply_schema
    from graphmem.verbatim.order import backfill_order
    from graphmem.cli.ingest import load_input
    from loaders import jsonl_reference

    s = get_settings()
    folder = csv_dir or Path(tempfile.mkdtemp(prefix="graphmem-import-"))
    csv_folder(folder)  # before the input is read
    n_rejected = 0
    fast = fmt == "jsonl" and on_bad_record == "fail"
    if fast:  # parsed, checked and written to CSV in one pass on every core
        parse_s = 0.0
        report = import_jsonl(s, path, folder, reference=jsonl_reference, overwrite=overwrite, group=group,
                              stop_server=True)
    else:
        t0 = Stopwatch()
        conversations, n_rejected = load_input(path, fmt, group, on_bad_record, rejects)
        parse_s = t0.elapsed_s
        report = import_conversations(s, conversations, folder, overwrite=overwrite, stop_server=True)
    dims: list[int] = []

    def load_model() -> None:  # the embedder (for the vector index dimension) loads while the server starts
        try:
            dims.append(command_embedder().dimension)
        except Exception:  # noqa: BLE001 - asked again below, where the error is raised
            pass

    loader = threading.Thread(target=load_model, daemon=True)
    loader.start()
    t = Stopwatch()
    LocalServer(s).start()
    loader.join()
    start_s = t.elapsed_s
    dim = dims[0] if dims else command_embedder().dimension
    t = Stopwatch()
    with open_store() as store:
        apply_schema(store, dim, timeout_s=7200, migrate=backfill_order,
                     global_vector_index=get_settings().vector_global_index)
    schema_s = t.elapsed_s
    seconds = {"parse": parse_s, **report.seconds, "start": start_s, "schema": schema_s}
    if fast:
        del seconds["parse"]  # inside "csv"
    report.summary.messages_rejected = n_rejected
    n = report.summary.messages_written
    total = sum(v for k, v in seconds.items() if k not in ("parse", "stop"))  # the rate: file to indexes
    data = {**report.summary.as_dict(), "seconds": {k: round(v, 2) for k, v in seconds.items()},
            "msg_per_s": round(n / total, 1) if total else None, "csv_dir": str(folder),
            "stopped_server": report.stopped_server}
    if as_json:
        emit_json(data)
    else:
        if report.stopped_server:
            out.print("the running server was stopped for the import (after the input was checked) and restarted")
        out.print(
            f"{report.summary.groups} group(s), {n} messages imported"
            + (f", {n_rejected} rejected (see {rejects})" if n_rejected else "") + "; "
            + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items())
            + f" ({data['msg_per_s']} msg/s from {'the file' if fast else 'CSV'} to indexes ONLINE)"
        )


@app.command("status")
def status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Say whether the local server runs, and where."""
    from graphmem.store.local_server import LocalServer

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
