"""The HTTP boundary of ``graphmem serve`` and ``graphmem mcp --transport http``: one ASGI
middleware that decides every request from its headers, before one byte of its body is read.

In this order (the first failing check answers, and the body is never received):

1. **Host** (421): the ``Host`` header must name this server: a loopback name
   (``127.0.0.1``, ``localhost``, ``[::1]``) or the bound address, with the bound port, or an
   entry of ``GRAPHMEM_API_ALLOWED_HOSTS``. A page on ``evil.example`` that re-points its DNS
   name at 127.0.0.1 (DNS rebinding) sends ``Host: evil.example`` and is refused.
2. **Key** (401): when keys are configured (:mod:`graphmem.access`), ``X-API-Key`` (or
   ``Authorization: Bearer``) must carry one; public paths (the health check, the graph page
   and its static files) are let through without. CORS preflights (``OPTIONS``) carry no key.
3. **Scope** (403): a ``/groups/{group_id}/...`` path outside the key's groups, or a write
   with a read-only key. The same answer whether the group exists or not.
4. **Origin** (403): a state-changing request (not GET/HEAD/OPTIONS) whose ``Origin`` is
   neither this server's own origin nor in ``GRAPHMEM_API_CORS_ORIGINS``.
5. **Content type** (415): a state-changing request with a body, or with any
   ``Content-Type``, must say JSON (``application/json`` or ``*/*+json``). A cross-site HTML
   form can only send ``application/x-www-form-urlencoded``, ``multipart/form-data`` or
   ``text/plain``, so it cannot start a derive job.
6. **Size** (413): an announced ``Content-Length`` over the limit. A chunked body is counted
   while the app reads it (never buffered here) and cut with 413 once over the limit.
7. **Time** (408): a body not complete ``body_timeout_s`` seconds after the request started.

Every response gets ``X-Content-Type-Options: nosniff`` and ``Cross-Origin-Resource-Policy:
same-origin`` (no other site can embed a response as an image or a script). The caller's
:class:`graphmem.access.Access` is left in ``scope["graphmem.access"]`` (None on a public path
requested without a valid key) for the routes and tools to check.

Error bodies are ``{"detail": str, "error": str}`` (the API's one shape) and never echo a
header value other than the Host.

Slow headers are the server's business: :mod:`graphmem.boundary_h11` gives uvicorn a protocol
that closes a connection whose request headers are not complete in time.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote

from graphmem.access import Access, ApiKey, authenticate
from graphmem.core.exposure import is_loopback

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
ACCESS_SCOPE_KEY = "graphmem.access"
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD = ("0.0.0.0", "::", "")


def _json_media(value: str) -> bool:
    media = value.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _split_host(value: str, scheme: str) -> tuple[str, int | None]:
    """``"[::1]:8000"`` -> ``("[::1]", 8000)``; ``"Example.org"`` -> ``("example.org", 80)``."""
    v = value.strip().lower()
    default = 443 if scheme in ("https", "wss") else 80
    if v.startswith("["):
        end = v.find("]")
        name, rest = v[: end + 1], v[end + 1:]
        port = rest[1:] if rest.startswith(":") else ""
    elif v.count(":") == 1:
        name, port = v.split(":")
    else:
        name, port = v, ""
    if port and not port.isdigit():
        return name, None
    return name, int(port) if port else default


def group_of_path(scope: dict[str, Any]) -> str | None:
    """The group id of a ``/groups/{group_id}...`` request (percent-decoded from the raw
    path, so ``a%2Fb`` is the one id ``a/b``), else None.

    The router matches the decoded path, so a ``groups`` segment spelt with escapes
    (``/%67roups/x/roster``, ``/groups%2Fx/roster``) reaches group ``x``'s routes: when the raw
    path has no literal ``groups`` segment, the group is read from the decoded path."""
    raw = scope.get("raw_path") or str(scope.get("path", "")).encode()
    parts = raw.split(b"?", 1)[0].split(b"/")
    if len(parts) >= 3 and parts[1] == b"groups" and parts[2]:
        return unquote(parts[2].decode("latin-1"), encoding="utf-8", errors="replace")
    routed = str(scope.get("path", "")).split("/")
    if len(routed) >= 3 and routed[1] == "groups" and routed[2]:
        return routed[2]
    return None


class _BodyCut(Exception):
    """Raised into the app when its body is over the size or time limit."""


class Boundary:
    """The ASGI middleware described in the module docstring.

    Args:
        app: the ASGI app behind it.
        keys: configured keys (empty: key-less; every caller reaches everything).
        allowed_hosts: extra Host values (``name`` = any port, ``name:port``, ``*`` = any).
        allowed_origins: origins allowed to send state-changing requests besides the server's own.
        max_body_bytes: request bodies over this are refused (413).
        body_timeout_s: seconds a request may take to deliver its body (408 after).
        public: ``(method, path) -> bool``: paths served without a key.
        read_posts: ``(method, path) -> bool``: writing-method requests that only read
            (allowed to read-only keys).
        path_groups: check ``/groups/{id}`` paths against the key's groups (the API; the MCP
            endpoint checks groups per tool call).
    """

    def __init__(
        self, app: Any, *, keys: Sequence[ApiKey], allowed_hosts: Sequence[str] = (),
        allowed_origins: Sequence[str] = (), max_body_bytes: int, body_timeout_s: float = 30.0,
        public: Callable[[str, str], bool] = lambda method, path: False,
        read_posts: Callable[[str, str], bool] = lambda method, path: False, path_groups: bool = True,
    ) -> None:
        self.app = app
        self.keys = list(keys)
        self.any_host = "*" in allowed_hosts
        self.hosts = [h.strip().lower() for h in allowed_hosts if h.strip() and h.strip() != "*"]
        self.origins = {o.strip().rstrip("/").lower() for o in allowed_origins if o.strip()}
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s
        self.public = public
        self.read_posts = read_posts
        self.path_groups = path_groups

    # ------------------------------------------------------------------ checks
    def _host_ok(self, scope: dict[str, Any], host: str | None) -> bool:
        if self.any_host:
            return True
        if not host:
            return False
        scheme = scope.get("scheme", "http")
        name, port = _split_host(host, scheme)
        if port is None:
            return False
        for entry in self.hosts:  # configured: "name" (any port) or "name:port"
            if entry == name or entry == f"{name}:{port}":
                return True
        server = scope.get("server")
        bound, bound_port = (server[0], server[1]) if server else ("", None)
        bound = str(bound).lower()
        if bound in _WILDCARD and not self.hosts:
            return True  # every interface and no list: nothing to compare with (a key is required there)
        names = set(_LOOPBACK_HOSTS) if is_loopback(bound) or bound in _WILDCARD else set()
        names.add(f"[{bound}]" if ":" in bound else bound)
        return name in names and (bound_port is None or port == bound_port)

    def _origin_ok(self, scope: dict[str, Any], origin: str | None, host: str | None) -> bool:
        if origin is None:
            return True  # not a browser (browsers send Origin on every cross-origin write)
        o = origin.strip().rstrip("/").lower()
        if o in self.origins:
            return True
        return host is not None and o == f"{scope.get('scheme', 'http')}://{host.strip().lower()}"

    # ------------------------------------------------------------------ the call
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for k, v in scope.get("headers", []):
            name = k.decode("latin-1").lower()
            if name == "host" and name in headers:
                await _answer(send, 400, "two Host headers", "BadRequest")
                return
            headers.setdefault(name, v.decode("latin-1"))
        method, path = scope["method"], scope.get("path", "")
        host = headers.get("host")
        if not self._host_ok(scope, host):
            await _answer(send, 421, f"Host {host!r} is not this server's address "
                                     "(add it to GRAPHMEM_API_ALLOWED_HOSTS if it is)", "MisdirectedRequest")
            return

        presented = headers.get("x-api-key")
        auth = headers.get("authorization", "")
        if presented is None and auth.lower().startswith("bearer "):
            presented = auth[7:].strip()
        access: Access | None = authenticate(self.keys, presented)
        if access is None and method != "OPTIONS" and not self.public(method, path):
            await _answer(send, 401, "missing or wrong X-API-Key header", "Unauthorized",
                          extra=[(b"www-authenticate", b"APIKey")])
            return
        scope[ACCESS_SCOPE_KEY] = access

        writes = method not in SAFE_METHODS
        if access is not None and method != "OPTIONS":
            gid = group_of_path(scope) if self.path_groups else None
            if gid is not None and not access.reaches(gid):
                await _answer(send, 403, access.refusal(gid), "ForbiddenError")
                return
            if self.path_groups and writes and access.read_only and not self.read_posts(method, path):
                await _answer(send, 403, "this key is read-only", "ForbiddenError")
                return
        if writes and not self._origin_ok(scope, headers.get("origin"), host):
            await _answer(send, 403, "cross-origin write refused: the Origin is not allowed "
                                     "(GRAPHMEM_API_CORS_ORIGINS)", "ForbiddenError")
            return
        length = headers.get("content-length")
        has_body = (length is not None and length.strip() not in ("", "0")) or "transfer-encoding" in headers
        ctype = headers.get("content-type")
        if writes and (ctype is not None or has_body) and not _json_media(ctype or ""):
            await _answer(send, 415, "request bodies must be JSON (Content-Type: application/json)",
                          "UnsupportedMediaType")
            return
        if length is not None and length.strip().isdigit() and int(length) > self.max_body_bytes:
            await self._too_large(send)
            return
        await self._guarded(scope, receive, send)

    async def _too_large(self, send: Any) -> None:
        await _answer(send, 413, f"request body over {self.max_body_bytes} bytes "
                                 "(GRAPHMEM_API_MAX_REQUEST_MB)", "RequestTooLarge")

    async def _guarded(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Run the app with a receive that counts and times the body and a send that adds
        ``nosniff``; a cut body is answered here (the app's own answer to it is dropped)."""
        deadline = time.monotonic() + self.body_timeout_s
        size = 0
        body_done = False
        cut: int | None = None
        started = False

        async def guarded_receive() -> dict[str, Any]:
            nonlocal size, body_done, cut
            if cut is not None:
                return {"type": "http.disconnect"}
            if body_done:
                return dict(await receive())
            try:
                message = await asyncio.wait_for(receive(), timeout=max(deadline - time.monotonic(), 0.001))
            except asyncio.TimeoutError:
                cut = 408
                raise _BodyCut() from None
            if message["type"] == "http.request":
                size += len(message.get("body", b""))
                if size > self.max_body_bytes:
                    cut = 413
                    raise _BodyCut()
                if not message.get("more_body", False):
                    body_done = True
            return dict(message)

        async def guarded_send(message: dict[str, Any]) -> None:
            nonlocal started
            if cut is not None:
                return
            if message["type"] == "http.response.start":
                started = True
                hs = list(message.get("headers", []))
                for name, value in ALWAYS_HEADERS:
                    if not any(k.lower() == name for k, _ in hs):
                        hs.append((name, value))
                message = {**message, "headers": hs}
            await send(message)

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except _BodyCut:
            pass
        except Exception:
            if cut is None:
                raise
        if cut is not None and not started:
            if cut == 413:
                await self._too_large(send)
            else:
                await _answer(send, 408, f"request body not complete within {self.body_timeout_s:g} s "
                                         "(GRAPHMEM_API_BODY_TIMEOUT_S)", "RequestTimeout")


ALWAYS_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    # no other site may embed a response (<img>, <script>): with no key set (the local default)
    # a page could load /groups/{g}/timeline.png and learn from onload/onerror and the image's
    # size whether a group exists and how big it is (an attacker trial); fetch() from an origin
    # in GRAPHMEM_API_CORS_ORIGINS is a CORS request, which this header does not block
    (b"cross-origin-resource-policy", b"same-origin"),
)


async def _answer(send: Any, status: int, detail: str, error: str,
                  extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail, "error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               *ALWAYS_HEADERS, (b"connection", b"close"), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
