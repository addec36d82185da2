"""Background jobs: ``GET /jobs/{job_id}`` (derive jobs opened by ``POST /groups/{id}/derive?background=true``)
and ``GET /groups/{group_id}/jobs`` (a group's jobs, newest first, a page at a time)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from api.openapi import errors_of
from api.deps import AccessDep, SettingsDep, StoreDep, GroupId
from graphmem.core.errors import NotFoundError
from graphmem.core import paging
from graphmem.core.results import JobsPage
from graphmem.groups.jobs import DeriveJob, get_derive_job, list_derive_jobs

router = APIRouter(prefix="/jobs", tags=["jobs"])
group_router = APIRouter(prefix="/groups/{group_id}", tags=["jobs"])


@group_router.get("/jobs", response_model=JobsPage, summary="A group's derive jobs, newest first",
                  operation_id="list_jobs", responses=errors_of(401, 403, 404, 422, 503))
def get_group_jobs(
    group_id: GroupId,
    store: StoreDep,
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=paging.MAX_LIMITS["jobs"], description="Jobs on the page.")] = paging.DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=4100, description="next_cursor of the previous page.")] = None,
) -> JobsPage:
    """One page of the group's background derive jobs, newest first, each with its state and
    progress (as ``GET /jobs/{id}``); ``truncated`` / ``next_cursor`` when more follow. 404:
    unknown group; 422: ``limit`` outside 1-1000, a cursor of another list."""
    return list_derive_jobs(store, group_id, settings, limit=limit, cursor=cursor)


@router.get("/{job_id}", response_model=DeriveJob, summary="A background job's state and progress", name="get_job",
            operation_id="get_job", responses=errors_of(401, 404, 422, 503))
def get_job(
    job_id: Annotated[str, Path(min_length=1)], store: StoreDep, settings: SettingsDep, access: AccessDep
) -> DeriveJob:
    """State (queued, running, done, failed), segments done / total, Writer tokens, rate-limit
    waits and the error, all read from the store (so it is the same on every replica and after
    a restart). 404: unknown job, or a job of a group the key does not reach (the same answer,
    so a scoped key cannot learn which jobs exist)."""
    try:
        job = get_derive_job(store, job_id, settings)
    except NotFoundError:
        job = None
    if job is None or not access.reaches(job.group_id):
        raise NotFoundError(f"no derive job {job_id!r}")
    return job
