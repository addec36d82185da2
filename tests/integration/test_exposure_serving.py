"""Serving on a network address: the loud override, request size limits, CORS."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.processes import ROOT, free_port, wait_http


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GRAPHMEM_API_KEY", None)
    env.update(extra)
    return env


@pytest.mark.neo4j
def test_override_serves_open_and_says_so_loudly():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "graphmem", "serve", "--host", "0.0.0.0", "--port", str(port), "--allow-no-key"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=ROOT,
    )
    try:
        assert wait_http(f"http://127.0.0.1:{port}/health", proc).status_code == 200
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=60)
    assert "WARNING" in stderr and "WITHOUT an API key" in stderr


@pytest.mark.neo4j
def test_request_size_limit_and_cors_off_by_default(store, schema, group_id):
    from fastapi.testclient import TestClient

    from api.main import create_app
    from graphmem.core.config import Settings

    big = {"messages": [{"id": "m1", "speaker": "Ann", "text": "x" * 200_000, "ts": "2026-01-01T00:00:00"}]}
    with TestClient(create_app(Settings(_env_file=None, api_max_request_mb=0.1))) as c:
        r = c.post(f"/groups/{group_id}/messages", json=big)
        assert r.status_code == 413 and r.json()["error"] == "RequestTooLarge"

        def chunks():  # no Content-Length: the limit is enforced while reading
            import json

            data = json.dumps(big).encode()
            for i in range(0, len(data), 8192):
                yield data[i:i + 8192]

        r = c.post(f"/groups/{group_id}/messages", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        assert c.get(f"/groups/{group_id}/roster").status_code == 404  # nothing was written
        pre = c.options(f"/groups/{group_id}/roster", headers={
            "Origin": "https://evil.example", "Access-Control-Request-Method": "GET"})
        assert "access-control-allow-origin" not in pre.headers
        small = c.post(f"/groups/{group_id}/messages", json={"messages": [{**big["messages"][0], "text": "hi"}]})
        assert small.status_code == 200

    with TestClient(create_app(Settings(_env_file=None, api_cors_origins="https://app.example"))) as c:
        ok = c.options(f"/groups/{group_id}/roster", headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "GET"})
        assert ok.headers.get("access-control-allow-origin") == "https://app.example"
        other = c.get("/health", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
