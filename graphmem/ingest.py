"""Ingestion of System 1: verbatim messages with speaker, session, turn, time and channel.

Writes ``(:Group)``, ``(:Person)-[:MEMBER_OF]->(:Group)``, ``(:Session)-[:IN_GROUP]->(:Group)``,
``(:Message)-[:SOURCE]->(:Person)``, ``-[:IN_SESSION]->(:Session)``, ``NEXT`` in conversation
order and ``REPLY_TO`` when known (SpeakerMem-R1 §3.2, App. B.2 step 1). No language model runs
here. Every record is validated before anything is written, so bad input leaves the store as it
was; embeddings are computed before each write transaction; writes are ``UNWIND`` batches that
MERGE on (group_id, id), so running the same ingest twice changes nothing.

Identity: a person is keyed by ``speaker_id`` when the input has one, else by display name,
always inside one group (the same name in two groups is two persons).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from tqdm import tqdm

from graphmem import limits, times
from graphmem.db import Store, run_tx
from graphmem.embed import Embedder
from graphmem.errors import InvalidInputError
from graphmem.scope import group_key, label_scoped_messages
from graphmem.times import instant  # noqa: F401  (re-exported: moved to graphmem.times)
from graphmem.model import Conversation, MessageRecord, record_label


@dataclass
class IngestSummary:
    """Counts reported by ``graphmem ingest --json``.

    ``groups``/``sessions``/``persons`` count what the input touched; ``*_created`` what this run
    created; ``messages_written`` + ``messages_skipped`` = messages in the input.
    """

    groups: int = 0
    groups_created: int = 0
    sessions: int = 0
    sessions_created: int = 0
    persons: int = 0
    persons_created: int = 0
    messages_written: int = 0
    messages_skipped: int = 0
    group_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def person_key(msg: MessageRecord) -> str:
    """Identity of the speaker inside the group: ``speaker_id`` if given, else display name."""
    return msg.speaker_id or msg.speaker


def embedding_text(m: MessageRecord) -> str:
    """Text whose embedding represents a message: ``"<speaker> (<date>): <text>"``.

    Naming the speaker and the day lets a question such as "When did Caroline ..." meet the
    right turns in vector space (LoCoMo recall@10 of dense retrieval: 0.25 on bare text, 0.58
    with speaker and date; bench/bench_search.py).
    """
    return f"{m.speaker} ({m.ts[:10]}): {m.text}"


def search_text(m: MessageRecord, previous: tuple[str, str] | None) -> str:
    """The fulltext document of a message: the previous turn of its session, then the message.

    ``"<prev speaker>: <prev text>\n<speaker>: <text>"`` (no first line for a session's first
    turn). One field, indexed by ``message_text``, so that a turn answering a question asked one
    turn earlier is found by the question's words, and the speaker's name is searchable.
    Measured on LoCoMo conversations 26/30/41 (383 questions, recall@10 of Neo4j fulltext):
    bare text 0.47, text and context as two index fields 0.55, this single document 0.69
    (bench/bench_search.py). ``previous`` is (speaker, text).
    """
    head = f"{previous[0]}: {previous[1]}\n" if previous else ""
    return f"{head}{m.speaker}: {m.text}"


def validate(conv: Conversation) -> None:
    """Check every message of ``conv`` before anything is written.

    The input rules of :mod:`graphmem.limits` (id grammar and length, no lone surrogates,
    channel-qualified session ids) and :mod:`graphmem.times` (timestamps) apply here, so every
    entry point (CLI, API, library) accepts and rejects the same input.

    Raises:
        InvalidInputError: naming the source, the message and the field that is wrong
            (missing speaker or text, unparsable ts, an id outside the grammar, a lone
            surrogate, duplicate id with other content, ...).
    """
    seen: dict[str, MessageRecord] = {}
    src = conv.source
    limits.check_id(conv.group_id, field="group", source=src, slash=False)
    if conv.name:
        limits.check_name(conv.name, field="name", source=src)
    for i, m in enumerate(conv.messages):
        ref = record_label(m.source_ref, src) or f"message {i}"
        if not m.id:
            raise InvalidInputError("message id is empty", source=src, record=ref, field="id")
        limits.check_id(m.id, field="id", record=ref, source=src)
        ref = record_label(m.source_ref, src) or f"message {m.id}"
        if not m.speaker.strip():
            raise InvalidInputError("speaker is missing", source=src, record=ref, field="speaker")
        limits.check_name(m.speaker, field="speaker", record=ref, source=src)
        if m.text is None or m.text == "":
            raise InvalidInputError("text is missing", source=src, record=ref, field="text")
        limits.check_text(m.text, field="text", record=ref, source=src)
        if not m.session:
            raise InvalidInputError("session is missing", source=src, record=ref, field="session")
        limits.check_id(m.session, field="session", record=ref, source=src)
        if m.channel:
            limits.check_id(m.channel, field="channel", record=ref, source=src, slash=False)
            if not m.session.startswith(m.channel + "/"):
                raise InvalidInputError(
                    f"session id is not channel-qualified (expected '{m.channel}/<session>')",
                    source=src, record=ref, field="session",
                )
        for name in ("speaker_id", "reply_to"):
            if getattr(m, name):
                limits.check_id(getattr(m, name), field=name, record=ref, source=src)
        times.parse_ts(m.ts, source=src, record=ref, field="ts")
        if m.session_ts:
            times.parse_ts(m.session_ts, source=src, record=ref, field="session_ts")
        if m.group_id != conv.group_id:
            raise InvalidInputError(
                f"message belongs to group {m.group_id!r}, not {conv.group_id!r}",
                source=src, record=ref, field="group",
            )
        prev = seen.get(m.id)
        if prev is not None and prev.model_dump(exclude={"source_ref"}) != m.model_dump(exclude={"source_ref"}):
            raise InvalidInputError(
                f"duplicate message id {m.id!r} with different content (first at "
                f"{prev.source_ref or '?'})", source=src, record=ref, field="id",
            )
        seen[m.id] = m


def _batches(rows: list[dict], size: int) -> Iterable[list[dict]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def ingest_conversations(
    store: Store,
    conversations: list[Conversation],
    embedder: Embedder | None,
    *,
    batch_size: int = 1000,
    progress: bool = False,
    embed: str = "now",
    exact_max: int | None = None,
) -> IngestSummary:
    """Write conversations into System 1.

    Args:
        store: open store (schema applied).
        conversations: parsed input, one per group, messages in conversation order.
        embedder: computes message embeddings (only for messages not yet stored); may be None
            with ``embed="later"``.
        batch_size: messages per ``UNWIND`` write transaction.
        progress: show a progress bar on stderr.
        embed: "now" (vectors computed before each write) or "later": messages are stored and
            fulltext-searchable at once, labelled ``:PendingEmbedding`` and given vectors by
            :func:`graphmem.embedding.embed_group` (``graphmem embed --group G``); search uses
            fulltext alone for the group meanwhile. The bulk fast path (docs/scale.md).
        exact_max: with ``embed="now"``, a group that ends with more messages than this gets
            its own vector index (graphmem.scope); default ``GRAPHMEM_VECTOR_EXACT_MAX``.

    Returns:
        An :class:`IngestSummary`; a second run over the same input reports every message as
        skipped and creates nothing.

    Raises:
        InvalidInputError: a record is wrong (raised before any write for that input).
        StoreUnavailableError: Neo4j failed; batches already committed stay (re-run resumes).
    """
    if embed not in ("now", "later"):
        raise InvalidInputError(f"embed must be 'now' or 'later', not {embed!r}", field="embed")
    if embed == "now" and embedder is None:
        raise InvalidInputError("an embedder is needed to embed now", field="embed")
    for conv in conversations:  # validate everything first: bad input writes nothing
        validate(conv)
    summary = IngestSummary()
    total = sum(len(c.messages) for c in conversations)
    bar = tqdm(total=total, unit="msg", desc="ingest", disable=not progress)
    try:
        for conv in conversations:
            _ingest_one(store, conv, embedder if embed == "now" else None, batch_size, summary, bar)
    finally:
        bar.close()
    if embed == "now" and embedder is not None and summary.messages_written:
        from graphmem.config import get_settings
        from graphmem.vectors import scope_if_large  # imports this module

        limit = get_settings().vector_exact_max if exact_max is None else exact_max
        for gid in summary.group_ids:
            scope_if_large(store, embedder, gid, limit)
    return summary


def _ingest_one(
    store: Store, conv: Conversation, embedder: Embedder | None, batch_size: int,
    summary: IngestSummary, bar: tqdm,
) -> None:
    gid = conv.group_id
    unique: dict[str, MessageRecord] = {}
    for m in conv.messages:
        unique.setdefault(m.id, m)
    messages = list(unique.values())
    summary.messages_skipped += len(conv.messages) - len(messages)  # exact duplicates in input

    created = store.write("ingest/merge_group", group_id=gid, group_name=conv.name or gid)
    scoped = bool(created[0].get("vector_index"))  # the group has its own vector index
    summary.groups += 1
    summary.groups_created += int(created[0]["created"])
    summary.group_ids.append(gid)

    # Roster: latest display name per person key, every alias seen.
    persons: dict[str, dict] = {}
    for m in messages:
        key = person_key(m)
        p = persons.setdefault(key, {"id": key, "name": m.speaker, "speaker_id": m.speaker_id, "aliases": []})
        p["name"] = m.speaker
        if m.speaker not in p["aliases"]:
            p["aliases"].append(m.speaker)
    sessions: dict[str, dict] = {}
    for m in messages:
        sessions.setdefault(
            m.session,
            {"id": m.session, "channel": m.channel, "index": m.session_index,
             "ts": times.normalize(m.session_ts or m.ts)},
        )
    rows_p, rows_s = list(persons.values()), list(sessions.values())

    def write_roster(tx):
        cp = sum(r["created"] for b in _batches(rows_p, batch_size) for r in run_tx(tx, "ingest/merge_persons", group_id=gid, rows=b))
        cs = sum(r["created"] for b in _batches(rows_s, batch_size) for r in run_tx(tx, "ingest/merge_sessions", group_id=gid, rows=b))
        return cp, cs

    cp, cs = store.write_tx(write_roster)
    summary.persons += len(rows_p)
    summary.persons_created += cp
    summary.sessions += len(rows_s)
    summary.sessions_created += cs

    previous: dict[str, tuple[str, str] | None] = {}
    last_in_session: dict[tuple[str, str], tuple[str, str]] = {}
    for m in messages:  # conversation order: the previous turn of the same session
        key = (m.channel, m.session)
        previous[m.id] = last_in_session.get(key)
        last_in_session[key] = (m.speaker, m.text)

    ids = [m.id for m in messages]
    state = store.write("ingest/existing_message_ids", group_id=gid, ids=ids)[0]
    existing = set(state["existing"])
    next_order = int(state["max_turn_created"]) + 1
    new = [m for m in messages if m.id not in existing]
    summary.messages_skipped += len(messages) - len(new)
    bar.update(len(conv.messages) - len(new))
    # A session continued by a later append: its previous turn is already stored.
    first_new = {}
    for m in new:
        if previous[m.id] is None:
            first_new.setdefault(m.session, m.id)
    if first_new and existing:
        stored = store.read("ingest/last_session_turns", group_id=gid, sessions=list(first_new))
        for row in stored:
            previous[first_new[row["session"]]] = (row["speaker"], row["text"])

    key = group_key(gid)
    for start in range(0, len(new), batch_size):
        chunk = new[start : start + batch_size]
        vectors = (  # before the transaction
            embedder.encode([embedding_text(m) for m in chunk]) if embedder is not None else None
        )
        rows = [
            {
                "id": m.id, "channel": m.channel, "text": m.text, "speaker": m.speaker,
                "person_id": person_key(m), "session": m.session, "turn": m.turn, "ts": times.normalize(m.ts),
                "instant": instant(m.ts), "turn_created": next_order + start + j,
                "reply_to": m.reply_to,
                "embedding": vectors[j].tolist() if vectors is not None else None,
                "search_text": search_text(m, previous[m.id]),
            }
            for j, m in enumerate(chunk)
        ]
        written = store.write("ingest/create_messages", group_id=gid, group_key=key, rows=rows)
        summary.messages_written += int(written[0]["written"]) if written else 0
        if scoped:
            label_scoped_messages(store, gid, [r["id"] for r in rows])
        bar.update(len(chunk))

    if new:
        channels = sorted({m.channel for m in new})
        replies = [{"id": m.id, "reply_to": m.reply_to} for m in new if m.reply_to]

        def link(tx):
            for ch in channels:
                run_tx(tx, "ingest/link_next", group_id=gid, channel=ch)
            for b in _batches(replies, batch_size):
                run_tx(tx, "ingest/link_replies", group_id=gid, rows=b)

        store.write_tx(link)
