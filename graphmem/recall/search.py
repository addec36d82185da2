"""System 1 retrieval: a recall pool fused from the fulltext and vector indexes, per group.

Fulltext and dense cosine similarity each rank the group's messages. The fulltext ranking of
:func:`search_messages` is group-local: Lucene (english analyzer) only finds the group's
candidates, which are re-scored with BM25 statistics of the group alone
(:mod:`graphmem.recall.lexical`, as ``ask`` does), so loading other groups into the store does not
move a group's results. Reciprocal-rank fusion (Cormack et al., 2009) combines them:
``score(m) = sum_r 1 / (rrf_k + rank_r(m))`` over the rankings that contain ``m`` (ranks from 1).
Results never leave the group: both indexes are queried inside the group only (graphmem.store.scope),
and every query also checks ``group_id``. While some of the group's messages lack a vector
(``ingest --embed later``), hybrid search ranks by fulltext alone and logs a warning
(:func:`search_messages`); :func:`search_group` returns the same hits with that signal
(``vectors_pending``, ``mode_used``, ``warning``), for the CLI's ``--json``, the HTTP API and MCP.

Size (over 500 lines on purpose): System 1's read is one contract that every face calls - the
group's state, both rankings, fusion, hydration, expansion and the entry call with its signal;
splitting it would spread one request's pipelining over modules.
"""

from __future__ import annotations

import logging
import shlex
from urllib.parse import quote
from dataclasses import dataclass
from typing import Any, Literal

from neo4j.exceptions import Neo4jError
from pydantic import BaseModel, Field

from graphmem.core import limits, paging
from graphmem.core.language import mismatch_note
from graphmem.store.db import Store
from graphmem.core.embed import Embedder, EmbeddingSpace
from graphmem.core.errors import InvalidInputError, NotFoundError, no_group
from graphmem.recall.cache import GroupCache
from graphmem.recall.lexical import rescore
from graphmem.recall.recipe import FULLTEXT_CANDIDATES, SEARCH_RRF_K
from graphmem.core.model import StoredMessage
from graphmem.verbatim.roster import RosterMember, labelled_members
from graphmem.store.scope import group_key
from graphmem.verbatim.space import check_space, stored_space
from graphmem.core.text import LUCENE_STOP_WORDS, gram_terms, gram_token, lucene_query, without_grams
from graphmem.core.telemetry import NO_TRACER, Tracer
from graphmem.core.results import (  # moved to the light result models; re-exported
    MessageHit as MessageHit,
    Mode as Mode,
    SearchResult as SearchResult,
)

logger = logging.getLogger(__name__)


def widened_read(store: Store, template: str, k: int, total: int, **params: Any) -> list[dict[str, Any]]:
    """Run a top-k template that reads ``$fetch`` index hits and keeps the group's, widening
    ``$fetch`` (x4 each round, at most ``total``) until ``k`` group hits survive or the index
    has nothing more. Used by System 1 and System 2 reads over a shared index.

    Args:
        store: the graph store.
        template: Cypher template name; it takes ``$fetch`` and ``$k`` and returns one row with
            ``hits`` (list of maps, best first) and ``fetched`` (index hits read).
        k: group hits wanted.
        total: upper bound on ``$fetch`` (the index size).
        **params: the template's other parameters.

    Returns:
        The template's ``hits`` of the last round (at most ``k``, best first).
    """
    fetch = max(4 * k, 100)
    while True:
        row = store.read(template, fetch=fetch, k=k, **params)[0]
        hits = row["hits"] or []
        if len(hits) >= k or row["fetched"] < fetch or fetch >= total:
            return hits
        fetch = min(fetch * 4, total)


@dataclass(frozen=True)
class GroupState:
    """What ranking needs to know about a group (one round trip, ``recall/group_state``).

    ``vector_index`` names the group's own vector index ("" when it has none: exact scoring);
    ``pending`` counts messages stored without a vector (``ingest --embed later``);
    ``total`` counts messages in the whole store; ``version`` is the write position of the
    group's latest message (-1: none); ``vector_rev`` counts the writes that changed or removed
    text or vectors the group already had (edits, erasure, late messages, ``graphmem embed``).
    (``vector_rev``, ``version``) is the group's one freshness key: what a
    :class:`graphmem.recall.cache.GroupCache` keeps (term statistics, vector matrices) is checked
    against it.
    """

    group_id: str
    has_messages: bool
    vector_index: str
    pending: int
    total: int
    version: int = -1
    vector_rev: int = 0
    embed_space: EmbeddingSpace | None = None
    """Which model and backend wrote the group's vectors (None: no record; graphmem.verbatim.space)."""
    message_seq: int = 0
    """The arrival number the group's next message gets (every stored one has a lower ``seq``)."""


def _state(group_id: str, r: dict[str, Any]) -> GroupState:
    return GroupState(
        group_id=group_id, has_messages=bool(r["has_messages"]),
        vector_index=r["vector_index"] or "", pending=int(r["pending"]), total=int(r["total"]),
        version=int(r["version"]), vector_rev=int(r["vector_rev"]), embed_space=stored_space(r),
        message_seq=int(r.get("message_seq") or 0),
    )


def group_state(store: Store, group_id: str) -> GroupState:
    """Read :class:`GroupState` of ``group_id``.

    Raises:
        NotFoundError: no such group.
    """
    rows = store.read("recall/group_state", group_id=group_id)
    if not rows:
        raise no_group(group_id)
    return _state(group_id, rows[0])


@dataclass(frozen=True)
class GroupContext:
    """What ``ask`` reads about a group before it ranks, in one round trip
    (``recall/group_context``): the :class:`GroupState`, the group's name (its id when it has
    none) and its roster without message counts (as ``read_roster(..., counts=False)``).
    """

    state: GroupState
    name: str
    members: list[RosterMember]


def group_context(store: Store, group_id: str) -> GroupContext | None:
    """Read :class:`GroupContext` of ``group_id``; None when there is no such group.

    Always read fresh: the state's freshness key (``vector_rev``, ``version``) is what a
    :class:`graphmem.recall.cache.GroupCache` is checked against, so a write to the group is
    seen by the next ask.
    """
    rows = store.read("recall/group_context", group_id=group_id)
    if not rows:
        return None
    r = rows[0]
    return GroupContext(
        state=_state(group_id, r), name=r["name"], members=labelled_members(r["members"])
    )


def search_terms(text: str) -> str:
    """The Lucene expression of ``text`` over a message's two fulltext fields, "" when empty.

    ``search_text:(<words>)`` holds the words Lucene's english analyzer keeps (``lucene_query``
    of the text outside unspaced-script runs, minus stop words); ``search_grams:(<grams>)`` the
    character bigrams of those runs (:func:`graphmem.core.text.gram_terms`, spelt as
    :func:`graphmem.core.text.gram_token`), either part left out when empty. Both are made of
    letters and digits only (no Lucene operator can pass). "" when nothing is left: such a
    query would match every document of the group with score 0.
    ``"deposit 押金"`` -> ``"search_text:(deposit) search_grams:(g25276x37329)"``.
    """
    words = [w for w in lucene_query(without_grams(text)).split() if w not in LUCENE_STOP_WORDS]
    grams = list(dict.fromkeys(gram_token(g) for g in gram_terms(text)))
    parts = ([f"search_text:({' '.join(words)})"] if words else []) + (
        [f"search_grams:({' '.join(grams)})"] if grams else []
    )
    return " ".join(parts)


def record_terms(terms: str) -> str:
    """The Lucene query of ``derived_content`` for words already made safe (``lucene_query``
    output, e.g. System 2's issue terms): unchanged when they hold no unspaced-script run (the
    words are searched in ``content``, the index's default fields); else the words outside such
    runs and ``content_grams:(<grams>)`` (:func:`search_terms`'s bigrams). "" when empty.
    ``"押金 deposit"`` -> ``"deposit content_grams:(g25276x37329)"``."""
    grams = list(dict.fromkeys(gram_token(g) for g in gram_terms(terms)))
    if not grams:
        return terms
    words = lucene_query(without_grams(terms))
    return " ".join(([words] if words else []) + [f"content_grams:({' '.join(grams)})"])


def fulltext_ranking(
    store: Store, group_id: str, query: str, k: int, state: GroupState | None = None
) -> list[tuple[str, float]]:
    """Top-``k`` (message id, Lucene BM25 score > 0) of the group for ``query``, best first.

    Lucene's scores use the whole index's term statistics (every group's documents), so this
    order can move when other groups are loaded: it finds candidates, and
    :func:`group_fulltext_ranking` ranks them. Only the group's documents are scored (the group
    token is a required clause of the Lucene query, graphmem.store.scope), so the cost follows the
    group's size, not the store's.
    ``state`` is unused here and accepted so both rankings take the same arguments.
    """
    terms = search_terms(query)
    if not terms:
        return []
    rows = store.read(
        "recall/fulltext_messages", group_id=group_id, group_key=group_key(group_id),
        terms=terms, k=k,
    )
    return [(r["id"], float(r["score"])) for r in rows]


def group_fulltext_ranking(
    store: Store, group_id: str, query: str, k: int, state: GroupState | None = None,
    candidates: int = FULLTEXT_CANDIDATES, *, cache: GroupCache | None = None,
) -> list[tuple[str, float]]:
    """Top-``k`` (message id, group-local BM25 score > 0) of the group for ``query``, best first.

    Lucene's top ``max(candidates, k)`` of the group (:func:`fulltext_ranking`) are re-scored by
    :func:`graphmem.recall.lexical.rescore` with the group's own statistics
    (:meth:`graphmem.recall.cache.GroupCache.term_stats`: N, document frequencies, mean length
    of the group's messages only); ties by id. ``cache``: None builds the statistics for this
    call. The order therefore does not depend on other groups in
    the store as long as the group has at most ``candidates`` matching messages (beyond that,
    which matches are candidates still follows Lucene's store-wide statistics). Scores are
    unbounded BM25 sums (k1 = 1.2, b = 0.75), comparable within one query and group only.
    No neighbour smoothing here (``ask``'s recall adds it): every hit contains a query term.
    """
    _, docs = fulltext_candidates(store, group_id, query, max(candidates, k), state)
    return _rescored(store, group_id, query, k, state, docs, cache)


def _rescored(
    store: Store, group_id: str, query: str, k: int, state: GroupState | None, docs: dict[str, dict[str, Any]],
    cache: GroupCache | None,
) -> list[tuple[str, float]]:
    """:func:`group_fulltext_ranking` of candidates already read (``fulltext_candidates``'s docs)."""
    if not docs:
        return []
    stats = (cache or GroupCache.throwaway()).term_stats(store, state or group_state(store, group_id))
    return rescore(query, {i: d["doc"] or "" for i, d in docs.items()}, stats)[:k]


def fulltext_candidates(
    store: Store, group_id: str, query: str, depth: int, state: GroupState | None = None,
    max_instant: float | None = None,
) -> tuple[list[tuple[str, float]], dict[str, dict[str, Any]]]:
    """Lucene's top ``depth`` of the group for ``query`` and their stored documents, in one
    round trip (``recall/fulltext_documents``: the documents come with the hits).

    ``max_instant`` (as-of, epoch seconds): the top ``depth`` among the group's messages at or
    before it (a message without an instant is left out), so later matches take no place;
    Lucene's hits are filtered as they are read (``recall/fulltext_documents_as_of``), reading
    more of them (x4 a round) while fewer than ``depth`` survive and Lucene has more
    (:func:`widened_read`). None: no time limit (one read).

    Returns:
        (ranking, docs): Lucene's (id, BM25 score > 0) best first (as :func:`fulltext_ranking`),
        and id -> row with ``doc`` (search_text), ``person_id``, ``instant``, ``prev_id`` and
        ``next_id`` (the keys of ``cypher/query/message_documents``) for those of them that have
        a sender; both empty when nothing matches. ``state``: only its store size bounds the
        as-of widening (read when None).
    """
    terms = search_terms(query)
    if not terms:
        return [], {}
    if max_instant is None:
        rows = store.read(
            "recall/fulltext_documents", group_id=group_id, group_key=group_key(group_id),
            terms=terms, k=depth,
        )
    else:
        total = (state or group_state(store, group_id)).total
        rows = widened_read(
            store, "recall/fulltext_documents_as_of", depth, max(total, 1), group_id=group_id,
            group_key=group_key(group_id), terms=terms, max_instant=max_instant,
        )
    ft = [(r["id"], float(r["score"])) for r in rows]
    return ft, {r["id"]: r for r in rows if r["person_id"] is not None}


AS_OF_FETCH_MAX = 10_000
"""Most nearest messages an as-of dense read takes from a group's own vector index before it
scores the group's messages up to the instant exactly instead (:func:`vector_ranking`)."""


def vector_ranking(
    store: Store, embedder: Embedder, group_id: str, query: str, k: int,
    state: GroupState | None = None, vector: list[float] | None = None,
    fields: dict[str, dict[str, Any]] | None = None, max_instant: float | None = None,
) -> list[tuple[str, float]]:
    """Top-``k`` (message id, score) of the group for ``query`` (or ``vector`` when given), best first.

    Scores are Neo4j's normalised cosine, (1 + cos) / 2 in [0, 1]. A group without its own
    vector index is scored exactly (every message of the group with a vector); a group with one
    (``GRAPHMEM_VECTOR_EXACT_MAX`` exceeded, graphmem.store.scope) is searched approximately in that
    index; while it is not ONLINE yet, the global index is read with widening, or, when the
    store keeps no global index (``GRAPHMEM_VECTOR_GLOBAL_INDEX=false``), the group is scored
    exactly. Messages without a vector (``--embed later``) are not ranked here.
    ``fields``: when given, the hits' message fields are added to it (id -> row with the
    columns of ``recall/get_messages``, for :func:`hydrate`'s ``known``), where the statement
    returned them (exact and own-index reads).

    ``max_instant`` (as-of, epoch seconds): the top ``k`` among the group's messages at or before
    it (a message without an instant is left out), never later ones. The exact scan filters in
    the statement. An approximate index knows no time: the ``max(4 k, 100)`` nearest are read
    and filtered, x4 more each round while fewer than ``k`` survive, up to
    :data:`AS_OF_FETCH_MAX` (or the store's size); if still fewer than ``k`` survive (the instant
    is early: few messages are that old), the group's messages up to the instant are scored
    exactly. None: no time limit (the reads are the same as without the argument).
    """
    state = state or group_state(store, group_id)
    check_space(group_id, state.embed_space, embedder)  # before encoding: never rank by another model's cosines
    vec = vector if vector is not None else embedder.encode([query])[0].tolist()

    def exact() -> list[tuple[str, float]]:
        rows = store.read(
            "recall/vector_messages_exact", group_id=group_id, vector=vec, k=k, max_instant=max_instant,
        )
        if fields is not None:
            fields.update(message_fields(rows))
        return [(r["id"], float(r["score"])) for r in rows]

    if not state.vector_index:
        return exact()
    try:
        if max_instant is None:
            rows = store.read(
                "recall/vector_messages_scoped", index=state.vector_index, group_id=group_id,
                vector=vec, k=k,
            )
        else:
            rows = widened_read(
                store, "recall/vector_messages_scoped_as_of", k, max(min(state.total, AS_OF_FETCH_MAX), 1),
                index=state.vector_index, group_id=group_id, vector=vec, max_instant=max_instant,
            )
            if len(rows) < k:
                return exact()
        if fields is not None:
            fields.update(message_fields(rows))
        return [(r["id"], float(r["score"])) for r in rows]
    except Neo4jError:  # the group's index is still POPULATING (or was dropped)
        pass
    try:  # the store-wide index, unless the store keeps none (GRAPHMEM_VECTOR_GLOBAL_INDEX=false)
        hits = widened_read(
            store, "recall/vector_messages_index", k, max(state.total, 1), vector=vec,
            group_id=group_id, max_instant=max_instant,
        )
    except Neo4jError:  # the global index is absent as well
        return exact()
    return [(h["id"], float(h["score"])) for h in hits]


def rrf(rankings: dict[str, list[str]], rrf_k: int = SEARCH_RRF_K) -> list[tuple[str, float, dict[str, int]]]:
    """Reciprocal-rank fusion of several rankings of ids.

    Returns:
        (id, fused score, {ranking name: 1-based rank}) sorted by score descending, ties by
        best single rank then id.
    """
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, ids in rankings.items():
        for rank, mid in enumerate(ids, start=1):
            scores[mid] = scores.get(mid, 0.0) + 1.0 / (rrf_k + rank)
            ranks.setdefault(mid, {})[name] = rank
    order = sorted(scores, key=lambda m: (-scores[m], min(ranks[m].values()), m))
    return [(m, scores[m], ranks[m]) for m in order]


def pending_warning(group_id: str, pending: int, mode: str) -> str:
    """The sentence that says a search ran while ``pending`` messages lack a vector ("" when
    none lack one, or in fulltext mode, which needs no vectors)."""
    if not pending or mode == "fulltext":
        return ""
    how = "ranking by fulltext alone" if mode == "hybrid" else "only messages with a vector are ranked"
    return (f"{pending} message(s) of {group_id} have no vector yet; {how} until the group's vectors are "
            f"filled: `graphmem embed --group {shlex.quote(group_id)}`, "
            f"POST /groups/{quote(group_id, safe='')}/embed or Memory.embed()")


def search_group(
    store: Store,
    embedder: Embedder,
    group_id: str,
    query: str,
    *,
    k: int = 10,
    pool_n: int = 40,
    mode: Mode = "hybrid",
    expand: int = 0,
    rrf_k: int = SEARCH_RRF_K,
    cache: GroupCache | None = None,
    tracer: Tracer = NO_TRACER,
    cursor: str | None = None,
    max_text_chars: int | None = paging.LIST_TEXT_CHARS,
    max_bytes: int | None = None,
) -> SearchResult:
    """Rank the group's messages for ``query`` and say how (:class:`SearchResult`), one page at
    a time.

    Arguments, hits and scores as :func:`search_messages`; while messages of the group lack a
    vector, hybrid ranks by fulltext alone (``mode_used`` "fulltext") and ``warning`` says so.
    Nothing is logged: the signal is in the result. ``tracer``: the span ``graphmem.search``
    (attributes ``graphmem.group_id``, ``mode``, ``k``, ``mode_used``, ``hits``; never the query).

    Paging (:mod:`graphmem.core.paging`): the ranking of a search is the fusion of rankings
    ``max(pool_n, k)`` deep (up to 2 x that many hits in hybrid mode); a page holds ``k`` of
    them and, when more follow, ``truncated`` and ``next_cursor``. The cursor keeps the first
    page's depth, ranking mode and arrival number (``seq``) and the sort key (score, best rank, id) of
    the last hit, so the next pages rank the same way and go on after that key: the pages walk
    the ranking once, with no gap and no repeat. Messages written after the first page are left
    out of the later pages' rankings (so they move no one's rank); what a write between pages
    can still move is a fulltext score (the group's term statistics) and, in a group larger
    than the depth, who makes the top of a ranking. Vector mode is exact.
    Expansion neighbours (``expand``) are context around a page's hits, not part of the walk.

    Args:
        cursor: None for the first page, else ``next_cursor`` of the previous page (with the
            same query and mode).
        max_text_chars: hit texts longer than this are cut (``text_truncated``, ``text_chars``);
            None keeps them whole. Default :data:`graphmem.core.paging.LIST_TEXT_CHARS`.
        max_bytes: bound on the result as compact JSON (MCP); the page then holds fewer hits.

    Raises:
        NotFoundError: no such group ("no group 'x'"), or the group has no messages.
        InvalidInputError: empty or blank query (field ``query``), k outside 1..100 (``k``),
            pool_n outside 1..1000 (``pool_n``), expand outside 0..5 (``expand``), unknown
            mode (``mode``), a cursor of another search (``cursor``), ``max_bytes`` out of range.
    """
    if not limits.has_visible(query):
        raise InvalidInputError("query is empty (no visible character)", field="query")
    if mode not in ("hybrid", "fulltext", "vector"):
        raise InvalidInputError("mode must be hybrid, fulltext or vector", field="mode", value=mode)
    limits.check_budget(k, field="k", low=1, high=limits.MAX_S1_K)
    limits.check_budget(pool_n, field="pool_n", low=1, high=limits.MAX_RECALL_N)
    limits.check_budget(expand, field="expand", low=0, high=5)
    paging.check_max_bytes(max_bytes)
    scope = paging.list_scope("search", group_id, query, mode)
    key = paging.decode_cursor(cursor, kind="search", scope=scope, size=6)
    page = None if key is None else _SearchCursor.of(key)
    with tracer.span("graphmem.search", group_id=group_id, mode=mode, k=k) as span:
        result = _search_group(store, embedder, group_id, query, k, pool_n, mode, expand, rrf_k, cache,
                               warm=tracer.enabled, page=page, scope=scope, max_text_chars=max_text_chars,
                               max_bytes=max_bytes)
        span.set_attributes({"graphmem.mode_used": result.mode_used, "graphmem.hits": len(result.hits)})
    return result


@dataclass(frozen=True)
class _SearchCursor:
    """What a search cursor carries: the ranking's depth, the group's next arrival number at the
    first page (messages that arrived later are left out), the mode that ranked, and the last
    hit's key."""

    depth: int
    upto: int
    used: Mode
    score: float
    rank: int
    id: str

    @classmethod
    def of(cls, key: list[Any]) -> _SearchCursor:
        depth, upto, used, score, rank, mid = key
        if (not isinstance(depth, int) or not 1 <= depth <= limits.MAX_RECALL_N or not isinstance(upto, int)
                or used not in ("hybrid", "fulltext", "vector") or not isinstance(score, (int, float))
                or not isinstance(rank, int) or not isinstance(mid, str)):
            raise InvalidInputError("not a cursor of this search list (pass next_cursor back unchanged)",
                                    field="cursor")
        return cls(depth, upto, used, float(score), rank, mid)


def _search_group(store: Store, embedder: Embedder, group_id: str, query: str, k: int, pool_n: int,
                  mode: Mode, expand: int, rrf_k: int, cache: GroupCache | None, *, warm: bool,
                  page: _SearchCursor | None = None, scope: str = "", max_text_chars: int | None = None,
                  max_bytes: int | None = None) -> SearchResult:
    """:func:`search_group` once its arguments are checked. ``warm``: load the embedder here,
    in the caller's thread, so its ``graphmem.embedder.load`` span is a child of the search span
    (the vector query runs in a pool thread, which the span context does not follow)."""
    if warm and mode != "fulltext" and not embedder.loaded:
        embedder.warm()
    depth = page.depth if page is not None else max(pool_n, k)
    # Lucene's candidates (with their documents and the messages' fields) do not depend on the
    # group's state: that read starts first and runs beside the state's read and the vector query
    candidates = store.in_background(
        fulltext_candidates, store, group_id, query, max(FULLTEXT_CANDIDATES, depth)
    ) if mode in ("hybrid", "fulltext") else None
    state = group_state(store, group_id)  # one round trip, shared by both rankings
    if not state.has_messages:
        raise NotFoundError(f"group {group_id!r} has no messages")
    used: Mode = "fulltext" if mode == "hybrid" and state.pending else mode
    if page is not None:
        if page.used not in ((mode, "fulltext") if mode == "hybrid" else (mode,)):
            raise InvalidInputError("not a cursor of this search list (pass next_cursor back unchanged)",
                                    field="cursor")
        used = page.used
    upto = page.upto if page is not None else state.message_seq
    rankings: dict[str, list[tuple[str, float]]] = {}
    known: dict[str, dict[str, Any]] = {}  # id -> the message's fields, as the rankings' reads returned them
    vector_fields: dict[str, dict[str, Any]] = {}
    # the two rankings are independent: the vector query (and its encoding) runs beside the
    # fulltext query, so a hybrid search waits for the slower of the two, not for both
    vector = store.in_background(
        vector_ranking, store, embedder, group_id, query, depth, state, fields=vector_fields
    ) if used in ("hybrid", "vector") else None
    if candidates is not None:
        _, docs = candidates.result()
        if used in ("hybrid", "fulltext"):
            rankings["fulltext"] = _rescored(store, group_id, query, depth, state, docs, cache)
        known.update(docs)
    if vector is not None:
        rankings["vector"] = vector.result()
        known.update(vector_fields)
    if page is not None:  # later pages rank the messages the first page could see, and only them
        ids = list(dict.fromkeys(i for r in rankings.values() for i, _ in r))
        seqs = {r["id"]: int(r["seq"]) for r in store.read("recall/message_seqs", group_id=group_id, ids=ids)}
        rankings = {n: [(i, sc) for i, sc in r if -1 < seqs.get(i, upto) < upto] for n, r in rankings.items()}
    if used == "hybrid":
        fused = rrf({n: [i for i, _ in r] for n, r in rankings.items()}, rrf_k)
    else:
        (name, ranking), = rankings.items()
        fused = [(i, s, {name: r}) for r, (i, s) in enumerate(ranking, start=1)]
    # the sort key: score (rounded: a score read again may differ in its last bits), best rank, id
    order = sorted(((-round(s, 9), min(r.values()), i, s, r) for i, s, r in fused), key=lambda t: t[:3])
    if page is not None:
        after = (-round(page.score, 9), page.rank, page.id)
        order = [t for t in order if t[:3] > after]
    # the page's hits (and one more, to know whether more follow)
    chosen: list[MessageHit] = []
    keys: dict[str, list[Any]] = {}
    at = 0
    while len(chosen) < k + 1 and at < len(order):
        batch = order[at: at + k + 1 - len(chosen)]
        at += len(batch)
        hits = hydrate(store, group_id, [t[2] for t in batch], known)
        for neg, rank, mid, score, ranks in batch:
            h = hits.get(mid)
            if h is None:
                continue
            h.score, h.ranks = score, ranks
            chosen.append(h)
            keys[mid] = [depth, upto, used, -neg, rank, mid]
    anchors = chosen[:k]
    blocks = _blocks(expand_hits(store, group_id, anchors, expand)) if expand and anchors else [[h] for h in anchors]
    for block in blocks:
        for h in block:
            h.text, h.text_truncated, h.text_chars = paging.clip_text(h.text, max_text_chars)
    if len(chosen) > k:
        blocks.append([chosen[k]])  # stands for "more follow"
    envelope = SearchResult(group_id=group_id, query=query, mode=mode, mode_used=used, vectors_pending=state.pending,
                            warning=pending_warning(group_id, state.pending, mode) + " " * 400, hits=[],
                            truncated=True)
    taken, last = paging.take(blocks, limit=k, key=lambda b: keys[_anchor(b).id],
                              budget=paging.budget_of(envelope, max_bytes),
                              size=lambda b: sum(paging.json_size(h) + 1 for h in b))
    out = [h for b in taken for h in b]
    return SearchResult(
        group_id=group_id, query=query, mode=mode, mode_used=used, vectors_pending=state.pending,
        warning="; ".join(w for w in (pending_warning(group_id, state.pending, mode),
                                     mismatch_note(query, [h.text for h in out[:10]])) if w), hits=out,
        truncated=last is not None,
        next_cursor=None if last is None else paging.encode_cursor("search", scope, last),
    )


def _anchor(block: list[MessageHit]) -> MessageHit:
    """The ranked hit of a block (an anchor with its expansion neighbours)."""
    return next(h for h in block if not h.expanded_from)


def _blocks(expanded: list[MessageHit]) -> list[list[MessageHit]]:
    """:func:`expand_hits`' output as one block per anchor: its earlier neighbours, the
    anchor, its later neighbours (each neighbour names its anchor in ``expanded_from``)."""
    blocks: list[list[MessageHit]] = []
    current: list[MessageHit] = []
    anchor = ""
    for h in expanded:
        owner = h.expanded_from or h.id
        if current and owner != anchor:
            blocks.append(current)
            current = []
        anchor = owner
        current.append(h)
    if current:
        blocks.append(current)
    return blocks


def search_messages(
    store: Store,
    embedder: Embedder,
    group_id: str,
    query: str,
    *,
    k: int = 10,
    pool_n: int = 40,
    mode: Mode = "hybrid",
    expand: int = 0,
    rrf_k: int = SEARCH_RRF_K,
    cache: GroupCache | None = None,
) -> list[MessageHit]:
    """Rank the group's messages for ``query``.

    Args:
        store: open store.
        embedder: the embedder the vectors were built with.
        group_id: the group to search; nothing outside it is ever returned.
        query: free text.
        k: number of hits returned (before expansion), 1-100.
        pool_n: depth of each ranking in the recall pool (paper default n = 40), 1-1000.
        mode: "hybrid" (RRF of fulltext and vector), "fulltext" or "vector". The fulltext
            ranking is group-local BM25 over Lucene's candidates
            (:func:`group_fulltext_ranking`), without ``ask``'s neighbour smoothing: a search
            returns hits that match the text, ranked the same whatever else the store holds.
            While messages of the group lack a vector (``ingest --embed later``), hybrid ranks
            by fulltext alone and a warning is logged (:func:`search_group` returns that signal
            instead).
        expand: add up to this many neighbouring turns (NEXT) before and after each hit (0-5).
        rrf_k: RRF constant (:data:`graphmem.recall.recipe.SEARCH_RRF_K`).
        cache: the process's :class:`graphmem.recall.cache.GroupCache` (the group's term
            statistics); None builds them for this call (correct, one more read).

    Returns:
        Up to ``k`` hits best first, each followed by its expansion neighbours (if any), texts
        whole (the first page of :func:`search_group`).
        ``score``: RRF in (0, 2/(rrf_k+1)] (hybrid), group-local BM25 > 0 (fulltext), or
        (1 + cos) / 2 in [0, 1] (vector); ``ranks``: 1-based rank in each ranking used.

    Raises:
        NotFoundError: no such group, or the group has no messages.
        InvalidInputError: empty query, k, pool_n or expand out of range, unknown mode
            (:func:`search_group`).
    """
    result = search_group(store, embedder, group_id, query, k=k, pool_n=pool_n, mode=mode,
                          expand=expand, rrf_k=rrf_k, cache=cache, max_text_chars=None)
    if result.mode == "hybrid" and result.mode_used == "fulltext":
        logger.warning("%s", result.warning)  # the sentence search_group returns (pending_warning)
    return result.hits


def hydrate(
    store: Store, group_id: str, ids: list[str], known: dict[str, dict[str, Any]] | None = None
) -> dict[str, MessageHit]:
    """Full messages by id (id -> hit with score 0).

    ``known``: id -> row with the fields of ``recall/get_messages`` that an earlier read of this
    request already returned (the rankings' statements carry them); only the other ids are read,
    and no round trip is made when every id is known.
    """
    known = known or {}
    out = {i: _hit(known[i]) for i in ids if i in known}
    missing = [i for i in ids if i not in known]
    if missing:
        out.update((r["id"], _hit(r)) for r in store.read("recall/get_messages", group_id=group_id, ids=missing))
    return out


def message_fields(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """id -> row for the rows of a ranking statement that carry a message's fields
    (``recall/get_messages``'s columns) and have a sender in the group (``person_id``)."""
    return {r["id"]: r for r in rows if r.get("person_id") is not None and "text" in r}


def _hit(r: dict[str, Any]) -> MessageHit:
    """A hit (score 0) from a row with the fields of ``recall/get_messages``."""
    return MessageHit(
        id=r["id"], speaker=r["speaker"], session=r["session"], turn=int(r["turn"]),
        ts=r["ts"], text=r["text"], score=0.0, channel=r["channel"] or "",
        person_id=r["person_id"], turn_created=int(r["turn_created"]),
    )


def expand_hits(store: Store, group_id: str, hits: list[MessageHit], window: int) -> list[MessageHit]:
    """Insert up to ``window`` NEXT-neighbours before/after each hit, without duplicates.

    Each anchor keeps its place in the ranking and is surrounded by its neighbours in
    conversation order (earlier turns before it, later after); a message already present is
    not repeated.
    """
    rows = store.read(
        "recall/neighbour_messages", group_id=group_id, ids=[h.id for h in hits], window=window
    )
    by_anchor: dict[str, list[tuple[int, str]]] = {}
    for r in rows:
        by_anchor.setdefault(r["anchor"], []).append((int(r["offset"]), r["id"]))
    seen = {h.id for h in hits}
    # the rows carry the neighbours' fields (no second round trip); one hit per message
    full: dict[str, MessageHit] = {}
    for r in rows:
        if r["person_id"] is not None and r["id"] not in seen and r["id"] not in full:
            full[r["id"]] = _hit(r)
    out: list[MessageHit] = []
    for h in hits:
        block = [(0, h)]
        for offset, mid in sorted(by_anchor.get(h.id, [])):
            if mid in seen or mid not in full:
                continue
            seen.add(mid)
            n = full[mid]
            n.expanded_from = h.id
            block.append((offset, n))
        out.extend(x for _, x in sorted(block, key=lambda t: t[0]))
    return out
