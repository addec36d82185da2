"""Analyst reads of the graph: one read-only Cypher query under limits, and a group export.

Used by the MCP server's extended tools (``read_cypher``, ``export_group``,
:mod:`graphmem.mcp_server`) and usable from any Python code with a :class:`graphmem.store.db.Store`.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any

import neo4j
from neo4j.exceptions import ClientError, Neo4jError
from pydantic import BaseModel, Field

from graphmem.store.db import Store
from graphmem.core.errors import InvalidInputError, no_group

#: Property names never returned by export or read_cypher (vectors: 384 floats each; the
#: derived retrieval text duplicates ``text``).
HIDDEN_PROPERTIES = frozenset({"embedding", "sentence_embeddings", "search_text"})


class CypherResult(BaseModel):
    """``read_cypher``: at most ``max_rows`` rows; ``truncated`` when the query had more.

    Nodes come back as their property maps and vectors (``embedding``) are left out.
    """

    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool


class ExportNode(BaseModel):
    """One node of an export: its labels, its ``id`` and its properties (vectors left out)."""

    labels: list[str]
    id: str
    properties: dict[str, Any]


class ExportRelationship(BaseModel):
    """One relationship of an export, between two nodes of the group (by label and id)."""

    type: str
    start_label: str
    start_id: str
    end_label: str
    end_id: str


class GroupExport(BaseModel):
    """``export_group``: every node of one group and every relationship among them."""

    group_id: str
    nodes: list[ExportNode]
    relationships: list[ExportRelationship] = Field(default_factory=list)


_LABEL_ORDER = ("Group", "Person", "Session", "Message", "Core", "Profile", "Interaction", "Insight",
                "Segment", "Derived")


def _main_label(labels: list[str]) -> str:
    """The most specific known label of a node (``Core`` before ``Derived``)."""
    for label in _LABEL_ORDER:
        if label in labels:
            return label
    return labels[0] if labels else ""


def _plain(value: Any) -> Any:
    """A JSON-ready copy of a value read from Neo4j (temporal values as ISO-8601 text, nodes
    and relationships as property maps, vectors dropped)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in HIDDEN_PROPERTIES}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (neo4j.graph.Node, neo4j.graph.Relationship)):
        return _plain(dict(value))
    if isinstance(value, neo4j.graph.Path):
        return [_plain(dict(n)) for n in value.nodes]
    if hasattr(value, "iso_format"):
        return value.iso_format()
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def export_group(store: Store, group_id: str) -> GroupExport:
    """Every node of one group (Group, Person, Session, Message, derived records, Writer
    segments) with its properties, and every relationship among them.

    Vectors and the retrieval text (``embedding``, ``search_text``) are left out; everything
    else is as stored (message text byte-exact, times as stored).

    Raises:
        NotFoundError: no such group.
    """
    nodes = store.read("groups/export_nodes", group_id=group_id)
    if not nodes:
        raise no_group(group_id)
    rels = store.read("groups/export_relationships", group_id=group_id)
    return GroupExport(
        group_id=group_id,
        nodes=[ExportNode(labels=sorted(r["labels"]), id=str(r["id"]), properties=_plain(r["props"]))
               for r in nodes],
        relationships=[
            ExportRelationship(type=r["type"], start_label=_main_label(r["start_labels"]),
                               start_id=str(r["start_id"]), end_label=_main_label(r["end_labels"]),
                               end_id=str(r["end_id"]))
            for r in rels
        ],
    )


def read_cypher(
    store: Store,
    query: str,
    params: dict[str, Any] | None = None,
    *,
    max_rows: int = 100,
    timeout_s: float = 10.0,
) -> CypherResult:
    """Run one analyst's Cypher query, read-only, with a row and a time limit.

    Three guards: the query planner must classify the query as read-only (``EXPLAIN`` query
    type ``r``: no CREATE/MERGE/SET/DELETE, no writing or schema procedure); ``LOAD CSV`` is
    refused (it reads server files); and it runs in a read transaction, which the server
    itself refuses to let write. The transaction is cut off after ``timeout_s`` seconds.

    Args:
        store: open store.
        query: one Cypher statement; values belong in ``params`` (``$name``).
        params: query parameters.
        max_rows: rows returned at most (1-10,000); more sets ``truncated``.
        timeout_s: transaction time limit in seconds (> 0).

    Returns:
        The column names and at most ``max_rows`` rows, JSON-ready.

    Raises:
        InvalidInputError: not a read query, a syntax error, past the time limit, or limits
            out of range (field ``query``, ``max_rows`` or ``timeout_s``).
    """
    if not 1 <= max_rows <= 10_000:
        raise InvalidInputError("max_rows must be 1 to 10000", field="max_rows")
    if not timeout_s > 0:
        raise InvalidInputError("timeout_s must be > 0", field="timeout_s")
    text = query.strip().rstrip(";")
    if not text:
        raise InvalidInputError("empty query", field="query")
    if "load csv" in " ".join(text.lower().split()):
        raise InvalidInputError("LOAD CSV is not allowed in read_cypher", field="query")
    params = dict(params or {})
    try:
        with store.session(read=True) as session:
            kind = session.run(f"EXPLAIN {text}", params).consume().query_type
            if kind != "r":
                raise InvalidInputError(
                    f"read_cypher runs read-only queries; the planner classifies this one as "
                    f"{_QUERY_TYPES.get(str(kind), str(kind))!r}", field="query",
                )

            @neo4j.unit_of_work(timeout=timeout_s)
            def work(tx: neo4j.ManagedTransaction) -> CypherResult:
                result = tx.run(text, params)
                columns = list(result.keys())
                rows: list[dict[str, Any]] = []
                truncated = False
                for record in result:
                    if len(rows) == max_rows:
                        truncated = True
                        break
                    rows.append(_plain(dict(record.items())))  # type: ignore[no-untyped-call]  # neo4j 6 leaves Record.items unannotated
                return CypherResult(columns=columns, rows=rows, truncated=truncated)

            return session.execute_read(work)
    except ClientError as e:
        code = e.code or ""
        if "TransactionTimedOut" in code or "Transaction.Terminated" in code:
            raise InvalidInputError(f"query ran past the time limit of {timeout_s:g} s", field="query") from e
        raise InvalidInputError(f"query refused by Neo4j: {e.message}", field="query") from e
    except Neo4jError as e:
        if "TimedOut" in (e.code or ""):
            raise InvalidInputError(f"query ran past the time limit of {timeout_s:g} s", field="query") from e
        raise


_QUERY_TYPES = {"r": "read", "rw": "read-write", "w": "write", "s": "schema"}
