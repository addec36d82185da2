"""Typed Python client of the graphmem HTTP API (``graphmem serve``): sync and async.

    from graphmem.client import GraphMemClient

    with GraphMemClient("http://127.0.0.1:8000", api_key="...") as gm:
        gm.append_messages("trip", [{"id": "m1", "speaker": "Ben", "text": "...", "ts": "..."}])
        result = gm.ask("trip", "Which trail did we pick?")
        print(result.answer, result.message_ids)

:class:`AsyncGraphMemClient` has the same methods as coroutines. Requests and responses are
the API's own pydantic models (:mod:`graphmem.core.wire`, :mod:`graphmem.core.results`), so a response that
does not match them fails loudly (``pydantic.ValidationError``) instead of drifting silently.

Errors: the API's error body ``{"error": "<ClassName>", "detail", "field"?}`` is raised again
as the same graphmem error class (``NotFoundError``, ``InvalidInputError`` with its ``field``,
``ConflictError``, ``StoreUnavailableError``, ``LLMError``); a missing or wrong key raises
:class:`AuthenticationError`; anything else, and an unreachable server, :class:`APIError`.
Transport: httpx, with connection-level retries (a refused connection is tried again; a
request that reached the server is not resent).

Lists come a page at a time (``limit``, ``cursor``; the answer's ``truncated`` and
``next_cursor``): :meth:`GraphMemClient.roster_page`, :meth:`~GraphMemClient.groups_page`,
:meth:`~GraphMemClient.jobs`, ``search(..., cursor=)``, ``person_memory(..., cursor=)``,
``provenance(..., cursor=)``; :meth:`~GraphMemClient.roster` and :meth:`~GraphMemClient.groups`
walk every page and return the whole list.
"""

from __future__ import annotations

import base64
import io
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, overload
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from graphmem.core.wire import (
    AskCreate,
    ChatImportCreate,
    ChatImportPublic,
    DeriveJobAccepted,
    DerivePublic,
    EmbedPublic,
    HealthPublic,
    IngestPublic,
    MessagesCreate,
    NewMessage,
)
from graphmem.core import errors
from graphmem.core.limits import check_id, check_text
from graphmem.core.paging import DEFAULT_LIMIT
from graphmem.core.results import (
    DEFAULT_PAGE_BYTES,
    AskResult,
    CompactAnswer,
    DeriveJob,
    ExportPage,
    ForgetSummary,
    FullMessage,
    GroupInfo,
    GroupsPage,
    JobsPage,
    GroupForgetSummary,
    Mode,
    PersonMemory,
    RecordProvenance,
    RosterMember,
    RosterPage,
    SearchResult,
)

__all__ = ["APIError", "AsyncGraphMemClient", "AuthenticationError", "GraphMemClient"]

M = TypeVar("M")
View = Literal["full", "compact"]
API_KEY_HEADER = "X-API-Key"
_ERRORS_BY_NAME: dict[str, type[errors.GraphMemError]] = {
    cls.__name__: cls
    for cls in (errors.NotFoundError, errors.ConflictError, errors.InvalidInputError,
                errors.StoreUnavailableError, errors.LLMError, errors.ForbiddenError)
}


class APIError(errors.GraphMemError):
    """The API answered with an unexpected status, or could not be reached.

    Attributes:
        status: the HTTP status, or 0 when no answer came.
        body: the decoded body (JSON value or text), or None.
    """

    def __init__(self, message: str, *, status: int = 0, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class AuthenticationError(APIError):
    """401: the API requires ``X-API-Key`` and the key is missing or wrong."""


@dataclass(frozen=True)
class _Call(Generic[M]):
    """One API call: what to send and what model the answer is."""

    method: str
    path: str
    answer: Any  # a TypeAdapter target: a model class or list[Model]
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # every text goes out as UTF-8: a lone surrogate has no UTF-8 form and would fail
        # inside httpx with a UnicodeEncodeError; it is the server's 422 here, before sending
        _check_texts(self.params, "")
        _check_texts(self.json, "")


def _check_texts(value: Any, where: str) -> None:
    """Refuse a lone UTF-16 surrogate anywhere in a request's parameters or body.

    Raises:
        InvalidInputError: naming the parameter or body field (dotted path) and the position.
    """
    if isinstance(value, str):
        check_text(value, field=where or "body")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _check_texts(str(k), f"{where}.{k}" if where else str(k))
            _check_texts(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_texts(v, f"{where}.{i}" if where else str(i))


def _body(model: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """A request body built from the API's own model, checked before anything is sent.

    Raises:
        InvalidInputError: the first wrong field, named, with the API's 422 wording (the
            value itself is not repeated).
    """
    try:  # (a lone surrogate passes the model; _Call refuses it, naming the field)
        return model(**fields).model_dump(exclude_none=True)
    except ValidationError as e:
        first = e.errors()[0]
        raise errors.InvalidInputError(first["msg"], field=".".join(str(p) for p in first["loc"])) from None


def _seg(value: str) -> str:
    """One path segment, percent-encoded (spaces, ``%``, non-ASCII; a person or record id is sent
    as stored). Group ids go through :func:`_group` first. An id ``.`` or ``..`` (valid ids) is
    sent as ``%2E`` / ``%2E%2E``: bare, it is a dot segment that the URL library removes
    (``DELETE /groups/g/persons/..`` would go out as ``DELETE /groups/g``, the whole group).

    Raises:
        InvalidInputError: the id is empty (field ``id``).
    """
    if not value:
        raise errors.InvalidInputError("ids must not be empty", field="id")
    check_text(value, field="id")
    if value in (".", ".."):
        return "%2E" * len(value)
    return quote(value, safe="")


def _group(group_id: str, *, append: bool = False) -> str:
    """The path segment of a group id, refused before any request when it holds ``/``: no group
    id can (the id grammar, :mod:`graphmem.core.limits`), and the API would answer 404/422 anyway.

    Args:
        append: the id of ``append_messages`` (a write), else of a read or another action.

    Raises:
        InvalidInputError: the id is empty (field ``id``), or, on append, holds ``/`` (field
            ``group``, the message ingest gives).
        NotFoundError: a read's id holds ``/`` (:func:`graphmem.core.errors.no_group`, as the API).
    """
    if "/" in group_id:
        if append:
            check_id(group_id, field="group", source="api", slash=False)
        raise errors.no_group(group_id)
    return _seg(group_id)


def _messages(messages: Sequence[NewMessage | Mapping[str, Any]], name: str) -> dict[str, Any]:
    """The request body, checked before anything is sent.

    Raises:
        InvalidInputError: a message is wrong (record = its id or index, field = the dotted path
            ``messages.<i>.<field>``, as the server's error body names it).
    """
    checked = []
    for i, m in enumerate(messages):
        if isinstance(m, NewMessage):
            checked.append(m)
            continue
        try:
            checked.append(NewMessage.model_validate(dict(m)))
        except ValidationError as e:
            first = e.errors()[0]
            raise errors.InvalidInputError(
                first["msg"], record=str(dict(m).get("id") or f"message {i}"),
                field=".".join(["messages", str(i), *(str(p) for p in first["loc"])]),  # as the API's body names it
            ) from e
    if not checked:
        raise errors.InvalidInputError("no messages to append", field="messages")
    return MessagesCreate(name=name, messages=checked).model_dump()


ChatFormat = Literal["auto", "slack", "discord", "telegram", "whatsapp"]


def _chat_import(path: str | Path, fmt: ChatFormat, on_bad_record: Literal["fail", "skip"]) -> dict[str, Any]:
    """The body of ``POST /groups/{id}/imports`` for an export on disk: a zip (or a Slack export
    folder, zipped here in memory) goes as base64, a text or JSON file as its UTF-8 text."""
    p = Path(path)
    if p.is_dir():
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(p.rglob("*")):
                if f.is_file() and not f.is_symlink():
                    z.write(f, f.relative_to(p).as_posix())
        body = ChatImportCreate(format=fmt, content_base64=base64.b64encode(buf.getvalue()).decode("ascii"),
                                on_bad_record=on_bad_record)
    elif p.is_file():
        data = p.read_bytes()
        if zipfile.is_zipfile(p):
            body = ChatImportCreate(format=fmt, content_base64=base64.b64encode(data).decode("ascii"),
                                    on_bad_record=on_bad_record)
        else:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise errors.InvalidInputError(f"not UTF-8 text (byte {e.start})", source=str(p), field="path") from None
            body = ChatImportCreate(format=fmt, content=text, on_bad_record=on_bad_record)
    else:
        raise errors.InvalidInputError("no such file or folder", source=str(p), field="path")
    return body.model_dump(exclude_none=True)


class _Calls:
    """The API's routes as :class:`_Call` values (shared by the sync and async clients)."""

    @staticmethod
    def health() -> _Call[HealthPublic]:
        return _Call("GET", "/health", HealthPublic)

    @staticmethod
    def append_messages(group_id: str, messages: Sequence[NewMessage | Mapping[str, Any]],
                        name: str = "", embed: Literal["now", "later"] = "now") -> _Call[IngestPublic]:
        return _Call("POST", f"/groups/{_group(group_id, append=True)}/messages", IngestPublic,
                     json=_messages(messages, name), params={"embed": "later"} if embed == "later" else {})

    @staticmethod
    def embed(group_id: str) -> _Call[EmbedPublic]:
        return _Call("POST", f"/groups/{_group(group_id)}/embed", EmbedPublic)

    @staticmethod
    def import_chat(group_id: str, path: str | Path, fmt: ChatFormat,
                    on_bad_record: Literal["fail", "skip"]) -> _Call[ChatImportPublic]:
        return _Call("POST", f"/groups/{_group(group_id, append=True)}/imports", ChatImportPublic,
                     json=_chat_import(path, fmt, on_bad_record))

    @staticmethod
    def derive(group_id: str, max_segments: int | None = None) -> _Call[DerivePublic]:
        params = {} if max_segments is None else {"max_segments": max_segments}
        return _Call("POST", f"/groups/{_group(group_id)}/derive", DerivePublic, params=params)

    @staticmethod
    def derive_in_background(group_id: str) -> _Call[DeriveJobAccepted]:
        return _Call("POST", f"/groups/{_group(group_id)}/derive", DeriveJobAccepted, params={"background": "true"})

    @staticmethod
    def job(job_id: str) -> _Call[DeriveJob]:
        return _Call("GET", f"/jobs/{_seg(job_id)}", DeriveJob)

    @staticmethod
    def ask(group_id: str, question: str, view: View = "full", **options: Any) -> _Call[Any]:
        body = _body(AskCreate, question=question, **options)
        if view not in ("full", "compact"):
            raise errors.InvalidInputError("view must be 'full' or 'compact'", field="view")
        answer = CompactAnswer if view == "compact" else AskResult
        return _Call("POST", f"/groups/{_group(group_id)}/ask", answer, json=body,
                     params={"view": view} if view == "compact" else {})

    @staticmethod
    def search(group_id: str, query: str, k: int = 10, mode: Mode = "hybrid", pool: int | None = None,
               expand: int = 0, cursor: str | None = None) -> _Call[SearchResult]:
        params: dict[str, Any] = {"q": query, "k": k, "mode": mode, "expand": expand}
        if pool is not None:
            params["pool"] = pool
        if cursor:
            params["cursor"] = cursor
        return _Call("GET", f"/groups/{_group(group_id)}/search", SearchResult, params=params)

    @staticmethod
    def groups_page(limit: int, cursor: str | None) -> _Call[GroupsPage]:
        return _Call("GET", "/groups", GroupsPage, params=_page(limit, cursor))

    @staticmethod
    def jobs(group_id: str, limit: int, cursor: str | None) -> _Call[JobsPage]:
        return _Call("GET", f"/groups/{_group(group_id)}/jobs", JobsPage, params=_page(limit, cursor))

    @staticmethod
    def get_message(group_id: str, message_id: str) -> _Call[FullMessage]:
        return _Call("GET", f"/groups/{_group(group_id)}/messages/{_seg(message_id)}", FullMessage)

    @staticmethod
    def export_page(group_id: str, cursor: str | None, with_derived: bool, max_bytes: int) -> _Call[ExportPage]:
        params: dict[str, Any] = {"with_derived": with_derived, "max_bytes": max_bytes}
        if cursor:
            params["cursor"] = cursor
        return _Call("GET", f"/groups/{_group(group_id)}/export", ExportPage, params=params)

    @staticmethod
    def roster_page(group_id: str, limit: int, cursor: str | None) -> _Call[RosterPage]:
        return _Call("GET", f"/groups/{_group(group_id)}/roster", RosterPage, params=_page(limit, cursor))

    @staticmethod
    def person_memory(group_id: str, person_id: str, mode: Literal["head", "full"] = "head",
                      as_of: str | None = None, limit: int = DEFAULT_LIMIT,
                      cursor: str | None = None) -> _Call[PersonMemory]:
        params: dict[str, Any] = {"mode": mode, **_page(limit, cursor)}
        if as_of:
            params["as_of"] = as_of
        return _Call("GET", f"/groups/{_group(group_id)}/persons/{_seg(person_id)}/memory", PersonMemory,
                     params=params)

    @staticmethod
    def provenance(group_id: str, record_id: str, limit: int = DEFAULT_LIMIT,
                   cursor: str | None = None) -> _Call[RecordProvenance]:
        return _Call("GET", f"/groups/{_group(group_id)}/records/{_seg(record_id)}/provenance", RecordProvenance,
                     params=_page(limit, cursor))

    @staticmethod
    def forget_person(group_id: str, person_id: str) -> _Call[ForgetSummary]:
        return _Call("DELETE", f"/groups/{_group(group_id)}/persons/{_seg(person_id)}", ForgetSummary)

    @staticmethod
    def forget_group(group_id: str) -> _Call[GroupForgetSummary]:
        return _Call("DELETE", f"/groups/{_group(group_id)}", GroupForgetSummary)


def _page(limit: int, cursor: str | None) -> dict[str, Any]:
    """The query parameters of one page of a list."""
    return {"limit": limit, **({"cursor": cursor} if cursor else {})}


def _decode(call: _Call[M], response: httpx.Response) -> M:
    """The typed answer of a 2xx response, or the matching graphmem error."""
    if response.is_success:
        answer: M = TypeAdapter(call.answer).validate_python(response.json())
        return answer
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    detail = body.get("detail") if isinstance(body, dict) else None
    message = detail if isinstance(detail, str) else f"{call.method} {call.path}: HTTP {response.status_code} {body!r}"
    if response.status_code == 401:
        raise AuthenticationError(message, status=401, body=body)
    cls = _ERRORS_BY_NAME.get(body.get("error", "")) if isinstance(body, dict) else None
    if cls is errors.InvalidInputError:
        raise _invalid(message, str(body.get("field") or ""))
    if cls is not None:
        raise cls(message)
    if response.status_code == 422:  # request validation by FastAPI: detail is a list
        raise errors.InvalidInputError(f"{call.method} {call.path}: {body!r}")
    raise APIError(message, status=response.status_code, body=body)


_WHERE = re.compile(r"(?:record (?P<record>.*?), )?field '(?P<field>[^']*)': (?P<reason>.*)\Z", re.S)


def _invalid(detail: str, field: str) -> errors.InvalidInputError:
    """The server's InvalidInputError again: its ``detail`` is already ``"[record R, ]field 'f':
    reason"``, so the record and reason are taken apart from it and the message names the field
    once (``field 'k': ...``, not ``field 'k': field 'k': ...``)."""
    m = _WHERE.match(detail)
    if m and (m["field"] == field or field.endswith("." + m["field"])):  # the body's field: a dotted path
        return errors.InvalidInputError(m["reason"], record=m["record"] or "", field=field)
    return errors.InvalidInputError(detail, field=field)


def _headers(api_key: str | None) -> dict[str, str]:
    return {API_KEY_HEADER: api_key} if api_key else {}


class GraphMemClient:
    """Blocking client of one graphmem API.

    Args:
        base_url: the API's root, e.g. ``http://127.0.0.1:8000``.
        api_key: the key when the API requires one (sent as ``X-API-Key``).
        timeout_s: seconds per request (ask and derive may call models: allow for that).
        retries: connection attempts retried when the server cannot be reached.
        http: an ``httpx.Client`` to use instead (the caller then owns and closes it).
    """

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout_s: float = 300.0,
                 retries: int = 2, http: httpx.Client | None = None) -> None:
        self._owned = http is None
        self._http = http or httpx.Client(
            base_url=base_url, headers=_headers(api_key), timeout=timeout_s,
            transport=httpx.HTTPTransport(retries=retries),
        )

    def __enter__(self) -> GraphMemClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool (only when this client opened it)."""
        if self._owned:
            self._http.close()

    def _send(self, call: _Call[M]) -> M:
        try:
            response = self._http.request(call.method, call.path, json=call.json, params=call.params)
        except httpx.TransportError as e:
            raise APIError(f"cannot reach graphmem API: {e}") from e
        return _decode(call, response)

    def health(self) -> HealthPublic:
        """``GET /health``. Raises APIError (503) when Neo4j does not answer."""
        return self._send(_Calls.health())

    def append_messages(self, group_id: str, messages: Sequence[NewMessage | Mapping[str, Any]],
                        name: str = "", *, embed: Literal["now", "later"] = "now") -> IngestPublic:
        """Append messages in conversation order (idempotent by message id); ``embed="later"``
        writes them without vectors (the bulk path) until :meth:`embed` fills them.

        Raises:
            InvalidInputError: a message is wrong (named with its field); nothing is written.
        """
        return self._send(_Calls.append_messages(group_id, messages, name, embed))

    def embed(self, group_id: str) -> EmbedPublic:
        """Fill the vectors of the group's messages written without them (``POST
        /groups/{id}/embed``); a second call writes nothing. Raises NotFoundError."""
        return self._send(_Calls.embed(group_id))

    def import_chat(self, group_id: str, path: str | Path, *, format: ChatFormat = "auto",
                    on_bad_record: Literal["fail", "skip"] = "fail") -> ChatImportPublic:
        """Import a Slack, Discord, Telegram or WhatsApp export (``POST /groups/{id}/imports``,
        docs/import.md): a file, a zip, or a Slack export folder (zipped in memory). Idempotent;
        with ``on_bad_record="skip"`` bad records come back in ``rejects``. Raises
        InvalidInputError naming the record and field of a bad record (nothing written)."""
        return self._send(_Calls.import_chat(group_id, path, format, on_bad_record))

    def derive(self, group_id: str, max_segments: int | None = None) -> DerivePublic:
        """Run the Writer synchronously over at most ``max_segments`` pending segments.

        Raises:
            NotFoundError, ConflictError (another run on the group), LLMError (no Writer).
        """
        return self._send(_Calls.derive(group_id, max_segments))

    def derive_in_background(self, group_id: str) -> DeriveJobAccepted:
        """Open (or find) the group's background derive job; poll :meth:`job` for progress.

        Raises:
            NotFoundError: unknown group.
        """
        return self._send(_Calls.derive_in_background(group_id))

    def job(self, job_id: str) -> DeriveJob:
        """A background job's state and progress (segments, tokens, rate-limit waits, error)."""
        return self._send(_Calls.job(job_id))

    def wait_job(self, job_id: str, *, timeout_s: float = 3600.0, poll_s: float = 1.0) -> DeriveJob:
        """Poll until the job is ``done``, ``failed`` or ``cancelled`` (its group was erased) and return it.

        Raises:
            APIError: still open after ``timeout_s`` seconds.
        """
        import time

        deadline = time.monotonic() + timeout_s
        while True:
            job = self.job(job_id)
            if job.state in ("done", "failed", "cancelled"):
                return job
            if time.monotonic() > deadline:
                raise APIError(f"job {job_id} still {job.state} after {timeout_s:g} s")
            time.sleep(poll_s)

    @overload
    def ask(self, group_id: str, question: str, *, ask: bool | None = ..., s1_k: int | None = ...,
            s2_k: int | None = ..., source_k: int | None = ..., as_of: str | None = ...,
            tense: Literal["head", "full"] | None = ..., view: Literal["full"] = ...) -> AskResult: ...

    @overload
    def ask(self, group_id: str, question: str, *, ask: bool | None = ..., s1_k: int | None = ...,
            s2_k: int | None = ..., source_k: int | None = ..., as_of: str | None = ...,
            tense: Literal["head", "full"] | None = ..., view: Literal["compact"]) -> CompactAnswer: ...

    def ask(self, group_id: str, question: str, *, ask: bool | None = None, s1_k: int | None = None,
            s2_k: int | None = None, source_k: int | None = None, as_of: str | None = None,
            tense: Literal["head", "full"] | None = None, view: View = "full") -> AskResult | CompactAnswer:
        """Ask a question; the result has ``answer`` (None without an answer model), the
        ``evidence`` and every ``message_ids`` / ``record_ids`` behind it. ``view="compact"``
        returns a :class:`~graphmem.query.CompactAnswer` instead (the answer, each cited message
        and derived record once: what an agent needs).

        Raises:
            NotFoundError: unknown group. InvalidInputError: bad question, budget, as_of or view.
        """
        answer: AskResult | CompactAnswer = self._send(_Calls.ask(
            group_id, question, view, ask=ask, s1_k=s1_k, s2_k=s2_k, source_k=source_k, as_of=as_of, tense=tense))
        return answer

    def search(self, group_id: str, query: str, *, k: int = 10, mode: Mode = "hybrid",
               pool: int | None = None, expand: int = 0, cursor: str | None = None) -> SearchResult:
        """System 1 search of one group (``GET /groups/{id}/search``): one page of ``k`` hits
        best first (``truncated`` / ``next_cursor``: pass it as ``cursor`` for the next), and
        ``mode_used`` / ``vectors_pending`` / ``warning`` when vectors are still missing."""
        return self._send(_Calls.search(group_id, query, k, mode, pool, expand, cursor))

    def groups_page(self, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> GroupsPage:
        """One page of the groups this key reaches (``GET /groups``), by id."""
        return self._send(_Calls.groups_page(limit, cursor))

    def groups(self) -> list[GroupInfo]:
        """Every group this key reaches, all pages walked."""
        out: list[GroupInfo] = []
        cursor: str | None = None
        while True:
            page = self.groups_page(limit=1000, cursor=cursor)
            out.extend(page.groups)
            if page.next_cursor is None:
                return out
            cursor = page.next_cursor

    def jobs(self, group_id: str, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> JobsPage:
        """One page of the group's derive jobs, newest first (``GET /groups/{id}/jobs``)."""
        return self._send(_Calls.jobs(group_id, limit, cursor))

    def get_message(self, group_id: str, message_id: str) -> FullMessage:
        """One whole message (``GET /groups/{id}/messages/{message_id}``): the text a list cut
        (``text_truncated``), whole. Raises NotFoundError."""
        return self._send(_Calls.get_message(group_id, message_id))

    def export_page(self, group_id: str, *, cursor: str | None = None, with_derived: bool = False,
                    max_bytes: int = DEFAULT_PAGE_BYTES) -> ExportPage:
        """One page of the group's export (``GET /groups/{id}/export``, docs/export.md); pass
        ``next_cursor`` back for the next page (None: the last)."""
        return self._send(_Calls.export_page(group_id, cursor, with_derived, max_bytes))

    def roster_page(self, group_id: str, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> RosterPage:
        """One page of the group's roster, by person id (``GET /groups/{id}/roster``)."""
        return self._send(_Calls.roster_page(group_id, limit, cursor))

    def roster(self, group_id: str) -> list[RosterMember]:
        """Every person of the group, all pages walked (by id). Raises NotFoundError for an
        unknown group."""
        out: list[RosterMember] = []
        cursor: str | None = None
        while True:
            page = self.roster_page(group_id, limit=1000, cursor=cursor)
            out.extend(page.persons)
            if page.next_cursor is None:
                return out
            cursor = page.next_cursor

    def person_memory(self, group_id: str, person_id: str, mode: Literal["head", "full"] = "head",
                      as_of: str | None = None, *, limit: int = DEFAULT_LIMIT,
                      cursor: str | None = None) -> PersonMemory:
        """One page of a person's derived memory (head, full chains, or the state at ``as_of``)."""
        return self._send(_Calls.person_memory(group_id, person_id, mode, as_of, limit, cursor))

    def provenance(self, group_id: str, record_id: str, *, limit: int = DEFAULT_LIMIT,
                   cursor: str | None = None) -> RecordProvenance:
        """A record's FROM messages and update chain, a page at a time. Raises NotFoundError."""
        return self._send(_Calls.provenance(group_id, record_id, limit, cursor))

    def forget_person(self, group_id: str, person_id: str) -> ForgetSummary:
        """Erase one person's data from the group (a second call erases nothing)."""
        return self._send(_Calls.forget_person(group_id, person_id))

    def forget_group(self, group_id: str) -> GroupForgetSummary:
        """Erase the whole group (both tracks, roster, segments; open derive jobs cancelled).
        Raises NotFoundError for an unknown group; ForbiddenError for a key limited to other
        groups or read-only."""
        return self._send(_Calls.forget_group(group_id))


class AsyncGraphMemClient:
    """Asynchronous client: the methods of :class:`GraphMemClient` as coroutines.

    Args: as :class:`GraphMemClient` (``http`` is an ``httpx.AsyncClient``).
    """

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout_s: float = 300.0,
                 retries: int = 2, http: httpx.AsyncClient | None = None) -> None:
        self._owned = http is None
        self._http = http or httpx.AsyncClient(
            base_url=base_url, headers=_headers(api_key), timeout=timeout_s,
            transport=httpx.AsyncHTTPTransport(retries=retries),
        )

    async def __aenter__(self) -> AsyncGraphMemClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool (only when this client opened it)."""
        if self._owned:
            await self._http.aclose()

    async def _send(self, call: _Call[M]) -> M:
        try:
            response = await self._http.request(call.method, call.path, json=call.json, params=call.params)
        except httpx.TransportError as e:
            raise APIError(f"cannot reach graphmem API: {e}") from e
        return _decode(call, response)

    async def health(self) -> HealthPublic:
        return await self._send(_Calls.health())

    async def append_messages(self, group_id: str, messages: Sequence[NewMessage | Mapping[str, Any]],
                              name: str = "", *, embed: Literal["now", "later"] = "now") -> IngestPublic:
        return await self._send(_Calls.append_messages(group_id, messages, name, embed))

    async def embed(self, group_id: str) -> EmbedPublic:
        return await self._send(_Calls.embed(group_id))

    async def import_chat(self, group_id: str, path: str | Path, *, format: ChatFormat = "auto",
                          on_bad_record: Literal["fail", "skip"] = "fail") -> ChatImportPublic:
        return await self._send(_Calls.import_chat(group_id, path, format, on_bad_record))

    async def derive(self, group_id: str, max_segments: int | None = None) -> DerivePublic:
        return await self._send(_Calls.derive(group_id, max_segments))

    async def derive_in_background(self, group_id: str) -> DeriveJobAccepted:
        return await self._send(_Calls.derive_in_background(group_id))

    async def job(self, job_id: str) -> DeriveJob:
        return await self._send(_Calls.job(job_id))

    @overload
    async def ask(self, group_id: str, question: str, *, ask: bool | None = ..., s1_k: int | None = ...,
                  s2_k: int | None = ..., source_k: int | None = ..., as_of: str | None = ...,
                  tense: Literal["head", "full"] | None = ..., view: Literal["full"] = ...) -> AskResult: ...

    @overload
    async def ask(self, group_id: str, question: str, *, ask: bool | None = ..., s1_k: int | None = ...,
                  s2_k: int | None = ..., source_k: int | None = ..., as_of: str | None = ...,
                  tense: Literal["head", "full"] | None = ..., view: Literal["compact"]) -> CompactAnswer: ...

    async def ask(self, group_id: str, question: str, *, ask: bool | None = None, s1_k: int | None = None,
                  s2_k: int | None = None, source_k: int | None = None, as_of: str | None = None,
                  tense: Literal["head", "full"] | None = None, view: View = "full") -> AskResult | CompactAnswer:
        answer: AskResult | CompactAnswer = await self._send(_Calls.ask(
            group_id, question, view, ask=ask, s1_k=s1_k, s2_k=s2_k, source_k=source_k, as_of=as_of, tense=tense))
        return answer

    async def search(self, group_id: str, query: str, *, k: int = 10, mode: Mode = "hybrid",
                     pool: int | None = None, expand: int = 0, cursor: str | None = None) -> SearchResult:
        return await self._send(_Calls.search(group_id, query, k, mode, pool, expand, cursor))

    async def groups_page(self, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> GroupsPage:
        return await self._send(_Calls.groups_page(limit, cursor))

    async def groups(self) -> list[GroupInfo]:
        out: list[GroupInfo] = []
        cursor: str | None = None
        while True:
            page = await self.groups_page(limit=1000, cursor=cursor)
            out.extend(page.groups)
            if page.next_cursor is None:
                return out
            cursor = page.next_cursor

    async def jobs(self, group_id: str, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> JobsPage:
        return await self._send(_Calls.jobs(group_id, limit, cursor))

    async def get_message(self, group_id: str, message_id: str) -> FullMessage:
        return await self._send(_Calls.get_message(group_id, message_id))

    async def export_page(self, group_id: str, *, cursor: str | None = None, with_derived: bool = False,
                          max_bytes: int = DEFAULT_PAGE_BYTES) -> ExportPage:
        return await self._send(_Calls.export_page(group_id, cursor, with_derived, max_bytes))

    async def roster_page(self, group_id: str, *, limit: int = DEFAULT_LIMIT,
                          cursor: str | None = None) -> RosterPage:
        return await self._send(_Calls.roster_page(group_id, limit, cursor))

    async def roster(self, group_id: str) -> list[RosterMember]:
        out: list[RosterMember] = []
        cursor: str | None = None
        while True:
            page = await self.roster_page(group_id, limit=1000, cursor=cursor)
            out.extend(page.persons)
            if page.next_cursor is None:
                return out
            cursor = page.next_cursor

    async def person_memory(self, group_id: str, person_id: str, mode: Literal["head", "full"] = "head",
                            as_of: str | None = None, *, limit: int = DEFAULT_LIMIT,
                            cursor: str | None = None) -> PersonMemory:
        return await self._send(_Calls.person_memory(group_id, person_id, mode, as_of, limit, cursor))

    async def provenance(self, group_id: str, record_id: str, *, limit: int = DEFAULT_LIMIT,
                         cursor: str | None = None) -> RecordProvenance:
        return await self._send(_Calls.provenance(group_id, record_id, limit, cursor))

    async def forget_person(self, group_id: str, person_id: str) -> ForgetSummary:
        return await self._send(_Calls.forget_person(group_id, person_id))

    async def forget_group(self, group_id: str) -> GroupForgetSummary:
        return await self._send(_Calls.forget_group(group_id))

