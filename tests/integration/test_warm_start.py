"""Cold start (issue 25, item 3): the API and the MCP server load the embedder while they start,
before they report ready, so no request pays for the load. Read from the servers' own logs: the
"embedder ... loaded" line comes before uvicorn's "Application startup complete" (after which
requests are served), and an MCP stdio server that is only initialised and closed has loaded it
too (its lifespan ran before the first message was read)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from tests.processes import ROOT, free_port

pytestmark = pytest.mark.neo4j
LOADED = "embedder onnx loaded in"
READY = "Application startup complete"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHMEM_LLM_", "GRAPHMEM_WRITER_"))}
    env.update(HF_HUB_OFFLINE="1", GRAPHMEM_API_KEY="warm-test-key", GRAPHMEM_EMBED_BACKEND="onnx")
    return env


def _log_until_ready(args: list[str], url: str) -> str:
    proc = subprocess.Popen([sys.executable, "-m", "graphmem", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=_env(), cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else "exited"
            try:
                httpx.get(url, timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, f"{url} never answered"
                time.sleep(0.3)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.stderr.read() if proc.stderr else ""


@pytest.mark.parametrize("face", ["serve", "mcp-http"])
def test_http_servers_load_the_embedder_before_they_report_ready(schema, face):
    port = free_port()
    if face == "serve":
        log = _log_until_ready(["serve", "--port", str(port), "--log-level", "info"], f"http://127.0.0.1:{port}/health")
    else:
        log = _log_until_ready(["mcp", "--transport", "http", "--port", str(port), "--log-level", "info"],
                               f"http://127.0.0.1:{port}/mcp")
    assert LOADED in log and READY in log, log[-2000:]
    assert log.index(LOADED) < log.index(READY), log[-2000:]


def test_mcp_stdio_loads_the_embedder_before_the_first_tool_call(schema):
    proc = subprocess.Popen([sys.executable, "-m", "graphmem", "mcp", "--log-level", "info"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), cwd=ROOT)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "warm-test", "version": "0"}}}
    assert proc.stdin and proc.stdout
    proc.stdin.write(json.dumps(init) + "\n")
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    assert reply["id"] == 1 and "result" in reply, reply
    proc.stdin.close()  # no tool was called
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
    log = proc.stderr.read() if proc.stderr else ""
    assert LOADED in log, log[-2000:]
