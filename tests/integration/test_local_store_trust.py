"""A local store only its owner can open (issue 24, point 2), on second servers with their own
temporary homes and free ports (never the main test server, which keeps running).

Attacks: a web page on another origin POSTs Cypher to the store's HTTP API (the browser sends an
``Origin`` header and, for a request with credentials, a preflight first); anybody who read the
README tries the published password. Proves: the first start writes a random password 0600 in a
0700 home, graphmem (settings, API) reads it, the old fixed password and other origins are
refused; a store made with the old password keeps working and is upgraded by ``rotate``.
"""

from __future__ import annotations

import base64
import stat

import httpx
import pytest
from neo4j import GraphDatabase
from neo4j.exceptions import AuthError

from graphmem.core.config import LEGACY_PASSWORD, Settings, password_file
from graphmem.store.local_server import LocalServer
from tests.processes import free_port

pytestmark = pytest.mark.neo4j

EVIL = "http://evil.example"


def _settings(home, **kw) -> Settings:
    return Settings(_env_file=None, home=home, neo4j_bolt_port=free_port(), neo4j_http_port=free_port(),
                    neo4j_heap_mb=256, neo4j_pagecache_mb=64, **kw)


def _bolt_ok(uri: str, password: str) -> bool:
    try:
        with GraphDatabase.driver(uri, auth=("neo4j", password)) as d:
            return d.execute_query("RETURN 1 AS x").records[0]["x"] == 1
    except AuthError:
        return False


def _basic(password: str) -> str:
    return "Basic " + base64.b64encode(f"neo4j:{password}".encode()).decode()


def test_fresh_home_random_private_password_and_no_cross_origin_answer(tmp_path, monkeypatch, driver):
    monkeypatch.delenv("GRAPHMEM_NEO4J_PASSWORD", raising=False)
    home = tmp_path / "gm"
    settings = _settings(home)
    assert settings.password_source == "none" and not settings.neo4j_password.get_secret_value()
    server = LocalServer(settings)
    try:
        st = server.start()
        path = password_file(home)
        password = path.read_text()
        # random, private, and what this process now connects with
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        assert len(password) >= 32 and password != LEGACY_PASSWORD
        assert settings.neo4j_password.get_secret_value() == password and settings.password_source == "file"
        again = Settings(_env_file=None, home=home)  # what the CLI, API, MCP and tests build
        assert again.neo4j_password.get_secret_value() == password and again.password_source == "file"
        assert _bolt_ok(st.bolt_uri, password)
        assert not _bolt_ok(st.bolt_uri, LEGACY_PASSWORD)  # the published password opens nothing
        assert _settings(tmp_path / "other").neo4j_password.get_secret_value() == ""  # per home

        # the attack: a page on another origin, even one that knew the password
        tx = f"http://127.0.0.1:{settings.neo4j_http_port}/db/neo4j/tx/commit"
        body = {"statements": [{"statement": "MATCH (n) RETURN count(n) AS n"}]}
        pre = httpx.options(tx, headers={"Origin": EVIL, "Access-Control-Request-Method": "POST",
                                         "Access-Control-Request-Headers": "authorization,content-type"})
        post = httpx.post(tx, json=body, headers={"Origin": EVIL, "Authorization": _basic(password)})
        for r in (pre, post):
            allowed = r.headers.get("access-control-allow-origin")
            assert allowed not in ("*", EVIL), (r.request.method, allowed)  # the browser refuses
            assert allowed == f"http://127.0.0.1:{settings.neo4j_http_port}"  # its own Browser only
        # without the password the request itself fails, whatever the origin
        anon = httpx.post(tx, json=body, headers={"Origin": EVIL})
        assert anon.status_code == 401

        # the API of this home reads the file as well
        from fastapi.testclient import TestClient

        from api.main import create_app

        with TestClient(create_app(Settings(_env_file=None, home=home, neo4j_uri=st.bolt_uri))) as c:
            assert c.get("/health").status_code == 200

        # a restart keeps the password (the file is read, not regenerated)
        assert server.stop() is True
        st = LocalServer(Settings(_env_file=None, home=home, neo4j_bolt_port=settings.neo4j_bolt_port,
                                  neo4j_http_port=settings.neo4j_http_port, neo4j_heap_mb=256,
                                  neo4j_pagecache_mb=64)).start()
        assert path.read_text() == password and _bolt_ok(st.bolt_uri, password)
    finally:
        LocalServer(settings).stop()
    driver.verify_connectivity()  # the main test server was not touched


def test_env_variable_overrides_the_password_file(tmp_path, monkeypatch):
    home = tmp_path / "gm"
    home.mkdir()
    password_file(home).write_text("from-the-file\n")
    monkeypatch.delenv("GRAPHMEM_NEO4J_PASSWORD", raising=False)
    s = Settings(_env_file=None, home=home)
    assert (s.neo4j_password.get_secret_value(), s.password_source) == ("from-the-file", "file")
    monkeypatch.setenv("GRAPHMEM_NEO4J_PASSWORD", "from-the-env")
    s = Settings(_env_file=None, home=home)
    assert (s.neo4j_password.get_secret_value(), s.password_source) == ("from-the-env", "given")
    # a store made before passwords were generated: the old fixed one, until rotated
    legacy = tmp_path / "old"
    (legacy / "neo4j" / "data" / "dbms").mkdir(parents=True)
    monkeypatch.delenv("GRAPHMEM_NEO4J_PASSWORD")
    s = Settings(_env_file=None, home=legacy)
    assert (s.neo4j_password.get_secret_value(), s.password_source) == (LEGACY_PASSWORD, "legacy")


def test_store_made_with_the_old_fixed_password_works_and_rotates(tmp_path, monkeypatch):
    monkeypatch.delenv("GRAPHMEM_NEO4J_PASSWORD", raising=False)
    home = tmp_path / "gm"
    made = _settings(home, neo4j_password=LEGACY_PASSWORD)  # what graphmem before issue 24 did
    server = LocalServer(made)
    try:
        st = server.start()
        assert not password_file(home).exists()
        upgraded = Settings(_env_file=None, home=home, neo4j_bolt_port=made.neo4j_bolt_port,
                            neo4j_http_port=made.neo4j_http_port)
        assert upgraded.password_source == "legacy" and _bolt_ok(st.bolt_uri, upgraded.neo4j_password.get_secret_value())
        LocalServer(upgraded).rotate_password()
        new = password_file(home).read_text()
        assert stat.S_IMODE(password_file(home).stat().st_mode) == 0o600
        assert new != LEGACY_PASSWORD and upgraded.neo4j_password.get_secret_value() == new
        assert _bolt_ok(st.bolt_uri, new) and not _bolt_ok(st.bolt_uri, LEGACY_PASSWORD)
        assert not list(home.glob("*.new"))
        # a password the user set is theirs: graphmem does not rotate it
        from graphmem.core.errors import LocalServerError

        with pytest.raises(LocalServerError, match="GRAPHMEM_NEO4J_PASSWORD is set"):
            LocalServer(Settings(_env_file=None, home=home, neo4j_password=new,
                                 neo4j_bolt_port=made.neo4j_bolt_port)).rotate_password()
    finally:
        server.stop()
