"""Time anchors (``recall/window_messages``): the read returns exactly the group's messages inside
the windows or the named sessions, and finds them through the ``(group_id, instant)`` range
index ``message_group_instant`` (``graphmem schema apply`` creates it, also in an older store)
instead of reading every message of the group (docs/scale.md, "Time windows")."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from graphmem.store.db import cypher
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.store.schema import apply_schema
from graphmem.core.times import instant
from tests.factories import conversation

pytestmark = pytest.mark.neo4j

DAY = 86_400.0
START = datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc)


def spread(group_id: str, n: int):
    """``n`` messages, one every ~day (sessions of 5 per channel, two channels alternating by
    session), so a one-day window holds one or two of them."""
    rows = []
    for i in range(n):
        ch = "ops" if (i // 5) % 2 else ""
        session = f"ops/w{i // 10}" if ch else f"w{i // 10}"
        ts = (START + timedelta(days=i, minutes=i % 7)).isoformat()
        rows.append({"id": f"m{i:03d}", "speaker": "Ana" if i % 3 else "Ben", "text": f"note {i} about the ferry",
                     "ts": ts, "session": session, "channel": ch})
    return conversation(group_id, rows)


def window_rows(store, group_id: str, windows, sessions, max_instant=None, k=1000, profile=False):
    text = ("PROFILE " if profile else "") + cypher("recall/window_messages")
    params = {"group_id": group_id, "windows": windows, "sessions": sessions, "vector": [1.0] + [0.0] * 383,
              "k": k, "max_instant": max_instant}
    with store.session(read=True) as s:
        result = s.run(text, params)
        rows = [r.data() for r in result]
        summary = result.consume()
    return rows, summary


def db_hits(plan) -> int:
    return int(plan.get("dbHits", 0)) + sum(db_hits(c) for c in plan.get("children", []))


def test_window_read_returns_exactly_the_anchored_messages(store, embedder, group_id, make_group):
    conv = spread(group_id, 40)
    ingest_conversations(store, [conv], embedder)
    other = make_group("other")  # same times and texts in another group: never returned
    ingest_conversations(store, [spread(other, 40)], embedder)
    stored = store.read_text(
        "MATCH (m:Message {group_id: $g})-[:IN_SESSION]->(s:Session) RETURN m.id AS id, m.instant AS t, "
        "s.index AS idx", g=group_id)
    assert len(stored) == 40
    t0 = instant(START.isoformat())
    windows = [[t0 + 3 * DAY, t0 + 6 * DAY], [t0 + 20 * DAY, t0 + 20.5 * DAY]]
    at_edge = [r for r in stored if r["t"] == instant((START + timedelta(days=3, minutes=3)).isoformat())]
    assert at_edge  # a message at a window's start is inside; the window end is exclusive
    for sessions, max_instant in (([], None), ([2], None), ([2], t0 + 5 * DAY), ([9], None)):
        want = {r["id"] for r in stored
                if (any(w[0] <= r["t"] < w[1] for w in windows) or r["idx"] in sessions)
                and (max_instant is None or r["t"] <= max_instant)}
        rows, _ = window_rows(store, group_id, windows, sessions, max_instant)
        assert {r["id"] for r in rows} == want, (sessions, max_instant)
        assert all(0.0 <= r["score"] <= 1.0 for r in rows)
    # session index 2 exists in both channels: both sessions' messages come back
    rows, _ = window_rows(store, group_id, [], [2])
    assert {r["id"] for r in rows} == {r["id"] for r in stored if r["idx"] == 2} and len(rows) == 10
    rows, _ = window_rows(store, group_id, windows, [], k=3)
    assert len(rows) == 3 and [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)


def test_window_read_touches_the_window_not_the_group(store, embedder, group_id):
    """One day of a 120-day group: the read's db hits follow the window (a few messages), not
    the group (before: every message of the group was read and filtered by instant, ~3 db hits
    per message, and its vector loaded). On a store of small groups (this suite's) the planner
    once hoisted the seek out of the windows' loop and scanned the whole index (444 db hits in
    CI); the bounds now go into a subquery, so each window is its own range seek."""
    ingest_conversations(store, [spread(group_id, 120)], embedder)
    t0 = instant(START.isoformat())
    rows, summary = window_rows(store, group_id, [[t0 + 50 * DAY, t0 + 51 * DAY]], [], profile=True)
    assert [r["id"] for r in rows] == ["m050"]
    assert db_hits(summary.profile) < 60, db_hits(summary.profile)
    # a named session index: one seek of session_group_index (both channels' session 3), not a
    # walk over the group's 24 sessions (189 db hits that way here, 211 in CI's fuller store)
    rows, summary = window_rows(store, group_id, [], [3], profile=True)
    assert len(rows) == 10 and db_hits(summary.profile) < 170, db_hits(summary.profile)


@pytest.mark.parametrize("name, label, properties", [
    ("message_group_instant", "Message", ["group_id", "instant"]),
    ("session_group_index", "Session", ["group_id", "index"]),
])
def test_schema_apply_creates_the_window_index_in_an_older_store(store, embedder, schema, name, label,
                                                                 properties):
    """A store from before the index (dropped here) gets it from ``schema apply``; a second
    apply changes nothing."""
    store.write("meta/drop_index", name=name)
    assert name not in {r["name"] for r in store.read("meta/list_indexes")}
    report = apply_schema(store, embedder.dimension)
    assert report.indexes[name] == "ONLINE"
    row = [r for r in store.read("meta/list_indexes") if r["name"] == name][0]
    assert list(row["properties"]) == properties and list(row["labels"]) == [label]
    again = apply_schema(store, embedder.dimension)
    assert again.indexes == report.indexes
