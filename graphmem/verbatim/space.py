"""Which model and backend wrote a group's vectors, and the rule that they are never mixed.

A group records the :class:`~graphmem.core.embed.EmbeddingSpace` of its vectors on its Group
node (``embed_model``, ``embed_backend``, ``embed_dimension``) when vectors are first written
to it (ingest with vectors, ``graphmem embed``, an edit, derive). From then on a process whose
embedder has another space is refused, before it encodes or writes anything, when it would
write vectors to the group or rank the group by vectors: cosines between vectors of two models
mean nothing, and two backends of one model are kept apart too, as the store cannot tell which
is which otherwise. ``graphmem embed --group G --rebuild`` (:func:`rebuild_vectors`) drops the
group's vectors and writes them again in the current space.

A group whose vectors predate the record (written before graphmem 0.2) holds plain
all-MiniLM-L6-v2 vectors, which both backends computed to within cosine 0.9999: the store
reads it as :data:`UNRECORDED` (``unrecorded_vectors`` of the group reads), which matches that
model with either backend and nothing else. Since the default model is all-MiniLM-L6-v2 with
graphmem's chat update (``graphmem.core.embed.DEFAULT_MODEL``), such a group is refused like any
other of another model, no embedder claims it, and ``graphmem embed --rebuild --all`` rebuilds
it. A group with neither a record nor vectors (``--embed later``) takes the space of the first
embedder that writes vectors to it.
"""

from __future__ import annotations

import shlex
from typing import Any

from graphmem.core.embed import BASE_MODEL, EmbeddingSpace, space_of
from graphmem.core.errors import EmbeddingSpaceError, no_group
from graphmem.store.db import Store

DROP_BATCH = 5000
"""Messages whose vectors one transaction of a rebuild drops."""


UNRECORDED = EmbeddingSpace(BASE_MODEL, "unrecorded", 384)
"""The space of vectors written before graphmem recorded spaces (0.1): plain all-MiniLM-L6-v2,
by a backend nobody wrote down; :func:`same_space` matches it with that model on either backend."""


def same_space(stored: EmbeddingSpace, current: EmbeddingSpace) -> bool:
    """Whether vectors of ``current`` may be ranked and written beside those of ``stored``: the
    same space, or :data:`UNRECORDED` vectors and plain all-MiniLM-L6-v2 on any backend."""
    if stored == UNRECORDED:
        return (current.model, current.dimension) == (UNRECORDED.model, UNRECORDED.dimension)
    return stored == current


def stored_space(row: dict[str, Any]) -> EmbeddingSpace | None:
    """The space recorded in a row with ``embed_model``, ``embed_backend``, ``embed_dimension``
    and ``unrecorded_vectors``: :data:`UNRECORDED` for a group that holds vectors but no record,
    None for a group with neither (no vectors yet)."""
    if not row.get("embed_model"):
        return UNRECORDED if row.get("unrecorded_vectors") else None
    return EmbeddingSpace(str(row["embed_model"]), str(row.get("embed_backend") or ""),
                          int(row.get("embed_dimension") or 0))


def mismatch(group_id: str, stored: EmbeddingSpace, current: EmbeddingSpace) -> EmbeddingSpaceError:
    """The refusal for a group whose vectors are of ``stored`` while this process embeds in
    ``current``; it says how to re-embed or which backend to select."""
    hint = (f" or set GRAPHMEM_EMBED_BACKEND={stored.backend} to use the vectors it has"
            if stored.model == current.model and stored.backend != current.backend and stored != UNRECORDED else "")
    held = (f"vectors written before graphmem recorded their model ({stored.model})" if stored == UNRECORDED
            else f"vectors of {stored.describe()}")
    return EmbeddingSpaceError(
        f"group {group_id!r} holds {held}, but this process embeds with "
        f"{current.describe()}: re-embed the group with `graphmem embed --group {shlex.quote(group_id)} --rebuild`{hint}",
        group_id=group_id, stored=stored.describe(), current=current.describe())


def check_space(group_id: str, stored: EmbeddingSpace | None, embedder: Any) -> None:
    """Refuse to rank ``group_id`` by ``embedder``'s vectors when the group's record differs.

    Raises:
        EmbeddingSpaceError: the spaces differ (:func:`mismatch`).
    """
    current = space_of(embedder)
    if stored is not None and current is not None and not same_space(stored, current):
        raise mismatch(group_id, stored, current)


def claim_space(store: Store, group_id: str, embedder: Any, *, missing_ok: bool = False) -> None:
    """Before writing vectors to ``group_id``: record ``embedder``'s space when the group has
    none, else check it is the same (one write round trip, atomic under the group's lock). A
    group that holds vectors without a record is :data:`UNRECORDED` and is not claimed.

    ``missing_ok``: a group that does not exist yet is left to the load that creates it
    (ingest records the space in the transaction that creates the group).

    Raises:
        EmbeddingSpaceError: the group's vectors are of another space.
        NotFoundError: no such group (unless ``missing_ok``).
    """
    current = space_of(embedder)
    if current is None:
        return
    rows = store.write("ingest/claim_embedding_space", group_id=group_id, model=current.model,
                       backend=current.backend, dimension=current.dimension)
    if not rows:
        if missing_ok:
            return
        raise no_group(group_id)
    r = rows[0]
    stored = stored_space({"embed_model": r["model"], "embed_backend": r["backend"],
                           "embed_dimension": r["dimension"], "unrecorded_vectors": r["unrecorded_vectors"]})
    check_space(group_id, stored, current)


def stale_groups(store: Store, embedder: Any) -> list[tuple[str, EmbeddingSpace]]:
    """The groups whose vectors ``embedder`` may not use, with their space: those of another
    model, backend or dimension, and those whose vectors were written before graphmem recorded
    spaces (:data:`UNRECORDED`, unless ``embedder`` is plain all-MiniLM-L6-v2). A group with no
    vectors is not listed: its first vectors will be ``embedder``'s. The upgrade step after the
    default model changes: ``graphmem embed --rebuild --all`` rebuilds each.

    Returns:
        ``[(group id, its space)]`` by group id; empty when every group matches.
    """
    current = space_of(embedder)
    out: list[tuple[str, EmbeddingSpace]] = []
    for row in store.read("ingest/group_spaces"):
        stored = stored_space(row)
        if stored is not None and (current is None or not same_space(stored, current)):
            out.append((str(row["group_id"]), stored))
    return out


def rebuild_vectors(store: Store, group_id: str, embedder: Any, *, batch_size: int = 256) -> tuple[int, int]:
    """Drop every message vector of the group (the messages become pending, for
    :func:`graphmem.verbatim.vectors.embed_group` to fill), record ``embedder``'s space, and
    re-embed the group's derived records in it.

    Stop it anywhere and run it again: what was dropped is pending, what was re-embedded is
    embedded again (the same vectors).

    Returns:
        (messages whose vectors were dropped, derived records re-embedded).

    Raises:
        NotFoundError: no such group.
    """
    current = space_of(embedder)
    if current is None:
        raise ValueError("rebuild needs an embedder with an EmbeddingSpace")
    dropped = 0
    while True:
        n = int(store.write("ingest/drop_message_vectors", group_id=group_id, limit=DROP_BATCH)[0]["dropped"])
        dropped += n
        if n < DROP_BATCH:
            break
    if not store.write("ingest/set_embedding_space", group_id=group_id, model=current.model,
                       backend=current.backend, dimension=current.dimension):
        raise no_group(group_id)
    derived, after = 0, ""
    while True:
        rows = store.read("ingest/derived_contents", group_id=group_id, after_id=after, limit=batch_size)
        if not rows:
            break
        vecs = embedder.encode([r["content"] for r in rows])
        store.write("ingest/set_derived_vectors", group_id=group_id,
                    rows=[{"id": r["id"], "embedding": v.tolist()} for r, v in zip(rows, vecs)])
        derived += len(rows)
        after = rows[-1]["id"]
    return dropped, derived
