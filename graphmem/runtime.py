"""The Runtime: everything one process holds while it serves graphmem, owned in one place.

Each shell builds one and closes it: the CLI per command (:func:`graphmem.cli.common.open_runtime`),
the API in its lifespan, the MCP server for its life, the job runner and the eval runner from
the Runtime they are given. A Runtime holds:

- ``settings``: the :class:`~graphmem.core.config.Settings` it was opened with (nothing below
  the shells reads the environment);
- ``store``: the :class:`~graphmem.store.db.Store` on one Neo4j driver (and the store's read
  pool for reads that overlap, closed with it);
- ``embedder``: the sentence embedder, loaded on first use and once (:meth:`warm` loads it
  ahead, so no request pays for it);
- the language models ``answer``, ``writer`` and ``judge`` (None when not configured);
- ``cache``: the one per-process cache of group data (term statistics and vector matrices),
  checked against each group's freshness key on every read;
- ``recipe``: how System 1's recall pool is built (:data:`~graphmem.recall.recipe.SPEAKERMEM_POOL`
  unless an evaluation runs a lab variant, ``graphmem eval run --recipe``);
- ``tracer``: where spans go (:class:`~graphmem.core.telemetry.Tracer`, off unless
  ``GRAPHMEM_OTEL_ENABLED``), and :meth:`stages` to record the wall time, span and model usage
  of each stage of an operation in one ``with``.

Library functions take the Runtime (the query and group services) or what they need from it
(the store, the embedder, the cache: System 1 and System 2 below them); no module keeps any of
these in a global. It sits in the query/groups layer: it composes the store, the embedder, the
models and the recall cache, so it imports them, and the services above import it.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import Any, Literal

from neo4j import Driver

from graphmem.core import telemetry
from graphmem.core.config import Settings
from graphmem.core.embed import Embedder
from graphmem.core.errors import GraphMemError, StoreUnavailableError
from graphmem.llm import ChatModel, answer_model, judge_model, writer_model
from graphmem.recall.cache import GroupCache
from graphmem.recall.recipe import SPEAKERMEM_POOL, RecallRecipe
from graphmem.store.db import STORE_UNREACHABLE, Store, open_driver

logger = logging.getLogger(__name__)

__all__ = ["Runtime"]


class Runtime:
    """What one process holds: settings, store, embedder, models, the group cache and the tracer.

    Build it from parts (tests, notebooks: ``Runtime(settings, store=Store(driver))``) or with
    :meth:`open` (a driver from the settings, models and tracer from the settings too). Use it
    as a context manager, or call :meth:`close`: it closes the store's read pool and, when it
    opened the driver, the driver.

    Args:
        settings: configuration (budgets, limits, model endpoints, ...).
        store: the store; None: ask :meth:`open` to make one (reading ``store`` raises until then).
        embedder: the embedder; None: loaded from the settings on first use.
        answer / writer / judge: the models, or None (no answer: evidence only; no Writer:
            derive refuses pending work; no judge: eval scores without one).
        cache: the group cache (default: a new one sized by ``GRAPHMEM_VECTOR_CACHE_MB``).
        tracer: span sink (default: off).
        driver: a driver the Runtime owns and closes (set by :meth:`open`).
        background_loads: whether the default cache loads vector matrices in background threads
            (a one-question command turns them off: a matrix loaded after the answer is unused).
        recipe: the recall pool's recipe (:class:`~graphmem.recall.recipe.RecallRecipe`; default
            the product's :data:`~graphmem.recall.recipe.SPEAKERMEM_POOL`).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
        answer: ChatModel | None = None,
        writer: ChatModel | None = None,
        judge: ChatModel | None = None,
        cache: GroupCache | None = None,
        tracer: telemetry.Tracer | None = None,
        driver: Driver | None = None,
        background_loads: bool = True,
        recipe: RecallRecipe = SPEAKERMEM_POOL,
    ) -> None:
        self.settings = settings
        self.recipe = recipe
        self._store = store
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self.answer = answer
        self.writer = writer
        self.judge = judge
        self.cache = cache if cache is not None else GroupCache(settings.vector_cache_mb, background_loads=background_loads)
        self._tracer = telemetry.NO_TRACER
        self.tracer = tracer if tracer is not None else telemetry.NO_TRACER
        self._driver = driver
        self._lazy = False
        self._store_lock = threading.Lock()
        self._owns_models = False
        self._closed = False
        self._serving = False
        self._warm_thread: threading.Thread | None = None

    @classmethod
    def open(cls, settings: Settings, *, models: bool = True, connect: bool | Literal["lazy"] = True,
             background_loads: bool = True, serving: bool = False) -> Runtime:
        """A Runtime from the settings: a driver to ``GRAPHMEM_NEO4J_*`` (checked now), the models
        of ``GRAPHMEM_LLM_* / WRITER_* / JUDGE_*`` (``models=False``: none), and the tracer of
        ``GRAPHMEM_OTEL_ENABLED``. The embedder loads on first use.

        Args:
            settings: configuration.
            models: build the configured models.
            connect: open the driver now; ``"lazy"``: on first use of :attr:`store` (a server
                that starts while Neo4j is down: each use tries again and raises
                StoreUnavailableError until it is back); False: a Runtime without a store.
            background_loads: as in :class:`Runtime` (False for a one-question command).
            serving: the Runtime of a server (HTTP API, MCP): when the lazy driver cannot be
                opened, the driver's text (the store's address) goes to the log and callers get
                :data:`graphmem.store.db.STORE_UNREACHABLE`; a command keeps the whole text for its user.

        Raises:
            StoreUnavailableError: Neo4j cannot be reached or refuses the credentials.
        """
        driver = open_driver(settings) if connect is True else None
        store = Store(driver, settings.neo4j_database) if driver is not None else None
        rt = cls(
            settings,
            store=store,
            driver=driver,
            answer=answer_model(settings) if models else None,
            writer=writer_model(settings) if models else None,
            judge=judge_model(settings) if models else None,
            tracer=telemetry.configure(settings.otel_enabled),
            background_loads=background_loads,
        )
        rt._owns_models = models
        rt._lazy = connect == "lazy"
        rt._serving = serving
        return rt

    @property
    def store(self) -> Store:
        """The store.

        Raises:
            StoreUnavailableError: opened with ``connect="lazy"`` and Neo4j cannot be reached.
            RuntimeError: this Runtime was made without one.
        """
        if self._store is None:
            if not self._lazy:
                raise RuntimeError("this Runtime has no store: open it with Runtime.open(settings) or pass store=")
            with self._store_lock:
                if self._store is None and not self._closed:
                    try:
                        driver = open_driver(self.settings)
                    except StoreUnavailableError as e:
                        if not self._serving:
                            raise
                        logger.warning("%s", e)  # the operator's log has the address and the cause
                        raise StoreUnavailableError(STORE_UNREACHABLE) from e
                    self._driver, self._store = driver, Store(driver, self.settings.neo4j_database)
            if self._store is None:
                raise RuntimeError("this Runtime is closed")
        return self._store

    @property
    def has_store(self) -> bool:
        """Whether this Runtime was given (or opened) a store."""
        return self._store is not None

    @property
    def embedder(self) -> Embedder:
        """The embedder (``GRAPHMEM_EMBED_*``), loaded on first use, once per Runtime."""
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    self._embedder = Embedder.from_settings(self.settings)
                    self._lend_tracer()
        return self._embedder

    @property
    def tracer(self) -> telemetry.Tracer:
        """Where spans go (off unless ``GRAPHMEM_OTEL_ENABLED``); setting it hands it to the
        models and the embedder too."""
        return self._tracer

    @tracer.setter
    def tracer(self, tracer: telemetry.Tracer) -> None:
        self._tracer = tracer
        self._lend_tracer()

    def _lend_tracer(self) -> None:
        """Hand this Runtime's tracer to the models and the embedder it holds, so each model call
        (``chat <model>``) and the embedder's one load (``graphmem.embedder.load``) make their
        spans; a part that already has a tracer of its own keeps it."""
        if not self.tracer.enabled:
            return
        for part in (self.answer, self.writer, self.judge, self._embedder):
            if part is not None and not part.tracer.enabled:
                part.tracer = self.tracer

    def warm(self) -> float:
        """Load the embedder's model now (the API and MCP server call this before they report
        ready, so no request pays for the load), under the span ``graphmem.embedder.load``
        (:meth:`graphmem.core.embed.Embedder.warm`). Returns the seconds it took."""
        return self.embedder.warm()

    def warm_for_serving(self, log: Any) -> None:
        """Load the embedder before a server reports ready (API and MCP lifespans), so no request
        pays for it; a model that cannot load is logged (``log.error``) and the server starts:
        each request that embeds then raises the same clear error."""
        try:
            log.info("embedder %s loaded in %.2f s", self.embedder.backend_name, self.warm())
        except GraphMemError as e:
            log.error("the embedder could not load; requests that embed will fail: %s", e)

    def warm_in_background(self) -> None:
        """Start loading the embedder's model in a daemon thread, so a command's connection to
        Neo4j and its first reads overlap the load (about 0.3 s of a cold CLI search). A load
        error is raised again, by the same load, at the first encode."""

        def load() -> None:
            try:
                self.embedder.warm()
            except Exception:  # raised again where the vectors are needed
                pass

        self._warm_thread = threading.Thread(target=load, name="graphmem-embedder-warm", daemon=True)
        self._warm_thread.start()

    def with_models(self, *, answer: ChatModel | None = None, writer: ChatModel | None = None,
                    judge: ChatModel | None = None) -> Runtime:
        """A Runtime sharing this one's store, embedder, cache, recipe and tracer with other models
        (None leaves a model out). It owns nothing: close the original. A lazy store is opened
        here (the copy cannot open it for the original).

        Raises:
            StoreUnavailableError: opened with ``connect="lazy"`` and Neo4j cannot be reached.
        """
        store = self.store if self._lazy else self._store
        return Runtime(self.settings, store=store, embedder=self._embedder, answer=answer, writer=writer,
                       judge=judge, cache=self.cache, tracer=self.tracer, recipe=self.recipe)

    def stages(self, prefix: str, **attributes: Any) -> telemetry.Stages:
        """A recorder of one operation's stages (wall time, span ``<prefix>.<stage>``, model
        usage in one ``with``; :class:`graphmem.core.telemetry.Stages`)."""
        return telemetry.Stages(self.tracer, prefix, **attributes)

    def close(self) -> None:
        """Close what this Runtime owns: the store's read pool, the driver and the models it opened,
        the cache's loader threads. Idempotent. A model still loading in the background
        (:meth:`warm_in_background`) is waited for, at most a minute: a process that exits
        while the ONNX runtime loads a model in another thread is aborted (SIGABRT, "terminate
        called without an active exception") instead of exiting with its status."""
        if self._closed:
            return
        self._closed = True
        if self._warm_thread is not None:
            self._warm_thread.join(timeout=60.0)
        self.cache.close()
        if self._store is not None and self._driver is not None:
            self._store.close()
        if self._driver is not None:
            self._driver.close()
        if self._owns_models:
            for model in {id(m): m for m in (self.answer, self.writer, self.judge) if m is not None}.values():
                model.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
