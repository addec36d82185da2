"""``graphmem serve``: the HTTP API (FastAPI) under uvicorn."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from graphmem.config import get_settings


def serve_command(
    host: Annotated[Optional[str], typer.Option("--host", help="Interface (default GRAPHMEM_API_HOST, 127.0.0.1).")] = None,
    port: Annotated[Optional[int], typer.Option("--port", help="TCP port (default GRAPHMEM_API_PORT, 8000).")] = None,
    workers: Annotated[int, typer.Option("--workers", help="uvicorn worker processes.")] = 1,
    log_level: Annotated[str, typer.Option("--log-level")] = "info",
) -> None:
    """Serve the HTTP API (FastAPI; OpenAPI docs at /docs) with uvicorn."""
    try:
        import uvicorn
    except ImportError as e:
        raise SystemExit("graphmem serve needs the api extra: pip install 'graphmem[api]'") from e

    settings = get_settings()
    uvicorn.run(
        "api.main:create_app", factory=True, host=host or settings.api_host,
        port=port or settings.api_port, workers=workers, log_level=log_level,
    )
