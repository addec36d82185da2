"""The HTTP API through FastAPI's TestClient (real HTTP semantics, real Neo4j, scripted models)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.errors import status_for
from api.main import create_app
from graphmem.core.config import Settings
from graphmem.core.errors import ConflictError, GraphMemError, InvalidInputError, LLMError, NotFoundError, StoreUnavailableError
from graphmem.recall.search import search_messages
from tests.scripted_llm import Reply, ScriptedLLM
from tests.test_query_fixtures import FAMILY, MEMBERS, build_family, script

pytestmark = pytest.mark.neo4j


def settings(**kw) -> Settings:
    return Settings(_env_file=None, **kw)


def model_settings(server: ScriptedLLM, **kw) -> Settings:
    return settings(llm_base_url=server.base_url, llm_model=server.model, llm_max_retries=0, **kw)


def family_messages() -> list[dict]:
    return [{"id": mid, "session": s, "speaker": who, "text": text, "ts": ts} for mid, s, who, text, ts in FAMILY]


def in_session(name: str):
    return ScriptedLLM.any_message_contains(f"SESSION: {name}\n")


def add(owner, source, layer, utype, content):
    return {"action": "ADD", "owner": owner, "source": source, "layer": layer, "utype": utype, "content": content}


def script_writer(server: ScriptedLLM) -> None:
    server.route(in_session("s1"), Reply.json({"actions": [
        add("Ben", "Ben", "per_speaker_core", "stance", "prefers the ridge trail for its views"),
        add("Mom", "Mom", "per_speaker_core", "fact", "her knee hurts, so she needs an easy walk"),
    ]}))
    server.route(in_session("s2"), Reply.json({"actions": [
        {"action": "UPDATE", "entry_id": "e1.1", "content": "still prefers the ridge"},
        add("GROUP", "Dad", "group_interaction", "decision", "the family takes the easy lake trail"),
    ]}))
    server.route(in_session("s3"), Reply.json({"actions": [{"action": "NOOP"}]}))


@pytest.fixture
def client(store, schema):
    with TestClient(create_app(settings())) as c:
        yield c


def test_health_and_openapi(client):
    r = client.get("/health")
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["neo4j"] == "ok"
    spec = client.get("/openapi.json").json()
    paths = set(spec["paths"])
    assert {
        "/health", "/groups/{group_id}/messages", "/groups/{group_id}/derive", "/groups/{group_id}/ask",
        "/groups/{group_id}/roster", "/groups/{group_id}/persons/{person_id}/memory",
        "/groups/{group_id}/persons/{person_id}", "/groups/{group_id}/records/{record_id}/provenance",
    } <= paths
    for path, ops in spec["paths"].items():  # response_model on every route
        for op in ops.values():
            assert "application/json" in op["responses"]["200"]["content"], (path, op)
    docs = client.get("/docs")
    assert docs.status_code == 200
    assert "cdn." not in docs.text and "/static/swagger/swagger-ui-bundle.js" in docs.text  # offline
    assert client.get("/static/swagger/swagger-ui-bundle.js").status_code == 200


def test_round_trip_append_derive_read_ask(store, schema, group_id):
    with ScriptedLLM() as server:
        script_writer(server)
        script(server, project=Reply.json({"issue": "trail choice", "rows": ["Ben", "GROUP"], "tense": "full"}),
               answer=Reply.text("The family takes the easy lake trail; Ben still prefers the ridge."))
        with TestClient(create_app(model_settings(server))) as c:
            body = {"name": "family trip", "messages": family_messages()}
            r = c.post(f"/groups/{group_id}/messages", json=body)
            assert r.status_code == 200, r.text
            assert r.json() == {"group_id": group_id, "messages_written": 16, "messages_edited": 0, "messages_skipped": 0,
                                "persons_created": 5, "sessions_created": 3, "group_created": True,
                                "channels_renamed": []}
            again = c.post(f"/groups/{group_id}/messages", json=body).json()  # idempotent by id
            assert (again["messages_written"], again["messages_skipped"], again["group_created"]) == (0, 16, False)
            more = [
                {"id": "m16", "session": "s3", "speaker": "Eli", "text": "Count me in for the walk.",
                 "ts": "2026-05-02T09:04:00"},
                {"id": "m00", "session": "s1", "speaker": "Mom", "text": "My knee still hurts, so I need an easy walk.",
                 "ts": "2026-03-05T10:00:00"},
            ]
            r = c.post(f"/groups/{group_id}/messages", json={"messages": more}).json()
            assert (r["messages_written"], r["messages_skipped"]) == (1, 1)
            turn = store.read_text("MATCH (m:Message {group_id: $g, id: 'm16'}) RETURN m.turn AS t", g=group_id)
            assert turn == [{"t": 4}]  # continues session s3 (turns 0..3 stored)

            roster = c.get(f"/groups/{group_id}/roster").json()["persons"]
            assert [p["id"] for p in roster] == MEMBERS
            assert {p["id"]: p["messages"] for p in roster}["Eli"] == 3

            d = c.post(f"/groups/{group_id}/derive", params={"max_segments": 1}).json()
            assert (d["segments_written"], d["done"]) == (1, False) and d["pending_messages"] == 11
            d = c.post(f"/groups/{group_id}/derive").json()
            assert d["segments_written"] == 2 and d["done"] is True and d["pending_messages"] == 0
            assert d["calls"] == 2 and d["prompt_tokens"] > 0
            d = c.post(f"/groups/{group_id}/derive").json()  # nothing left: no call
            assert (d["segments_written"], d["calls"], d["done"]) == (0, 0, True)

            head = c.get(f"/groups/{group_id}/persons/Ben/memory").json()
            assert head["mode"] == "head" and len(head["chains"]) == 1
            (chain,) = head["chains"]
            assert [r["content"] for r in chain] == ["still prefers the ridge"]
            full = c.get(f"/groups/{group_id}/persons/Ben/memory", params={"mode": "full"}).json()
            assert [r["content"] for r in full["chains"][0]] == ["prefers the ridge trail for its views",
                                                                 "still prefers the ridge"]
            early = c.get(f"/groups/{group_id}/persons/Ben/memory", params={"as_of": "2026-03-10"}).json()
            assert early["mode"] == "as_of" and [r["content"] for r in early["chains"][0]] == [
                "prefers the ridge trail for its views"]
            dad = c.get(f"/groups/{group_id}/persons/Dad/memory").json()
            assert dad["chains"] == [] and [r["owner"] for r in dad["said_about_others"]] == ["GROUP"]

            record_id = chain[0]["id"]
            prov = c.get(f"/groups/{group_id}/records/{record_id}/provenance").json()
            assert prov["record"]["id"] == record_id
            assert [m["speaker"] for m in prov["messages"]] and all(m["speaker"] == "Ben" for m in prov["messages"])
            assert [r["id"] for r in prov["chain"]][-1] == record_id and len(prov["chain"]) == 2

            a = c.post(f"/groups/{group_id}/ask", json={"question": "Which trail did we take, and did Ben agree?",
                                                        "ask": False}).json()
            assert a["answer"] == "The family takes the easy lake trail; Ben still prefers the ridge."
            assert a["projection"]["rows"] == ["Ben", "GROUP"] and a["projection"]["method"] == "model"
            assert [row["kind"] for row in a["rows"]] == ["person", "group"]
            ben_cell = a["rows"][0]["cells"][0]
            assert [v["content"] for v in ben_cell["history"]] == ["prefers the ridge trail for its views"]
            assert set(prov["chain"][0]["from_ids"]) <= set(a["message_ids"])
            assert a["usage"]["answer"]["calls"] == 1 and "s2" in a["timings_s"]


def test_delete_person_leaves_no_trace(store, embedder, client, group_id):
    build_family(store, embedder, group_id)
    ben_msgs = {mid for mid, _, who, _, _ in FAMILY if who == "Ben"}
    ben_records = {"r-ben-ridge", "r-ben-late"}  # owns both; r-ben-late has source Cara
    cara_source = store.read_text(
        "MATCH (d:Derived {group_id: $g, id: 'r-ben-late'})-[:SOURCE]->(p) RETURN p.id AS s", g=group_id)
    assert cara_source == [{"s": "Cara"}]

    r = client.delete(f"/groups/{group_id}/persons/Ben")
    assert r.status_code == 200, r.text
    assert r.json() == {"group_id": group_id, "person_id": "Ben", "person_ids": ["Ben"], "messages_deleted": 3,
                        "records_deleted": 2, "chains_repaired": 0, "person_deleted": True,
                        # issue 24: the report lists what was touched (r-ben-ridge is written FROM
                        # Ben's messages; the three segments covered them; no importer files here)
                        "records_with_their_words": 1, "record_ids": ["r-ben-late", "r-ben-ridge"],
                        "segments_redacted": 3, "import_files_removed": []}
    again = client.delete(f"/groups/{group_id}/persons/Ben").json()  # a no-op
    assert (again["messages_deleted"], again["records_deleted"], again["person_deleted"]) == (0, 0, False)

    # Search (every mode), and the raw fulltext and vector indexes: nothing of Ben's is left.
    for text in ("ridge trail views", "I still prefer the ridge, honestly."):
        for mode in ("hybrid", "fulltext", "vector"):
            hits = search_messages(store, embedder, group_id, text, k=20, mode=mode)
            assert not {h.id for h in hits} & ben_msgs and all(h.speaker != "Ben" for h in hits)
    vec = embedder.encode(["Ben prefers the ridge trail for its views"])[0].tolist()
    nodes = store.read_text(
        "CALL db.index.vector.queryNodes('message_embedding', 1000, $v) YIELD node "
        "WHERE node.group_id = $g RETURN collect(node.id) AS ids", v=vec, g=group_id)[0]["ids"]
    assert nodes and not set(nodes) & ben_msgs
    derived = store.read_text(
        "CALL db.index.vector.queryNodes('derived_embedding', 1000, $v) YIELD node "
        "WHERE node.group_id = $g RETURN collect(node.id) AS ids", v=vec, g=group_id)[0]["ids"]
    assert derived and not set(derived) & ben_records
    for q in ("ridge", "late", "views"):
        ft = store.read_text(
            "CALL db.index.fulltext.queryNodes('derived_content', $q) YIELD node WHERE node.group_id = $g "
            "RETURN collect(node.id) AS ids", q=q, g=group_id)[0]["ids"]
        assert not set(ft) & ben_records
        ft = store.read_text(
            "CALL db.index.fulltext.queryNodes('message_text', $q) YIELD node WHERE node.group_id = $g "
            "RETURN collect(node.id) AS ids", q=q, g=group_id)[0]["ids"]
        assert not set(ft) & ben_msgs
    # Other people's messages and records stay; the conversation order skips the gap.
    left = store.read_text("MATCH (m:Message {group_id: $g}) RETURN count(m) AS n", g=group_id)[0]["n"]
    assert left == len(FAMILY) - 3
    assert store.read_text(
        "MATCH (:Message {group_id: $g, id: 'm05'})-[:NEXT]->(n) RETURN n.id AS id", g=group_id) == [{"id": "m07"}]
    roster = client.get(f"/groups/{group_id}/roster").json()["persons"]
    assert [p["id"] for p in roster] == ["Cara", "Dad", "Eli", "Mom"]
    a = client.post(f"/groups/{group_id}/ask", json={"question": "What does each person think about the ridge trail?"}).json()
    assert "Ben" not in {row["id"] for row in a["rows"]}
    assert not set(a["message_ids"]) & ben_msgs and not set(a["record_ids"]) & ben_records
    assert client.get(f"/groups/{group_id}/persons/Ben/memory").status_code == 404
    assert client.get(f"/groups/{group_id}/records/r-ben-late/provenance").status_code == 404


def test_erasing_a_chains_only_support_repairs_the_head(store, embedder, client, group_id):
    from tests.test_query_fixtures import MemoryWriter, rec

    build_family(store, embedder, group_id, derived=False)
    w = MemoryWriter(store, embedder, group_id)
    w.segment(["m00", "m01", "m02", "m03", "m04", "m05"],
              rec("x1", "Mom", "Mom wants a big party", ["m05"]))
    w.segment(["m06"], rec("x2", "Mom", "Mom wants a barbecue instead", ["m06"], supersedes="x1"))  # Ben's message only
    out = client.delete(f"/groups/{group_id}/persons/Ben").json()
    assert (out["records_deleted"], out["chains_repaired"]) == (1, 1)
    mom = client.get(f"/groups/{group_id}/persons/Mom/memory").json()
    assert [[r["id"] for r in c] for c in mom["chains"]] == [["x1"]]
    assert mom["chains"][0][0]["state"] == "head"


def test_typed_errors(client, store, embedder, group_id):
    assert client.get("/groups/no-such-group/roster").status_code == 404
    r = client.post("/groups/no-such-group/ask", json={"question": "anything?"})
    assert r.status_code == 404 and r.json()["error"] == "NotFoundError"
    build_family(store, embedder, group_id, derived=False)
    assert client.get(f"/groups/{group_id}/persons/Zed/memory").status_code == 404
    assert client.get(f"/groups/{group_id}/records/nope/provenance").status_code == 404
    r = client.post(f"/groups/{group_id}/ask", json={"question": "trail?", "as_of": "next tuesday"})
    assert r.status_code == 422 and r.json()["field"] == "as_of"
    assert client.post(f"/groups/{group_id}/ask", json={"question": ""}).status_code == 422
    assert client.post(f"/groups/{group_id}/ask", json={"question": "x", "s1_k": 0}).status_code == 422
    bad = {"messages": [{"id": "z1", "speaker": "Eve", "text": "hi", "ts": "yesterday-ish"}]}
    r = client.post(f"/groups/{group_id}/messages", json=bad)
    assert r.status_code == 422 and r.json()["field"] == "messages.0.ts"  # a dotted path, as docs/reliability.md says
    r = client.post(f"/groups/{group_id}/derive")  # messages pending, no Writer configured
    assert r.status_code == 503 and r.json()["error"] == "LLMError"
    r = client.get(f"/groups/{group_id}/persons/Mom/memory", params={"mode": "sideways"})
    assert r.status_code == 422
    for exc, code in ((NotFoundError("x"), 404), (ConflictError("x"), 409), (InvalidInputError("x"), 422),
                      (StoreUnavailableError("x"), 503), (LLMError("x"), 503), (GraphMemError("x"), 500)):
        assert status_for(exc) == code


def test_api_key_is_required_when_set(store, schema):
    with TestClient(create_app(settings(api_key="s3cret"))) as c:
        assert c.get("/health").status_code == 200  # health stays open for probes
        assert c.get("/groups/g/roster").status_code == 401
        assert c.get("/groups/g/roster", headers={"X-API-Key": "wrong"}).status_code == 401
        assert c.get("/groups/no-such-group/roster", headers={"X-API-Key": "s3cret"}).status_code == 404


def test_neo4j_down_answers_503():
    with TestClient(create_app(settings(neo4j_uri="bolt://127.0.0.1:1"))) as c:
        r = c.get("/health")
        assert r.status_code == 503 and r.json()["error"] == "StoreUnavailableError"
        assert c.get("/groups/g/roster").status_code == 503


def test_person_whose_id_holds_a_slash_can_be_read_and_erased(client, group_id):
    # speaker ids may contain '/' and spaces (chat exports: "slack/U1 x"); the client sends them
    # as one %2F-escaped path segment, which the server decodes before routing
    sid = "slack/U1 x"
    msgs = [{"id": "m1", "speaker": "Ann", "speaker_id": sid, "text": "the ridge please", "ts": "2026-01-01T10:00:00Z"},
            {"id": "m2", "speaker": "Bo", "speaker_id": "bo", "text": "lake for me", "ts": "2026-01-01T10:01:00Z"}]
    assert client.post(f"/groups/{group_id}/messages", json={"messages": msgs}).status_code == 200
    seg = "slack%2FU1%20x"
    r = client.get(f"/groups/{group_id}/persons/{seg}/memory")
    assert r.status_code == 200, r.text
    assert r.json()["person"]["id"] == sid
    r = client.delete(f"/groups/{group_id}/persons/{seg}")
    assert r.status_code == 200, r.text
    assert (r.json()["person_id"], r.json()["messages_deleted"], r.json()["person_deleted"]) == (sid, 1, True)
    assert [p["id"] for p in client.get(f"/groups/{group_id}/roster").json()["persons"]] == ["bo"]
    assert client.get(f"/groups/{group_id}/persons/{seg}/memory").status_code == 404  # gone, in the error shape
    assert client.get(f"/groups/{group_id}/persons/{seg}/memory").json()["error"] == "NotFoundError"


def test_an_unknown_message_field_is_refused_not_dropped(client, store, group_id):
    """A misspelt field ("replyTo" for reply_to) was ignored: the append answered 200 and the
    message was stored without its reply link, silently. Now 422 names the message and the
    field, and nothing of the request is written (the message stored before stays as it was)."""
    first = {"id": "a1", "speaker": "Ana", "text": "lake or ridge?", "ts": "2026-01-01T10:00:00Z"}
    assert client.post(f"/groups/{group_id}/messages", json={"messages": [first]}).status_code == 200
    typo = {"id": "a2", "speaker": "Bo", "text": "the lake", "ts": "2026-01-01T10:01:00Z", "replyTo": "a1"}
    r = client.post(f"/groups/{group_id}/messages", json={"messages": [dict(first), typo]})
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "InvalidInputError" and r.json()["field"] == "messages.1.replyTo"
    assert "unknown field" in r.json()["detail"] and "reply_to" in r.json()["detail"], r.json()
    r = client.post(f"/groups/{group_id}/messages", json={"messages": [first], "nmae": "Trip"})
    assert r.status_code == 422 and r.json()["field"] == "nmae", r.text
    stored = store.read_text("MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.text AS text ORDER BY id",
                             g=group_id)
    assert stored == [{"id": "a1", "text": "lake or ridge?"}]


def test_an_app_lets_go_of_its_runtime_when_its_lifespan_ends(store, schema):
    # the app object can outlive its lifespan (a test client, a host that embeds the app); the
    # embedder's model and the vector cache the lifespan loaded must go with it, or every app
    # built in one process keeps about 100 MB
    import gc
    import weakref

    app = create_app(settings())
    with TestClient(app) as c:
        assert c.get("/health").status_code == 200
        runtime = weakref.ref(app.state.runtime)
        embedder = weakref.ref(app.state.runtime.embedder)
    gc.collect()
    assert runtime() is None and embedder() is None
