"""The System 1 recall pool: what Select ranks (SpeakerMem-R1 §3.3 Anchor, App. A n = 40).

:func:`gather_recall` reads the rankings, each inside the group only: the group's fulltext
candidates re-scored with its own BM25 statistics (:mod:`graphmem.recall.lexical`), the dense
ranking, and the sub-pools of the question's anchors (:mod:`graphmem.recall.anchors`): each named
person's own turns and the turns that mention them, and the turns of named days, months and
sessions. :func:`fuse_recall` fuses them by weighted reciprocal rank, keeps each anchor's best
turns in the pool on its own budget and lets the recipe's reranker (:mod:`graphmem.recall.rerank`)
order the result; it touches no store. How each stage runs is a
:class:`graphmem.recall.recipe.RecallRecipe`; the product's is
:data:`graphmem.recall.recipe.SPEAKERMEM_POOL`, the same for every benchmark (docs/query.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from graphmem.verbatim.space import check_space
from graphmem.store.db import Store
from graphmem.core.embed import Embedder
from graphmem.core.errors import NotFoundError
from graphmem.recall.anchors import Anchors, find_anchors
from graphmem.recall.context_window import context_ranking, context_rows
from graphmem.recall.cache import GroupCache, person_rankings, sentence_ranking
from graphmem.recall.learned import TAIL_DEPTH, DenseEvidence
from graphmem.recall.lexical import rescore, smoothed_candidates
from graphmem.recall.recipe import SPEAKERMEM_POOL, RecallRecipe
from graphmem.recall.rerank import Reranker, reranker_for
from graphmem.core.model import Projection
from graphmem.verbatim.roster import RosterMember
from graphmem.recall.search import (
    GroupState,
    MessageHit,
    fulltext_candidates,
    group_state,
    hydrate,
    message_fields,
    vector_ranking,
)
from graphmem.core.times import instant

_MAY_NEED_YEARS = re.compile(r"\d")  # a day named without a year needs the group's years


def _instant_or_inf(ts: str) -> float:
    try:
        return instant(ts)
    except (TypeError, ValueError):
        return float("inf")


def weighted_rrf(rankings: list[tuple[float, list[str]]], rrf_k: int) -> dict[str, float]:
    """id -> sum over ``rankings`` of weight / (rrf_k + rank) (ranks from 1; weights <= 0 skipped)."""
    scores: dict[str, float] = {}
    for weight, ids in rankings:
        if weight <= 0:
            continue
        for rank, mid in enumerate(ids, start=1):
            scores[mid] = scores.get(mid, 0.0) + weight / (rrf_k + rank)
    return scores


def reserve(order: list[str], wanted: list[str], n: int) -> list[str]:
    """The first ``n`` of ``order`` with every id of ``wanted`` inside (each replaces the tail).

    Kept ids stay in ``order``'s order; a wanted id that ``order`` lacks goes last.
    """
    must = list(dict.fromkeys(wanted))[:n]
    must_set = set(must)
    rest = [m for m in order if m not in must_set][: n - len(must)]
    chosen = must_set | set(rest)
    ranked = [m for m in order if m in chosen]
    return ranked + [m for m in must if m not in set(ranked)]


@dataclass
class RecallInputs:
    """Everything the recall pool is fused from (what :func:`gather_recall` read).

    Attributes:
        anchors: the question's anchors.
        fulltext: (id, score) of the fulltext candidates, best first (group-local BM25 when
            configured, else Lucene's order).
        vector: ids of the dense ranking, best first (over the context window when it is on).
        vector_plain: ids of the dense ranking by each turn's own cosine, when the context
            window is on (the rest of the pool is fused with it), else empty.
        person_vector: person id -> ids of that person's own turns by cosine, best first.
        window: ids of the time anchor's turns by cosine, best first.
        docs: candidate id -> {"doc", "person_id", "instant"}.
        names: person id -> names and aliases (for "turns that mention them").
        fields: id -> the message's fields (the columns of ``recall/get_messages``) for the
            messages the reads above returned them with, so that hydrating the pool reads
            only the others (:func:`graphmem.recall.search.hydrate`).
        dense: the dense reads' cosines (:class:`graphmem.recall.learned.DenseEvidence`).
        senders: id -> the sender's person id, for every message the reads returned.
    """

    anchors: Anchors
    fulltext: list[tuple[str, float]] = field(default_factory=list)
    vector: list[str] = field(default_factory=list)
    vector_plain: list[str] = field(default_factory=list)
    person_vector: dict[str, list[str]] = field(default_factory=dict)
    window: list[str] = field(default_factory=list)
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=dict)
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    dense: DenseEvidence = field(default_factory=DenseEvidence)
    senders: dict[str, str | None] = field(default_factory=dict)


def gather_recall(
    store: Store,
    embedder: Embedder,
    group_id: str,
    question: str,
    n: int,
    *,
    roster: list[RosterMember] | None = None,
    projection: Projection | None = None,
    max_instant: float | None = None,
    recipe: RecallRecipe = SPEAKERMEM_POOL,
    state: GroupState | None = None,
    cache: GroupCache | None = None,
) -> RecallInputs:
    """Read the rankings the pool is fused from (store and embedder work only).

    ``state``: the group's state when the caller has just read it (one read per ask, shared by
    its recalls); None reads it here. ``max_instant`` (as-of, epoch seconds): every ranking -
    fulltext candidates, the dense ranking and its context window, person and time sub-pools -
    is built from the group's messages at or before it (one without an instant is left out, as
    ``_instant_or_inf`` does), so the pool holds the best older messages even when every best
    match is later; None: no time limit. ``cache``: the process's
    :class:`graphmem.recall.cache.GroupCache` (term statistics, vector matrices); None: a
    throw-away one for this call (correct, slower).

    Raises:
        NotFoundError: the group has no messages.
    """
    state = state or group_state(store, group_id)
    if not state.has_messages:
        raise NotFoundError(f"group {group_id!r} has no messages")
    check_space(group_id, state.embed_space, embedder)
    cache = cache or GroupCache.throwaway()
    lex, den, anc = recipe.lexical, recipe.dense, recipe.anchors
    roster = roster or []
    anchors = find_anchors(question, roster, projection)
    if not anchors.windows and _MAY_NEED_YEARS.search(question):
        row = store.read("recall/group_years", group_id=group_id)[0]
        if row["first"] is not None:
            first = datetime.fromtimestamp(row["first"], timezone.utc).year
            last = datetime.fromtimestamp(row["last"], timezone.utc).year
            anchors = find_anchors(question, roster, projection, years=list(range(first, last + 1)))
    out = RecallInputs(anchors=anchors)

    issue = (projection.issue or "").strip() if projection is not None else ""
    if issue and issue.casefold() == question.strip().casefold():
        issue = ""
    # the dense query: the question's vector plus the issue's (cos(m, q) + w cos(m, issue) is
    # the cosine to their sum, up to a constant factor, so one vector query ranks by both)
    vec = _unit(embedder.encode([question])[0])
    if issue and den.issue_vector > 0:
        vec = _unit(vec + den.issue_vector * _unit(embedder.encode([issue])[0]))
    qvec = vec.tolist()

    # The dense, person and time reads do not depend on the fulltext read or on each other:
    # they run beside it on the shared read pool (graphmem.store.db.Store.in_background), so the recall
    # waits for the slowest read instead of their sum. The results are the same.
    vector_fields: dict[str, dict[str, Any]] = {}
    dense = store.in_background(
        _dense_ranking, store, embedder, group_id, question, max(den.depth, n), state, qvec, recipe,
        vector_fields, max_instant,
    )
    sentences = store.in_background(  # the learned tail's sentence ranking, from this process's matrix
        sentence_ranking, store, state, qvec, TAIL_DEPTH, max_instant, load_max=recipe.learned.sentence_load_max,
        cache=cache,
    ) if recipe.learned.tail_places > 0 or (recipe.learned.head and recipe.learned.head_sentences) else None
    persons = list(anchors.persons)
    if not persons and anchors.every_member:
        persons = [m.id for m in roster]
    person_rows = store.in_background(
        person_rankings, store, state, persons, qvec, anc.person_depth, max_instant,
        exact_max=anc.person_exact_max, oversample=anc.person_oversample, cache=cache,
    ) if persons and len(roster) > 1 else None
    window_rows = store.in_background(
        store.read, "recall/window_messages", group_id=group_id, windows=[list(w) for w in anchors.windows],
        sessions=anchors.sessions, vector=qvec, k=anc.time_depth, max_instant=max_instant,
    ) if anchors.windows or anchors.sessions else None

    ft_query = f"{question} {issue}" if issue and lex.issue_terms > 0 else question
    ft, out.docs = fulltext_candidates(
        store, group_id, ft_query, max(lex.depth, n), state, max_instant=max_instant,
    )
    if lex.local_bm25 and out.docs:
        stats = cache.term_stats(store, state)
        ft = rescore(
            question, {i: d["doc"] or "" for i, d in out.docs.items()}, stats,
            issue=issue, issue_weight=lex.issue_terms,
        )
        if lex.neighbour_share > 0 and ft:
            ft = smoothed_candidates(store, group_id, ft, out.docs, lex.neighbour_share, lex.depth)
    if max_instant is not None:  # neighbours that smoothing added may be later
        ft = [(i, s) for i, s in ft if (t := out.docs.get(i, {}).get("instant")) is not None and t <= max_instant]
    out.fulltext = ft[: max(lex.depth, n)]
    out.fields.update(out.docs)
    out.vector, out.vector_plain, out.dense = dense.result()
    out.fields.update(vector_fields)
    out.senders = {i: f.get("person_id") for i, f in out.fields.items()} | out.dense.senders
    sent_rows = sentences.result() if sentences is not None else []
    out.dense.sentences = [(r["id"], float(r["score"])) for r in sent_rows]
    out.senders.update({r["id"]: r["person_id"] for r in sent_rows})
    out.dense.sessions = ({i: f.get("session") for i, f in out.fields.items()} | out.dense.sessions
                          | {r["id"]: r["session"] for r in sent_rows})

    if person_rows is not None:
        rows = person_rows.result()
        out.fields.update(message_fields(rows))
        for r in rows:
            out.person_vector.setdefault(r["person_id"], []).append(r["id"])
            out.senders[r["id"]] = r["person_id"]
        for pid in persons:
            out.person_vector.setdefault(pid, [])
        out.names = {m.id: [t for t in {m.name, *m.aliases} if len(t) >= 2] for m in roster}
    if window_rows is not None:
        for r in window_rows.result():
            out.window.append(r["id"])
            out.senders[r["id"]] = r["person_id"]
    return out


def _dense_ranking(
    store: Store, embedder: Embedder, group_id: str, question: str, depth: int, state: GroupState,
    qvec: list[float], recipe: RecallRecipe, fields: dict[str, dict[str, Any]],
    max_instant: float | None = None,
) -> tuple[list[str], list[str], DenseEvidence]:
    """The dense ranking's ids, those by each turn's own cosine when the context window is on,
    and the cosines the reads returned (for :mod:`graphmem.recall.learned`).

    Over the context window (when configured) the dense top context_depth and their NEXT
    neighbours are re-scored by :func:`context_ranking`; the second list is then the plain
    order (the pool's tail is fused with it), else it is empty. ``max_instant`` (as-of): both
    the ranking and the context window hold only messages at or before it.
    """
    den = recipe.dense
    wide = max(depth, den.context_depth) if den.context_window else depth
    dense = vector_ranking(
        store, embedder, group_id, question, wide, state, vector=qvec, fields=fields, max_instant=max_instant,
    )
    evidence = DenseEvidence(own=[(i, 2.0 * s - 1.0) for i, s in dense])
    evidence.cosines = dict(evidence.own)
    if not (den.context_window and dense):
        return [i for i, _ in dense[:depth]], [], evidence
    read = store.read(
        "recall/context_cosines", group_id=group_id, ids=[i for i, _ in dense], vector=qvec, max_instant=max_instant,
    )
    plain = [i for i, _ in dense[:depth]]
    rows = context_rows(read[0]) if read else []
    context = context_ranking(rows, den.context_share)
    if read:
        evidence.context = context
        evidence.cosines.update({i: 2.0 * float(c) - 1.0 for i, c in read[0]["cosines"]})
        evidence.senders = {i: p for i, p in read[0]["senders"]}
        evidence.sessions = {i: s for i, s in read[0]["sessions"]}
        for mid, nb in read[0]["edges"]:
            if nb is not None:
                evidence.neighbours.setdefault(mid, []).append(nb)
    return [i for i, _ in context[:depth]], plain, evidence


def fuse_recall(
    inputs: RecallInputs, n: int, *, recipe: RecallRecipe = SPEAKERMEM_POOL, reranker: Reranker | None = None,
) -> list[tuple[str, float]]:
    """The pool's (id, fused score), in pool order, at most ``n`` (no store access).

    Weighted reciprocal-rank fusion of the fulltext, dense, per-person and time rankings; then
    each anchor's best turns are kept inside the ``n`` on its own budget (person_budget per named
    person, member_budget per member for "each / every" questions, time_budget for the time
    anchor; for change questions the earliest and latest of the change_budget best turns).

    Two fusions of the same rankings when the dense context window is on
    (``inputs.vector_plain`` given) and ``0 < recipe.fusion.head_n < n``: the pool's first head_n
    (the excerpts without a model) come from the sharp one (``fusion.rrf_k``, dense over the
    context window), the rest of the pool (what Select sees besides) from the broad one
    (``fusion.tail_rrf_k``, each turn's own cosine), which keeps more turns on which the
    rankings agree. A hit's score is the one of the fusion that placed it. Then ``reranker``
    (None: the recipe's, :func:`graphmem.recall.rerank.reranker_for`) orders the pool.
    """
    fusion = recipe.fusion
    head, wanted = fuse_rankings(inputs, n, inputs.vector, fusion.rrf_k, recipe)
    if not inputs.vector_plain or fusion.tail_rrf_k is None or not 0 < fusion.head_n < n:
        return rerank_pool(head, inputs, wanted, n, reranker or reranker_for(recipe))
    tail, wanted = fuse_rankings(inputs, n, inputs.vector_plain, fusion.tail_rrf_k, recipe)
    first = head[: fusion.head_n]
    taken = {m for m, _ in first}
    merged = dict(first + [(m, s) for m, s in tail if m not in taken])
    pool = [(m, merged.get(m, 0.0)) for m in reserve(list(merged), wanted, n)]
    return rerank_pool(pool, inputs, wanted, n, reranker or reranker_for(recipe))


def rerank_pool(pool: list[tuple[str, float]], inputs: RecallInputs, wanted: list[str], n: int,
                reranker: Reranker) -> list[tuple[str, float]]:
    """The fused pool ordered by ``reranker`` when the dense reads ran (else unchanged). The
    anchors' ``wanted`` turns stay in the pool when the reranker may change its members; a turn
    the reranker brought in has score 0.0 (no fusion placed it)."""
    if not (inputs.dense.own and pool):
        return pool
    ids = reranker.rank([m for m, _ in pool], inputs, n)
    if reranker.changes_members:
        ids = reserve(ids, wanted, n)
    score = dict(pool)
    return [(m, score.get(m, 0.0)) for m in ids]


def fuse_rankings(
    inputs: RecallInputs, n: int, vector: list[str], rrf_k: int, recipe: RecallRecipe = SPEAKERMEM_POOL,
) -> tuple[list[tuple[str, float]], list[str]]:
    """One weighted-RRF fusion with ``vector`` as the dense ranking: (pool of at most ``n`` (id,
    score), the anchors' reserved ids), the reserved ids kept inside the ``n``."""
    anchors = inputs.anchors
    fusion, anc = recipe.fusion, recipe.anchors
    ft_ids = [i for i, _ in inputs.fulltext]
    rankings: list[tuple[float, list[str]]] = [
        (fusion.w_fulltext, ft_ids[: fusion.depth]), (fusion.w_vector, vector[: fusion.depth]),
    ]
    reserved: list[tuple[int, list[str]]] = []
    per_budget = anc.person_budget if anchors.persons else anc.member_budget
    for pid, own_vec in inputs.person_vector.items():
        pats = [re.compile(rf"(?<!\w){re.escape(t)}(?!\w)", re.IGNORECASE) for t in inputs.names.get(pid, [])]
        own_ft = [
            i for i in ft_ids
            if inputs.docs.get(i, {}).get("person_id") == pid
            or any(p.search(_own_text(inputs.docs.get(i, {}).get("doc") or "")) for p in pats)
        ][: anc.person_depth]
        sub = fuse_ids([own_ft, own_vec], rrf_k)
        w = fusion.w_person if anchors.persons else fusion.w_member
        rankings.append((w, sub))
        if per_budget > 0:
            reserved.append((per_budget, sub))
    if inputs.window:
        window_ids = set(inputs.window)
        sub = fuse_ids([[i for i in ft_ids if i in window_ids], inputs.window], rrf_k)
        rankings.append((fusion.w_time, sub))
        if anc.time_budget > 0:
            reserved.append((anc.time_budget, sub))

    scores = weighted_rrf(rankings, rrf_k)
    order = sorted(scores, key=lambda m: (-scores[m], m))
    wanted: list[str] = []
    for budget, sub in reserved:
        wanted += sub[:budget]
    if anchors.change and anc.change_budget > 0 and order:
        inst: dict[str, float] = {
            i: float(d["instant"]) for i, d in inputs.docs.items() if d.get("instant") is not None
        }
        dated = [i for i in order[: anc.change_budget] if i in inst]
        if dated:
            wanted += [min(dated, key=inst.__getitem__), max(dated, key=inst.__getitem__)]
    return [(m, scores.get(m, 0.0)) for m in reserve(order, wanted, n)], wanted


def recall_pool(
    store: Store,
    embedder: Embedder,
    group_id: str,
    question: str,
    n: int,
    *,
    roster: list[RosterMember] | None = None,
    projection: Projection | None = None,
    max_instant: float | None = None,
    recipe: RecallRecipe = SPEAKERMEM_POOL,
    state: GroupState | None = None,
    cache: GroupCache | None = None,
) -> list[MessageHit]:
    """The System 1 recall pool: ``n`` messages of the group for ``question``, best first.

    :func:`gather_recall` reads the rankings - fulltext candidates re-scored with the group's
    own BM25 statistics (:mod:`graphmem.recall.lexical`), the dense ranking, and the anchors'
    sub-pools (:mod:`graphmem.recall.anchors`): each named person's own turns and the turns that
    mention them, the turns of named days, months and sessions - and :func:`fuse_recall` fuses
    them, keeps each anchor's best turns on its own budget and applies the recipe's reranker.
    ``score`` of a hit is its fused weighted-RRF score (0.0 for a turn the learned tail brought
    in). ``cache``: as :func:`gather_recall`.

    Raises:
        NotFoundError: the group has no messages.
    """
    inputs = gather_recall(
        store, embedder, group_id, question, n, roster=roster, projection=projection,
        max_instant=max_instant, recipe=recipe, state=state, cache=cache,
    )
    fused = fuse_recall(inputs, n, recipe=recipe)
    hits = hydrate(store, group_id, [i for i, _ in fused], inputs.fields)
    out: list[MessageHit] = []
    for mid, score in fused:
        if mid in hits:
            h = hits[mid]
            h.score = score
            out.append(h)
    if max_instant is not None:
        out = [h for h in out if _instant_or_inf(h.ts) <= max_instant]
    return out


def _unit(v: Any) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    norm = float(np.linalg.norm(a))
    return a / norm if norm > 0 else a


def _own_text(doc: str) -> str:
    """The message's own line of its fulltext document (the previous turn dropped)."""
    return doc.rsplit("\n", 1)[-1]


def fuse_ids(lists: list[list[str]], rrf_k: int) -> list[str]:
    """Ids of ``lists`` by unweighted RRF (ties by id)."""
    scores = weighted_rrf([(1.0, ids) for ids in lists], rrf_k)
    return sorted(scores, key=lambda m: (-scores[m], m))
