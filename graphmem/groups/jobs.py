"""Background derive jobs: the Writer runs apart from the request, and survives restarts.

A job is a ``(:DeriveJob {id, group_id, state, ...})`` node; everything it reports is read
from the store: progress is the Writer segments of its group written since it opened (their
``Segment`` markers carry token usage), the rest is what still is pending. Nothing lives only
in a process, so after a restart (or on another API replica) a runner claims the job again
and :func:`graphmem.derived.writer.derive_group` continues at the first unwritten segment; segments
are committed one by one with their markers, so no record is ever written twice.

Rules:

- **One job per group** at a time: opening a job while one is queued or running returns that
  one (:func:`open_derive_job`, serialised on the Group node's lock).
- **Leases.** A runner holds a job for ``derive_job_lease_s`` seconds and renews the lease
  while it works (after each segment and from a heartbeat). A job whose lease ran out is
  claimable by any runner (:class:`JobRunner` polls for them); so is a job whose holder's
  process is gone (same machine, :func:`graphmem.core.process.owner_gone`: a server killed
  with SIGKILL), at once instead of after its lease.
- **Erasure.** Erasing the group (:func:`graphmem.groups.service.erase_group`) cancels its open
  jobs (state ``cancelled``); a runner sees it at its next lease renewal and stops, and the
  segment it was writing is refused (the group is fenced). A person erased while a job runs
  does not stop it: the segment in flight is planned again without their messages.
- **Rate limits.** A Writer call the model endpoint answers with HTTP 429 (after the model
  client's own retries) does not fail the job: the runner waits (``derive_job_backoff_s``,
  doubling up to ``derive_job_backoff_max_s``) and resumes; each wait is counted in
  ``rate_limited``. After ``derive_job_max_rate_limits`` waits in a row the job fails.
- States: ``queued`` -> ``running`` -> ``done`` | ``failed`` (with ``error``); ``queued`` or
  ``running`` -> ``cancelled`` when the group is erased.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel

from graphmem.core.config import Settings
from graphmem.store.db import Store
from graphmem.core.errors import (
    ConflictError, GraphMemError, LLMError, NotFoundError, StoreUnavailableError, group_erasing, no_group,
)
from graphmem.core.process import owner_token, owner_gone
from graphmem.core.results import DeriveJob as DeriveJob, JobState as JobState  # moved; re-exported
from graphmem.core.results import JobsPage
from graphmem.core import paging

logger = logging.getLogger(__name__)



def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def open_derive_job(store: Store, group_id: str) -> tuple[str, bool]:
    """Open a background derive job for the group, or find the open one.

    Returns:
        (job id, True when this call created it).

    Raises:
        NotFoundError: no such group.
        ConflictError: the group is being erased.
    """
    rows = store.write("groups/open_derive_job", group_id=group_id, job_id=f"derive-{uuid.uuid4().hex}",
                       now=_now_iso())
    if not rows:
        raise no_group(group_id)
    if rows[0]["erasing"]:
        raise group_erasing(group_id)
    return str(rows[0]["id"]), bool(rows[0]["created"])


def get_derive_job(store: Store, job_id: str, settings: Settings) -> DeriveJob:
    """The job with its progress read from the stored segments and pending messages.

    Raises:
        NotFoundError: no such job.
    """
    rows = store.read("groups/get_derive_job", job_id=job_id)
    if not rows:
        raise NotFoundError(f"no derive job {job_id!r}")
    job = rows[0]["job"]
    pending, left = (0, 0) if job.get("group_erased_at") else _pending(store, job["group_id"], settings)
    return _job(rows[0], pending, left)


def _pending(store: Store, group_id: str, settings: Settings) -> tuple[int, int]:
    """(messages of the group no segment covers yet, segments they make)."""
    from graphmem.derived.writer import load_messages, plan_segments

    pending = load_messages(store, group_id, pending_only=True)
    left = len(plan_segments(pending, settings.writer_segment, settings.writer_window)) if pending else 0
    return len(pending), left


def _job(row: dict[str, Any], pending: int, left: int) -> DeriveJob:
    """A job from a row of ``groups/get_derive_job`` (or ``list_derive_jobs``) and its group's
    pending messages and segments."""
    job = row["job"]
    if job.get("group_erased_at"):  # a receipt: the group (and its progress) is gone
        pending, left = 0, 0
    keys = ("id", "group_id", "state", "created_at", "updated_at", "finished_at", "segments_before",
            "runs", "rate_limited", "error")
    return DeriveJob(
        **{k: job[k] for k in keys if job.get(k) is not None},
        segments_done=row["segments_done"], segments_total=row["segments_done"] + left,
        pending_messages=pending, calls=row["calls"], prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"], records_added=row["records_added"],
        records_updated=row["records_updated"], actions_rejected=row["actions_rejected"],
    )


def list_derive_jobs(store: Store, group_id: str, settings: Settings, *, limit: int = paging.DEFAULT_LIMIT,
                     cursor: str | None = None, max_bytes: int | None = None) -> JobsPage:
    """One page of the group's derive jobs, newest first (``created_at``, then id, both
    descending; a job opened between two pages sorts before the walk's position and is not
    met again), each with its progress as :func:`get_derive_job` reports it.

    Args:
        limit: jobs on the page, 1 to ``MAX_LIMITS["jobs"]`` (1,000).
        cursor: None, or ``next_cursor`` of the previous page.
        max_bytes: bound on the page as compact JSON; None: no bound.

    Raises:
        NotFoundError: no such group.
        InvalidInputError: ``limit``, ``max_bytes`` out of range or a cursor of another list.
    """
    paging.check_limit(limit, maximum=paging.MAX_LIMITS["jobs"])
    paging.check_max_bytes(max_bytes)
    scope = paging.list_scope("jobs", group_id)
    before = paging.decode_cursor(cursor, kind="jobs", scope=scope, size=2, types=(str, str))
    if not store.read("groups/get_group", group_id=group_id):
        raise no_group(group_id)
    rows = store.read("groups/list_derive_jobs", group_id=group_id, limit=limit + 1,
                      before_ts=None if before is None else str(before[0]),
                      before_id="" if before is None else str(before[1]))
    pending, left = _pending(store, group_id, settings) if rows else (0, 0)
    jobs = [_job(r, pending, left) for r in rows]
    page, last = paging.take(jobs, limit=limit, key=lambda j: [j.created_at, j.id],
                             budget=paging.budget_of(JobsPage(group_id=group_id, truncated=True), max_bytes))
    return JobsPage(group_id=group_id, jobs=page, truncated=last is not None,
                    next_cursor=None if last is None else paging.encode_cursor("jobs", scope, last))


def is_rate_limit(error: BaseException) -> bool:
    """Whether a model error was, at its root, an HTTP 429 (rate limit) answer."""
    seen: BaseException | None = error
    while seen is not None:
        if getattr(seen, "status_code", None) == 429:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class _LostLease(Exception):
    """The job is no longer this runner's (another runner took it over, or shutdown)."""


def run_derive_job(
    store: Store,
    job_id: str,
    *,
    runner: str,
    model: Any,
    embedder: Any,
    settings: Settings,
    stop: threading.Event | None = None,
    sleep: Callable[[float], None] | None = None,
    take_from: str | None = None,
) -> JobState | None:
    """Claim the job and run the Writer until the group is derived (resuming where it stopped).

    Args:
        store: open store.
        job_id: the job.
        runner: this runner's id (one per process).
        model: the Writer (:func:`graphmem.llm.writer_model`), or None (the job fails with the
            LLMError that names the missing settings when messages are pending).
        embedder: embeds new records.
        settings: lease, backoff and Writer settings.
        stop: when set, the runner stops after the current segment and leaves the job to be
            resumed (its lease runs out).
        sleep: wait function (default: waits on ``stop``), seconds.
        take_from: the runner id of a holder whose process is gone
            (:func:`graphmem.core.process.owner_gone`): its live lease is taken over.

    Returns:
        The final state ("done" / "failed"), or None when the job was not claimed or the
        runner stopped before the end.
    """
    from graphmem.derived.writer import derive_group

    s = settings
    stop = stop or threading.Event()
    wait = sleep or (lambda seconds: stop.wait(seconds))
    now = time.time()
    rows = store.write("groups/claim_derive_job", job_id=job_id, runner=runner, owner=owner_token(),
                       take_from=take_from, now=now, lease_until=now + s.derive_job_lease_s, now_iso=_now_iso())
    if not rows or not rows[0]["claimed"]:
        return None
    group_id = rows[0]["group_id"]
    logger.info("derive job %s (group %s): claimed by %s, run %s", job_id, group_id, runner, rows[0]["runs"])

    def renew(rate_limited: int = 0, error: str = "") -> None:
        held = store.write("groups/renew_derive_job", job_id=job_id, runner=runner,
                           lease_until=time.time() + s.derive_job_lease_s, now_iso=_now_iso(),
                           rate_limited=rate_limited, error=error)
        if not held or not held[0]["held"]:
            raise _LostLease(job_id)

    def on_segment(*_: Any) -> None:
        renew()
        if stop.is_set():
            raise _LostLease(job_id)

    def finish(state: JobState, error: str = "") -> JobState:
        store.write("groups/finish_derive_job", job_id=job_id, runner=runner, state=state, error=error,
                    now_iso=_now_iso())
        logger.info("derive job %s (group %s): %s %s", job_id, group_id, state, error)
        return state

    heartbeat_stop = threading.Event()

    def heartbeat() -> None:  # keeps the lease while one long Writer call (or a backoff) runs
        while not heartbeat_stop.wait(max(0.5, s.derive_job_lease_s / 3)):
            try:
                renew()
            except (_LostLease, GraphMemError):
                return

    beat = threading.Thread(target=heartbeat, name=f"lease-{job_id}", daemon=True)
    beat.start()
    waits_in_row = 0
    try:
        while True:
            if stop.is_set():
                return None
            try:
                derive_group(store, group_id, model=model, embedder=embedder, settings=s, on_segment=on_segment)
                return finish("done")
            except _LostLease:
                return None
            except LLMError as e:
                if not is_rate_limit(e):
                    return finish("failed", f"{type(e).__name__}: {e}")
                waits_in_row += 1
                if waits_in_row > s.derive_job_max_rate_limits:
                    return finish("failed", f"rate-limited {waits_in_row - 1} times in a row: {e}")
                delay = min(s.derive_job_backoff_max_s, s.derive_job_backoff_s * 2 ** (waits_in_row - 1))
                logger.warning("derive job %s: model rate limit (429); resuming in %.1f s", job_id, delay)
                renew(rate_limited=1, error=f"rate limited (HTTP 429), waited {delay:g} s: {e}")
                wait(delay)
            except (ConflictError, StoreUnavailableError) as e:
                # another writer took a segment, the group is being erased (the job is then
                # cancelled: the renewal stops this runner), or Neo4j blinked: nothing
                # half-written; retry
                try:
                    renew()
                except GraphMemError:
                    pass  # Neo4j is still away: the wait below covers it
                waits_in_row += 1
                if waits_in_row > s.derive_job_max_rate_limits:
                    return finish("failed", f"{type(e).__name__}: {e}")
                wait(min(s.derive_job_backoff_max_s, s.derive_job_backoff_s))
            except GraphMemError as e:
                return finish("failed", f"{type(e).__name__}: {e}")
    except _LostLease:
        return None
    except Exception as e:  # an unexpected bug: record it on the job instead of losing it
        logger.exception("derive job %s failed", job_id)
        try:
            return finish("failed", f"{type(e).__name__}: {e}")
        except GraphMemError:
            return None
    finally:
        heartbeat_stop.set()


class JobRunner:
    """Runs derive jobs on background threads of one process (the API's).

    :meth:`start` launches a poller that claims every open job whose lease has run out (jobs
    of a server that stopped, including this one before a restart) or whose holder's process is
    gone (a server of this machine killed with SIGKILL); :meth:`submit` starts one
    job now; :meth:`shutdown` asks running jobs to stop after their current segment.

    Args:
        store_fn: returns an open store (called on the runner threads).
        model_fn / embedder_fn: return the Writer model and the embedder.
        settings: configuration.
    """

    def __init__(self, store_fn: Callable[[], Store], model_fn: Callable[[], Any],
                 embedder_fn: Callable[[], Any], settings: Settings) -> None:
        self.runner_id = f"runner-{uuid.uuid4().hex[:12]}"
        self._store_fn, self._model_fn, self._embedder_fn = store_fn, model_fn, embedder_fn
        self.settings = settings
        self.stop = threading.Event()
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._poller: threading.Thread | None = None

    def start(self) -> None:
        """Start the poller (claims open jobs with an expired lease every lease/2 seconds)."""
        self._poller = threading.Thread(target=self._poll, name="derive-job-poller", daemon=True)
        self._poller.start()

    def submit(self, job_id: str, take_from: str | None = None) -> None:
        """Run the job on a thread of its own now (no-op when this process runs it already);
        ``take_from``: the runner id of a holder whose process is gone."""
        with self._lock:
            thread = self._threads.get(job_id)
            if thread is not None and thread.is_alive():
                return
            thread = threading.Thread(target=self._run, args=(job_id, take_from), name=f"derive-{job_id}",
                                      daemon=True)
            self._threads[job_id] = thread
            thread.start()

    def _run(self, job_id: str, take_from: str | None = None) -> None:
        try:
            run_derive_job(self._store_fn(), job_id, runner=self.runner_id, model=self._model_fn(),
                           embedder=self._embedder_fn(), settings=self.settings, stop=self.stop,
                           take_from=take_from)
        except Exception:  # the poller tries again once the lease runs out
            logger.exception("derive job %s: runner error", job_id)

    def _poll(self) -> None:
        while not self.stop.is_set():
            try:
                for row in self._store_fn().read("groups/list_claimable_derive_jobs", now=time.time()):
                    if row["expired"]:
                        self.submit(row["id"])
                    elif row["runner"] != self.runner_id and owner_gone(row["owner"]):
                        logger.warning("derive job %s: its runner's process is gone; taking it over", row["id"])
                        self.submit(row["id"], take_from=row["runner"])
            except GraphMemError as e:
                logger.warning("derive job poller: %s", e)
            self.stop.wait(max(0.5, self.settings.derive_job_lease_s / 2))

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Ask every job to stop after its current segment, and wait up to ``timeout_s``."""
        self.stop.set()
        deadline = time.monotonic() + timeout_s
        for thread in [*self._threads.values(), *([self._poller] if self._poller else [])]:
            thread.join(max(0.0, deadline - time.monotonic()))
