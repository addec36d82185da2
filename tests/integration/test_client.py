"""The typed client (``graphmem.client``) against a running ``graphmem serve`` (a real uvicorn
process on a free port, with an API key, the real Neo4j and a scripted Writer endpoint), and
the example app in ``examples/client_app.py``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from graphmem.client import APIError, AsyncGraphMemClient, AuthenticationError, GraphMemClient
from graphmem.core.errors import InvalidInputError, NotFoundError
from graphmem.query import AskResult, PersonMemory
from tests.integration.test_api import family_messages, script_writer
from tests.processes import ROOT, free_port, start_serve, stop_serve
from tests.scripted_llm import ScriptedLLM
from tests.test_query_fixtures import MEMBERS

pytestmark = pytest.mark.neo4j
KEY = "client-test-key"


class Served:
    def __init__(self, url: str, writer: ScriptedLLM) -> None:
        self.url, self.writer = url, writer


def serve_env(writer: ScriptedLLM) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_LLM_")}
    env.update(GRAPHMEM_API_KEY=KEY, HF_HUB_OFFLINE="1", GRAPHMEM_WRITER_BASE_URL=writer.base_url,
               GRAPHMEM_WRITER_MODEL=writer.model, GRAPHMEM_LLM_MAX_RETRIES="0")
    return env


@pytest.fixture(scope="module")
def served(schema) -> Iterator[Served]:
    with ScriptedLLM() as writer:
        script_writer(writer)
        port = free_port()
        proc = start_serve(port, serve_env(writer))
        try:
            yield Served(f"http://127.0.0.1:{port}", writer)
        finally:
            stop_serve(proc)


def test_sync_client_round_trip(served, group_id):
    with pytest.raises(AuthenticationError):
        GraphMemClient(served.url, api_key="wrong").roster(group_id)
    with GraphMemClient(served.url, api_key=KEY) as gm:
        assert gm.health().status == "ok"
        with pytest.raises(NotFoundError):
            gm.roster(group_id)
        wrote = gm.append_messages(group_id, family_messages(), name="family trip")
        assert (wrote.messages_written, wrote.persons_created, wrote.group_created) == (16, 5, True)
        assert gm.append_messages(group_id, family_messages()).messages_skipped == 16

        with pytest.raises(InvalidInputError) as e:  # refused before sending
            gm.append_messages(group_id, [{"id": "x1", "speaker": "Eli", "ts": "2026-05-02T09:09:00"}])
        assert e.value.field == "messages.0.text" and e.value.record == "x1"
        with pytest.raises(InvalidInputError) as e:  # refused by the server, same error class
            gm.append_messages(group_id, [{"id": "x2", "speaker": "Eli", "text": "hi", "ts": "soon-ish"}])
        assert e.value.field == "messages.0.ts"  # the body's dotted path, refused here or by the server alike
        assert str(e.value).count("field '") == 1, str(e.value)  # one prefix, not two
        assert e.value.reason and not e.value.reason.startswith("field")
        with pytest.raises(InvalidInputError) as e:  # a query parameter out of range
            gm.search(group_id, "ridge", k=0)
        assert e.value.field == "k" and str(e.value).startswith("field 'k': ")
        assert str(e.value).count("field 'k'") == 1, str(e.value)
        assert [p.id for p in gm.roster(group_id)] == MEMBERS  # nothing of the bad calls written

        step = gm.derive(group_id, max_segments=1)
        assert (step.segments_written, step.done) == (1, False)
        rest = gm.derive(group_id)
        assert rest.done and rest.pending_messages == 0

        full = gm.person_memory(group_id, "Ben", mode="full")
        assert isinstance(full, PersonMemory)
        assert [r.content for r in full.chains[0]] == ["prefers the ridge trail for its views", "still prefers the ridge"]
        early = gm.person_memory(group_id, "Ben", as_of="2026-03-10")
        assert [r.content for r in early.chains[0]] == ["prefers the ridge trail for its views"]
        prov = gm.provenance(group_id, full.chains[0][-1].id)
        assert prov.messages and all(m.speaker == "Ben" for m in prov.messages)

        result = gm.ask(group_id, "Which trail does Ben prefer?", as_of="2026-06-01T00:00:00")
        assert isinstance(result, AskResult) and result.answer is None  # no answer model on this server
        assert "m01" in result.message_ids or "m06" in result.message_ids
        with pytest.raises(NotFoundError):
            gm.provenance(group_id, "no-such-record")

        gone = gm.forget_person(group_id, "Ben")
        assert gone.person_deleted and gone.messages_deleted == 3
        assert "Ben" not in [p.id for p in gm.roster(group_id)]
        with pytest.raises(NotFoundError):
            gm.person_memory(group_id, "Ben")


def test_async_client_concurrent_calls(served, group_id):
    async def run() -> None:
        async with AsyncGraphMemClient(served.url, api_key=KEY) as gm:
            await gm.append_messages(group_id, family_messages())
            roster, ben, mom = await asyncio.gather(
                gm.roster(group_id),
                gm.ask(group_id, "What does Ben prefer?", ask=False),
                gm.ask(group_id, "What does Mom want for the anniversary?", ask=False),
            )
            assert [p.id for p in roster] == MEMBERS
            assert ben.question == "What does Ben prefer?" and mom.question.startswith("What does Mom")
            assert set(ben.message_ids) & {"m01", "m06", "m14"}
            with pytest.raises(NotFoundError):
                await gm.person_memory(group_id, "Nobody")
            assert (await gm.forget_person(group_id, "Eli")).messages_deleted == 2

    asyncio.run(run())


def test_unreachable_api_is_a_clear_error():
    with GraphMemClient(f"http://127.0.0.1:{free_port()}", retries=0, timeout_s=5) as gm, \
            pytest.raises(APIError, match="cannot reach"):
        gm.health()


def test_example_app_runs_against_serve(served, make_group):
    group = make_group("client-app")
    env = {**os.environ, "GRAPHMEM_API_KEY": KEY}
    cmd = [sys.executable, str(ROOT / "examples" / "client_app.py"), served.url, group]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "appended 18 messages (0 were there already)"
    assert lines[1].startswith("people: ") and "Ben" in lines[1] and "Mom" in lines[1]
    assert lines[2].startswith("answer: (no answer model set")
    cited = [line for line in lines[3:] if line.startswith("  [")]
    assert cited and any("trail" in line.lower() or "lake" in line.lower() or "ridge" in line.lower()
                         for line in cited)
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert again.returncode == 0 and again.stdout.splitlines()[0] == "appended 0 messages (18 were there already)"


def test_background_derive_through_the_client(served, group_id):
    with GraphMemClient(served.url, api_key=KEY) as gm:
        gm.append_messages(group_id, family_messages())
        accepted = gm.derive_in_background(group_id)
        assert accepted.group_id == group_id and accepted.created
        job = gm.wait_job(accepted.job_id, timeout_s=300, poll_s=0.3)
        assert job.state == "done" and job.segments_done == job.segments_total == 3
        assert [r.content for r in gm.person_memory(group_id, "Ben").chains[0]] == ["still prefers the ridge"]
        with pytest.raises(NotFoundError):
            gm.job("no-such-job")


def test_ids_made_of_dots_are_sent_as_ids_not_as_path_steps(served, store, group_id):
    """An id "." or ".." is a valid person, message or group id, but as a bare URL segment it
    is a dot segment that httpx (like every URL library) removes: ``forget_person(g, "..")``
    was sent as ``DELETE /groups/g`` and erased the whole group, ``get_message(g, "..")`` asked
    ``GET /groups/g``. The client escapes such ids."""
    from graphmem.groups.service import forget_group

    msgs = [{"id": "m1", "speaker": "..", "text": "dot dot speaking", "ts": "2026-01-01T10:00:00Z"},
            {"id": "m2", "speaker": ".", "text": "dot speaking", "ts": "2026-01-01T10:01:00Z"},
            {"id": "m3", "speaker": "Ana", "text": "Ana stays", "ts": "2026-01-01T10:02:00Z"},
            {"id": "..", "speaker": "Ana", "text": "a message called dot dot", "ts": "2026-01-01T10:03:00Z"}]
    with GraphMemClient(served.url, api_key=KEY) as gm:
        gm.append_messages(group_id, msgs)
        assert gm.get_message(group_id, "..").text == "a message called dot dot"
        assert gm.person_memory(group_id, ".").person.id == "."
        gone = gm.forget_person(group_id, "..")
        assert gone.person_ids == [".."] and gone.messages_deleted == 1
        assert sorted(p.id for p in gm.roster(group_id)) == [".", "Ana"]  # the group and the others stay
        assert gm.forget_person(group_id, ".").person_ids == ["."]
        try:  # a group called ".." is a group like any other
            assert gm.append_messages("..", msgs[2:3]).group_created
            assert [p.id for p in gm.roster("..")] == ["Ana"]
            assert gm.forget_group("..").group_deleted
        finally:
            forget_group(store, "..")
    assert store.read_text("MATCH (m:Message {group_id: $g}) RETURN m.id AS id ORDER BY id", g=group_id) == [
        {"id": ".."}, {"id": "m3"}]
