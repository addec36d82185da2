"""``graphmem serve``: the HTTP API (FastAPI) under uvicorn."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.markup import escape

from graphmem.cli.common import err
from graphmem.core.config import get_settings


def serve_command(
    host: Annotated[Optional[str], typer.Option("--host", help="Interface (default GRAPHMEM_API_HOST, 127.0.0.1).")] = None,
    port: Annotated[Optional[int], typer.Option("--port", help="TCP port (default GRAPHMEM_API_PORT, 8000).")] = None,
    workers: Annotated[int, typer.Option("--workers", help="uvicorn worker processes.")] = 1,
    log_level: Annotated[str, typer.Option("--log-level")] = "info",
    allow_no_key: Annotated[bool, typer.Option(
        "--allow-no-key", help="Serve on a non-loopback address without GRAPHMEM_API_KEY (logged loudly).",
    )] = False,
) -> None:
    """Serve the HTTP API (FastAPI; OpenAPI docs at /docs) with uvicorn.

    On an address other than loopback an API key (GRAPHMEM_API_KEY) is required unless
    ``--allow-no-key`` is given.
    """
    from graphmem.core.exposure import check_exposure, open_warning

    settings = get_settings()
    bind = host or settings.api_host
    # any key counts: GRAPHMEM_API_KEY or a keys file (graphmem/access.py)
    key = settings.api_key.get_secret_value() or ("file" if settings.api_keys_file else "")
    if check_exposure(bind, key, allow_no_key=allow_no_key, what="graphmem serve"):
        err.print(f"[bold red]WARNING:[/bold red] {escape(open_warning(bind, 'graphmem serve'))}", markup=True,
                      highlight=False)
    try:
        import uvicorn
    except ImportError as e:
        raise SystemExit("graphmem serve needs the api extra: pip install 'graphmem[api]'") from e

    from graphmem.boundary_h11 import PROTOCOL

    uvicorn.run(
        "api.main:create_app", factory=True, host=bind,
        port=port or settings.api_port, workers=workers, log_level=log_level,
        log_config=app_log_config(log_level),
        # slow headers: closed after GRAPHMEM_API_HEADER_TIMEOUT_S; slow bodies: 408 (boundary)
        http=PROTOCOL, timeout_keep_alive=5,
    )


def app_log_config(log_level: str) -> dict[str, object]:
    """uvicorn's logging configuration plus graphmem's own loggers (``api``, ``graphmem``) at
    ``log_level`` on stderr, in every worker: without it their info lines (the embedder's load
    at start-up, jobs resumed) had no handler and only warnings reached the terminal."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, object] = copy.deepcopy(LOGGING_CONFIG)
    loggers = config["loggers"]
    assert isinstance(loggers, dict)
    for name in ("api", "graphmem"):
        loggers[name] = {"handlers": ["default"], "level": log_level.upper(), "propagate": False}
    # the access log's request line without secrets (a key sent as ?api_key=... is refused,
    # but the line was logged as received)
    config.setdefault("filters", {})
    filters = config["filters"]
    assert isinstance(filters, dict)
    filters["graphmem_redact"] = {"()": "graphmem.core.redact.AccessLogRedactor"}
    handlers = config["handlers"]
    assert isinstance(handlers, dict)
    handlers["access"] = {**handlers["access"], "filters": ["graphmem_redact"]}
    return config
