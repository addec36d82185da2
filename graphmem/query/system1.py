"""System 1 path: recall pool -> Select -> Expand -> Sufficiency/ASK -> top-k (App. A, B.3, I.4-I.5).

1. Recall: the pool of ``recall_n`` messages (:func:`recall_pool`): group-local BM25 over the
   group's fulltext candidates, the dense ranking, and the question's person and time anchors
   on their own budgets (Anchor, §3.3), fused by weighted reciprocal rank.
2. Select: the model orders the pool by necessity and may name at most ``expand_anchors``
   anchors (prompt I.4). Candidates it leaves out follow, in fused order.
3. Expand: ``expand_window`` neighbouring turns (NEXT) before and after each anchor
   (:func:`graphmem.recall.search.expand_hits`).
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
from dataclasses import dataclass, field
from typing import Any

from graphmem.store.db import Store
from graphmem.core.embed import Embedder
from graphmem.llm import ChatModel, Usage
from graphmem.llm.timing import Stopwatch
from graphmem.query import prompts
from graphmem.query.project import call_json
from graphmem.recall.cache import GroupCache
from graphmem.recall.pool import recall_pool
from graphmem.recall.recipe import SPEAKERMEM_POOL, RecallRecipe
from graphmem.query.types import Budgets, Excerpt, ExcerptVia, Projection
from graphmem.verbatim.roster import RosterMember
from graphmem.recall.search import GroupState, MessageHit, expand_hits
from graphmem.core.times import instant
from graphmem.core.text import fence, one_line
_MAX_TEXT = 600  # characters of one candidate shown to Select / Sufficiency


@dataclass
class System1Result:
    """Output of :func:`run_system1`.

    Attributes:
        excerpts: final evidence in order.
        pool_ids: the first recall pool (``recall_n`` messages), best first.
        pool: the same pool as excerpts (what showing its first k would quote; the evidence
            token curve of ``graphmem eval``).
        ask_query: the supplementary query that was run, or "".
        usages: model calls made (stages select, sufficiency, rerank).
        timings_s: wall seconds per stage (recall, select, expand, sufficiency, ask, rerank).
        notes: remarks about degraded steps (model failures, unusable output).
    """

    excerpts: list[Excerpt] = field(default_factory=list)
    pool_ids: list[str] = field(default_factory=list)
    pool: list[Excerpt] = field(default_factory=list)
    ask_query: str = ""
    usages: list[Usage] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def candidate_line(n: int, h: MessageHit) -> str:
    """One numbered candidate: ``[n] speaker | session s | turn t | ts: text``, on one line
    (:func:`graphmem.core.text.one_line`: a message cannot write a candidate line of its own)."""
    text = one_line(h.text)
    text = text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."
    channel = f" | channel {one_line(h.channel)}" if h.channel else ""
    return f"[{n}] {one_line(h.speaker)} | session {h.session}{channel} | turn {h.turn} | {h.ts}: {text}"


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
    candidates = "\n".join(fence("CANDIDATES", [candidate_line(i, h) for i, h in enumerate(pool, start=1)]))
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
    chosen = {h.id for h in ranked}  # pool ids are unique: by id, not by comparing every field
    ranked += [h for h in pool if h.id not in chosen]
    return ranked, [pool[n - 1] for n in expand_n], usage, ""


def _sufficiency(
    model: ChatModel, question: str, evidence: list[MessageHit]
) -> tuple[bool, str, Usage | None, str]:
    material = "\n".join(fence("MATERIAL", [candidate_line(i, h) for i, h in enumerate(evidence, start=1)]
                                  or ["(nothing)"]))
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


def _recall(
    store: Store, embedder: Embedder, group_id: str, query: str, n: int,
    max_instant: float | None, roster: list[RosterMember] | None = None,
    projection: Projection | None = None, recipe: RecallRecipe = SPEAKERMEM_POOL,
    state: GroupState | None = None, cache: GroupCache | None = None,
) -> list[MessageHit]:
    return recall_pool(
        store, embedder, group_id, query, n, roster=roster, projection=projection,
        max_instant=max_instant, recipe=recipe, state=state, cache=cache,
    )


def _instant_or_inf(ts: str) -> float:
    try:
        return instant(ts)
    except (TypeError, ValueError):
        return float("inf")


def _excerpt(h: MessageHit, via: ExcerptVia) -> Excerpt:
    return Excerpt(
        id=h.id, speaker=h.speaker, person_id=h.person_id, session=h.session, turn=h.turn,
        ts=h.ts, channel=h.channel, text=h.text, score=h.score, via=via,
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
    max_instant: float | None = None,
    roster: list[RosterMember] | None = None,
    projection: Projection | None = None,
    recall: RecallRecipe = SPEAKERMEM_POOL,
    state: GroupState | None = None,
    cache: GroupCache | None = None,
) -> System1Result:
    """Build the System 1 evidence for ``question`` (see the module docstring).

    Args:
        store / embedder / group_id: where to search.
        question: the user's question (the first recall query).
        budgets: recall_n, top_k, expand_anchors, expand_window, ask_enabled, ask_pool_n.
        model: the answer model, or None (fused order only).
        max_instant: as-of limit (epoch seconds): later messages are left out; None for none.
        roster / projection: the group's members and Project's output (person anchors).
        recall: how the recall pool is built (:class:`graphmem.recall.recipe.RecallRecipe`; its
            fusion stage holds the RRF constants).
        state: the group's state when the caller has read it (``ask``: one read for both
            recalls); None reads it in each recall.
        cache: the process's :class:`graphmem.recall.cache.GroupCache`; None: a throw-away one
            per recall.

    Returns:
        A :class:`System1Result`.

    Raises:
        NotFoundError: the group has no messages.
    """
    res = System1Result()
    t = Stopwatch()
    pool = _recall(
        store, embedder, group_id, question, budgets.recall_n, max_instant, roster, projection, recall,
        state, cache,
    )
    res.timings_s["s1_recall"] = t.elapsed_s
    res.pool_ids = [h.id for h in pool]
    res.pool = [_excerpt(h, "recall") for h in pool]
    origin: dict[str, ExcerptVia] = {h.id: "recall" for h in pool}

    if model is None:
        res.excerpts = [_excerpt(h, "recall") for h in pool[: budgets.top_k]]
        return res

    t = Stopwatch()
    ranked, anchors, usage, error = _select(model, question, pool, "select")
    res.timings_s["select"] = t.elapsed_s
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

    t = Stopwatch()
    evidence = current_evidence()
    res.timings_s["expand"] = t.elapsed_s

    if budgets.ask_enabled and budgets.ask_pool_n > 0:
        t = Stopwatch()
        enough, ask, usage, error = _sufficiency(model, question, evidence)
        res.timings_s["sufficiency"] = t.elapsed_s
        if usage is not None:
            res.usages.append(usage)
        if error:
            res.notes.append(f"sufficiency: {error}; no supplementary query")
        if not enough and ask:
            res.ask_query = ask
            t = Stopwatch()
            try:
                extra = _recall(store, embedder, group_id, ask, budgets.ask_pool_n, max_instant,
                                state=state, cache=cache)
            except ValueError:  # a query with no usable words
                extra = []
            known = {h.id for h in pool}
            new = [h for h in extra if h.id not in known]
            for h in new:
                origin[h.id] = "ask"
            merged = ranked + new
            res.timings_s["ask"] = t.elapsed_s
            t = Stopwatch()
            reranked, more, usage, error = _select(model, question, merged, "rerank")
            res.timings_s["rerank"] = t.elapsed_s
            if usage is not None:
                res.usages.append(usage)
            if error:
                res.notes.append(f"rerank: {error}; merged order used")
            ranked = reranked
            for a in more:
                if len(anchors) < budgets.expand_anchors and a.id not in {x.id for x in anchors}:
                    anchors.append(a)
            t = Stopwatch()
            evidence = current_evidence()
            res.timings_s["expand"] += t.elapsed_s

    res.excerpts = [
        _excerpt(h, "expand" if h.expanded_from else origin.get(h.id, "recall"))
        for h in evidence
    ]
    return res
