"""``graphmem neo4j start|stop|status``: the real local Neo4j Community server."""

from __future__ import annotations

from typing import Annotated

import typer

from graphmem.cli.common import emit_json, out
from graphmem.config import get_settings

app = typer.Typer(help="Run a real local Neo4j Community server.", no_args_is_help=True)


@app.command("start")
def start() -> None:
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


@app.command("stop")
def stop() -> None:
    """Stop the server this folder started (never any other process)."""
    from graphmem.local_server import LocalServer

    stopped = LocalServer(get_settings()).stop()
    out.print("Neo4j stopped" if stopped else "Neo4j was not running (from this home)")


@app.command("status")
def status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
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
