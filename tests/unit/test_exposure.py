"""Safe defaults: no open server on a network address without an API key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphmem.core.errors import InvalidInputError
from graphmem.core.exposure import check_exposure, is_loopback, keys_match

ROOT = Path(__file__).resolve().parents[2]


def test_loopback_addresses():
    for host in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]", "LOCALHOST"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "", "10.0.0.5", "192.168.1.2", "example.org", "my-host"):
        assert not is_loopback(host), host


def test_check_exposure_rule():
    assert check_exposure("127.0.0.1", "") is False
    assert check_exposure("0.0.0.0", "k3y") is False
    with pytest.raises(InvalidInputError) as e:
        check_exposure("0.0.0.0", "")
    assert e.value.field == "host" and "GRAPHMEM_API_KEY" in str(e.value)
    assert check_exposure("0.0.0.0", "", allow_no_key=True) is True


def test_keys_match():
    assert keys_match("abc", "abc")
    assert not keys_match("abd", "abc") and not keys_match("", "abc") and not keys_match(None, "abc")
    assert not keys_match("abc ", "abc")


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GRAPHMEM_API_KEY", None)
    env.update(extra)
    return env


def _graphmem(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # a server that wrongly starts never exits: the timeout turns that into a failure
    return subprocess.run([sys.executable, "-m", "graphmem", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--transport", "http"]])
def test_non_loopback_without_key_refuses_to_start(command):
    r = _graphmem(*command, "--host", "0.0.0.0", "--port", "1", env=_env(GRAPHMEM_API_KEY=""))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "refusing to serve" in r.stderr and "0.0.0.0" in r.stderr and "GRAPHMEM_API_KEY" in r.stderr
