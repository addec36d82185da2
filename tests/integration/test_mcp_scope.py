"""Scope on the MCP server (issue 24, points 3, 6, 7): ``graphmem mcp --group G --read-only``
over stdio, and a scoped key over streamable HTTP; the HTTP transport decides the key before
the body and checks Host and Origin as the API does."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import anyio
import pytest

pytest.importorskip("mcp")

from tests.integration.test_mcp import NEW_CHAT, ROOT, agent, call, call_error  # noqa: E402
from tests.processes import free_port  # noqa: E402
from tests.test_query_fixtures import build_family  # noqa: E402

pytestmark = pytest.mark.neo4j
TOOL_CALLS = [  # every tool that names a group, with arguments
    ("append_messages", {"messages": NEW_CHAT}), ("search_messages", {"query": "trail"}),
    ("ask", {"question": "which trail?", "evidence_only": True}), ("roster", {}),
    ("person_memory", {"person_id": "Ben"}), ("record_provenance", {"record_id": "r-ben-ridge"}),
    ("forget_person", {"person_id": "Ben"}), ("export_group", {}), ("get_message", {"message_id": "m01"}),
    ("read_cypher", {"query": "MATCH (m:Message {group_id: $group_id}) RETURN m.text AS t"}),
    ("forget_group", {}),
]


def counts(store, gid: str) -> list[dict]:
    return store.read_text("MATCH (n {group_id: $g}) RETURN count(n) AS n", g=gid)


def test_stdio_server_limited_to_one_group_and_read_only(store, embedder, make_group):
    own, other = make_group("own"), make_group("other")
    build_family(store, embedder, own)
    build_family(store, embedder, other)
    before = (counts(store, own), counts(store, other))

    async def session() -> None:
        async with agent("--tools", "all", "--group", own, "--read-only") as c:
            for gid in (other, "no-such-group-xyz"):
                for tool, args in TOOL_CALLS:
                    err = await call_error(c, tool, group_id=gid, **args)
                    refused = ("Unknown tool" if tool in ("append_messages", "forget_person", "forget_group")
                               else f"ForbiddenError: this key does not reach group {gid!r}")
                    assert refused in err, (tool, err)
            # --read-only offers no writing tool (a new-user trial: they were listed, and a call
            # was refused with "this key is read-only" on stdio, where there is no key)
            listed = {t.name for t in (await c.list_tools()).tools}
            assert not listed & {"append_messages", "forget_person", "forget_group"} and "read_cypher" in listed
            for tool in ("append_messages", "forget_person", "forget_group"):
                args = dict(TOOL_CALLS)[tool]
                assert "Unknown tool" in await call_error(c, tool, group_id=own, **args), tool
            roster = await call(c, "roster", group_id=own)
            assert {p["id"] for p in roster["persons"]} == {"Ben", "Cara", "Dad", "Eli", "Mom"}
            assert [g["id"] for g in (await call(c, "list_groups"))["groups"]] == [own]
            rows = await call(c, "read_cypher", group_id=own,
                              query="MATCH (m:Message {group_id: $group_id}) RETURN count(m) AS n")
            assert rows["rows"][0]["n"] > 0

    anyio.run(session)
    assert (counts(store, own), counts(store, other)) == before  # nothing written or erased


def test_http_transport_scoped_key_host_origin_and_key_before_body(store, embedder, make_group, tmp_path):
    import httpx
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    own, other = make_group("own"), make_group("other")
    build_family(store, embedder, own, derived=False)
    build_family(store, embedder, other, derived=False)
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [{"name": "bot", "key": "k-own", "groups": [own], "read_only": True}]}))
    port = free_port()
    env = {**os.environ, "GRAPHMEM_API_KEYS_FILE": str(keys), "HF_HUB_OFFLINE": "1"}
    env.pop("GRAPHMEM_API_KEY", None)
    proc = subprocess.Popen([sys.executable, "-m", "graphmem", "mcp", "--transport", "http", "--tools", "all",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
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
        # an unauthenticated 31 MB request is answered before its body is sent
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {31 * 1024 * 1024}\r\n\r\n".encode())
            assert s.recv(100).startswith(b"HTTP/1.1 401")
        hdr = {"X-API-Key": "k-own", "Accept": "application/json, text/event-stream"}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        assert httpx.post(url, json=init, headers={**hdr, "Host": "attacker.example"}).status_code == 421
        assert httpx.post(url, json=init, headers={**hdr, "Origin": "http://evil.example"}).status_code == 403
        assert httpx.post(url, content="a=b", headers={**hdr, "Content-Type": "text/plain"}).status_code == 415

        async def session() -> None:
            http = httpx2.AsyncClient(headers={"X-API-Key": "k-own"}, timeout=120)
            async with http, Client(streamable_http_client(url, http_client=http)) as c:
                assert {p["id"] for p in (await call(c, "roster", group_id=own))["persons"]} >= {"Ben", "Mom"}
                # the key's groups, and no other: list_groups never names a group outside the scope
                assert [g["id"] for g in (await call(c, "list_groups"))["groups"]] == [own]
                for tool, args in TOOL_CALLS:
                    err = await call_error(c, tool, group_id=other, **args)
                    assert f"ForbiddenError: this key does not reach group {other!r}" in err, (tool, err)
                err = await call_error(c, "append_messages", group_id=own, messages=NEW_CHAT)
                assert "ForbiddenError: this key is read-only" in err

        before = counts(store, other)
        anyio.run(session)
        assert counts(store, other) == before
    finally:
        proc.terminate()
        proc.wait(timeout=60)
