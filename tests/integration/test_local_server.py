"""The local Neo4j server manager, on a second server with its own home and ports.

Proves: assembly from Maven into a fresh folder, start waits until RETURN 1 succeeds, a second
start is harmless (same process), status, and stop ends only its own process (the main test
server keeps running).
"""

from __future__ import annotations

import os
import socket

import pytest

from graphmem.core.config import Settings
from graphmem.store.local_server import LocalServer

pytestmark = pytest.mark.neo4j


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_second_server_start_twice_status_and_stop_own_process(tmp_path, driver):
    settings = Settings(
        home=tmp_path / "gm", neo4j_bolt_port=free_port(), neo4j_http_port=free_port(),
        neo4j_heap_mb=256, neo4j_pagecache_mb=64, neo4j_password="second-server-pw",
    )
    server = LocalServer(settings)
    try:
        first = server.start()
        assert first.running and first.pid
        conf = (server.conf / "neo4j.conf").read_text()
        assert f"server.bolt.listen_address=127.0.0.1:{settings.neo4j_bolt_port}" in conf
        assert "dbms.usage_report.enabled=false" in conf
        again = server.start()  # harmless: same process
        assert again.pid == first.pid
        from neo4j import GraphDatabase

        with GraphDatabase.driver(first.bolt_uri, auth=("neo4j", "second-server-pw")) as d:
            assert d.execute_query("RETURN 1 AS x").records[0]["x"] == 1
        # Browser's discovery document must point at this server's Bolt port, not the default
        import httpx

        discovery = httpx.get(f"http://127.0.0.1:{settings.neo4j_http_port}/").json()
        assert discovery["bolt_direct"] == f"bolt://127.0.0.1:{settings.neo4j_bolt_port}"
    finally:
        assert server.stop() is True
    assert server.status().running is False
    assert server.stop() is False  # nothing left to stop
    driver.verify_connectivity()  # the main test server was not touched
    assert os.path.exists(server.lib / ".assembled")


def test_start_refuses_a_port_taken_by_another_process(tmp_path):
    from graphmem.core.errors import LocalServerError

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        server = LocalServer(Settings(home=tmp_path / "gm", neo4j_bolt_port=port, neo4j_http_port=free_port()))
        with pytest.raises(LocalServerError, match=f"port {port} on 127.0.0.1 is already in use"):
            server.start()
    assert not (tmp_path / "gm" / "neo4j" / "lib").exists()  # failed before assembling anything


def test_uri_defaults_to_the_local_bolt_port(monkeypatch):
    monkeypatch.delenv("GRAPHMEM_NEO4J_URI", raising=False)
    assert Settings(neo4j_bolt_port=7999).neo4j_uri == "bolt://127.0.0.1:7999"
    assert Settings(neo4j_uri="neo4j+s://x.databases.neo4j.io").neo4j_uri == "neo4j+s://x.databases.neo4j.io"


def test_a_start_that_times_out_leaves_no_process_behind(tmp_path):
    from graphmem.core.errors import LocalServerError

    settings = Settings(
        home=tmp_path / "gm", neo4j_bolt_port=free_port(), neo4j_http_port=free_port(),
        neo4j_heap_mb=256, neo4j_pagecache_mb=64, neo4j_start_timeout_s=0.5,
    )
    server = LocalServer(settings)
    with pytest.raises(LocalServerError, match="did not become ready"):
        server.start()
    home = str(server.home)
    alive = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if home.encode() in f.read():
                        alive.append(entry)
            except OSError:
                pass
    assert alive == [] and server.status().running is False
