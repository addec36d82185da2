"""Background derive jobs: 202 + job id, progress from the store, one job per group, HTTP 429
backs off and resumes, and a job survives a server restart (killed mid-segment) and finishes
with no duplicate record. The Writer is the scripted local model server."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter

import httpx
import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core.config import Settings
from tests.integration.test_api import add, family_messages, in_session, script_writer
from tests.scripted_llm import Reply, ScriptedLLM
from tests.processes import free_port, start_serve, stop_serve

pytestmark = pytest.mark.neo4j

S1_ACTIONS = {"actions": [
    add("Ben", "Ben", "per_speaker_core", "stance", "prefers the ridge trail for its views"),
    add("Mom", "Mom", "per_speaker_core", "fact", "her knee hurts, so she needs an easy walk"),
]}


def job_settings(server: ScriptedLLM, **kw) -> Settings:
    return Settings(_env_file=None, llm_base_url=server.base_url, llm_model=server.model, llm_max_retries=0,
                    derive_job_backoff_s=0.05, derive_job_lease_s=5.0, **kw)


def wait_job(get, job_id: str, *, until=("done", "failed"), timeout_s: float = 180.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        job = get(f"/jobs/{job_id}")
        if job.status_code == 200 and job.json()["state"] in until:
            return job.json()
        assert time.monotonic() < deadline, f"job never reached {until}: {job.text}"
        time.sleep(0.2)


def derived_contents(store, group_id: str) -> Counter:
    rows = store.read_text("MATCH (d:Derived {group_id: $g}) RETURN d.content AS c", g=group_id)
    return Counter(r["c"] for r in rows)


def test_background_job_rate_limit_and_one_job_per_group(store, schema, group_id):
    with ScriptedLLM() as server:
        server.route(in_session("s1"), Reply.slow(1.5, json.dumps(S1_ACTIONS)), times=1)
        server.route(in_session("s2"), Reply.http_error(429, "slow down"), times=2)
        script_writer(server)
        with TestClient(create_app(job_settings(server))) as c:
            assert c.post(f"/groups/{group_id}/messages", json={"messages": family_messages()}).status_code == 200
            r = c.post(f"/groups/{group_id}/derive", params={"background": "true"})
            assert r.status_code == 202, r.text
            first = r.json()
            assert first["created"] is True and first["status_url"] == f"/jobs/{first['job_id']}"
            # one job per group: while it runs, the same job comes back
            second = c.post(f"/groups/{group_id}/derive", params={"background": "true"}).json()
            assert second == {**first, "created": False}

            job = wait_job(c.get, first["job_id"])
            assert job["state"] == "done", job
            assert job["rate_limited"] == 2 and "429" in job["error"]
            assert (job["segments_done"], job["segments_total"], job["pending_messages"]) == (3, 3, 0)
            assert job["calls"] == 3 and job["prompt_tokens"] > 0  # rejected 429 calls are not stored usage
            assert (job["records_added"], job["records_updated"]) == (3, 1)
            assert job["runs"] == 1 and job["finished_at"]
            s2_calls = [b for b in server.chat_requests if in_session("s2")(b)]
            assert len(s2_calls) == 3  # two 429 answers, then the real one

            # a finished group: a new job opens and finishes with nothing to do, no model call
            calls_before = len(server.chat_requests)
            again = c.post(f"/groups/{group_id}/derive", params={"background": "true"}).json()
            assert again["created"] is True and again["job_id"] != first["job_id"]
            done = wait_job(c.get, again["job_id"])
            assert done["state"] == "done" and done["segments_done"] == 0 and len(server.chat_requests) == calls_before

            assert c.get("/jobs/no-such-job").status_code == 404
            assert c.post("/groups/no-such-group-x/derive", params={"background": "true"}).status_code == 404
    assert sorted(derived_contents(store, group_id).values()) == [1, 1, 1, 1]


def test_job_without_writer_fails_with_the_reason(store, schema, group_id):
    with TestClient(create_app(Settings(_env_file=None))) as c:
        c.post(f"/groups/{group_id}/messages", json={"messages": family_messages()[:3]})
        job_id = c.post(f"/groups/{group_id}/derive", params={"background": "true"}).json()["job_id"]
        job = wait_job(c.get, job_id)
        assert job["state"] == "failed" and "LLMError" in job["error"] and "GRAPHMEM_WRITER_BASE_URL" in job["error"]


def test_job_survives_server_restart_without_duplicates(store, schema, group_id):
    """Kill -9 the server while the Writer works on segment 2; a new server resumes the job
    from the stored segments and finishes it; every record exists once."""
    with ScriptedLLM() as writer:
        in_s2 = in_session("s2")
        writer.route(in_s2, Reply.slow(600, "never delivered"), times=1)  # the first server dies here
        script_writer(writer)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_LLM_")}
        env.update(HF_HUB_OFFLINE="1", GRAPHMEM_API_KEY="", GRAPHMEM_WRITER_BASE_URL=writer.base_url,
                   GRAPHMEM_WRITER_MODEL=writer.model, GRAPHMEM_LLM_MAX_RETRIES="0",
                   GRAPHMEM_DERIVE_JOB_LEASE_S="2")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        first = start_serve(port, env)
        try:
            assert httpx.post(f"{url}/groups/{group_id}/messages", json={"messages": family_messages()},
                              timeout=120).status_code == 200
            r = httpx.post(f"{url}/groups/{group_id}/derive", params={"background": "true"}, timeout=60)
            assert r.status_code == 202
            job_id = r.json()["job_id"]
            deadline = time.monotonic() + 120
            while not any(in_s2(b) for b in writer.chat_requests):  # segment 2 is in the Writer's hands
                assert time.monotonic() < deadline, "the job never reached segment 2"
                time.sleep(0.1)
            mid = httpx.get(f"{url}/jobs/{job_id}", timeout=30).json()
            assert mid["state"] == "running" and mid["segments_done"] == 1 and mid["segments_total"] == 3
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=60)

        second = start_serve(port, env)
        try:
            job = wait_job(lambda path: httpx.get(f"{url}{path}", timeout=30), job_id)
        finally:
            stop_serve(second)
    assert job["state"] == "done", job
    assert job["runs"] == 2 and (job["segments_done"], job["segments_total"]) == (3, 3)
    assert (job["records_added"], job["records_updated"]) == (3, 1)
    assert sum(1 for b in writer.chat_requests if in_s2(b)) == 2  # asked again after the restart
    segments = store.read_text("MATCH (s:Segment {group_id: $g}) RETURN s.index AS i ORDER BY i", g=group_id)
    assert [s["i"] for s in segments] == [1, 2, 3]
    contents = derived_contents(store, group_id)
    assert sorted(contents.values()) == [1, 1, 1, 1], contents
