"""Derive races forget (issue 27, item 5): a derive running while a person or the group is
erased never writes records from what was erased, pending jobs of an erased group are
cancelled, and the erasure fences the writes in flight.

The race is made for real and deterministic: the scripted Writer (tests/scripted_llm.py) runs
the erasure through the library or the HTTP API while it holds the derive's Writer request, then
answers; so the erasure commits between the derive's read of the group and its segment write.
The Writer's first answer for session s2 credits Dad with a record that quotes Mom ("my knee
still hurts"): Mom has no message in s2, but her record was in the Writer's prompt. Before the
fence that record was written after Mom's erasure.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core.config import Settings
from graphmem.core.errors import NotFoundError
from graphmem.derived.writer import derive_group
from graphmem.groups.jobs import get_derive_job, open_derive_job
from graphmem.groups.service import forget_person
from graphmem.verbatim.ingest import ingest_conversations
from tests.factories import conversation
from tests.integration.test_derive import FAMILY, add, answer, in_session
from tests.integration.test_jobs import wait_job
from tests.scripted_llm import Reply, ScriptedLLM

pytestmark = pytest.mark.neo4j

MOM_WORDS = "my knee still hurts"
S1 = answer(add("Mom", "Mom", "per_speaker_core", "fact", "her knee still hurts"),
            add("Ben", "Ben", "per_speaker_core", "stance", "prefers the ridge for its views"))
# s2 read while Mom's record was a head: Dad's decision quoting her
S2_BEFORE = answer(add("GROUP", "Dad", "group_interaction", "decision",
                       f"the family takes the easy trail because Mom said {MOM_WORDS}"))
S2_AFTER = answer(add("GROUP", "Dad", "group_interaction", "decision", "the family takes the easy trail"))


def settings(server: ScriptedLLM | None = None, **kw) -> Settings:
    if server is not None:
        kw.update(llm_base_url=server.base_url, llm_model=server.model, llm_max_retries=0,
                  derive_job_backoff_s=0.05, derive_job_lease_s=5.0)
    return Settings(_env_file=None, **kw)


def script(server: ScriptedLLM, erase) -> dict:
    """s1 normal; the first s2 request runs ``erase()`` before it answers (the race); later s2
    requests are answered without Mom; s3 and s4 NOOP. Returns the prompts of s2, in order."""
    seen: dict = {"s2": []}

    def s2(body: dict) -> Reply:
        seen["s2"].append(json.dumps(body["messages"]))
        if len(seen["s2"]) == 1:
            erase()
            return S2_BEFORE
        return S2_AFTER

    server.route(in_session("s1"), S1)
    server.route(in_session("s2"), s2)
    server.route(in_session("s3"), answer({"action": "NOOP"}))
    server.route(in_session("s4"), answer({"action": "NOOP"}))
    return seen


def derived(store, gid: str) -> list[dict]:
    return store.read_text("MATCH (d:Derived {group_id: $g}) OPTIONAL MATCH (d)-[:FROM]->(m:Message) "
                           "RETURN d.id AS id, d.content AS content, collect(m.id) AS froms ORDER BY id", g=gid)


def holds_mom(store, gid: str) -> list[dict]:
    """Anything of the group that still holds Mom's words or names her as a person."""
    return store.read_text(
        "MATCH (n) WHERE n.group_id = $g AND (n:Derived AND toLower(n.content) CONTAINS $w "
        "OR n:Message AND n.speaker = 'Mom' OR n:Person AND n.id = 'Mom') "
        "RETURN labels(n) AS l, n.id AS id", g=gid, w=MOM_WORDS)


def test_a_person_erased_mid_derive_leaves_no_record_of_their_words_library(store, embedder, group_id):
    """Inline derive (library): Mom is erased while the Writer holds s2. The s2 answer read
    before the erasure is not written; the run plans again, asks s2 again without Mom (her
    record gone from the prompt) and finishes."""
    ingest_conversations(store, [conversation(group_id, FAMILY)], embedder)
    with ScriptedLLM() as server:
        erased: list = []
        seen = script(server, lambda: erased.append(
            forget_person(store, group_id, "Mom", settings=settings())))
        summary = derive_group(store, group_id, model=server.chat_model(), embedder=embedder, settings=settings())
    assert erased[0].messages_deleted == 2 and erased[0].records_deleted == 1  # her record of s1
    assert summary.replans == 1 and summary.segments_written == 4
    assert len(seen["s2"]) == 2 and "knee" in seen["s2"][0] and "knee" not in seen["s2"][1]
    assert holds_mom(store, group_id) == []
    records = derived(store, group_id)
    assert [r["content"] for r in records] == ["prefers the ridge for its views", "the family takes the easy trail"]
    pending = store.read_text("MATCH (m:Message {group_id: $g}) WHERE NOT (m)<-[:COVERS]-() RETURN count(m) AS n",
                              g=group_id)
    assert pending == [{"n": 0}]


def test_a_person_erased_during_a_background_job_leaves_no_record_of_their_words(store, schema, group_id):
    """The same race through the HTTP API: the job runs the Writer, ``DELETE
    /groups/{g}/persons/Mom`` lands while s2 is in the Writer's hands; the job finishes, done,
    and nothing of Mom is left."""
    with ScriptedLLM() as server:
        holder: dict = {}
        seen = script(server, lambda: holder.update(
            gone=holder["client"].delete(f"/groups/{group_id}/persons/Mom")))
        with TestClient(create_app(settings(server))) as c:
            holder["client"] = c
            msgs = [{"id": f"m{i:04d}", "speaker": r["speaker"], "text": r["text"], "ts": r["ts"],
                     "session": r["session"]} for i, r in enumerate(FAMILY)]
            assert c.post(f"/groups/{group_id}/messages", json={"messages": msgs}).status_code == 200
            job_id = c.post(f"/groups/{group_id}/derive", params={"background": "true"}).json()["job_id"]
            job = wait_job(c.get, job_id)
    assert holder["gone"].status_code == 200 and holder["gone"].json()["messages_deleted"] == 2
    assert job["state"] == "done" and job["error"] == "", job
    assert len(seen["s2"]) == 2 and "knee" not in seen["s2"][1]
    assert holds_mom(store, group_id) == []
    assert [r["content"] for r in derived(store, group_id)] == [
        "prefers the ridge for its views", "the family takes the easy trail"]


def test_the_group_erased_mid_derive_cancels_its_jobs_and_writes_nothing(store, embedder, schema, make_group):
    """``DELETE /groups/{g}`` while a background job holds s2 in the Writer's hands: the job
    ends ``cancelled`` (visible at ``GET /jobs/{id}``), its Writer answer is not written, and
    nothing of the group is left but the job receipts. A queued job of another erased group
    (no runner) is cancelled too. An inline derive whose group is erased meanwhile fails with
    NotFoundError and writes nothing."""
    gid, queued_gid, inline_gid = make_group(), make_group(), make_group()
    with ScriptedLLM() as server:
        holder: dict = {}
        released = threading.Event()

        def s2(body: dict) -> Reply:
            holder["gone"] = holder["client"].delete(f"/groups/{gid}")
            released.set()
            return S2_BEFORE

        server.route(in_session("s1"), S1)
        server.route(in_session("s2"), s2)
        with TestClient(create_app(settings(server))) as c:
            holder["client"] = c
            msgs = [{"id": f"m{i:04d}", "speaker": r["speaker"], "text": r["text"], "ts": r["ts"],
                     "session": r["session"]} for i, r in enumerate(FAMILY)]
            for g in (gid, queued_gid):
                assert c.post(f"/groups/{g}/messages", json={"messages": msgs}).status_code == 200
            job_id = c.post(f"/groups/{gid}/derive", params={"background": "true"}).json()["job_id"]
            assert released.wait(120), "the job never reached s2"
            job = wait_job(c.get, job_id, until=("done", "failed", "cancelled"))
            time.sleep(1.0)  # the runner's answer for s2 has come back and been refused by now
            after = c.get(f"/jobs/{job_id}").json()
            # a job nobody runs yet (opened through the library) is cancelled by the erasure
            queued, created = open_derive_job(store, queued_gid)
            assert created
            gone = c.delete(f"/groups/{queued_gid}")
            assert gone.status_code == 200 and gone.json()["jobs_cancelled"] == [queued]
            assert c.get(f"/jobs/{queued}").json()["state"] == "cancelled"
            assert c.post(f"/groups/{gid}/derive", params={"background": "true"}).status_code == 404
    body = holder["gone"].json()
    assert holder["gone"].status_code == 200 and body["jobs_cancelled"] == [job_id] and body["group_deleted"], body
    assert job["state"] == "cancelled" and "erased" in job["error"], job
    # the receipt keeps what the job did before the erasure: s1 written, s2 (in the Writer's
    # hands when the group went) not
    assert after["state"] == "cancelled" and after["segments_done"] == 1 and after["pending_messages"] == 0
    left = store.read_text("MATCH (n) WHERE n.group_id IN $g OR (n:Group AND n.id IN $g) "
                           "RETURN labels(n) AS l, n.state AS s", g=[gid, queued_gid])
    assert sorted((r["l"], r["s"]) for r in left) == [(["DeriveJob"], "cancelled")] * 2, left
    assert get_derive_job(store, job_id, settings()).state == "cancelled"

    # inline: the Writer's answer comes back after the group is gone
    from graphmem.groups.service import erase_group

    ingest_conversations(store, [conversation(inline_gid, FAMILY)], None, embed="later")
    with ScriptedLLM() as server:
        server.route(in_session("s1"), lambda body: (erase_group(store, inline_gid), S1)[1])
        with pytest.raises(NotFoundError):
            derive_group(store, inline_gid, model=server.chat_model(), embedder=embedder, settings=settings())
    assert store.read_text("MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) RETURN count(n) AS n",
                           g=inline_gid) == [{"n": 0}]


def test_a_message_edited_mid_derive_is_read_again_not_marked_derived_from_its_old_text(store, embedder, group_id):
    """Ben edits his s2 message while the Writer holds s2. The answer read from the old text
    ("I still prefer the ridge") is not written and the edited message is not marked derived by
    it: the run plans again, asks s2 again with the new text and writes what that answer says.
    Before the per-message check, the segment covered the edited message and its record stood
    on a text that no longer exists (the edit's new text never reached the Writer)."""
    from graphmem.groups.service import append_messages

    ingest_conversations(store, [conversation(group_id, FAMILY)], embedder)
    new_text = "Actually the easy trail is fine by me."
    seen: list[str] = []

    def s2(body: dict) -> Reply:
        seen.append(json.dumps(body["messages"]))
        if len(seen) == 1:
            edited = append_messages(store, embedder, group_id, [
                {"id": "m0004", "speaker": "Ben", "text": new_text, "ts": "2026-03-18T09:01:00", "session": "s2"}])
            assert edited.messages_edited == 1
            return answer(add("Ben", "Ben", "per_speaker_core", "stance", "still prefers the ridge, could live with a mix"))
        return answer(add("Ben", "Ben", "per_speaker_core", "stance", "is fine with the easy trail"))

    with ScriptedLLM() as server:
        server.route(in_session("s1"), answer({"action": "NOOP"}))
        server.route(in_session("s2"), s2)
        server.route(in_session("s3"), answer({"action": "NOOP"}))
        server.route(in_session("s4"), answer({"action": "NOOP"}))
        summary = derive_group(store, group_id, model=server.chat_model(), embedder=embedder, settings=settings())
    assert summary.replans == 1 and len(seen) == 2
    assert "prefer the ridge" in seen[0] and new_text in seen[1] and "prefer the ridge" not in seen[1]
    assert [r["content"] for r in derived(store, group_id)] == ["is fine with the easy trail"]
    pending = store.read_text("MATCH (m:Message {group_id: $g}) WHERE NOT (m)<-[:COVERS]-() RETURN count(m) AS n",
                              g=group_id)
    assert pending == [{"n": 0}]


def test_a_job_receipt_keeps_its_counters_and_stays_out_of_a_group_recreated_under_its_id(store, schema, group_id):
    """A finished job of an erased group still reports what it did (its counters were read from
    the group's segments, which the erasure removes), and when the id is used again the new
    group's job list holds only its own jobs, whose progress is its own."""
    with ScriptedLLM() as server:
        server.route(in_session("s1"), S1)
        server.route(in_session("s2"), S2_AFTER)
        server.route(in_session("s3"), answer({"action": "NOOP"}))
        server.route(in_session("s4"), answer({"action": "NOOP"}))
        with TestClient(create_app(settings(server))) as c:
            msgs = [{"id": f"m{i:04d}", "speaker": r["speaker"], "text": r["text"], "ts": r["ts"],
                     "session": r["session"]} for i, r in enumerate(FAMILY)]
            assert c.post(f"/groups/{group_id}/messages", json={"messages": msgs}).status_code == 200
            old = c.post(f"/groups/{group_id}/derive", params={"background": "true"}).json()["job_id"]
            done = wait_job(c.get, old)
            assert done["segments_done"] == 4 and done["records_added"] == 3
            assert c.delete(f"/groups/{group_id}").status_code == 200
            receipt = c.get(f"/jobs/{old}").json()
            assert (receipt["state"], receipt["segments_done"], receipt["records_added"]) == ("done", 4, 3)
            assert c.post(f"/groups/{group_id}/messages", json={"messages": msgs[:3]}).status_code == 200
            assert c.get(f"/groups/{group_id}/jobs").json()["jobs"] == []  # the old receipt is not this group's
            new = c.post(f"/groups/{group_id}/derive", params={"background": "true"}).json()["job_id"]
            wait_job(c.get, new)
            listed = c.get(f"/groups/{group_id}/jobs").json()["jobs"]
            assert [j["id"] for j in listed] == [new] and listed[0]["segments_done"] == 1
            assert c.get(f"/jobs/{old}").json()["segments_done"] == 4  # not the new group's segment


def test_a_person_erased_while_a_load_runs_stops_the_load_cleanly(store, group_id, monkeypatch):
    """A messy-input trial: `graphmem forget` of a person between two batches of a load that
    holds their messages ended the load in a raw driver error (a Person missing for
    create_messages) and left the first batch's empty sessions behind; over HTTP a 500. The
    erasure is made deterministic here: it commits right after the load's first batch."""
    from graphmem.core.errors import ConflictError
    from graphmem.verbatim import ingest as ingest_mod

    rows = [{"speaker": ("Ann", "Ben")[i % 2], "speaker_id": ("ann", "ben")[i % 2], "session": f"s{i // 4}",
             "text": f"message {i} about the trip", "ts": f"2026-01-01T10:{i:02d}:00"} for i in range(16)]
    real = ingest_mod._write_chunk

    def chunk_then_erase(store_, group, key, n, *args, **kw):
        out = real(store_, group, key, n, *args, **kw)
        if n == 0:
            forget_person(store, group_id, "ben", settings=Settings())
        return out

    monkeypatch.setattr(ingest_mod, "_write_chunk", chunk_then_erase)
    with pytest.raises(ConflictError) as info:
        ingest_conversations(store, [conversation(group_id, rows)], None, batch_size=4, embed="later")
    assert "'ben'" in str(info.value) and "erased while this load ran" in str(info.value)
    got = store.driver.execute_query(
        "MATCH (s:Session {group_id: $g}) RETURN s.id AS id, COUNT { (s)<-[:IN_SESSION]-() } AS n", g=group_id
    ).records
    assert [(r["id"], r["n"]) for r in got] == [("s0", 2)]  # the first batch, Ann's words; no empty session
    monkeypatch.setattr(ingest_mod, "_write_chunk", real)
    again = ingest_conversations(store, [conversation(group_id, rows)], None, batch_size=4, embed="later")
    assert again.messages_written == 14  # the rest, and the erased person's messages of the input again
