"""What an agent sees of graphmem's MCP tools: schemas, refusals, hints and the compact answer.

The server runs over stdio as an agent framework starts it (``python -m graphmem mcp``) and
the MCP SDK's own client is the agent; one test speaks raw JSON-RPC over the pipe instead, and
one drives the MCP Inspector CLI when Node has it offline (skipped otherwise).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from tests.integration.test_mcp import NEW_CHAT, ROOT, agent, call, call_error, server_params  # noqa: E402
from tests.test_query_fixtures import build_family  # noqa: E402

pytestmark = pytest.mark.neo4j

BEN = [{"id": "b1", "speaker": "Ben", "speaker_id": "ben", "text": "I booked Pine Hollow for Saturday.",
        "ts": "2026-05-10T08:00:00Z"},
       {"id": "b2", "speaker": "Cara", "text": "Great, I'll bring the tent.", "ts": "2026-05-10T08:01:00Z"}]


def _all_tool_schemas(tools: list[Any]) -> dict[str, dict[str, Any]]:
    return {t.name: t.input_schema for t in tools}


def test_tool_schemas_describe_bound_and_format_every_argument(group_id):
    async def session() -> None:
        async with agent("--tools", "all") as c:
            tools = (await c.list_tools()).tools
            schemas = _all_tool_schemas(tools)
            for name, schema in schemas.items():
                assert schema["additionalProperties"] is False, name
                for arg, spec in schema["properties"].items():
                    assert spec.get("description"), (name, arg)
                    assert "title" not in spec, (name, arg)
            search = schemas["search_messages"]["properties"]
            assert (search["k"]["minimum"], search["k"]["maximum"], search["k"]["type"]) == (1, 100, "integer")
            assert (search["expand"]["minimum"], search["expand"]["maximum"]) == (0, 5)
            assert search["mode"]["enum"] == ["hybrid", "fulltext", "vector"]
            for tool in ("ask", "person_memory"):
                as_of = schemas[tool]["properties"]["as_of"]
                assert {"type": "string", "format": "date-time"} in as_of["anyOf"], tool
            ask = schemas["ask"]["properties"]
            assert ask["view"]["enum"] == ["compact", "full"] and ask["view"]["default"] == "compact"
            message = schemas["append_messages"]["$defs"]["NewMessage"]
            assert message["properties"]["ts"]["format"] == "date-time"
            assert all(p.get("description") for p in message["properties"].values())
            assert "422" not in message["description"]
            from graphmem.core import paging

            # a list's page is as long by default as in the library, API, CLI and client
            limits = {name: s["properties"]["limit"]["default"] for name, s in schemas.items()
                      if "limit" in s["properties"]}
            assert limits and set(limits.values()) == {paging.DEFAULT_LIMIT}, limits
            timeout = schemas["read_cypher"]["properties"]["timeout_s"]
            assert (timeout["exclusiveMinimum"], timeout["maximum"]) == (0, 60)

            for t in tools:
                d = t.description
                assert d and not re.search(r"^\s{4,}\S", d, re.M), (t.name, d)  # dedented
                assert "Example: " + t.name + "(" in d, t.name
                for word in ("HTTP", "404", "422", "503", "used to", "pydantic"):
                    assert word not in d, (t.name, word)

    anyio.run(session)


def test_raw_json_rpc_tools_list_over_stdio():
    """The same schema as a client that is not the SDK reads it: JSON-RPC lines on stdin/stdout."""
    params = server_params()
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    proc = subprocess.Popen([params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=params.env, cwd=params.cwd)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for line in lines:
            proc.stdin.write(json.dumps(line) + "\n")
            proc.stdin.flush()
        answers = {}
        while 2 not in answers:
            msg = json.loads(proc.stdout.readline())
            if "id" in msg:
                answers[msg["id"]] = msg
    finally:
        proc.kill()
        proc.wait()
    tools = {t["name"]: t for t in answers[2]["result"]["tools"]}
    k = tools["search_messages"]["inputSchema"]["properties"]["k"]
    assert (k["minimum"], k["maximum"], k["default"]) == (1, 100, 10) and k["description"]


def test_refused_arguments_read_as_one_sentence(group_id):
    async def session() -> None:
        async with agent() as c:
            await call(c, "append_messages", group_id=group_id, messages=NEW_CHAT)
            cases = [
                ({"k": "3"}, "argument 'k' must be an integer from 1 to 100 (got a string)"),
                ({"k": True}, "argument 'k' must be an integer from 1 to 100 (got true)"),
                ({"k": 500}, "argument 'k' must be an integer from 1 to 100"),
                ({"k": 2.5}, "argument 'k' must be an integer from 1 to 100 (got a number)"),
                ({"expand": 9}, "argument 'expand' must be an integer from 0 to 5"),
                ({"mode": "fuzzy"}, "argument 'mode' must be one of 'hybrid', 'fulltext', 'vector' (got a string)"),
                ({"limit": 5}, "unknown argument 'limit'; search_messages takes group_id, query, k, expand, mode, "
                               "cursor, max_bytes"),
                ({"max_bytes": 500}, "argument 'max_bytes' must be an integer from 1000 to 1000000"),
                ({"cursor": "search:junk"}, "field 'cursor': not a cursor of this search list (pass next_cursor "
                                            "back unchanged, with the same arguments)"),
            ]
            errors = []
            for extra, want in cases:
                err = await call_error(c, "search_messages", group_id=group_id, query="tent", **extra)
                assert err.endswith(want), (extra, err)
                errors.append(err)
            asof = await call_error(c, "ask", group_id=group_id, question="who?", asOf="2026-01-01T00:00:00Z")
            assert asof.endswith("unknown argument 'asOf' (did you mean 'as_of'?); ask takes group_id, question, "
                                 "as_of, tense, evidence_only, view"), asof
            missing = await call_error(c, "ask", group_id=group_id)
            assert missing.endswith("argument 'question' is required (a string of 1 to 4000 characters)"), missing
            flag = await call_error(c, "ask", group_id=group_id, question="who?", evidence_only="yes")
            assert flag.endswith("argument 'evidence_only' must be true or false (got a string)"), flag
            when = await call_error(c, "ask", group_id=group_id, question="who?", as_of=20260101)
            assert when.endswith("argument 'as_of' must be an ISO-8601 date-time string or null (got an integer)")
            empty = await call_error(c, "append_messages", group_id=group_id, messages=[])
            assert empty.endswith("argument 'messages' must be a list of 1 to 10000 messages"), empty
            typo = await call_error(c, "append_messages", group_id=group_id, messages=[
                {"id": "x1", "speaker": "Ana", "text": "hi", "ts": "2026-03-01T10:00:00", "replyTo": "n1"}])
            assert "unknown field 'messages.0.replyTo' (did you mean 'reply_to'?)" in typo, typo
            params = await call_error(c, "roster", group_id=group_id, extra="[1]")
            assert "unknown argument 'extra'" in params
            for err in [*errors, asof, missing, flag, when, empty, typo]:
                assert "\n" not in err and "pydantic" not in err and "Arguments" not in err, err
            # nothing of a refused call ran: the group holds only the first two messages
            assert len((await call(c, "search_messages", group_id=group_id, query="tent stove", k=10))["hits"]) == 2

    anyio.run(session)


def test_did_you_mean_for_person_and_group_ids(make_group):
    gid, hidden = make_group("Trip"), make_group("trip")

    async def session() -> None:
        async with agent() as c:
            await call(c, "append_messages", group_id=gid, messages=BEN)
            await call(c, "append_messages", group_id=hidden, messages=BEN)
            # another case of an id is the same person (issue 27, item 6: the identity rule) ...
            assert (await call(c, "person_memory", group_id=gid, person_id="Ben"))["person"]["id"] == "ben"
            assert (await call(c, "person_memory", group_id=gid, person_id="CARA "))["person"]["id"] == "Cara"
            # ... and a misspelt one gets the suggestion
            err = await call_error(c, "person_memory", group_id=gid, person_id="Benn")
            assert err.endswith(f"NotFoundError: no person 'Benn' in group {gid!r}; did you mean 'ben' (Ben)?"), err
            err = await call_error(c, "person_memory", group_id=gid, person_id="Cra")
            assert err.endswith("did you mean 'Cara'?"), err
            err = await call_error(c, "person_memory", group_id=gid, person_id="Zed")
            assert err.endswith(f"no person 'Zed' in group {gid!r}"), err
            wrong = gid.lower()  # "trip-..." differs from "Trip-..." by case only
            err = await call_error(c, "roster", group_id=wrong)
            assert err.endswith(f"NotFoundError: no group {wrong!r}; did you mean {gid!r}?"), err
        # a scoped server never hints at a group outside its scope
        async with agent("--group", wrong) as c:
            err = await call_error(c, "roster", group_id=wrong)
            assert err.endswith(f"NotFoundError: no group {wrong!r}"), err

    anyio.run(session)


def test_compact_answer_is_the_default_and_repeats_nothing(store, embedder, group_id):
    build_family(store, embedder, group_id)

    async def session() -> None:
        async with agent() as c:
            q = "Which trail does Ben prefer?"
            compact = await call(c, "ask", group_id=group_id, question=q, evidence_only=True)
            full = await call(c, "ask", group_id=group_id, question=q, evidence_only=True, view="full")
            assert set(compact) == {"view", "group_id", "question", "answer", "evidence", "note", "as_of",
                                    "messages", "records", "evidence_tokens"}
            # what the evidence costs, per part, as the full view says it (issue 29, item 2)
            assert compact["evidence_tokens"] == full["evidence_tokens"] and compact["evidence_tokens"]["total"] > 0
            assert compact["answer"] is None and compact["evidence"] == full["evidence"]
            ids = [m["id"] for m in compact["messages"]]
            assert len(ids) == len(set(ids)) and set(ids) <= set(full["message_ids"])
            shown = [e["id"] for e in full["excerpts"]] + [e["id"] for r in full["rows"] for e in r["raw"]]
            assert ids == list(dict.fromkeys(shown))
            assert all(set(m) == {"id", "speaker", "ts", "text"} for m in compact["messages"]), compact["messages"][:2]
            # offline, the evidence quotes each cited text (with its id): not said a second time
            assert all(m["text"] is None and f"msg {m['id']})" in compact["evidence"] for m in compact["messages"])
            rec = [r["id"] for r in compact["records"]]
            assert len(rec) == len(set(rec)) and set(rec) == set(full["record_ids"]) and rec
            assert all(set(r) == {"id", "layer", "owner", "source", "status"} for r in compact["records"])
            assert {r["status"] for r in compact["records"]} <= {"head", "superseded"}
            size = len(json.dumps(compact)), len(json.dumps(full))
            assert size[0] < 0.6 * size[1], size

    anyio.run(session)


def _inspector() -> list[str] | None:
    """The Inspector CLI that ``make test`` installs (.graphmem/tools), else one npx has offline."""
    local = ROOT / ".graphmem" / "tools" / "node_modules" / ".bin" / "mcp-inspector"
    if local.is_file():
        return [str(local)]
    npx = shutil.which("npx")
    if npx is None:
        return None
    probe = subprocess.run([npx, "--offline", "-y", "@modelcontextprotocol/inspector", "--help"],
                           capture_output=True, text=True, timeout=60)
    return [npx, "--offline", "-y", "@modelcontextprotocol/inspector"] if probe.returncode == 0 else None


def test_mcp_inspector_cli_lists_and_calls(group_id):
    cmd = _inspector()
    if cmd is None:
        pytest.skip("MCP Inspector CLI not installed (make test installs it into .graphmem/tools when npm is there)")
    base = [*cmd, "--cli", sys.executable, "-m", "graphmem", "mcp"]
    listed = subprocess.run([*base, "--method", "tools/list"], capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert listed.returncode == 0, listed.stderr
    names = {t["name"] for t in json.loads(listed.stdout)["tools"]}
    assert "ask" in names
    bad = subprocess.run([*base, "--method", "tools/call", "--tool-name", "search_messages", "--tool-arg",
                          f"group_id={group_id}", "--tool-arg", "query=x", "--tool-arg", "k=500"],
                         capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert "argument 'k' must be an integer from 1 to 100" in bad.stdout + bad.stderr
