"""One person of a group: read their memory, erase their data."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from api.openapi import errors_of
from api.deps import StoreDep, SettingsDep, GroupId, PersonId
from graphmem.core import paging
from graphmem.groups.service import ForgetSummary, forget_person
from graphmem.query import PersonMemory, person_memory

# ``:path``: person ids may hold '/' (speaker ids such as "slack/U1"); a client sends it as
# %2F, which the server decodes before routing, so a plain segment would never match.
router = APIRouter(prefix="/groups/{group_id}/persons/{person_id:path}", tags=["persons"])



@router.get("/memory", response_model=PersonMemory, summary="Read one person's derived memory",
            operation_id="person_memory", responses=errors_of(401, 403, 404, 422, 503))
def get_memory(
    group_id: GroupId,
    person_id: PersonId,
    store: StoreDep,
    mode: Annotated[Literal["head", "full"], Query(title="Chains", description="head: current states; full: whole chains.")] = "head",
    as_of: Annotated[str | None, Query(description="ISO-8601: the state that held at this time.")] = None,
    limit: Annotated[int, Query(ge=1, le=paging.MAX_LIMITS["person_memory"],
                                description="Chains and records on the page.")] = paging.DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=4100, description="next_cursor of the previous page.")] = None,
) -> PersonMemory:
    """Records the person owns (one chain per entry, oldest first) and the current records they
    are the source of about others, a page at a time (chains first; ``truncated`` /
    ``next_cursor`` when more follow). 404: unknown person; 422: unparsable ``as_of``,
    ``limit`` outside 1-500, a cursor of another list."""
    return person_memory(store, group_id, person_id, mode=mode, as_of=as_of, limit=limit, cursor=cursor)


@router.delete("", response_model=ForgetSummary, summary="Erase one person's data from the group",
               operation_id="forget_person", responses=errors_of(401, 403, 404, 408, 413, 415, 422, 503))
def delete_person(group_id: GroupId, person_id: PersonId, store: StoreDep, settings: SettingsDep) -> ForgetSummary:
    """Delete the messages the person sent, every derived record that holds their words whoever
    its source (written from their messages, or quoting them), the records they own or are the
    source of (every version), records left without supporting messages, the first-load
    importer's CSV files of the group, and the Person node, with their vectors and fulltext
    entries; the answer lists the erased record ids and removed files. Other people's messages
    stay. A second call is a no-op that answers 200 with zero counts. 404 only for an unknown
    group."""
    return forget_person(store, group_id, person_id, settings=settings)
