"""A small scripted OpenAI-compatible HTTP server for tests and benchmark dry runs.

The real :class:`graphmem.llm.ChatModel` (and the real ``openai`` client and HTTP stack) talks
to it, so tests exercise the same code path as production. Standard library only.

Endpoints: ``POST /v1/chat/completions`` (also ``/chat/completions``) and ``GET /v1/models``
(also ``/models``).

How a chat request is answered, first rule that applies:

1. the first registered :meth:`ScriptedLLM.route` whose predicate matches the request (a route
   registered with ``times=n`` is used at most ``n`` times);
2. the next reply in the FIFO queue (:meth:`ScriptedLLM.enqueue`);
3. the handler function (:attr:`ScriptedLLM.handler`), called with the request JSON;
4. otherwise HTTP 418 with a message saying that nothing was scripted (418 is not a status
   the client retries, so a missing script fails fast and visibly).

A reply is a :class:`Reply`, or a plain string (shorthand for ``Reply.text(string)``), or - for
routes and the handler - a function ``(request_json) -> Reply | str``.

Usage in pytest (register with ``pytest_plugins = ["tests.scripted_llm"]`` in conftest)::

    def test_x(scripted_llm):
        scripted_llm.enqueue(Reply.http_error(500), Reply.json({"ok": True}))
        model = scripted_llm.chat_model(backoff_initial_s=0.01)
        value, usage = model.complete_json([...], stage="writer")
        assert len(scripted_llm.chat_requests) == 2

Outside pytest::

    with ScriptedLLM() as server:
        server.handler = lambda request: Reply.text("an answer")
        os.environ.update(server.settings_env())
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphmem.llm import ChatModel, TokenLedger

__all__ = ["RecordedRequest", "Reply", "ScriptedLLM", "count_words", "scripted_llm"]

ReplyLike = "Reply | str | Callable[[dict[str, Any]], Reply | str]"
Predicate = Callable[[dict[str, Any]], bool]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


def count_words(text: str) -> int:
    """Deterministic token count used in the ``usage`` block: whitespace-separated words."""
    return len(text.split())


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else json.dumps(content)


@dataclass
class Reply:
    """One scripted answer.

    Attributes:
        content: assistant message text for a 200 answer (None is sent as JSON null).
        status: HTTP status; anything but 200 sends an OpenAI-style error body.
        error: error message (or a complete dict body) for a non-200 answer.
        delay_s: seconds to wait before answering (use it to trigger client timeouts).
        prompt_tokens / completion_tokens: explicit usage counts; by default the whitespace
            word counts of all request message contents / of ``content``.
        include_usage: False omits the ``usage`` block (the client must then estimate).
        raw_body: when set, sent verbatim as the response body (e.g. broken JSON).
        headers: extra response headers (e.g. ``{"Retry-After": "0"}``).
        finish_reason: the choice's finish reason.
    """

    content: str | None = ""
    status: int = 200
    error: str | dict[str, Any] | None = None
    delay_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    include_usage: bool = True
    raw_body: str | bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str = "stop"

    @classmethod
    def text(cls, content: str, **kwargs: Any) -> Reply:
        """A normal answer with ``content`` as the assistant message."""
        return cls(content=content, **kwargs)

    @classmethod
    def json(cls, value: Any, **kwargs: Any) -> Reply:
        """A normal answer whose content is ``json.dumps(value)``."""
        return cls(content=json.dumps(value), **kwargs)

    @classmethod
    def http_error(cls, status: int, message: str = "", **kwargs: Any) -> Reply:
        """An HTTP error with an OpenAI-style ``{"error": {...}}`` body."""
        return cls(content=None, status=status, error=message or f"scripted HTTP {status}", **kwargs)

    @classmethod
    def slow(cls, delay_s: float, content: str = "", **kwargs: Any) -> Reply:
        """A normal answer sent only after ``delay_s`` seconds."""
        return cls(content=content, delay_s=delay_s, **kwargs)

    @classmethod
    def malformed_json(cls, **kwargs: Any) -> Reply:
        """A normal answer whose content is not valid JSON (a truncated object)."""
        return cls(content='{"actions": [{"action": "ADD", "content": "unterminated', **kwargs)

    @classmethod
    def no_choices(cls, **kwargs: Any) -> Reply:
        """A 200 answer shaped like a chat completion whose ``choices`` list is empty (what
        some proxies send when a filter drops the answer)."""
        return cls(raw_body=json.dumps({
            "id": "chatcmpl-empty", "object": "chat.completion", "created": 0, "model": "scripted-model",
            "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1},
        }), **kwargs)

    @classmethod
    def broken_body(cls, **kwargs: Any) -> Reply:
        """A 200 answer whose HTTP body itself is not valid JSON."""
        return cls(raw_body='{"id": "chatcmpl-broken", "choices": [', **kwargs)


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received (recorded on arrival, before any delay).

    Attributes:
        method: ``"GET"`` or ``"POST"``.
        path: request path, e.g. ``/v1/chat/completions``.
        headers: request headers (lower-case names).
        body: parsed JSON body (``{}`` for GET or an unparseable body).
        received_at: ``time.time()`` on arrival.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of a chat request (``[]`` otherwise)."""
        return list(self.body.get("messages") or [])

    @property
    def system_prompt(self) -> str:
        """Concatenated content of the system messages."""
        return "\n".join(_content_text(m.get("content")) for m in self.messages if m.get("role") == "system")


@dataclass
class _Route:
    predicate: Predicate
    reply: Any
    remaining: int | None


class ScriptedLLM:
    """Scripted OpenAI-compatible server on ``127.0.0.1`` and a free port, in a daemon thread.

    Use as a context manager (or call :meth:`start` / :meth:`stop`). Safe to script from the
    test thread while requests are served: all state is guarded by one lock.

    Args:
        model: model id listed by ``GET /v1/models`` and echoed in answers.
        host: interface to bind (loopback by default).
    """

    def __init__(self, *, model: str = "scripted-model", host: str = "127.0.0.1") -> None:
        self.model = model
        self.host = host
        self.handler: Callable[[dict[str, Any]], Reply | str] | None = None
        self._lock = threading.Lock()
        self._queue: deque[Any] = deque()
        self._routes: list[_Route] = []
        self._requests: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedLLM:
        """Bind a free port and start serving; returns self."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = ThreadingHTTPServer((self.host, 0), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake any delayed replies and release the port."""
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound TCP port."""
        if self._server is None:
            raise RuntimeError("ScriptedLLM is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """Endpoint root for OpenAI clients, e.g. ``http://127.0.0.1:43210/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------------

    def enqueue(self, *replies: Reply | str) -> None:
        """Append replies to the FIFO queue (each answers one chat request)."""
        with self._lock:
            self._queue.extend(replies)

    def route(self, predicate: Predicate, reply: Any, *, times: int | None = None) -> None:
        """Answer every request that ``predicate(request_json)`` accepts with ``reply``.

        Args:
            predicate: ``(request_json) -> bool``; see :meth:`system_contains`.
            reply: a :class:`Reply`, a string, or ``(request_json) -> Reply | str``.
            times: use the route at most this many times (unlimited when None).
        """
        with self._lock:
            self._routes.append(_Route(predicate, reply, times))

    def reset(self) -> None:
        """Drop queued replies, routes, the handler and recorded requests."""
        with self._lock:
            self._queue.clear()
            self._routes.clear()
            self._requests.clear()
            self.handler = None

    @staticmethod
    def system_contains(marker: str) -> Predicate:
        """Predicate: some system message contains ``marker``."""
        return lambda body: any(
            m.get("role") == "system" and marker in _content_text(m.get("content"))
            for m in body.get("messages") or []
        )

    @staticmethod
    def any_message_contains(marker: str) -> Predicate:
        """Predicate: some message (any role) contains ``marker``."""
        return lambda body: any(marker in _content_text(m.get("content")) for m in body.get("messages") or [])

    # -- inspection --------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """JSON bodies of the chat-completion requests received so far."""
        return [r.body for r in self.requests if r.method == "POST" and r.path.endswith("/chat/completions")]

    # -- helpers for callers -----------------------------------------------------------------

    def settings_env(self, prefix: str = "GRAPHMEM_LLM") -> dict[str, str]:
        """Environment variables pointing graphmem at this server (``{prefix}_BASE_URL`` ...)."""
        return {f"{prefix}_BASE_URL": self.base_url, f"{prefix}_MODEL": self.model, f"{prefix}_API_KEY": ""}

    def chat_model(self, ledger: TokenLedger | None = None, **kwargs: Any) -> ChatModel:
        """A :class:`graphmem.llm.ChatModel` aimed at this server.

        Defaults suited to tests (overridable): ``timeout_s=5``, ``max_retries=2``,
        ``backoff_initial_s=0.01``, ``backoff_max_s=0.05``.
        """
        from graphmem.llm import ChatModel

        options: dict[str, Any] = {
            "timeout_s": 5.0,
            "max_retries": 2,
            "backoff_initial_s": 0.01,
            "backoff_max_s": 0.05,
        }
        options.update(kwargs)
        return ChatModel(base_url=self.base_url, model=self.model, ledger=ledger, **options)

    # -- serving (called from handler threads) -----------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _choose(self, body: dict[str, Any]) -> Reply | None:
        with self._lock:
            chosen: Any = None
            for route in self._routes:
                if route.remaining == 0:
                    continue
                try:
                    matched = bool(route.predicate(body))
                except Exception:  # a predicate that cannot read this request does not match
                    matched = False
                if matched:
                    if route.remaining is not None:
                        route.remaining -= 1
                    chosen = route.reply
                    break
            if chosen is None and self._queue:
                chosen = self._queue.popleft()
            if chosen is None:
                chosen = self.handler
        if chosen is None:
            return None
        if callable(chosen) and not isinstance(chosen, Reply):
            chosen = chosen(body)
        return Reply.text(chosen) if isinstance(chosen, str) else chosen

    def _completion_body(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        content = reply.content
        payload: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or self.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": reply.finish_reason,
                    "logprobs": None,
                }
            ],
        }
        if reply.include_usage:
            prompt = reply.prompt_tokens
            if prompt is None:
                prompt = sum(count_words(_content_text(m.get("content"))) for m in body.get("messages") or [])
            completion = reply.completion_tokens
            if completion is None:
                completion = count_words(content or "")
            payload["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return payload


def _error_body(reply: Reply) -> dict[str, Any]:
    if isinstance(reply.error, dict):
        return reply.error
    return {
        "error": {
            "message": reply.error or HTTPStatus(reply.status).phrase,
            "type": _ERROR_TYPES.get(reply.status, "server_error" if reply.status >= 500 else "error"),
            "param": None,
            "code": None,
        }
    }


def _make_handler(owner: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "ScriptedLLM/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            return  # keep test output clean

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = payload if isinstance(payload, bytes) else (
                payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            )
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (e.g. timed out) before the reply

        def _record(self, body: dict[str, Any]) -> None:
            owner._record(
                RecordedRequest(
                    method=self.command,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    received_at=time.time(),
                )
            )

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            self._record({})
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [
                    {"id": owner.model, "object": "model", "created": 0, "owned_by": "scripted"}
                ]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found_error"}})

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("body is not a JSON object")
            except ValueError as e:
                self._record({})
                self._send(400, {"error": {"message": f"invalid JSON body: {e}", "type": "invalid_request_error"}})
                return
            self._record(body)
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found_error"}})
                return
            if body.get("stream"):
                self._send(400, {"error": {"message": "ScriptedLLM does not stream", "type": "invalid_request_error"}})
                return
            try:
                reply = owner._choose(body)
            except Exception as e:  # a broken handler should fail the test visibly, not hang it
                self._send(418, {"error": {"message": f"scripted handler raised {e!r}", "type": "error"}})
                return
            if reply is None:
                self._send(418, {"error": {
                    "message": "ScriptedLLM: no reply scripted for this request", "type": "error"}})
                return
            if reply.delay_s > 0 and owner._stopping.wait(reply.delay_s):
                return  # server stopping: drop the reply
            if reply.raw_body is not None:
                self._send(reply.status, reply.raw_body, reply.headers)
            elif reply.status != 200:
                self._send(reply.status, _error_body(reply), reply.headers)
            else:
                self._send(200, owner._completion_body(reply, body), reply.headers)

    return Handler


try:
    import pytest
except ImportError:  # usable outside pytest (benchmark scripts)
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture
    def scripted_llm() -> Iterator[ScriptedLLM]:
        """A started :class:`ScriptedLLM`, stopped after the test."""
        with ScriptedLLM() as server:
            yield server
