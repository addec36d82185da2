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
