"""Derived records: provenance."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from api.openapi import errors_of
from api.deps import StoreDep
from graphmem.query import RecordProvenance, provenance

router = APIRouter(prefix="/groups/{group_id}/records/{record_id}", tags=["records"])


@router.get("/provenance", response_model=RecordProvenance, summary="A record's FROM messages and chain",
            operation_id="record_provenance", responses=errors_of(401, 403, 404, 422, 503))
def get_provenance(
    group_id: Annotated[str, Path(min_length=1)],
    record_id: Annotated[str, Path(min_length=1)],
    store: StoreDep,
) -> RecordProvenance:
    """The record, the verbatim messages it was written from (conversation order) and every
    state of its update chain (oldest first). 404: unknown record."""
    return provenance(store, group_id, record_id)
