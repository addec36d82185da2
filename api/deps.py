"""Dependencies: settings, the per-process store, embedder and models, and the API key check.

One :class:`graphmem.runtime.Runtime` per process, opened in the lifespan (:mod:`api.main`) and
closed at shutdown. When Neo4j is down at start-up the API still starts; every request that needs
the store tries to open the driver again and answers 503 until it can.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, Security, status
from fastapi.security import APIKeyHeader

from graphmem.core.config import Settings
from graphmem.runtime import Runtime
from graphmem.store.db import Store
from graphmem.core.embed import Embedder
from graphmem.core.exposure import keys_match
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


def require_api_key(
    settings: SettingsDep, key: Annotated[str | None, Security(_api_key)] = None
) -> None:
    """When GRAPHMEM_API_KEY is set, the ``X-API-Key`` header must carry it (else 401)."""
    expected = settings.api_key.get_secret_value()
    if not expected:
        return
    if not keys_match(key, expected):
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED,
            detail=f"missing or wrong {API_KEY_HEADER} header",
            headers={"WWW-Authenticate": "APIKey"},
        )
