"""Groups: list them, append messages, derive System 2, read the roster and one message."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request, Response

from api.openapi import errors_of
from api.deps import AccessDep, EmbedderDep, RuntimeDep, SettingsDep, StoreDep, WriterModelDep, GroupId
from graphmem.core import limits, paging
from graphmem.core.wire import DeriveJobAccepted, DerivePublic, EmbedPublic, IngestPublic, MessagesCreate
from graphmem.verbatim.vectors import embed_group
from graphmem.core.errors import StoreUnavailableError
from graphmem.groups.jobs import open_derive_job
from graphmem.core.results import FullMessage, GroupsPage, RosterPage
from graphmem.groups.service import append_messages, derive_step, list_groups
from graphmem.query.people import get_message
from graphmem.verbatim.roster import roster_page
from graphmem.core.results import GroupForgetSummary
from graphmem.groups.service import erase_group

router = APIRouter(prefix="/groups/{group_id}", tags=["groups"])
list_router = APIRouter(prefix="/groups", tags=["groups"])

Cursor = Annotated[str | None, Query(max_length=4100, description="next_cursor of the previous page; none for the first.")]


@list_router.get("", response_model=GroupsPage, summary="List the groups this key reaches", operation_id="list_groups",
                 responses=errors_of(401, 422, 503))
def get_groups(
    store: StoreDep,
    access: AccessDep,
    limit: Annotated[int, Query(ge=1, le=paging.MAX_LIMITS["groups"], description="Groups on the page.")] = paging.DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> GroupsPage:
    """One page of the groups, ordered by id, with their sizes (people, messages). A key
    scoped to some groups lists only those (that exist); the key-less default and a key of
    every group list all. ``truncated`` / ``next_cursor``: more groups follow. 422: ``limit``
    outside 1-1000, a cursor of another list."""
    return list_groups(store, reaches=access.groups, limit=limit, cursor=cursor)


@router.post("/messages", response_model=IngestPublic, summary="Append or edit messages (idempotent by id)",
             operation_id="append_messages", responses=errors_of(401, 403, 408, 409, 413, 415, 422, 503))
def post_messages(
    group_id: GroupId, body: MessagesCreate, store: StoreDep, embedder: EmbedderDep, settings: SettingsDep,
    embed: Annotated[Literal["now", "later"], Query(
        description="now: vectors written with the messages; later: written without (pending until "
                    "POST /groups/{group_id}/embed or `graphmem embed`), the bulk path.")] = "now",
) -> IngestPublic:
    """Append messages; the group and its persons are created as needed.

    Messages take their place by time, before, between or after what is stored (the request
    order only breaks ties). A message whose id is stored with the same content is skipped, so
    a retried request writes nothing twice; new text under a stored id is an edit
    (``messages_edited``, the earlier text kept as history, the message pending for derive);
    a text the message had before is a stale redelivery and skipped, never an edit back.
    422 names the message and field that is wrong; 409 names an id stored with another
    speaker, session, channel, ts or reply_to, or a message another request changed meanwhile
    (retry). Nothing of the request is written then. See docs/reliability.md. With
    ``embed=later`` the messages are written without vectors (search finds them by their words
    and says ``vectors_pending``) until ``POST /groups/{group_id}/embed`` fills them.
    """
    summary = append_messages(
        store, embedder, group_id, [m.model_dump() for m in body.messages], name=body.name,
        batch_size=settings.write_batch_size if embed == "now" else settings.bulk_batch_size,
        exact_max=settings.vector_exact_max, embed=embed,
    )
    return IngestPublic(
        group_id=group_id, messages_written=summary.messages_written,
        messages_edited=summary.messages_edited, messages_skipped=summary.messages_skipped,
        persons_created=summary.persons_created,
        sessions_created=summary.sessions_created, group_created=bool(summary.groups_created),
        channels_renamed=summary.channels_renamed,
    )


@router.post("/embed", response_model=EmbedPublic, summary="Fill the vectors of messages written without them",
             operation_id="embed_messages", responses=errors_of(401, 403, 404, 408, 409, 413, 415, 422, 503))
def post_embed(group_id: GroupId, store: StoreDep, embedder: EmbedderDep, settings: SettingsDep) -> EmbedPublic:
    """Encode every message of the group that has no vector yet (``embed=later`` appends, the
    first-load importer, ``graphmem ingest --embed later``), in batches that each commit: a call
    cut off keeps what it wrote, and calling again fills the rest; a second call writes nothing.
    One run per group at a time: a call while another run embeds the group waits for it
    (``waited_s``). 404: unknown group; 409: the group's vectors are of another model or backend
    (re-embed with ``graphmem embed --group G --rebuild``). Same as ``graphmem embed --group G``.
    """
    summary = embed_group(store, embedder, group_id, batch_size=max(settings.embed_batch_size, 1000),
                          exact_max=settings.vector_exact_max)
    return EmbedPublic(group_id=group_id, embedded=summary.embedded, messages=summary.messages,
                       vector_index=summary.vector_index, waited_s=summary.waited_s)


@router.post(
    "/derive", response_model=DerivePublic | DeriveJobAccepted,
    summary="Run the Writer (synchronous and resumable, or as a background job)",
    operation_id="derive",
    responses={202: {"model": DeriveJobAccepted, "description": "background=true: the job was accepted"},
               **errors_of(401, 403, 404, 408, 409, 413, 415, 422, 503)},
)
def post_derive(
    group_id: GroupId,
    request: Request,
    response: Response,
    runtime: RuntimeDep,
    model: WriterModelDep,
    max_segments: Annotated[
        int | None, Query(ge=1, description="Write at most this many segments, then return.")
    ] = None,
    background: Annotated[
        bool, Query(description="Return 202 with a job id at once; the Writer runs in the background.")
    ] = False,
) -> DerivePublic | DeriveJobAccepted:
    """Derive System 2 for the messages no segment covers yet.

    Synchronous (default) and resumable: each segment is committed on its own, so a call that
    is cut off loses at most the segment in progress. Use ``max_segments`` to bound one call
    and repeat while ``done`` is false. With ``background=true`` the call answers 202 with a
    job id at once (``GET /jobs/{id}`` reports progress); one job per group: while one is open
    the same job is returned (``created`` false). 404: unknown group; 409: another run is
    deriving the same group; 503: no Writer endpoint is configured (GRAPHMEM_WRITER_* or
    GRAPHMEM_LLM_*) while messages are pending, or it failed; 503 for background when this
    server runs no jobs (GRAPHMEM_DERIVE_JOBS_ENABLED=false).
    """
    if background:
        runner = getattr(request.app.state, "jobs", None)
        if runner is None:
            raise StoreUnavailableError("this server runs no background jobs (GRAPHMEM_DERIVE_JOBS_ENABLED=false)")
        job_id, created = open_derive_job(runtime.store, group_id)
        runner.submit(job_id)
        response.status_code = 202
        return DeriveJobAccepted(job_id=job_id, group_id=group_id, created=created,
                                 status_url=str(request.url_for("get_job", job_id=job_id).path))
    summary, pending = derive_step(runtime, group_id, model=model, max_segments=max_segments)
    data = summary.as_dict()
    return DerivePublic(
        **{k: data[k] for k in DerivePublic.model_fields if k in data},
        pending_messages=pending, done=pending == 0,
    )


@router.get("/roster", response_model=RosterPage, summary="Read the roster, a page at a time", operation_id="roster",
            responses=errors_of(401, 403, 404, 422, 503))
def get_roster(
    group_id: GroupId,
    store: StoreDep,
    limit: Annotated[int, Query(ge=1, le=paging.MAX_LIMITS["roster"], description="Persons on the page.")] = paging.DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> RosterPage:
    """One page of the group's persons, ordered by id, each with their message count and
    label; ``total`` members; ``truncated`` / ``next_cursor`` when more follow (a walk over the
    pages meets every member once, also while messages arrive). 404 for an unknown group; 422:
    ``limit`` outside 1-1000, a cursor of another list."""
    return roster_page(store, group_id, limit=limit, cursor=cursor)


@router.get("/messages/{message_id:path}", response_model=FullMessage, summary="Read one whole message",
            operation_id="get_message", responses=errors_of(401, 403, 404, 422, 503))
def get_one_message(
    group_id: GroupId,
    message_id: Annotated[str, Path(min_length=1, max_length=limits.MAX_ID_CHARS, description="Message id.")],
    store: StoreDep,
) -> FullMessage:
    """One stored message with its whole text (lists cut texts over 2,000 characters:
    ``text_truncated``). 404: unknown group or message."""
    return get_message(store, group_id, message_id)


@router.delete("", response_model=GroupForgetSummary, summary="Erase the whole group",
               operation_id="forget_group", responses=errors_of(401, 403, 404, 408, 409, 413, 415, 422, 503))
def delete_group(group_id: GroupId, store: StoreDep, settings: SettingsDep) -> GroupForgetSummary:
    """Erase the group: its messages (text, history, vectors), persons, sessions, derived
    records (every version), Writer segments, the Group node and the first-load importer's CSV
    files of the group. Deleted in bounded transactions behind a fence: from the first one on,
    writes to the group answer 409 until it is gone; open derive jobs of the group become
    ``cancelled`` (still readable at ``GET /jobs/{id}``). Needs a key that reaches the group
    and may write. 404 for an unknown group (so a second call answers 404). See
    docs/reliability.md, "Whole-group lifecycle".
    """
    return erase_group(store, group_id, settings=settings, missing_ok=False)
