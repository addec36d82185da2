"""The FastAPI application: :func:`create_app` (``graphmem serve`` runs it with uvicorn).

Lifespan: one :class:`graphmem.runtime.Runtime` per process (opened at start, closed and
dropped from ``app.state`` at shutdown): the Neo4j driver (when Neo4j is down at start the app still starts and answers 503
until it is back), the embedder, the answer and Writer models from the settings (None when not
configured), the group cache and the tracer. The app keeps no other state
between requests, so it scales by running more replicas.

Run: ``graphmem serve`` or ``uvicorn --factory api.main:create_app``. OpenAPI at ``/docs``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from api import errors
from api.deps import API_KEY_HEADER, require_api_key
from api.openapi import forbid_unknown_query
from api.routes import ask, export, graph, groups, health, imports, jobs, persons, records, search
from graphmem import __version__
from graphmem.access import load_keys
from graphmem.boundary import Boundary
from graphmem.core.config import Settings, get_settings
from graphmem.core.errors import StoreUnavailableError
from graphmem.groups.jobs import JobRunner
from graphmem.runtime import Runtime
from graphmem.store.db import quiet_notifications

logger = logging.getLogger(__name__)
SWAGGER_STATIC = "/static/swagger"


def _install_offline_docs(app: FastAPI) -> None:
    """Serve Swagger UI at ``/docs`` from the swagger-ui-bundle package (works offline)."""
    from swagger_ui_bundle import swagger_ui_path

    app.mount(SWAGGER_STATIC, StaticFiles(directory=str(swagger_ui_path)), name="swagger")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - API docs",
            swagger_js_url=f"{SWAGGER_STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER_STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER_STATIC}/favicon-32x32.png",
        )


class SlashedGroupId:
    """ASGI middleware: a request for ``/groups/{group_id}...`` whose group id holds ``/`` (sent
    as ``%2F``) is answered here, before routing, with the library's error for that id
    (:func:`api.errors.slashed_group_error`: 404 ``no group 'a/b': group ids contain no '/' ...``,
    or 422 field ``group`` on ``POST .../messages``). Starlette routes on the decoded path, so
    such a request reached no route (FastAPI's plain 404) or another group's route."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        gid = errors.slashed_group(scope)
        if gid is None:
            await self.app(scope, receive, send)
            return
        code, body = errors.error_body(errors.slashed_group_error(scope["method"], scope["path"], gid))
        data = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": code,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})


_PUBLIC = re.compile(r"^/(health|groups/[^/]+/view|static/graphmem/.*|static/swagger/.*)$")


def _public(method: str, path: str) -> bool:
    """Served without a key: the health check, the graph page and the static files (no data).
    ``/docs`` and ``/openapi.json`` need the key when one is set."""
    return method in ("GET", "HEAD") and _PUBLIC.match(path) is not None


_READ_POSTS = re.compile(r"^/groups/[^/]+/ask$")


def _reads_only(method: str, path: str) -> bool:
    """Writing methods that write nothing (allowed to a read-only key): ``POST /groups/{id}/ask``."""
    return method == "POST" and _READ_POSTS.match(path) is not None


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app.

    Args:
        settings: configuration (default: :func:`graphmem.core.config.get_settings`).
    """
    s = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.settings = s
        rt = Runtime.open(s, connect="lazy", serving=True)  # the store opens on first use: 503 while Neo4j is down
        app.state.runtime = rt
        try:
            rt.store
        except StoreUnavailableError as e:
            logger.warning("starting without Neo4j (requests answer 503 until it is back): %s", e)
        quiet_notifications()
        rt.warm_for_serving(logger)  # before the app reports ready: no request pays for the load
        app.state.jobs = None
        if s.derive_jobs_enabled:
            app.state.jobs = JobRunner(lambda: rt.store, lambda: rt.writer, lambda: rt.embedder, s)
            app.state.jobs.start()  # also resumes jobs a stopped server left open
        try:
            yield
        finally:
            if app.state.jobs is not None:
                app.state.jobs.shutdown()
            rt.close()
            # the app object may outlive its lifespan (a test client, an embedding host): what the
            # Runtime loaded (the embedder's model, the vector cache) goes with the lifespan
            app.state.jobs = None
            app.state.runtime = None

    app = FastAPI(
        title="graphmem",
        version=__version__,
        summary="Speaker-centred dual-track memory for multi-party dialogue on Neo4j (SpeakerMem-R1).",
        lifespan=lifespan,
        docs_url=None,  # served below from the local swagger-ui-bundle, not a CDN
    )
    errors.install(app)
    app.add_middleware(SlashedGroupId)
    origins = [o.strip() for o in s.api_cors_origins.split(",") if o.strip()]
    if origins:  # off unless configured: browsers then refuse cross-origin calls
        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["content-type", API_KEY_HEADER])
    # Outermost: host, key, scope, origin, content type, size and time are decided from the
    # headers before the body is read (graphmem/boundary.py).
    app.add_middleware(
        Boundary, keys=load_keys(s.api_key.get_secret_value(), s.api_keys_file),
        allowed_hosts=[h for h in s.api_allowed_hosts.split(",") if h.strip()], allowed_origins=origins,
        max_body_bytes=int(s.api_max_request_mb * 1024 * 1024), body_timeout_s=s.api_body_timeout_s,
        public=_public, read_posts=_reads_only,
    )
    _install_offline_docs(app)
    # an unknown or misspelt query parameter is a 422 naming it, as an unknown body field (api/openapi.py)
    strict_query = Depends(forbid_unknown_query)
    app.include_router(health.router, dependencies=[strict_query])
    app.include_router(graph.page_router)  # the graph page and its static files: no data, no key
    secured = [Depends(require_api_key), strict_query]
    for r in (groups.list_router, groups.router, search.router, ask.router, persons.router, records.router,
              jobs.router, jobs.group_router, graph.router, export.router, imports.router):
        app.include_router(r, dependencies=secured)
    return app
