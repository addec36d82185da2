"""Group scoping of the message indexes: retrieval that touches only one group's messages.

A store holds many groups; search must cost what the *group* costs, not what the store costs,
and must never return another group's message.

Fulltext: every message carries ``group_key`` (a decimal digest of its ``group_id``), indexed
as a field of the ``message_text`` fulltext index. A query is
``+group_key:<key>^0 +(search_text:(<words>) search_grams:(<grams>))``: Lucene intersects the group's postings with the
terms', so only the group's documents are scored, and the ``^0`` boost leaves the score equal to
the BM25 of the message document alone. Digits pass the english analyzer unchanged (no stop
word, no stemming), so the key is one exact token. The Cypher still checks ``group_id``
equality, so even a digest collision could not leak a message.

Vectors: a group of at most ``GRAPHMEM_VECTOR_EXACT_MAX`` messages is scored exactly (cosine
against each of its messages, found through the ``group_id`` index). A larger group gets its own
vector index on a per-group label ``GroupScope_<key>`` that only its messages carry
(:func:`ensure_vector_scope`), so the approximate (HNSW) search runs over that group alone.
The label and index names are built from the digest only (digits), never from user text.
Neo4j 5.26 has no filtered vector search; newer releases filter inside the vector index
(docs/scale.md).
"""

from __future__ import annotations

import hashlib
import re

from graphmem.store.db import Store, cypher
from graphmem.store.indexes import wait_online

_DIGITS = re.compile(r"^[0-9]{1,40}$")
SCOPE_LABEL_PREFIX = "GroupScope_"
SCOPE_INDEX_PREFIX = "message_embedding_"


def group_key(group_id: str) -> str:
    """The group's fulltext token: decimal of the first 16 bytes of BLAKE2b(group_id).

    Returns:
        A string of at most 39 digits; equal group ids give equal keys.
    """
    digest = hashlib.blake2b(group_id.encode("utf-8"), digest_size=16).digest()
    return str(int.from_bytes(digest, "big"))


def scope_label(group_id: str) -> str:
    """Label carried by the messages of a group that has its own vector index."""
    return SCOPE_LABEL_PREFIX + group_key(group_id)


def scope_index(group_id: str) -> str:
    """Name of a group's own vector index (``message_embedding_<key>``)."""
    return SCOPE_INDEX_PREFIX + group_key(group_id)


def scoped_fulltext_query(group_id: str, terms: str) -> str:
    """A Lucene query that matches ``terms`` (already escaped) in one group's messages only.

    ``terms`` is a Lucene expression over the message fields ``search_text`` and
    ``search_grams`` (:func:`graphmem.recall.search.search_terms`), as the ``recall/fulltext_*``
    templates build it.
    """
    return f"+group_key:{group_key(group_id)}^0 +({terms})"


def _template_for(name: str, group_id: str) -> str:
    key = group_key(group_id)
    if not _DIGITS.match(key):  # defensive: the key goes into Cypher text as label/index name
        raise ValueError(f"bad group key {key!r}")
    return cypher(name).replace("__KEY__", key)


def vector_scope_state(store: Store, group_id: str) -> str | None:
    """State of the group's own vector index ("ONLINE", "POPULATING", ...), None when absent."""
    rows = store.read("meta/index_state", name=scope_index(group_id))
    return rows[0]["state"] if rows else None


def ensure_vector_scope(
    store: Store, group_id: str, dimensions: int, *, batch_size: int = 10_000,
    wait: bool = True, timeout_s: float = 1800.0,
) -> int:
    """Give a group its own vector index (idempotent; resumable).

    Labels every message of the group with :func:`scope_label` (in batches of ``batch_size``),
    creates the vector index ``message_embedding_<key>`` (cosine, ``dimensions``) on that label
    and, with ``wait``, waits until it is ONLINE.

    Returns:
        Messages newly labelled by this call (0 when the scope was complete).

    Raises:
        StoreUnavailableError: the index FAILED or is not ONLINE within ``timeout_s`` seconds.
    """
    labelled = 0
    label = scope_label(group_id)
    while True:
        rows = store.write("meta/label_group_messages", group_id=group_id, label=label, batch=batch_size)
        n = int(rows[0]["labelled"]) if rows else 0
        labelled += n
        if n < batch_size:
            break
    create = _template_for("meta/create_vector_scope", group_id)
    store.write_tx(lambda tx: tx.run(create, dimensions=dimensions).consume())
    store.write("meta/mark_group", group_id=group_id, index=scope_index(group_id))
    if wait:
        wait_online(store, timeout_s)
    return labelled


def label_scoped_messages(store: Store, group_id: str, ids: list[str]) -> None:
    """Put the scope label on newly written messages of a group that has its own index."""
    if ids:
        store.write("meta/label_messages", group_id=group_id, label=scope_label(group_id), ids=ids)
