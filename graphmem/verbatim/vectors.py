"""Deferred embedding and per-group vector indexes (the write side of graphmem.store.scope).

``graphmem ingest --embed later`` stores messages without vectors, labelled
``:PendingEmbedding``; :func:`embed_group` (``graphmem embed --group G``) fills them in batches,
each batch committed on its own: stopping halfway loses nothing and a re-run continues where it
stopped, and a run over a complete group changes nothing. Once a group holds more than
``GRAPHMEM_VECTOR_EXACT_MAX`` messages it is given its own vector index
(:func:`graphmem.store.scope.ensure_vector_scope`).

One run per group at a time: a run holds the group's embed lease (``embed_runner`` /
``embed_lease_until`` on the Group node, renewed after every batch) while it reads, encodes
and writes. A second run of the same group waits until the lease is released (or has run out:
a run that died), then fills what is still missing, usually nothing; it reports the seconds it
waited (``waited_s``). Before, two concurrent runs read the same pending messages and encoded
them twice (the vectors and counts stayed right, the encoder's work doubled).

Every vector write checks, in its own transaction and under the Group node's lock, that the
run still holds the lease, and renews it. A run whose lease ran out (it was paused longer than
``lease_s``) and was taken over stops with :class:`~graphmem.core.errors.ConflictError` before
writing anything more: the run that holds the group does the rest. Before, the paused run
wrote its batch beside the new holder and then waited to take the group back.
"""

from __future__ import annotations

import logging
import threading

import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from types import SimpleNamespace
from typing import Any

from tqdm import tqdm

from graphmem.verbatim.space import claim_space, rebuild_vectors
from graphmem.core.process import owner_gone, owner_token
from graphmem.store.db import Store
from graphmem.core.embed import Embedder, MessageVectors, encode_messages, sentence_texts
from graphmem.core.errors import ConflictError, group_erasing, no_group
from graphmem.store.scope import ensure_vector_scope, scope_index

logger = logging.getLogger(__name__)


@dataclass
class EmbedSummary:
    """Counts reported by ``graphmem embed --json``.

    ``embedded``: vectors written by this run; ``messages``: messages in the group;
    ``vector_index``: the group's own vector index ("" while it is scored exactly);
    ``labelled``: messages newly put under that index by this run; ``waited_s``: seconds this
    run waited for another run of the group to release its lease (0.0 when none held it);
    ``sentences``: messages given sentence vectors by the ``sentences=True`` pass;
    ``rebuilt`` / ``derived_rebuilt``: messages whose vectors a ``rebuild`` dropped (and this
    run wrote again) / derived records it re-embedded.
    """

    group_id: str
    embedded: int = 0
    sentences: int = 0
    messages: int = 0
    vector_index: str = ""
    labelled: int = 0
    waited_s: float = 0.0
    rebuilt: int = 0
    derived_rebuilt: int = 0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


class _Lease:
    """This run's hold on one group's embed lease (``ingest/claim_embed_lease``)."""

    def __init__(self, store: Store, group_id: str, lease_s: float, poll_s: float,
                 on_wait: Callable[[str], None] | None) -> None:
        self.store, self.group_id, self.lease_s, self.poll_s = store, group_id, lease_s, poll_s
        self.on_wait = on_wait
        self.runner = uuid.uuid4().hex
        self.owner = owner_token()
        self.waited_s = 0.0
        self.took_over: str | None = None  # the run of a dead process whose lease this one took

    def _claim(self, take_from: str | None = None) -> dict[str, Any]:
        now = time.time()
        rows = self.store.write("ingest/claim_embed_lease", group_id=self.group_id, runner=self.runner,
                                owner=self.owner, now=now, lease_until=now + self.lease_s, take_from=take_from)
        if not rows:  # no group, or one being erased (groups/fence_group): refused as every write is
            if self.store.read("groups/get_group", group_id=self.group_id):
                raise group_erasing(self.group_id)
            raise no_group(self.group_id)
        return rows[0]

    def acquire(self) -> None:
        """Take the lease, waiting while another live run holds it; a holder whose process is
        gone (same machine, :func:`graphmem.core.process.owner_gone`: killed with SIGKILL, say)
        is taken over at once instead of waited out."""
        told = False
        start = time.monotonic()
        while True:
            row = self._claim()
            if not row["claimed"] and owner_gone(row.get("owner")):
                dead = str(row["runner"])
                row = self._claim(take_from=dead)
                if row["claimed"]:
                    self.took_over = dead
                    logger.warning("group %r: took over the embed lease of a run whose process is gone",
                                   self.group_id)
            if row["claimed"]:
                if told:
                    self.waited_s += time.monotonic() - start
                return
            if not told and self.on_wait is not None:
                self.on_wait(str(row["runner"]))
            told = True
            time.sleep(max(0.05, min(self.poll_s, float(row["lease_until"]) - time.time() + 0.05)))

    def lost(self, holder: str, written: int) -> ConflictError:
        """The error of a run whose lease was taken over before it could write a batch."""
        return ConflictError(
            f"embed run {self.runner} lost the lease of group {self.group_id!r}: it was not renewed "
            f"within {self.lease_s:g} s (the run was paused or too slow) and run {holder} took the "
            f"group over; this run stopped before writing its next batch ({written} vectors it "
            f"wrote before are kept). The other run fills what is missing; run `graphmem embed "
            f"--group {self.group_id}` again after it if anything is still pending."
        )

    def write(self, template: str, rows: list[dict[str, Any]], written_before: int,
              on_lost: Callable[[], object] = lambda: None) -> int:
        """Write one batch with ``template`` (it checks and renews the lease in its transaction,
        ``ingest/set_message_vectors``' columns); returns how many it wrote.

        Raises:
            NotFoundError: the group was deleted meanwhile.
            ConflictError: another run holds the lease now (``on_lost`` is called first;
                ``written_before`` is what this run wrote until then).
        """
        written = self.store.write(template, group_id=self.group_id, runner=self.runner,
                                   lease_until=time.time() + self.lease_s, rows=rows)
        if not written:
            raise no_group(self.group_id)  # deleted while this run encoded
        if not written[0]["held"]:  # ours ran out and another run holds the group now
            on_lost()
            raise self.lost(str(written[0]["runner"]), written_before)
        return int(written[0]["written"])

    def release(self) -> None:
        self.store.write("ingest/release_embed_lease", group_id=self.group_id, runner=self.runner)


def embed_group(
    store: Store, embedder: Embedder, group_id: str, *, batch_size: int = 1000,
    exact_max: int = 500, progress: bool = False, lease_s: float = 300.0, wait_poll_s: float = 1.0,
    on_wait: Callable[[str], None] | None = None, sentences: bool = False, rebuild: bool = False,
) -> EmbedSummary:
    """Give every message of a group that lacks a vector its embedding (resumable, idempotent).

    ``sentences=True`` also gives every message of several sentences that has a vector but no
    sentence vectors (stored before they existed, or with ``GRAPHMEM_SENTENCE_VECTORS`` off)
    its ``sentence_embeddings``: one pass over the group's messages in id order, encoding only
    those of several sentences (``graphmem embed --sentences``).

    One run per group at a time (module docstring): a run waits while another holds the
    group's embed lease, so concurrent runs never encode the same messages twice.

    Args:
        store: open store (schema applied).
        embedder: the embedder search will use (same model as any vectors already stored).
        group_id: the group.
        batch_size: messages encoded and written per transaction.
        exact_max: above this many messages the group gets its own vector index.
        progress: progress bar on stderr.
        lease_s: seconds the group's lease lasts without renewal (renewed after every batch;
            a run that died holds the group this long at most).
        wait_poll_s: seconds between tries while another run holds the lease.
        on_wait: called once, with the other run's id, when this run starts waiting.
        rebuild: first drop every vector of the group and re-embed it all, its derived records
            included, in ``embedder``'s space (:func:`graphmem.verbatim.space.rebuild_vectors`):
            the way to move a group to another model or backend.

    Returns:
        An :class:`EmbedSummary`; a second run reports ``embedded = 0`` (and, if it ran while
        the first did, the seconds it waited in ``waited_s``).

    Raises:
        NotFoundError: no such group.
        EmbeddingSpaceError: the group's vectors are of another model or backend (without
            ``rebuild``); nothing is encoded or written.
        ConflictError: this run's lease ran out and another run took the group over before
            this run's next write (nothing more written; what it wrote before stays); or the
            group is being erased (``groups/fence_group``), as every write of it is refused.
        StoreUnavailableError: Neo4j failed (committed batches stay; a re-run resumes).
    """
    group = store.read("groups/get_group", group_id=group_id)
    if not group:
        raise no_group(group_id)
    summary = EmbedSummary(group_id=group_id)
    lease = _Lease(store, group_id, lease_s, wait_poll_s, on_wait)
    lease.acquire()
    try:
        if rebuild:
            summary.rebuilt, summary.derived_rebuilt = rebuild_vectors(store, group_id, embedder)
        else:
            claim_space(store, group_id, embedder)
        _embed_pending(store, embedder, group_id, batch_size, progress, lease, summary)
        if sentences:
            _fill_sentences(store, embedder, group_id, batch_size, lease, summary)
    finally:
        lease.release()
    summary.waited_s = round(lease.waited_s, 3)
    summary.messages = int(store.read("ingest/count_group_messages", group_id=group_id)[0]["messages"])
    if summary.messages > exact_max:
        summary.labelled = ensure_vector_scope(store, group_id, embedder.dimension)
        summary.vector_index = scope_index(group_id)
    return summary


def _embed_pending(
    store: Store, embedder: Embedder, group_id: str, batch_size: int, progress: bool, lease: _Lease,
    summary: EmbedSummary,
) -> None:
    """The passes of :func:`embed_group` while ``lease`` is held (ConflictError once lost)."""
    # the total is what is pending now (tqdm shows the rate and an ETA); the bar moves as each
    # sub-batch is encoded, not once per written batch
    total = int(store.read("recall/group_state", group_id=group_id)[0]["pending"]) if progress else None
    bar = tqdm(total=total, unit="msg", desc=f"embed {group_id}", disable=not progress)
    lock = threading.Lock()

    def moved(n: int) -> None:
        with lock:
            bar.update(n)

    def encode(rows: list[dict[str, Any]]) -> list[MessageVectors]:
        return encode_messages(embedder, [SimpleNamespace(**r) for r in rows], moved if progress else None)

    # Batch N is written while batch N+1 (read with N's ids left out) is encoded in a worker
    # thread, so the database time hides behind the encoder's; every write still commits on
    # its own and only sets vectors that are missing, and only while the message still has the
    # text that was encoded: a message edited meanwhile stays pending, and the next pass (one
    # more read of what is pending) encodes its new text. Each write checks and renews the
    # lease in its own transaction.

    def one_pass(pool: ThreadPoolExecutor) -> int:
        wrote = 0
        skip: list[str] = []
        prev: tuple[list[dict[str, Any]], Future[list[MessageVectors]]] | None = None
        while True:
            rows = store.read("ingest/pending_messages", group_id=group_id, batch=batch_size, skip=skip)
            nxt = (rows, pool.submit(encode, rows)) if rows else None
            if prev is not None:
                done, fut = prev
                vectors = fut.result()
                wrote += lease.write(
                    "ingest/set_message_vectors",
                    [{"id": r["id"], "text": r["text"], "embedding": v.embedding,
                      "sentence_embeddings": v.sentence_embeddings} for r, v in zip(done, vectors)],
                    summary.embedded + wrote,
                    # drop the batch being encoded (the other run has it)
                    on_lost=nxt[1].cancel if nxt is not None else lambda: None,
                )
                if not progress:
                    bar.update(len(done))
            if nxt is None:
                return wrote
            prev, skip = nxt, [r["id"] for r in rows]

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-encode") as pool:
        try:
            while True:
                wrote = one_pass(pool)
                summary.embedded += wrote
                if not wrote or not store.read(
                        "ingest/pending_messages", group_id=group_id, batch=1, skip=[]):
                    break
        finally:
            bar.close()


def _fill_sentences(store: Store, embedder: Embedder, group_id: str, batch_size: int, lease: _Lease,
                    summary: EmbedSummary) -> None:
    """The ``sentences=True`` pass of :func:`embed_group` while ``lease`` is held."""
    after = ""
    while True:
        rows = store.read("ingest/messages_without_sentences", group_id=group_id, after=after, batch=batch_size)
        if not rows:
            return
        after = rows[-1]["id"]
        several = [r for r in rows if sentence_texts(SimpleNamespace(**r), embedder.sentence_vectors)]
        if not several:
            continue
        vectors = encode_messages(embedder, [SimpleNamespace(**r) for r in several])
        summary.sentences += lease.write(
            "ingest/set_sentence_vectors",
            [{"id": r["id"], "text": r["text"], "sentence_embeddings": v.sentence_embeddings}
             for r, v in zip(several, vectors)],
            summary.embedded + summary.sentences,
        )


def scope_if_large(store: Store, embedder: Embedder, group_id: str, exact_max: int) -> str:
    """After an ingest with vectors: give the group its own vector index once it is large.

    Returns:
        The group's vector index name, or "" while the group is scored exactly.
    """
    n = int(store.read("ingest/count_group_messages", group_id=group_id)[0]["messages"])
    if n <= exact_max:
        return ""
    ensure_vector_scope(store, group_id, embedder.dimension)
    return scope_index(group_id)
