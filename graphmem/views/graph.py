"""Who said what about whom: the conversation graph (``GET /groups/{id}/graph`` and ``/view``).

Filtering, aggregation (networkx) and the layout (networkx shell layout: the GROUP node in the
centre, people on a ring) happen here. Directions: a derived record is an edge from its SOURCE
(who said or showed it) to its OWNER (whom it is about; GROUP for the group layers). A talk
edge goes from the person who replied or spoke right after to the person they answered or
followed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from graphmem.derived import memory
from graphmem.store.db import Store
from graphmem.core.limits import check_budget
from graphmem.core.errors import InvalidInputError, NotFoundError
from graphmem.verbatim.roster import find_member, no_person
from graphmem.views.common import (
    LAYER_COLOURS,
    GroupData,
    Mode,
    SessionInfo,
    _instant,
    _message_instant,
    _when,
    parse_layers,
)


class GraphNode(BaseModel):
    """A person of the roster, or the group itself.

    Attributes:
        id: ``Person.id`` (speaker_id, else display name), or :data:`graphmem.derived.memory.GROUP`.
        kind: ``"person"`` or ``"group"``.
        name: the roster label: display name, or ``"Name (id)"`` where two members share a
            display form (:class:`graphmem.roster.Roster`); the group's name for GROUP.
        messages: messages the person sent within the session and time filters (0 for GROUP).
        records_owned / records_sourced: records in this graph about / from this node.
        x / y: layout position in [-1, 1] (GROUP at the centre, people on a ring by name).
    """

    id: str
    kind: Literal["person", "group"]
    name: str
    messages: int = 0
    records_owned: int = 0
    records_sourced: int = 0
    x: float = 0.0
    y: float = 0.0


class RecordEdge(BaseModel):
    """A derived record drawn from its source to its owner.

    Attributes:
        id: entry id.
        source / owner: ``Person.id`` or ``"GROUP"``; source_name / owner_name: display names.
        layer: layer code name; label: graph label (Core | Profile | Interaction | Insight).
        utype / content / state / ts / session / turn_created / confidence: as stored.
        sessions: sessions of its supporting (FROM) messages, in conversation order.
        from_ids: supporting message ids, conversation order.
        supersedes / superseded_by: neighbouring states of its update chain, or None.
        cross: the source is not the owner (someone said it about someone else).
    """

    id: str
    source: str
    owner: str
    source_name: str = ""
    owner_name: str = ""
    layer: str
    label: str
    utype: str
    content: str
    state: str
    ts: str
    session: str = ""
    sessions: list[str] = Field(default_factory=list)
    turn_created: int = 0
    confidence: float = 1.0
    from_ids: list[str] = Field(default_factory=list)
    supersedes: str | None = None
    superseded_by: str | None = None
    cross: bool = False


class TalkEdge(BaseModel):
    """Who talks to whom, aggregated over the filtered messages.

    Attributes:
        source: ``Person.id`` of who replied, or spoke right after.
        target: ``Person.id`` of whom they replied to, or followed.
        replies: REPLY_TO links source -> target; next: NEXT hand-overs target -> source.
        total: replies + next.
    """

    source: str
    target: str
    replies: int = 0
    next: int = 0
    total: int = 0


class GraphFilters(BaseModel):
    """The filters a graph was built with (all optional; None = no filter).

    Attributes:
        person: only records whose source or owner is this ``Person.id`` (or GROUP), and talk
            edges that touch them.
        layers: only these layers (code names).
        session: only records with a supporting message in this session (or written in it),
            and talk links whose later message is in it.
        ts_from / ts_to: ISO-8601 bounds (inclusive) on a record's ``ts`` and a talk link's
            message time; naive times are UTC.
        mode: ``"head"`` current states only, ``"full"`` every state of every chain.
    """

    person: str | None = None
    layers: list[str] | None = None
    session: str | None = None
    ts_from: str | None = None
    ts_to: str | None = None
    mode: Mode = "head"


#: Nodes a graph holds by default (the GROUP node and the most active people); the page stays
#: readable and fast with this many.
DEFAULT_MAX_NODES = 150
MAX_NODES = 2000
#: Record edges a graph holds by default (the most recent ones between the nodes shown).
DEFAULT_MAX_RECORDS = 500
MAX_RECORDS = 5000


class ConversationGraph(BaseModel):
    """One group's people, the group node, its derived records and who talks to whom.

    Attributes:
        group_id / group_name: the group.
        filters: what was asked.
        nodes: the GROUP node and the people of the roster (all of them, so the picture keeps
            its shape while filtering, up to ``max_nodes``: then the most active under the
            filters, and the person filtered on).
        records: record edges after the filters, between the nodes shown, by ``turn_created``
            then id (the most recent ``max_records`` when there are more).
        talk: talk edges after the filters, between the nodes shown, by total descending.
        sessions: every session of the group (for a session picker), conversation order.
        layer_colours: layer code name -> colour; layer_labels: code name -> graph label.
        truncated: true when nodes or records were left out by the caps.
        nodes_total / records_total: nodes and record edges there are under the filters.
        notice: what was left out and how to narrow ("" when nothing was).
    """

    group_id: str
    group_name: str
    filters: GraphFilters
    nodes: list[GraphNode]
    records: list[RecordEdge]
    talk: list[TalkEdge]
    sessions: list[SessionInfo]
    layer_colours: dict[str, str] = Field(default_factory=lambda: dict(LAYER_COLOURS))
    layer_labels: dict[str, str] = Field(default_factory=lambda: dict(memory.LAYER_LABELS))
    truncated: bool = False
    nodes_total: int = 0
    records_total: int = 0
    notice: str = ""


def build_graph(
    store: Store,
    group_id: str,
    *,
    person: str | None = None,
    layers: Iterable[str] | None = None,
    session: str | None = None,
    ts_from: str | None = None,
    ts_to: str | None = None,
    mode: Mode = "head",
    max_nodes: int = DEFAULT_MAX_NODES,
    max_records: int = DEFAULT_MAX_RECORDS,
) -> ConversationGraph:
    """Build the conversation graph of one group, filtered and capped.

    Args:
        store: open store.
        group_id: the group.
        person: only records whose source or owner is this ``Person.id`` (or ``"GROUP"``),
            and talk edges touching them; node counts stay unfiltered by person. The id in any
            spelling of it (NFC or NFD, any case, surrounding whitespace:
            :func:`graphmem.verbatim.roster.find_member`); the filters echo the stored id.
        layers: layer code names or labels (see :func:`parse_layers`); None = all.
        session: only records with a supporting message in this session (or written in it),
            talk links and message counts of this session.
        ts_from / ts_to: ISO-8601 bounds, inclusive (naive = UTC), on record ``ts`` and on
            message times.
        mode: ``"head"`` (current states) or ``"full"`` (every state of every chain).
        max_nodes: nodes at most (GROUP included), 2 .. :data:`MAX_NODES`: above it the people
            with the most messages, records and talk under the filters are shown (the person
            filtered on always), and ``notice`` says how many were left out.
        max_records: record edges at most, 1 .. :data:`MAX_RECORDS` (the most recent).

    Returns:
        A :class:`ConversationGraph`.

    Raises:
        NotFoundError: unknown group, person or session.
        InvalidInputError: unknown layer or mode, unparsable time, ``ts_from`` after
            ``ts_to``, or a cap out of range (field ``max_nodes`` / ``max_records``).
    """
    if mode not in ("head", "full"):
        raise InvalidInputError("mode must be 'head' or 'full'", field="mode")
    check_budget(max_nodes, field="max_nodes", low=2, high=MAX_NODES)
    check_budget(max_records, field="max_records", low=1, high=MAX_RECORDS)
    codes = parse_layers(layers)
    lo, hi = _instant(ts_from, "from"), _instant(ts_to, "to")
    if lo is not None and hi is not None and lo > hi:
        raise InvalidInputError("the time range ends before it starts", field="from")
    data = GroupData(store, group_id, heads_only=mode == "head", layers=codes)
    if person is not None and person != memory.GROUP:  # a person id in any spelling of it (find_member)
        member = find_member(person, data.roster, field="person")
        if member is None:
            raise no_person(person, group_id, data.roster)
        person = member.id
    sessions = data.sessions()
    if session is not None and session not in {s.id for s in sessions}:
        raise NotFoundError(f"no such session in group {group_id!r} (field 'session')")

    def in_time(instant: float | None) -> bool:  # a stored time that cannot be read passes no bound
        if instant is None:
            return lo is None and hi is None
        return (lo is None or instant >= lo) and (hi is None or instant <= hi)

    # records
    edges: list[RecordEdge] = []
    for r in data.records:
        record_sessions = list(dict.fromkeys(data.session_of[m] for m in r.from_ids if m in data.session_of))
        if person is not None and person not in (r.source, r.owner):
            continue
        if session is not None and session != r.session and session not in record_sessions:
            continue
        if not in_time(_when(r.ts)):
            continue
        edges.append(RecordEdge(
            id=r.id, source=r.source, owner=r.owner,
            source_name=r.source_name or data.names.get(r.source, r.source),
            owner_name=r.owner_name or data.names.get(r.owner, r.owner),
            layer=r.layer, label=memory.LAYER_LABELS[r.layer], utype=r.utype, content=r.content,
            state=r.state, ts=r.ts, session=r.session, sessions=record_sessions,
            turn_created=r.turn_created, confidence=r.confidence, from_ids=list(r.from_ids),
            supersedes=r.supersedes, superseded_by=r.superseded_by,
            cross=r.source != r.owner,
        ))

    # who talks to whom: aggregate the filtered links on a directed graph
    import networkx as nx  # the api extra: only the graph page builds this

    talk = nx.DiGraph()
    for row in data.links:
        if session is not None and row["session"] != session:
            continue
        if person is not None and person not in (row["from_id"], row["to_id"]):
            continue
        if not in_time(_message_instant(row)):
            continue
        a, b = row["from_id"], row["to_id"]
        if not talk.has_edge(a, b):
            talk.add_edge(a, b, replies=0, next=0)
        talk[a][b]["replies" if row["kind"] == "reply" else "next"] += 1
    talk_edges = sorted(
        (TalkEdge(source=a, target=b, replies=d["replies"], next=d["next"], total=d["replies"] + d["next"])
         for a, b, d in talk.edges(data=True)),
        key=lambda e: (-e.total, data.names.get(e.source, e.source), data.names.get(e.target, e.target)),
    )

    # nodes: the whole roster and GROUP, with counts under the session/time filters
    sent = Counter(
        m["person_id"] for m in data.messages
        if (session is None or m["session"] == session) and in_time(_message_instant(m))
    )
    owned = Counter(e.owner for e in edges)
    sourced = Counter(e.source for e in edges)
    talked = Counter[str]()
    for e in talk_edges:
        talked[e.source] += e.total
        talked[e.target] += e.total
    people = sorted(data.roster, key=lambda m: (m.name.casefold(), m.id))
    nodes_total, records_total = len(people) + 1, len(edges)
    if len(people) > max_nodes - 1:  # the most active under the filters, and the person asked for
        def activity(m_id: str) -> tuple[int, int]:
            return (int(m_id == person), sent[m_id] + owned[m_id] + sourced[m_id] + talked[m_id])

        keep = {m.id for m in sorted(people, key=lambda m: activity(m.id), reverse=True)[: max_nodes - 1]}
        people = [m for m in people if m.id in keep]
    shown = {memory.GROUP} | {m.id for m in people}
    edges = [e for e in edges if e.source in shown and e.owner in shown]
    if len(edges) > max_records:
        edges = sorted(sorted(edges, key=lambda e: (e.turn_created, e.id))[-max_records:],
                       key=lambda e: (e.turn_created, e.id))
    talk_edges = [e for e in talk_edges if e.source in shown and e.target in shown]
    left_nodes, left_records = nodes_total - len(shown), records_total - len(edges)
    notice = ""
    if left_nodes or left_records:
        parts = [f"{len(shown) - 1} of {nodes_total - 1} people" if left_nodes else "",
                 f"{len(edges)} of {records_total} records" if left_records else ""]
        notice = (f"Showing {' and '.join(p for p in parts if p)} (the most active"
                  f"{' and most recent' if left_records else ''}). Narrow by person, session or time to see the rest.")
    owned = Counter(e.owner for e in edges)
    sourced = Counter(e.source for e in edges)
    layout = _layout([m.id for m in people])
    nodes = [GraphNode(id=memory.GROUP, kind="group", name=data.name, records_owned=owned[memory.GROUP],
                       records_sourced=sourced[memory.GROUP], x=layout[memory.GROUP][0], y=layout[memory.GROUP][1])]
    nodes += [
        GraphNode(id=m.id, kind="person", name=data.names[m.id], messages=sent[m.id], records_owned=owned[m.id],
                  records_sourced=sourced[m.id], x=layout[m.id][0], y=layout[m.id][1])
        for m in people
    ]
    return ConversationGraph(
        group_id=group_id, group_name=data.name,
        filters=GraphFilters(person=person, layers=codes, session=session, ts_from=ts_from or None,
                             ts_to=ts_to or None, mode=mode),
        nodes=nodes, records=edges, talk=talk_edges, sessions=sessions,
        truncated=bool(left_nodes or left_records), nodes_total=nodes_total, records_total=records_total,
        notice=notice,
    )


def _layout(person_ids: Sequence[str]) -> dict[str, tuple[float, float]]:
    """GROUP at the centre, people on a ring in the given order (networkx shell layout)."""
    import networkx as nx

    g = nx.Graph()
    g.add_node(memory.GROUP)
    g.add_nodes_from(person_ids)
    shells = [[memory.GROUP], list(person_ids)] if person_ids else [[memory.GROUP]]
    pos = nx.shell_layout(g, nlist=shells, scale=1.0)
    radius = max((float((p[0] ** 2 + p[1] ** 2) ** 0.5) for p in pos.values()), default=0.0) or 1.0
    return {n: (round(float(p[0]) / radius, 4), round(float(p[1]) / radius, 4)) for n, p in pos.items()}
