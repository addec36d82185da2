"""Deferred embedding and per-group vector indexes (the write side of graphmem.scope).

``graphmem ingest --embed later`` stores messages without vectors, labelled
``:PendingEmbedding``; :func:`embed_group` (``graphmem embed --group G``) fills them in batches,
each batch committed on its own: stopping halfway loses nothing and a re-run continues where it
stopped, and a run over a complete group changes nothing. Once a group holds more than
``GRAPHMEM_VECTOR_EXACT_MAX`` messages it is given its own vector index
(:func:`graphmem.scope.ensure_vector_scope`).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from types import SimpleNamespace

from tqdm import tqdm

from graphmem.db import Store
from graphmem.embed import Embedder
from graphmem.errors import no_group
from graphmem.ingest import embedding_text
from graphmem.scope import ensure_vector_scope, scope_index


@dataclass
class EmbedSummary:
    """Counts reported by ``graphmem embed --json``.

    ``embedded``: vectors written by this run; ``messages``: messages in the group;
    ``vector_index``: the group's own vector index ("" while it is scored exactly);
    ``labelled``: messages newly put under that index by this run.
    """

    group_id: str
    embedded: int = 0
    messages: int = 0
    vector_index: str = ""
    labelled: int = 0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def embed_group(
    store: Store, embedder: Embedder, group_id: str, *, batch_size: int = 1000,
    exact_max: int = 500, progress: bool = False,
) -> EmbedSummary:
    """Give every message of a group that lacks a vector its embedding (resumable, idempotent).

    Args:
        store: open store (schema applied).
        embedder: the embedder search will use (same model as any vectors already stored).
        group_id: the group.
        batch_size: messages encoded and written per transaction.
        exact_max: above this many messages the group gets its own vector index.
        progress: progress bar on stderr.

    Returns:
        An :class:`EmbedSummary`; a second run reports ``embedded = 0``.

    Raises:
        NotFoundError: no such group.
        StoreUnavailableError: Neo4j failed (committed batches stay; a re-run resumes).
    """
    group = store.read("groups/get_group", group_id=group_id)
    if not group:
        raise no_group(group_id)
    summary = EmbedSummary(group_id=group_id)
    bar = tqdm(unit="msg", desc=f"embed {group_id}", disable=not progress)

    def encode(rows: list[dict]) -> list[list[float]]:
        texts = [embedding_text(SimpleNamespace(**r)) for r in rows]  # type: ignore[arg-type]
        return [v.tolist() for v in embedder.encode(texts)]

    # Batch N is written while batch N+1 (read with N's ids left out) is encoded in a worker
    # thread, so the database time hides behind the encoder's; every write still commits on
    # its own and only sets vectors that are missing, and only while the message still has the
    # text that was encoded: a message edited meanwhile stays pending, and the next pass (one
    # more read of what is pending) encodes its new text.
    def one_pass(pool: ThreadPoolExecutor) -> int:
        wrote = 0
        skip: list[str] = []
        prev: tuple[list[dict], Future] | None = None
        while True:
            rows = store.read("ingest/pending_messages", group_id=group_id, batch=batch_size, skip=skip)
            nxt = (rows, pool.submit(encode, rows)) if rows else None
            if prev is not None:
                done, fut = prev
                vectors = fut.result()
                written = store.write(
                    "ingest/set_message_vectors", group_id=group_id,
                    rows=[{"id": r["id"], "text": r["text"], "embedding": v} for r, v in zip(done, vectors)],
                )
                wrote += int(written[0]["written"]) if written else 0
                bar.update(len(done))
            if nxt is None:
                return wrote
            prev, skip = nxt, [r["id"] for r in rows]

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-encode") as pool:
        try:
            while True:
                wrote = one_pass(pool)
                summary.embedded += wrote
                if not wrote or not store.read("ingest/pending_messages", group_id=group_id, batch=1, skip=[]):
                    break
        finally:
            bar.close()
    summary.messages = int(store.read("ingest/count_group_messages", group_id=group_id)[0]["messages"])
    if summary.messages > exact_max:
        summary.labelled = ensure_vector_scope(store, group_id, embedder.dimension)
        summary.vector_index = scope_index(group_id)
    return summary


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
