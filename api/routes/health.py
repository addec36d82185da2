"""``GET /health``: the API is up and Neo4j answers."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import StoreDep
from graphmem.core.wire import HealthPublic
from graphmem import __version__
from graphmem.core.errors import StoreUnavailableError

router = APIRouter(tags=["health"])


@router.get("/health", response_model=HealthPublic, summary="Check the API and Neo4j")
def health(store: StoreDep) -> HealthPublic:
    """200 when Neo4j answers a query; 503 (StoreUnavailableError) when it does not."""
    try:
        store.driver.verify_connectivity()
    except Exception as e:  # noqa: BLE001 - any driver failure means the store is unavailable
        raise StoreUnavailableError(f"Neo4j does not answer: {e}") from e
    return HealthPublic(status="ok", neo4j="ok", version=__version__)
