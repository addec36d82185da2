"""Which model and backend wrote a group's vectors, and the rule that they are never mixed.

A group records the :class:`~graphmem.core.embed.EmbeddingSpace` of its vectors on its Group
node (``embed_model``, ``embed_backend``, ``embed_dimension``) when vectors are first written
to it (ingest with vectors, ``graphmem embed``, an edit, derive). From then on a process whose
embedder has another space is refused, before it encodes or writes anything, when it would
write vectors to the group or rank the group by vectors: cosines between vectors of two models
mean nothing, and two backends of one model are kept apart too, as the store cannot tell which
is which otherwise. ``graphmem embed --group G --rebuild`` (:func:`rebuild_vectors`) drops the
group's vectors and writes them again in the current space.

A group whose vectors predate the record (written before graphmem 0.2) takes the space of the
first embedder that writes to it: those vectors were plain all-MiniLM-L6-v2's, which both
backends compute to within cosine 0.9999. The default model is now all-MiniLM-L6-v2 with
graphmem's chat update (``graphmem.core.embed.DEFAULT_MODEL``), so such a group should be
rebuilt: its record cannot tell the old vectors from new ones (docs/scale.md).
"""

from __future__ import annotations

import shlex
from typing import Any

from graphmem.core.embed import EmbeddingSpace, space_of
from graphmem.core.errors import EmbeddingSpaceError, no_group
from graphmem.store.db import Store

DROP_BATCH = 5000
"""Messages whose vectors one transaction of a rebuild drops."""


def stored_space(row: dict[str, Any]) -> EmbeddingSpace | None:
    """The space recorded in a row with ``embed_model``, ``embed_backend``, ``embed_dimension``
    (None when the group has no record)."""
    if not row.get("embed_model"):
        return None
    return EmbeddingSpace(str(row["embed_model"]), str(row.get("embed_backend") or ""),
                          int(row.get("embed_dimension") or 0))


def mismatch(group_id: str, stored: EmbeddingSpace, current: EmbeddingSpace) -> EmbeddingSpaceError:
    """The refusal for a group whose vectors are of ``stored`` while this process embeds in
    ``current``; it says how to re-embed or which backend to select."""
    hint = (f" or set GRAPHMEM_EMBED_BACKEND={stored.backend} to use the vectors it has"
            if stored.model == current.model and stored.backend != current.backend else "")
    return EmbeddingSpaceError(
        f"group {group_id!r} holds vectors of {stored.describe()}, but this process embeds with "
        f"{current.describe()}: re-embed the group with `graphmem embed --group {shlex.quote(group_id)} --rebuild`{hint}",
        group_id=group_id, stored=stored.describe(), current=current.describe())


def check_space(group_id: str, stored: EmbeddingSpace | None, embedder: Any) -> None:
    """Refuse to rank ``group_id`` by ``embedder``'s vectors when the group's record differs.

    Raises:
        EmbeddingSpaceError: the spaces differ (:func:`mismatch`).
    """
    current = space_of(embedder)
    if stored is not None and current is not None and stored != current:
        raise mismatch(group_id, stored, current)


def claim_space(store: Store, group_id: str, embedder: Any, *, missing_ok: bool = False) -> None:
    """Before writing vectors to ``group_id``: record ``embedder``'s space when the group has
    none, else check it is the same (one write round trip, atomic under the group's lock).

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
    stored = EmbeddingSpace(str(r["model"]), str(r["backend"]), int(r["dimension"]))
    if stored != current:
        raise mismatch(group_id, stored, current)


def stale_groups(store: Store, embedder: Any) -> list[tuple[str, EmbeddingSpace | None]]:
    """The groups whose vectors ``embedder`` may not use, with their recorded space: those of
    another model, backend or dimension, and those with no record (vectors written before
    graphmem recorded spaces, of plain all-MiniLM-L6-v2 if any). The upgrade step after the
    default model changes: ``graphmem embed --rebuild --all`` rebuilds each.

    Returns:
        ``[(group id, recorded space or None)]`` by group id; empty when every group matches.
    """
    current = space_of(embedder)
    out = []
    for row in store.read("ingest/group_spaces"):
        stored = stored_space(row)
        if stored is None or stored != current:
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
