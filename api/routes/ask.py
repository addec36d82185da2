"""``POST /groups/{group_id}/ask``: the query pipeline."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from api.deps import RuntimeDep, GroupId
from api.openapi import errors_of
from graphmem.core.wire import AskCreate
from graphmem.query import AskResult, CompactAnswer, ask, budgets_from

router = APIRouter(prefix="/groups/{group_id}", tags=["ask"])


@router.post("/ask", response_model=AskResult | CompactAnswer, summary="Ask a question about the group",
             operation_id="ask", responses=errors_of(401, 403, 404, 408, 413, 415, 422, 503))
def post_ask(
    group_id: GroupId,
    body: AskCreate,
    runtime: RuntimeDep,
    view: Annotated[Literal["full", "compact"], Query(
        description="full (default): everything the pipeline produced, for analysts; compact: the answer "
                    "(or the evidence without an answer model), each cited message and derived record once.",
    )] = "full",
) -> AskResult | CompactAnswer:
    """Project, System 1 and System 2 retrieval, Compose, Answer.

    The full view carries the projection, the excerpts, the memory slice rows, every message
    and record id behind the evidence, and token counts and timings per stage; the compact
    view (``?view=compact``, what the MCP tool answers) only the answer, the cited messages
    (id, speaker, ts, text) and records (id, layer, owner, source, status), each once.
    Without an answer model ``answer`` is null and ``evidence`` holds the composed material.
    404: unknown group or no messages; 422: bad question, budget or ``as_of``; 503: the answer
    model failed.
    """
    budgets = budgets_from(runtime.settings, ask_enabled=body.ask, s1_k=body.s1_k, s2_k=body.s2_k,
                           source_k=body.source_k)
    result = ask(runtime, group_id, body.question, budgets=budgets, as_of=body.as_of, tense=body.tense)
    return result.compact() if view == "compact" else result
