"""Placement of a multi-channel conversation whatever the arrival order (graphmem.verbatim.order).

One seeded conversation of two channels whose sessions overlap in time, with equal timestamps
inside and across channels and replies, is loaded in the order of time in one call (the
reference), channel by channel in small batches, in late chunks (each call earlier in time than
the one before), and appended call by call with one message arriving last; every load must give
the reference's graph: positions, turns, search documents, NEXT per channel, REPLY_TO, session
numbers. The reads behind placement (ingest/order_context, order_region, rank_sessions) look only
near the touched region, so these loads exercise their predecessor look-ups: a channel without an
earlier message, a session starting inside the region, ties broken by arrival number.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from graphmem.verbatim.ingest import ingest_conversations
from tests.factories import conversation
from tests.integration.test_integrity import chain, snapshot

pytestmark = pytest.mark.neo4j

SPEAKERS = ["Ada", "Ben", "Cy", "Dee"]


def corpus(seed: int = 11) -> list[dict]:
    """About 130 messages in time order: channel ca (sessions every 2 h, on whole minutes) and
    cb (every 3 h, starting 40.5 min later), 1-3 min apart with equal timestamps inside a
    channel, 15% replies."""
    rng = random.Random(seed)
    t0 = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)
    rows = []
    for ch, every, offset, sessions in (("ca", 2, 0, 6), ("cb", 3, 40.5, 4)):
        for s in range(sessions):
            t = t0 + timedelta(hours=every * s, minutes=offset)
            for i in range(rng.randint(6, 16)):
                t += timedelta(minutes=rng.choice([0, 1, 1, 2, 3]))  # 0: equal timestamps
                rows.append({"channel": ch, "session": f"{ch}/s{s + 1}", "speaker": rng.choice(SPEAKERS),
                             "text": f"{ch} session {s + 1} turn {i} {rng.random():.6f}",
                             "ts": t.isoformat(), "id": f"{ch}-{s + 1}-{i}"})
    rows.sort(key=lambda r: r["ts"])  # stable: file order among equal instants
    for i, r in enumerate(rows):
        if i > 3 and rng.random() < 0.15:
            r["reply_to"] = rows[rng.randrange(max(0, i - 20), i)]["id"]
    return rows


def cut(rows: list[dict], size: int) -> list[list[dict]]:
    """Calls of about ``size`` messages, never splitting equal timestamps: messages of equal
    instant are ordered by arrival, so splitting them across calls would change the order."""
    calls: list[list[dict]] = [[]]
    for r in rows:
        if len(calls[-1]) >= size and r["ts"] != calls[-1][-1]["ts"]:
            calls.append([])
        calls[-1].append(r)
    return calls


def load(store, gid: str, calls: list[list[dict]], batch_size: int) -> None:
    for rows in calls:
        ingest_conversations(store, [conversation(gid, rows)], None, embed="later", batch_size=batch_size)


def test_every_arrival_order_gives_the_in_order_graph(store, make_group) -> None:
    rows = corpus()
    assert len({r["channel"] for r in rows}) == 2 and len(rows) > 100
    assert len({r["ts"] for r in rows}) < len(rows)  # equal timestamps inside a channel
    ref = make_group("ref")
    load(store, ref, [rows], 1000)
    expected = snapshot(store, ref)
    assert len(expected["messages"]) == len(rows)
    assert [m["turn_created"] for m in expected["messages"]] == list(range(len(rows)))
    assert len(chain(store, ref)) == 2  # one NEXT chain per channel

    # channel by channel, batches of 7: every batch of cb lands between stored messages of ca
    by_channel = make_group("bych")
    load(store, by_channel, [[r for r in rows if r["channel"] == "ca"], [r for r in rows if r["channel"] == "cb"]], 7)
    # late chunks: each call is earlier in time than everything stored before it
    late_chunks = make_group("late")
    load(store, late_chunks, cut(rows, 17)[::-1], 5)
    # appended call by call in time order (each batch after everything stored), one message last
    held = next(r for r in rows[len(rows) // 3 :] if sum(x["ts"] == r["ts"] for x in rows) == 1)
    appended = make_group("append")
    load(store, appended, cut([r for r in rows if r is not held], 9) + [[held]], 4)

    for gid in (by_channel, late_chunks, appended):
        assert snapshot(store, gid) == expected, gid
        assert chain(store, gid) == chain(store, ref)


def test_an_edit_after_appends_gives_the_in_order_graph_and_rerun_changes_nothing(store, make_group) -> None:
    rows = corpus(seed=5)
    edited = {**rows[10], "text": rows[10]["text"] + " (corrected)"}
    ref, appended = make_group("ref"), make_group("append")
    load(store, ref, [rows, [edited]], 1000)
    load(store, appended, cut(rows, 25) + [[edited]], 6)
    expected = snapshot(store, ref)
    assert next(m for m in expected["messages"] if m["id"] == edited["id"])["history"] == [rows[10]["text"]]
    assert snapshot(store, appended) == expected
    summary = ingest_conversations(store, [conversation(appended, rows[:-1] + [edited])], None, embed="later",
                                   batch_size=6)
    assert summary.messages_written == 0 and summary.messages_edited == 0
    assert snapshot(store, appended) == expected
