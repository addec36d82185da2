"""``graphmem export``: write a group as JSON Lines (docs/export.md), what ``GET
/groups/{g}/export`` serves page by page."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from graphmem.cli.common import open_store, out


def export(
    group: Annotated[str, typer.Option("--group", "-g", help="Group id.")],
    out_path: Annotated[Optional[Path], typer.Option("--out", "-o", help="File to write (default: stdout).")] = None,
    with_derived: Annotated[bool, typer.Option(
        "--with-derived", help="Also Writer segments and derived records (OWNER, SOURCE, FROM, SUPERSEDED_BY).",
    )] = False,
) -> None:
    """Export a group (messages with their edits, persons, sessions; with --with-derived its
    derived memory) as JSON Lines; `graphmem ingest FILE --format graphmem-export` loads it
    back into a new group. Exit status 1 for an unknown group."""
    from graphmem.groups.export import export_lines

    with open_store() as store:
        lines = export_lines(store, group, with_derived=with_derived)
        n = 0
        if out_path is None:
            for line in lines:
                sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
                n += 1
            return
        tmp = out_path.with_name(out_path.name + ".part")
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
                n += 1
        tmp.replace(out_path)
    out.print(f"{group}: {n} lines written to {out_path}")
