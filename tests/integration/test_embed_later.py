"""The append path with deferred vectors (issue 25, item 4) on every face that appends: the
library (``Memory.append(embed="later")`` + ``Memory.embed``), the HTTP API (``POST
/groups/{g}/messages?embed=later`` + ``POST /groups/{g}/embed``) and the typed client. Messages
written that way are found by their words at once (search says ``vectors_pending``), get the
same vectors as an append with ``embed="now"`` once embedded, and a second embed writes
nothing."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from graphmem.client import GraphMemClient
from graphmem.core.config import get_settings
from graphmem.facade import Memory
from tests.processes import served_api

pytestmark = pytest.mark.neo4j
KEY = "embed-later-key"


def messages(n: int) -> list[dict]:
    return [{"id": f"m{i:03d}", "speaker": "Ana" if i % 2 else "Ben", "session": f"s{i // 50}",
             "text": f"note {i}: the ferry to the island leaves from pier {i % 7}",
             "ts": f"2026-02-0{1 + i // 100}T10:{(i // 60) % 60:02d}:{i % 60:02d}Z"} for i in range(n)]


def vectors(store, gid: str) -> dict[str, list[float] | None]:
    rows = store.read_text("MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.embedding AS v", g=gid)
    return {r["id"]: r["v"] for r in rows}


@pytest.fixture(scope="module")
def url(schema) -> Iterator[str]:
    with served_api(KEY) as base:
        yield base


def test_library_append_later_then_embed_equals_append_now(store, make_group):
    later, now = make_group("later"), make_group("now")
    with Memory.open(get_settings()) as memory:
        first = memory.append(later, messages(120), embed="later")
        assert first.messages_written == 120 and not any(v is not None for v in vectors(store, later).values())
        found = memory.search(later, "ferry pier 3", k=5)
        assert found.hits and found.vectors_pending == 120  # found by its words at once
        assert memory.embed(later).embedded == 120 and memory.embed(later).embedded == 0
        memory.append(now, messages(120))
        after = memory.search(later, "ferry pier 3", k=5)
        assert after.vectors_pending == 0 and after.mode_used == "hybrid"
    a, b = vectors(store, later), vectors(store, now)
    assert a.keys() == b.keys()
    for mid in a:  # the same vectors as an inline append
        assert float(np.dot(a[mid], b[mid])) > 0.9999, mid


def test_api_and_client_append_later_then_embed(url, store, group_id):
    with GraphMemClient(url, api_key=KEY) as gm:
        wrote = gm.append_messages(group_id, messages(150), embed="later")
        assert wrote.messages_written == 150
        again = gm.append_messages(group_id, messages(150), embed="later")
        assert again.messages_skipped == 150  # idempotent as ever
        assert gm.search(group_id, "ferry pier 3", k=5).vectors_pending == 150
        done = gm.embed(group_id)
        assert (done.embedded, done.messages) == (150, 150)
        assert gm.embed(group_id).embedded == 0
        assert gm.search(group_id, "ferry pier 3", k=5).vectors_pending == 0
    assert all(v is not None for v in vectors(store, group_id).values())


def test_embed_is_checked_like_every_route(url, group_id):
    import httpx

    with httpx.Client(timeout=60) as http:
        r = http.post(f"{url}/groups/{group_id}/embed")
        assert r.status_code == 401
        r = http.post(f"{url}/groups/{group_id}/embed", headers={"X-API-Key": KEY})
        assert r.status_code == 404 and r.json()["error"] == "NotFoundError"
        r = http.post(f"{url}/groups/{group_id}/messages", params={"embed": "soon"}, headers={"X-API-Key": KEY},
                      json={"messages": messages(1)})
        assert r.status_code == 422 and r.json()["field"] == "embed"
