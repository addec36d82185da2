"""Several API replicas on one store (issue 27, item 12): two apps, each with its own Runtime
(driver, embedder, group cache, job runner), over the same Neo4j, with writes, reads, derive
jobs and an erasure spread over them, give the graph one process gives, and each replica's
caches follow the writes the other made."""

from __future__ import annotations

import json
import threading

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from tests.integration.test_api import family_messages, in_session, script_writer
from tests.integration.test_jobs import derived_contents, job_settings, wait_job
from tests.scripted_llm import Reply, ScriptedLLM

pytestmark = pytest.mark.neo4j


def ids(r) -> list[str]:
    assert r.status_code == 200, r.text
    return [h["id"] for h in r.json()["hits"]]


def test_two_replicas_share_one_store_without_lost_doubled_or_stale_work(store, schema, group_id):
    with ScriptedLLM() as server:
        script_writer(server)
        server.route(in_session("s4"), Reply.json({"actions": []}))  # the notes appended below
        # the ask after the erasure: Project gets no JSON (it falls back to its rules), the answerer a text
        server.route(ScriptedLLM.any_message_contains("What does Ben think"), Reply.text("Nothing is stored of Ben."))
        with TestClient(create_app(job_settings(server))) as a, TestClient(create_app(job_settings(server))) as b:
            assert a.post(f"/groups/{group_id}/messages", json={"messages": family_messages()}).status_code == 200
            # B's first read sees A's write; then B caches the group's statistics and vectors
            assert ids(b.get(f"/groups/{group_id}/search", params={"q": "blue jacket", "k": 3}))[0] == "m04"

            # an edit through A: B's next search ranks the new text, never the old one
            edit = {**family_messages()[4], "text": "Has anyone seen my red scarf?"}
            assert a.post(f"/groups/{group_id}/messages", json={"messages": [edit]}).status_code == 200
            assert ids(b.get(f"/groups/{group_id}/search", params={"q": "red scarf", "k": 3}))[0] == "m04"
            jacket = b.get(f"/groups/{group_id}/search", params={"q": "blue jacket", "k": 16, "mode": "fulltext"})
            assert all("blue jacket" not in h["text"] for h in jacket.json()["hits"])

            # concurrent appends of distinct messages through both replicas: every one stored once
            def append(client: TestClient, prefix: str) -> None:
                for i in range(10):
                    msg = {"id": f"{prefix}{i}", "speaker": "Eli", "text": f"note {prefix} {i}",
                           "ts": f"2026-06-01T10:{i:02d}:00", "session": "s4"}
                    assert client.post(f"/groups/{group_id}/messages", json={"messages": [msg]}).status_code == 200

            workers = [threading.Thread(target=append, args=(c, p)) for c, p in ((a, "a"), (b, "b"))]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            n = store.read_text("MATCH (m:Message {group_id: $g}) RETURN count(m) AS n", g=group_id)[0]["n"]
            assert n == len(family_messages()) + 20

            # derive asked of both replicas at once: one job, claimed by one runner, records once
            started = [a.post(f"/groups/{group_id}/derive", params={"background": "true"}),
                       b.post(f"/groups/{group_id}/derive", params={"background": "true"})]
            assert {r.status_code for r in started} == {202}
            assert len({r.json()["job_id"] for r in started}) == 1
            job = wait_job(b.get, started[0].json()["job_id"])
            assert job["state"] == "done" and job["runs"] == 1, json.dumps(job)
            assert all(n == 1 for n in derived_contents(store, group_id).values())

            # an erasure through B: A's next search and ask find nothing of Ben
            gone = b.delete(f"/groups/{group_id}/persons/Ben")
            assert gone.status_code == 200 and gone.json()["messages_deleted"] == 3, gone.text
            for q in ("ridge trail views", "Ben"):
                hits = a.get(f"/groups/{group_id}/search", params={"q": q, "k": 20}).json()["hits"]
                assert all(h["speaker"] != "Ben" for h in hits), hits
            answer = a.post(f"/groups/{group_id}/ask", json={"question": "What does Ben think of the ridge?"})
            assert answer.status_code == 200
            body = answer.json()
            assert all(e["speaker"] != "Ben" for e in body["excerpts"]), body["excerpts"]
            assert "ridge trail has far better views" not in json.dumps(body)


def test_two_serve_processes_on_one_store_give_the_graph_of_one(store, schema, group_id):
    """The same over two real ``graphmem serve`` processes (uvicorn, each with its own driver,
    embedder, caches and job runner) on one Neo4j: concurrent appends through both are stored
    once each; an edit through A is what B's next search finds; derive asked of both at once is
    one job, claimed by one runner, every record once; an erasure through B is gone from A's
    next answers; the group erased through A is gone for B, and its job is still readable."""
    import os

    import httpx

    from tests.processes import free_port, start_serve, stop_serve

    with ScriptedLLM() as server:
        script_writer(server)
        server.route(in_session("s4"), Reply.json({"actions": []}))
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_LLM_")}
        env.update(HF_HUB_OFFLINE="1", GRAPHMEM_API_KEY="", GRAPHMEM_WRITER_BASE_URL=server.base_url,
                   GRAPHMEM_WRITER_MODEL=server.model, GRAPHMEM_LLM_MAX_RETRIES="0",
                   GRAPHMEM_VECTOR_EXACT_MAX="4")  # the group gets its own index: the cached path
        ports = [free_port(), free_port()]
        procs = [start_serve(p, env) for p in ports]
        a, b = (httpx.Client(base_url=f"http://127.0.0.1:{p}", timeout=120) for p in ports)
        try:
            assert a.post(f"/groups/{group_id}/messages", json={"messages": family_messages()}).status_code == 200
            assert ids(b.get(f"/groups/{group_id}/search", params={"q": "blue jacket", "k": 3}))[0] == "m04"
            edit = {**family_messages()[4], "text": "Has anyone seen my red scarf?"}
            assert a.post(f"/groups/{group_id}/messages", json={"messages": [edit]}).status_code == 200
            assert ids(b.get(f"/groups/{group_id}/search", params={"q": "red scarf", "k": 3}))[0] == "m04"
            jacket = b.get(f"/groups/{group_id}/search", params={"q": "blue jacket", "k": 16, "mode": "fulltext"})
            assert all("blue jacket" not in h["text"] for h in jacket.json()["hits"])

            def append(client: httpx.Client, prefix: str) -> None:
                for i in range(10):
                    msg = {"id": f"{prefix}{i}", "speaker": "Eli", "text": f"note {prefix} {i}",
                           "ts": f"2026-06-01T10:{i:02d}:00", "session": "s4"}
                    r = client.post(f"/groups/{group_id}/messages", json={"messages": [msg]})
                    assert r.status_code == 200, r.text

            workers = [threading.Thread(target=append, args=(c, p)) for c, p in ((a, "a"), (b, "b"))]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            n = store.read_text("MATCH (m:Message {group_id: $g}) RETURN count(m) AS n", g=group_id)[0]["n"]
            assert n == len(family_messages()) + 20
            order = store.read_text("MATCH (m:Message {group_id: $g}) RETURN collect(m.turn_created) AS t", g=group_id)
            assert sorted(order[0]["t"]) == list(range(n))  # one order, no doubled or lost place

            started: list = [None, None]

            def derive(i: int, client: httpx.Client) -> None:
                started[i] = client.post(f"/groups/{group_id}/derive", params={"background": "true"})

            racers = [threading.Thread(target=derive, args=(i, c)) for i, c in enumerate((a, b))]
            for r in racers:
                r.start()
            for r in racers:
                r.join()
            assert {r.status_code for r in started} == {202}
            assert len({r.json()["job_id"] for r in started}) == 1
            job_id = started[0].json()["job_id"]
            job = wait_job(a.get, job_id)
            assert job["state"] == "done" and job["runs"] == 1, json.dumps(job)
            assert all(v == 1 for v in derived_contents(store, group_id).values())
            assert len([r for r in server.chat_requests if in_session("s1")(r)]) == 1  # each segment asked once

            gone = b.delete(f"/groups/{group_id}/persons/Ben")
            assert gone.status_code == 200 and gone.json()["messages_deleted"] == 3, gone.text
            for q in ("ridge trail views", "Ben"):
                hits = a.get(f"/groups/{group_id}/search", params={"q": q, "k": 20}).json()["hits"]
                assert all(h["speaker"] != "Ben" for h in hits), hits

            erased = a.delete(f"/groups/{group_id}")
            assert erased.status_code == 200 and erased.json()["group_deleted"] is True, erased.text
            assert b.get(f"/groups/{group_id}/search", params={"q": "trail"}).status_code == 404
            assert b.get(f"/jobs/{job_id}").json()["state"] == "done"
        finally:
            a.close()
            b.close()
            for p in procs:
                stop_serve(p)
