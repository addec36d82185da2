"""``Memory``: graphmem from Python as one object over a :class:`~graphmem.runtime.Runtime`.

The CLI, the HTTP API and the MCP server are shells over the same calls; this facade is the
library's own. Every method is one of the product's operations, with the same input rules,
errors and results as the other entry points::

    from graphmem import Memory, NewMessage

    with Memory.open() as mem:                    # GRAPHMEM_* settings; Neo4j must be running
        mem.apply_schema()                        # once per store (idempotent)
        mem.append("trip", [NewMessage(id="m1", speaker="Ben", speaker_id="ben", session="s1",
                                       text="Ridge next year?", ts="2026-05-10T09:00:00+01:00")])
        hits = mem.search("trip", "ridge", k=3)   # SearchResult: hits, mode_used, warning ...
        result = mem.ask("trip", "Which trail did we pick?")
        print(result.answer or result.evidence)   # no answer model: the composed evidence

Source: SpeakerMem-R1 §3 (System 1, System 2, query); the shells are in docs/api.md and docs/mcp.md.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from graphmem.core import paging
from graphmem.core.config import Settings, get_settings
from graphmem.core.errors import NotFoundError, no_group
from graphmem.core.limits import check_lookup_id
from graphmem.core.model import Conversation, Tense
from graphmem.core.wire import NewMessage
from graphmem.derived.memory import DerivedRecord, list_records, record_chain
from graphmem.core.results import FullMessage, GroupForgetSummary, GroupsPage, JobsPage
from graphmem.groups.jobs import list_derive_jobs
from graphmem.groups.service import (
    ForgetSummary, append_messages, derive_step, erase_group, forget_person, list_groups, with_group_hint,
)
from graphmem.query import AskResult, Budgets, PersonMemory, RecordProvenance, ask, budgets_from
from graphmem.query.people import get_message, person_memory, provenance
from graphmem.recall.search import Mode, SearchResult, search_group
from graphmem.runtime import Runtime
from graphmem.store.schema import SchemaReport, apply_schema
from graphmem.verbatim.ingest import IngestSummary, ingest_conversations
from graphmem.verbatim.order import backfill_order
from graphmem.verbatim.vectors import EmbedSummary, embed_group
from graphmem.verbatim.roster import RosterMember, RosterPage, read_roster, roster_page

__all__ = ["Memory"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


_LOOKUP_IDS = ("group_id", "message_id", "record_id", "person_id")
"""The id parameters a method looks up, checked by :func:`graphmem.core.limits.check_lookup_id`."""


def _group_call(method: Callable[Concatenate[Memory, _P], _R]) -> Callable[Concatenate[Memory, _P], _R]:
    """A method over one group: its looked-up ids (``group_id``, ``message_id``, ``record_id``,
    ``person_id``) are checked first, as MCP's and the HTTP API's request models check them
    (``InvalidInputError`` naming the parameter: empty, over :data:`~graphmem.core.limits.MAX_ID_CHARS`
    characters, not a string, a lone surrogate), and a group id that names no group says "did
    you mean" a group like it, as the API, MCP and the CLI do
    (:func:`graphmem.groups.service.with_group_hint`)."""
    signature = inspect.signature(method)
    id_params = [name for name in _LOOKUP_IDS if name in signature.parameters]

    @functools.wraps(method)
    def hinted(self: Memory, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        bound = signature.bind(self, *args, **kwargs)
        for name in id_params:
            if name in bound.arguments:
                check_lookup_id(bound.arguments[name], field=name)
        try:
            return method(self, *args, **kwargs)
        except NotFoundError as e:
            better = with_group_hint(self.runtime.store, e)
            if better is e:
                raise
            raise better from None

    return hinted


class Memory:
    """Group memory: append and ingest messages (System 1), derive records (System 2), search,
    ask, read a person's memory or a record's history, and erase a person or a group.

    Args:
        runtime: what the process holds (store, embedder, models, cache, tracer); the Memory
            does not close a Runtime it was given, :meth:`open` makes one it closes.

    Every method raises the errors of :mod:`graphmem.core.errors`: ``InvalidInputError`` (bad
    input, naming record and field; nothing written), ``NotFoundError`` (no such group, person
    or record), ``ConflictError`` (a concurrent write), ``StoreUnavailableError`` (Neo4j down),
    ``LLMError`` (a model endpoint failed).
    """

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._owned = False

    @classmethod
    def open(cls, settings: Settings | None = None) -> Memory:
        """A Memory on its own Runtime from ``settings`` (default: the ``GRAPHMEM_*`` environment).

        Raises:
            StoreUnavailableError: Neo4j cannot be reached or refuses the credentials.
        """
        mem = cls(Runtime.open(settings if settings is not None else get_settings()))
        mem._owned = True
        return mem

    # -- System 1: messages ------------------------------------------------------------------

    def apply_schema(self) -> SchemaReport:
        """Constraints and indexes (idempotent; waits until ONLINE), then the data migrations."""
        return apply_schema(self.runtime.store, self.runtime.embedder.dimension, migrate=backfill_order,
                            global_vector_index=self.runtime.settings.vector_global_index)

    def append(self, group_id: str, messages: Sequence[NewMessage | Mapping[str, Any]], *,
               name: str = "", embed: Literal["now", "later"] = "now") -> IngestSummary:
        """Append messages to a group (created when new), each placed by its time; a stored id
        with the same content is skipped, with new text it is an edit (history kept).

        Args:
            group_id: the group.
            messages: :class:`~graphmem.core.wire.NewMessage` objects or mappings of the same keys.
            name: the group's display name when this call creates it.
            embed: ``"later"`` writes without vectors (the bulk path); :meth:`embed` fills them.
        """
        rows = [m.model_dump(exclude_none=True) if isinstance(m, NewMessage) else dict(m) for m in messages]
        rt = self.runtime
        s = rt.settings
        return append_messages(rt.store, rt.embedder if embed == "now" else None, group_id, rows, name=name,
                               batch_size=s.write_batch_size if embed == "now" else s.bulk_batch_size,
                               exact_max=s.vector_exact_max, embed=embed)

    @_group_call
    def embed(self, group_id: str) -> EmbedSummary:
        """Encode the group's messages that have no vector yet (``embed="later"`` appends and
        ingests, the first-load importer); idempotent and resumable, one run per group at a
        time (:func:`graphmem.verbatim.vectors.embed_group`).

        Raises:
            NotFoundError: no such group.
            EmbeddingSpaceError: the group's vectors are of another model or backend.
        """
        rt = self.runtime
        return embed_group(rt.store, rt.embedder, group_id, batch_size=max(rt.settings.embed_batch_size, 1000),
                           exact_max=rt.settings.vector_exact_max)

    def ingest(self, conversations: Sequence[Conversation], *, embed: Literal["now", "later"] = "now",
               progress: bool = False) -> IngestSummary:
        """Write parsed conversations (``loaders.load_conversations(path, fmt)``) into System 1;
        idempotent by message id. ``embed="later"`` stores now and leaves the vectors to
        ``graphmem embed``."""
        return ingest_conversations(self.runtime.store, list(conversations), self.runtime.embedder, embed=embed,
                                    progress=progress, exact_max=self.runtime.settings.vector_exact_max)

    # -- System 2: derived records -----------------------------------------------------------

    @_group_call
    def derive(self, group_id: str, *, max_segments: int | None = None) -> tuple[Any, int]:
        """Run the Writer (``runtime.writer``) over the group's pending segments.

        Returns:
            (the Writer's :class:`graphmem.derived.writer.DeriveSummary`, messages still pending).
        """
        return derive_step(self.runtime, group_id, max_segments=max_segments)

    @_group_call
    def records(self, group_id: str, *, owners: Sequence[str] | None = None, layers: Sequence[str] | None = None,
                history: bool = False) -> list[DerivedRecord]:
        """The group's derived records: the heads (current state), or every state with ``history``."""
        return list_records(self.runtime.store, group_id, owners=owners, layers=layers, heads_only=not history)

    @_group_call
    def history(self, group_id: str, record_id: str) -> list[DerivedRecord]:
        """The whole update chain of a record, oldest first (the last one is the head)."""
        return record_chain(self.runtime.store, group_id, record_id)

    @_group_call
    def provenance(self, group_id: str, record_id: str, *, limit: int = paging.DEFAULT_LIMIT,
                   cursor: str | None = None) -> RecordProvenance:
        """A record, the verbatim messages it was written from and its chain, a page at a time
        (``truncated`` / ``next_cursor``; texts over 2,000 characters cut)."""
        return provenance(self.runtime.store, group_id, record_id, limit=limit, cursor=cursor)

    # -- reads -------------------------------------------------------------------------------

    @_group_call
    def search(self, group_id: str, query: str, *, k: int = 10, pool_n: int = 40, mode: Mode = "hybrid",
               expand: int = 0, cursor: str | None = None) -> SearchResult:
        """System 1 retrieval (fulltext and vector fused), group-scoped: one page of ``k`` hits
        best first (``next_cursor`` for the next; texts over 2,000 characters cut)."""
        rt = self.runtime
        return search_group(rt.store, rt.embedder, group_id, query, k=k, pool_n=pool_n, mode=mode, expand=expand,
                            cache=rt.cache, tracer=rt.tracer, cursor=cursor)

    @_group_call
    def ask(self, group_id: str, question: str, *, budgets: Budgets | None = None,
            as_of: str | datetime | None = None, tense: Tense | None = None) -> AskResult:
        """The full query pipeline (Project, System 1, System 2, Compose, Answer); without an
        answer model the result carries the composed evidence and ``answer`` is None."""
        return ask(self.runtime, group_id, question, budgets=budgets, as_of=as_of, tense=tense)

    def budgets(self, **overrides: Any) -> Budgets:
        """This Memory's default budgets with overrides (``s1_k``, ``s2_k``, ``source_k``,
        ``ask_enabled``, ``recall_n``), checked against the limits."""
        return budgets_from(self.runtime.settings, **overrides)

    @_group_call
    def roster(self, group_id: str) -> list[RosterMember]:
        """The group's members with their message counts, all of them; :meth:`roster_page`
        reads them a page at a time.

        Raises:
            NotFoundError: no such group (as ``roster_page``, the API and the CLI).
        """
        members = read_roster(self.runtime.store, group_id)
        if not members and not self.runtime.store.read("groups/get_group", group_id=group_id):
            raise no_group(group_id)
        return members

    @_group_call
    def roster_page(self, group_id: str, *, limit: int = paging.DEFAULT_LIMIT,
                    cursor: str | None = None) -> RosterPage:
        """One page of the group's members, by person id (NotFoundError for an unknown group)."""
        return roster_page(self.runtime.store, group_id, limit=limit, cursor=cursor)

    def groups(self, *, limit: int = paging.DEFAULT_LIMIT, cursor: str | None = None) -> GroupsPage:
        """One page of the store's groups, by id, with their sizes."""
        return list_groups(self.runtime.store, limit=limit, cursor=cursor)

    @_group_call
    def jobs(self, group_id: str, *, limit: int = paging.DEFAULT_LIMIT, cursor: str | None = None) -> JobsPage:
        """One page of the group's background derive jobs, newest first."""
        return list_derive_jobs(self.runtime.store, group_id, self.runtime.settings, limit=limit, cursor=cursor)

    @_group_call
    def message(self, group_id: str, message_id: str) -> FullMessage:
        """One whole stored message (what a list cut short, whole)."""
        return get_message(self.runtime.store, group_id, message_id)

    @_group_call
    def person(self, group_id: str, person_id: str, *, mode: Literal["head", "full"] = "head",
               as_of: str | datetime | None = None, limit: int = paging.DEFAULT_LIMIT,
               cursor: str | None = None) -> PersonMemory:
        """One person's derived memory: heads, full chains, or the state at a time, a page at a
        time (chains first, then what they said about others)."""
        return person_memory(self.runtime.store, group_id, person_id, mode=mode, as_of=as_of, limit=limit,
                             cursor=cursor)

    # -- erasure -----------------------------------------------------------------------------

    @_group_call
    def forget_person(self, group_id: str, person_id: str) -> ForgetSummary:
        """Erase one person's words from the group; returns the erasure report."""
        return forget_person(self.runtime.store, group_id, person_id, settings=self.runtime.settings)

    @_group_call
    def forget_group(self, group_id: str) -> GroupForgetSummary:
        """Delete a whole group (and the importer's CSV files of it) in bounded transactions
        behind a fence (:func:`graphmem.groups.service.erase_group`); the report the API's
        ``DELETE /groups/{g}``, MCP ``forget_group`` and the typed client give:
        ``nodes_deleted``, ``jobs_cancelled``, ``group_deleted``, ...

        Raises:
            NotFoundError: no such group (as the API's 404 and the CLI's exit 1; the message
                names a close group id when there is one).
            StoreUnavailableError: Neo4j failed (what was deleted stays deleted; calling again
                finishes the erasure).
        """
        return erase_group(self.runtime.store, group_id, settings=self.runtime.settings, missing_ok=False)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the Runtime when this Memory opened it (:meth:`open`)."""
        if self._owned:
            self.runtime.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

