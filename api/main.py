"""The FastAPI application: :func:`create_app` (``graphmem serve`` runs it with uvicorn).

Lifespan: one Neo4j driver per process (opened at start, closed at shutdown; when Neo4j is down
at start the app still starts and answers 503 until it is back), the embedder, and the answer
and Writer models from the settings (None when not configured). The app keeps no other state
between requests, so it scales by running more replicas.

Run: ``graphmem serve`` or ``uvicorn --factory api.main:create_app``. OpenAPI at ``/docs``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from api import errors
from api.deps import require_api_key
from api.routes import ask, graph, groups, health, jobs, persons, records
from graphmem import __version__
from graphmem.config import Settings, get_settings
from graphmem.db import Store, open_driver, quiet_notifications
from graphmem.embed import get_embedder
from graphmem.errors import StoreUnavailableError
from graphmem.jobs import JobRunner
from graphmem.llm import answer_model, writer_model

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


def _store(app: FastAPI) -> Store:
    """The process-wide store for background threads (opens the driver when it is closed)."""
    from api.deps import open_process_driver

    return Store(open_process_driver(app.state), app.state.settings.neo4j_database)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app.

    Args:
        settings: configuration (default: :func:`graphmem.config.get_settings`).
    """
    s = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.settings = s
        try:
            app.state.driver = open_driver(s)
        except StoreUnavailableError as e:
            logger.warning("starting without Neo4j (requests answer 503 until it is back): %s", e)
            app.state.driver = None
        app.state.embedder = get_embedder(s.embed_model)
        app.state.answer_model = answer_model(s)
        app.state.writer_model = writer_model(s)
        quiet_notifications()
        app.state.jobs = None
        if s.derive_jobs_enabled:
            app.state.jobs = JobRunner(lambda: _store(app), lambda: app.state.writer_model,
                                       lambda: app.state.embedder, s)
            app.state.jobs.start()  # also resumes jobs a stopped server left open
        try:
            yield
        finally:
            if app.state.jobs is not None:
                app.state.jobs.shutdown()
            for m in (app.state.answer_model, app.state.writer_model):
                if m is not None:
                    m.close()
            if app.state.driver is not None:
                app.state.driver.close()
                app.state.driver = None

    app = FastAPI(
        title="graphmem",
        version=__version__,
        summary="Speaker-centred dual-track memory for multi-party dialogue on Neo4j (SpeakerMem-R1).",
        lifespan=lifespan,
        docs_url=None,  # served below from the local swagger-ui-bundle, not a CDN
    )
    errors.install(app)
    _install_offline_docs(app)
    app.include_router(health.router)
    app.include_router(graph.page_router)  # the graph page and its static files: no data, no key
    secured = [Depends(require_api_key)]
    for r in (groups.router, ask.router, persons.router, records.router, jobs.router, graph.router):
        app.include_router(r, dependencies=secured)
    return app
