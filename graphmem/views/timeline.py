"""The timeline of a group and its PNG plot (``GET /groups/{id}/timeline.png``,
``graphmem summary --plot``): messages, derived records, stance changes and decisions in
conversation order. On a large group (more than :data:`DOTS_MAX` messages) the messages are
binned: each person's row shows how many messages they sent per bin, not one dot each.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, cast

from pydantic import BaseModel

from graphmem.core.errors import ExtraMissingError
from graphmem.derived import memory
from graphmem.store.db import Store
from graphmem.core.times import date_of, minute
from graphmem.views.common import LAYER_COLOURS, GroupData, SessionInfo
from graphmem.views.summary import DecisionEvent, _decisions, _is_stance_change

if TYPE_CHECKING:
    from matplotlib.ticker import MaxNLocator


class TimelineMark(BaseModel):
    """One point of the timeline: a message, a derived record or a stance change.

    Attributes:
        person: the row: Person id, or ``GROUP`` for group-layer records.
        position: 0-based conversation position (a record's: its newest supporting message).
        record / content / layer / state: the record's id, text, layer and state ("" for a message).
    """

    person: str
    position: int
    record: str = ""
    content: str = ""
    layer: str = ""
    state: str = ""


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
        records: every derived record (every state) other than the decisions, on its owner's
            row (a person, or GROUP for the group layers), with its layer.
    """

    group_id: str
    name: str
    people: list[tuple[str, str]]
    sessions: list[SessionInfo]
    messages: list[TimelineMark]
    stance_changes: list[TimelineMark]
    decisions: list[DecisionEvent]
    records: list[TimelineMark] = []


def build_timeline(store: Store, group_id: str) -> Timeline:
    """The data of the timeline plot (see :func:`render_timeline_png`).

    Raises:
        NotFoundError: unknown group.
    """
    data = GroupData(store, group_id, heads_only=False, layers=None)
    people = [(m.id, data.names[m.id]) for m in sorted(data.roster, key=lambda m: (m.name.casefold(), m.id))]
    return Timeline(
        group_id=group_id, name=data.name, people=people, sessions=data.sessions(),
        messages=[TimelineMark(person=m["person_id"], position=i) for i, m in enumerate(data.messages)],
        stance_changes=[
            TimelineMark(person=r.owner, position=data.record_position(r), record=r.id, content=r.content)
            for r in data.records if _is_stance_change(r)
        ],
        decisions=_decisions(data),
        records=[
            TimelineMark(person=r.owner if r.owner_kind == "person" else memory.GROUP,
                         position=data.record_position(r), record=r.id, content=r.content, layer=r.layer,
                         state=r.state)
            for r in data.records if r.utype != "decision"
        ],
    )


def _n(count: int, noun: str) -> str:
    """``1 record``, ``2 records``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _plain(text: str, limit: int) -> str:
    """Text matplotlib draws as written: no characters beyond the BMP (emoji: the default font
    has none), cut to ``limit`` characters, and every ``$`` escaped, so a name such as
    ``$\\foo$`` is not read as mathtext (which fails the whole plot on an unknown command)."""
    text = "".join(c for c in text if ord(c) <= 0xFFFF).strip()
    text = text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    return text.replace("$", "\\$")


#: Decisions listed under the timeline plot; more are counted, not listed.
TIMELINE_LIST_MAX = 10
#: Up to this many messages each is a dot; above it, messages are counted per bin.
DOTS_MAX = 150
#: Bins across the x axis when messages are binned.
BINS = 60


def require_plots() -> None:
    """Check that the timeline can be drawn (matplotlib, the ``plots`` extra) before any work.

    Raises:
        ExtraMissingError: matplotlib is not installed (``pip install 'graphmem[plots]'``).
    """
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise ExtraMissingError("the timeline plot needs matplotlib, in the plots extra: "
                                "pip install 'graphmem[plots]'", extra="plots")


def render_timeline_png(timeline: Timeline, *, width_in: float = 10.0, dpi: int = 100) -> bytes:
    """Draw the timeline as a PNG: one row per person plus a GROUP row, x = conversation order.

    Grey dots are messages (above :data:`DOTS_MAX` messages: grey bars, each bin's height the
    person's share of the busiest bin, so a 400-message conversation does not merge into a
    line), small circles derived records in their layer's colour on the owner's row (filled:
    current; hollow: replaced), blue stars stance changes (UPDATEs of stance records, on the
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

    Raises:
        ExtraMissingError: matplotlib is not installed (:func:`require_plots`).
    """
    require_plots()
    from matplotlib.figure import (
        Figure,  # no pyplot: no global state, safe in server threads
    )

    rows = [memory.GROUP] + [pid for pid, _ in timeline.people]
    labels = [timeline.name or "GROUP"] + [name for _, name in timeline.people]
    y = {pid: len(rows) - 1 - i for i, pid in enumerate(rows)}  # GROUP on top
    n = max(1, len(timeline.messages))
    listed = timeline.decisions[:TIMELINE_LIST_MAX]
    list_lines = len(listed) + (1 if len(timeline.decisions) > len(listed) else 0)
    plot_h, list_h = 1.4 + 0.5 * len(rows), 0.65 + 0.2 * list_lines  # legend (up to 2 lines) + list
    gap_in = 0.55  # room for the x label between the plot and the list
    fig = Figure(figsize=(width_in, plot_h + list_h + gap_in), dpi=dpi)
    grid = fig.add_gridspec(2, 1, height_ratios=[plot_h, list_h], hspace=gap_in / ((plot_h + list_h) / 2))
    ax = fig.add_subplot(grid[0])
    below = fig.add_subplot(grid[1])
    below.axis("off")

    known = [m for m in timeline.messages if m.person in y]
    if len(known) <= DOTS_MAX:
        ax.scatter([m.position for m in known], [y[m.person] for m in known], s=22, color="#9C9C9C",
                   label="message", zorder=2)
    else:
        width = max(1, math.ceil(n / BINS))
        counts: dict[tuple[str, int], int] = {}
        for m in known:
            key = (m.person, m.position // width)
            counts[key] = counts.get(key, 0) + 1
        top = max(counts.values())
        for (person, b), c in counts.items():
            ax.bar(b * width - 0.5, 0.55 * c / top, width=width * 0.9, bottom=y[person] - 0.3, align="edge",
                   color="#9C9C9C", zorder=2, label=f"messages per {width}-message bin (tallest = {top})")
    per_row: dict[str, int] = {}
    for r in timeline.records:
        if r.person in y:
            per_row[r.person] = per_row.get(r.person, 0) + 1
    for layer, colour in LAYER_COLOURS.items():
        marks = [r for r in timeline.records if r.layer == layer and r.person in y]
        for current in (True, False):
            shown = [r for r in marks if (r.state == memory.HEAD) == current]
            if shown:
                ax.scatter([r.position for r in shown], [y[r.person] + 0.3 for r in shown], s=26, marker="o",
                           facecolors=colour if current else "white", edgecolors=colour, linewidths=1.1,
                           zorder=3, label=memory.LAYER_LABELS[layer] + ("" if current else ", replaced"))
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
    sent: dict[str, int] = {}
    for m in known:
        sent[m.person] = sent.get(m.person, 0) + 1
    counted = [f"{_plain(label, 24)}\n{_n(per_row.get(pid, 0), 'record')}, {_n(len(timeline.decisions), 'decision')}"
               if pid == memory.GROUP else
               f"{_plain(label, 24)}\n{_n(sent.get(pid, 0), 'msg')}, {_n(per_row.get(pid, 0), 'record')}"
               for pid, label in zip(rows, labels)]
    ax.set_yticks(range(len(rows)), list(reversed(counted)), fontsize=8)
    ax.set_ylim(-0.6, len(rows) - 0.1)
    ax.set_xlim(-1, n)
    # a linear axis starts with an AutoLocator, a MaxNLocator (which takes ``integer``)
    cast("MaxNLocator", ax.xaxis.get_major_locator()).set_params(integer=True)
    ax.set_xlabel("messages in conversation order")
    ax.set_title(f"{_plain(timeline.name, 48)}: messages, derived records, stance changes and decisions",
                 fontsize=11)
    ax.grid(axis="y", color="#EEEEEE")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    handles, names = ax.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    if unique:
        below.legend(unique.values(), unique.keys(), loc="upper center", ncol=min(len(unique), 5), fontsize=8,
                     frameon=False, bbox_to_anchor=(0.5, 1.0))
    step = 0.2 / list_h if list_h else 0
    first = (0.4 if len(unique) <= 5 else 0.6) / list_h  # below the legend's one or two lines
    for i, d in enumerate(listed):
        by = d.source_name or d.source
        line = f"{i + 1}.  {minute(d.ts)}  {_plain(by, 20)}: {_plain(d.content, 110)}"
        if d.state != memory.HEAD:
            line += "  (replaced)"
        below.text(0.0, 1 - first - i * step, line, transform=below.transAxes, fontsize=8, va="top",
                   color="#333333" if d.state == memory.HEAD else "#888888")
    if len(timeline.decisions) > len(listed):
        below.text(0.0, 1 - first - len(listed) * step,
                   f"... and {len(timeline.decisions) - len(listed)} more decisions (see the summary)",
                   transform=below.transAxes, fontsize=8, va="top", color="#888888")
    fig.subplots_adjust(left=0.16, right=0.98, top=0.93, bottom=0.02)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()
