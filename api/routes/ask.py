"""``POST /groups/{group_id}/ask``: the query pipeline."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from api.deps import RuntimeDep
from graphmem.core.wire import AskCreate
from graphmem.query import AskResult, ask, budgets_from

router = APIRouter(prefix="/groups/{group_id}", tags=["ask"])


@router.post("/ask", response_model=AskResult, summary="Ask a question about the group")
def post_ask(
    group_id: Annotated[str, Path(min_length=1)],
    body: AskCreate,
    runtime: RuntimeDep,
) -> AskResult:
    """Project, System 1 and System 2 retrieval, Compose, Answer.

    The result carries the projection, the excerpts, the memory slice rows, every message and
    record id behind the evidence, and token counts and timings per stage. Without an answer
    model ``answer`` is null and ``evidence`` holds the composed material. 404: unknown group
    or no messages; 422: bad question, budget or ``as_of``; 503: the answer model failed.
    """
    budgets = budgets_from(runtime.settings, ask_enabled=body.ask, s1_k=body.s1_k, s2_k=body.s2_k,
                           source_k=body.source_k)
    return ask(runtime, group_id, body.question, budgets=budgets, as_of=body.as_of, tense=body.tense)
