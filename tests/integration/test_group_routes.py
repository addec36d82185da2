"""Every route under ``/groups/{group_id}`` answers an unknown group alike: 404 with
``{"detail": "no group '<id>'", "error": "NotFoundError"}`` (the graph page: 404 with the page
as its body). The list of routes is read from the app itself, so a route added later is
checked too."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core.config import Settings
from graphmem.verbatim.ingest import ingest_conversations
from tests.factories import conversation

pytestmark = pytest.mark.neo4j

#: what each route needs besides the group to reach its group lookup
BODIES = {("POST", "/groups/{group_id}/ask"): {"question": "who chose the trail?"}}
QUERIES = {("GET", "/groups/{group_id}/search"): {"q": "trail"}}
#: routes that create the group (an unknown group is not an error there)
CREATING = {("POST", "/groups/{group_id}/messages"), ("POST", "/groups/{group_id}/imports")}
NOT_IN_SCHEMA = [("GET", "/groups/{group_id}/timeline.png"), ("GET", "/groups/{group_id}/view")]


def group_routes(client: TestClient) -> list[tuple[str, str]]:
    spec = client.get("/openapi.json").json()
    found = [(method.upper(), path) for path, ops in spec["paths"].items() if path.startswith("/groups/{group_id}")
             for method in ops]
    return sorted(set(found) - CREATING) + NOT_IN_SCHEMA


def call(client: TestClient, method: str, path: str, gid: str, **kw):
    url = path.replace("{group_id}", gid).replace("{person_id}", "Ben").replace("{record_id}", "r1")
    return client.request(method, url, json=BODIES.get((method, path)), params=QUERIES.get((method, path)), **kw)


def test_every_group_route_answers_404_for_an_unknown_group(store, schema):
    gid = f"no-such-group-{uuid.uuid4().hex[:8]}"
    with TestClient(create_app(Settings(_env_file=None))) as client:
        routes = group_routes(client)
        assert len(routes) >= 11 and ("GET", "/groups/{group_id}/search") in routes
        for method, path in routes:
            r = call(client, method, path, gid)
            assert r.status_code == 404, (method, path, r.status_code, r.text[:200])
            if path.endswith("/view"):
                assert "<html" in r.text  # the page, which shows the data route's error
                continue
            assert r.json() == {"detail": f"no group {gid!r}", "error": "NotFoundError"}, (method, path)


def test_view_answers_404_only_to_callers_who_may_know(store, schema, group_id):
    ingest_conversations(store, [conversation(group_id, [{"speaker": "Ana", "text": "hello"}])], None,
                         embed="later")
    with TestClient(create_app(Settings(_env_file=None))) as client:
        assert client.get(f"/groups/{group_id}/view").status_code == 200
        assert client.get("/groups/no-such-view-group/view").status_code == 404
    with TestClient(create_app(Settings(_env_file=None, api_key="s3cret"))) as client:
        # without the key the page cannot tell whether a group exists (no oracle for group ids)
        assert client.get("/groups/no-such-view-group/view").status_code == 200
        assert client.get(f"/groups/{group_id}/view").status_code == 200
        assert client.get("/groups/no-such-view-group/view", headers={"X-API-Key": "s3cret"}).status_code == 404
        assert client.get("/groups/no-such-view-group/graph").status_code == 401


def test_a_group_id_with_a_slash_gets_the_librarys_answer_on_every_route(store, schema, tmp_path):
    """A group id holding ``/`` never exists (ingest refuses it everywhere). Sent as ``%2F``,
    it reached no route (FastAPI's plain 404 ``Not Found``, no error class) or, worse, a
    route of a shorter group id; now every route answers what the library answers for that id:
    404 ``no group 'a/b': group ids contain no '/' ...``, and 422 naming field ``group`` where
    messages are posted. The typed client and the command line say the same."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    from urllib.parse import quote

    from graphmem.client import GraphMemClient
    from graphmem.core.errors import InvalidInputError, NotFoundError

    head = f"team-{uuid.uuid4().hex[:8]}"
    gid = f"{head}/alpha"
    # a real group named like the id's first part: its routes must not answer for "head/alpha"
    ingest_conversations(store, [conversation(head, [{"speaker": "Ana", "text": "hello"}])], None, embed="later")
    want = {"detail": f"no group {gid!r}: group ids contain no '/' (ingest refuses them)", "error": "NotFoundError"}
    try:
        with TestClient(create_app(Settings(_env_file=None))) as client:
            for method, path in group_routes(client):
                r = call(client, method, path, quote(gid, safe=""))
                assert r.status_code == 404, (method, path, r.status_code, r.text[:200])
                assert r.json() == want, (method, path)
            r = client.post(f"/groups/{quote(gid, safe='')}/messages",
                            json={"messages": [{"id": "m1", "speaker": "Ana", "text": "hi", "ts": "2026-03-01T10:00:00"}]})
            assert r.status_code == 422 and r.json()["field"] == "group" and "'/'" in r.json()["detail"], r.text
            r = client.post(f"/groups/{quote(gid, safe='')}/imports",
                            json={"content": "01/07/2025, 10:00 - Ana: hi\n", "format": "whatsapp"})
            assert r.status_code == 422 and r.json()["field"] == "group" and "'/'" in r.json()["detail"], r.text
            assert client.get(f"/groups/{head}/roster").status_code == 200  # the real group still answers

            gm = GraphMemClient("http://testserver", http=client)
            with pytest.raises(NotFoundError, match="contain no '/'"):
                gm.search(gid, "hello")
            with pytest.raises(NotFoundError, match="contain no '/'"):
                gm.roster(gid)
            with pytest.raises(InvalidInputError) as e:
                gm.append_messages(gid, [{"id": "m1", "speaker": "Ana", "text": "hi", "ts": "2026-03-01T10:00:00"}])
            assert e.value.field == "group"
        graphmem = str(Path(sys.executable).parent / "graphmem")
        res = subprocess.run([graphmem, "search", "hello", "--group", gid], capture_output=True, text=True,
                             timeout=300, env={**os.environ, "COLUMNS": "1000"})
        assert res.returncode != 0 and "Traceback" not in res.stderr
        assert f"no group {gid!r}: group ids contain no '/'" in res.stderr, res.stderr
    finally:
        from graphmem.groups.service import forget_group

        forget_group(store, head)
