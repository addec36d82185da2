"""``GET /groups/{group_id}/search``: System 1 retrieval (the read of ``graphmem search``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.openapi import errors_of
from api.deps import EmbedderDep, RuntimeDep, SettingsDep, StoreDep, GroupId
from graphmem.core import limits
from graphmem.core.errors import InvalidInputError
from graphmem.recall.search import Mode, SearchResult, search_group

router = APIRouter(prefix="/groups/{group_id}", tags=["search"])


@router.get("/search", response_model=SearchResult, summary="Search the group's messages (System 1)",
            operation_id="search_messages", responses=errors_of(401, 403, 404, 422, 503))
def get_search(
    group_id: GroupId,
    store: StoreDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
    runtime: RuntimeDep,
    q: Annotated[str, Query(min_length=1, max_length=limits.MAX_QUESTION_CHARS, description="Free-text query.")],
    k: Annotated[int, Query(ge=1, le=limits.MAX_S1_K, description="Number of hits.")] = 10,
    mode: Annotated[Mode, Query(description="hybrid: fulltext and vector fused (RRF); fulltext; vector.")] = "hybrid",
    pool: Annotated[
        int | None, Query(ge=1, le=limits.MAX_RECALL_N, description="Depth of each ranking (default GRAPHMEM_S1_RECALL_N).")
    ] = None,
    expand: Annotated[int, Query(ge=0, le=5, description="Neighbouring turns added around each hit.")] = 0,
    cursor: Annotated[str | None, Query(max_length=4100, description="next_cursor of the previous page (same q and mode).")] = None,
) -> SearchResult:
    """Rank the group's messages for ``q``, as ``graphmem search --json`` does: the hits best
    first and how they were ranked. While some messages of the group have no vector yet
    (``ingest --embed later``), hybrid ranks by fulltext alone: ``mode_used`` is "fulltext",
    ``vectors_pending`` counts them and ``warning`` says to run ``graphmem embed``.
    A page holds ``k`` hits; ``truncated`` / ``next_cursor`` when more hits of the ranking
    follow (pass ``cursor`` with the same ``q`` and ``mode``). Texts over 2,000 characters are
    cut (``text_truncated``, ``text_chars``; ``GET .../messages/{id}`` reads one whole).
    404: unknown group, or a group without messages; 422 (field named): blank ``q``, ``k``
    outside 1-100, unknown ``mode``, ``pool`` outside 1-1000, ``expand`` outside 0-5, a cursor
    of another search.
    """
    try:
        return search_group(
            store, embedder, group_id, q, k=k, pool_n=pool or max(settings.s1_recall_n, k), mode=mode,
            expand=expand, rrf_k=settings.rrf_k, cache=runtime.cache, tracer=runtime.tracer, cursor=cursor,
        )
    except InvalidInputError as e:
        if e.field != "query":
            raise
        raise InvalidInputError("query is blank", field="q") from e
