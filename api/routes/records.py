"""Derived records: provenance."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.openapi import errors_of
from api.deps import StoreDep, GroupId, RecordId
from graphmem.core import paging
from graphmem.query import RecordProvenance, provenance

router = APIRouter(prefix="/groups/{group_id}/records/{record_id}", tags=["records"])


@router.get("/provenance", response_model=RecordProvenance, summary="A record's FROM messages and chain",
            operation_id="record_provenance", responses=errors_of(401, 403, 404, 422, 503))
def get_provenance(
    group_id: GroupId,
    record_id: RecordId,
    store: StoreDep,
    limit: Annotated[int, Query(ge=1, le=paging.MAX_LIMITS["provenance"],
                                description="Messages and chain states on the page.")] = paging.DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=4100, description="next_cursor of the previous page.")] = None,
) -> RecordProvenance:
    """The record, the verbatim messages it was written from (conversation order; texts over
    2,000 characters cut, ``text_truncated``) and every state of its update chain (oldest
    first), a page at a time (messages first; ``truncated`` / ``next_cursor`` when more
    follow). 404: unknown record; 422: ``limit`` outside 1-1000, a cursor of another list."""
    return provenance(store, group_id, record_id, limit=limit, cursor=cursor)
