"""The database goes away mid-request (issue 27, item 2): requests fail fast with 503 and
``Retry-After``, say nothing of where the store is, write nothing, and everything works again
when the store is back, without a restart. The outage is real: the API's driver talks to Neo4j
through a TCP forwarder (tests/netproxy.py) that the test cuts and restores."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core.config import Settings, get_settings
from tests.netproxy import Proxy

pytestmark = pytest.mark.neo4j


@pytest.fixture
def proxy():
    p = Proxy(get_settings().neo4j_bolt_port)
    yield p
    p.close()


def count(store, gid: str) -> int:
    return store.read_text("MATCH (m:Message {group_id: $g}) RETURN count(m) AS n", g=gid)[0]["n"]


def test_requests_fail_fast_while_the_store_is_down_and_recover_after(store, group_id, proxy):
    s = Settings(_env_file=None, neo4j_uri=f"bolt://127.0.0.1:{proxy.port}", derive_jobs_enabled=False)
    msg = {"id": "o1", "speaker": "Ann", "text": "We meet at the Ridge trailhead at nine", "ts": "2026-03-01T09:00:00Z"}
    with TestClient(create_app(s)) as c:
        assert c.post(f"/groups/{group_id}/messages", json={"messages": [msg]}).status_code in (200, 201)
        assert c.get(f"/groups/{group_id}/search", params={"q": "Ridge"}).status_code == 200

        proxy.cut()
        late = {**msg, "id": "o2", "text": "Running late, start without me"}
        for method, path, kw in (
            ("GET", f"/groups/{group_id}/search", {"params": {"q": "Ridge"}}),
            ("POST", f"/groups/{group_id}/messages", {"json": {"messages": [late]}}),
            ("POST", f"/groups/{group_id}/ask", {"json": {"question": "Where do we meet?"}}),
            ("GET", "/health", {}),
        ):
            t0 = time.monotonic()
            r = c.request(method, path, **kw)
            took = time.monotonic() - t0
            assert r.status_code == 503, (path, r.status_code, r.text)
            assert took < 20, f"{method} {path} took {took:.1f} s to fail"
            assert r.headers.get("Retry-After", "").isdigit(), path
            assert str(proxy.port) not in r.text and "127.0.0.1" not in r.text and "bolt" not in r.text, r.text
        assert count(store, group_id) == 1  # the append made during the outage wrote nothing

        proxy.restore()  # the store is back: the same app serves again, no restart
        deadline = time.monotonic() + 30
        while c.get("/health").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert c.post(f"/groups/{group_id}/messages", json={"messages": [late]}).status_code in (200, 201)
        hits = c.get(f"/groups/{group_id}/search", params={"q": "late"}).json()["hits"]
        assert [h["id"] for h in hits][:1] == ["o2"]
    assert count(store, group_id) == 2
