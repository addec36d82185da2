"""The one paging helper every list uses (graphmem/core/paging.py): limits, cursors that carry a
key and refuse another list's, pages cut by count and by bytes that always move on, text cuts."""

from __future__ import annotations

import pytest

from graphmem.core import paging
from graphmem.core.errors import InvalidInputError


def test_a_cursor_carries_its_key_and_is_refused_elsewhere():
    scope = paging.list_scope("roster", "trip")
    cursor = paging.encode_cursor("roster", scope, ["Zoë / ünïcode: id"])
    assert cursor.startswith("roster:") and "\n" not in cursor
    assert paging.decode_cursor(cursor, kind="roster", scope=scope, size=1) == ["Zoë / ünïcode: id"]
    assert paging.decode_cursor(None, kind="roster", scope=scope, size=1) is None
    assert paging.decode_cursor("", kind="roster", scope=scope, size=1) is None
    other = paging.list_scope("roster", "camp")
    for bad, kind, sc, size in ((cursor, "roster", other, 1),  # another group's roster
                                (cursor, "groups", scope, 1),  # another list
                                (cursor, "roster", scope, 2),  # another key shape
                                (cursor[:-3], "roster", scope, 1),  # cut
                                ("roster:!!!", "roster", scope, 1), ("garbage", "roster", scope, 1)):
        with pytest.raises(InvalidInputError) as e:
            paging.decode_cursor(bad, kind=kind, scope=sc, size=size)
        assert e.value.field == "cursor" and "pass next_cursor back unchanged" in str(e.value)


def test_limits_are_checked_with_the_field_named():
    paging.check_limit(1, maximum=10)
    paging.check_limit(10, maximum=10)
    for bad in (0, 11, True, "3", 2.0):
        with pytest.raises(InvalidInputError) as e:
            paging.check_limit(bad, maximum=10)  # type: ignore[arg-type]
        assert e.value.field == "limit"
    paging.check_max_bytes(None)
    with pytest.raises(InvalidInputError) as e:
        paging.check_max_bytes(999)
    assert e.value.field == "max_bytes"


def test_take_cuts_by_count_and_by_bytes_and_always_moves_on():
    items = [{"id": i, "text": "x" * 100} for i in range(10)]
    key = lambda item: [item["id"]]  # noqa: E731
    page, last = paging.take(items[:4], limit=3, key=key)
    assert [x["id"] for x in page] == [0, 1, 2] and last == [2]
    page, last = paging.take(items[:3], limit=3, key=key)
    assert len(page) == 3 and last is None  # nothing follows: no cursor
    page, last = paging.take(items, limit=10, key=key, budget=350)
    assert [x["id"] for x in page] == [0, 1] and last == [1]  # ~120 bytes an item
    assert sum(paging.json_size(x) + 1 for x in page) <= 350
    page, last = paging.take(items, limit=10, key=key, budget=10)
    assert [x["id"] for x in page] == [0] and last == [0]  # one item even when it alone is too big


def test_clip_text_keeps_the_whole_length():
    assert paging.clip_text("short") == ("short", False, None)  # a whole text says nothing more
    text, cut, n = paging.clip_text("é" * 5000)
    assert (len(text), cut, n) == (paging.LIST_TEXT_CHARS, True, 5000)
    assert paging.clip_text("x" * 5000, None) == ("x" * 5000, False, None)
