"""graphmem errors -> HTTP statuses (404/409/422/503), with a JSON body ``{"detail", "error"}``."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from graphmem.errors import (
    ConflictError,
    GraphMemError,
    InvalidInputError,
    LLMError,
    NotFoundError,
    StoreUnavailableError,
)

logger = logging.getLogger(__name__)

#: Most specific first.
STATUS_BY_ERROR: tuple[tuple[type[GraphMemError], int], ...] = (
    (NotFoundError, 404),
    (ConflictError, 409),
    (InvalidInputError, 422),
    (StoreUnavailableError, 503),
    (LLMError, 503),
)


def status_for(exc: GraphMemError) -> int:
    """HTTP status of a graphmem error (500 for an unmapped one)."""
    for cls, code in STATUS_BY_ERROR:
        if isinstance(exc, cls):
            return code
    return 500


async def _handle(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, GraphMemError)
    code = status_for(exc)
    if code >= 500:
        logger.warning("%s %s -> %d: %s", request.method, request.url.path, code, exc)
    body: dict[str, object] = {"detail": str(exc), "error": type(exc).__name__}
    if isinstance(exc, InvalidInputError) and exc.field:
        body["field"] = exc.field
    return JSONResponse(status_code=code, content=body)


def install(app: FastAPI) -> None:
    """Register the handler for every :class:`GraphMemError`."""
    app.add_exception_handler(GraphMemError, _handle)
