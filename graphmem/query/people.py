"""Read models beside ``ask``: the roster, one person's memory, a record's provenance.

Derived records are read through :mod:`graphmem.derived.memory` (heads, chains, as-of, provenance);
the roster comes from :mod:`graphmem.verbatim.roster`. Erasing a person or a group moved to
:mod:`graphmem.groups.service` (``forget_person``, ``forget_group``; re-exported here for one release).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from graphmem.core import paging
from graphmem.derived import memory
from graphmem.store.db import Store
from graphmem.core.errors import InvalidInputError, NotFoundError
from graphmem.groups.service import (  # moved; re-exported ("X as X") for one release
    ForgetSummary as ForgetSummary, forget_group as forget_group, forget_person as forget_person,
    get_group as get_group,
)
from graphmem.verbatim.roster import RosterMember as RosterMember, find_member, no_person, read_roster as read_roster
from graphmem.core.results import PersonMemory as PersonMemory, RecordProvenance as RecordProvenance  # moved; re-exported
from graphmem.core.results import DerivedRecord, FullMessage, ProvenanceMessage


def get_member(store: Store, group_id: str, person_id: str) -> RosterMember:
    """One roster member, named by its id in any spelling of it
    (:func:`graphmem.verbatim.roster.find_member`: NFC, trimmed, any case).

    Raises:
        NotFoundError: no such group ("no group 'x'", as every group read says), or no such
            person in the group (with a hint for a person whose id or name is close:
            ``no person 'Benn' in group 'g'; did you mean 'ben' (Ben)?``).
        InvalidInputError: the id names several persons spelt alike (stored before the rule)
            and none of them exactly.
    """
    roster = read_roster(store, group_id)
    member = find_member(person_id, roster)
    if member is not None:
        return member
    get_group(store, group_id)  # an unknown group is named as such, not as a missing person
    raise no_person(person_id, group_id, roster)


def person_memory(
    store: Store,
    group_id: str,
    person_id: str,
    *,
    mode: Literal["head", "full"] = "head",
    as_of: str | datetime | None = None,
    limit: int = paging.DEFAULT_LIMIT,
    cursor: str | None = None,
    max_bytes: int | None = None,
) -> PersonMemory:
    """Read one person's derived memory: heads, full chains, or the state at a time, a page
    at a time.

    A page holds at most ``limit`` items: the chains the person owns first, then the records
    they said about others, each ordered by the first state (the ADD) of its chain (the Writer
    segment that wrote it, then its id: derivation order). That key stays while UPDATEs add
    states to a chain and while late messages move positions, so a derive between two pages
    neither repeats a chain nor skips one (:mod:`graphmem.core.paging`).

    Args:
        store: open store.
        group_id / person_id: whose memory (the person id in any spelling of it: NFC or NFD,
            any case, surrounding whitespace; :func:`get_member`).
        mode: ``"head"`` or ``"full"``; with ``as_of``, ``"full"`` adds the states before it.
        as_of: ISO-8601 time (naive = UTC), or None for now.
        limit: chains and records on the page, 1 to ``MAX_LIMITS["person_memory"]`` (500).
        cursor: None, or ``next_cursor`` of the previous page (same person, mode and as_of).
        max_bytes: bound on the page as compact JSON (MCP); None: no bound.

    Raises:
        NotFoundError: no such group, or no such person in the group.
        InvalidInputError: unknown mode, unparsable ``as_of``, ``limit`` or ``max_bytes`` out
            of range, a cursor of another list (field named), or a person id naming several
            persons spelt alike.
    """
    if mode not in ("head", "full"):
        raise InvalidInputError("mode must be 'head' or 'full'", field="mode")
    paging.check_limit(limit, maximum=paging.MAX_LIMITS["person_memory"])
    paging.check_max_bytes(max_bytes)
    person = get_member(store, group_id, person_id)
    person_id = person.id  # the stored id, whatever spelling of it was asked for
    text = ""
    if as_of is not None and as_of != "":
        text = as_of.isoformat() if isinstance(as_of, datetime) else str(as_of)
    scope = paging.list_scope("person_memory", group_id, person_id, mode, text)
    after = paging.decode_cursor(cursor, kind="person_memory", scope=scope, size=3,
                                  types=(int, str, str))
    if text:
        try:
            states = memory.state_as_of(store, group_id, text)
        except InvalidInputError as e:
            raise InvalidInputError("unparsable as-of time (use ISO-8601)", field="as_of", value=text) from e
        mine = [r for r in states if r.owner_kind == "person" and r.owner == person_id]
        others = [r for r in states if r.source_kind == "person" and r.source == person_id
                  and not (r.owner_kind == "person" and r.owner == person_id)]
    else:
        mine = memory.current_heads(store, group_id, owners=[person_id])
        others = [
            r for r in memory.current_heads(store, group_id)
            if r.source_kind == "person" and r.source == person_id
            and not (r.owner_kind == "person" and r.owner == person_id)
        ]
    roots = {r["id"]: (str(r["root_segment"]), str(r["root"])) for r in store.read(
        "memory/chain_roots", group_id=group_id, ids=[r.id for r in [*mine, *others]])}

    def key(section: int, r: DerivedRecord) -> list[Any]:
        segment, root = roots.get(r.id, (r.segment, r.id))
        return [section, segment, root]

    items: list[tuple[list[Any], int, DerivedRecord]] = sorted(
        [(key(0, r), 0, r) for r in mine] + [(key(1, r), 1, r) for r in others], key=lambda t: t[0])
    if after is not None:
        items = [t for t in items if t[0] > after]
    # full chains only for the owned records that can be on this page
    candidates = items[: limit + 1]
    chains_of: dict[str, list[DerivedRecord]] = {}
    owned = [r for _, section, r in candidates if section == 0]
    if mode == "full" and owned:
        full = memory.record_chains(store, group_id, [r.id for r in owned])
        for r in owned:
            chain = full.get(r.id, [r])
            cut = next((i for i, v in enumerate(chain) if v.id == r.id), len(chain) - 1)
            chains_of[r.id] = chain[: cut + 1]
    entries: list[tuple[list[Any], int, list[DerivedRecord]]] = [
        (k, section, chains_of.get(r.id, [r]) if section == 0 else [r]) for k, section, r in candidates]
    envelope = PersonMemory(group_id=group_id, person=person, mode="as_of" if text else mode, as_of=text,
                            truncated=True)
    page, last = paging.take(entries, limit=limit, key=lambda t: t[0], budget=paging.budget_of(envelope, max_bytes),
                             size=lambda t: paging.json_size(t[2]))
    return PersonMemory(
        group_id=group_id, person=person, mode="as_of" if text else mode, as_of=text,
        chains=[records for _, section, records in page if section == 0],
        said_about_others=[records[0] for _, section, records in page if section == 1],
        truncated=last is not None,
        next_cursor=None if last is None else paging.encode_cursor("person_memory", scope, last),
    )


def provenance(store: Store, group_id: str, record_id: str, *, limit: int = paging.DEFAULT_LIMIT,
               cursor: str | None = None, max_bytes: int | None = None,
               max_text_chars: int | None = paging.LIST_TEXT_CHARS) -> RecordProvenance:
    """A record's FROM messages and chain, a page at a time.

    A page holds the record and at most ``limit`` items: its FROM messages first (conversation
    order), then the states of its chain (oldest first). A record's FROM messages never change
    and a chain only grows at its end, so the pages walk both once (:mod:`graphmem.core.paging`).

    Args:
        limit: messages and states on the page, 1 to ``MAX_LIMITS["provenance"]`` (1,000).
        cursor: None, or ``next_cursor`` of the previous page.
        max_bytes: bound on the page as compact JSON (MCP); None: no bound.
        max_text_chars: message texts longer than this are cut (``text_truncated``,
            ``text_chars``); None keeps them whole.

    Raises:
        NotFoundError: no such group ("no group 'x'"), or no such record in the group.
        InvalidInputError: ``limit``, ``max_bytes`` out of range, or a cursor of another list.
    """
    paging.check_limit(limit, maximum=paging.MAX_LIMITS["provenance"])
    paging.check_max_bytes(max_bytes)
    scope = paging.list_scope("provenance", group_id, record_id)
    after = paging.decode_cursor(cursor, kind="provenance", scope=scope, size=2, types=(int, int))
    try:
        record = memory.get_record(store, group_id, record_id)
    except NotFoundError:
        get_group(store, group_id)  # an unknown group is named as such
        raise
    messages = memory.record_provenance(store, group_id, record_id)
    chain = memory.record_chain(store, group_id, record_id)
    for m in messages:
        m.text, m.text_truncated, m.text_chars = paging.clip_text(m.text, max_text_chars)
        m.text_history = [paging.clip_text(t, max_text_chars)[0] for t in m.text_history]
    items: list[tuple[list[Any], ProvenanceMessage | DerivedRecord]] = [
        *(([0, i], m) for i, m in enumerate(messages)), *(([1, i], r) for i, r in enumerate(chain))]
    if after is not None:
        items = [t for t in items if t[0] > after]
    envelope = RecordProvenance(record=record, messages=[], chain=[], truncated=True)
    page, last = paging.take(items, limit=limit, key=lambda t: t[0], budget=paging.budget_of(envelope, max_bytes),
                             size=lambda t: paging.json_size(t[1]))
    return RecordProvenance(
        record=record,
        messages=[m for k, m in page if k[0] == 0 and isinstance(m, ProvenanceMessage)],
        chain=[r for k, r in page if k[0] == 1 and isinstance(r, DerivedRecord)],
        truncated=last is not None,
        next_cursor=None if last is None else paging.encode_cursor("provenance", scope, last),
    )


def get_message(store: Store, group_id: str, message_id: str, *, text_offset: int = 0,
                max_bytes: int | None = None) -> FullMessage:
    """One whole stored message: what a list cut short (``text_truncated``), read whole.

    Args:
        text_offset: start of the text to return, in characters (0: from the start).
        max_bytes: bound on the result as compact JSON (MCP); the text is then the longest
            slice from ``text_offset`` that fits, with ``text_truncated`` and
            ``next_text_offset`` for the rest. None: the whole text.

    Raises:
        NotFoundError: no such group ("no group 'x'"), or no such message in the group.
        InvalidInputError: ``text_offset`` negative or past the text's end, or ``max_bytes``
            out of range.
    """
    paging.check_max_bytes(max_bytes)
    if isinstance(text_offset, bool) or not isinstance(text_offset, int) or text_offset < 0:
        raise InvalidInputError("text_offset must be an integer of at least 0", field="text_offset", value=text_offset)
    rows = store.read("recall/get_message", group_id=group_id, message_id=message_id)
    if not rows:
        get_group(store, group_id)  # an unknown group is named as such
        raise NotFoundError(f"no message {message_id!r} in group {group_id!r}")
    r = rows[0]
    whole = str(r["text"] or "")
    if text_offset > len(whole) or (text_offset and text_offset == len(whole)):
        raise InvalidInputError(f"text_offset is past the end of the text ({len(whole)} characters)",
                                field="text_offset", value=text_offset)
    msg = FullMessage(
        id=r["id"], group_id=group_id, channel=r["channel"] or "", session=r["session"], turn=int(r["turn"] or 0),
        ts=r["ts"], speaker=r["speaker"], person_id=r["person_id"] or "", turn_created=int(r["turn_created"] or 0),
        text="", text_chars=len(whole), text_offset=text_offset, reply_to=r["reply_to"] or "", kind=r["kind"] or "",
        edited=bool(r["edited"]),
    )
    rest = whole[text_offset:]
    if max_bytes is None:
        return msg.model_copy(update={"text": rest})
    room = max_bytes - paging.json_size(msg.model_copy(update={"text_truncated": True,
                                                               "next_text_offset": len(whole)}))
    end = _fitting(rest, room)
    if end == 0 and rest:
        raise InvalidInputError("max_bytes leaves no room for the text", field="max_bytes", value=max_bytes)
    if end < len(rest):
        return msg.model_copy(update={"text": rest[:end], "text_truncated": True,
                                      "next_text_offset": text_offset + end})
    return msg.model_copy(update={"text": rest})


def _fitting(text: str, room: int) -> int:
    """The most leading characters of ``text`` whose JSON string form takes at most ``room``
    bytes (escapes and UTF-8 counted)."""
    if paging.json_size(text) <= room:
        return len(text)
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if paging.json_size(text[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return lo
