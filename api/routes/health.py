"""``GET /health``: the API is up and Neo4j answers."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request

from api.openapi import errors_of
from api.deps import get_runtime, get_store
from graphmem import __version__
from graphmem.core.errors import StoreUnavailableError
from graphmem.core.redact import redact_text
from graphmem.core.wire import HealthPublic

router = APIRouter(tags=["health"])
logger = logging.getLogger(__name__)

#: The one 503 text of ``/health``: the route answers without a key, so it says nothing about
#: where the store is (URI, host, driver message); the reason goes to the API's log, redacted.
HEALTH_DOWN = "Neo4j does not answer (the reason is in the API's log)"


@router.get("/health", response_model=HealthPublic, summary="Check the API and Neo4j", operation_id="health",
            responses=errors_of(422, 503))
def health(request: Request) -> HealthPublic:
    """200 when Neo4j answers a query; 503 (StoreUnavailableError, :data:`HEALTH_DOWN`) when it
    does not. Neither answer names the Neo4j URI."""
    try:
        get_store(get_runtime(request)).driver.verify_connectivity()
    except Exception as e:  # noqa: BLE001 - any driver failure means the store is unavailable
        logger.warning("health: %s", redact_text(str(e)))
        raise StoreUnavailableError(HEALTH_DOWN) from e
    return HealthPublic(status="ok", neo4j="ok", version=__version__)
