"""Several API replicas on one store (issue 27, item 12): two apps, each with its own Runtime
(driver, embedder, group cache, job runner), over the same Neo4j, with writes, reads, derive
jobs and an erasure spread over them, give the graph one process gives, and each replica's
caches follow the writes the other made."""

from __future__ import annotations

import json
import threading
from collections import Counter

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
