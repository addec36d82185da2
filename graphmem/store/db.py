"""Neo4j access: one driver per process, named Cypher templates, routed reads and writes.

The caller owns the driver (the CLI or the API lifespan opens and closes it). Reads go through
``execute_query(..., routing_=READ)`` so that a cluster's secondaries serve them; writes go
through managed write transactions. Database errors are re-raised as graphmem errors.
"""

from __future__ import annotations

import contextvars
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import lru_cache
from importlib import resources
from typing import Any, TypeVar

import neo4j
from neo4j import Driver, GraphDatabase, NotificationDisabledClassification, RoutingControl
from neo4j.exceptions import (
    AuthError,
    ConfigurationError,
    ConstraintError,
    IncompleteCommit,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
)

from graphmem.core.config import Settings
from graphmem.core.errors import ConflictError, StoreUnavailableError
from graphmem.core.redact import redact_text, redact_url

T = TypeVar("T")


@lru_cache(maxsize=None)
def cypher(name: str) -> str:
    """Return the text of the Cypher template ``cypher/<name>.cypher``.

    Args:
        name: template name such as ``"ingest/merge_messages"``.

    Raises:
        KeyError: no template of that name ships with the package.
    """
    path = resources.files("cypher").joinpath(*f"{name}.cypher".split("/"))
    if not path.is_file():
        raise KeyError(f"no Cypher template named {name!r}")
    return path.read_text(encoding="utf-8")


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> bool:
    """True when ``value`` holds only scalars, lists and maps (no node, path, temporal ...)."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is list:
        return all(type(x) in _SCALARS or _plain(x) for x in value)
    if kind is dict:
        return all(type(x) in _SCALARS or _plain(x) for x in value.values())
    return False


def record_dict(record: neo4j.Record) -> dict[str, Any]:
    """``record.data()``, without its per-value transform when every value is plain data.

    The driver's :meth:`neo4j.Record.data` walks every value (each float of a list included)
    through several ``isinstance`` checks to turn nodes, relationships and paths into maps; for
    rows of scalars, lists and maps - what the templates return - the result is the same dict,
    and building it directly costs a fraction (an ``ask`` decodes ~1,000 rows). A record with
    any other value (a node, a path, a temporal value ...) goes through ``data()`` unchanged.
    """
    row = dict(zip(record.keys(), record.values()))
    if all(type(v) in _SCALARS or _plain(v) for v in row.values()):
        return row
    return record.data()


def all_templates() -> list[str]:
    """Names of every shipped Cypher template (``area/verb_noun``), sorted."""
    root = resources.files("cypher")
    names: list[str] = []

    def walk(node: Any, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir() and not child.name.startswith("__"):
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".cypher"):
                names.append(prefix + child.name[: -len(".cypher")])

    walk(root, "")
    return sorted(names)


def open_driver(settings: Settings) -> Driver:
    """Open a driver for the configured URI (``bolt://``, ``neo4j://``, ``neo4j+s://`` ...).

    Raises:
        StoreUnavailableError: the server cannot be reached or rejects the credentials.
    """
    s = settings
    try:
        driver = GraphDatabase.driver(
            s.neo4j_uri, auth=(s.neo4j_user, s.neo4j_password.get_secret_value()),
            # fail fast while the store is down: one connect attempt is short, and a transaction
            # is retried for GRAPHMEM_NEO4J_RETRY_S, not the driver's 30 s
            connection_timeout=s.neo4j_connect_timeout_s, max_transaction_retry_time=s.neo4j_retry_s,
            connection_acquisition_timeout=max(30.0, s.neo4j_connect_timeout_s),
            # "property/label does not exist" is the normal state of a young store (no edit, no
            # derived memory yet), and "index does not exist / already exists" the point of DROP
            # ... IF EXISTS / CREATE ... IF NOT EXISTS: the server does not send them, so no caller
            # (a library user's Memory included) sees a warning for a valid query; performance
            # hints and deprecations still come
            notifications_disabled_classifications=[NotificationDisabledClassification.UNRECOGNIZED,
                                                    NotificationDisabledClassification.SCHEMA],
        )
        driver.verify_connectivity()
    except (ServiceUnavailable, AuthError, ConfigurationError, OSError, ValueError) as e:
        raise StoreUnavailableError(
            f"cannot reach Neo4j at {redact_url(s.neo4j_uri)}: {redact_text(str(e))}. Start the local server with "
            "`graphmem neo4j start`, or set GRAPHMEM_NEO4J_URI/USER/PASSWORD."
        ) from e
    return driver


READ_POOL_THREADS = 8
"""Threads of a store's pool for independent reads (:meth:`Store.in_background`)."""

#: Times a transaction whose commit was cut off (``IncompleteCommit``) is run again.
LOST_COMMIT_RERUNS = 3

logger = logging.getLogger(__name__)


def _rerun_lost_commits(run: Callable[[], T], what: str) -> T:
    """Call ``run``; when the connection drops while its commit is in flight (the driver's
    ``IncompleteCommit``: the commit may or may not have happened, and the driver does not
    retry it), call it again, at most :data:`LOST_COMMIT_RERUNS` times. Safe because every
    graphmem write is idempotent (MERGE on ids; a Writer segment that did commit is found by
    its marker and refused with ConflictError rather than written twice)."""
    for attempt in range(LOST_COMMIT_RERUNS + 1):
        try:
            return run()
        except IncompleteCommit as e:
            if attempt == LOST_COMMIT_RERUNS:
                raise
            logger.warning("%s: connection lost during commit (%s); running it again", what, e)
    raise AssertionError("unreachable")


STORE_DOWN = "the store (Neo4j) is unavailable; nothing was written by this call's failed transaction; retry shortly"
"""The one message of a request that failed because Neo4j could not be reached mid-request."""

STORE_UNREACHABLE = ("the store (Neo4j) is unavailable: this server cannot connect to it, so nothing was read or "
                     "written; the server's log (stderr) names the address and the cause. Start Neo4j "
                     "(`graphmem neo4j start`) or set GRAPHMEM_NEO4J_URI/USER/PASSWORD where the server runs, "
                     "then call again")
"""The message of a server's call (HTTP API, MCP) while its driver cannot be opened at all: not
"retry shortly", which a misconfigured address never outlasts; the address stays in the log."""

#: Seconds a write transaction chosen as a deadlock victim is run again for, in all.
DEADLOCK_RETRY_S = 180.0
_LOCK_CODES = ("Neo.TransientError.Transaction.DeadlockDetected",
               "Neo.TransientError.Transaction.LockAcquisitionTimeout",
               "Neo.TransientError.Transaction.LockClientStopped")


def _rerun_deadlocks(run: Callable[[], T]) -> T:
    """Call ``run``; when Neo4j ends it as a deadlock victim or a lock wait past its limit
    (after the driver's own retries), call it again after a random pause (up to 0.05 s, then
    doubling to at most 2 s, so colliding writers spread out), until :data:`DEADLOCK_RETRY_S`
    have passed; then the last error is raised (-> StoreUnavailableError, 503)."""
    deadline = time.monotonic() + DEADLOCK_RETRY_S
    pause = 0.05
    while True:
        try:
            return run()
        except Neo4jError as e:
            if (e.code or "") not in _LOCK_CODES or time.monotonic() + pause > deadline:
                raise
            logger.info("write transaction lost a lock race (%s); running it again", e.code)
        time.sleep(random.uniform(0, pause))
        pause = min(pause * 2, 2.0)


class Store:
    """A thin wrapper that runs named templates against one database.

    Causal consistency: every read and write of a Store uses the driver's one bookmark
    manager (:attr:`bookmark_manager`), so on a cluster or Aura a read that follows a write
    (in this process) waits until the member serving it has that write.

    Args:
        driver: an open driver; the Store never closes it.
        database: database name (``GRAPHMEM_NEO4J_DATABASE``; Neo4j's default is ``"neo4j"``).
    """

    def __init__(self, driver: Driver, database: str = "neo4j") -> None:
        self.driver = driver
        self.database = database
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def in_background(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Start ``fn(*args, **kwargs)`` on this store's read pool, with the caller's context
        variables (so telemetry spans keep their parent); ``.result()`` returns its value or
        raises its exception.

        For reads that do not depend on each other (``search``'s fulltext and vector rankings,
        ``ask``'s System 2 beside System 1): the driver is thread-safe and each call takes its
        own session, so their round trips overlap instead of adding up. Work submitted here must
        not wait on other work submitted here (the pool has :data:`READ_POOL_THREADS` threads).
        The pool starts on first use and ends with :meth:`close`.
        """
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=READ_POOL_THREADS, thread_name_prefix="graphmem-read")
            pool = self._pool
        return pool.submit(contextvars.copy_context().run, fn, *args, **kwargs)

    def close(self) -> None:
        """Stop this store's read pool (the driver stays open: its owner closes it). Idempotent;
        a later :meth:`in_background` starts a new pool."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def read(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        """Run template ``name`` as a routed read; return its rows as dicts."""
        return self.read_text(cypher(name), **params)

    @property
    def bookmark_manager(self) -> neo4j.api.BookmarkManager:
        """The driver's bookmark manager, shared by every read and write made through a Store
        on this driver (``execute_query`` uses the same one by default)."""
        return self.driver.execute_query_bookmark_manager

    def session(self, *, read: bool = False, **config: Any) -> neo4j.Session:
        """A session on this database that shares :attr:`bookmark_manager` (the caller closes
        it); ``read=True`` opens it in read access mode (routed to readers on a cluster)."""
        mode = neo4j.READ_ACCESS if read else neo4j.WRITE_ACCESS
        return self.driver.session(database=self.database, bookmark_manager=self.bookmark_manager,
                                   default_access_mode=mode, **config)

    def read_text(self, query: str, /, **params: Any) -> list[dict[str, Any]]:
        """Run a literal read query (for tests and Browser guide checks)."""

        def run() -> list[Any]:
            records, _, _ = self.driver.execute_query(
                query, params, database_=self.database, routing_=RoutingControl.READ,
                bookmark_manager_=self.bookmark_manager,
            )
            return records

        with _translated():
            records = _rerun_lost_commits(run, "read")
        return [record_dict(r) for r in records]

    def write(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        """Run template ``name`` in one write transaction; return its rows as dicts."""
        text = cypher(name)

        def work(tx: neo4j.ManagedTransaction) -> list[dict[str, Any]]:
            return [record_dict(r) for r in tx.run(text, params)]

        return self.write_tx(work)

    def write_tx(self, fn: Callable[[neo4j.ManagedTransaction], T]) -> T:
        """Run ``fn`` in one managed write transaction (retried on transient errors).

        ``fn`` must be idempotent: the driver may call it again after a transient failure,
        and so does the Store when the connection drops during the commit, or when Neo4j
        chose this transaction as a deadlock victim (or its lock wait timed out) more often
        than the driver's own retry budget allows: many writers into one group queue on the
        group's lock, so a victim is run again, after a random pause, for up to
        :data:`DEADLOCK_RETRY_S` seconds in all (:func:`_rerun_deadlocks`).
        """

        def run() -> T:
            with self.session() as session:
                return session.execute_write(fn)

        with _translated():
            return _rerun_deadlocks(lambda: _rerun_lost_commits(run, "write transaction"))


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except ConstraintError as e:
        raise ConflictError(str(e.message)) from e
    except (ServiceUnavailable, SessionExpired) as e:
        # the driver's text names the server's address: it goes to the log, not to the caller
        logger.warning("Neo4j unavailable: %s", redact_text(str(e)))
        raise StoreUnavailableError(STORE_DOWN) from e
    except Neo4jError as e:
        if e.code and e.code.startswith("Neo.TransientError"):
            raise StoreUnavailableError(f"Neo4j transient error: {e.message}") from e
        raise


def run_tx(tx: neo4j.ManagedTransaction, name: str, /, **params: Any) -> list[dict[str, Any]]:
    """Run template ``name`` inside an open transaction; return rows as dicts (:func:`record_dict`)."""
    return [record_dict(r) for r in tx.run(cypher(name), params)]


def quiet_notifications() -> None:
    """Hide the driver's notification log lines, notices and warnings alike (e.g. "label does not
    exist" on a store without derived memory yet, or performance hints on valid queries); errors
    raised by a query are exceptions and still surface.

    The one place the CLI, the API and the benchmarks silence them.
    """
    logging.getLogger("neo4j.notifications").setLevel(logging.ERROR)
