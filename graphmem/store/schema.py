"""Constraints and indexes of the graph model (DESIGN.md), applied only by an explicit command.

``apply_schema`` runs every template of ``cypher/schema/`` in name order (each is
``IF NOT EXISTS``, so a second run changes nothing) and then waits until every index is ONLINE.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import neo4j

from graphmem.store.db import Store, all_templates, cypher
from graphmem.core.errors import ConflictError, StoreUnavailableError
from graphmem.store.indexes import wait_online
from graphmem.store.scope import group_key
from graphmem.core.text import GRAM_JAVA_PATTERN, gram_field

VECTOR_INDEXES = ("message_embedding", "derived_embedding")
FULLTEXT_INDEXES = ("message_text", "derived_content")


@dataclass(frozen=True)
class SchemaReport:
    """Outcome of :func:`apply_schema`: index and constraint names with their states."""

    constraints: list[str]
    indexes: dict[str, str]
    dimensions: int


def schema_templates() -> list[str]:
    return [n for n in all_templates() if n.startswith("schema/")]


GLOBAL_VECTOR_TEMPLATE = "schema/10_vector_message_embedding"


def apply_schema(
    store: Store, dimensions: int, timeout_s: float = 300.0, *, global_vector_index: bool = True,
    migrate: Callable[[Store], object] | None = None,
) -> SchemaReport:
    """Create constraints, fulltext and vector indexes; wait until all are ONLINE.

    Every missing constraint and index is created in one transaction, so Neo4j fills all the
    indexes of a label in one pass over the store (measured on a 100k-message first load: 7.3
    instead of 9.9 Neo4j CPU-seconds, docs/scale.md).

    Args:
        store: an open store.
        dimensions: vector dimension of the configured embedder (384 for all-MiniLM-L6-v2).
        timeout_s: how long to wait for indexes to come ONLINE, in seconds.
        global_vector_index: keep the store-wide ``message_embedding`` index (the shells pass
            ``GRAPHMEM_VECTOR_GLOBAL_INDEX``). False drops it when present and does not create
            it; search then scores a group exactly while the group's own index is populating.
        migrate: a data migration to run once the indexes are ONLINE (the faces pass
            :func:`graphmem.verbatim.order.backfill_order`, which gives messages of stores
            written before the order key their place; it lives above the store layer).

    Raises:
        ConflictError: an existing vector index has another dimension than the embedder.
        StoreUnavailableError: an index FAILED or stayed POPULATING past ``timeout_s``.
    """
    _check_vector_dimensions(store, dimensions)
    _migrate_fulltext(store)
    store.write("meta/backfill_search_text")
    store.write("meta/seed_vector_revs")
    names = [n for n in schema_templates() if global_vector_index or n != GLOBAL_VECTOR_TEMPLATE]
    if not global_vector_index and any(r["name"] == "message_embedding" for r in store.read("meta/list_indexes")):
        store.write("meta/drop_index", name="message_embedding")
    texts = [cypher(n) for n in names]

    def create_all(tx: neo4j.ManagedTransaction) -> None:
        for text in texts:  # each is IF NOT EXISTS
            tx.run(text, dimensions=dimensions).consume()

    store.write_tx(create_all)
    _backfill_group_key(store)  # after the templates: they create the label and property names
    _backfill_search_grams(store)
    _normalise_documents(store)
    indexes = wait_online(store, timeout_s)
    if migrate is not None:
        migrate(store)  # after the indexes: it reads messages by group and instant
    constraints = [r["name"] for r in store.read("meta/list_constraints")]
    return SchemaReport(constraints=constraints, indexes=indexes, dimensions=dimensions)


def _check_vector_dimensions(store: Store, dimensions: int) -> None:
    for row in store.read("meta/list_indexes"):
        if row["name"] in VECTOR_INDEXES:
            config = (row.get("options") or {}).get("indexConfig") or {}
            have = config.get("vector.dimensions")
            if have is not None and int(have) != dimensions:
                raise ConflictError(
                    f"vector index {row['name']} has dimension {have} but the embedder gives "
                    f"{dimensions}; drop the index (DROP INDEX {row['name']}) and re-embed, or "
                    "set GRAPHMEM_EMBED_MODEL back to the model it was built with"
                )


def _backfill_group_key(store: Store, batch: int = 10_000) -> None:
    """Give messages of older stores their group's fulltext token (graphmem.store.scope)."""
    for row in store.read("meta/groups_missing_key"):
        gid = row["group_id"]
        rows = [{"group_id": gid, "key": group_key(gid)}]
        while int(store.write("meta/backfill_group_key", rows=rows, batch=batch)[0]["updated"]) == batch:
            pass


def _backfill_search_grams(store: Store, batch: int = 5_000) -> None:
    """Give messages whose document, and derived records whose content, has an unspaced-script
    run their ``search_grams`` / ``content_grams`` (stores written before the fields existed, and
    first loads through ``neo4j-admin import``). Each round sets every node it read, so the
    loops end."""
    for find, put in (("meta/messages_missing_grams", "meta/set_search_grams"),
                      ("meta/records_missing_grams", "meta/set_content_grams")):
        while True:
            rows = store.read(find, pattern=GRAM_JAVA_PATTERN, batch=batch)
            out = [{"group_id": r["group_id"], "id": r["id"], "grams": gram_field(r["doc"] or "")} for r in rows]
            out = [r for r in out if r["grams"]]
            if out:
                store.write(put, rows=out)
            if len(rows) < batch or len(out) < len(rows):
                break


def _normalise_documents(store: Store, batch: int = 5_000) -> None:
    """Put the search documents of stores written before they were kept in NFC (messages'
    ``search_text``, derived records' ``content``: graphmem.core.text.search_form) into NFC,
    so an NFC query finds an NFD spelling there too; message texts stay as received."""
    while int(store.write("meta/normalise_search_text", batch=batch)[0]["updated"]) >= batch:
        pass
    while int(store.write("meta/normalise_record_content", batch=batch)[0]["updated"]) >= batch:
        pass


def _migrate_fulltext(store: Store) -> None:
    """Drop a fulltext index whose properties differ from its template (it is recreated)."""
    wanted: dict[str, list[str]] = {}
    for name in schema_templates():
        text = cypher(name)
        m = re.search(r"CREATE FULLTEXT INDEX (\w+) .*?ON EACH \[([^\]]*)\]", text, re.S)
        if m:
            wanted[m.group(1)] = [p.strip().split(".", 1)[1] for p in m.group(2).split(",")]
    for row in store.read("meta/list_indexes"):
        if row["name"] in wanted and list(row["properties"]) != wanted[row["name"]]:
            store.write("meta/drop_index", name=row["name"])
