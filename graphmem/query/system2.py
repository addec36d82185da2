"""System 2 path: row expansion and per-row retrieval of derived records (§3.3 eq. 5-6, B.3).

1. Separate: the projection's rows become roster rows (``ALL`` -> every member, ``GROUP`` -> the
   Group node, names -> Persons) through ``query/expand_rows``, or from the roster ``ask`` has
   already read (:class:`graphmem.recall.search.GroupContext`).
2. Candidates: every record chain owned by a row (``query/owner_chains``) and, for person rows,
   every chain the person is the SOURCE of but does not own (``query/source_chains``). A chain is
   found through its head; its versions are the nodes reaching the head along SUPERSEDED_BY.
3. Match (eq. 5, ``match(r, q) = 1``): a chain matches the issue when one of its versions in
   view shares a term with the issue in the ``derived_content`` fulltext index (BM25 > 0) or has
   cosine similarity >= ``min_cosine`` with the issue's embedding. An issue with no topic word
   (:func:`graphmem.query.project.issue_focus`: only question/function words and words such as
   change, happen, opinion, view, think, decided, decision, stance) puts no constraint on the
   rows: every chain matches. Chains whose source-owner pair is a view of the question ("A's
   view of B") always match and come first in B's row.
4. Rank within the row: for an issue with a topic word, reciprocal-rank fusion of the fulltext
   and cosine orders among that row's matching chains only (exact: the owner's records are
   scored, not a global top list); for an issue without one, the record types the issue asks
   about first (decision words -> ``decision``, opinion/view/think words -> ``stance``), then, in
   ``full`` mode (a question about change), chains that changed (more than one version in view),
   then the most recent head first. Keep ``s2_k`` owner chains, then ``source_k`` source chains not already
   shown (they do not use the owner budget).
5. Temporal mode: ``head`` shows the head; ``full`` adds the earlier versions, oldest first, with
   times; as-of shows the version that held at the instant (the last version whose ts <= as-of;
   chains that did not exist yet are left out) and, in full mode, the versions before it.
6. A person row with no owned match falls back to the person's own messages that match the
   issue (``fallback_k``, same match rule, raw fulltext + exact cosine; without a topic word,
   the closest by cosine); with none, the row stays
   as an explicit empty row (status ``"none"``). Source cells are kept beside the status.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from graphmem.store.db import Store
from graphmem.core.embed import Embedder
from graphmem.llm.timing import Stopwatch
from graphmem.core.times import instant
from graphmem.core.model import ALL, GROUP
from graphmem.query.project import issue_focus
from graphmem.recall.recipe import SPEAKERMEM_POOL
from graphmem.query.types import Budgets, Cell, CellVia, Excerpt, Projection, RecordVersion, Row
from graphmem.store.scope import group_key
from graphmem.recall.search import (
    GroupContext, GroupState, group_state, hydrate, message_fields, record_terms, rrf, search_terms, widened_read,
)
from graphmem.core.text import STOP_WORDS, lucene_query
from graphmem.recall.cache import GroupCache, person_rankings


@dataclass
class System2Result:
    """Output of :func:`run_system2`: the rows, and wall seconds per sub-step."""

    rows: list[Row] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)


def ablate_rows(rows: list[Row], ablate: str) -> list[Row]:
    """Rows with one view removed (SpeakerMem-R1 §5.3 ablations).

    ``"s2-group"`` keeps only person rows and person-owned cells (no Interaction/Insight);
    ``"s2-person"`` keeps only the GROUP row and group-owned cells (no Core/Profile). A row
    left without an owner cell falls back to its raw excerpts, else becomes an explicit
    empty row.
    """
    keep_kind = "person" if ablate == "s2-group" else "group"
    out: list[Row] = []
    for row in rows:
        if row.kind != keep_kind:
            continue
        cells = [c for c in row.cells if c.owner_kind == keep_kind]
        status = row.status
        if row.status == "records" and not any(c.via == "owner" for c in cells):
            status = "raw" if row.raw else "none"
        out.append(row.model_copy(update={"cells": cells, "status": status}))
    return out


@dataclass
class _Chain:
    head_id: str
    owner_kind: str
    owner_id: str
    owner_name: str
    versions: list[dict[str, Any]]  # versions in view (as-of cut applied), oldest first
    row_id: str = ""  # for source chains: the source person's row
    cosine: float = 0.0
    fulltext: float = 0.0


def issue_terms(issue: str) -> str:
    """Lucene query of the issue's content words (question and function words dropped)."""
    words = [w for w in lucene_query(issue).split() if w not in STOP_WORDS]
    return " ".join(words)


def _instant(ts: Any) -> float:
    try:
        return instant(str(ts))
    except (TypeError, ValueError):
        return float("-inf")  # an undated version counts as old


def _version_instant(v: dict[str, Any]) -> float:
    at = v.get("instant")
    return float(at) if isinstance(at, (int, float)) else _instant(v.get("ts"))


def _in_view(versions: list[dict[str, Any]], max_instant: float | None) -> list[dict[str, Any]]:
    """Versions in view: all of them, or (as-of) those written at or before the instant.

    Versions are oldest first and dated by their ts, so the last one kept is the state that held
    at the instant: its successor, if any, was written later.
    """
    if max_instant is None:
        return versions
    return [v for v in versions if _version_instant(v) <= max_instant]


def _version(v: dict[str, Any]) -> RecordVersion:
    return RecordVersion(
        id=v["id"], content=v.get("content") or "", layer=v.get("layer") or "",
        utype=v.get("utype") or "", ts=str(v.get("ts") or ""), session=str(v.get("session") or ""),
        turn_created=int(v.get("turn_created") or 0), confidence=v.get("confidence"),
        state=v.get("state") or "", source_kind=v.get("source_kind") or "",
        source_id=v.get("source_id") or "", source_name=v.get("source_name") or "",
        from_ids=list(v.get("from_ids") or []),
    )


def _chains(rows: list[dict[str, Any]], max_instant: float | None) -> list[_Chain]:
    out = []
    for r in rows:
        versions = _in_view(r["versions"], max_instant)
        if not versions:
            continue  # the chain did not exist yet at the as-of instant
        out.append(
            _Chain(
                head_id=r["head_id"], owner_kind=r["owner_kind"], owner_id=r["owner_id"],
                owner_name=r["owner_name"], versions=versions, row_id=r.get("row_id", ""),
                cosine=max(float(v.get("cosine") or 0.0) for v in versions),
            )
        )
    return out


def _rank(chains: list[_Chain], rrf_k: int) -> list[tuple[_Chain, float]]:
    by_cos = sorted(chains, key=lambda c: (-c.cosine, c.head_id))
    by_ft = sorted((c for c in chains if c.fulltext > 0), key=lambda c: (-c.fulltext, c.head_id))
    fused = rrf({"vector": [c.head_id for c in by_cos], "fulltext": [c.head_id for c in by_ft]}, rrf_k)
    by_id = {c.head_id: c for c in chains}
    return [(by_id[i], score) for i, score, _ in fused]


def _rank_unconstrained(
    chains: list[_Chain], focus: list[str], tense: str
) -> list[tuple[_Chain, float]]:
    """No topic: the asked-about record types first (in ``focus`` order), then (``full`` mode)
    chains with history, then newest head first.

    The score is the reciprocal rank (1.0, 0.5, ...), so it stays comparable in shape to RRF.
    """
    def key(c: _Chain) -> tuple[int, bool, float, str]:
        head = c.versions[-1]
        utype = head.get("utype") or ""
        changed = tense == "full" and len(c.versions) > 1
        return (focus.index(utype) if utype in focus else len(focus), not changed,
                -_version_instant(head), c.head_id)

    return [(c, 1.0 / (i + 1)) for i, c in enumerate(sorted(chains, key=key))]


def _cell(c: _Chain, tense: str, via: CellVia, score: float) -> Cell:
    versions = [_version(v) for v in c.versions]
    return Cell(
        head_id=c.head_id, owner_kind=c.owner_kind, owner_id=c.owner_id, owner_name=c.owner_name,
        current=versions[-1], history=versions[:-1] if tense == "full" else [],
        via=via, score=score,
    )


def _expand_rows(
    store: Store, group_id: str, want_all: bool, want_group: bool, named: list[str],
    context: GroupContext | None,
) -> list[dict[str, Any]]:
    """The projection's rows as roster rows (kind, id, name): ``query/expand_rows``, or the same
    rows from the roster and name in ``context`` when the caller has read them."""
    if context is None:
        return store.read(
            "query/expand_rows", group_id=group_id, all=want_all, group=want_group, person_ids=named
        )
    wanted = set(named)
    rows: list[dict[str, Any]] = [
        {"kind": "person", "id": m.id, "name": m.name}
        for m in context.members if want_all or m.id in wanted
    ]
    if want_group:
        rows.append({"kind": "group", "id": group_id, "name": context.name})
    return rows


def run_system2(
    store: Store,
    embedder: Embedder,
    group_id: str,
    projection: Projection,
    budgets: Budgets,
    *,
    max_instant: float | None = None,
    rrf_k: int = 60,
    max_candidates: int = 2000,
    members: Collection[str] | None = None,
    context: GroupContext | None = None,
    cache: GroupCache | None = None,
) -> System2Result:
    """Build the memory slice for a projection (see the module docstring).

    Args:
        store / embedder / group_id: where to read.
        projection: Project's output (rows, issue, tense, views).
        budgets: s2_k, source_k, fallback_k, min_cosine.
        max_instant: as-of instant (epoch seconds), or None for the current state.
        rrf_k: reciprocal-rank fusion constant.
        max_candidates: cap on fulltext hits read per query.
        members: the Person ids that may become rows (an as-of answer passes those who had
            spoken by the instant); None = every member of the group.
        context: the group's state and roster when the caller has read them (``ask``); the
            rows and the raw fallback then take them from here instead of reading them again.
        cache: the process's :class:`graphmem.recall.cache.GroupCache` (the raw fallback's
            person matrices); None ranks persons through Neo4j.

    Returns:
        A :class:`System2Result` with one row per roster row asked about, in the projection's
        order (ALL members by name; GROUP last).
    """
    res = System2Result()
    t0 = Stopwatch()
    named = [r for r in projection.rows if r not in (ALL, GROUP)]
    want_all, want_group = ALL in projection.rows, GROUP in projection.rows
    roster_rows = _expand_rows(store, group_id, want_all, want_group, named, context)
    if members is not None:
        allowed = set(members)
        roster_rows = [r for r in roster_rows if r["kind"] != "person" or r["id"] in allowed]
    order = {pid: i for i, pid in enumerate(named)}
    roster_rows.sort(key=lambda r: (r["kind"] == "group", order.get(r["id"], len(order)), r["name"], r["id"]))
    person_ids = [r["id"] for r in roster_rows if r["kind"] == "person"]
    res.timings_s["s2_rows"] = t0.elapsed_s
    if not roster_rows:
        return res

    t = Stopwatch()
    vector = embedder.encode([projection.issue])[0].tolist()
    res.timings_s["s2_embed"] = t.elapsed_s

    t = Stopwatch()
    owned = _chains(
        store.read(
            "query/owner_chains", group_id=group_id, person_ids=person_ids,
            include_group=want_group, vector=vector, max_instant=max_instant,
        ),
        max_instant,
    )
    sourced = (
        _chains(
            store.read("query/source_chains", group_id=group_id, person_ids=person_ids, vector=vector,
                       max_instant=max_instant),
            max_instant,
        )
        if budgets.source_k > 0 and person_ids
        else []
    )
    res.timings_s["s2_chains"] = t.elapsed_s

    t = Stopwatch()
    has_topic, focus = issue_focus(projection.issue)
    terms = issue_terms(projection.issue) if has_topic else ""  # "": no issue constraint
    if terms and (owned or sourced):
        ids = sorted({v["id"] for c in owned + sourced for v in c.versions})
        total = int(store.read("query/count_derived", group_id=group_id)[0]["total_count"])
        hits = widened_read(
            store, "query/fulltext_derived", min(len(ids), max_candidates), max(total, 1),
            query=record_terms(terms), group_id=group_id, ids=ids,
        )
        score = {h["id"]: float(h["score"]) for h in hits}
        for c in owned + sourced:
            c.fulltext = max((score.get(v["id"], 0.0) for v in c.versions), default=0.0)
    res.timings_s["s2_fulltext"] = t.elapsed_s

    view_pairs = {(v.source_id, v.owner_id) for v in projection.views}

    def preferred(c: _Chain) -> bool:
        return c.owner_kind == "person" and any(
            (v["source_id"], c.owner_id) in view_pairs for v in c.versions
        )

    def matches(c: _Chain) -> bool:
        return not terms or c.fulltext > 0 or c.cosine >= budgets.min_cosine or preferred(c)

    def rank(chains: list[_Chain]) -> list[tuple[_Chain, float]]:
        return _rank(chains, rrf_k) if terms else _rank_unconstrained(chains, focus, projection.tense)

    t = Stopwatch()
    shown: set[str] = set()
    rows: list[Row] = []
    for r in roster_rows:
        mine = [c for c in owned if c.owner_kind == r["kind"] and c.owner_id == r["id"] and matches(c)]
        ranked = rank(mine)
        ranked.sort(key=lambda cs: not preferred(cs[0]))  # stable: views first, order kept
        cells = [_cell(c, projection.tense, "owner", s) for c, s in ranked[: budgets.s2_k]]
        shown.update(c.head_id for c in cells)
        rows.append(Row(kind=r["kind"], id=r["id"], name=r["name"] or r["id"],
                        status="records" if cells else "none", cells=cells))
    for row in rows:
        if row.kind != "person" or budgets.source_k <= 0:
            continue
        theirs = [c for c in sourced if c.row_id == row.id and c.head_id not in shown and matches(c)]
        extra = [_cell(c, projection.tense, "source", s) for c, s in rank(theirs)[: budgets.source_k]]
        shown.update(c.head_id for c in extra)
        row.cells.extend(extra)
    res.timings_s["s2_rank"] = t.elapsed_s

    t = Stopwatch()
    empty = [row for row in rows if row.kind == "person" and row.status == "none"]
    if empty and budgets.fallback_k > 0:
        raw = _raw_fallback(
            store, group_id, [row.id for row in empty], terms, vector, budgets, max_instant, rrf_k,
            max_candidates, context.state if context is not None else None, cache,
        )
        for row in empty:
            if raw.get(row.id):
                row.raw = raw[row.id]
                row.status = "raw"
    res.timings_s["s2_fallback"] = t.elapsed_s
    res.rows = rows
    return res


def _raw_fallback(
    store: Store, group_id: str, person_ids: list[str], terms: str, vector: list[float],
    budgets: Budgets, max_instant: float | None, rrf_k: int, max_candidates: int,
    state: GroupState | None = None, cache: GroupCache | None = None,
) -> dict[str, list[Excerpt]]:
    """Each person's own messages that match the issue, best first (at most ``fallback_k``)."""
    depth = max(4 * budgets.fallback_k, 20)
    state = state or group_state(store, group_id)
    # exact per person, or the group's own index for a person with many messages (see the template)
    vec_rows = person_rankings(
        store, state, person_ids, vector, depth, max_instant,
        exact_max=SPEAKERMEM_POOL.anchors.person_exact_max, oversample=SPEAKERMEM_POOL.anchors.person_oversample,
        cache=cache,
    )
    ft: list[dict[str, Any]] = []
    message_terms = search_terms(terms)  # the issue's words over the message fields (words, grams)
    if message_terms:
        total = state.total
        ft = widened_read(
            store, "recall/fulltext_person_messages", min(depth * len(person_ids), max_candidates),
            max(total, 1), query=message_terms, group_id=group_id, group_key=group_key(group_id),
            person_ids=person_ids, max_instant=max_instant,
        )
    out: dict[str, list[Excerpt]] = {}
    need: list[str] = []
    for pid in person_ids:
        cos = {r["id"]: float(r["score"]) for r in vec_rows if r["person_id"] == pid}
        bm = {h["id"]: float(h["score"]) for h in ft if h["person_id"] == pid}
        candidates = [
            i for i in dict.fromkeys([*cos, *bm])
            if not terms or bm.get(i, 0.0) > 0 or cos.get(i, -1.0) >= budgets.min_cosine
        ]
        fused = rrf(
            {
                "vector": sorted((i for i in candidates if i in cos), key=lambda i: -cos[i]),
                "fulltext": sorted((i for i in candidates if i in bm), key=lambda i: -bm[i]),
            },
            rrf_k,
        )[: budgets.fallback_k]
        out[pid] = [Excerpt(id=i, speaker="", text="", score=s, via="fallback") for i, s, _ in fused]
        need.extend(i for i, _, _ in fused)
    # both reads above return the messages' fields: hydrating reads only what they lacked
    full = hydrate(store, group_id, need, {**message_fields(ft), **message_fields(vec_rows)})
    for pid, excerpts in out.items():
        filled = []
        for e in excerpts:
            h = full.get(e.id)
            if h is None:
                continue
            filled.append(
                Excerpt(id=h.id, speaker=h.speaker, person_id=h.person_id, session=h.session,
                        turn=h.turn, ts=h.ts, channel=h.channel, text=h.text, score=e.score,
                        via="fallback")
            )
        out[pid] = filled
    return out
