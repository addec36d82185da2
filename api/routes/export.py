"""``GET /groups/{group_id}/export``: one page of a group export (what ``graphmem export`` writes,
docs/export.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import StoreDep, GroupId
from api.openapi import errors_of
from graphmem.groups.export import DEFAULT_PAGE_BYTES, MAX_PAGE_BYTES, ExportPage, export_page

router = APIRouter(prefix="/groups/{group_id}", tags=["export"])


@router.get("/export", response_model=ExportPage, summary="One page of the group's export (JSON Lines as objects)",
            operation_id="export_group", responses=errors_of(401, 403, 404, 422, 503))
def get_export(
    group_id: GroupId,
    store: StoreDep,
    cursor: Annotated[str | None, Query(max_length=420, description="next_cursor of the previous page; none for the first.")] = None,
    with_derived: Annotated[bool, Query(description="Also Writer segments and derived records.")] = False,
    max_bytes: Annotated[int, Query(ge=1_000, le=MAX_PAGE_BYTES, description="Page size bound, bytes of JSON Lines.")] = DEFAULT_PAGE_BYTES,
) -> ExportPage:
    """The export lines of one page and the cursor of the next (null on the last page); the
    lines of all pages, in order, are the file ``graphmem export`` writes. A page holds at most
    ``max_bytes`` of JSON Lines unless one message, or one segment with its records, is larger.
    404: unknown group; 422 (field named): a malformed ``cursor``, ``max_bytes`` out of range."""
    return export_page(store, group_id, cursor=cursor, with_derived=with_derived, max_bytes=max_bytes)
