"""The group service: look a group up, append messages, derive a step, forget a person or a group.

The writes and erasures of a group that the HTTP API (and benchmarks, tests) call. Appending
goes through :func:`graphmem.verbatim.ingest.ingest_conversations` (idempotent by message id, messages
placed by time, edits kept with their history). Derivation
calls the Writer (:func:`graphmem.derived.writer.derive_group`). A person's erasure runs the
``cypher/groups/`` templates in one write transaction; a group's, in bounded steps behind a fence
(:func:`erase_group`). Reads of memory live in :mod:`graphmem.query.people`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Literal

import neo4j

from graphmem.core import limits
from graphmem.store.db import Store, run_tx
from graphmem.core.embed import Embedder
from graphmem.core.errors import GraphMemError, InvalidInputError, NotFoundError, group_erasing, no_group
from graphmem.verbatim.ingest import DEFAULT_EXACT_MAX, IngestSummary, ingest_conversations
from graphmem.verbatim.order import place_messages
from graphmem.core.times import instant
from graphmem.llm import ChatModel
from graphmem.core.model import KINDS, Attachment, Conversation, MessageRecord
from graphmem.store.scope import scope_index
from graphmem.runtime import Runtime
from graphmem.core.config import Settings
from graphmem.core.text import FUNCTION_WORDS, normalise_content
from graphmem.core.results import ForgetSummary as ForgetSummary  # moved to the light result models
from graphmem.core.results import RosterMember
from graphmem.core.results import GroupInfo as GroupInfo, GroupsPage
from graphmem.core.results import GroupForgetSummary
from graphmem.core import paging
from graphmem.core.times import now_iso


logger = logging.getLogger(__name__)


def get_group(store: Store, group_id: str) -> GroupInfo:
    """The group.

    Raises:
        NotFoundError: no such group.
    """
    rows = store.read("groups/get_group", group_id=group_id)
    if not rows:
        raise no_group(group_id)
    return GroupInfo(**rows[0])


def list_groups(store: Store, *, reaches: Collection[str] | None = None, limit: int = paging.DEFAULT_LIMIT,
                cursor: str | None = None, max_bytes: int | None = None) -> GroupsPage:
    """One page of the store's groups, ordered by id, with their sizes (:mod:`graphmem.core.paging`).

    Args:
        reaches: the group ids the caller may see (a scoped key's groups: only those that
            exist are listed), or None for every group.
        limit: groups on the page, 1 to ``MAX_LIMITS["groups"]`` (1,000).
        cursor: None, or ``next_cursor`` of the previous page.
        max_bytes: bound on the page as compact JSON (MCP); None: no bound.

    Raises:
        InvalidInputError: ``limit``, ``max_bytes`` out of range, or a cursor of another list
            (a scoped key's cursor is scoped to its groups).
    """
    paging.check_limit(limit, maximum=paging.MAX_LIMITS["groups"])
    paging.check_max_bytes(max_bytes)
    ids = None if reaches is None else sorted(reaches)
    scope = paging.list_scope("groups", ids)
    after = paging.decode_cursor(cursor, kind="groups", scope=scope, size=1, types=(str,))
    rows = store.read("groups/list_groups_page", after="" if after is None else str(after[0]), ids=ids,
                      limit=limit + 1)
    groups = [GroupInfo(**r) for r in rows]
    page, last = paging.take(groups, limit=limit, key=lambda g: [g.id],
                             budget=paging.budget_of(GroupsPage(truncated=True), max_bytes))
    return GroupsPage(groups=page, truncated=last is not None,
                      next_cursor=None if last is None else paging.encode_cursor("groups", scope, last))


def group_hint(store: Store, group_id: str, reaches: Callable[[str], bool]) -> str:
    """The "did you mean" hint for a group id that names no group: ``"; did you mean 'trip'
    (Trip 2026)?"`` among the groups ``reaches`` admits (a caller never learns of a group
    outside its scope), or "" (:func:`graphmem.core.limits.did_you_mean`)."""
    rows = store.read("stats/list_groups")
    return limits.did_you_mean(group_id, [(str(r["id"]), str(r["name"] or r["id"])) for r in rows if reaches(str(r["id"]))])


def with_group_hint(store: Store, error: GraphMemError,
                    reaches: Callable[[str], bool] = lambda _group: True) -> GraphMemError:
    """``error`` with the "did you mean" of :func:`group_hint` added when it is the
    :func:`graphmem.core.errors.no_group` of a group id that names no group and a group
    resembles it (the library and the CLI: every group is the caller's); else ``error`` itself.
    A failing read for the hint never replaces the error."""
    missing = getattr(error, "missing_group", "")
    if not missing or not isinstance(error, NotFoundError):
        return error
    try:
        hint = group_hint(store, missing, reaches)
    except GraphMemError:
        return error
    if not hint:
        return error
    hinted = NotFoundError(f"{error}{hint}")
    hinted.missing_group = missing
    return hinted


def append_messages(
    store: Store,
    embedder: Embedder | None,
    group_id: str,
    messages: Sequence[dict[str, Any]],
    *,
    name: str = "",
    batch_size: int = 1000,
    exact_max: int = DEFAULT_EXACT_MAX,
    embed: Literal["now", "later"] = "now",
) -> IngestSummary:
    """Append messages to a group, creating it when needed.

    Each message is a mapping with ``id``, ``speaker``, ``text``, ``ts`` and optional
    ``speaker_id``, ``session`` (default "main"; stored as ``"<channel>/<session>"`` when a
    ``channel`` is given), ``channel``, ``reply_to``. Messages take their place by time (request
    order only breaks ties), before, between or after what is stored: turns, NEXT, session
    numbers and search documents follow. A stored id with the same content is skipped; with new
    text it is an edit; with a text it had before (in its ``text_history``) it is a stale
    redelivery and skipped (see :func:`graphmem.verbatim.ingest.ingest_conversations`).

    ``exact_max``: a group that grows past this many messages gets its own vector index
    (``GRAPHMEM_VECTOR_EXACT_MAX``, passed by the shells).

    ``embed``: ``"now"`` encodes the messages before they are written; ``"later"`` writes them
    without vectors (pending: :func:`graphmem.verbatim.vectors.embed_group`, ``graphmem embed``
    or ``POST /groups/{id}/embed`` fill them; until then search is fulltext for them and says
    ``vectors_pending``), the bulk path (docs/scale.md, "Online ingest"). ``embedder`` may be
    None then.

    Returns:
        The :class:`IngestSummary` of the write.

    Raises:
        InvalidInputError: a group id outside the id grammar or not a string (field ``group``);
            no message (field ``messages``: nothing is created); a message is wrong (nothing is
            written then): not a mapping (field ``message``), a required key missing, a key not
            listed above or a value not a string (that key), an empty ``speaker_id``, or any
            input rule of docs/reliability.md; ``record`` is ``"request message N"`` (0-based).
        ConflictError: an id is stored with another speaker, session, channel, ts or reply_to,
            or another load changed one of these messages meanwhile (retry).
    """
    limits.check_id(group_id, field="group", source="api", slash=False)
    if not messages:
        raise InvalidInputError("no messages (send at least one)", source="api", field="messages")
    drafts = []
    for i, m in enumerate(messages):
        record = f"request message {i}"
        _check_shape(m, record)
        # The normal form of session ids (channel-qualified), as the loaders store them.
        session = limits.session_id(m.get("channel") or "", m.get("session") or "main",
                                    record=record, source="api")
        when = instant(m["ts"], source="api", record=record, field="ts")
        drafts.append((when, i, m, session))
    drafts.sort(key=lambda d: (d[0], d[1]))  # by instant; request order breaks ties
    records = [
        MessageRecord(
            id=m["id"], group_id=group_id, channel=m.get("channel") or "",
            session=session, session_index=0, session_ts=m["ts"], turn=0,
            speaker=m["speaker"], speaker_id=m.get("speaker_id") or "", text=m["text"],
            ts=m["ts"], reply_to=m.get("reply_to") or "", source_ref=f"request message {i}",
            kind=m.get("kind") or "", edited_ts=m.get("edited_ts") or "",
            attachments=tuple(Attachment(**a) for a in m.get("attachments") or ()),
            mentions=tuple(m.get("mentions") or ()),
        )
        for _, i, m, session in drafts
    ]
    conv = Conversation(group_id=group_id, name=name or group_id, messages=records, source="api")
    if embed not in ("now", "later"):
        raise InvalidInputError("embed must be 'now' or 'later'", source="api", field="embed")
    return ingest_conversations(store, [conv], embedder if embed == "now" else None, batch_size=batch_size,
                                exact_max=exact_max, embed=embed)


_REQUIRED = ("id", "speaker", "text", "ts")
_OPTIONAL = ("speaker_id", "session", "channel", "reply_to", "kind", "edited_ts")
_LISTS = ("attachments", "mentions")  # attachments: mappings of name/media_type; mentions: strings


def _check_shape(m: Any, record: str) -> None:
    """Refuse a message that is not a mapping of strings before anything reads it, so a library
    caller gets the same :class:`InvalidInputError` (record and field named) as the API's 422
    instead of a ``KeyError`` or ``AttributeError``; the content rules follow in ingest."""
    if not isinstance(m, Mapping):
        raise InvalidInputError(f"a message must be a mapping, got {type(m).__name__}",
                                source="api", record=record, field="message")
    for key in m:  # a misspelt key ("replyTo") would be dropped: the reply link lost, silently
        if key not in _REQUIRED and key not in _OPTIONAL and key not in _LISTS:
            raise InvalidInputError(
                f"unknown key {key!r} (allowed: {', '.join(_REQUIRED + _OPTIONAL + _LISTS)})",
                source="api", record=record, field=str(key))
    for key in _REQUIRED + _OPTIONAL:
        value = m.get(key)
        if value is None and key in _REQUIRED:
            raise InvalidInputError(f"{key} is missing", source="api", record=record, field=key)
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"{key} must be a string, got {type(value).__name__}",
                                    source="api", record=record, field=key)
    for key in _LISTS:
        value = m.get(key)
        if value is None:
            continue
        if not isinstance(value, (list, tuple)):
            raise InvalidInputError(f"{key} must be a list, got {type(value).__name__}",
                                    source="api", record=record, field=key)
        for j, item in enumerate(value):
            ok = (isinstance(item, Mapping) and set(item) <= {"name", "media_type"}
                  and all(isinstance(v, str) for v in item.values())) if key == "attachments" \
                else isinstance(item, str)
            if not ok:
                raise InvalidInputError(
                    "an attachment is a mapping of 'name' and 'media_type' strings" if key == "attachments"
                    else "a mention is a person id (string)", source="api", record=record, field=f"{key}.{j}")
    if m.get("kind") not in (None, *KINDS):
        raise InvalidInputError(f"kind must be one of {', '.join(repr(k) for k in KINDS)}",
                                source="api", record=record, field="kind")
    if m.get("speaker_id") == "":  # "" would key the speaker by display name: a second person
        raise InvalidInputError("speaker_id is empty (leave it out when the speaker has no stable id)",
                                source="api", record=record, field="speaker_id")


def derive_step(
    rt: Runtime,
    group_id: str,
    *,
    model: ChatModel | None = None,
    max_segments: int | None = None,
) -> tuple[Any, int]:
    """Run the Writer over at most ``max_segments`` pending segments (all when None).

    Args:
        rt: the runtime (store, embedder, settings, tracer; its Writer ``rt.writer`` unless
            ``model`` is given).
        group_id: the group.
        model: the Writer to run instead of ``rt.writer``.
        max_segments: stop after this many written segments (None: all).

    Returns:
        (the Writer's :class:`graphmem.derived.writer.DeriveSummary`, messages still pending after it).

    Raises:
        NotFoundError: no such group.
        LLMError: segments are pending but no Writer is configured, or the endpoint failed.
        ConflictError: another run is deriving the same group.
    """
    from graphmem.derived.writer import derive_group, load_messages

    get_group(rt.store, group_id)
    summary = derive_group(
        rt.store, group_id, model=model if model is not None else rt.writer, embedder=rt.embedder,
        settings=rt.settings, max_segments=max_segments, tracer=rt.tracer,
    )
    pending = len(load_messages(rt.store, group_id, pending_only=True))
    return summary, pending


#: A derived record quotes a person when it holds this many consecutive words (normalised) of one
#: of their messages, at least two of them not function words; a message shorter than that (but
#: of three words or more) counts when the record holds all of it.
QUOTE_WORDS = 5


def quoting_records(texts: Sequence[str], records: Sequence[tuple[str, str]]) -> list[str]:
    """The records whose content quotes one of ``texts`` (see :data:`QUOTE_WORDS`).

    Words are compared normalised (:func:`graphmem.text.normalise_content`: case-folded word
    runs), so punctuation and case do not hide a quote; a run of function words ("and I want
    to go") is not a quote.

    Args:
        texts: everything the person wrote (message texts and their earlier versions).
        records: ``(record id, content)`` pairs.

    Returns:
        The ids of the quoting records, in the order given.
    """
    grams: set[tuple[str, ...]] = set()
    for text in texts:
        words = normalise_content(text).split()
        n = min(QUOTE_WORDS, len(words))
        if n < 3:
            continue
        for i in range(len(words) - n + 1):
            gram = tuple(words[i:i + n])
            if sum(w not in FUNCTION_WORDS for w in gram) >= 2:
                grams.add(gram)
    sizes = sorted({len(g) for g in grams})
    found = []
    for record_id, content in records:
        words = normalise_content(content or "").split()
        if any(tuple(words[i:i + n]) in grams for n in sizes for i in range(len(words) - n + 1)):
            found.append(record_id)
    return found


def forget_person(store: Store, group_id: str, person_id: str, *, settings: Settings) -> ForgetSummary:
    """Erase one person's data from a group, in one write transaction.

    Deletes the messages the person sent; every derived record that holds their words whoever
    its source - written FROM one of their messages, or quoting them (:func:`quoting_records`)
    - with the later states of its chain; every record (all versions) the person owns or is the
    source of; records left with no supporting message; and the Person node. The nodes'
    embeddings and text leave the vector and fulltext indexes with them. Other people's
    messages stay; the NEXT chain of each touched channel is relinked over the gap, turns and
    positions close up, and every neighbour whose search document quoted an erased message as
    its previous turn gets it rebuilt; Writer segments that covered the person's messages or
    wrote an erased record drop their stored validation report (it quotes what the Writer
    wrote). A chain whose head was erased gets its latest remaining state back as head. After
    the transaction, the first-load importer's CSV files that held the group's messages are
    deleted (:func:`graphmem.verbatim.import_files.clear_csv_files`) and this process's cached BM25
    statistics of the group are dropped. Running it again is a no-op (all counts zero, lists
    empty). Source of the words erased: DESIGN.md "Guarantees"; docs/reliability.md;
    docs/security.md "Erasure".

    The person id is matched by the identity rule (:func:`graphmem.core.limits.same_identity`:
    NFC, trimmed, any case): ``"zoe\u0308"`` erases ``"Zo\u00eb"``, and every person whose id
    is a spelling of the same text (NFC or NFD, spaces: two spellings of one name stored as two
    persons before the rule) is erased, listed in ``person_ids``. Persons whose ids differ in
    case (``"UCab"``, ``"UCAB"``: two platform ids) are two persons: the one spelt as asked is
    erased alone (:func:`graphmem.core.limits.erased_identity`). An id that names nobody but
    resembles a member (its name or id in another spelling, accents left out, or close:
    :func:`graphmem.core.limits.did_you_mean`) is refused with the suggestion, never answered
    with zero counts.

    Args:
        store: open store.
        group_id / person_id: whose data.
        settings: where the importer's list of CSV files lives (``home``).

    Returns:
        A :class:`ForgetSummary` listing what was touched.

    Raises:
        NotFoundError: no such group (checked inside the transaction; nothing is written), or
            the id names no person but resembles one (``no person 'Zoe' in group 'g'; nothing
            was erased; did you mean 'Zoë'?``).
        StoreUnavailableError: Neo4j failed (nothing is erased then).
        InvalidInputError: the id names several persons whose ids differ in case and none as
            it is spelt (field ``person_id``; nothing is erased), or the importer's list of CSV
            files cannot be read (the store is
            erased by then; a second call clears the files once the list is mended).
    """
    from graphmem.verbatim.import_files import clear_csv_files

    def work(tx: neo4j.ManagedTransaction) -> ForgetSummary:
        locked = run_tx(tx, "ingest/lock_group", group_id=group_id, n=0)  # serialise with loads
        if not locked:
            raise no_group(group_id)
        if locked[0]["erasing"]:
            raise group_erasing(group_id)
        # every person the id names under the identity rule (NFC, trimmed, any case): two
        # spellings of one name stored as two persons before the rule are erased together;
        # ids that differ in case are two persons, told apart by the spelling asked for
        members = [RosterMember(**r) for r in run_tx(tx, "query/list_members", group_id=group_id)]
        ids = limits.erased_identity(person_id, [m.id for m in members])
        out = ForgetSummary(group_id=group_id, person_id=ids[0] if ids else person_id, person_ids=ids)
        if not ids:
            hint = limits.did_you_mean(person_id, [(m.id, m.name) for m in members])
            if hint:  # a misspelling of someone stored ("Zoe" for "Zoë"): never a silent no-op
                raise NotFoundError(f"no person {person_id!r} in group {group_id!r}; nothing was erased{hint}")
            return out  # nothing of this identity or anything like it is left: a repeated erasure
        start: float | None = None
        erased: list[str] = []
        for pid in ids:
            # records of any source that hold the person's words: cited messages, or quotes
            texts = [t for r in run_tx(tx, "groups/person_words", group_id=group_id, person_id=pid)
                     for t in r["texts"] if t]
            quoted = quoting_records(texts, [(r["id"], r["content"]) for r in
                                             run_tx(tx, "groups/list_record_contents", group_id=group_id)]) if texts else []
            rows = run_tx(tx, "groups/delete_records_with_words", group_id=group_id, person_id=pid,
                          quoted=quoted)
            words = list(rows[0]["ids"]) if rows else []
            erased += words
            out.records_with_their_words += len(words)
            note = json.dumps({"redacted": "a person covered by this segment was erased"})
            segments = sorted(set(rows[0]["segments"])) if rows else []
            out.segments_redacted += int(run_tx(tx, "groups/redact_segments", group_id=group_id, segment_ids=segments,
                                                note=note)[0]["redacted"]) if segments else 0
            rows = run_tx(tx, "groups/redact_segment_reports", group_id=group_id, person_id=pid, note=note)
            out.segments_redacted += int(rows[0]["redacted"]) if rows else 0
            rows = run_tx(tx, "groups/delete_person_records", group_id=group_id, person_id=pid)
            erased += list(rows[0]["ids"]) if rows else []
            rows = run_tx(tx, "groups/delete_person_messages", group_id=group_id, person_id=pid)
            out.messages_deleted += int(rows[0]["deleted"]) if rows else 0
            first = rows[0]["start"] if rows else None
            if first is not None:
                start = float(first) if start is None else min(start, float(first))
        erased += list(run_tx(tx, "groups/delete_orphan_records", group_id=group_id)[0]["ids"])
        out.records_deleted = len(erased)
        out.record_ids = sorted(erased)
        out.chains_repaired = int(run_tx(tx, "groups/repair_chain_heads", group_id=group_id)[0]["repaired"])
        if start is not None:
            # neighbours: NEXT over the gap, turns, positions, and search documents that held
            # the erased words as their previous turn are rebuilt
            place_messages(tx, group_id, float(start))
        for pid in ids:
            deleted = bool(run_tx(tx, "groups/delete_person", group_id=group_id, person_id=pid)[0]["deleted"])
            out.person_deleted = out.person_deleted or deleted
        if out.messages_deleted or out.records_deleted or out.person_deleted or out.segments_redacted:
            # a derive that read the group before this erasure writes nothing of what it read
            run_tx(tx, "groups/count_erasure", group_id=group_id)
        return out

    out = store.write_tx(work)
    # every process's group cache sees the erasure by the group's vector_rev, which it moved
    out.import_files_removed = clear_csv_files(settings, group_id)
    return out


#: Nodes of each label one erase step deletes in one transaction (:func:`erase_group`).
ERASE_BATCH = 2000

#: Every node label a group's data uses, besides the label of the group's own vector index
#: (:func:`graphmem.store.scope.scope_label`). :func:`erase_group` deletes them all: the
#: group's own labels by index (``delete_group_nodes``), any node carrying the group's id
#: (``delete_group_rest``), the Group node last; ``DeriveJob`` nodes stay as receipts.
#: tests/integration/test_group_lifecycle.py fails when a fully populated group uses a label or
#: relationship type not listed here, so a new one is checked against the erasure before it ships.
GROUP_LABELS = frozenset({
    "Group", "Person", "Session", "Message", "PendingEmbedding", "Derived", "Core", "Profile", "Interaction",
    "Insight", "Segment", "DeriveJob",
})
#: Every relationship type between a group's nodes (all deleted with their nodes).
GROUP_RELATIONSHIPS = frozenset({
    "MEMBER_OF", "IN_GROUP", "IN_SESSION", "SOURCE", "NEXT", "REPLY_TO", "OWNER", "FROM", "SUPERSEDED_BY",
    "COVERS",
})


def erase_group(store: Store, group_id: str, *, settings: Settings | None = None,
                batch_size: int = ERASE_BATCH, missing_ok: bool = True) -> GroupForgetSummary:
    """Erase a whole group: both tracks, its roster, its Writer segments and the Group node.

    Steps, each its own write transaction, so a group of any size is erased in bounded
    transactions (``cypher/groups/``):

    1. ``fence_group``: under the Group node's write lock (writes of the group in flight commit
       first), the group is marked ``erasing``; from then on every write of it - a load, an
       append, an edit, a derive segment, an embed batch, a new derive job, a person's erasure
       - is refused with :class:`ConflictError` (or :class:`NotFoundError` for embed). Its
       erasure count moves, so a derive that read the group before writes nothing of what it
       read; its open derive jobs become ``cancelled``.
    2. ``delete_group_nodes`` until it deletes nothing: at most ``batch_size`` nodes of each
       of the group's labels (records, segments, messages, sessions, persons) per transaction.
    3. ``delete_group_rest`` until it deletes nothing: any other node carrying the group's id
       (a scan of every node: only when the group exists).
    4. ``delete_group``: the Group node; then the group's own vector index is dropped.
    5. With ``settings``: the first-load importer's CSV files that held the group
       (:func:`graphmem.verbatim.import_files.clear_csv_files`), as :func:`forget_person` does.

    An erasure that was interrupted (a crash between steps) leaves the group marked: writes
    stay refused and the next call finishes it. Other groups are never touched; a second call
    deletes nothing. The group's derive jobs stay as receipts (state and counters, no chat
    text), so ``GET /jobs/{id}`` still tells a client what became of its job.

    Args:
        store: open store.
        group_id: the group.
        settings: where the importer's list of CSV files lives (``home``); None leaves the
            files alone (the faces always pass it).
        batch_size: nodes of each label per transaction (>= 1).
        missing_ok: False (the CLI, the API, MCP): a group that did not exist (nothing was
            deleted) is a :class:`NotFoundError`, as a second call is.

    Returns:
        A :class:`GroupForgetSummary` (all counts 0 when the group did not exist).

    Raises:
        NotFoundError: ``missing_ok`` is False and there was no such group (nothing deleted).
        StoreUnavailableError: Neo4j failed (what was deleted stays deleted; the group stays
            marked, so a second call finishes it).
        InvalidInputError: the importer's list of CSV files cannot be read (the store is erased by then).
    """
    from graphmem.verbatim.import_files import clear_csv_files

    batch = max(1, int(batch_size))
    out = GroupForgetSummary(group_id=group_id)
    row = store.write("groups/fence_group", group_id=group_id, now_iso=now_iso())[0]
    fenced = bool(row["found"])
    out.jobs_cancelled = sorted(str(j) for j in row["cancelled"])
    out.batches = 1
    # the sweep reads every node of the store: only for a group that exists (an unknown id, a
    # second call, cost any caller a full scan each)
    steps = ("groups/delete_group_nodes", "groups/delete_group_rest") if fenced else ("groups/delete_group_nodes",)
    for template in steps:
        while True:
            deleted = int(store.write(template, group_id=group_id, batch=batch)[0]["deleted"])
            out.batches += 1
            out.nodes_deleted += deleted
            if deleted == 0:
                break
    gone = int(store.write("groups/delete_group", group_id=group_id)[0]["deleted"])
    out.batches += 1
    out.group_deleted = bool(gone)
    out.nodes_deleted += gone
    store.write("meta/drop_index", name=scope_index(group_id))  # its own vector index, if any
    if settings is not None:
        out.import_files_removed = clear_csv_files(settings, group_id)
    if not missing_ok and not fenced and not out.nodes_deleted and not out.import_files_removed:
        raise no_group(group_id)
    if fenced or out.nodes_deleted:
        logger.info("group %r erased: %d nodes in %d transactions, %d open derive job(s) cancelled",
                    group_id, out.nodes_deleted, out.batches, len(out.jobs_cancelled))
    return out


def forget_group(store: Store, group_id: str, *, settings: Settings | None = None,
                 batch_size: int = ERASE_BATCH) -> int:
    """Erase a whole group (:func:`erase_group`) and return how many nodes were deleted.

    Used by test and benchmark clean-up and by anyone retiring a memory space; other groups
    are never touched, and a second call deletes nothing.

    Returns:
        Number of nodes deleted (0 when the group does not exist).

    Raises:
        StoreUnavailableError, InvalidInputError: as :func:`erase_group`.
    """
    return erase_group(store, group_id, settings=settings, batch_size=batch_size).nodes_deleted
