"""The Writer endpoint misbehaves (issue 27, item 3), through the real client and HTTP stack
(tests/scripted_llm.py): an answer with an empty choice list is retried and never read as "no
facts"; JSON in prose with braces of its own is found; prose with braces and no JSON is never a
success. A segment that finally fails stays pending, with the reason in the error (inline) and
in the job's status (background)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core.config import Settings
from graphmem.core.errors import LLMError
from graphmem.derived.writer import derive_group
from graphmem.llm import LLMOutputError
from graphmem.verbatim.ingest import ingest_conversations
from tests.factories import conversation
from tests.integration.test_derive import FAMILY, add, answer, in_session
from tests.integration.test_jobs import wait_job
from tests.scripted_llm import Reply, ScriptedLLM

pytestmark = pytest.mark.neo4j

S1 = answer(add("Mom", "Mom", "per_speaker_core", "fact", "her knee still hurts"))


def pending(store, gid: str) -> int:
    return store.read_text("MATCH (m:Message {group_id: $g}) WHERE NOT (m)<-[:COVERS]-() RETURN count(m) AS n",
                           g=gid)[0]["n"]


def segments(store, gid: str) -> list[str]:
    rows = store.read_text("MATCH (s:Segment {group_id: $g}) RETURN s.session AS session ORDER BY s.index", g=gid)
    return [r["session"] for r in rows]


@pytest.fixture
def family(store, group_id):
    ingest_conversations(store, [conversation(group_id, FAMILY[:3])], None, embed="later")
    return group_id


def test_an_empty_choice_list_is_retried_then_a_clear_error_and_the_segment_stays_pending(store, embedder, family):
    s = Settings(_env_file=None)
    with ScriptedLLM() as server:
        server.route(in_session("s1"), Reply.no_choices(), times=1)
        server.route(in_session("s1"), S1)
        summary = derive_group(store, family, model=server.chat_model(max_retries=2), embedder=embedder, settings=s)
        assert len(server.chat_requests) == 2  # the empty answer was asked again
    assert summary.records_added == 1 and segments(store, family) == ["s1"]

    gid = family + "-x"
    ingest_conversations(store, [conversation(gid, FAMILY[:3])], None, embed="later")
    try:
        with ScriptedLLM() as server:
            server.route(in_session("s1"), Reply.no_choices())
            with pytest.raises(LLMError, match="returned no choices in 3 attempt"):
                derive_group(store, gid, model=server.chat_model(max_retries=2), embedder=embedder, settings=s)
            assert len(server.chat_requests) == 3
        assert segments(store, gid) == [] and pending(store, gid) == 3  # never "no facts, success"
    finally:
        from graphmem.groups.service import erase_group

        erase_group(store, gid)


def test_json_in_prose_with_braces_is_found_and_braces_without_json_are_no_success(store, embedder, family):
    s = Settings(_env_file=None, writer_parse_retries=1)
    prose = ('Noted {Mom} and {the knee}. Here you go: {"actions": [{"action": "ADD", "owner": "Mom", '
             '"source": "Mom", "layer": "per_speaker_core", "utype": "fact", "content": "her knee {still} hurts"}]} '
             '- hope this helps {:)}')
    with ScriptedLLM() as server:
        server.route(in_session("s1"), Reply.text("I think {Mom} worries about {her knee}; nothing else {to add}."))
        with pytest.raises(LLMOutputError, match="no usable JSON action list after 2 answer"):
            derive_group(store, family, model=server.chat_model(), embedder=embedder, settings=s)
        assert segments(store, family) == [] and pending(store, family) == 3
        server.reset()
        server.route(in_session("s1"), Reply.text(prose))
        summary = derive_group(store, family, model=server.chat_model(), embedder=embedder, settings=s)
    assert summary.records_added == 1 and summary.actions_rejected == 0
    contents = store.read_text("MATCH (d:Derived {group_id: $g}) RETURN d.content AS c", g=family)
    assert contents == [{"c": "her knee {still} hurts"}]


def test_a_job_whose_writer_sends_no_choices_fails_with_the_reason_and_leaves_the_segment_pending(
        store, schema, group_id):
    with ScriptedLLM() as server:
        server.route(in_session("s1"), Reply.no_choices())
        s = Settings(_env_file=None, llm_base_url=server.base_url, llm_model=server.model, llm_max_retries=1,
                     derive_job_backoff_s=0.05)
        with TestClient(create_app(s)) as c:
            msgs = [{"id": f"m{i}", "speaker": r["speaker"], "text": r["text"], "ts": r["ts"], "session": r["session"]}
                    for i, r in enumerate(FAMILY[:3])]
            assert c.post(f"/groups/{group_id}/messages", json={"messages": msgs}).status_code == 200
            job = wait_job(c.get, c.post(f"/groups/{group_id}/derive", params={"background": "true"}).json()["job_id"])
    assert job["state"] == "failed" and "returned no choices in 2 attempt" in job["error"], job
    assert (job["segments_done"], job["segments_total"], job["pending_messages"]) == (0, 1, 3)
