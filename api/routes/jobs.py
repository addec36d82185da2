"""Background jobs: ``GET /jobs/{job_id}`` (derive jobs opened by ``POST /groups/{id}/derive?background=true``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from api.openapi import errors_of
from api.deps import AccessDep, SettingsDep, StoreDep
from graphmem.core.errors import NotFoundError
from graphmem.groups.jobs import DeriveJob, get_derive_job

router = APIRouter(prefix="/jobs", tags=["jobs"])


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
