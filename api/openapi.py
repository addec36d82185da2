"""What the OpenAPI document promises about errors, and the refusal of unknown query parameters.

Every error the API sends has one shape, the ``Error`` component (``detail``, ``error``,
``field``; :mod:`api.errors`); each route declares the statuses it can answer with it
(:func:`errors_of`), so a generated client parses a 404 or a 422 instead of crashing on
FastAPI's default ``{"detail": [ValidationError...]}`` schema, which the server never sends.

:func:`forbid_unknown_query` makes an unknown or misspelt query parameter a 422 naming it
(``/search?q=seed&limit=5`` used to answer 10 hits), as the body models refuse unknown fields.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field

__all__ = ["Error", "errors_of", "forbid_unknown_query", "query_names"]


class Error(BaseModel):
    """Every error body of the API."""

    detail: str = Field(description="What went wrong, in one sentence; never echoes the refused value.")
    error: str = Field(description="The error class: NotFoundError, InvalidInputError, ConflictError, "
                                   "ForbiddenError, StoreUnavailableError, LLMError, Unauthorized, ...")
    field: str | None = Field(default=None, description="The field at fault (dotted: messages.3.ts, or a query "
                                                        "parameter), always present on a 422.")


#: What each status means on this API (the description of each declared response).
MEANING: dict[int, str] = {
    401: "The API key is missing or wrong (X-API-Key or Authorization: Bearer).",
    403: "The key does not reach this group, or is read-only and the call writes.",
    404: "No such group, person, record or job (the detail may suggest a close id).",
    408: "The request body did not arrive in time.",
    409: "Conflicts with stored state: an id stored with other fields, another run on the group.",
    413: "The request body is over the size limit.",
    415: "The request body is not JSON.",
    422: "A field, body or query parameter is refused (field names it; unknown ones included).",
    503: "Neo4j or a model endpoint is unavailable (Retry-After says when to retry).",
}


def errors_of(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route that can answer with these error statuses (Error body)."""
    return {code: {"model": Error, "description": MEANING[code]} for code in codes}


def query_names(request: Request) -> set[str] | None:
    """The query parameters the matched route declares (aliases), or None outside a route."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return None
    names: set[str] = set()
    todo = [dependant]
    while todo:  # the route's own parameters and those of its dependencies
        d = todo.pop()
        names.update(p.alias for p in d.query_params)
        todo.extend(d.dependencies)
    return names


def forbid_unknown_query(request: Request) -> None:
    """Refuse a query parameter the route does not declare (422, field = its name).

    Raises:
        RequestValidationError: as an unknown body field (``extra_forbidden``), answered by
            :mod:`api.errors` with the allowed names.
    """
    known = query_names(request)
    if known is None:
        return
    unknown = [name for name in request.query_params if name not in known]
    if unknown:
        raise RequestValidationError([{"type": "extra_forbidden", "loc": ("query", name),
                                       "msg": "unknown query parameter", "input": None} for name in unknown])
