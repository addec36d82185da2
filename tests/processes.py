"""Helpers for tests that run graphmem as a real process (``graphmem serve``, ``graphmem mcp``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout_s: float = 120.0) -> httpx.Response:
    """GET ``url`` until the server answers (any status); fail when the process exits first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            return httpx.get(url, timeout=2)
        except httpx.TransportError:
            time.sleep(0.5)
    raise AssertionError(f"{url} never answered")


def start_serve(port: int, env: dict[str, str], *args: str) -> subprocess.Popen:
    """Start ``python -m graphmem serve`` on 127.0.0.1:``port`` and wait until /health is 200."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "graphmem", "serve", "--port", str(port), "--log-level", "warning", *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else "serve exited"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "graphmem serve never became healthy"
        time.sleep(0.5)


def stop_serve(proc: subprocess.Popen) -> None:
    """Terminate a server started by :func:`start_serve` (kill it when it does not stop)."""
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def served_api(key: str) -> Iterator[str]:
    """A ``graphmem serve`` of this checkout with API key ``key`` and no model endpoint; yields
    its base URL and stops it afterwards."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHMEM_LLM_", "GRAPHMEM_WRITER_"))}
    env.update(GRAPHMEM_API_KEY=key, HF_HUB_OFFLINE="1")
    port = free_port()
    proc = start_serve(port, env)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_serve(proc)
