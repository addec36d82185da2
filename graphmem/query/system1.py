"""System 1 path: recall pool -> Select -> Expand -> Sufficiency/ASK -> top-k (App. A, B.3, I.4-I.5).

1. Recall: the pool of ``recall_n`` messages (:func:`recall_pool`): group-local BM25 over the
   group's fulltext candidates, the dense ranking, and the question's person and time anchors
   on their own budgets (Anchor, §3.3), fused by weighted reciprocal rank.
2. Select: the model orders the pool by necessity and may name at most ``expand_anchors``
   anchors (prompt I.4). Candidates it leaves out follow, in fused order.
3. Expand: ``expand_window`` neighbouring turns (NEXT) before and after each anchor
   (:func:`graphmem.search.expand_hits`).
4. Sufficiency/ASK: the model judges the evidence that would be passed on; when something is
   missing it gives one terse query, ``ask_pool_n`` more candidates are recalled for it, merged
   (duplicates dropped) and the merged pool is ranked again by Select. At most once; off when
   ``ask_enabled`` is false.
5. top-k: the ranked list is cut to ``top_k``; expansion neighbours are placed next to their
   anchor and do not use the top-k budget (at most ``expand_anchors * 2 * expand_window`` more).

Without a model: the pool's order, cut to ``top_k``; no Select, Expand or ASK.
In as-of mode, messages written after the as-of instant are dropped from every pool.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from graphmem.db import Store
from graphmem.embed import Embedder
from graphmem.errors import NotFoundError
from graphmem.llm import ChatModel, Usage
from graphmem.query import prompts
from graphmem.query.anchors import Anchors, find_anchors
from graphmem.query.local_bm25 import group_stats, rescore
from graphmem.query.project import call_json
from graphmem.query.types import Budgets, Excerpt, Projection
from graphmem.roster import RosterMember
from graphmem.search import MessageHit, expand_hits, fulltext_ranking, group_state, hydrate, vector_ranking
from graphmem.times import instant

_MAY_NEED_YEARS = re.compile(r"\d")  # a day named without a year needs the group's years
_MAX_TEXT = 600  # characters of one candidate shown to Select / Sufficiency


@dataclass
class System1Result:
    """Output of :func:`run_system1`.

    Attributes:
        excerpts: final evidence in order.
        pool_ids: the first recall pool (``recall_n`` messages), best first.
        ask_query: the supplementary query that was run, or "".
        usages: model calls made (stages select, sufficiency, rerank).
        timings_s: wall seconds per stage (recall, select, expand, sufficiency, ask, rerank).
        notes: remarks about degraded steps (model failures, unusable output).
    """

    excerpts: list[Excerpt] = field(default_factory=list)
    pool_ids: list[str] = field(default_factory=list)
    ask_query: str = ""
    usages: list[Usage] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def candidate_line(n: int, h: MessageHit) -> str:
    """One numbered candidate: ``[n] speaker | session s | turn t | ts: text``."""
    text = h.text if len(h.text) <= _MAX_TEXT else h.text[: _MAX_TEXT - 3] + "..."
    channel = f" | channel {h.channel}" if h.channel else ""
    return f"[{n}] {h.speaker} | session {h.session}{channel} | turn {h.turn} | {h.ts}: {text}"


def _numbers(value: Any, limit: int) -> list[int]:
    """1-based candidate numbers from a model list (ints, "3", "[3]"), in order, deduplicated."""
    if not isinstance(value, list):
        return []
    out: list[int] = []
    for v in value:
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            n = int(v)
        elif isinstance(v, str) and (m := re.search(r"\d+", v)):
            n = int(m.group())
        else:
            continue
        if 1 <= n <= limit and n not in out:
            out.append(n)
    return out


def _select(
    model: ChatModel, question: str, pool: list[MessageHit], stage: str
) -> tuple[list[MessageHit], list[MessageHit], Usage | None, str]:
    """Run Select over ``pool``; return (ranked, anchors, usage, error)."""
    candidates = "\n".join(candidate_line(i, h) for i, h in enumerate(pool, start=1))
    messages = [
        {"role": "system", "content": prompts.SELECT_SYSTEM},
        {"role": "user", "content": prompts.SELECT_USER.format(question=question, candidates=candidates)},
    ]
    value, usage, error = call_json(model, messages, stage=stage, max_tokens=400)
    if error or not isinstance(value, dict):
        return list(pool), [], usage, error or "select output is not a JSON object"
    ranked_n = _numbers(value.get("ranked"), len(pool))
    expand_n = _numbers(value.get("expand"), len(pool))
    ranked = [pool[n - 1] for n in ranked_n]
    ranked += [h for h in pool if h not in ranked]
    return ranked, [pool[n - 1] for n in expand_n], usage, ""


def _sufficiency(
    model: ChatModel, question: str, evidence: list[MessageHit]
) -> tuple[bool, str, Usage | None, str]:
    material = "\n".join(candidate_line(i, h) for i, h in enumerate(evidence, start=1)) or "(nothing)"
    messages = [
        {"role": "system", "content": prompts.SUFFICIENCY_SYSTEM},
        {"role": "user", "content": prompts.SUFFICIENCY_USER.format(question=question, material=material)},
    ]
    value, usage, error = call_json(model, messages, stage="sufficiency", max_tokens=100)
    if error or not isinstance(value, dict):
        return True, "", usage, error or "sufficiency output is not a JSON object"
    enough = value.get("enough")
    if isinstance(enough, str):
        enough = enough.strip().lower() not in ("false", "no", "0")
    ask = value.get("ask")
    ask = " ".join(ask.split())[:200] if isinstance(ask, str) else ""
    return bool(enough) if enough is not None else not ask, ask, usage, ""


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
    """

    fulltext_depth: int = 200
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
        vector: ids of the dense ranking, best first.
        person_vector: person id -> ids of that person's own turns by cosine, best first.
        window: ids of the time anchor's turns by cosine, best first.
        docs: candidate id -> {"doc", "person_id", "instant"}.
        names: person id -> names and aliases (for "turns that mention them").
    """

    anchors: Anchors
    fulltext: list[tuple[str, float]] = field(default_factory=list)
    vector: list[str] = field(default_factory=list)
    person_vector: dict[str, list[str]] = field(default_factory=dict)
    window: list[str] = field(default_factory=list)
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=dict)


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
) -> RecallInputs:
    """Read the rankings the pool is fused from (store and embedder work only).

    Raises:
        NotFoundError: the group has no messages.
    """
    state = group_state(store, group_id)
    if not state.has_messages:
        raise NotFoundError(f"group {group_id!r} has no messages")
    roster = roster or []
    anchors = find_anchors(question, roster, projection)
    if not anchors.windows and _MAY_NEED_YEARS.search(question):
        row = store.read("query/group_years", group_id=group_id)[0]
        if row["first"] is not None:
            first = datetime.fromtimestamp(row["first"], timezone.utc).year
            last = datetime.fromtimestamp(row["last"], timezone.utc).year
            anchors = find_anchors(question, roster, projection, years=list(range(first, last + 1)))
    out = RecallInputs(anchors=anchors)

    ft = fulltext_ranking(store, group_id, question, max(config.fulltext_depth, n), state)
    if ft:
        rows = store.read("query/message_documents", group_id=group_id, ids=[i for i, _ in ft])
        out.docs = {r["id"]: r for r in rows}
    if config.local_bm25 and out.docs:
        stats = group_stats(store, group_id)
        ft = rescore(question, {i: d["doc"] or "" for i, d in out.docs.items()}, stats)
    if max_instant is not None:
        ft = [(i, s) for i, s in ft if (out.docs.get(i, {}).get("instant") or float("inf")) <= max_instant]
    out.fulltext = ft
    out.vector = [
        i for i, _ in vector_ranking(store, embedder, group_id, question, max(config.vector_depth, n), state)
    ]

    persons = list(anchors.persons)
    if not persons and anchors.every_member:
        persons = [m.id for m in roster]
    if persons and len(roster) > 1:
        vec = embedder.encode([question])[0].tolist()
        rows = store.read(
            "query/vector_person_messages", group_id=group_id, person_ids=persons, vector=vec,
            k=config.person_depth, max_instant=max_instant,
        )
        for r in rows:
            out.person_vector.setdefault(r["person_id"], []).append(r["id"])
        for pid in persons:
            out.person_vector.setdefault(pid, [])
        out.names = {m.id: [t for t in {m.name, *m.aliases} if len(t) >= 2] for m in roster}
    if anchors.windows or anchors.sessions:
        vec = embedder.encode([question])[0].tolist()
        rows = store.read(
            "query/window_messages", group_id=group_id, windows=[list(w) for w in anchors.windows],
            sessions=anchors.sessions, vector=vec, k=config.time_depth, max_instant=max_instant,
        )
        out.window = [r["id"] for r in rows]
    return out


def fuse_recall(inputs: RecallInputs, n: int, *, rrf_k: int = 60, config: RecallConfig = DEFAULT_RECALL) -> list[tuple[str, float]]:
    """The pool's (id, fused score), best first, at most ``n`` (no store access).

    Weighted reciprocal-rank fusion of the fulltext, dense, per-person and time rankings; then
    each anchor's best turns are kept inside the ``n`` on its own budget (person_budget per named
    person, member_budget per member for "each / every" questions, time_budget for the time
    anchor; for change questions the earliest and latest of the change_budget best turns).
    """
    anchors = inputs.anchors
    ft_ids = [i for i, _ in inputs.fulltext]
    rankings: list[tuple[float, list[str]]] = [
        (config.w_fulltext, ft_ids[: config.fuse_depth]), (config.w_vector, inputs.vector[: config.fuse_depth])
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
        inst = {i: d.get("instant") for i, d in inputs.docs.items()}
        dated = [i for i in order[: config.change_budget] if inst.get(i) is not None]
        if dated:
            wanted += [min(dated, key=lambda i: inst[i]), max(dated, key=lambda i: inst[i])]
    return [(m, scores.get(m, 0.0)) for m in _reserve(order, wanted, n)]


def recall_pool(
    store: Store,
    embedder: Embedder,
    group_id: str,
    question: str,
    n: int,
    *,
    roster: list[RosterMember] | None = None,
    projection: Projection | None = None,
    rrf_k: int = 60,
    max_instant: float | None = None,
    config: RecallConfig = DEFAULT_RECALL,
) -> list[MessageHit]:
    """The System 1 recall pool: ``n`` messages of the group for ``question``, best first.

    :func:`gather_recall` reads the rankings - fulltext candidates re-scored with the group's
    own BM25 statistics (:mod:`graphmem.query.local_bm25`), the dense ranking, and the anchors'
    sub-pools (:mod:`graphmem.query.anchors`): each named person's own turns and the turns that
    mention them, the turns of named days, months and sessions - and :func:`fuse_recall` fuses
    them and keeps each anchor's best turns on its own budget. ``score`` of a hit is its fused
    weighted-RRF score.

    Raises:
        NotFoundError: the group has no messages.
    """
    inputs = gather_recall(
        store, embedder, group_id, question, n, roster=roster, projection=projection,
        max_instant=max_instant, config=config,
    )
    fused = fuse_recall(inputs, n, rrf_k=rrf_k, config=config)
    hits = hydrate(store, group_id, [i for i, _ in fused])
    out: list[MessageHit] = []
    for mid, score in fused:
        if mid in hits:
            h = hits[mid]
            h.score = score
            out.append(h)
    if max_instant is not None:
        out = [h for h in out if _instant_or_inf(h.ts) <= max_instant]
    return out


def _own_text(doc: str) -> str:
    """The message's own line of its fulltext document (the previous turn dropped)."""
    return doc.rsplit("\n", 1)[-1]


def _fuse_ids(lists: list[list[str]], rrf_k: int) -> list[str]:
    scores = _weighted_rrf([(1.0, ids) for ids in lists], rrf_k)
    return sorted(scores, key=lambda m: (-scores[m], m))


def _recall(
    store: Store, embedder: Embedder, group_id: str, query: str, n: int, rrf_k: int,
    max_instant: float | None, roster: list[RosterMember] | None = None,
    projection: Projection | None = None, config: RecallConfig = DEFAULT_RECALL,
) -> list[MessageHit]:
    return recall_pool(
        store, embedder, group_id, query, n, roster=roster, projection=projection, rrf_k=rrf_k,
        max_instant=max_instant, config=config,
    )


def _instant_or_inf(ts: str) -> float:
    try:
        return instant(ts)
    except (TypeError, ValueError):
        return float("inf")


def _excerpt(h: MessageHit, via: str) -> Excerpt:
    return Excerpt(
        id=h.id, speaker=h.speaker, person_id=h.person_id, session=h.session, turn=h.turn,
        ts=h.ts, channel=h.channel, text=h.text, score=h.score, via=via,  # type: ignore[arg-type]
        expanded_from=h.expanded_from,
    )


def _with_neighbours(
    store: Store, group_id: str, ranked: list[MessageHit], anchors: list[MessageHit], window: int,
    max_instant: float | None,
) -> list[MessageHit]:
    """``ranked`` with each anchor's neighbours placed around it (neighbours not yet present)."""
    if not anchors or window < 1:
        return list(ranked)
    anchor_ids = {a.id for a in anchors}
    expanded = expand_hits(store, group_id, [a for a in ranked if a.id in anchor_ids], window)
    present = {h.id for h in ranked}
    blocks: dict[str, list[MessageHit]] = {}
    for h in expanded:  # per anchor: [neighbours before, anchor, neighbours after]
        if h.id in anchor_ids:
            blocks.setdefault(h.id, []).append(h)
        elif h.id not in present and (max_instant is None or _instant_or_inf(h.ts) <= max_instant):
            blocks.setdefault(h.expanded_from, []).append(h)
    out: list[MessageHit] = []
    for h in ranked:
        if h.id in blocks:
            out.extend(blocks[h.id])  # expand_hits keeps conversation order around the anchor
        else:
            out.append(h)
    return out


def run_system1(
    store: Store,
    embedder: Embedder,
    group_id: str,
    question: str,
    budgets: Budgets,
    model: ChatModel | None,
    *,
    rrf_k: int = 60,
    max_instant: float | None = None,
    roster: list[RosterMember] | None = None,
    projection: Projection | None = None,
    recall: RecallConfig = DEFAULT_RECALL,
) -> System1Result:
    """Build the System 1 evidence for ``question`` (see the module docstring).

    Args:
        store / embedder / group_id: where to search.
        question: the user's question (the first recall query).
        budgets: recall_n, top_k, expand_anchors, expand_window, ask_enabled, ask_pool_n.
        model: the answer model, or None (fused order only).
        rrf_k: reciprocal-rank fusion constant.
        max_instant: as-of limit (epoch seconds): later messages are left out; None for none.
        roster / projection: the group's members and Project's output (person anchors).
        recall: how the recall pool is built (:class:`RecallConfig`).

    Returns:
        A :class:`System1Result`.

    Raises:
        NotFoundError: the group has no messages.
    """
    res = System1Result()
    t = time.perf_counter()
    pool = _recall(
        store, embedder, group_id, question, budgets.recall_n, rrf_k, max_instant, roster, projection, recall
    )
    res.timings_s["s1_recall"] = time.perf_counter() - t
    res.pool_ids = [h.id for h in pool]
    origin = {h.id: "recall" for h in pool}

    if model is None:
        res.excerpts = [_excerpt(h, "recall") for h in pool[: budgets.top_k]]
        return res

    t = time.perf_counter()
    ranked, anchors, usage, error = _select(model, question, pool, "select")
    res.timings_s["select"] = time.perf_counter() - t
    if usage is not None:
        res.usages.append(usage)
    if error:
        res.notes.append(f"select: {error}; fused order used")
    anchors = anchors[: budgets.expand_anchors]

    def current_evidence() -> list[MessageHit]:
        top = ranked[: budgets.top_k]
        top_ids = {h.id for h in top}
        kept = [a for a in anchors if a.id in top_ids]
        return _with_neighbours(store, group_id, top, kept, budgets.expand_window, max_instant)

    t = time.perf_counter()
    evidence = current_evidence()
    res.timings_s["expand"] = time.perf_counter() - t

    if budgets.ask_enabled and budgets.ask_pool_n > 0:
        t = time.perf_counter()
        enough, ask, usage, error = _sufficiency(model, question, evidence)
        res.timings_s["sufficiency"] = time.perf_counter() - t
        if usage is not None:
            res.usages.append(usage)
        if error:
            res.notes.append(f"sufficiency: {error}; no supplementary query")
        if not enough and ask:
            res.ask_query = ask
            t = time.perf_counter()
            try:
                extra = _recall(store, embedder, group_id, ask, budgets.ask_pool_n, rrf_k, max_instant)
            except ValueError:  # a query with no usable words
                extra = []
            known = {h.id for h in pool}
            new = [h for h in extra if h.id not in known]
            for h in new:
                origin[h.id] = "ask"
            merged = ranked + new
            res.timings_s["ask"] = time.perf_counter() - t
            t = time.perf_counter()
            reranked, more, usage, error = _select(model, question, merged, "rerank")
            res.timings_s["rerank"] = time.perf_counter() - t
            if usage is not None:
                res.usages.append(usage)
            if error:
                res.notes.append(f"rerank: {error}; merged order used")
            ranked = reranked
            for a in more:
                if len(anchors) < budgets.expand_anchors and a.id not in {x.id for x in anchors}:
                    anchors.append(a)
            t = time.perf_counter()
            evidence = current_evidence()
            res.timings_s["expand"] += time.perf_counter() - t

    res.excerpts = [
        _excerpt(h, "expand" if h.expanded_from else origin.get(h.id, "recall"))
        for h in evidence
    ]
    return res
