"""The System 1 recall pool: what Select ranks (SpeakerMem-R1 §3.3 Anchor, App. A n = 40).

:func:`gather_recall` reads the rankings, each inside the group only: the group's fulltext
candidates re-scored with its own BM25 statistics (:mod:`graphmem.recall.lexical`), the dense
ranking, and the sub-pools of the question's anchors (:mod:`graphmem.recall.anchors`): each named
person's own turns and the turns that mention them, and the turns of named days, months and
sessions. :func:`fuse_recall` fuses them by weighted reciprocal rank and keeps each anchor's best
turns in the pool on its own budget; it touches no store. :class:`RecallConfig` is the one
configuration, the same for every benchmark (measured in docs/query.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from graphmem.store.db import Store
from graphmem.core.embed import Embedder
from graphmem.core.errors import NotFoundError
from graphmem.recall.anchors import Anchors, find_anchors
from graphmem.recall.context_window import context_ranking, context_rows
from graphmem.recall.learned import TAIL_DEPTH, DenseEvidence, learned_order
from graphmem.recall.lexical import group_stats, rescore, smoothed_candidates
from graphmem.core.model import Projection
from graphmem.verbatim.roster import RosterMember
from graphmem.recall.search import (
    FULLTEXT_CANDIDATES,
    GroupState,
    MessageHit,
    fulltext_candidates,
    group_state,
    hydrate,
    message_fields,
    vector_ranking,
)
from graphmem.core.times import instant
from graphmem.recall.cache import person_rankings, sentence_ranking

_MAY_NEED_YEARS = re.compile(r"\d")  # a day named without a year needs the group's years


def _instant_or_inf(ts: str) -> float:
    try:
        return instant(ts)
    except (TypeError, ValueError):
        return float("inf")


@dataclass(frozen=True)
class RecallConfig:
    """How the System 1 recall pool is built (one configuration for every benchmark).

    Attributes:
        fulltext_depth: fulltext candidates (within the group) re-scored with group-local BM25.
        vector_depth: depth of the dense ranking over the group's messages.
        person_depth: depth of each named person's sub-pool rankings.
        person_budget: pool places reserved for each named person's best turns.
        member_budget: places reserved per member in "each / every / who never" questions.
        time_depth: depth of the time-anchor ranking (messages of the named days, months, sessions).
        time_budget: pool places reserved for the time anchor's best turns.
        change_budget: for change questions, the earliest and latest of this many best turns
            are kept in the pool.
        w_fulltext, w_vector, w_person, w_member, w_time: weights of the rankings in the fusion
            (w_member: each member's sub-pool in "each / every" questions).
        local_bm25: re-score fulltext candidates with the group's own statistics (False: Lucene's
            index-wide order, which moves when other groups are loaded).
        fuse_depth: how deep the fulltext and dense rankings enter the fusion (RRF).
        w_issue_vector: weight of Project's issue in the dense query (the query vector is
            unit(q) + w * unit(issue); 0: the question alone).
        w_issue_terms: extra weight of the issue's terms in the group-local BM25 (0: none).
        neighbour_share: share of the larger BM25 score of its NEXT neighbours a turn gains
            (:func:`graphmem.recall.lexical.smooth`; 0: none).
        context_share: dense over a context window: a turn's dense score is its cosine to the
            query plus context_share x the mean cosine of its NEXT neighbours (0: the turn alone).
        context_depth: the context window re-scores the dense top context_depth and their NEXT
            neighbours (no scan of the whole group).
        rrf_k: the reciprocal-rank fusion constant (score = w / (rrf_k + rank)); smaller lets a
            turn near the top of one ranking outrank one in the middle of all of them.
        head_n / tail_rrf_k: with the context window on, the pool's first head_n come from the
            fusion with rrf_k and the context window, the rest from a fusion with tail_rrf_k and
            each turn's own cosine (:func:`fuse_recall`; head_n 0: one fusion). head_n is the
            default S1_TOP_K: the excerpts without a model.
        person_exact_max / person_oversample: a named person with at most person_exact_max
            SOURCE relationships (messages and derived records) is scored exactly over all
            their messages. One with more, in a group with its own vector index, is read from
            that index when that is less work: the group's max(4 k, oversample * k * group
            size / degree) nearest messages, the person's kept (about oversample * k of them).
            The exact scan reads every vector the person sent: 850 ms for seven persons of
            ~14k messages each, under load (docs/scale.md).
        head_rerank: the pool's first head_n places re-ranked by the learned linear score of
            :mod:`graphmem.recall.learned` (False: the fusion's order).
        tail_learned: the pool's last tail_learned places chosen by the learned tail score of
            :func:`graphmem.recall.learned.rerank_tail` among the pool's tail and the deeper
            candidates the reads returned (0: the fusion's; applies with head_rerank).
        sentence_load_max: the largest group (messages, by write position) whose sentence
            matrix (:func:`graphmem.recall.cache.sentence_ranking`) a query loads while it
            waits (about 0.3 s for 650 messages); a larger one loads in the background.
    """

    fulltext_depth: int = FULLTEXT_CANDIDATES
    vector_depth: int = 40
    person_depth: int = 20
    person_budget: int = 2
    member_budget: int = 1
    time_depth: int = 20
    time_budget: int = 2
    change_budget: int = 0
    w_fulltext: float = 1.0
    w_vector: float = 1.0
    w_person: float = 0.5
    w_member: float = 0.0
    w_time: float = 1.0
    local_bm25: bool = True
    fuse_depth: int = 40
    w_issue_vector: float = 1.0
    w_issue_terms: float = 0.5
    neighbour_share: float = 0.5
    context_share: float = 0.5
    context_depth: int = 80
    rrf_k: int = 20
    head_n: int = 10
    tail_rrf_k: int = 60
    person_exact_max: int = 500
    person_oversample: float = 2.0
    head_rerank: bool = True
    tail_learned: int = 10
    sentence_load_max: int = 5000


DEFAULT_RECALL = RecallConfig()


def _weighted_rrf(rankings: list[tuple[float, list[str]]], rrf_k: int) -> dict[str, float]:
    scores: dict[str, float] = {}
    for weight, ids in rankings:
        if weight <= 0:
            continue
        for rank, mid in enumerate(ids, start=1):
            scores[mid] = scores.get(mid, 0.0) + weight / (rrf_k + rank)
    return scores


def _reserve(order: list[str], wanted: list[str], n: int) -> list[str]:
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
    config: RecallConfig = DEFAULT_RECALL,
    state: GroupState | None = None,
) -> RecallInputs:
    """Read the rankings the pool is fused from (store and embedder work only).

    ``state``: the group's state when the caller has just read it (one read per ask, shared by
    its recalls); None reads it here. ``max_instant`` (as-of, epoch seconds): every ranking -
    fulltext candidates, the dense ranking and its context window, person and time sub-pools -
    is built from the group's messages at or before it (one without an instant is left out, as
    ``_instant_or_inf`` does), so the pool holds the best older messages even when every best
    match is later; None: no time limit.

    Raises:
        NotFoundError: the group has no messages.
    """
    state = state or group_state(store, group_id)
    if not state.has_messages:
        raise NotFoundError(f"group {group_id!r} has no messages")
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
    if issue and config.w_issue_vector > 0:
        vec = _unit(vec + config.w_issue_vector * _unit(embedder.encode([issue])[0]))
    qvec = vec.tolist()

    # The dense, person and time reads do not depend on the fulltext read or on each other:
    # they run beside it on the shared read pool (graphmem.store.db.Store.in_background), so the recall
    # waits for the slowest read instead of their sum. The results are the same.
    vector_fields: dict[str, dict[str, Any]] = {}
    dense = store.in_background(
        _dense_ranking, store, embedder, group_id, question, max(config.vector_depth, n), state, qvec, config,
        vector_fields, max_instant,
    )
    sentences = store.in_background(  # the learned tail's sentence ranking, from this process's matrix
        sentence_ranking, store, state, qvec, TAIL_DEPTH, max_instant, load_max=config.sentence_load_max,
    ) if config.head_rerank and config.tail_learned > 0 else None
    persons = list(anchors.persons)
    if not persons and anchors.every_member:
        persons = [m.id for m in roster]
    person_rows = store.in_background(
        person_rankings, store, state, persons, qvec, config.person_depth, max_instant,
        exact_max=config.person_exact_max, oversample=config.person_oversample,
    ) if persons and len(roster) > 1 else None
    window_rows = store.in_background(
        store.read, "recall/window_messages", group_id=group_id, windows=[list(w) for w in anchors.windows],
        sessions=anchors.sessions, vector=qvec, k=config.time_depth, max_instant=max_instant,
    ) if anchors.windows or anchors.sessions else None

    ft_query = f"{question} {issue}" if issue and config.w_issue_terms > 0 else question
    ft, out.docs = fulltext_candidates(
        store, group_id, ft_query, max(config.fulltext_depth, n), state, max_instant=max_instant,
    )
    if config.local_bm25 and out.docs:
        stats = group_stats(store, group_id, state.version)
        ft = rescore(
            question, {i: d["doc"] or "" for i, d in out.docs.items()}, stats,
            issue=issue, issue_weight=config.w_issue_terms,
        )
        if config.neighbour_share > 0 and ft:
            ft = smoothed_candidates(store, group_id, ft, out.docs, config.neighbour_share, config.fulltext_depth)
    if max_instant is not None:  # neighbours that smoothing added may be later
        ft = [(i, s) for i, s in ft if (t := out.docs.get(i, {}).get("instant")) is not None and t <= max_instant]
    out.fulltext = ft[: max(config.fulltext_depth, n)]
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
    qvec: list[float], config: RecallConfig, fields: dict[str, dict[str, Any]],
    max_instant: float | None = None,
) -> tuple[list[str], list[str], DenseEvidence]:
    """The dense ranking's ids, those by each turn's own cosine when the context window is on,
    and the cosines the reads returned (for :mod:`graphmem.recall.learned`).

    Over the context window (when configured) the dense top context_depth and their NEXT
    neighbours are re-scored by :func:`context_ranking`; the second list is then the plain
    order (the pool's tail is fused with it), else it is empty. ``max_instant`` (as-of): both
    the ranking and the context window hold only messages at or before it.
    """
    wide = max(depth, config.context_depth) if config.context_share > 0 else depth
    dense = vector_ranking(
        store, embedder, group_id, question, wide, state, vector=qvec, fields=fields, max_instant=max_instant,
    )
    evidence = DenseEvidence(own=[(i, 2.0 * s - 1.0) for i, s in dense])
    evidence.cosines = dict(evidence.own)
    if not (config.context_share > 0 and dense):
        return [i for i, _ in dense[:depth]], [], evidence
    read = store.read(
        "recall/context_cosines", group_id=group_id, ids=[i for i, _ in dense], vector=qvec, max_instant=max_instant,
    )
    plain = [i for i, _ in dense[:depth]]
    rows = context_rows(read[0]) if read else []
    context = context_ranking(rows, config.context_share)
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
    inputs: RecallInputs, n: int, *, rrf_k: int | None = None, config: RecallConfig = DEFAULT_RECALL
) -> list[tuple[str, float]]:
    """The pool's (id, fused score), in pool order, at most ``n`` (no store access).

    Weighted reciprocal-rank fusion of the fulltext, dense, per-person and time rankings; then
    each anchor's best turns are kept inside the ``n`` on its own budget (person_budget per named
    person, member_budget per member for "each / every" questions, time_budget for the time
    anchor; for change questions the earliest and latest of the change_budget best turns).

    Two fusions of the same rankings when the dense context window is on
    (``inputs.vector_plain`` given) and ``0 < config.head_n < n``: the pool's first head_n
    (the excerpts without a model) come from the sharp one (``rrf_k``, dense over the context
    window), the rest of the pool (what Select sees besides) from the broad one
    (``config.tail_rrf_k``, each turn's own cosine), which keeps more turns on which the
    rankings agree. A hit's score is the one of the fusion that placed it.
    ``rrf_k``: None takes ``config.rrf_k``.
    """
    rrf_k = config.rrf_k if rrf_k is None else rrf_k
    head, wanted = _fuse_once(inputs, n, inputs.vector, rrf_k, config)
    if not inputs.vector_plain or not 0 < config.head_n < n:
        return _rerank(head, inputs, config, wanted, n)
    tail, wanted = _fuse_once(inputs, n, inputs.vector_plain, config.tail_rrf_k, config)
    first = head[: config.head_n]
    taken = {m for m, _ in first}
    merged = dict(first + [(m, s) for m, s in tail if m not in taken])
    pool = [(m, merged.get(m, 0.0)) for m in _reserve(list(merged), wanted, n)]
    return _rerank(pool, inputs, config, wanted, n)


def _rerank(pool: list[tuple[str, float]], inputs: RecallInputs, config: RecallConfig, wanted: list[str],
            n: int) -> list[tuple[str, float]]:
    """The pool with its first head_n places re-ranked and its last tail_learned places chosen
    (:mod:`graphmem.recall.learned`), when configured and the dense reads ran. The anchors'
    ``wanted`` turns stay in the pool; a turn the tail brought in has score 0.0 (no fusion
    placed it)."""
    if not (config.head_rerank and config.head_n > 0 and inputs.dense.own and pool):
        return pool
    ids = learned_order([m for m, _ in pool], inputs, config.head_n, config.tail_learned, n)
    if config.tail_learned > 0:
        ids = _reserve(ids, wanted, n)
    score = dict(pool)
    return [(m, score.get(m, 0.0)) for m in ids]


def _fuse_once(
    inputs: RecallInputs, n: int, vector: list[str], rrf_k: int, config: RecallConfig,
    extra: list[tuple[float, list[str]]] | None = None,
) -> tuple[list[tuple[str, float]], list[str]]:
    """One weighted-RRF fusion with ``vector`` as the dense ranking: (pool, the anchors' reserved ids).

    ``extra``: more (weight, ids) rankings fused beside the others.
    """
    anchors = inputs.anchors
    ft_ids = [i for i, _ in inputs.fulltext]
    rankings: list[tuple[float, list[str]]] = [
        (config.w_fulltext, ft_ids[: config.fuse_depth]), (config.w_vector, vector[: config.fuse_depth]),
        *(extra or []),
    ]
    reserved: list[tuple[int, list[str]]] = []
    per_budget = config.person_budget if anchors.persons else config.member_budget
    for pid, own_vec in inputs.person_vector.items():
        pats = [re.compile(rf"(?<!\w){re.escape(t)}(?!\w)", re.IGNORECASE) for t in inputs.names.get(pid, [])]
        own_ft = [
            i for i in ft_ids
            if inputs.docs.get(i, {}).get("person_id") == pid
            or any(p.search(_own_text(inputs.docs.get(i, {}).get("doc") or "")) for p in pats)
        ][: config.person_depth]
        sub = _fuse_ids([own_ft, own_vec], rrf_k)
        w = config.w_person if anchors.persons else config.w_member
        rankings.append((w, sub))
        if per_budget > 0:
            reserved.append((per_budget, sub))
    if inputs.window:
        window_ids = set(inputs.window)
        sub = _fuse_ids([[i for i in ft_ids if i in window_ids], inputs.window], rrf_k)
        rankings.append((config.w_time, sub))
        if config.time_budget > 0:
            reserved.append((config.time_budget, sub))

    scores = _weighted_rrf(rankings, rrf_k)
    order = sorted(scores, key=lambda m: (-scores[m], m))
    wanted: list[str] = []
    for budget, sub in reserved:
        wanted += sub[:budget]
    if anchors.change and config.change_budget > 0 and order:
        inst: dict[str, float] = {
            i: float(d["instant"]) for i, d in inputs.docs.items() if d.get("instant") is not None
        }
        dated = [i for i in order[: config.change_budget] if i in inst]
        if dated:
            wanted += [min(dated, key=inst.__getitem__), max(dated, key=inst.__getitem__)]
    return [(m, scores.get(m, 0.0)) for m in _reserve(order, wanted, n)], wanted


def recall_pool(
    store: Store,
    embedder: Embedder,
    group_id: str,
    question: str,
    n: int,
    *,
    roster: list[RosterMember] | None = None,
    projection: Projection | None = None,
    rrf_k: int | None = None,
    max_instant: float | None = None,
    config: RecallConfig = DEFAULT_RECALL,
    state: GroupState | None = None,
) -> list[MessageHit]:
    """The System 1 recall pool: ``n`` messages of the group for ``question``, best first.

    :func:`gather_recall` reads the rankings - fulltext candidates re-scored with the group's
    own BM25 statistics (:mod:`graphmem.recall.lexical`), the dense ranking, and the anchors'
    sub-pools (:mod:`graphmem.recall.anchors`): each named person's own turns and the turns that
    mention them, the turns of named days, months and sessions - and :func:`fuse_recall` fuses
    them and keeps each anchor's best turns on its own budget. ``score`` of a hit is its fused
    weighted-RRF score. ``rrf_k``: None takes ``config.rrf_k``.

    Raises:
        NotFoundError: the group has no messages.
    """
    inputs = gather_recall(
        store, embedder, group_id, question, n, roster=roster, projection=projection,
        max_instant=max_instant, config=config, state=state,
    )
    fused = fuse_recall(inputs, n, rrf_k=rrf_k, config=config)
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


def _fuse_ids(lists: list[list[str]], rrf_k: int) -> list[str]:
    scores = _weighted_rrf([(1.0, ids) for ids in lists], rrf_k)
    return sorted(scores, key=lambda m: (-scores[m], m))
