"""``graphmem stats``: node and relationship counts."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from graphmem.cli.common import emit_json, open_store, out


def stats(
    group: Annotated[Optional[str], typer.Option("--group", "-g", help="Only this group.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Node and relationship counts (whole store or one group).

    The labels of the groups' own vector indexes (``GroupScope_<key>``, one per large group)
    are counted together as ``GroupScope_*``. An unknown ``--group`` is an error (exit 1).
    """
    from graphmem.groups.service import get_group
    from graphmem.store.scope import SCOPE_LABEL_PREFIX

    with open_store() as store:
        if group is not None:
            get_group(store, group)  # NotFoundError "no group ...", as every other command says
        nodes: dict[str, int] = {}
        for r in store.read("stats/count_nodes", group_id=group):
            # one label per group with its own vector index (graphmem.store.scope): counted as one row
            label = f"{SCOPE_LABEL_PREFIX}*" if r["label"].startswith(SCOPE_LABEL_PREFIX) else r["label"]
            nodes[label] = nodes.get(label, 0) + int(r["count"])
        rels = {r["type"]: r["count"] for r in store.read("stats/count_relationships", group_id=group)}
        groups = store.read("stats/list_groups") if group is None else []
    if as_json:
        emit_json({"group": group, "nodes": nodes, "relationships": rels, "groups": groups})
        return
    table = Table(title=f"graphmem stats{' for ' + group if group else ''}")
    table.add_column("kind")
    table.add_column("name")
    table.add_column("count", justify="right")
    for k_, v in nodes.items():
        table.add_row("node", k_, str(v))
    for k_, v in rels.items():
        table.add_row("relationship", k_, str(v))
    out.print(table)
    if groups:
        out.print(f"{len(groups)} group(s): " + ", ".join(f"{g['id']} ({g['messages']} msgs)" for g in groups))
