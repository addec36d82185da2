"""Dependencies: settings, the per-process store, embedder and models, and the API key check.

One :class:`graphmem.runtime.Runtime` per process, opened in the lifespan (:mod:`api.main`) and
closed at shutdown. When Neo4j is down at start-up the API still starts; every request that needs
the store tries to open the driver again and answers 503 until it can.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Path, Request, Security, status
from fastapi.security import APIKeyHeader

from graphmem.access import Access
from graphmem.boundary import ACCESS_SCOPE_KEY
from graphmem.core import limits
from graphmem.core.config import Settings
from graphmem.runtime import Runtime
from graphmem.store.db import Store
from graphmem.core.embed import Embedder
from graphmem.llm import ChatModel

API_KEY_HEADER = "X-API-Key"
_api_key = APIKeyHeader(name=API_KEY_HEADER, auto_error=False, description="Required when GRAPHMEM_API_KEY is set.")


def get_settings(request: Request) -> Settings:
    """The settings the app was created with."""
    return request.app.state.settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_runtime(request: Request) -> Runtime:
    """The process's Runtime (opened in the lifespan)."""
    return request.app.state.runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def get_store(runtime: RuntimeDep) -> Store:
    """The process-wide store; opens the driver when it is not open yet.

    Raises:
        StoreUnavailableError: Neo4j cannot be reached (-> 503).
    """
    return runtime.store


StoreDep = Annotated[Store, Depends(get_store)]


def get_embedder(runtime: RuntimeDep) -> Embedder:
    """The process-wide embedder (model loaded on first use)."""
    return runtime.embedder


EmbedderDep = Annotated[Embedder, Depends(get_embedder)]


def get_answer_model(runtime: RuntimeDep) -> ChatModel | None:
    """The answer model, or None when GRAPHMEM_LLM_BASE_URL / GRAPHMEM_LLM_MODEL are not set."""
    return runtime.answer


AnswerModelDep = Annotated[ChatModel | None, Depends(get_answer_model)]


def get_writer_model(runtime: RuntimeDep) -> ChatModel | None:
    """The Writer model, or None when neither GRAPHMEM_WRITER_* nor GRAPHMEM_LLM_* is set."""
    return runtime.writer


WriterModelDep = Annotated[ChatModel | None, Depends(get_writer_model)]


def get_access(request: Request) -> Access | None:
    """The caller's access as the boundary middleware decided it from the key
    (:mod:`graphmem.boundary`); None on a public path requested without a valid key."""
    return request.scope.get(ACCESS_SCOPE_KEY)


def require_api_key(
    request: Request, key: Annotated[str | None, Security(_api_key)] = None
) -> Access:
    """The caller's access; 401 when the boundary let the request through without one (a
    public path) or the app runs without the boundary middleware. ``key`` only documents the
    ``X-API-Key`` header in the OpenAPI schema: the boundary checked it before the body.

    Raises:
        ForbiddenError: the route's ``group_id`` (as the router decoded it) is outside the
            key's groups; the boundary refuses that before the body, this is the same rule
            where the route is known.
    """
    access = get_access(request)
    if access is None:
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED,
            detail=f"missing or wrong {API_KEY_HEADER} header",
            headers={"WWW-Authenticate": "APIKey"},
        )
    group_id = request.path_params.get("group_id")
    if isinstance(group_id, str):
        access.check_group(group_id)
    return access


AccessDep = Annotated[Access, Depends(require_api_key)]


GroupId = Annotated[str, Path(min_length=1, max_length=limits.MAX_ID_CHARS, description="Group (memory space) id.")]
"""A route's ``{group_id}``: 1 to ``MAX_ID_CHARS`` characters, as MCP and the library check a
looked-up id (:func:`graphmem.core.limits.check_lookup_id`); a longer one is a 422."""
PersonId = Annotated[str, Path(min_length=1, max_length=limits.MAX_ID_CHARS,
                               description="Person id (speaker_id, else display name).")]
RecordId = Annotated[str, Path(min_length=1, max_length=limits.MAX_ID_CHARS, description="Derived record id.")]
