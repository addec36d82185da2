"""The conversation graph of a group: JSON, interaction summary, timeline plot, and the page.

``router`` (registered behind the API key like the other resources):
``GET /groups/{group_id}/graph``, ``/summary`` and ``/timeline.png``.

``page_router`` (no API key: it serves no data, only the page and its static files; the page
asks for the key when the data routes answer 401): ``GET /groups/{group_id}/view`` and
``GET /static/graphmem/{path}`` (the page's script, style and the vendored Cytoscape.js build).
The page and the PNG are left out of the OpenAPI schema, which documents the JSON API.

The logic lives in :mod:`graphmem.views`; these routes only translate HTTP.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

from api.openapi import errors_of
from api.deps import StoreDep, get_access, get_runtime, get_store, GroupId
from graphmem.core.errors import NotFoundError
from graphmem.groups.service import get_group
from graphmem.views.graph import DEFAULT_MAX_NODES, DEFAULT_MAX_RECORDS, MAX_NODES, MAX_RECORDS
from graphmem.views import (
    ConversationGraph,
    GroupSummary,
    build_graph,
    build_timeline,
    render_timeline_png,
    require_plots,
    summarize,
)

router = APIRouter(prefix="/groups/{group_id}", tags=["graph"])
page_router = APIRouter(include_in_schema=False)

STATIC = Path(str(resources.files("api").joinpath("static")))
#: The graph page runs only its own scripts (no inline script, no eval), talks only to this
#: server, and may not be framed (clickjacking) or post a form anywhere. Inline styles stay
#: allowed: Cytoscape.js injects a <style> element and the page sets style attributes.
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
            "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
_PAGE_HEADERS = {"Content-Security-Policy": PAGE_CSP, "X-Content-Type-Options": "nosniff",
                 "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
_MEDIA = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".md": "text/plain",
          ".LICENSE": "text/plain"}


@router.get("/graph", response_model=ConversationGraph, summary="People, records and who talks to whom",
            operation_id="group_graph", responses=errors_of(401, 403, 404, 422, 503))
def get_graph(
    group_id: GroupId,
    store: StoreDep,
    person: Annotated[str | None, Query(description="Only records from or about this Person.id (or GROUP).")] = None,
    layer: Annotated[
        list[str] | None,
        Query(description="Layers to show: code names or labels (Core, Profile, Interaction, Insight); "
                          "repeat or comma-separate. Default: all."),
    ] = None,
    session: Annotated[str | None, Query(description="Only this session.")] = None,
    ts_from: Annotated[str | None, Query(alias="from", description="ISO-8601 start (inclusive; naive = UTC).")] = None,
    ts_to: Annotated[str | None, Query(alias="to", description="ISO-8601 end (inclusive; naive = UTC).")] = None,
    mode: Annotated[Literal["head", "full"], Query(description="head: current states; full: every state.")] = "head",
    max_nodes: Annotated[int, Query(ge=2, le=MAX_NODES, description="Nodes at most (GROUP and the most active people).")] = DEFAULT_MAX_NODES,
    max_records: Annotated[int, Query(ge=1, le=MAX_RECORDS, description="Record edges at most (the most recent).")] = DEFAULT_MAX_RECORDS,
) -> ConversationGraph:
    """Nodes: every person and the GROUP node (with a layout position), up to ``max_nodes``
    (then the most active people under the filters; ``truncated``, ``nodes_total`` and
    ``notice`` say what was left out and how to narrow). Records: derived records as edges from
    source to owner with layer, utype, content, state, time and session, between the nodes
    shown, up to ``max_records``. Talk: person-to-person reply/next counts. 404: unknown
    group, person or session; 422: unknown layer, unparsable time, a cap out of range."""
    return build_graph(
        store, group_id, person=person or None, layers=layer, session=session or None,
        ts_from=ts_from or None, ts_to=ts_to or None, mode=mode, max_nodes=max_nodes, max_records=max_records,
    )


@router.get("/summary", response_model=GroupSummary, summary="Interaction summary per person and decisions",
            operation_id="group_summary", responses=errors_of(401, 403, 404, 422, 503))
def get_summary(group_id: GroupId, store: StoreDep) -> GroupSummary:
    """Per person: messages sent, replies sent and received, records owned and sourced, what
    they said about others, stance changes. Per group: sessions and decisions over time.
    404: unknown group."""
    return summarize(store, group_id)


@router.get("/timeline.png", response_class=Response, include_in_schema=False)
def get_timeline_png(
    group_id: GroupId,
    store: StoreDep,
    width: Annotated[float, Query(ge=4, le=40, description="Width in inches (100 dpi).")] = 10.0,
) -> Response:
    """A PNG: one row per person and a GROUP row; messages, stance changes and decisions in
    conversation order. 404: unknown group; 501: the plots extra (matplotlib) is not installed."""
    require_plots()
    png = render_timeline_png(build_timeline(store, group_id), width_in=width)
    return Response(content=png, media_type="image/png", headers={"Cache-Control": "no-store"})


@page_router.get("/groups/{group_id}/view", response_class=HTMLResponse)
def get_view(group_id: GroupId, request: Request) -> HTMLResponse:
    """The graph page of one group (it loads its data from ``graph`` and the provenance route).

    404 for an unknown group, like every group route; the page is still the body, so a browser
    shows it with the data route's error ("no group 'x'"). When the request carries no key
    that reaches the group (a browser opening the page never sends one), the page is served
    without looking the group up: this route needs no key, and must not tell a caller without
    one which groups exist; the page's data calls then answer 401, then 404. Served with a
    Content-Security-Policy (:data:`PAGE_CSP`) and ``nosniff``.
    """
    page = (STATIC / "view.html").read_text(encoding="utf-8")
    access = get_access(request)
    if access is not None and access.reaches(group_id):
        try:
            get_group(get_store(get_runtime(request)), group_id)
        except NotFoundError:
            return HTMLResponse(page, status_code=404, headers=_PAGE_HEADERS)
    return HTMLResponse(page, headers=_PAGE_HEADERS)


@page_router.get("/static/graphmem/{path:path}")
def get_static(path: str) -> FileResponse:
    """A file of the page (script, style, vendored library); 404 for anything else."""
    target = (STATIC / path).resolve()
    if STATIC.resolve() not in target.parents or not target.is_file():
        raise HTTPException(status_code=404, detail=f"no static file {path!r}")
    media = _MEDIA.get(target.suffix, "application/octet-stream")
    return FileResponse(target, media_type=media, headers={"Cache-Control": "public, max-age=3600",
                                                           "X-Content-Type-Options": "nosniff"})
