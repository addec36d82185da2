"""``graphmem schema apply``: constraints and indexes."""

from __future__ import annotations

from typing import Annotated

import typer

from graphmem.cli.common import emit_json, open_store, out
from graphmem.core.config import get_settings

app = typer.Typer(help="Constraints and indexes.", no_args_is_help=True)


@app.command("apply")
def apply(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Create constraints, fulltext and vector indexes (idempotent); wait until ONLINE."""
    from graphmem.cli.common import command_embedder
    from graphmem.store.schema import apply_schema
    from graphmem.verbatim.order import backfill_order

    dims = command_embedder().dimension
    with open_store() as store:
        report = apply_schema(store, dims, migrate=backfill_order,
                     global_vector_index=get_settings().vector_global_index)
    if as_json:
        emit_json({"constraints": report.constraints, "indexes": report.indexes, "dimensions": dims})
    else:
        out.print(
            f"schema applied: {len(report.constraints)} constraints, "
            f"{len(report.indexes)} indexes ONLINE, vector dimension {dims}"
        )
