"""Dependencies: settings, the per-process store, embedder and models, and the API key check.

One Neo4j driver per process, opened in the lifespan (:mod:`api.main`) and closed at shutdown.
When Neo4j is down at start-up the API still starts; every request that needs the store tries
to open the driver again and answers 503 until it can.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, Security, status
from fastapi.security import APIKeyHeader
from neo4j import Driver

from graphmem.access import Access
from graphmem.boundary import ACCESS_SCOPE_KEY
from graphmem.config import Settings
from graphmem.db import Store, open_driver
from graphmem.embed import Embedder
from graphmem.llm import ChatModel

API_KEY_HEADER = "X-API-Key"
_api_key = APIKeyHeader(name=API_KEY_HEADER, auto_error=False, description="Required when GRAPHMEM_API_KEY is set.")
_driver_lock = threading.Lock()


def get_settings(request: Request) -> Settings:
    """The settings the app was created with."""
    return request.app.state.settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_store(request: Request) -> Store:
    """The process-wide store; opens the driver when it is not open yet.

    Raises:
        StoreUnavailableError: Neo4j cannot be reached (-> 503).
    """
    state = request.app.state
    return Store(open_process_driver(state), state.settings.neo4j_database)


def open_process_driver(state: Any) -> Driver:
    """The app's driver, opened when it is not open yet (thread-safe).

    Raises:
        StoreUnavailableError: Neo4j cannot be reached.
    """
    if state.driver is None:
        with _driver_lock:
            if state.driver is None:
                state.driver = open_driver(state.settings)
    return state.driver


StoreDep = Annotated[Store, Depends(get_store)]


def get_embedder(request: Request) -> Embedder:
    """The process-wide embedder (model loaded on first use)."""
    return request.app.state.embedder


EmbedderDep = Annotated[Embedder, Depends(get_embedder)]


def get_answer_model(request: Request) -> ChatModel | None:
    """The answer model, or None when GRAPHMEM_LLM_BASE_URL / GRAPHMEM_LLM_MODEL are not set."""
    return request.app.state.answer_model


AnswerModelDep = Annotated[ChatModel | None, Depends(get_answer_model)]


def get_writer_model(request: Request) -> ChatModel | None:
    """The Writer model, or None when neither GRAPHMEM_WRITER_* nor GRAPHMEM_LLM_* is set."""
    return request.app.state.writer_model


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
    ``X-API-Key`` header in the OpenAPI schema: the boundary checked it before the body."""
    access = get_access(request)
    if access is None:
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED,
            detail=f"missing or wrong {API_KEY_HEADER} header",
            headers={"WWW-Authenticate": "APIKey"},
        )
    return access


AccessDep = Annotated[Access, Depends(require_api_key)]
