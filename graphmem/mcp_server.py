"""graphmem as an MCP server: group memory as tools for agents (``graphmem mcp``).

Built on the official MCP Python SDK (``mcp`` >= 2, :class:`mcp.server.mcpserver.MCPServer`;
optional extra ``graphmem[mcp]``). Transports: stdio (the agent starts ``graphmem mcp`` as a
subprocess) and streamable HTTP (``graphmem mcp --transport http``, endpoint ``/mcp``).

Tool sets:

- **core** (always): ``append_messages``, ``search_messages``, ``ask``, ``roster``,
  ``person_memory``, ``record_provenance``, ``forget_person``.
- **extended** (``--tools all``): ``read_cypher`` (one group's read-only Cypher, decided by
  the query plan, :func:`graphmem.analyst.read_cypher`; time-, row- and byte-limited, never
  retried) and ``export_group`` (the group's export, page by page: graphmem.groups.export).

Scope: every tool names its group, checked against the server's ``--group`` list and, over
HTTP, the caller's key (:mod:`graphmem.access`); outside it the call fails with
``ForbiddenError`` whether the group exists or not. A read-only scope refuses
``append_messages`` and ``forget_person``.

Every tool carries MCP annotations: read-only tools say ``readOnlyHint``; ``forget_person``
says ``destructiveHint``. Each tool calls the same library function the HTTP API calls, so
both faces answer alike. graphmem errors come back as tool errors (``isError``) whose text
starts with the error class (``NotFoundError: no group 'x'``).

The server opens one Neo4j driver on first use and closes it when the session ends; the
embedder is loaded on first use; the answer model comes from ``GRAPHMEM_LLM_*`` (without it
``ask`` returns the composed evidence with message and record ids, and no answer).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context  # tools take it to see the caller's key (HTTP)
from pydantic import BaseModel, Field

from graphmem.core.wire import IngestPublic, NewMessage
from graphmem import __version__
from graphmem.core import limits
from graphmem.access import Access
from graphmem.boundary import ACCESS_SCOPE_KEY
from graphmem.core.config import Settings, get_settings
from graphmem.analyst import READ_CYPHER_MAX_BYTES, CypherResult, read_cypher
from graphmem.groups.export import DEFAULT_PAGE_BYTES, ExportPage, export_page
from graphmem.runtime import Runtime
from graphmem.store.db import Store
from graphmem.core.errors import GraphMemError, InvalidInputError
from graphmem.core.redact import redact_text
from graphmem.query import AskResult, ForgetSummary, PersonMemory, RecordProvenance, RosterMember

logger = logging.getLogger(__name__)

ToolSet = Literal["core", "all"]
T = TypeVar("T")


CORE_TOOLS = (
    "append_messages", "search_messages", "ask", "roster", "person_memory", "record_provenance",
    "forget_person",
)
EXTENDED_TOOLS = ("read_cypher", "export_group")


# ----------------------------------------------------------------------------- results
class SearchHitPublic(BaseModel):
    """One System 1 hit: the stored message and its fused score (RRF, > 0; 0 for a neighbour
    added by expansion, which names its anchor in ``expanded_from``)."""

    id: str
    speaker: str
    person_id: str = ""
    session: str
    turn: int
    ts: str
    channel: str = ""
    text: str
    score: float
    expanded_from: str = ""


class SearchPublic(BaseModel):
    """``search_messages``: hits best first, and how they were ranked (as
    :class:`graphmem.recall.search.SearchResult`: ``mode_used`` is "fulltext" when hybrid was asked
    while ``vectors_pending`` messages have no vector yet; ``warning`` says so)."""

    group_id: str
    query: str
    mode: str = "hybrid"
    mode_used: str = "hybrid"
    vectors_pending: int = 0
    warning: str = ""
    hits: list[SearchHitPublic]


class RosterPublic(BaseModel):
    """``roster``: every person of the group with their message count."""

    group_id: str
    persons: list[RosterMember]


# ----------------------------------------------------------------------------- the server
class _Backend:
    """What the tools share: one :class:`~graphmem.runtime.Runtime` (settings, store, embedder,
    answer model, group cache, tracer), opened on first use so the server starts while Neo4j is
    still down. No I/O in the constructor."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._runtime: Runtime | None = None

    def runtime(self) -> Runtime:
        with self._lock:
            if self._runtime is None:
                self._runtime = Runtime.open(self.settings, connect="lazy")
            return self._runtime

    def store(self) -> Store:
        store: Store = self.runtime().store
        return store

    def embedder(self) -> Any:
        return self.runtime().embedder

    def answer_model(self) -> Any:
        return self.runtime().answer

    def close(self) -> None:
        with self._lock:
            rt, self._runtime = self._runtime, None
        if rt is not None:
            rt.close()


def _tool_errors(fn: Callable[[], T]) -> T:
    """Run ``fn``; a graphmem error becomes an MCP tool error naming its class."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return fn()
    except GraphMemError as e:
        raise ToolError(f"{type(e).__name__}: {redact_text(str(e))}") from e


#: The messages of one append_messages call: 1 to 10,000, as ``POST /groups/{id}/messages``.
Messages = Annotated[list[NewMessage], Field(min_length=1, max_length=limits.MAX_MESSAGES_PER_REQUEST)]


def caller_access(ctx: Any, base: Access) -> Access:
    """What the caller of one tool call may reach: ``base`` (the process's ``--group`` and
    ``--read-only`` limits), narrowed by the key of the HTTP request that carried the call
    (:mod:`graphmem.boundary` left it in the request scope; on stdio there is none)."""
    try:
        request = ctx.request_context.request
    except (AttributeError, ValueError):
        request = None
    scope = getattr(request, "scope", None) or {}
    key_access: Access | None = scope.get(ACCESS_SCOPE_KEY)
    if key_access is None:
        return base
    return Access(key_access.name, key_access.groups, key_access.read_only or base.read_only).narrowed(base.groups)


def build_server(
    settings: Settings | None = None, *, tools: ToolSet = "core", groups: list[str] | None = None,
    read_only: bool = False,
) -> Any:
    """Build the MCP server (an :class:`mcp.server.mcpserver.MCPServer`).

    Args:
        settings: configuration (default: :func:`graphmem.core.config.get_settings`).
        tools: ``"core"`` (seven tools) or ``"all"`` (core plus ``read_cypher`` and
            ``export_group``).
        groups: the only groups this server reaches (``graphmem mcp --group``; None: every
            group). A tool call naming another group is refused with ``ForbiddenError``
            whether that group exists or not; over HTTP the caller's key narrows it further.
        read_only: refuse ``append_messages`` and ``forget_person`` (``--read-only``).

    Raises:
        ImportError: the ``mcp`` package is not installed (``pip install 'graphmem[mcp]'``).
        InvalidInputError: unknown ``tools`` value (field ``tools``).
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    if tools not in ("core", "all"):
        raise InvalidInputError("tools must be 'core' or 'all'", field="tools")
    s = settings or get_settings()
    backend = _Backend(s)
    base = Access("mcp", None if groups is None else frozenset(groups), read_only)

    def allow(ctx: Any, group_id: str, *, write: bool = False) -> None:
        def check() -> None:
            access = caller_access(ctx, base)
            access.check_group(group_id)
            if write:
                access.check_write()

        _tool_errors(check)

    @asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[None]:
        logging.getLogger("neo4j.notifications").setLevel(logging.ERROR)
        backend.runtime().warm_for_serving(logger)  # before the first tool call: none pays for the load
        try:
            yield
        finally:
            backend.close()

    server = MCPServer(
        name="graphmem",
        title="graphmem group-chat memory",
        version=__version__,
        instructions=(
            "Speaker-centred memory of group chats (SpeakerMem-R1) on Neo4j. Every tool is scoped "
            "by group_id. Append new chat messages with append_messages; answer questions with "
            "ask (evidence carries message_ids and record_ids you can cite); look a person up "
            "with roster and person_memory; trace a derived record to its messages with "
            "record_provenance. forget_person erases a person's data for good."
        ),
        lifespan=lifespan,
    )

    def annotations(title: str, *, read_only: bool, destructive: bool = False,
                    idempotent: bool = True) -> ToolAnnotations:
        return ToolAnnotations(title=title, read_only_hint=read_only, destructive_hint=destructive,
                               idempotent_hint=idempotent, open_world_hint=False)

    # --- core ----------------------------------------------------------------------------
    @server.tool(annotations=annotations("Append chat messages", read_only=False))
    def append_messages(group_id: str, messages: Messages, ctx: Context, name: str = "") -> IngestPublic:
        """Append 1 to 10,000 messages to a group's verbatim memory (System 1), each placed by its time.

        The group and its persons are created when needed. Idempotent by message id: a stored
        id sent again with the same text (or a text it had before) writes nothing; with a new
        text it is an edit (the earlier text is kept as history). Each message needs id, speaker,
        text and ts (ISO-8601); session defaults to "main"; speaker_id, channel and reply_to
        are optional, as are kind ("", "bot", "system"), attachments, mentions and edited_ts
        (chat exports, docs/import.md). A text without a visible character (an attachment-only
        message) is stored, flagged, and left out of search and of the Writer's evidence. A bad message is refused with the message and field named, and nothing
        of the call is written. Derived memory (System 2) is built later by the Writer.
        """
        from graphmem.groups.service import append_messages as append

        allow(ctx, group_id, write=True)

        def run() -> IngestPublic:
            summary = append(backend.store(), backend.embedder(), group_id,
                             [m.model_dump() for m in messages], name=name,
                             batch_size=s.write_batch_size, exact_max=s.vector_exact_max)
            return IngestPublic(
                group_id=group_id, messages_written=summary.messages_written,
                messages_edited=summary.messages_edited, messages_skipped=summary.messages_skipped,
                persons_created=summary.persons_created,
                sessions_created=summary.sessions_created, group_created=bool(summary.groups_created),
            )

        return _tool_errors(run)

    @server.tool(annotations=annotations("Search chat messages", read_only=True))
    def search_messages(group_id: str, query: str, ctx: Context, k: int = 10, expand: int = 0,
                        mode: Literal["hybrid", "fulltext", "vector"] = "hybrid") -> SearchPublic:
        """Hybrid search (fulltext + vector, reciprocal-rank fusion) over one group's messages.

        Returns up to k messages best first (k 1-100), each with id, speaker, session, turn,
        time and text; expand (0-5) adds that many neighbouring turns around each hit; mode
        "fulltext" or "vector" uses one ranking. While some messages have no vector yet,
        hybrid ranks by fulltext alone: mode_used, vectors_pending and warning say so.
        """
        from graphmem.recall.search import search_group

        allow(ctx, group_id)

        def run() -> SearchPublic:
            r = search_group(backend.store(), backend.embedder(), group_id, query, k=k,
                             pool_n=max(s.s1_recall_n, k), mode=mode, expand=expand, rrf_k=s.rrf_k,
                             cache=backend.runtime().cache, tracer=backend.runtime().tracer)
            data = r.model_dump(exclude={"hits"})
            return SearchPublic(**data, hits=[
                SearchHitPublic(**{f: getattr(h, f) for f in SearchHitPublic.model_fields}) for h in r.hits
            ])

        return _tool_errors(run)

    @server.tool(annotations=annotations("Ask about the group", read_only=True))
    def ask(
        group_id: str,
        question: str,
        ctx: Context,
        as_of: str | None = None,
        tense: Literal["head", "full"] | None = None,
        evidence_only: bool = False,
    ) -> AskResult:
        """Answer a question from the group's memory: verbatim messages and per-person records.

        The result has the answer (null when no answer model is configured or evidence_only
        is true), the composed evidence text, and message_ids / record_ids of everything
        behind it. as_of (ISO-8601) answers from the state at that time; tense forces "head"
        (current state) or "full" (how it changed).
        """
        from graphmem.query import ask as run_ask

        allow(ctx, group_id)

        def run() -> AskResult:
            rt = backend.runtime()
            if evidence_only:
                rt = rt.with_models()
            return run_ask(rt, group_id, question, as_of=as_of, tense=tense)

        return _tool_errors(run)

    @server.tool(annotations=annotations("List the group's people", read_only=True))
    def roster(group_id: str, ctx: Context) -> RosterPublic:
        """Every person of the group: id (speaker_id, else display name), latest name, every
        alias and the number of messages they sent."""
        from graphmem.query import read_roster
        from graphmem.groups.service import get_group

        allow(ctx, group_id)

        def run() -> RosterPublic:
            store = backend.store()
            get_group(store, group_id)
            return RosterPublic(group_id=group_id, persons=read_roster(store, group_id))

        return _tool_errors(run)

    @server.tool(annotations=annotations("Read one person's memory", read_only=True))
    def person_memory(
        group_id: str, person_id: str, ctx: Context, mode: Literal["head", "full"] = "head",
        as_of: str | None = None,
    ) -> PersonMemory:
        """One person's derived memory: the records they own (one chain per entry, oldest
        first; "head" shows the current state, "full" every state) and what they said about
        others. as_of (ISO-8601) shows the state that held at that time."""
        from graphmem.query import person_memory as read

        allow(ctx, group_id)
        return _tool_errors(lambda: read(backend.store(), group_id, person_id, mode=mode, as_of=as_of))

    @server.tool(annotations=annotations("Trace a record to its messages", read_only=True))
    def record_provenance(group_id: str, record_id: str, ctx: Context) -> RecordProvenance:
        """A derived record, the verbatim messages it was written from (conversation order)
        and every state of its update chain (oldest first)."""
        from graphmem.query import provenance

        allow(ctx, group_id)
        return _tool_errors(lambda: provenance(backend.store(), group_id, record_id))

    @server.tool(annotations=annotations("Erase a person", read_only=False, destructive=True))
    def forget_person(group_id: str, person_id: str, ctx: Context) -> ForgetSummary:
        """Erase one person from a group for good: the messages they sent, every derived record
        that holds their words whoever its source (written from their messages or quoting
        them), every record they own or are the source of (all versions), the importer's CSV
        files of the group, and their roster entry, with their vectors and index entries. Other
        people's messages stay. Cannot be undone; a second call erases nothing."""
        from graphmem.groups.service import forget_person as forget

        allow(ctx, group_id, write=True)
        return _tool_errors(lambda: forget(backend.store(), group_id, person_id, settings=backend.settings))

    if tools == "all":
        # --- extended --------------------------------------------------------------------------
        @server.tool(name="read_cypher", annotations=annotations("Read-only Cypher", read_only=True))
        def read_cypher_tool(
            group_id: str, query: str, ctx: Context, params: dict[str, Any] | None = None,
            max_rows: int = 100, max_bytes: int = READ_CYPHER_MAX_BYTES, timeout_s: float = 10.0,
        ) -> CypherResult:
            """Run one read-only Cypher query over one group's memory graph.

            graphmem binds $group_id to group_id; every node the query starts from must be
            pinned to it (MATCH (m:Message {group_id: $group_id}) ..., or WHERE
            m.group_id = $group_id; a Group node by {id: $group_id}). Writes, procedures,
            LOAD CSV, SHOW/TERMINATE and unpinned scans are refused (decided by the query
            plan). Put other values in params. Labels: Group, Person, Session, Message, Derived
            (with Core, Profile, Interaction, Insight); relationships SOURCE, OWNER, FROM,
            SUPERSEDED_BY, NEXT, REPLY_TO, IN_SESSION, MEMBER_OF. At most max_rows rows
            (<= 10000), max_bytes bytes of JSON and timeout_s seconds (<= 60); truncated says
            when more was there. Runs once (never retried).
            """
            allow(ctx, group_id)
            return _tool_errors(lambda: read_cypher(backend.store(), group_id, query, params, max_rows=max_rows,
                                                    max_bytes=max_bytes, timeout_s=min(timeout_s, 60.0)))

        @server.tool(name="export_group", annotations=annotations("Export a group", read_only=True))
        def export_group_tool(group_id: str, ctx: Context, cursor: str | None = None, with_derived: bool = False,
                              max_bytes: int = DEFAULT_PAGE_BYTES) -> ExportPage:
            """One page of the group's export (docs/export.md): lines for the group, its persons,
            sessions and messages (every field, edits included), with with_derived its Writer
            segments and derived records (owner, source, from, superseded_by). Pass next_cursor
            back for the next page (null: the last). A page holds at most max_bytes
            (1000..4000000) of JSON Lines unless one message or segment is larger; vectors and
            retrieval fields are left out."""
            allow(ctx, group_id)
            return _tool_errors(lambda: export_page(backend.store(), group_id, cursor=cursor,
                                                    with_derived=with_derived, max_bytes=max_bytes))

    _forbid_unknown_arguments(server)
    return server


def _forbid_unknown_arguments(server: Any) -> None:
    """Make every tool refuse an argument it does not declare ("asOf" for "as_of"), as the HTTP
    API refuses unknown fields, and say so in the advertised input schema. The SDK ignores
    them by default, which would answer a different question than the one asked."""
    for tool in server._tool_manager.list_tools():
        model = tool.fn_metadata.arg_model
        model.model_config["extra"] = "forbid"
        model.model_rebuild(force=True)
        tool.parameters["additionalProperties"] = False


# ----------------------------------------------------------------------------- HTTP
def http_app(server: Any, settings: Settings, *, host: str, max_request_bytes: int = 4 * 1024 * 1024) -> Any:
    """The streamable-HTTP ASGI app of ``server`` at ``/mcp`` behind the same boundary as the
    HTTP API (:class:`graphmem.boundary.Boundary`): Host checked against the bound address,
    the key (``X-API-Key`` or ``Authorization: Bearer``; any key of
    :func:`graphmem.access.load_keys`) decided before the body is read, Origin and content
    type checked on POST, bodies over ``max_request_bytes`` cut with 413 and slow ones with
    408. The key's groups and read-only flag apply to every tool call (:func:`caller_access`).

    Raises:
        InvalidInputError: the keys file is unreadable or malformed (field ``api_keys_file``).
    """
    from graphmem.access import load_keys
    from graphmem.boundary import Boundary

    app = server.streamable_http_app(host=host, max_request_body_size=max_request_bytes)
    return Boundary(
        app, keys=load_keys(settings.api_key.get_secret_value(), settings.api_keys_file),
        allowed_hosts=[h for h in settings.api_allowed_hosts.split(",") if h.strip()],
        allowed_origins=[o for o in settings.api_cors_origins.split(",") if o.strip()],
        max_body_bytes=max_request_bytes, body_timeout_s=settings.api_body_timeout_s, path_groups=False,
    )
