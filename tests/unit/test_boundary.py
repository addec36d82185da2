"""The HTTP boundary (graphmem/boundary.py) at the ASGI level: every refusal is decided from the
headers, and the app behind it never sees, nor the middleware reads, a body it refuses."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import SecretStr

from graphmem.access import ApiKey, authenticate, load_keys
from graphmem.boundary import ACCESS_SCOPE_KEY, Boundary
from graphmem.core.errors import ForbiddenError, InvalidInputError

MB = 1024 * 1024
KEYS = [ApiKey(name="all", key=SecretStr("k-all")),
        ApiKey(name="fam", key=SecretStr("k-fam"), groups=["family"]),
        ApiKey(name="ro", key=SecretStr("k-ro"), groups=["family"], read_only=True)]


class App:
    """An ASGI app that reads the whole body (as FastAPI does) and answers 200."""

    def __init__(self) -> None:
        self.called = 0
        self.body = b""
        self.scope: dict[str, Any] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.called += 1
        self.scope = scope
        while True:
            m = await receive()
            if m["type"] != "http.request":
                break
            self.body += m.get("body", b"")
            if not m.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})


class Client:
    """Feeds a request to the boundary and counts what the server side pulled."""

    def __init__(self, chunks: list[bytes], delay_s: float = 0.0) -> None:
        self.chunks = chunks
        self.delay_s = delay_s
        self.pulled = 0  # bytes handed to whoever called receive()
        self.receive_calls = 0
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        self.receive_calls += 1
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if not self.chunks:
            return {"type": "http.disconnect"}
        chunk = self.chunks.pop(0)
        self.pulled += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": bool(self.chunks)}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return self.sent[0]["status"]

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.sent[0]["headers"])

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(b"".join(m.get("body", b"") for m in self.sent[1:]))


def scope(method: str = "POST", path: str = "/groups/family/messages", headers: dict[str, str] | None = None,
          server: tuple[str, int] = ("127.0.0.1", 8000)) -> dict[str, Any]:
    hs = {"host": f"{server[0]}:{server[1]}", **(headers or {})}
    return {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "scheme": "http",
            "server": server, "headers": [(k.encode(), v.encode()) for k, v in hs.items()]}


def run(app: Any, sc: dict[str, Any], client: Client) -> Client:
    asyncio.run(app(sc, client.receive, client.send))
    return client


def boundary(app: App, keys: list[ApiKey] = KEYS, **kw: Any) -> Boundary:
    kw.setdefault("max_body_bytes", 32 * MB)
    kw.setdefault("public", lambda m, p: p == "/health")
    kw.setdefault("read_posts", lambda m, p: m == "POST" and p.endswith("/ask"))
    return Boundary(app, keys=keys, **kw)


JSON = {"content-type": "application/json"}


def test_an_unauthenticated_31_mb_body_is_refused_before_one_byte_is_read():
    app = App()
    body = [b"x" * MB for _ in range(31)]
    c = run(boundary(app), scope(headers={**JSON, "content-length": str(31 * MB)}), Client(body))
    assert c.status == 401 and c.json["detail"] == "missing or wrong X-API-Key header"
    assert c.headers[b"www-authenticate"] == b"APIKey"
    assert (c.receive_calls, c.pulled, app.called) == (0, 0, 0)
    # chunked (no Content-Length) and a wrong key: the same
    c = run(boundary(app), scope(headers={**JSON, "transfer-encoding": "chunked", "x-api-key": "k-al"}), Client(body))
    assert c.status == 401 and (c.receive_calls, app.called) == (0, 0)


def test_with_the_key_the_body_reaches_the_app_and_the_access_is_left_for_it():
    app = App()
    c = run(boundary(app), scope(headers={**JSON, "content-length": "2", "x-api-key": "k-fam"}), Client([b"{}"]))
    assert c.status == 200 and app.body == b"{}"
    assert app.scope[ACCESS_SCOPE_KEY].groups == frozenset({"family"})
    assert c.headers[b"x-content-type-options"] == b"nosniff"
    bearer = run(boundary(App()), scope(headers={**JSON, "authorization": "Bearer k-all"}), Client([b"{}"]))
    assert bearer.status == 200


def test_an_announced_oversized_body_is_cut_unread_and_a_chunked_one_while_streaming():
    app = App()
    c = run(boundary(app, max_body_bytes=4 * MB),
            scope(headers={**JSON, "content-length": str(5 * MB), "x-api-key": "k-all"}), Client([b"x" * 5 * MB]))
    assert c.status == 413 and c.json["error"] == "RequestTooLarge" and (c.receive_calls, app.called) == (0, 0)
    app = App()
    chunks = [b"x" * MB for _ in range(31)]
    c = run(boundary(app, max_body_bytes=4 * MB),
            scope(headers={**JSON, "transfer-encoding": "chunked", "x-api-key": "k-all"}), Client(chunks))
    assert c.status == 413 and len(c.sent) == 2  # only the 413: the app's own answer was dropped
    assert c.pulled <= 5 * MB and len(chunks) >= 26  # stopped reading right after the limit


def test_a_slow_body_gets_408():
    app = App()
    c = run(boundary(app, body_timeout_s=0.3),
            scope(headers={**JSON, "content-length": "10", "x-api-key": "k-all"}), Client([b"{", b"}"], delay_s=0.2))
    assert c.status == 408 and c.json["error"] == "RequestTimeout"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1:9999", "localhost:80", ""])
def test_dns_rebinding_host_is_refused(host):
    app = App()
    sc = scope(method="GET", path="/health", server=("127.0.0.1", 8000))
    sc["headers"] = [(b"host", host.encode())] if host else []
    c = run(boundary(app, keys=[]), sc, Client([b""]))
    assert c.status == 421 and app.called == 0


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "LOCALHOST:8000"])
def test_loopback_names_with_the_bound_port_are_accepted(host):
    sc = scope(method="GET", path="/health")
    sc["headers"] = [(b"host", host.encode())]
    assert run(boundary(App(), keys=[]), sc, Client([b""])).status == 200


def test_configured_hosts_are_accepted():
    sc = scope(method="GET", path="/health")
    sc["headers"] = [(b"host", b"memory.example.org")]
    assert run(boundary(App(), keys=[], allowed_hosts=["memory.example.org"]), sc, Client([b""])).status == 200
    assert run(boundary(App(), keys=[], allowed_hosts=["*"]), sc, Client([b""])).status == 200
    assert run(boundary(App(), keys=[], allowed_hosts=["other.example"]), sc, Client([b""])).status == 421


@pytest.mark.parametrize("ctype", ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"])
def test_a_cross_site_form_post_gets_415_on_the_keyless_default(ctype):
    app = App()
    c = run(boundary(app, keys=[]), scope(path="/groups/family/derive", headers={"content-type": ctype,
                                                                                  "content-length": "3"}),
            Client([b"a=b"]))
    assert c.status == 415 and app.called == 0


def test_a_body_without_a_content_type_is_refused_and_an_empty_post_is_not():
    c = run(boundary(App(), keys=[]), scope(headers={"content-length": "2"}), Client([b"{}"]))
    assert c.status == 415
    assert run(boundary(App(), keys=[]), scope(path="/groups/family/derive"), Client([b""])).status == 200


def test_a_foreign_origin_may_not_write_the_own_and_listed_ones_may():
    for origin in ("http://evil.example", "null", "http://127.0.0.1:9999"):
        app = App()
        c = run(boundary(app, keys=[]), scope(path="/groups/family/derive", headers={"origin": origin}), Client([b""]))
        assert c.status == 403 and app.called == 0, origin
    own = scope(path="/groups/family/derive", headers={"origin": "http://127.0.0.1:8000"})
    assert run(boundary(App(), keys=[]), own, Client([b""])).status == 200
    listed = scope(path="/groups/family/derive", headers={"origin": "https://app.example"})
    assert run(boundary(App(), keys=[], allowed_origins=["https://app.example"]), listed, Client([b""])).status == 200
    # reads are left to CORS (the browser does not let the page read the answer)
    assert run(boundary(App(), keys=[]), scope(method="GET", path="/groups/family/roster",
                                               headers={"origin": "http://evil.example"}), Client([b""])).status == 200


@pytest.mark.parametrize("group", ["work", "no-such-group", "family%2Fx"])
def test_a_scoped_key_gets_one_answer_for_every_group_outside_its_scope(group):
    app = App()
    c = run(boundary(app), scope(method="GET", path=f"/groups/{group}/roster", headers={"x-api-key": "k-fam"}),
            Client([b""]))
    assert c.status == 403 and app.called == 0
    # the same answer whether the group exists or not; a name close to one of the key's own
    # groups gets a "did you mean" naming that one (the key's scope is the caller's to know)
    hint = "; did you mean 'family'?" if group == "family%2Fx" else ""
    assert c.json == {"detail": f"this key does not reach group {group.replace('%2F', '/')!r}{hint}",
                      "error": "ForbiddenError"}


def test_a_read_only_key_reads_and_asks_but_writes_nothing():
    for method, path in (("POST", "/groups/family/messages"), ("POST", "/groups/family/derive"),
                         ("DELETE", "/groups/family/persons/Ben"), ("DELETE", "/groups/family/persons/x/ask")):
        app = App()
        c = run(boundary(app), scope(method=method, path=path, headers={"x-api-key": "k-ro", **JSON}), Client([b""]))
        assert c.status == 403 and c.json["detail"] == "this key is read-only" and app.called == 0, path
    ask = scope(path="/groups/family/ask", headers={"x-api-key": "k-ro", **JSON, "content-length": "2"})
    assert run(boundary(App()), ask, Client([b"{}"])).status == 200
    get = scope(method="GET", path="/groups/family/roster", headers={"x-api-key": "k-ro"})
    assert run(boundary(App()), get, Client([b""])).status == 200


def test_public_paths_need_no_key_and_leave_no_access():
    app = App()
    c = run(boundary(app), scope(method="GET", path="/health"), Client([b""]))
    assert c.status == 200 and app.scope[ACCESS_SCOPE_KEY] is None


def test_keys_file(tmp_path):
    f = tmp_path / "keys.json"
    f.write_text(json.dumps({"keys": [{"name": "bot", "key": "b1", "groups": ["g1"], "read_only": True}]}))
    keys = load_keys("main", f)
    assert [k.name for k in keys] == ["GRAPHMEM_API_KEY", "bot"]
    a = authenticate(keys, "b1")
    assert a is not None and a.groups == frozenset({"g1"}) and a.read_only
    with pytest.raises(ForbiddenError, match="does not reach group 'g2'"):
        a.check_group("g2")
    with pytest.raises(ForbiddenError, match="read-only"):
        a.check_write()
    assert authenticate(keys, "main").groups is None and authenticate(keys, "nope") is None
    f.write_text(json.dumps({"keys": [{"key": "main"}]}))
    with pytest.raises(InvalidInputError, match="listed twice"):
        load_keys("main", f)
    f.write_text('{"keys": [{"key": "x", "group": ["typo"]}]}')
    with pytest.raises(InvalidInputError) as e:
        load_keys("", f)
    assert e.value.field == "api_keys_file"
