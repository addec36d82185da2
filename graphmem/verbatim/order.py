"""The place of each message in its conversation (System 1), kept right whatever the arrival order.

A message is ordered by ``(order_instant, seq)``: its instant (raised to the latest instant
before it in its input's channel when the input's own order must win) and its arrival number
in the group. From that order follow ``turn_created`` (0-based position in the group), ``turn``
(position in the session), ``NEXT`` per channel, session numbers, and ``search_text`` (the
session's previous turn + "speaker: text"). :func:`plan_order` computes them for a region of
the conversation without a database; :func:`place_messages` reads the region from the
earliest message a write touched (added, edited or erased) and writes only what changed, in
the caller's transaction, set-based (one read and a few ``UNWIND`` writes). Used by ingest,
erasure and the first-load importer, so all three give the same graph. Guarantees:
docs/reliability.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import neo4j

from graphmem.core.text import gram_field, search_form
from graphmem.core.limits import has_visible
from graphmem.store.db import Store, run_tx


def _batches(rows: list[dict[str, Any]], size: int) -> Iterable[list[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def search_document(speaker: str, text: str, previous: tuple[str, str] | None) -> str:
    """:func:`search_text` from its parts: ``previous`` is the (speaker, text) of the turn before.

    In NFC (:func:`graphmem.core.text.search_form`), whatever form the message was written in,
    so an NFD ``"Zu\u0308rich"`` is found by an NFC query and the other way round; the
    message's ``text`` and ``speaker`` keep their bytes."""
    head = f"{previous[0]}: {previous[1]}\n" if previous else ""
    return search_form(f"{head}{speaker}: {text}")


def message_document(speaker: str, text: str, previous: tuple[str, str] | None) -> str | None:
    """The search document a message is stored with: None (no document: not in the fulltext
    index nor the group's BM25 statistics) for a text without a visible character (an
    attachment-only or blank message, docs/import.md); a previous turn without text gives no
    context line."""
    if not has_visible(text):
        return None
    if previous is not None and not has_visible(previous[1]):
        previous = None
    return search_document(speaker, text, previous)



@dataclass
class OrderPlan:
    """What :func:`plan_order` decided for a region of the conversation.

    Attributes:
        positions: rows for ``ingest/set_positions`` (id, turn_created, turn, search_text,
            search_grams: :func:`graphmem.core.text.gram_field` of search_text), only
            for messages whose values change.
        links: rows for ``ingest/relink_next`` (from, to or None), only for changed NEXT links.
        moves: old -> new ``turn_created`` of stored messages that moved (decimal string keys).
        rank_channels: channels where a session got a new first message (or a session is new).
        inserted: a stored message lies after the first incoming one (:func:`plan_region`):
            stored positions moved, so caches by position are stale.
    """

    positions: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    moves: dict[str, int] = field(default_factory=dict)
    rank_channels: list[str] = field(default_factory=list)
    inserted: bool = False


def plan_order(
    region: list[dict[str, Any]], base: int, channel_before: dict[str, dict[str, Any]], session_before: dict[str, dict[str, Any]]
) -> OrderPlan:
    """Place the messages of a region of the conversation (pure; no database).

    Args:
        region: every message ordered at or after the earliest touched one, in conversation
            order (``ingest/order_region`` rows: id, channel, session, turn_created, turn,
            speaker, text, search_text, next).
        base: ``turn_created`` of the region's first message (messages before it keep theirs).
        channel_before: per channel of the region, the last message before it (id, next; id
            None when there is none).
        session_before: per session of the region, the last message before it (id, turn,
            speaker, text; id None when there is none).

    Returns:
        The :class:`OrderPlan`: positions 0.. in the group, turns 0.. per session, NEXT per
        channel, each message's search document with its session's previous turn.
    """
    plan = OrderPlan()
    last_in_channel: dict[str, str | None] = {ch: r.get("id") for ch, r in channel_before.items()}
    current_next: dict[str, str | None] = {r["id"]: r.get("next") for r in channel_before.values() if r.get("id")}
    wanted_next: dict[str, str | None] = {}
    last_in_session: dict[str, tuple[int, str, str] | None] = {
        sid: (int(r["turn"]), r["speaker"], r["text"]) if r.get("id") else None
        for sid, r in session_before.items()
    }
    rank: set[str] = set()
    for i, r in enumerate(region):
        pos, ch, sid = base + i, r["channel"], r["session"]
        current_next[r["id"]] = r.get("next")
        wanted_next[r["id"]] = None
        before = last_in_channel.get(ch)
        if before is not None:
            wanted_next[before] = r["id"]
        last_in_channel[ch] = r["id"]
        prev = last_in_session.get(sid)
        turn = prev[0] + 1 if prev else 0
        doc = message_document(r["speaker"], r["text"], (prev[1], prev[2]) if prev else None)
        last_in_session[sid] = (turn, r["speaker"], r["text"])
        if turn == 0 and r.get("turn") != 0:
            rank.add(ch)
        if (r.get("turn_created"), r.get("turn"), r.get("search_text")) != (pos, turn, doc):
            plan.positions.append(
                {"id": r["id"], "turn_created": pos, "turn": turn, "search_text": doc,
                 "search_grams": gram_field(doc) if doc is not None else None}
            )
        if r.get("turn_created") is not None and r["turn_created"] != pos:
            plan.moves[str(r["turn_created"])] = pos
    plan.links = [{"from": a, "to": b} for a, b in wanted_next.items() if current_next.get(a) != b]
    plan.rank_channels = sorted(rank)
    return plan


def plan_region(
    tx: neo4j.ManagedTransaction, group_id: str, start: float, incoming: list[dict[str, Any]] | None = None,
    *, empty: bool = False,
) -> OrderPlan:
    """Read the region of a group ordered at or after ``start`` and plan it (:func:`plan_order`),
    with ``incoming`` messages that this transaction is about to create placed among the stored
    ones, so their place is known before they are written (one write each, no read back).

    Args:
        tx: an open write transaction that holds the group's lock (``ingest/lock_group``).
        group_id: the group.
        start: epoch seconds: the earliest ``order_instant`` added, edited or erased.
        incoming: messages not stored yet (id, channel, session, order_instant (>= ``start``),
            seq (above every stored one), speaker, text); None or [] for none.
        empty: the group holds no message (it was created by this transaction): nothing is
            read, the region is ``incoming`` alone.

    Returns:
        The :class:`OrderPlan`; its positions include one row per incoming message, and
        ``inserted`` says whether a stored message lies after the first incoming one.
    """
    region = [] if empty else run_tx(tx, "ingest/order_region", group_id=group_id, **{"from": start})
    plan_inserted = False
    if incoming:  # merged into the stored order: a new message comes after stored ones of its instant
        merged: list[dict[str, Any]] = []  # (its seq is above theirs)
        i, before_first = 0, None
        for r in sorted(incoming, key=lambda r: (r["order_instant"], r["seq"])):
            while i < len(region) and region[i]["order_instant"] <= r["order_instant"]:
                merged.append(region[i])
                i += 1
            before_first = i if before_first is None else before_first
            merged.append(r)
        plan_inserted = before_first is not None and before_first < len(region)  # a stored one after the first new
        region = merged + region[i:]
    channels = sorted({r["channel"] for r in region})
    sessions = sorted({r["session"] for r in region})
    if empty:
        ctx: dict[str, Any] = {"base": 0, "channels": [{"channel": c, "id": None} for c in channels],
                               "sessions": [{"session": sid, "id": None} for sid in sessions]}
    else:
        ctx = run_tx(tx, "ingest/order_context", group_id=group_id, channels=channels, sessions=sessions,
                     **{"from": start})[0]
    plan = plan_order(
        region, int(ctx["base"]),
        {r["channel"]: r for r in ctx["channels"]}, {r["session"]: r for r in ctx["sessions"]},
    )
    plan.inserted = plan_inserted
    return plan


def write_plan(tx: neo4j.ManagedTransaction, group_id: str, plan: OrderPlan) -> None:
    """Apply a plan of :func:`plan_region` (positions, NEXT links, derived records' and Writer
    segments' positions, session numbers), in the caller's transaction; the messages its rows name must exist."""
    for b in _batches(plan.positions, 1000):
        run_tx(tx, "ingest/set_positions", group_id=group_id, rows=b)
    for b in _batches(plan.links, 1000):
        run_tx(tx, "ingest/relink_next", group_id=group_id, rows=b)
    if plan.moves:
        start = min(int(k) for k in plan.moves)
        run_tx(tx, "ingest/shift_record_positions", group_id=group_id, moves=plan.moves, **{"from": start})
        run_tx(tx, "ingest/shift_segment_positions", group_id=group_id, **{"from": start})
    if plan.rank_channels:
        run_tx(tx, "ingest/rank_sessions", group_id=group_id, channels=plan.rank_channels)


def place_messages(tx: neo4j.ManagedTransaction, group_id: str, start: float) -> OrderPlan:
    """Re-place every message of a group ordered at or after ``start`` (inside the caller's
    write transaction, after messages were added, edited or erased there).

    Reads the region once, plans it with :func:`plan_order`, and writes only what changes:
    positions, turns and search documents, NEXT links, derived records' ``turn_created``, and
    session numbers of the channels whose sessions' first messages changed
    (:func:`plan_region` + :func:`write_plan`).

    Args:
        tx: an open write transaction that holds the group's lock (``ingest/lock_group``).
        group_id: the group.
        start: epoch seconds: the earliest ``order_instant`` added, edited or erased.

    Returns:
        The applied :class:`OrderPlan`.
    """
    plan = plan_region(tx, group_id, start)
    write_plan(tx, group_id, plan)
    return plan


def backfill_order(store: Store) -> int:
    """Migration for stores written before messages had an order key: give every message of
    such a group ``order_instant`` (its instant, raised to the latest before it on its channel in
    the old order) and ``seq`` (its rank in the old order), then re-place the whole group.
    Idempotent: a store without such messages is not touched.

    Returns:
        Number of groups migrated.
    """
    groups = store.read("meta/messages_without_order")
    for g in groups:
        running: dict[str, float] = {}
        rows = []
        for seq, m in enumerate(g["messages"]):
            t = max(float(m["instant"]), running.get(m["channel"], float("-inf")))
            running[m["channel"]] = t
            rows.append({"id": m["id"], "order_instant": t, "seq": seq})
        gid = g["group_id"]

        def work(tx: neo4j.ManagedTransaction, gid: str = gid, rows: list[dict[str, Any]] = rows) -> None:
            run_tx(tx, "ingest/lock_group", group_id=gid, n=0)
            for b in _batches(rows, 1000):
                run_tx(tx, "meta/set_message_order", group_id=gid, rows=b, total=len(rows))
            place_messages(tx, gid, float("-inf"))
            run_tx(tx, "ingest/bump_vector_rev", group_id=gid)  # every position may have moved

        store.write_tx(work)
    return len(groups)
