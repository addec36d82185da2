"""``graphmem mcp`` driven by the MCP SDK's own client over stdio, against the real Neo4j.

The server runs as a subprocess (``python -m graphmem mcp --tools all``), exactly as an
agent framework starts it; the test is the agent: it lists the tools, appends a chat, asks,
reads memory and provenance, and erases a person, then checks that the person is gone from
every later tool answer.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

mcp = pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

from tests.processes import free_port  # noqa: E402
from tests.test_query_fixtures import FAMILY, build_family  # noqa: E402

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]


def server_params(*args: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k.startswith(("GRAPHMEM_", "HF_", "TRANSFORMERS_"))}
    env.setdefault("HF_HUB_OFFLINE", "1")
    return StdioServerParameters(command=sys.executable, args=["-m", "graphmem", "mcp", *args],
                                 env=env, cwd=str(ROOT))


@asynccontextmanager
async def agent(*args: str) -> AsyncIterator[Client]:
    async with Client(server_params(*args), read_timeout_seconds=120) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its result."""
    r = await client.call_tool(tool, arguments)
    assert not r.is_error, f"{tool} failed: {r.content}"
    # the data once: one text block of compact JSON, no structuredContent (docs/mcp.md, "Results")
    assert r.structured_content is None and len(r.content) == 1, r
    text = r.content[0].text
    assert "\n  " not in text  # compact, not pretty-printed
    result: dict[str, Any] = json.loads(text)
    return result


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    r = await client.call_tool(tool, arguments)
    assert r.is_error, f"{tool} should have failed: {r.structured_content}"
    return r.content[0].text


NEW_CHAT = [
    {"id": "n1", "session": "s4", "speaker": "Ben", "text": "I booked the campsite at Pine Hollow for Saturday night.",
     "ts": "2026-05-10T08:00:00"},
    {"id": "n2", "session": "s4", "speaker": "Cara", "text": "Great, I'll pack the tent and the stove.",
     "ts": "2026-05-10T08:01:00"},
]
BEN_IDS = {mid for mid, _, who, _, _ in FAMILY if who == "Ben"} | {"n1"}
BEN_TEXTS = {text for _, _, who, text, _ in FAMILY if who == "Ben"} | {NEW_CHAT[0]["text"]}


def test_agent_session_over_stdio(store, embedder, group_id):
    build_family(store, embedder, group_id)  # System 1 + a derived memory with update chains

    async def session() -> None:
        async with agent("--tools", "all") as c:
            # --- the toolset and its annotations
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == {"append_messages", "search_messages", "ask", "list_groups", "roster", "person_memory",
                                  "record_provenance", "get_message", "forget_person", "read_cypher", "export_group",
                                  "forget_group"}
            assert all(t.output_schema is None for t in tools.values())  # results are text (docs/mcp.md)
            for name in ("forget_person", "forget_group"):
                assert tools[name].annotations.destructive_hint is True
                assert tools[name].annotations.read_only_hint is False
            assert tools["append_messages"].annotations.read_only_hint is False
            for name in ("search_messages", "ask", "list_groups", "roster", "person_memory", "record_provenance",
                         "get_message", "read_cypher", "export_group"):
                assert tools[name].annotations.read_only_hint is True, name
                assert tools[name].annotations.destructive_hint is False, name
            assert "messages" in tools["append_messages"].input_schema["properties"]

            # --- append a chat (idempotent by id)
            first = await call(c, "append_messages", group_id=group_id, messages=NEW_CHAT)
            assert (first["messages_written"], first["messages_skipped"]) == (2, 0)
            again = await call(c, "append_messages", group_id=group_id, messages=NEW_CHAT)
            assert (again["messages_written"], again["messages_skipped"]) == (0, 2)
            bad = await call_error(c, "append_messages", group_id=group_id,
                                   messages=[{"id": "n3", "speaker": "Eli", "text": "hi", "ts": "not a time"}])
            assert "n3" in bad or "ts" in bad

            # --- ask in evidence mode: evidence with the cited messages (compact by default), no answer
            result = await call(c, "ask", group_id=group_id, question="Where did Ben book the campsite?",
                                evidence_only=True)
            assert result["answer"] is None and result["view"] == "compact"
            assert "n1" in [m["id"] for m in result["messages"]]
            assert "Pine Hollow" in result["evidence"]

            hits = (await call(c, "search_messages", group_id=group_id, query="tent and stove", k=3))["hits"]
            assert hits[0]["id"] == "n2" and hits[0]["speaker"] == "Cara"

            # --- person memory, provenance, read-only Cypher, export
            roster = {p["id"]: p for p in (await call(c, "roster", group_id=group_id))["persons"]}
            assert roster["Ben"]["messages"] == len(BEN_IDS)
            mem = await call(c, "person_memory", group_id=group_id, person_id="Mom", mode="full")
            anniversary = [ch for ch in mem["chains"] if ch[-1]["id"] == "a3"]
            assert [r["id"] for r in anniversary[0]] == ["a1", "a2", "a3"]
            past = await call(c, "person_memory", group_id=group_id, person_id="Mom", as_of="2026-04-01T00:00:00")
            assert "a2" in [ch[-1]["id"] for ch in past["chains"]]
            prov = await call(c, "record_provenance", group_id=group_id, record_id="r-ben-ridge")
            assert [m["id"] for m in prov["messages"]] == ["m01", "m06"]

            rows = await call(c, "read_cypher", group_id=group_id, max_rows=5,
                              query="MATCH (m:Message {group_id: $group_id}) RETURN m.id AS id ORDER BY id")
            assert rows["columns"] == ["id"] and len(rows["rows"]) == 5 and rows["truncated"] is True
            for write in ("CREATE (x:Intruder {group_id: $group_id}) RETURN x",
                          "MATCH (m:Message {group_id: $group_id}) DETACH DELETE m",
                          "MATCH (p:Person {group_id: $group_id}) SET p.name = 'x'"):
                assert "read-only" in await call_error(c, "read_cypher", group_id=group_id, query=write)
            slow = await call_error(c, "read_cypher", group_id=group_id, timeout_s=0.5,
                                    query="UNWIND range(1, 1000000000) AS x WITH x WHERE x < 0 RETURN count(x) AS n")
            assert "time limit" in slow
            intruders = "MATCH (x:Intruder) WHERE x.group_id = $group_id RETURN count(x) AS n"
            assert (await call(c, "read_cypher", group_id=group_id, query=intruders))["rows"] == [{"n": 0}]
            # a scan of every group is refused by the plan, not run
            assert "group_id = $group_id" in await call_error(c, "read_cypher", group_id=group_id,
                                                               query="MATCH (x:Message) RETURN x.text AS t")

            export = await call(c, "export_group", group_id=group_id, with_derived=True, max_bytes=1_000_000)
            assert export["next_cursor"] is None
            lines = export["lines"]
            assert {x["kind"] for x in lines} == {"group", "person", "session", "message", "segment", "record"}
            assert all("embedding" not in x for x in lines)
            assert {"n1": "Ben"}.items() <= {x["id"]: x["person_id"] for x in lines if x["kind"] == "message"}.items()
            assert any(x["kind"] == "record" and "Ben" in (x["owner"], x["source"]) for x in lines)

            # --- forget Ben; he is gone from every later answer
            summary = await call(c, "forget_person", group_id=group_id, person_id="Ben")
            assert summary["messages_deleted"] == len(BEN_IDS) and summary["person_deleted"] is True
            assert summary["records_deleted"] >= 2  # r-ben-ridge and r-ben-late (owned by Ben)

            assert "Ben" not in {p["id"] for p in (await call(c, "roster", group_id=group_id))["persons"]}
            for q in ("ridge trail views", "campsite Pine Hollow", "easy trail ridge better"):
                hits = (await call(c, "search_messages", group_id=group_id, query=q, k=10))["hits"]
                assert hits and not {h["id"] for h in hits} & BEN_IDS
                assert all(h["speaker"] != "Ben" for h in hits)
            for q in ("Which trail does Ben prefer?", "Where did Ben book the campsite?"):
                r = await call(c, "ask", group_id=group_id, question=q, evidence_only=True, view="full")
                assert not set(r["message_ids"]) & BEN_IDS
                assert not any(t in r["evidence"] for t in BEN_TEXTS)
                assert not {"r-ben-ridge", "r-ben-late"} & set(r["record_ids"])
            assert "NotFoundError" in await call_error(c, "person_memory", group_id=group_id, person_id="Ben")
            assert "NotFoundError" in await call_error(c, "record_provenance", group_id=group_id,
                                                       record_id="r-ben-ridge")
            export = await call(c, "export_group", group_id=group_id, with_derived=True, max_bytes=1_000_000)
            lines = export["lines"]
            assert not {x["id"] for x in lines if x["kind"] == "message"} & BEN_IDS
            assert not [x for x in lines if x["kind"] == "person" and x["id"] == "Ben"]
            assert not [x for x in lines if x.get("person_id") == "Ben" or "Ben" in (x.get("owner"), x.get("source"))]
            assert not any(t in json.dumps(lines, ensure_ascii=False) for t in BEN_TEXTS)
            left = await call(c, "read_cypher", group_id=group_id, query=(
                "MATCH (m:Message {group_id: $group_id}) WHERE m.speaker = 'Ben' RETURN count(m) AS n"))
            assert left["rows"] == [{"n": 0}]
            again = await call(c, "forget_person", group_id=group_id, person_id="Ben")
            assert again["messages_deleted"] == 0 and again["person_deleted"] is False

            # --- erase the whole group: nothing of it is left, a second call says so
            erased = await call(c, "forget_group", group_id=group_id)
            assert erased["group_deleted"] is True and erased["nodes_deleted"] > 20
            assert "NotFoundError" in await call_error(c, "roster", group_id=group_id)
            assert "NotFoundError" in await call_error(c, "forget_group", group_id=group_id)
        assert store.read_text("MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) RETURN count(n) AS n",
                               g=group_id) == [{"n": 0}]

    anyio.run(session)


def err_ends(err: str, tail: str) -> bool:
    assert err.endswith(tail), err
    return True


def test_core_toolset_and_unknown_group(group_id):
    async def session() -> None:
        async with agent() as c:  # default: the core toolset only
            names = {t.name for t in (await c.list_tools()).tools}
            assert names == {"append_messages", "search_messages", "ask", "list_groups", "roster", "person_memory",
                             "record_provenance", "get_message", "forget_person"}
            assert "NotFoundError" in await call_error(c, "roster", group_id=group_id)
            assert "NotFoundError" in await call_error(c, "forget_person", group_id=group_id, person_id="x")
            # a misspelt argument ("asOf" for "as_of") is refused, not ignored, and the schema says so
            err = await call_error(c, "ask", group_id=group_id, question="who?", asOf="2026-01-01T00:00:00Z")
            assert err.endswith("unknown argument 'asOf' (did you mean 'as_of'?); ask takes group_id, question, "
                                "as_of, tense, evidence_only, view"), err
            schemas = {t.name: t.input_schema for t in (await c.list_tools()).tools}
            assert all(s.get("additionalProperties") is False for s in schemas.values())
            # an empty message list is refused as the API refuses it (422), naming the argument,
            # and creates no group
            empty = await call_error(c, "append_messages", group_id=group_id, messages=[])
            assert err_ends(empty, "argument 'messages' must be a list of 1 to 10000 messages")
            assert "NotFoundError" in await call_error(c, "roster", group_id=group_id)
            # a group id with '/' never exists: the reads say why, append names the field
            slashed = group_id + "/x"
            for tool in ("roster", "search_messages"):
                args = {"query": "hello"} if tool == "search_messages" else {}
                err = await call_error(c, tool, group_id=slashed, **args)
                assert f"NotFoundError: no group {slashed!r}: group ids contain no '/'" in err, err
            err = await call_error(c, "append_messages", group_id=slashed, messages=[
                {"id": "m1", "speaker": "Ana", "text": "hi", "ts": "2026-03-01T10:00:00"}])
            assert "field 'group'" in err and "'/'" in err, err

    anyio.run(session)


def test_example_agent_config_starts_the_server(group_id):
    """examples/mcp_config.json, the snippet an agent framework (Claude Desktop, Cursor, ...)
    takes, starts a working server: its command and args, with this machine's Neo4j."""
    spec = json.loads((ROOT / "examples" / "mcp_config.json").read_text())["mcpServers"]["graphmem"]
    command = Path(sys.executable).with_name(spec["command"])  # the installed console script
    assert command.exists(), command
    from graphmem.core.config import get_settings

    # the snippet's Neo4j location and home are examples: point them at the server these tests use
    assert "GRAPHMEM_NEO4J_PASSWORD" not in spec["env"]  # no password in a file people copy
    env = {**spec["env"], "GRAPHMEM_NEO4J_URI": get_settings().neo4j_uri,
           "GRAPHMEM_HOME": str(get_settings().home.resolve()),
           **{k: v for k, v in os.environ.items() if k.startswith("GRAPHMEM_")}}
    params = StdioServerParameters(command=str(command), args=spec["args"], env=env, cwd=str(ROOT))

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as c:
            assert "ask" in {t.name for t in (await c.list_tools()).tools}
            out = await call(c, "append_messages", group_id=group_id, name="config check", messages=NEW_CHAT)
            assert out["group_created"] is True and out["messages_written"] == 2
            roster = await call(c, "roster", group_id=group_id)
            assert {p["id"] for p in roster["persons"]} == {"Ben", "Cara"}

    anyio.run(session)


def test_streamable_http_requires_the_key(store, embedder, group_id):
    """``graphmem mcp --transport http``: 401 without the key; with it, the SDK's streamable
    HTTP client lists the tools and reads the group."""
    import subprocess

    import httpx
    import httpx2
    from mcp.client.streamable_http import streamable_http_client


    build_family(store, embedder, group_id, derived=False)
    port = free_port()
    env = {**os.environ, "GRAPHMEM_API_KEY": "s3cret-key", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "graphmem", "mcp", "--transport", "http", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        import time

        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                r = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "server never answered"
                time.sleep(0.5)
        assert r.status_code == 401
        assert httpx.post(url, headers={"X-API-Key": "wrong"}, json={}, timeout=5).status_code == 401

        async def session() -> None:
            http = httpx2.AsyncClient(headers={"X-API-Key": "s3cret-key"}, timeout=120)
            async with http, Client(streamable_http_client(url, http_client=http)) as c:
                names = {t.name for t in (await c.list_tools()).tools}
                assert "forget_person" in names and "read_cypher" not in names
                roster = await call(c, "roster", group_id=group_id)
                assert {p["id"] for p in roster["persons"]} == {"Ben", "Cara", "Dad", "Eli", "Mom"}

        anyio.run(session)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    # where it listens, said once (a new-user trial: the command printed nothing at all), no key
    said = proc.stderr.read() if proc.stderr else ""
    assert f"graphmem mcp: streamable HTTP at http://127.0.0.1:{port}/mcp (core tools; a key is required)" in said
    assert "s3cret-key" not in said
