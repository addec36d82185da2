"""Per-process matrices of message vectors: exact person rankings in large groups, and sentences.

System 1's person anchors and System 2's raw fallback rank one person's own messages by cosine
to the query (SpeakerMem-R1 §3.3 Anchor; ``recall/vector_person_messages``). In a group with its
own vector index, Neo4j answers that with an HNSW call asking for hundreds of neighbours of
the whole group to keep a few dozen of the person's; a matrix of the person's vectors in this
process ranks them exactly with one matrix product (costs measured: docs/scale.md).

The same cache keeps, per group, a :class:`SentenceMatrix`: the vectors of the group's turns of
several sentences and of their sentences (``Message.sentence_embeddings``), so the recall pool's
learned tail can rank turns by their best sentence (:func:`sentence_ranking`, one matrix
product instead of a Cypher scan; docs/lab/recall-rounds.md, eighth round).

Freshness: an entry is used only while it matches the group's state that ``ask`` and
``search`` read first anyway (:class:`graphmem.recall.search.GroupState`, no extra round trip):

- ``vector_rev`` (moved by every write that changes or removes a stored vector: edits,
  ``graphmem embed``, forget) must equal the entry's, else the entry is dropped;
- ``version`` (the group's latest write position) above the entry's: the messages written since
  are read by a range seek (``recall/person_vectors_since``) and appended; below it: dropped.
  That holds because every other write moves ``vector_rev``: a late message (placed before
  messages already stored, whose positions then move) marks the group in the same transaction
  (``OrderPlan.inserted`` of :func:`graphmem.verbatim.order.plan_region`, then ``ingest/bump_vector_rev``), and a group created again under an old id starts at a new random
  ``vector_rev`` (``ingest/merge_group``; ``schema apply`` seeds the importer's groups).

A person without a usable entry is ranked by Neo4j as before, and the entry is filled by a
daemon thread for the next query, so no query waits for a load and no process waits for one
at exit. Entries are kept least recently used first
within ``GRAPHMEM_VECTOR_CACHE_MB`` (0: off). Groups without their own index are not cached:
their exact Cypher scan is already cheap.

:class:`GroupCache` is the one per-process cache of recall: these matrices and the groups' BM25
term statistics (:mod:`graphmem.recall.lexical`), both under the group's one freshness key
(``vector_rev``, ``version``). Nothing here is a module global: a long-running process (API, MCP
server, job runner, eval runner) builds one and passes it to every recall; a recall given none
uses a throw-away one (:meth:`GroupCache.throwaway`: correct, starts no background load, slower).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from graphmem.recall.lexical import GroupStats, build_stats, stats_usable
from graphmem.store.db import Store

if TYPE_CHECKING:
    from graphmem.recall.search import GroupState

__all__ = [
    "DEFAULT_VECTOR_CACHE_MB", "GroupCache", "PersonMatrix", "SentenceMatrix", "VectorCache", "person_rankings",
    "sentence_ranking",
]

DEFAULT_VECTOR_CACHE_MB = 512
"""The matrices' budget of a :class:`GroupCache` built without one (``GRAPHMEM_VECTOR_CACHE_MB``'s default)."""

M = TypeVar("M", "PersonMatrix", "SentenceMatrix")

SENTENCES = "\x00sentences"
"""The cache key's second part for a group's :class:`SentenceMatrix` (no person id has an
invisible first character: graphmem.core.limits.check_id)."""


@dataclass(frozen=True)
class _Snapshot:
    """Message vectors of one group as of a group state (the fields both matrices share).

    Attributes:
        ids: message ids, shape (n,).
        vectors: float32, rows L2-normed as stored.
        turn_created: int64 (n,), write positions (ties in a ranking go to the earlier).
        instants: float64 (n,), epoch seconds, NaN where the message has none.
        version / vector_rev: the group state the matrix holds (see the module docstring).
    """

    ids: list[str]
    vectors: np.ndarray
    turn_created: np.ndarray
    instants: np.ndarray
    version: int
    vector_rev: int

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes + self.turn_created.nbytes + self.instants.nbytes) + 80 * len(self.ids)


@dataclass(frozen=True)
class PersonMatrix(_Snapshot):
    """One person's message vectors in one group (``vectors``: (n, d), one row per message)."""

    def ranking(self, vector: np.ndarray, k: int, max_instant: float | None) -> list[tuple[str, float]]:
        """Top-``k`` (id, cosine in [-1, 1]), best first, ties by write position; messages after
        ``max_instant`` (and, then, those without an instant) left out: the order and filter of
        ``recall/vector_person_messages``."""
        if not self.ids or k <= 0:
            return []
        scores = self.vectors @ vector.astype(np.float32)
        keep = np.arange(len(self.ids))
        if max_instant is not None:
            keep = keep[self.instants <= max_instant]  # NaN compares False: left out
        if keep.size == 0:
            return []
        s = scores[keep]
        if keep.size > 4 * k:  # the k best (and their ties) before the exact sort
            cut = np.partition(-s, k - 1)[k - 1]
            sel = -s <= cut
            keep, s = keep[sel], s[sel]
        order = np.lexsort((self.turn_created[keep], -s))[:k]
        return [(self.ids[keep[i]], float(s[i])) for i in order]


@dataclass(frozen=True)
class SentenceMatrix(_Snapshot):
    """The vectors of a group's messages of several sentences, as of a group state: for each
    such message a row of its own vector and one per sentence (``Message.sentence_embeddings``).
    The fields of :class:`_Snapshot` are per message, except ``vectors`` (one row each).

    Attributes:
        starts: int64 (messages,), each message's first row in ``vectors`` (its own vector; its
            sentences follow, up to the next message's first row).
        sessions / persons: per message, its session id and its sender's person id.
    """

    starts: np.ndarray
    sessions: list[str | None]
    persons: list[str | None]

    @property
    def nbytes(self) -> int:
        return super().nbytes + int(self.starts.nbytes) + 80 * len(self.ids)

    def ranking(self, vector: np.ndarray, k: int, max_instant: float | None) -> list[dict[str, Any]]:
        """The top-``k`` messages by their best row's cosine to ``vector`` (max of the message's own
        vector and its sentences', in [-1, 1]), best first, ties by write position; messages after
        ``max_instant`` (and, then, those without one) left out. Rows as :func:`sentence_ranking`:
        id, score, session, person_id."""
        if not self.ids or k <= 0:
            return []
        best = np.maximum.reduceat(self.vectors @ vector.astype(np.float32), self.starts)
        keep = np.arange(len(self.ids))
        if max_instant is not None:
            keep = keep[self.instants <= max_instant]  # NaN compares False: left out
        order = keep[np.lexsort((self.turn_created[keep], -best[keep]))][:k]
        return [{"id": self.ids[i], "score": float(best[i]), "session": self.sessions[i],
                 "person_id": self.persons[i]} for i in order]


def _sentence_matrix(rows: list[dict[str, Any]], version: int, vector_rev: int) -> SentenceMatrix:
    blocks, starts, at = [], [], 0
    for r in rows:
        own = np.asarray(r["embedding"], dtype=np.float32)
        block = np.vstack([own, np.asarray(r["sentence_embeddings"], dtype=np.float32).reshape(-1, own.size)])
        blocks.append(block)
        starts.append(at)
        at += len(block)
    return SentenceMatrix(
        starts=np.array(starts, dtype=np.int64), ids=[r["id"] for r in rows],
        sessions=[r["session"] for r in rows], persons=[r["person_id"] for r in rows],
        vectors=np.vstack(blocks) if blocks else np.zeros((0, 0), dtype=np.float32),
        turn_created=np.array([int(r["turn_created"] or 0) for r in rows], dtype=np.int64),
        instants=np.array([np.nan if r["instant"] is None else float(r["instant"]) for r in rows]),
        version=version, vector_rev=vector_rev,
    )


def _matrix(rows: list[dict[str, Any]], version: int, vector_rev: int, dim: int | None = None) -> PersonMatrix:
    n = len(rows)
    d = len(rows[0]["embedding"]) if rows else (dim or 0)
    vectors = np.array([r["embedding"] for r in rows], dtype=np.float32).reshape(n, d)
    return PersonMatrix(
        ids=[r["id"] for r in rows],
        vectors=vectors,
        turn_created=np.array([int(r["turn_created"] or 0) for r in rows], dtype=np.int64),
        instants=np.array([np.nan if r["instant"] is None else float(r["instant"]) for r in rows]),
        version=version, vector_rev=vector_rev,
    )


class VectorCache:
    """Least-recently-used person and sentence matrices, at most ``max_bytes`` (thread-safe).

    ``background_loads``: whether a ranking that finds no fresh matrix starts loading one in a
    daemon thread (a one-shot process turns it off: it would exit before the load pays off; a
    sentence matrix is then loaded while the query waits). :meth:`load` loads regardless.
    """

    def __init__(self, max_bytes: int, *, background_loads: bool = True) -> None:
        self.max_bytes = max_bytes
        self.background_loads = background_loads
        self._entries: OrderedDict[tuple[str, str], PersonMatrix | SentenceMatrix] = OrderedDict()
        self._loading: set[tuple[str, str]] = set()
        self._oversize: dict[tuple[str, str], int] = {}  # key -> vector_rev of a load too large to keep
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(e.nbytes for e in self._entries.values())

    def load(self, store: Store, state: GroupState, person_id: str) -> PersonMatrix:
        """Read the person's vectors now and keep them (as of ``state``, which was read before)."""
        rows = store.read("recall/person_vectors", group_id=state.group_id, person_id=person_id)
        entry = _matrix(rows, state.version, state.vector_rev)
        self._put((state.group_id, person_id), entry)
        return entry

    def get_many(self, store: Store, state: GroupState, person_ids: list[str]) -> dict[str, PersonMatrix]:
        """The persons' matrices brought up to ``state`` (person id -> matrix); a person left
        out has none usable (its load is started in the background and the caller ranks that
        person through Neo4j). Matrices behind the group's version get the messages written
        since in one read for all of them."""
        out: dict[str, PersonMatrix] = {}
        behind: list[str] = []
        for pid in dict.fromkeys(person_ids):
            key = (state.group_id, pid)
            entry = self._usable(key, state, PersonMatrix)
            if entry is None:
                if not self._too_big(key, state):
                    self._start_load(store, state, pid)
                continue
            out[pid] = entry
            if entry.version < state.version:
                behind.append(pid)
        if behind:
            rows = store.read("recall/person_vectors_since", group_id=state.group_id, person_ids=behind,
                              after=min(out[pid].version for pid in behind))
            for pid in behind:
                entry = out[pid]
                known = set(entry.ids)  # a load may already hold some of them
                mine = [r for r in rows if r["person_id"] == pid and r["id"] not in known
                        and int(r["turn_created"] or 0) > entry.version]
                more = _matrix(mine, state.version, state.vector_rev, entry.vectors.shape[1] if entry.ids else None)
                entry = PersonMatrix(
                    ids=entry.ids + more.ids,
                    # a person with no vector yet was cached as an empty (0 x 0) matrix
                    vectors=np.concatenate([entry.vectors, more.vectors]) if entry.ids else more.vectors,
                    turn_created=np.concatenate([entry.turn_created, more.turn_created]),
                    instants=np.concatenate([entry.instants, more.instants]),
                    version=state.version, vector_rev=state.vector_rev,
                )
                self._put((state.group_id, pid), entry)
                out[pid] = entry
        return out

    def sentences(self, store: Store, state: GroupState, load_max: int) -> SentenceMatrix | None:
        """The group's :class:`SentenceMatrix`, usable as of ``state``: the same ``vector_rev``
        and a version at most the group's. One behind the group's version lacks only the
        messages written since (every other change moves ``vector_rev``) and is used while a
        fresh one loads in the background. Without a usable entry, a group of at most
        ``load_max`` messages (by write position) is loaded now, a larger one in the background
        (None until then); with background loads off, any group is loaded now, and a matrix
        behind the group's version is loaded again now. A matrix larger than the whole cache
        is used by the query that loaded it and then not loaded again (None) until the
        group's ``vector_rev`` moves."""
        key = (state.group_id, SENTENCES)
        entry = self._usable(key, state, SentenceMatrix)
        if entry is None and self._too_big(key, state):
            return None
        if entry is not None:
            if entry.version < state.version:
                if not self.background_loads:  # nothing would bring it up to date
                    return self.load_sentences(store, state)
                self._start_load(store, state, SENTENCES)
            return entry
        if state.version < load_max or not self.background_loads:
            return self.load_sentences(store, state)
        self._start_load(store, state, SENTENCES)
        return None

    def load_sentences(self, store: Store, state: GroupState) -> SentenceMatrix:
        """Read the group's sentence vectors now and keep them (as of ``state``, read before)."""
        rows = store.read("recall/sentence_vectors", group_id=state.group_id)
        entry = _sentence_matrix(rows, state.version, state.vector_rev)
        self._put((state.group_id, SENTENCES), entry)
        return entry

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._oversize.clear()

    def _start_load(self, store: Store, state: GroupState, person_id: str) -> None:
        key = (state.group_id, person_id)
        with self._lock:
            if key in self._loading or not self.background_loads:
                return
            self._loading.add(key)

        def run() -> None:
            try:
                if person_id == SENTENCES:
                    self.load_sentences(store, state)
                else:
                    self.load(store, state, person_id)
            finally:
                with self._lock:
                    self._loading.discard(key)

        threading.Thread(target=run, name="graphmem-vector-load", daemon=True).start()

    def _usable(self, key: tuple[str, str], state: GroupState, kind: type[M]) -> M | None:
        """The entry under ``key`` if it can serve ``state``: the same ``vector_rev`` and a
        version at most the group's (a stale one is dropped: an edit, fill or erasure, or the
        group was loaded again); marked as recently used."""
        with self._lock:
            found = self._entries.get(key)
            if not isinstance(found, kind):
                return None
            if found.vector_rev != state.vector_rev or found.version > state.version:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return found

    def _too_big(self, key: tuple[str, str], state: GroupState) -> bool:
        """Whether the last load of ``key`` did not fit the whole cache at this ``vector_rev``:
        loading it again for every query would cost more than it saves."""
        with self._lock:
            return self._oversize.get(key) == state.vector_rev

    def _put(self, key: tuple[str, str], entry: PersonMatrix | SentenceMatrix) -> None:
        if entry.nbytes > self.max_bytes:
            with self._lock:
                self._oversize[key] = entry.vector_rev
            return
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            total = sum(e.nbytes for e in self._entries.values())
            while total > self.max_bytes and len(self._entries) > 1:
                _, old = self._entries.popitem(last=False)
                total -= old.nbytes


class GroupCache:
    """What recall keeps per group between queries: BM25 term statistics and vector matrices.

    One freshness key per group, read with its state (:class:`graphmem.recall.search.GroupState`):
    ``vector_rev`` (moved by every write that changes or removes text or vectors: edits,
    erasure, late messages, ``graphmem embed``) must equal the entry's, else the entry is
    rebuilt; ``version`` (the latest write position, moved by appends) brings the matrices up
    by a range seek and rebuilds the statistics (:func:`graphmem.recall.lexical.stats_usable`).
    Thread-safe; no I/O in the constructor.

    Args:
        vector_mb: the matrices' budget in MiB (``GRAPHMEM_VECTOR_CACHE_MB``; 0: no matrices,
            persons are ranked by Neo4j and the learned tail has no sentence ranking).
        background_loads: start missing matrices' loads in daemon threads (False: a sentence
            matrix is loaded while the query waits, a person matrix is not loaded at all).
        max_groups: groups whose statistics are kept (the oldest built goes first).
    """

    def __init__(self, vector_mb: int = DEFAULT_VECTOR_CACHE_MB, *, background_loads: bool = True,
                 max_groups: int = 256) -> None:
        self.vectors: VectorCache | None = (
            VectorCache(vector_mb * 1024 * 1024, background_loads=background_loads) if vector_mb > 0 else None
        )
        self.max_groups = max_groups
        self._stats: dict[str, GroupStats] = {}
        self._lock = threading.Lock()

    @classmethod
    def throwaway(cls) -> GroupCache:
        """A cache for one call of a recall given none: no background load (nothing would use it)."""
        return cls(background_loads=False)

    def term_stats(self, store: Store, state: GroupState) -> GroupStats:
        """The group's BM25 term statistics as of ``state`` (built from one read when stale)."""
        with self._lock:
            cached = self._stats.get(state.group_id)
        if cached is not None and stats_usable(cached, state.version, state.vector_rev):
            return cached
        stats = build_stats(store, state.group_id, state.version, state.vector_rev)
        with self._lock:
            if len(self._stats) >= self.max_groups and state.group_id not in self._stats:
                self._stats.pop(next(iter(self._stats)))
            self._stats[state.group_id] = stats
        return stats

    def warm(self, store: Store, state: GroupState, person_ids: list[str]) -> int:
        """Load the given persons' matrices now (no background); returns the bytes the matrices hold.

        For a server that wants its first queries fast, and for tests. Does nothing (returns 0)
        when the matrices are off or the group has no own vector index.
        """
        if self.vectors is None or not state.vector_index:
            return 0
        for pid in person_ids:
            self.vectors.load(store, state, pid)
        return self.vectors.nbytes

    def clear(self, group_id: str | None = None) -> None:
        """Drop what is kept for one group's statistics (None: everything, matrices included)."""
        with self._lock:
            if group_id is None:
                self._stats.clear()
            else:
                self._stats.pop(group_id, None)
        if group_id is None and self.vectors is not None:
            self.vectors.clear()

    def close(self) -> None:
        """Start no more background loads and drop everything kept (the owning Runtime closes).
        Loads already running finish in their daemon threads and are not kept."""
        if self.vectors is not None:
            self.vectors.background_loads = False
        self.clear()


def person_rankings(
    store: Store, state: GroupState, person_ids: list[str], vector: list[float], k: int,
    max_instant: float | None, *, exact_max: int, oversample: float, cache: GroupCache | None = None,
) -> list[dict[str, Any]]:
    """Each person's top-``k`` own messages by cosine to ``vector``: the rows of
    ``recall/vector_person_messages`` (person_id, id, score = cosine in [-1, 1], best first per
    person, in ``person_ids`` order).

    Persons with a fresh matrix here are ranked exactly in this process (their rows carry no
    message fields: :func:`graphmem.recall.search.hydrate` reads them); the others, and every person
    of a group without its own vector index, through that template (``exact_max`` and
    ``oversample`` as there), which also starts their matrices' loads. ``cache``: None ranks
    every person through Neo4j.
    """
    vectors = cache.vectors if cache is not None and state.vector_index else None
    matrices = vectors.get_many(store, state, person_ids) if vectors is not None else {}
    q = np.asarray(vector, dtype=np.float32)
    out: dict[str, list[dict[str, Any]]] = {
        pid: [{"person_id": pid, "id": i, "score": s} for i, s in m.ranking(q, k, max_instant)]
        for pid, m in matrices.items()
    }
    rest = [pid for pid in dict.fromkeys(person_ids) if pid not in matrices]
    if rest:
        for r in store.read(
            "recall/vector_person_messages", group_id=state.group_id, person_ids=rest, vector=vector, k=k,
            max_instant=max_instant, index=state.vector_index or None, exact_max=exact_max, oversample=oversample,
        ):
            out.setdefault(r["person_id"], []).append(r)
    return [r for pid in dict.fromkeys(person_ids) for r in out.get(pid, [])]


def sentence_ranking(store: Store, state: GroupState, vector: list[float], k: int, max_instant: float | None,
                     *, load_max: int, cache: GroupCache | None = None) -> list[dict[str, Any]]:
    """The group's top-``k`` messages of several sentences by their best sentence (max of the
    own cosine and the sentences' cosines to ``vector``, in [-1, 1]): rows id, score, session,
    person_id, best first, ties by write position; as of ``max_instant`` as the other
    rankings. Ranked in this process from :meth:`VectorCache.sentences` (``load_max``: the
    largest group loaded while the query waits); ``[]`` when the cache is off or the matrix is
    still loading. The learned tail's sentence read (graphmem.recall.learned.sentence_order).
    ``cache``: None uses a throw-away one (the matrix is loaded for this call)."""
    vectors = (cache or GroupCache.throwaway()).vectors
    matrix = vectors.sentences(store, state, load_max) if vectors is not None else None
    if matrix is None:
        return []
    return matrix.ranking(np.asarray(vector, dtype=np.float32), k, max_instant)
