"""graphmem errors -> HTTP statuses (403/404/409/422/503), with one JSON body shape.

Every error body is ``{"detail": str, "error": str}`` plus ``"field"`` when one field is at
fault (always for 422). No body echoes the refused value (messages name the field and the
rule; :attr:`graphmem.errors.InvalidInputError.value` stays out) nor a credential of a URL
(:func:`graphmem.core.redact.redact_text`). Request-validation errors (a body or parameter the request models
refuse) use the same shape, with ``error: "InvalidInputError"`` and the field as a dotted path
(``messages.3.ts``); the input is never echoed back (a 10,000-message request must not come
back in its own error, and a value that is not valid Unicode could not be encoded).
"""

from __future__ import annotations

import logging
from typing import Any
from http import HTTPStatus
from urllib.parse import unquote

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from graphmem.core.errors import (
    ConflictError,
    ExtraMissingError,
    ForbiddenError,
    GraphMemError,
    InvalidInputError,
    LLMError,
    ModelFileError,
    NotFoundError,
    StoreUnavailableError,
    no_group,
)
from graphmem.boundary import ACCESS_SCOPE_KEY
from graphmem.core.limits import check_id
from graphmem.core.redact import redact_text

logger = logging.getLogger(__name__)

#: Most specific first.
STATUS_BY_ERROR: tuple[tuple[type[GraphMemError], int], ...] = (
    (NotFoundError, 404),
    (ForbiddenError, 403),
    (ConflictError, 409),
    (InvalidInputError, 422),
    (StoreUnavailableError, 503),
    (LLMError, 503),
    (ModelFileError, 503),
    (ExtraMissingError, 501),
)


RETRY_AFTER_S = 5
"""Seconds a 503 (store or model unavailable) asks the caller to wait (``Retry-After``)."""


def status_for(exc: GraphMemError) -> int:
    """HTTP status of a graphmem error (500 for an unmapped one)."""
    for cls, code in STATUS_BY_ERROR:
        if isinstance(exc, cls):
            return code
    return 500


def error_body(exc: GraphMemError) -> tuple[int, dict[str, object]]:
    """The status and the one JSON body of a graphmem error."""
    code = status_for(exc)
    # backslashreplace: a message can never carry text that UTF-8 cannot encode (-> no 500);
    # redact_text: no credential of a URL quoted by a driver or HTTP error reaches the body.
    detail = redact_text(str(exc)).encode("utf-8", "backslashreplace").decode("utf-8")
    body: dict[str, object] = {"detail": detail, "error": type(exc).__name__}
    if isinstance(exc, InvalidInputError) and exc.field:
        body["field"] = request_field(exc)
    return code, body


def request_field(exc: InvalidInputError) -> str:
    """The ``field`` of an error body: a dotted path into the request (``messages.3.ts``) for
    an error the library raised about one message of a request body (``record`` "request
    message 3"), as for errors the request models raise; else the field as named."""
    n = exc.record.removeprefix("request message ")
    if n != exc.record and n.isdigit() and not exc.field.startswith("messages."):
        return f"messages.{n}.{exc.field}"
    return exc.field


def _group_hint(request: Request, exc: GraphMemError) -> str:
    """ "; did you mean 'trip'?" for a group id that names no group, among the groups the
    caller's key reaches (:func:`graphmem.groups.service.group_hint`), or ""."""
    missing = getattr(exc, "missing_group", "")
    access = request.scope.get(ACCESS_SCOPE_KEY)
    runtime = getattr(request.app.state, "runtime", None)
    if not missing or access is None or runtime is None:
        return ""
    from graphmem.groups.service import group_hint

    try:
        return group_hint(runtime.store, missing, access.reaches)
    except GraphMemError:  # a courtesy: never in the way of the error itself
        return ""


async def _handle(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, GraphMemError)
    code, body = error_body(exc)
    if code == 404:
        body["detail"] = f"{body['detail']}{_group_hint(request, exc)}"
    if code >= 500:
        logger.warning("%s %s -> %d: %s", request.method, request.url.path, code, body["detail"])
    headers = {"Retry-After": str(RETRY_AFTER_S)} if code == 503 else None
    return JSONResponse(status_code=code, content=body, headers=headers)


_LOCATIONS = ("body", "query", "path", "header", "cookie")


def _field(loc: tuple[object, ...]) -> str:
    """``("body", "messages", 3, "ts")`` -> ``"messages.3.ts"``; the request part is dropped."""
    parts = list(loc[1:] if loc and loc[0] in _LOCATIONS else loc)
    return ".".join(str(p) for p in parts) or str(loc[0] if loc else "body")


def _allowed(request: Request, loc: tuple[object, ...]) -> str:
    """The names allowed where an unknown one was sent: the route's query parameters, a
    message's fields (``messages.N.x``) or the body's fields; with a "did you mean" first."""
    import difflib

    from graphmem.core.wire import MessagesCreate, NewMessage

    from api.openapi import query_names

    names: list[str] = []
    path = request.url.path
    if loc and loc[0] == "query":
        names = sorted(query_names(request) or ())
    elif path.startswith("/groups/") and path.endswith("/messages"):
        names = list((NewMessage if len(loc) > 2 else MessagesCreate).model_fields)
    else:
        route = request.scope.get("route")
        body = getattr(getattr(route, "dependant", None), "body_params", None) or []
        model = getattr(body[0].field_info, "annotation", None) if len(body) == 1 else None
        names = list(getattr(model, "model_fields", {}))
    if not names:
        return "allowed: none" if loc and loc[0] == "query" else "see the API reference"
    near = difflib.get_close_matches(str(loc[-1]), names, n=1, cutoff=0.6) if loc else []
    return (f"did you mean {near[0]!r}? " if near else "") + "allowed: " + ", ".join(names)


async def _handle_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errs = list(exc.errors())
    first = errs[0] if errs else {"loc": ("body",), "msg": "invalid request"}
    field = "body" if first.get("type") == "json_invalid" else _field(tuple(first.get("loc", ())))
    # The message only: pydantic's ``input`` and ``ctx`` (which may hold the input) stay out.
    msg = first.get("msg", "invalid value")
    if first.get("type") == "extra_forbidden":  # a misspelt field would be dropped silently
        loc = tuple(first.get("loc", ()))
        what = "query parameter" if loc and loc[0] == "query" else "field"
        msg = f"unknown {what} ({_allowed(request, loc)})"
    detail = f"field '{field}': {msg}"
    if len(errs) > 1:
        detail += f" (and {len(errs) - 1} more problem{'s' if len(errs) > 2 else ''})"
    body = {"detail": detail, "error": InvalidInputError.__name__, "field": field}
    return JSONResponse(status_code=422, content=body)


def slashed_group(scope: dict[str, Any]) -> str | None:
    """The group id of a ``/groups/{group_id}...`` request whose id segment holds an encoded
    ``/`` (``%2F``), decoded; else None. Starlette routes on the decoded path, where that ``/``
    splits the segment: such a request would reach no route (FastAPI's plain 404) or, worse,
    another route with a shorter group id."""
    if scope.get("type") != "http":
        return None
    raw = scope.get("raw_path") or str(scope.get("path", "")).encode()
    parts = raw.split(b"?", 1)[0].split(b"/")
    if len(parts) < 3 or parts[1] != b"groups" or b"%2f" not in parts[2].lower():
        return None
    gid = unquote(parts[2].decode("latin-1"), encoding="utf-8", errors="replace")
    return gid if "/" in gid else None


def slashed_group_error(method: str, path: str, group_id: str) -> GraphMemError:
    """What the library answers for a group id holding ``/``: on the routes that create a group
    (``POST .../messages``, ``POST .../imports``) the id grammar's :class:`InvalidInputError`
    (field ``group``, as ingest), else :func:`graphmem.core.errors.no_group` (404, saying why)."""
    if method == "POST" and path.rstrip("/").endswith(("/messages", "/imports")):
        try:
            check_id(group_id, field="group", source="api", slash=False)
        except InvalidInputError as bad:
            return bad
    return no_group(group_id)


async def _handle_http(request: Request, exc: Exception) -> Response:
    """A body FastAPI could not read at all (bytes that are not UTF-8: its bare 400) is a bad
    request body like malformed JSON: 422 in the one shape, field ``body``. Every other HTTP
    error (unknown route, 401, 405, ...) keeps its status and detail in the one shape, with
    ``error`` the status phrase (``Unauthorized``, ``NotFound``, ``MethodNotAllowed``)."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and exc.__cause__ is not None:
        why = ("not valid UTF-8" if isinstance(exc.__cause__, UnicodeDecodeError)
               else "unreadable") + " (send UTF-8 JSON)"
        body = {"detail": f"field 'body': {why}", "error": InvalidInputError.__name__, "field": "body"}
        return JSONResponse(status_code=422, content=body)
    if exc.status_code < 400:
        return await http_exception_handler(request, exc)
    # the one error shape (the Error component of the OpenAPI document), e.g. 401 "Unauthorized"
    phrase = HTTPStatus(exc.status_code).phrase.title().replace(" ", "").replace("-", "")
    return JSONResponse(status_code=exc.status_code, content={"detail": str(exc.detail), "error": phrase},
                        headers=getattr(exc, "headers", None))


def install(app: FastAPI) -> None:
    """Register the handlers: every :class:`GraphMemError`, request validation (422), and a
    request body that is not UTF-8 (422 instead of FastAPI's bare 400)."""
    app.add_exception_handler(GraphMemError, _handle)
    app.add_exception_handler(RequestValidationError, _handle_validation)
    app.add_exception_handler(StarletteHTTPException, _handle_http)
