"""graphmem as an MCP server: group memory as tools for agents (``graphmem mcp``).

Built on the official MCP Python SDK (``mcp`` >= 2, :class:`mcp.server.mcpserver.MCPServer`;
optional extra ``graphmem[mcp]``). Transports: stdio (the agent starts ``graphmem mcp`` as a
subprocess) and streamable HTTP (``graphmem mcp --transport http``, endpoint ``/mcp``).

Tool sets:

- **core** (always): ``append_messages``, ``search_messages``, ``ask``, ``list_groups``,
  ``roster``, ``person_memory``, ``record_provenance``, ``get_message``, ``forget_person``.
- **extended** (``--tools all``): ``read_cypher`` (one group's read-only Cypher, decided by
  the query plan, :func:`graphmem.analyst.read_cypher`; time-, row- and byte-limited, never
  retried), ``export_group`` (the group's export, page by page: graphmem.groups.export) and
  ``forget_group`` (erase the whole group: :func:`graphmem.groups.service.erase_group`).

Scope: every tool names its group, checked against the server's ``--group`` list and, over
HTTP, the caller's key (:mod:`graphmem.access`); outside it the call fails with
``ForbiddenError`` whether the group exists or not. A read-only scope refuses
``append_messages``, ``forget_person`` and ``forget_group``.

Arguments are typed (:mod:`graphmem.mcp_args`): every one described and bounded in the input
schema, strict (no ``"3"`` -> 3), refused in one sentence naming the argument and what it
accepts; a group id that names no group gets a "did you mean" among the groups the caller
reaches. ``ask`` answers in the compact view by default
(:class:`graphmem.query.CompactAnswer`; ``view="full"``: the whole :class:`AskResult`).

Results: each is one text block holding the result's compact JSON, once, and no
``structuredContent`` (docs/mcp.md, "Results": the SDK would send the data twice, pretty-printed
as text and again as structured content, and hosts differ in which one they give the model).
Every list is paged (:mod:`graphmem.core.paging`): ``max_bytes`` (default 64,000) bounds the
result, ``truncated`` and ``next_cursor`` say that more follows; message texts in lists are cut
at 2,000 characters (``text_truncated``) and ``get_message`` reads one whole.

Every tool carries MCP annotations: read-only tools say ``readOnlyHint``; ``forget_person``
and ``forget_group`` say ``destructiveHint``. Each tool calls the same library function the HTTP API calls, so
both faces answer alike. graphmem errors come back as tool errors (``isError``) whose text
starts with the error class (``NotFoundError: no group 'x'``).

The server opens one Neo4j driver on first use and closes it when the session ends; the
embedder is loaded on first use; the answer model comes from ``GRAPHMEM_LLM_*`` (without it
``ask`` returns the composed evidence with message and record ids, and no answer).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import Context  # tools take it to see the caller's key (HTTP)
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from graphmem.core.wire import IngestPublic
from graphmem import __version__
from graphmem.mcp_args import (
    AsOf, Cursor, CypherParams, CypherQuery, EvidenceOnly, ExportBytes, ExportCursor, Expand, GroupId, GroupsLimit, K,
    MaxBytes, MaxRows, MemoryLimit, MemoryMode, MessageId, Messages, Name, PersonId, ProvenanceLimit, Question,
    RecordId, ResultBytes, RosterLimit, SearchMode, SearchQuery, Tense, TextOffset, TimeoutS, View, WithDerived,
    finish_tools,
)
from graphmem.core import paging
from graphmem.access import Access
from graphmem.boundary import ACCESS_SCOPE_KEY
from graphmem.core.config import Settings, get_settings
from graphmem.analyst import READ_CYPHER_MAX_BYTES, read_cypher
from graphmem.groups.export import export_page
from graphmem.runtime import Runtime
from graphmem.store.db import Store
from graphmem.core.errors import GraphMemError, InvalidInputError
from graphmem.core.redact import redact_text

logger = logging.getLogger(__name__)

ToolSet = Literal["core", "all"]
T = TypeVar("T")


CORE_TOOLS = (
    "append_messages", "search_messages", "ask", "list_groups", "roster", "person_memory", "record_provenance",
    "get_message", "forget_person",
)
EXTENDED_TOOLS = ("read_cypher", "export_group", "forget_group")


# ----------------------------------------------------------------------------- results
class SearchHitPublic(BaseModel):
    """One System 1 hit: the stored message and its fused score (RRF, > 0; 0 for a neighbour
    added by expansion, which names its anchor in ``expanded_from``). A text longer than 2,000
    characters is cut: ``text_truncated`` is true and ``text_chars`` is its whole length
    (``get_message`` reads it whole)."""

    id: str
    speaker: str
    person_id: str = ""
    session: str
    turn: int
    ts: str
    channel: str = ""
    text: str
    text_truncated: bool = False
    text_chars: int | None = None
    score: float
    expanded_from: str = ""


class SearchPublic(paging.Paged):
    """``search_messages``: one page of hits, best first, and how they were ranked (as
    :class:`graphmem.recall.search.SearchResult`: ``mode_used`` is "fulltext" when hybrid was asked
    while ``vectors_pending`` messages have no vector yet; ``warning`` says so); ``truncated`` and
    ``next_cursor`` when more hits of the ranking follow."""

    group_id: str
    query: str
    mode: str = "hybrid"
    mode_used: str = "hybrid"
    vectors_pending: int = 0
    warning: str = ""
    hits: list[SearchHitPublic]


def reply(value: BaseModel | dict[str, Any]) -> CallToolResult:
    """A tool's result: one text block with the compact JSON of ``value``, once (no
    ``structuredContent``: docs/mcp.md, "Results")."""
    text = value.model_dump_json() if isinstance(value, BaseModel) else json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)])


#: The tools that write or erase: not offered by a ``--read-only`` server (:func:`build_server`).
WRITE_TOOLS = ("append_messages", "forget_person", "forget_group")


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
                self._runtime = Runtime.open(self.settings, connect="lazy", serving=True)
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


def _tool_errors(fn: Callable[[], T], hint: Callable[[GraphMemError], str] | None = None) -> T:
    """Run ``fn``; a graphmem error becomes an MCP tool error naming its class, followed by
    ``hint(error)`` (a "did you mean" for a group id that names no group)."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return fn()
    except GraphMemError as e:
        extra = ""
        if hint is not None:
            try:
                extra = hint(e)
            except GraphMemError:  # the hint is a courtesy: never in the way of the error itself
                extra = ""
        raise ToolError(f"{type(e).__name__}: {redact_text(str(e))}{extra}") from e



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
        tools: ``"core"`` (nine tools) or ``"all"`` (core plus ``read_cypher``,
            ``export_group`` and ``forget_group``).
        groups: the only groups this server reaches (``graphmem mcp --group``; None: every
            group). A tool call naming another group is refused with ``ForbiddenError``
            whether that group exists or not; over HTTP the caller's key narrows it further.
        read_only: offer no writing tool (:data:`WRITE_TOOLS`: ``append_messages``,
            ``forget_person``, ``forget_group``; ``--read-only``): an agent is not shown tools
            it may not call, and a call of one is an unknown tool.

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

    def guard(ctx: Any, fn: Callable[[], T]) -> T:
        """Run one tool's work; a group id that names no group gets a "did you mean" among
        the groups this caller reaches (never one outside its scope)."""

        def hint(e: GraphMemError) -> str:
            from graphmem.groups.service import group_hint

            missing = getattr(e, "missing_group", "")
            if not missing:
                return ""
            return group_hint(backend.store(), missing, caller_access(ctx, base).reaches)

        return _tool_errors(fn, hint)

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
    def append_messages(group_id: GroupId, messages: Messages, ctx: Context, name: Name = "") -> CallToolResult:
        """Store new chat messages in a group's memory, word for word.

        Use it whenever the conversation you follow has new messages. The group and its people
        are created on first use; each message takes its place by its time. Sending a message
        id again with the same text writes nothing, so retrying is safe; a new text under a
        known id is an edit (the earlier text is kept). If one message is wrong, nothing of the
        call is stored and the error names the message and field. Chat exports may also give
        kind ("", "bot", "system"), attachments, mentions and edited_ts; a text without a
        visible character (an attachment-only message) is stored, flagged, and left out of
        search and of the Writer's evidence.

        Returns: how many messages were written, edited and skipped, and how many people and
        sessions were created.

        Example: append_messages(group_id="trip", messages=[{"id": "m1", "speaker": "Ben",
        "text": "I booked Pine Hollow for Saturday.", "ts": "2026-05-10T08:00:00Z"}])
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
                channels_renamed=summary.channels_renamed,
            )

        return reply(guard(ctx, run))

    @server.tool(annotations=annotations("Search chat messages", read_only=True))
    def search_messages(group_id: GroupId, query: SearchQuery, ctx: Context, k: K = 10, expand: Expand = 0,
                        mode: SearchMode = "hybrid", cursor: Cursor = None,
                        max_bytes: ResultBytes = paging.RESULT_BYTES) -> CallToolResult:
        """Find the messages of a group that match a query (words and meaning).

        Use it to look up what was said, word for word; to get an answer with its evidence,
        use ask instead.

        Returns: up to k messages, best first, each with id, speaker, session, turn, time,
        text and score. While some messages have no vector yet the ranking uses words only;
        mode_used, vectors_pending and warning then say so. When more hits follow (k, or
        max_bytes), truncated is true: pass next_cursor back as cursor for the next page. A
        text over 2,000 characters is cut (text_truncated, text_chars): get_message reads it.

        Example: search_messages(group_id="trip", query="campsite booking", k=5)
        """
        from graphmem.recall.search import search_group

        allow(ctx, group_id)

        def run() -> SearchPublic:
            r = search_group(backend.store(), backend.embedder(), group_id, query, k=k,
                             pool_n=max(s.s1_recall_n, k), mode=mode, expand=expand, rrf_k=s.rrf_k,
                             cache=backend.runtime().cache, tracer=backend.runtime().tracer, cursor=cursor,
                             max_bytes=max_bytes)
            data = r.model_dump(exclude={"hits"})
            return SearchPublic(**data, hits=[
                SearchHitPublic(**{f: getattr(h, f) for f in SearchHitPublic.model_fields}) for h in r.hits
            ])

        return reply(guard(ctx, run))

    @server.tool(annotations=annotations("Ask about the group", read_only=True))
    def ask(
        group_id: GroupId,
        question: Question,
        ctx: Context,
        as_of: AsOf = None,
        tense: Tense = None,
        evidence_only: EvidenceOnly = False,
        view: View = "compact",
    ) -> CallToolResult:
        """Answer a question from a group's memory: what was said, and what each person holds.

        Use it for questions about the people and events of the chat ("who prefers what",
        "what was decided", "what did Ben think before he changed his mind"). It reads both
        the messages and the per-person memory derived from them.

        Returns (compact view): the answer (null when no answer model is set up or
        evidence_only is true; evidence then holds the composed material), each cited message
        once (id, speaker, ts, text) and each derived record once (id, layer, owner, source,
        status). Cite them by id; record_provenance traces a record to its messages.

        Example: ask(group_id="trip", question="Which campsite did Ben book?")
        """
        from graphmem.query import ask as run_ask

        allow(ctx, group_id)

        def run() -> dict[str, Any]:
            rt = backend.runtime()
            if evidence_only:
                rt = rt.with_models()
            result = run_ask(rt, group_id, question, as_of=as_of, tense=tense)
            out = result if view == "full" else result.compact()
            return out.model_dump(mode="json")

        return reply(guard(ctx, run))

    @server.tool(annotations=annotations("List the groups", read_only=True))
    def list_groups(ctx: Context, limit: GroupsLimit = paging.DEFAULT_LIMIT, cursor: Cursor = None,
                    max_bytes: ResultBytes = paging.RESULT_BYTES) -> CallToolResult:
        """List the groups (chat memories) you can use, with their sizes.

        Use it to find the group_id every other tool takes. Only the groups this server (and
        your key) reaches are listed.

        Returns: one page of groups by id, each with its name, number of people and messages;
        truncated and next_cursor when more follow.

        Example: list_groups(limit=20)
        """
        from graphmem.groups.service import list_groups as read

        def run() -> Any:
            access = caller_access(ctx, base)
            return read(backend.store(), reaches=access.groups, limit=limit, cursor=cursor, max_bytes=max_bytes)

        return reply(guard(ctx, run))

    @server.tool(annotations=annotations("List the group's people", read_only=True))
    def roster(group_id: GroupId, ctx: Context, limit: RosterLimit = paging.DEFAULT_LIMIT, cursor: Cursor = None,
               max_bytes: ResultBytes = paging.RESULT_BYTES) -> CallToolResult:
        """List the people of a group, a page at a time.

        Use it to find the person_id that person_memory and forget_person take.

        Returns: one page of people by id (total says how many the group has), each with
        their id (speaker_id, else display name), latest name, every name they used and how
        many messages they sent; truncated and next_cursor when more follow.

        Example: roster(group_id="trip")
        """
        from graphmem.verbatim.roster import roster_page

        allow(ctx, group_id)
        return reply(guard(ctx, lambda: roster_page(backend.store(), group_id, limit=limit, cursor=cursor,
                                                    max_bytes=max_bytes)))

    @server.tool(annotations=annotations("Read one person's memory", read_only=True))
    def person_memory(
        group_id: GroupId, person_id: PersonId, ctx: Context, mode: MemoryMode = "head", as_of: AsOf = None,
        limit: MemoryLimit = paging.DEFAULT_LIMIT, cursor: Cursor = None, max_bytes: ResultBytes = paging.RESULT_BYTES,
    ) -> CallToolResult:
        """Read what the memory holds about one person.

        Use it for a profile of someone (facts, stances, decisions) rather than one question.

        Returns: the records the person owns, one chain per entry (oldest first; the last is
        the current state, or the state at as_of), and what they said about others; a page at
        a time (truncated and next_cursor when more follow).

        Example: person_memory(group_id="trip", person_id="ben", mode="full")
        """
        from graphmem.query import person_memory as read

        allow(ctx, group_id)
        return reply(guard(ctx, lambda: read(backend.store(), group_id, person_id, mode=mode, as_of=as_of,
                                             limit=limit, cursor=cursor, max_bytes=max_bytes)))

    @server.tool(annotations=annotations("Trace a record to its messages", read_only=True))
    def record_provenance(group_id: GroupId, record_id: RecordId, ctx: Context,
                          limit: ProvenanceLimit = paging.DEFAULT_LIMIT, cursor: Cursor = None,
                          max_bytes: ResultBytes = paging.RESULT_BYTES) -> CallToolResult:
        """Show where a derived record comes from.

        Use it to check or quote the evidence behind a record that ask or person_memory
        returned.

        Returns: the record, the messages it was written from (in conversation order; texts
        over 2,000 characters cut, see get_message) and every state of its update chain
        (oldest first); a page at a time (truncated and next_cursor when more follow).

        Example: record_provenance(group_id="trip", record_id="r-ben-ridge")
        """
        from graphmem.query import provenance

        allow(ctx, group_id)
        return reply(guard(ctx, lambda: provenance(backend.store(), group_id, record_id, limit=limit, cursor=cursor,
                                                   max_bytes=max_bytes)))

    @server.tool(annotations=annotations("Read one whole message", read_only=True))
    def get_message(group_id: GroupId, message_id: MessageId, ctx: Context, text_offset: TextOffset = 0,
                    max_bytes: ResultBytes = paging.RESULT_BYTES) -> CallToolResult:
        """Read one message whole, by id: its full text and who sent it when.

        Use it when a list cut a text short (text_truncated is true) and you need all of it.

        Returns: the message (id, speaker, person_id, session, turn, ts, reply_to, text).
        A text longer than max_bytes comes in slices: text_truncated is true and
        next_text_offset is where the next call starts (text_offset).

        Example: get_message(group_id="trip", message_id="m12")
        """
        from graphmem.query.people import get_message as read

        allow(ctx, group_id)
        return reply(guard(ctx, lambda: read(backend.store(), group_id, message_id, text_offset=text_offset,
                                             max_bytes=max_bytes)))

    @server.tool(annotations=annotations("Erase a person", read_only=False, destructive=True))
    def forget_person(group_id: GroupId, person_id: PersonId, ctx: Context) -> CallToolResult:
        """Erase one person from a group for good. This cannot be undone.

        Use it only when asked to delete someone's data. It removes the messages they sent,
        every derived record that holds their words, every record they own or are the source
        of, and their roster entry; other people's messages stay. A second call erases nothing.

        Returns: what was erased (counts and record ids).

        Example: forget_person(group_id="trip", person_id="ben")
        """
        from graphmem.groups.service import forget_person as forget

        allow(ctx, group_id, write=True)
        return reply(guard(ctx, lambda: forget(backend.store(), group_id, person_id, settings=backend.settings)))

    if tools == "all":
        # --- extended --------------------------------------------------------------------------
        @server.tool(name="read_cypher", annotations=annotations("Read-only Cypher", read_only=True))
        def read_cypher_tool(
            group_id: GroupId, query: CypherQuery, ctx: Context, params: CypherParams = None,
            max_rows: MaxRows = 100, max_bytes: MaxBytes = READ_CYPHER_MAX_BYTES, timeout_s: TimeoutS = 10.0,
            cursor: Cursor = None,
        ) -> CallToolResult:
            """Run one read-only Cypher query over one group's memory graph.

            Use it for counts, joins and shapes the other tools do not give. $group_id is bound
            to group_id; every node the query starts from must be pinned to it (MATCH (m:Message
            {group_id: $group_id}), or WHERE m.group_id = $group_id; a Group node by {id:
            $group_id}). Writes, procedures, LOAD CSV and unpinned scans are refused. Labels:
            Group, Person, Session, Message, Derived (with Core, Profile, Interaction, Insight);
            relationships SOURCE, OWNER, FROM, SUPERSEDED_BY, NEXT, REPLY_TO, IN_SESSION, MEMBER_OF.
            The query runs once, never retried.

            Returns: the column names and the rows; truncated is true when max_rows or max_bytes
            cut the result, and next_cursor reads on (the query runs again and skips the rows
            already returned: give it an ORDER BY for stable pages). Strings over 2,000
            characters are cut (values_clipped counts them).

            Example: read_cypher(group_id="trip", query="MATCH (p:Person {group_id: $group_id})
            RETURN p.id AS id, p.name AS name ORDER BY id")
            """
            allow(ctx, group_id)
            return reply(guard(ctx, lambda: read_cypher(backend.store(), group_id, query, params, max_rows=max_rows,
                                                          max_bytes=max_bytes, timeout_s=min(timeout_s, 60.0),
                                                          cursor=cursor)))

        @server.tool(name="export_group", annotations=annotations("Export a group", read_only=True))
        def export_group_tool(group_id: GroupId, ctx: Context, cursor: ExportCursor = None,
                              with_derived: WithDerived = False,
                              max_bytes: ExportBytes = paging.RESULT_BYTES) -> CallToolResult:
            """One page of a group's export (docs/export.md): lines for the group, its people,
            sessions and messages (every field, edits included) and, with with_derived, its Writer
            segments and derived records (owner, source, from, superseded_by). Vectors and
            retrieval fields are left out. Pass next_cursor back for the next page (null on the
            last); a page holds at most max_bytes of JSON Lines unless one message is larger.

            Example: export_group(group_id="trip", with_derived=true)
            """
            allow(ctx, group_id)
            return reply(guard(ctx, lambda: export_page(backend.store(), group_id, cursor=cursor,
                                                        with_derived=with_derived, max_bytes=max_bytes)))

        @server.tool(name="forget_group", annotations=annotations("Erase a whole group", read_only=False,
                                                                  destructive=True))
        def forget_group_tool(group_id: GroupId, ctx: Context) -> CallToolResult:
            """Erase a whole group for good: every message, person, derived record and segment.
            This cannot be undone.

            Use it only when asked to delete the whole memory space. Writes to the group are
            refused while it is erased; its open derive jobs are cancelled. A second call fails
            with NotFoundError.

            Returns: how many nodes were erased, the derive jobs cancelled and the importer files removed.

            Example: forget_group(group_id="trip")
            """
            from graphmem.groups.service import erase_group

            allow(ctx, group_id, write=True)
            return reply(guard(ctx, lambda: erase_group(backend.store(), group_id, settings=backend.settings,
                                                        missing_ok=False)))

    if read_only:  # --read-only: the writing tools are not offered at all (a read-only key over
        # HTTP still sees them, since another key of the same server may write: refused per call)
        from mcp.server.mcpserver.exceptions import ToolError

        for name in WRITE_TOOLS:
            try:
                server.remove_tool(name)
            except ToolError:  # forget_group: only in --tools all
                pass
    # strict and closed argument models (an unknown "asOf" is refused, not ignored), readable
    # refusals, dedented descriptions (graphmem/mcp_args.py)
    finish_tools(server)
    return server


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
