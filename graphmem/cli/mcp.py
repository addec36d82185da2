"""``graphmem mcp``: group memory as MCP tools for agents (stdio or streamable HTTP)."""

from __future__ import annotations

import logging
import sys
from typing import Annotated, Optional

import typer
from rich.markup import escape

from graphmem.cli.common import err
from graphmem.core.config import get_settings


def mcp_command(
    transport: Annotated[str, typer.Option(
        "--transport", "-t", help="stdio (the agent starts this command) or http (streamable HTTP at /mcp).",
    )] = "stdio",
    tools: Annotated[str, typer.Option(
        "--tools", help="core (append, search, ask, roster, person memory, provenance, forget) or "
                        "all (core + read_cypher + export_group).",
    )] = "core",
    host: Annotated[Optional[str], typer.Option("--host", help="HTTP interface (default GRAPHMEM_API_HOST, 127.0.0.1).")] = None,
    port: Annotated[Optional[int], typer.Option("--port", help="HTTP port (default GRAPHMEM_API_PORT + 1).")] = None,
    allow_no_key: Annotated[bool, typer.Option(
        "--allow-no-key", help="Serve HTTP on a non-loopback address without GRAPHMEM_API_KEY (logged loudly).",
    )] = False,
    group: Annotated[Optional[list[str]], typer.Option(
        "--group", "-g", help="Only this group (repeat for more); tool calls naming another are refused.",
    )] = None,
    read_only: Annotated[bool, typer.Option(
        "--read-only", help="Refuse the writing tools (append_messages, forget_person, forget_group).",
    )] = False,
    log_level: Annotated[str, typer.Option("--log-level")] = "warning",
) -> None:
    """Serve graphmem's tools over the Model Context Protocol (needs the ``mcp`` extra)."""
    from graphmem.core.errors import InvalidInputError
    from graphmem.core.exposure import check_exposure, open_warning

    # stdout is the protocol channel on stdio: logs go to stderr only.
    logging.basicConfig(stream=sys.stderr, level=log_level.upper())
    if transport not in ("stdio", "http"):
        raise InvalidInputError("transport must be 'stdio' or 'http'", field="transport")
    settings = get_settings()
    # any key counts: GRAPHMEM_API_KEY or a keys file (graphmem/access.py)
    key = settings.api_key.get_secret_value() or ("file" if settings.api_keys_file else "")
    bind = host or settings.api_host
    exposed = False
    if transport == "http":
        exposed = check_exposure(bind, key, allow_no_key=allow_no_key, what="graphmem mcp")
        if exposed:
            err.print(f"[bold red]WARNING:[/bold red] {escape(open_warning(bind, 'graphmem mcp'))}", markup=True,
                      highlight=False)
    try:
        from graphmem.mcp_server import build_server, http_app
        from graphmem.mcp_stdio import run_stdio
    except ImportError as e:  # the optional extra is missing
        raise InvalidInputError(f"graphmem mcp needs the MCP SDK: pip install 'graphmem[mcp]' ({e})") from e

    server = build_server(settings, tools=tools, groups=group or None, read_only=read_only)  # type: ignore[arg-type]
    if transport == "stdio":
        run_stdio(server)  # the SDK's transport, answering also requests whose JSON it cannot read
        return
    import uvicorn

    from graphmem.boundary_h11 import PROTOCOL

    from graphmem.cli.serve import app_log_config

    at = port or settings.api_port + 1
    shown = f"[{bind}]" if ":" in bind else bind
    err.print(f"graphmem mcp: streamable HTTP at http://{shown}:{at}/mcp ({tools} tools"
              f"{', read-only' if read_only else ''}; {'a key is required' if key else 'no key, open to anyone who reaches it' if exposed else 'no key: this machine only'})",
              markup=False, highlight=False, soft_wrap=True)
    uvicorn.run(http_app(server, settings, host=bind), host=bind,
                port=at, log_level=log_level, log_config=app_log_config(log_level),
                http=PROTOCOL, timeout_keep_alive=5)
