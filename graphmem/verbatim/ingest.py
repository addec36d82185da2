"""Ingestion of System 1: verbatim messages with speaker, session, turn, time and channel.

Writes ``(:Group)``, ``(:Person)-[:MEMBER_OF]->(:Group)``, ``(:Session)-[:IN_GROUP]->(:Group)``,
``(:Message)-[:SOURCE]->(:Person)``, ``-[:IN_SESSION]->(:Session)``, ``NEXT`` in conversation
order and ``REPLY_TO`` when known (SpeakerMem-R1 §3.2, App. B.2 step 1). No language model runs
here. Every record is validated before anything is written, so bad input leaves the store as it
was; embeddings are computed before each write transaction; writes are ``UNWIND`` batches that
MERGE on (group_id, id), so running the same ingest twice changes nothing.

Guarantees (docs/reliability.md):

- Order is by instant per channel, whatever the arrival order. A message is ordered by
  ``(order_instant, seq)``: ``order_instant`` is its own instant, raised to the latest instant
  before it in the same input and channel when the input's order disagrees with its timestamps
  (a loader whose file order is authoritative keeps it), or the key a group export gives it
  (:attr:`MessageRecord.order_instant`); ``seq`` is its arrival number in the
  group (the new messages of one input are numbered in order of ``order_instant``, input
  order among equal ones). ``turn_created`` is the 0-based position in that order, ``turn`` the position in the
  session, NEXT links consecutive messages of a channel, and ``search_text`` holds the previous
  turn of the session. Each write re-places only the messages from the earliest one it touches
  on: the stored region is read once and the new messages are planned among it before they
  are written (:func:`graphmem.verbatim.order.plan_region`), so each is created with its place
  in one ``UNWIND`` (and NEXT between new messages with it); only stored messages that move
  are written again. A late message and a reply stored before its parent end as if they had
  arrived on time.
- Concurrent loads of one group serialise on the Group node's write lock, taken first in every
  message transaction (``ingest/lock_group``); a load that finds a message changed by another
  load since it read it stops with a retryable :class:`ConflictError` and writes nothing more.
- The same id with the same content, or with a text it had before (a stale redelivery: an
  older export re-sent), is a no-op (``messages_skipped``); with a text it never had it is an
  edit (``messages_edited``): text and embedding replaced, the earlier text kept in
  ``text_history`` (with ``edited_at``), the search documents of it and its next turn rebuilt,
  and the message taken out of its Writer segment, so it is pending for the next derive. Any
  other changed field (speaker, session, channel, ts, reply_to) is refused.
- A renamed channel keeps its first name: when every stored message of an input channel lies
  in one other channel, the input channel is that channel under a new name (a later export of
  a Slack, Discord or Telegram channel renamed since; their message ids do not change), and
  all of the input channel's messages are filed under the stored name (:func:`follow_renamed_channels`).

Identity: a person is keyed by ``speaker_id`` when the input has one, else by display name,
always inside one group (the same name in two groups is two persons). A display name joins the
person whose id has its identity form (:func:`graphmem.core.limits.identity_form`: NFC, trimmed,
case-folded), so "Zoë" typed on a phone, "Zoe\u0308" from a Mac, "zoë" and "Zoë " are one
person; a name no person has yet makes one, keyed by :func:`graphmem.core.limits.speaker_key`
(:func:`person_ids`). Stored names and texts keep their bytes.
"""

from __future__ import annotations

import contextvars
import math
import threading
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any

import neo4j
from tqdm import tqdm

from graphmem.core import limits
from graphmem.core import times
from graphmem.core.redelivery import first_difference, fixed_fields, stored_fixed_fields
from graphmem.verbatim.space import check_space, claim_space, stored_space
from graphmem.core.embed import space_of
from graphmem.store.db import Store, run_tx
from graphmem.core.embed import Embedder, MessageVectors, Prefetch
from graphmem.core.errors import ConflictError, InvalidInputError, group_erasing, no_group
from graphmem.store.scope import group_key, label_scoped_messages
from graphmem.core.model import Conversation, MessageRecord, record_label
from graphmem.verbatim.order import plan_region, search_document, write_plan
from graphmem.core.times import instant, now_iso


@dataclass
class IngestSummary:
    """Counts reported by ``graphmem ingest --json``.

    ``groups``/``sessions``/``persons`` count what the input touched; ``*_created`` what this run
    created; ``messages_written`` (new) + ``messages_edited`` (new text under a stored id, or a
    later version of an id earlier in the same input) + ``messages_skipped`` (identical or
    stale redelivery: the stored text or one in its ``text_history``) = messages in the input.
    """

    groups: int = 0
    groups_created: int = 0
    sessions: int = 0
    sessions_created: int = 0
    persons: int = 0
    persons_created: int = 0
    messages_written: int = 0
    messages_edited: int = 0
    messages_skipped: int = 0
    group_ids: list[str] = field(default_factory=list)
    messages_rejected: int = 0
    """Bad records left out under ``--on-bad-record skip`` (written to the rejects file)."""
    channels_renamed: list[str] = field(default_factory=list)
    """Input channels filed under the name they were stored with (a channel renamed since):
    ``"<group>: <input name> -> <stored name>"`` (:func:`follow_renamed_channels`)."""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def person_key(msg: MessageRecord) -> str:
    """The speaker's key before the group's persons are consulted: ``speaker_id`` if given,
    else :func:`graphmem.core.limits.speaker_key` of the display name (NFC, trimmed, inner
    whitespace as one space), so canonically equal spellings ("Jos\u00e9", "Jose\u0301") give
    one key (the message's ``speaker`` and the person's ``name`` / ``aliases`` keep the bytes as
    written). :func:`person_ids` maps it to the Person id."""
    return msg.speaker_id or limits.speaker_key(msg.speaker)


def person_ids(messages: Iterable[MessageRecord], stored: Iterable[str] = ()) -> dict[str, str]:
    """The Person id of each display-name key (:func:`person_key` of a message without
    ``speaker_id``) of ``messages``: the id of a person that is ``stored`` in the group or keyed
    by a ``speaker_id`` of the input and has the same identity form
    (:func:`graphmem.core.limits.identity_form`: NFC, trimmed, case-folded; the key itself when it
    is one of them, else the first in code-point order), else the key of the first spelling of
    that form in the input. ``"Zo\u00eb"``, ``"zo\u00eb"`` and ``"Zoe\u0308 "`` in one input, with
    no such person stored, all map to ``"Zo\u00eb"`` when it comes first.

    A key of a message with ``speaker_id`` is the Person id itself and is not in the result.
    Names that differ only in invisible characters stay apart (identity_form keeps them).
    Persons stored before this rule under two spellings of one form stay two persons; new
    messages join the one their key equals, else the first (docs/reliability.md).
    """
    messages = list(messages)
    taken: dict[str, list[str]] = {}
    for pid in (*stored, *(m.speaker_id for m in messages if m.speaker_id)):
        ids = taken.setdefault(limits.identity_form(pid), [])
        if pid not in ids:
            ids.append(pid)
    out: dict[str, str] = {}
    for m in messages:
        if m.speaker_id:
            continue
        key = limits.speaker_key(m.speaker)
        if key in out:
            continue
        ids = taken.setdefault(limits.identity_form(key), [])
        out[key] = key if key in ids or not ids else min(ids)
        if not ids:
            ids.append(key)
    return out


def _person(m: MessageRecord, ids: dict[str, str]) -> str:
    """The Person id of ``m``'s speaker under the mapping of :func:`person_ids`."""
    key = person_key(m)
    return key if m.speaker_id else ids.get(key, key)


def search_text(m: MessageRecord, previous: tuple[str, str] | None) -> str:
    """The fulltext document of a message: the previous turn of its session, then the message.

    ``"<prev speaker>: <prev text>\n<speaker>: <text>"`` (no first line for a session's first
    turn). One field, indexed by ``message_text``, so that a turn answering a question asked one
    turn earlier is found by the question's words, and the speaker's name is searchable.
    Measured on LoCoMo conversations 26/30/41 (383 questions, recall@10 of Neo4j fulltext):
    bare text 0.47, text and context as two index fields 0.55, this single document 0.69
    (bench/bench_search.py). ``previous`` is (speaker, text).
    """
    return search_document(m.speaker, m.text, previous)


BLANK_TEXT = limits.BLANK_TEXT  # re-exported: why a message without a visible character is refused


def validate(conv: Conversation) -> None:
    """Check every message of ``conv`` before anything is written.

    The input rules of :mod:`graphmem.core.limits` (id grammar and length, no lone surrogates,
    channel-qualified session ids) and :mod:`graphmem.core.times` (timestamps) apply here, so every
    entry point (CLI, API, library) accepts and rejects the same input. The same id twice in
    one input is a redelivery (identical: skipped) or an edit (only the text differs: the later
    text wins, the earlier is kept as history).

    Raises:
        InvalidInputError: naming the source, the message and the field that is wrong
            (missing speaker, text empty or only whitespace (:data:`BLANK_TEXT`), unparsable ts, an id outside the grammar, a lone
            surrogate, a session holding '/' on a message without a channel, a session not
            qualified by its channel, a message whose reply_to is its own id, an ``order_instant``
            that is not a number at or after its ts, an id repeated with another
            speaker, session, channel, ts or reply_to, ...).
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
        if m.text is None:
            raise InvalidInputError("text is missing", source=src, record=ref, field="text")
        limits.check_message_text(m.text, record=ref, source=src)
        for j, a in enumerate(m.attachments):
            limits.check_text(a.name, field=f"attachments.{j}.name", record=ref, source=src)
            limits.check_text(a.media_type, field=f"attachments.{j}.media_type", record=ref, source=src)
        for j, who in enumerate(m.mentions):
            limits.check_id(who, field=f"mentions.{j}", record=ref, source=src)
        if m.edited_ts:
            times.parse_ts(m.edited_ts, source=src, record=ref, field="edited_ts")
        if not m.session:
            raise InvalidInputError("session is missing", source=src, record=ref, field="session")
        if m.channel:  # the channel first: it is part of the session id
            limits.check_id(m.channel, field="channel", record=ref, source=src, slash=False)
        limits.check_id(m.session, field="session", record=ref, source=src)
        limits.check_channel_session(m.channel, m.session, record=ref, source=src)
        if m.channel:
            if not m.session.startswith(m.channel + "/"):
                raise InvalidInputError(
                    f"session id is not channel-qualified (expected '{m.channel}/<session>')",
                    source=src, record=ref, field="session",
                )
        for name in ("speaker_id", "reply_to"):
            if getattr(m, name):
                limits.check_id(getattr(m, name), field=name, record=ref, source=src)
        if m.reply_to == m.id:
            raise InvalidInputError(
                f"message {m.id!r} replies to itself (reply_to names the message's own id)",
                source=src, record=ref, field="reply_to",
            )
        at = times.instant(m.ts, source=src, record=ref, field="ts")
        if m.order_instant is not None and not (math.isfinite(m.order_instant) and m.order_instant >= at):
            raise InvalidInputError(
                f"order_instant {m.order_instant!r} is not a number at or after the message's ts ({at})",
                source=src, record=ref, field="order_instant",
            )
        if m.session_ts:
            times.parse_ts(m.session_ts, source=src, record=ref, field="session_ts")
        if m.group_id != conv.group_id:
            raise InvalidInputError(
                f"message belongs to group {m.group_id!r}, not {conv.group_id!r}",
                source=src, record=ref, field="group",
            )
        prev = seen.get(m.id)
        if prev is not None:
            field_ = first_difference(fixed_fields(prev), fixed_fields(m))
            if field_ is not None:
                name = "speaker_id" if field_ == "person" else field_
                raise InvalidInputError(
                    f"message id {m.id!r} appears again with another {name} ({getattr(prev, name)!r} "
                    f"at {prev.source_ref or '?'}, now {getattr(m, name)!r}); a repeated id may only "
                    "repeat the message or change its text", source=src, record=ref, field=name,
                )
        else:
            seen[m.id] = m


def split_invalid(conv: Conversation) -> tuple[Conversation, list[tuple[MessageRecord, InvalidInputError]]]:
    """``conv`` less the messages :func:`validate` refuses, and those with their errors
    (``--on-bad-record skip``). A message is checked alone first, then the rest together (a
    repeated id with another speaker, session, ... leaves out the later occurrence), so what
    is kept passes :func:`validate`.

    Raises:
        InvalidInputError: the conversation itself is wrong (its group id or name): no
            message could be kept.
    """
    validate(conv.model_copy(update={"messages": []}))
    good: list[MessageRecord] = []
    bad: list[tuple[MessageRecord, InvalidInputError]] = []
    for m in conv.messages:
        try:
            validate(conv.model_copy(update={"messages": [m]}))
        except InvalidInputError as e:
            bad.append((m, e))
        else:
            good.append(m)
    while True:
        kept = conv.model_copy(update={"messages": good})
        try:
            validate(kept)
            return kept, bad
        except InvalidInputError as e:
            at = next((j for j, m in enumerate(good)
                       if (record_label(m.source_ref, conv.source) or f"message {m.id}") == e.record), None)
            if at is None:
                raise
            bad.append((good.pop(at), e))


def _batches(rows: list[dict[str, Any]], size: int) -> Iterable[list[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


DEFAULT_EXACT_MAX = 500
"""Largest group scored exactly without its own vector index (``GRAPHMEM_VECTOR_EXACT_MAX``'s
default; the shells pass the setting)."""


def ingest_conversations(
    store: Store,
    conversations: list[Conversation],
    embedder: Embedder | None,
    *,
    batch_size: int = 1000,
    progress: bool = False,
    embed: str = "now",
    exact_max: int = DEFAULT_EXACT_MAX,
    workers: int = 1,
) -> IngestSummary:
    """Write conversations into System 1.

    Args:
        store: open store (schema applied).
        conversations: parsed input, one per group, messages in conversation order (each
            channel's order is kept where it disagrees with the timestamps; across inputs,
            messages are placed by instant).
        embedder: computes message embeddings (only for new messages and new texts); may be
            None with ``embed="later"``.
        batch_size: messages per ``UNWIND`` write transaction.
        progress: show a progress bar on stderr.
        embed: "now" (vectors computed before each write) or "later": messages are stored and
            fulltext-searchable at once, labelled ``:PendingEmbedding`` and given vectors by
            :func:`graphmem.embedding.embed_group` (``graphmem embed --group G``); search uses
            fulltext alone for the group meanwhile. The bulk fast path (docs/scale.md).
        exact_max: with ``embed="now"``, a group that ends with more messages than this gets
            its own vector index (graphmem.store.scope); the shells pass ``GRAPHMEM_VECTOR_EXACT_MAX``.
        workers: with ``embed="later"``, up to this many groups of the input are written at
            the same time (one thread each; a group's batches stay in order, one at a time), so
            Neo4j works on one group's transaction while this process prepares another's; the
            summary is the serial one (``group_ids`` in input order). When a group fails, groups
            not started yet are not written, those already running finish, and the error of the
            first failing group in input order is raised. With ``embed="now"`` groups are
            written one after the other (the embedder runs ahead of the writes instead).

    Returns:
        An :class:`IngestSummary`; a second run over the same input reports every message as
        skipped and changes nothing.

    Raises:
        InvalidInputError: a record is wrong (raised before any write for that input).
        ConflictError: an id is stored with another speaker, session, channel, ts or reply_to
            (before any write for that group), or another load changed one of this input's
            messages while it ran (retryable: the batches committed before stay, run it again).
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
        if embed == "later" and workers > 1 and len(conversations) > 1:
            _ingest_parallel(store, conversations, batch_size, summary, _LockedBar(bar), workers)
        else:
            for conv in conversations:
                _ingest_one(store, conv, embedder if embed == "now" else None, batch_size, summary, bar)
    finally:
        bar.close()
    if embed == "now" and embedder is not None and summary.messages_written:
        from graphmem.verbatim.vectors import scope_if_large  # imports this module

        for gid in summary.group_ids:
            scope_if_large(store, embedder, gid, exact_max)
    return summary


class _LockedBar:
    """A progress bar that several writer threads update."""

    def __init__(self, bar: tqdm) -> None:
        self.bar, self.lock = bar, threading.Lock()

    def update(self, n: int) -> None:
        with self.lock:
            self.bar.update(n)


def _ingest_parallel(
    store: Store, conversations: list[Conversation], batch_size: int, summary: IngestSummary,
    bar: _LockedBar, workers: int,
) -> None:
    """:func:`_ingest_one` for each group on up to ``workers`` threads (no embedder), each
    into its own summary, added to ``summary`` in input order; see ``workers`` of
    :func:`ingest_conversations` for what a failure leaves."""
    parts: list[IngestSummary | None] = [None] * len(conversations)
    failed = threading.Event()

    def one(i: int) -> None:
        if failed.is_set():  # another group failed: start nothing more
            return
        part = IngestSummary()
        try:
            _ingest_one(store, conversations[i], None, batch_size, part, bar)
        except BaseException:
            failed.set()
            raise
        parts[i] = part

    with ThreadPoolExecutor(max_workers=min(workers, len(conversations)),
                            thread_name_prefix="graphmem-ingest") as pool:
        futures = [pool.submit(contextvars.copy_context().run, one, i) for i in range(len(conversations))]
        wait(futures)
    for f in futures:  # the first failure in input order
        error = f.exception()
        if error is not None:
            raise error
    for part in parts:
        assert part is not None  # no failure: every group ran
        for name, value in part.as_dict().items():
            if name == "group_ids":
                summary.group_ids.extend(part.group_ids)
            else:
                setattr(summary, name, getattr(summary, name) + value)


@dataclass
class _Delivery:
    """One id of an input: its first record, the texts it went through (consecutive repeats
    collapsed), how often it occurs, and the instant it is ordered by."""

    m: MessageRecord
    texts: list[str]
    occurrences: int
    order_instant: float


def collapse(conv: Conversation) -> list[_Delivery]:
    """One entry per message id of an input, in input order: its first record, its distinct
    texts (first occurrences: a text seen before is stale), its occurrences and its
    ``order_instant`` (the instant, raised to the latest before it in its channel's input order;
    the record's own ``order_instant`` when it has one: a group export's stored key)."""
    out: dict[str, _Delivery] = {}
    running: dict[str, float] = {}  # per channel: latest instant so far in input order
    for m in conv.messages:
        d = out.get(m.id)
        if d is not None:
            d.occurrences += 1
            if m.text not in d.texts:
                d.texts.append(m.text)
            continue
        if m.order_instant is not None:  # the key it was stored with (an export): its place as it was
            t = m.order_instant
            running[m.channel] = max(t, running.get(m.channel, float("-inf")))
        else:
            t = max(instant(m.ts), running.get(m.channel, float("-inf")))
            running[m.channel] = t
        out[m.id] = _Delivery(m, [m.text], 1, t)
    return list(out.values())


def pending_texts(texts: list[str], stored: str, history: list[str]) -> list[str]:
    """The texts of an input still to apply to a stored message, oldest first ([] for an
    identical or stale redelivery): those after the stored text's last occurrence in the input
    (all when it is absent), less any in ``history`` (its ``text_history``), so an older export
    re-sent after an edit is skipped, not an edit back (docs/reliability.md, Edits)."""
    if stored in texts:
        texts = texts[len(texts) - 1 - texts[::-1].index(stored) + 1 :]
    had = set(history)
    return [t for t in texts if t not in had]


def _join_unkeyed_edits(store: Store, gid: str, deliveries: list[_Delivery], stored: dict[str, dict[str, Any]],
                        ids: dict[str, str]) -> None:
    """Edits without a stable id: a message the platform marks edited (``edited``) whose id is
    not stored and was derived from its text (``id_from_content``: WhatsApp, whose export has
    no message ids, :mod:`loaders.whatsapp`) is the new text of the one stored message with its
    time, person and channel that the input no longer holds; its delivery takes that message's
    id (added to ``stored``), so it is written as an edit. A stored message of that slot that
    already holds the edited text is the one (an edit loaded before: a redelivery). Otherwise
    nothing is joined when there are several such stored messages, or several edited messages
    for one: they stay new messages.
    A platform with real message ids never reaches this (an edit keeps its id, and a new message
    that arrives already edited must not take the id of another sent in the same second)."""
    orphans = [d for d in deliveries if d.m.edited and d.m.id_from_content and d.m.id not in stored]
    if not orphans:
        return
    rows = store.read("ingest/stored_at_times", group_id=gid, ts=sorted({times.normalize(d.m.ts) for d in orphans}),
                      exclude=[d.m.id for d in deliveries])
    def slot(ts: str, person: str, channel: str) -> tuple[str, str, str]:
        return times.normalize(ts), person, channel
    stored_at: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        stored_at[slot(r["ts"], r["person_id"], r["channel"])].append(r)
    edited_at: dict[tuple[str, str, str], list[_Delivery]] = defaultdict(list)
    for d in orphans:
        edited_at[slot(d.m.ts, _person(d.m, ids), d.m.channel)].append(d)
    def join(d: _Delivery, row: dict[str, Any]) -> None:
        d.m = d.m.model_copy(update={"id": row["id"]})
        stored[row["id"]] = row

    for key, ds in edited_at.items():
        candidates = list(stored_at.get(key, []))
        # an edit stored before keeps its first id, so every later export must find it again:
        # the one candidate that holds this very text is that message (a later export that no
        # longer holds another message of the minute made two candidates, and the edit came twice)
        for d in list(ds):
            same = [r for r in candidates if r["text"] == d.m.text]
            if len(same) == 1:
                join(d, same[0])
                ds.remove(d)
                candidates.remove(same[0])
        if len(ds) == 1 and len(candidates) == 1:
            join(ds[0], candidates[0])


def follow_renamed_channels(conv: Conversation, stored_channel: dict[str, str]) -> Conversation:
    """``conv`` with each renamed channel filed under the name it was stored with.

    A channel of the input is a renamed one when it has stored messages (``stored_channel``:
    message id -> stored channel) and all of them lie in one other, named channel: the
    platform's message ids say it is that channel (Slack, Discord and Telegram keep a message's
    id when its channel is renamed, and their exports write the name of the export's day). Its
    messages, new ones included, take the stored channel and their sessions its prefix, as a
    renamed person keeps the name their messages were stored with. A channel whose stored
    messages lie in two or more channels, one whose stored name is also a channel of the input
    (the old name given to a new channel), or an input without channels, is left as it is (the
    conflict check then names the message that differs)."""
    seen: dict[str, set[str]] = defaultdict(set)
    for m in conv.messages:
        if m.channel and m.id in stored_channel:
            seen[m.channel].add(stored_channel[m.id])
    # not when the stored name is also a channel of this input whose stored messages do not say
    # it is that channel: "general" renamed "archive" and a new "general" made, both exported,
    # would merge two channels (refused, as before). An old and a new export of one renamed
    # channel side by side ("general" stored as "general", "archive" too) are one channel.
    claimed = {m.channel for m in conv.messages} - {c for c, old in seen.items() if old == {c}}
    renamed = {new: old for new, (old, *more) in seen.items()
               if not more and old not in ("", new) and old not in claimed}
    if not renamed:
        return conv

    def refile(m: MessageRecord) -> MessageRecord:
        old = renamed.get(m.channel)
        if old is None:
            return m
        return m.model_copy(update={"channel": old, "session": old + m.session[len(m.channel):]})

    return conv.model_copy(update={"messages": [refile(m) for m in conv.messages]})


def _ingest_one(
    store: Store, conv: Conversation, embedder: Embedder | None, batch_size: int,
    summary: IngestSummary, bar: tqdm | _LockedBar,
) -> None:
    gid = conv.group_id
    deliveries = collapse(conv)
    stored = {r["id"]: r for r in store.read("ingest/stored_messages", group_id=gid,
                                              ids=[d.m.id for d in deliveries])}
    followed = follow_renamed_channels(conv, {i: r["channel"] for i, r in stored.items()})
    if followed is not conv:  # channel order and placement are per channel: collapse again
        renames = sorted({(a.channel, b.channel) for a, b in zip(conv.messages, followed.messages)
                          if a.channel != b.channel})
        summary.channels_renamed.extend(f"{gid}: {new} -> {old}" for new, old in renames)
        conv, deliveries = followed, collapse(followed)
    # display names join the person of their identity form (person_ids); checked again under
    # the group's lock by the first batch (_write_batch), which refuses a race
    by_name = any(not m.speaker_id for m in conv.messages)
    ids = person_ids(conv.messages, [r["id"] for r in store.read("ingest/person_ids", group_id=gid)]
                     if by_name else [])
    _join_unkeyed_edits(store, gid, deliveries, stored, ids)
    for d in deliveries:  # refuse what is not a redelivery or an edit, before any write
        row = stored.get(d.m.id)
        if row is not None:
            field_ = first_difference(stored_fixed_fields(row), fixed_fields(d.m, _person(d.m, ids)))
            if field_ is not None:
                name = "speaker_id" if field_ == "person" else field_
                stored_value = row["person_id"] if field_ == "person" else row[field_]
                raise ConflictError(
                    f"message {d.m.id!r} of group {gid!r} is stored with another {name} "
                    f"({stored_value!r}; input {getattr(d.m, name)!r} at {d.m.source_ref or '?'}): only "
                    "its text can change (an edit); nothing of this input was written"
                )

    # Per id: (delivery, stored text or None when new, texts to write: the last is kept), or nothing.
    work: list[tuple[_Delivery, str | None, list[str]]] = []
    written = edited = 0
    for d in deliveries:
        row = stored.get(d.m.id)
        if row is None:
            work.append((d, None, d.texts))
            written += 1
            edited += len(d.texts) - 1
        else:
            pending = pending_texts(d.texts, row["text"], row["text_history"])
            if pending:
                work.append((d, row["text"], pending))
                edited += len(pending)
    skipped = len(conv.messages) - written - edited
    # Write in conversation order (stable: input order among equal instants), so each batch
    # appends after what is stored instead of landing between stored messages: placement
    # re-places a group from the earliest message a batch touches, and an input handed over
    # channel by channel would otherwise make every batch re-place most of the group.
    work.sort(key=lambda w: w[0].order_instant)
    bar.update(skipped)

    space = space_of(embedder) if embedder is not None and work else None
    if space is not None:  # an existing group of another model or backend: refused before encoding
        claim_space(store, gid, embedder, missing_ok=True)
    summary.groups += 1
    summary.group_ids.append(gid)

    # Roster: latest display name per person key, every alias seen.
    persons: dict[str, dict[str, Any]] = {}
    for m in conv.messages:
        key = _person(m, ids)
        p = persons.setdefault(key, {"id": key, "name": m.speaker, "speaker_id": m.speaker_id, "aliases": []})
        p["name"] = m.speaker
        if m.speaker not in p["aliases"]:
            p["aliases"].append(m.speaker)
    sessions: dict[str, dict[str, Any]] = {}
    placed: set[str] = set()  # the sessions new messages go to: a stored message stays in its own
    for d in deliveries:
        m = d.m
        sessions.setdefault(
            m.session,
            {"id": m.session, "channel": m.channel, "index": m.session_index,
             "ts": times.normalize(m.session_ts or m.ts)},
        )
        if m.id not in stored:
            placed.add(m.session)
    # (a redelivery written in another UTC offset may name another day's session: no empty
    # Session node is made for it)
    rows_p, rows_s = list(persons.values()), [s for sid, s in sessions.items() if sid in placed]
    summary.persons += len(rows_p)
    summary.sessions += len(sessions)

    key = group_key(gid)
    chunks = [work[i : i + batch_size] for i in range(0, len(work), batch_size)] or [[]]
    def latest(chunk: list[tuple[_Delivery, str | None, list[str]]]) -> list[MessageRecord]:
        # an edit keeps the stored speaker and ts (the input may spell the same instant with
        # another offset, so another date): its vectors are those of the message as stored
        return [d.m.model_copy(update={"text": new[-1]} if old is None else {
            "text": new[-1], "speaker": stored[d.m.id]["speaker"], "ts": stored[d.m.id]["ts"]})
            for d, old, new in chunk]

    group = {"id": gid, "name": conv.name or gid, "vector_index": None, "space": space,  # filled by chunk 0
             "persons": (conv.messages, ids) if by_name else None}
    # with an embedder the bar moves as messages are encoded (the slow part), a sub-batch at a
    # time, instead of jumping once per written batch
    moved = _LockedBar(bar) if isinstance(bar, tqdm) else bar
    with Prefetch(embedder, chunks, latest, on_progress=moved.update if embedder is not None else None) as pending_vectors:
        for n, chunk in enumerate(chunks):
            vectors = pending_vectors.take(n)  # encoded before the transaction
            raced_new, raced_edits = _write_chunk(
                store, group, key, n, chunk, vectors, rows_p, rows_s, stored, batch_size, summary, bar, ids)
            # what another concurrent load wrote identically meanwhile counts as skipped: every
            # input line behind it (a new message's own edits in the input included)
            written -= raced_new
            edited -= raced_edits
            skipped += raced_new + raced_edits
    summary.messages_written += written
    summary.messages_edited += edited
    summary.messages_skipped += skipped


def _flags(m: MessageRecord, text: str) -> dict[str, Any]:
    """The import properties of a message row (issue 26, docs/import.md): ``kind`` ("", "bot",
    "system"), ``no_text`` (no visible character in ``text``), attachment names and types
    (parallel lists), ``mentions`` (person ids) and ``edited_ts`` (the platform's edit time)."""
    return {"kind": m.kind, "no_text": not limits.has_visible(text),
            "attachment_names": [a.name for a in m.attachments],
            "attachment_types": [a.media_type for a in m.attachments],
            "mentions": list(m.mentions), "edited_ts": times.normalize(m.edited_ts) if m.edited_ts else "",
            "edited": m.edited or bool(m.edited_ts)}


def _write_chunk(
    store: Store, group: dict[str, Any], key: str, n: int, chunk: list[tuple[_Delivery, str | None, list[str]]],
    vectors: list[MessageVectors] | list[None], rows_p: list[dict[str, Any]], rows_s: list[dict[str, Any]],
    stored: dict[str, dict[str, Any]], batch_size: int, summary: IngestSummary, bar: tqdm | _LockedBar,
    ids: dict[str, str],
) -> tuple[int, int]:
    """Write chunk ``n`` of an input's work in one transaction (:func:`_write_batch`); chunk 0
    also creates the group when missing (``group``: id, name; its ``vector_index`` is set here).

    Returns (new messages, edits) that another concurrent load had already written identically
    (counted as skipped); edits count every input text behind them, so a raced new message
    that the input also edited returns its edits too.
    """
    gid = group["id"]
    edited_at = now_iso()
    new_rows: list[dict[str, Any]] = []
    edit_rows: list[dict[str, Any]] = []
    for (d, old, new), mv in zip(chunk, vectors):
        m = d.m
        vec, sent = (mv.embedding, mv.sentence_embeddings) if mv is not None else (None, None)
        if not limits.has_visible(new[-1]):  # a text-less message is not searched: no vector, never pending
            vec = sent = None
        if old is None:
            new_rows.append({
                "id": m.id, "channel": m.channel, "text": new[-1], "speaker": m.speaker,
                "person_id": _person(m, ids), "session": m.session, "ts": times.normalize(m.ts),
                "instant": instant(m.ts), "order_instant": d.order_instant,
                "reply_to": m.reply_to, "text_history": new[:-1],
                "edited_at": [edited_at] * (len(new) - 1), "embedding": vec,
                "sentence_embeddings": sent, **_flags(m, new[-1]),
            })
        else:
            edit_rows.append({
                "id": m.id, "old_text": old, "text": new[-1], "between": new[:-1],
                "edited_at": times.normalize(m.edited_ts) if m.edited_ts else edited_at, "embedding": vec,
                "sentence_embeddings": sent, "order_instant": d.order_instant, **_flags(m, new[-1]),
            })
    # every person is written with the first batch (latest name, aliases); a session with the
    # first batch that places a message in it, so a load cut short leaves no empty Session
    used = {r["session"] for r in new_rows}
    roster = (rows_p if n == 0 else [], [r for r in rows_s if r["id"] in used])
    out = store.write_tx(  # none of the names is rebound: no defaults needed
        lambda tx: _write_batch(tx, group, n == 0, key, new_rows, edit_rows, roster, stored, batch_size)
    )
    if n == 0:
        summary.groups_created += int(out.group_created)
        group["vector_index"] = out.vector_index
    summary.persons_created += out.persons_created
    summary.sessions_created += out.sessions_created
    if group["vector_index"] and new_rows:  # the group has its own vector index
        label_scoped_messages(store, gid, [r["id"] for r in new_rows])
    if not vectors or vectors[0] is None:  # encoded messages were counted as they were encoded
        bar.update(len(chunk))
    return out.raced_new, out.raced_edits


@dataclass
class _BatchResult:
    """What one batch transaction did (:func:`_write_batch`)."""

    group_created: bool = False
    vector_index: str | None = None
    persons_created: int = 0
    sessions_created: int = 0
    raced_new: int = 0
    raced_edits: int = 0


def _write_batch(
    tx: neo4j.ManagedTransaction, group: dict[str, Any], first: bool, key: str, new_rows: list[dict[str, Any]],
    edit_rows: list[dict[str, Any]], roster: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    stored: dict[str, dict[str, Any]], batch_size: int,
) -> _BatchResult:
    """One batch in one transaction: lock the group (``first``: create it when missing), re-check,
    write the roster, place the new messages among the stored ones, write them with their place,
    link. Idempotent.

    ``raced_new`` / ``raced_edits`` of the result count the new messages and edits that another
    load had already written exactly like this one, which are skipped here. The edits are
    counted as the summary counted them: one per text a new message went through before its
    last in this input (``text_history``), and one per text an edit row applies (``between``
    and the last).
    """
    gid = group["id"]
    out = _BatchResult()
    if first:  # the group, created when missing, and its write lock
        space = group.get("space")  # recorded on the group when this load writes vectors
        opened = run_tx(tx, "ingest/merge_group", group_id=gid, group_name=group["name"],
                        embed_model=space.model if space else None, embed_backend=space.backend if space else None,
                        embed_dimension=space.dimension if space else None)[0]
        out.group_created, out.vector_index = bool(opened["created"]), opened["vector_index"]
        if space is not None:  # a concurrent first load of another space won the group: nothing is written
            check_space(gid, stored_space(opened), space)
        if group.get("persons") is not None:  # display names mapped before the lock: still so?
            messages, ids = group["persons"]
            now_ids = person_ids(messages, [r["id"] for r in run_tx(tx, "ingest/person_ids", group_id=gid)])
            if now_ids != ids:
                raise ConflictError(
                    f"another load added a person of group {gid!r} whose name is spelt like one of this "
                    "input's speakers (same letters in another case or Unicode form) while this one ran; "
                    "run this load again (it then joins that person)")
    else:
        locked = run_tx(tx, "ingest/lock_group", group_id=gid, n=0)
        if not locked:  # erased since this load's first batch
            raise no_group(gid)
        opened = locked[0]
        out.vector_index = group["vector_index"]
    if opened["erasing"]:  # being erased (groups/fence_group): nothing of this batch is written
        raise group_erasing(gid)
    seq_base = int(opened["seq_base"])
    ids = [r["id"] for r in new_rows] + [r["id"] for r in edit_rows]
    # a group this transaction created holds no message yet: nothing to re-check, place after or link to
    empty = out.group_created
    now = {r["id"]: r for r in run_tx(tx, "ingest/stored_messages", group_id=gid, ids=ids)} \
        if ids and not empty else {}
    # Another load may have committed some of these ids since they were read: the same content
    # is simply there already; anything else is a conflict to retry.
    fresh, edits = [], []
    for r in new_rows:
        current = now.get(r["id"])
        if current is None:
            fresh.append(r)
        elif current["text"] == r["text"]:
            out.raced_new += 1
            out.raced_edits += len(r["text_history"])  # its edits in this input were counted as edits
        else:
            raise ConflictError(
                f"message {r['id']!r} of group {gid!r} was written with other text by another load "
                "while this one ran; run this load again (what is stored identically is skipped)")
    for r in edit_rows:
        current = now.get(r["id"])
        if current is not None and current["text"] == r["text"]:
            out.raced_edits += len(r["between"]) + 1
        elif current is None or current["text"] != r["old_text"]:
            raise ConflictError(
                f"message {r['id']!r} of group {gid!r} was changed by another load while this one "
                "ran; run this load again")
        else:
            edits.append(r)
    rows_p, rows_s = roster
    if not first and fresh:  # a person written by an earlier batch of this load, erased since
        speakers = sorted({r["person_id"] for r in fresh})
        present = {r["id"] for r in run_tx(tx, "ingest/persons_present", group_id=gid, ids=speakers)}
        gone = [p for p in speakers if p not in present]
        if gone:
            raise ConflictError(
                f"person {gone[0]!r} of group {gid!r} was erased while this load ran (graphmem forget); the "
                "messages written before that stay, nothing more was written. Run this load again to store "
                "the rest (it stores that person's messages of the input again)")
    out.persons_created = sum(r["created"] for b in _batches(rows_p, batch_size)
                              for r in run_tx(tx, "ingest/merge_persons", group_id=gid, rows=b))
    out.sessions_created = sum(r["created"] for b in _batches(rows_s, batch_size)
                               for r in run_tx(tx, "ingest/merge_sessions", group_id=gid, rows=b))
    if not fresh and not edits:
        return out
    # arrival numbers: the group's next ones (the lock is held, so nobody else takes them)
    rows = [{**r, "seq": seq_base + j} for j, r in enumerate(fresh)]
    if edits:
        run_tx(tx, "ingest/edit_messages", group_id=gid, rows=edits)
    # Place the new messages among the stored ones (edited texts read back) before they are
    # written, so each is created with its position, turn and search document.
    incoming = [{"id": r["id"], "channel": r["channel"], "session": r["session"],
                 "order_instant": r["order_instant"], "seq": r["seq"], "speaker": r["speaker"],
                 "text": r["text"]} for r in rows]
    plan = plan_region(tx, gid, min(r["order_instant"] for r in rows + edits), incoming, empty=empty)
    if rows:
        placed = {p["id"]: p for p in plan.positions}
        for r in rows:
            p = placed.pop(r["id"])
            r["turn_created"], r["turn"], r["search_text"] = p["turn_created"], p["turn"], p["search_text"]
            r["search_grams"] = p.get("search_grams")  # bigrams of unspaced scripts (core.text.gram_field)
        plan.positions = [p for p in plan.positions if p["id"] in placed]  # stored messages that move
        # NEXT between two new messages is made with them (by row number); links from or to a
        # stored message are re-pointed by write_plan
        at = {r["id"]: i for i, r in enumerate(rows)}
        pairs = [[at[ln["from"]], at[ln["to"]]] for ln in plan.links if ln["from"] in at and ln["to"] in at]
        plan.links = [ln for ln in plan.links if not (ln["from"] in at and ln["to"] in at)]
        persons: dict[str, int] = {}
        sessions: dict[str, int] = {}
        for r in rows:
            r["person"] = persons.setdefault(r.pop("person_id"), len(persons))
            r["session_at"] = sessions.setdefault(r["session"], len(sessions))
            if not r["text_history"]:  # no property rather than an empty list
                r["text_history"] = r["edited_at"] = None
        run_tx(tx, "ingest/create_messages", group_id=gid, group_key=key, rows=rows,
               message_seq=seq_base + len(rows), persons=list(persons), sessions=list(sessions), next=pairs)
    write_plan(tx, gid, plan)
    if plan.inserted:  # a late message: stored positions moved (graphmem.recall.cache reloads)
        run_tx(tx, "ingest/bump_vector_rev", group_id=gid)
    replies = [{"id": r["id"], "reply_to": r["reply_to"]} for r in rows if r["reply_to"]]
    for b in _batches(replies, batch_size):
        run_tx(tx, "ingest/link_replies", group_id=gid, rows=b)
    if rows and not empty:  # replies stored before their parent
        run_tx(tx, "ingest/link_reply_children", group_id=gid, ids=[r["id"] for r in rows])
    return out
