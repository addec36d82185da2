"""``graphmem summary``: who talks, who is talked about, stance changes and decisions of a group.

The graph itself is drawn by the API
page ``/groups/{id}/view`` (see docs/view.md).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from graphmem.cli.common import cells, emit_json, open_store, out
from graphmem.core.times import minute


def summary_cmd(
    group: Annotated[str, typer.Option("--group", "-g", help="Group id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    plot: Annotated[
        Optional[Path], typer.Option("--plot", help="Also write the timeline plot to this PNG file.")
    ] = None,
) -> None:
    """Per person activity and the group's decisions over time.

    Per person: messages, replies, records owned/sourced, stance changes; the group's
    decisions over time. --plot PATH writes the timeline as a PNG."""
    from graphmem.store.db import quiet_notifications
    from graphmem.views import build_timeline, render_timeline_png, require_plots, summarize

    if plot is not None:
        require_plots()  # before any work: a missing extra is said in one line
    quiet_notifications()
    with open_store() as store:
        summary = summarize(store, group)
        png = render_timeline_png(build_timeline(store, group)) if plot is not None else None
    if png is not None and plot is not None:
        plot.parent.mkdir(parents=True, exist_ok=True)
        plot.write_bytes(png)
    if as_json:
        data = summary.model_dump()
        if plot is not None:
            data["plot"] = str(plot)
        emit_json(data)
        return
    out.print(
        f"[bold]{escape(summary.name)}[/bold] ({escape(summary.group_id)}): {summary.persons} people, "
        f"{summary.messages} messages in {len(summary.sessions)} sessions, {summary.heads} current "
        f"records ({summary.records} with earlier states)", markup=True,
    )
    people = Table(title="People", title_justify="left")
    people.add_column("person", no_wrap=True)
    for col in ("msgs", "replies\nsent", "replies\nreceived", "records\nabout them",
                "records\nfrom them", "about\nothers", "stance\nchanges"):
        people.add_column(col, justify="right")
    for p in summary.people:
        # p.name is the roster label, already "Name (id)" for a name two members share
        name = p.name if p.id.casefold() == p.name.casefold() or p.name.endswith(f" ({p.id})") \
            else f"{p.name} ({p.id})"
        people.add_row(*cells(
            name, p.messages, p.replies_sent, p.replies_received, p.records_owned,
            p.records_sourced, p.said_about_others, p.stance_changes,
        ))
    out.print(people)
    if summary.records:
        layers = ", ".join(f"{name} {n}" for name, n in summary.layers.items())
        kinds = ", ".join(f"{u} {n}" for u, n in summary.utypes.items())
        out.print(f"Derived memory: {summary.heads} current records by layer: {layers}; by type: {kinds}")
    decisions = Table(title="Decisions over time", title_justify="left")
    decisions.add_column("time", no_wrap=True)
    decisions.add_column("session", no_wrap=True)
    decisions.add_column("by", no_wrap=True)
    decisions.add_column("decision", ratio=1)
    decisions.add_column("record", no_wrap=True)
    for d in summary.decisions:
        current = d.state == "head"
        decisions.add_row(
            *cells(minute(d.ts), d.session or "-", d.source_name or d.source),
            *cells(d.content if current else f"{d.content} (replaced)", style="" if current else "dim"),
            *cells(d.id + (f" ← {d.supersedes}" if d.supersedes else "")),
        )
    if summary.decisions:
        out.print(decisions)
    elif summary.records:  # derived memory exists, none of it a decision
        out.print(f"No records of type decision among the {summary.records} derived records.")
    else:
        out.print("No derived records yet (run `graphmem derive --group " + shlex.quote(summary.group_id) + "`).")
    if plot is not None:
        out.print(f"timeline written to {plot}")
