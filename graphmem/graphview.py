"""Who said what about whom: the conversation graph, the interaction summary and the timeline.

The library side of the graph page (``GET /groups/{id}/graph`` and ``/view``), the interaction
summary (``GET /groups/{id}/summary``, ``graphmem summary``) and the timeline plot
(``GET /groups/{id}/timeline.png``, ``graphmem summary --plot``). No web framework here.

What is read: the group and its roster, the group's messages (``derive/list_messages``), every
person-to-person REPLY_TO / NEXT link (``browser/talk_links``, the Browser guide's query) and
the derived records through :mod:`graphmem.memory`. Filtering, aggregation (networkx) and the
layout (networkx shell layout: the GROUP node in the centre, people on a ring) happen here.

Directions: a derived record is an edge from its SOURCE (who said or showed it) to its OWNER
(whom it is about; GROUP for the group layers). A talk edge goes from the person who replied
or spoke right after to the person they answered or followed.
"""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, Field

from graphmem import memory
from graphmem.db import Store
from graphmem.errors import InvalidInputError, NotFoundError
from graphmem.groups import get_group
from graphmem.roster import read_roster
from graphmem.times import date_of, minute, to_instant

__all__ = [
    "LAYER_COLOURS",
    "ConversationGraph",
    "DecisionEvent",
    "GraphFilters",
    "GraphNode",
    "GroupSummary",
    "PersonSummary",
    "RecordEdge",
    "SessionInfo",
    "TalkEdge",
    "Timeline",
    "TimelineMark",
    "build_graph",
    "build_timeline",
    "parse_layers",
    "render_timeline_png",
    "TIMELINE_LIST_MAX",
    "summarize",
]

Mode = Literal["head", "full"]

#: Layer code name -> colour (the page, the timeline and docs/graphmem.grass use the same).
LAYER_COLOURS: dict[str, str] = {
    "per_speaker_core": "#4E79A7",
    "per_speaker_profile": "#B07AA1",
    "group_interaction": "#F28E2B",
    "group_insight": "#59A14F",
}
PERSON_COLOUR = "#76B7B2"
GROUP_COLOUR = "#3B3B3B"


# --------------------------------------------------------------------------------------------
# result types
# --------------------------------------------------------------------------------------------


class GraphNode(BaseModel):
    """A person of the roster, or the group itself.

    Attributes:
        id: ``Person.id`` (speaker_id, else display name), or :data:`graphmem.memory.GROUP`.
        kind: ``"person"`` or ``"group"``.
        name: display name (the group's name for GROUP).
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


class SessionInfo(BaseModel):
    """One session of the group (from its messages).

    Attributes: id, channel, messages (count), ts_first / ts_last (ISO-8601), first_position /
    last_position (0-based positions of its first/last message in the group's conversation
    order).
    """

    id: str
    channel: str = ""
    messages: int = 0
    ts_first: str = ""
    ts_last: str = ""
    first_position: int = 0
    last_position: int = 0


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


class ConversationGraph(BaseModel):
    """One group's people, the group node, its derived records and who talks to whom.

    Attributes:
        group_id / group_name: the group.
        filters: what was asked.
        nodes: every person of the roster and the GROUP node (always all of them, so the
            picture keeps its shape while filtering).
        records: record edges after the filters, by ``turn_created`` then id.
        talk: talk edges after the filters, by total descending.
        sessions: every session of the group (for a session picker), conversation order.
        layer_colours: layer code name -> colour; layer_labels: code name -> graph label.
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


class PersonSummary(BaseModel):
    """One person's part in the conversation and in the derived memory.

    Attributes:
        id / name: the person.
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


class TimelineMark(BaseModel):
    """One point of the timeline: a message, or a stance change (record id and content)."""

    person: str
    position: int
    record: str = ""
    content: str = ""


class Timeline(BaseModel):
    """What the timeline plot draws.

    Attributes:
        group_id / name: the group.
        people: ``[(Person.id, name)]`` by name, one row each.
        sessions: sessions with their first/last positions.
        messages: one mark per message (person, position).
        stance_changes: one mark per UPDATE of a stance record (at its newest supporting
            message, on the owner's row).
        decisions: decision records (every state), on the GROUP row.
    """

    group_id: str
    name: str
    people: list[tuple[str, str]]
    sessions: list[SessionInfo]
    messages: list[TimelineMark]
    stance_changes: list[TimelineMark]
    decisions: list[DecisionEvent]


# --------------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------------


def parse_layers(values: Iterable[str] | None) -> list[str] | None:
    """Layer filter values -> layer code names.

    Accepts code names (``per_speaker_core``), graph labels (``Core``, any case) and
    comma-separated lists of them; duplicates are dropped, the paper's order is kept.

    Returns:
        Code names, or None when nothing was given.

    Raises:
        InvalidInputError: an unknown layer (field ``layer``).
    """
    if values is None:
        return None
    by_name = {code.casefold(): code for code in memory.LAYERS}
    by_name.update({label.casefold(): code for code, label in memory.LAYER_LABELS.items()})
    wanted: set[str] = set()
    for value in values:
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                continue
            code = by_name.get(part.casefold())
            if code is None:
                raise InvalidInputError(
                    f"unknown layer {part!r}; one of {', '.join(memory.LAYERS)} "
                    f"(or {', '.join(memory.LAYER_LABELS.values())})",
                    field="layer",
                )
            wanted.add(code)
    return [code for code in memory.LAYERS if code in wanted] or None


def _instant(value: str | None, field: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        return to_instant(value)
    except InvalidInputError as e:
        raise InvalidInputError(f"unparsable time {value!r} (ISO-8601 expected)", field=field) from e


# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


class _GroupData:
    """Everything the views read about one group, read once."""

    def __init__(self, store: Store, group_id: str, *, heads_only: bool, layers: Sequence[str] | None) -> None:
        group = get_group(store, group_id)  # NotFoundError for an unknown group
        self.group_id = group_id
        self.name = group.name
        self.roster = read_roster(store, group_id)
        self.names = {m.id: m.name for m in self.roster}
        self.names[memory.GROUP] = group.name
        self.messages = store.read("writer/list_messages", group_id=group_id, pending_only=False)
        self.position = {m["id"]: i for i, m in enumerate(self.messages)}
        self.session_of = {m["id"]: m["session"] for m in self.messages}
        self.links = store.read("browser/talk_links", group_id=group_id)
        self.records = memory.list_records(store, group_id, layers=layers, heads_only=heads_only)

    def sessions(self) -> list[SessionInfo]:
        out: dict[str, SessionInfo] = {}
        for i, m in enumerate(self.messages):
            s = out.get(m["session"])
            if s is None:
                out[m["session"]] = SessionInfo(
                    id=m["session"], channel=m.get("channel") or "", messages=1,
                    ts_first=m["ts"], ts_last=m["ts"], first_position=i, last_position=i,
                )
            else:
                s.messages += 1
                s.ts_last, s.last_position = m["ts"], i
        return list(out.values())

    def record_position(self, r: memory.DerivedRecord) -> int:
        known = [self.position[m] for m in r.from_ids if m in self.position]
        return max(known) if known else 0


def _when(ts: str | None) -> float | None:
    """Epoch seconds of a stored time, or None when it is missing or unreadable."""
    try:
        return to_instant(ts) if ts else None
    except InvalidInputError:
        return None


def _message_instant(row: dict[str, Any]) -> float | None:
    value = row.get("instant")
    return float(value) if value is not None else _when(row.get("ts"))


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
) -> ConversationGraph:
    """Build the conversation graph of one group, filtered.

    Args:
        store: open store.
        group_id: the group.
        person: only records whose source or owner is this ``Person.id`` (or ``"GROUP"``),
            and talk edges touching them; node counts stay unfiltered by person.
        layers: layer code names or labels (see :func:`parse_layers`); None = all.
        session: only records with a supporting message in this session (or written in it),
            talk links and message counts of this session.
        ts_from / ts_to: ISO-8601 bounds, inclusive (naive = UTC), on record ``ts`` and on
            message times.
        mode: ``"head"`` (current states) or ``"full"`` (every state of every chain).

    Returns:
        A :class:`ConversationGraph`.

    Raises:
        NotFoundError: unknown group, person or session.
        InvalidInputError: unknown layer or mode, unparsable time, or ``ts_from`` after
            ``ts_to``.
    """
    if mode not in ("head", "full"):
        raise InvalidInputError("mode must be 'head' or 'full'", field="mode")
    codes = parse_layers(layers)
    lo, hi = _instant(ts_from, "from"), _instant(ts_to, "to")
    if lo is not None and hi is not None and lo > hi:
        raise InvalidInputError("the time range ends before it starts", field="from")
    data = _GroupData(store, group_id, heads_only=mode == "head", layers=codes)
    if person is not None and person != memory.GROUP and person not in data.names:
        raise NotFoundError(f"no person {person!r} in group {group_id!r}")
    sessions = data.sessions()
    if session is not None and session not in {s.id for s in sessions}:
        raise NotFoundError(f"no session {session!r} in group {group_id!r}")

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
    people = sorted(data.roster, key=lambda m: (m.name.casefold(), m.id))
    layout = _layout([m.id for m in people])
    nodes = [GraphNode(id=memory.GROUP, kind="group", name=data.name, records_owned=owned[memory.GROUP],
                       records_sourced=sourced[memory.GROUP], x=layout[memory.GROUP][0], y=layout[memory.GROUP][1])]
    nodes += [
        GraphNode(id=m.id, kind="person", name=m.name, messages=sent[m.id], records_owned=owned[m.id],
                  records_sourced=sourced[m.id], x=layout[m.id][0], y=layout[m.id][1])
        for m in people
    ]
    return ConversationGraph(
        group_id=group_id, group_name=data.name,
        filters=GraphFilters(person=person, layers=codes, session=session, ts_from=ts_from or None,
                             ts_to=ts_to or None, mode=mode),
        nodes=nodes, records=edges, talk=talk_edges, sessions=sessions,
    )


def _layout(person_ids: Sequence[str]) -> dict[str, tuple[float, float]]:
    """GROUP at the centre, people on a ring in the given order (networkx shell layout)."""
    g = nx.Graph()
    g.add_node(memory.GROUP)
    g.add_nodes_from(person_ids)
    shells = [[memory.GROUP], list(person_ids)] if person_ids else [[memory.GROUP]]
    pos = nx.shell_layout(g, nlist=shells, scale=1.0)
    radius = max((float((p[0] ** 2 + p[1] ** 2) ** 0.5) for p in pos.values()), default=0.0) or 1.0
    return {n: (round(float(p[0]) / radius, 4), round(float(p[1]) / radius, 4)) for n, p in pos.items()}


# --------------------------------------------------------------------------------------------
# summary and timeline
# --------------------------------------------------------------------------------------------


def _decisions(data: _GroupData) -> list[DecisionEvent]:
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
    data = _GroupData(store, group_id, heads_only=False, layers=None)
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
            id=m.id, name=m.name, messages=sent[m.id], replies_sent=replies_sent[m.id],
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
    )


def build_timeline(store: Store, group_id: str) -> Timeline:
    """The data of the timeline plot (see :func:`render_timeline_png`).

    Raises:
        NotFoundError: unknown group.
    """
    data = _GroupData(store, group_id, heads_only=False, layers=None)
    people = [(m.id, m.name) for m in sorted(data.roster, key=lambda m: (m.name.casefold(), m.id))]
    return Timeline(
        group_id=group_id, name=data.name, people=people, sessions=data.sessions(),
        messages=[TimelineMark(person=m["person_id"], position=i) for i, m in enumerate(data.messages)],
        stance_changes=[
            TimelineMark(person=r.owner, position=data.record_position(r), record=r.id, content=r.content)
            for r in data.records if _is_stance_change(r)
        ],
        decisions=_decisions(data),
    )


def _plain(text: str, limit: int) -> str:
    """Text matplotlib's default font can draw: no characters beyond the BMP (emoji), cut."""
    text = "".join(c for c in text if ord(c) <= 0xFFFF).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


#: Decisions listed under the timeline plot; more are counted, not listed.
TIMELINE_LIST_MAX = 10


def render_timeline_png(timeline: Timeline, *, width_in: float = 10.0, dpi: int = 100) -> bytes:
    """Draw the timeline as a PNG: one row per person plus a GROUP row, x = conversation order.

    Grey dots are messages, blue stars stance changes (UPDATEs of stance records, on the
    owner's row), orange diamonds decisions (filled: current; hollow: replaced later, with a
    dashed arrow to the decision that replaced it), numbered and listed with their time, author
    and text under the plot (at most :data:`TIMELINE_LIST_MAX`). Dotted lines separate
    sessions, labelled with the session id and date where there is room.

    Args:
        timeline: from :func:`build_timeline`.
        width_in: figure width in inches; the height follows the rows and the decision list.
        dpi: dots per inch.

    Returns:
        PNG bytes.
    """
    from matplotlib.figure import Figure  # no pyplot: no global state, safe in server threads

    rows = [memory.GROUP] + [pid for pid, _ in timeline.people]
    labels = [timeline.name or "GROUP"] + [name for _, name in timeline.people]
    y = {pid: len(rows) - 1 - i for i, pid in enumerate(rows)}  # GROUP on top
    n = max(1, len(timeline.messages))
    listed = timeline.decisions[:TIMELINE_LIST_MAX]
    list_lines = len(listed) + (1 if len(timeline.decisions) > len(listed) else 0)
    plot_h, list_h = 1.4 + 0.5 * len(rows), 0.45 + 0.2 * list_lines
    gap_in = 0.55  # room for the x label between the plot and the list
    fig = Figure(figsize=(width_in, plot_h + list_h + gap_in), dpi=dpi)
    grid = fig.add_gridspec(2, 1, height_ratios=[plot_h, list_h], hspace=gap_in / ((plot_h + list_h) / 2))
    ax = fig.add_subplot(grid[0])
    below = fig.add_subplot(grid[1])
    below.axis("off")

    known = [m for m in timeline.messages if m.person in y]
    ax.scatter([m.position for m in known], [y[m.person] for m in known], s=22, color="#9C9C9C",
               label="message", zorder=2)
    stance = [m for m in timeline.stance_changes if m.person in y]
    if stance:
        ax.scatter([m.position for m in stance], [y[m.person] + 0.18 for m in stance], s=140, marker="*",
                   color=LAYER_COLOURS["per_speaker_core"], label="stance change", zorder=3)
    colour = LAYER_COLOURS["group_interaction"]
    where = {d.id: d.position for d in timeline.decisions}
    for number, d in enumerate(timeline.decisions, start=1):
        head = d.state == memory.HEAD
        ax.scatter([d.position], [y[memory.GROUP]], s=80, marker="D", zorder=4,
                   facecolors=colour if head else "white", edgecolors=colour, linewidths=1.5,
                   label=("decision" if head else "decision, replaced later"))
        if d.superseded_by in where:  # the chain: old state -> the state that replaced it
            ax.annotate("", (where[d.superseded_by], y[memory.GROUP]), xytext=(d.position, y[memory.GROUP]),
                        arrowprops={"arrowstyle": "->", "color": colour, "linestyle": "--", "shrinkA": 6,
                                    "shrinkB": 6}, zorder=3)
        ax.annotate(str(number), (d.position, y[memory.GROUP]), xytext=(0, 9), textcoords="offset points",
                    ha="center", fontsize=8, fontweight="bold", color="#333333")
    # session separators; a label only where it does not run into the previous one
    data_per_inch = (n + 1) / (width_in * 0.8)
    free_from = -math.inf
    for s in timeline.sessions:
        ax.axvline(s.first_position - 0.5, color="#BBBBBB", linestyle=":", zorder=1)
        text = f"{_plain(s.id, 14)} {date_of(s.ts_first)}".strip()
        start = s.first_position - 0.4
        if start >= free_from:
            ax.annotate(text, (start, len(rows) - 0.45), fontsize=7, color="#666666", va="bottom")
            free_from = start + (len(text) * 0.075 + 0.15) * data_per_inch
    ax.set_yticks(range(len(rows)), [_plain(label, 24) for label in reversed(labels)])
    ax.set_ylim(-0.6, len(rows) - 0.1)
    ax.set_xlim(-1, n)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("messages in conversation order")
    ax.set_title(f"{_plain(timeline.name, 48)}: messages, stance changes and decisions", fontsize=11)
    ax.grid(axis="y", color="#EEEEEE")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    handles, names = ax.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    if unique:
        below.legend(unique.values(), unique.keys(), loc="upper center", ncol=len(unique), fontsize=8,
                     frameon=False, bbox_to_anchor=(0.5, 1.0))
    step = 0.2 / list_h if list_h else 0
    for i, d in enumerate(listed):
        by = d.source_name or d.source
        line = f"{i + 1}.  {minute(d.ts)}  {_plain(by, 20)}: {_plain(d.content, 110)}"
        if d.state != memory.HEAD:
            line += "  (replaced)"
        below.text(0.0, 1 - (0.4 / list_h) - i * step, line, transform=below.transAxes, fontsize=8, va="top",
                   color="#333333" if d.state == memory.HEAD else "#888888")
    if len(timeline.decisions) > len(listed):
        below.text(0.0, 1 - (0.4 / list_h) - len(listed) * step,
                   f"... and {len(timeline.decisions) - len(listed)} more decisions (see the summary)",
                   transform=below.transAxes, fontsize=8, va="top", color="#888888")
    fig.subplots_adjust(left=0.16, right=0.98, top=0.93, bottom=0.02)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()
