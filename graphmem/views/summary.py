"""The interaction summary of a group (``GET /groups/{id}/summary``, ``graphmem summary``):
per person messages, replies, records owned/sourced and stance changes; the group's decisions.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from graphmem.derived import memory
from graphmem.store.db import Store
from graphmem.views.common import GroupData, SessionInfo, _when


class PersonSummary(BaseModel):
    """One person's part in the conversation and in the derived memory.

    Attributes:
        id / name: the person (``name`` is the roster label: ``"Name (id)"`` where two members
            share a display form).
        messages: messages sent.
        replies_sent / replies_received: REPLY_TO links to / from other people's messages.
        records_owned: current (head) records about the person.
        records_sourced: head records the person is the source of (about anyone).
        said_about_others: head records the person is the source of and does not own (about
            another person or the group).
        stance_changes: UPDATEs on stance records the person owns (states after the first).
        first_ts / last_ts: times of their first and last message ("" when none).
    """

    id: str
    name: str
    messages: int = 0
    replies_sent: int = 0
    replies_received: int = 0
    records_owned: int = 0
    records_sourced: int = 0
    said_about_others: int = 0
    stance_changes: int = 0
    first_ts: str = ""
    last_ts: str = ""


class DecisionEvent(BaseModel):
    """A decision record (any state), placed in the conversation.

    Attributes:
        id / layer / label / utype / content / state / ts / session: the record.
        source / source_name: who stated it.
        supersedes / superseded_by: its neighbours in the update chain.
        position: 0-based conversation position of its newest supporting message.
    """

    id: str
    layer: str
    label: str
    utype: str
    content: str
    state: str
    ts: str
    session: str = ""
    source: str
    source_name: str = ""
    supersedes: str | None = None
    superseded_by: str | None = None
    position: int = 0


class GroupSummary(BaseModel):
    """The interaction summary of one group.

    Attributes:
        group_id / name: the group.
        persons / messages: roster size and message count.
        records: derived records, every state; heads: current states.
        sessions: sessions in conversation order.
        people: one row per person, by name.
        decisions: records of utype ``decision`` (every state), in time order: how the group's
            decisions came and changed.
        layers: current (head) records per layer label, every layer listed (``{"Core": 12,
            "Profile": 9, "Interaction": 10, "Insight": 0}``).
        utypes: current records per utype, every utype listed (``{"fact": 20, "decision": 0, ...}``).
    """

    group_id: str
    name: str
    persons: int
    messages: int
    records: int
    heads: int
    sessions: list[SessionInfo]
    people: list[PersonSummary]
    decisions: list[DecisionEvent]
    layers: dict[str, int] = {}
    utypes: dict[str, int] = {}


def _decisions(data: GroupData) -> list[DecisionEvent]:
    found = [r for r in data.records if r.utype == "decision"]
    found.sort(key=lambda r: (_when(r.ts) or 0.0, r.turn_created, r.id))
    return [
        DecisionEvent(
            id=r.id, layer=r.layer, label=memory.LAYER_LABELS[r.layer], utype=r.utype, content=r.content,
            state=r.state, ts=r.ts, session=r.session, source=r.source,
            source_name=r.source_name or data.names.get(r.source, r.source),
            supersedes=r.supersedes, superseded_by=r.superseded_by, position=data.record_position(r),
        )
        for r in found
    ]


def _is_stance_change(r: memory.DerivedRecord) -> bool:
    return r.utype == "stance" and r.owner_kind == "person" and r.supersedes is not None


def summarize(store: Store, group_id: str) -> GroupSummary:
    """The interaction summary of one group: per person and the group's decisions over time.

    Args:
        store: open store.
        group_id: the group.

    Returns:
        A :class:`GroupSummary` (people by name, decisions in time order).

    Raises:
        NotFoundError: unknown group.
    """
    data = GroupData(store, group_id, heads_only=False, layers=None)
    heads = [r for r in data.records if r.state == memory.HEAD]
    sent = Counter(m["person_id"] for m in data.messages)
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    for m in data.messages:
        first.setdefault(m["person_id"], m["ts"])
        last[m["person_id"]] = m["ts"]
    replies = [row for row in data.links if row["kind"] == "reply"]
    replies_sent = Counter(row["from_id"] for row in replies)
    replies_received = Counter(row["to_id"] for row in replies)
    owned = Counter(r.owner for r in heads)
    sourced = Counter(r.source for r in heads)
    about_others = Counter(r.source for r in heads if r.source != r.owner)
    stance = Counter(r.owner for r in data.records if _is_stance_change(r))
    people = [
        PersonSummary(
            id=m.id, name=data.names[m.id], messages=sent[m.id], replies_sent=replies_sent[m.id],
            replies_received=replies_received[m.id], records_owned=owned[m.id],
            records_sourced=sourced[m.id], said_about_others=about_others[m.id],
            stance_changes=stance[m.id], first_ts=first.get(m.id, ""), last_ts=last.get(m.id, ""),
        )
        for m in sorted(data.roster, key=lambda m: (m.name.casefold(), m.id))
    ]
    return GroupSummary(
        group_id=group_id, name=data.name, persons=len(data.roster), messages=len(data.messages),
        records=len(data.records), heads=len(heads), sessions=data.sessions(), people=people,
        decisions=_decisions(data),
        layers={memory.LAYER_LABELS[layer]: sum(r.layer == layer for r in heads) for layer in memory.LAYERS},
        utypes={u: sum(r.utype == u for r in heads) for u in memory.UTYPES},
    )
