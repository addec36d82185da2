"""Analyst reads of the graph: one read-only Cypher query under limits.

Used by the MCP server's extended tool ``read_cypher`` (:mod:`graphmem.mcp_server`) and usable
from any Python code with a :class:`graphmem.store.db.Store`. A group's export, page by page,
is :mod:`graphmem.groups.export` (the MCP tool ``export_group``).
"""

from __future__ import annotations

import logging

import json
import re
from datetime import date, datetime, time, timedelta
from typing import Any

import neo4j
from neo4j.exceptions import ClientError, Neo4jError, ServiceUnavailable, SessionExpired
from pydantic import BaseModel, Field

from graphmem.core import paging
from graphmem.core.redact import redact_text
from graphmem.store.db import STORE_DOWN, Store
from graphmem.core.errors import InvalidInputError, StoreUnavailableError, no_group

#: Property names never returned by read_cypher (vectors: 384 floats each; the
#: derived retrieval text duplicates ``text``).
HIDDEN_PROPERTIES = frozenset({"embedding", "sentence_embeddings", "search_text", "search_grams", "content_grams"})

logger = logging.getLogger(__name__)


class CypherResult(paging.Paged):
    """``read_cypher``: at most ``max_rows`` rows and ``max_bytes`` bytes of JSON;
    ``truncated`` when the query had more, with ``next_cursor`` to read on.

    Nodes come back as their property maps and vectors (``embedding``) are left out; strings
    longer than ``max_value_chars`` are cut (``values_clipped`` counts them).
    """

    columns: list[str]
    rows: list[dict[str, Any]]
    values_clipped: int = 0


def _plain(value: Any, clip: list[int] | None = None) -> Any:
    """A JSON-ready copy of a value read from Neo4j (temporal values as ISO-8601 text, nodes
    and relationships as property maps, vectors dropped). ``clip``: ``[max characters of a
    string, strings cut so far]``; a longer string is cut and counted."""
    if isinstance(value, dict):
        return {k: _plain(v, clip) for k, v in value.items() if k not in HIDDEN_PROPERTIES}
    if isinstance(value, (list, tuple)):
        return [_plain(v, clip) for v in value]
    if isinstance(value, (neo4j.graph.Node, neo4j.graph.Relationship)):
        return _plain(dict(value), clip)
    if isinstance(value, neo4j.graph.Path):
        return [_plain(dict(n), clip) for n in value.nodes]
    if hasattr(value, "iso_format"):
        return value.iso_format()
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, str) and clip is not None and len(value) > clip[0]:
        clip[1] += 1
        return value[: clip[0]]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


#: Bytes of JSON a read_cypher result holds at most by default (rows past it are left to the
#: next page): :data:`graphmem.core.paging.RESULT_BYTES`, what an agent's tool output takes.
READ_CYPHER_MAX_BYTES = paging.RESULT_BYTES
#: The largest ``max_bytes`` of read_cypher.
READ_CYPHER_BYTES_LIMIT = 10_000_000

#: Procedures read_cypher may call: none. Schema and label listings (``db.labels()`` ...) span
#: every group, and everything a caller may see is reachable with MATCH over its own group.
ALLOWED_PROCEDURES: frozenset[str] = frozenset()

#: Plan operators that read nodes from the whole store: each needs a group filter.
_NODE_SCANS = ("AllNodesScan", "NodeByLabelScan", "UnionNodeByLabelsScan", "IntersectionNodeByLabelsScan",
               "SubtractionNodeByLabelsScan", "NodeIndexScan", "NodeIndexSeek", "NodeUniqueIndexSeek",
               "NodeIndexSeekByRange", "NodeUniqueIndexSeekByRange", "NodeIndexContainsScan",
               "NodeIndexEndsWithScan", "MultiNodeIndexSeek", "NodeByIdSeek", "NodeByElementIdSeek",
               "AssertingMultiNodeIndexSeek")
#: Plan leaves that read no stored data (constants, parameters, the outer row).
_DATA_FREE_LEAVES = ("Argument", "Projection", "Unwind", "EmptyRow", "Optional")
#: Operators refused wherever they are in the plan.
_REFUSED = ("LoadCSV", "ProcedureCall", "Show", "Terminate", "Create", "Merge", "Delete", "DetachDelete",
            "Set", "Remove", "Foreach", "TransactionApply", "TransactionForeach", "Alter", "Drop", "Grant",
            "Revoke", "Deny", "Rename", "Enable", "Start", "Stop", "Wait")
_FILTER_OPS = ("Filter", "CacheProperties")


def _top_conjuncts(predicate: str) -> list[str]:
    """``"(a AND (b OR c))"`` -> ``["a", "(b OR c)"]``: the conjuncts at the top level of a
    plan's predicate text (outer parentheses dropped; parentheses, brackets and quotes kept)."""
    p = predicate.strip()
    while p.startswith("(") and p.endswith(")") and _closes_at_end(p):
        p = p[1:-1].strip()
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(p):
        ch = p[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and p.startswith(" AND ", i):
            parts.append(p[start:i].strip())
            start = i + 5
            i += 4
        i += 1
    parts.append(p[start:].strip())
    return parts


def _closes_at_end(p: str) -> bool:
    """Whether the parenthesis opening ``p`` is the one closing it."""
    depth = 0
    for i, ch in enumerate(p):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return i == len(p) - 1
    return False


_SEEK = re.compile(r"^(?:[A-Z]+ )*(?:INDEX )?(?P<var>\S+?):(?P<label>[^(\s]+)\((?P<props>[^)]*)\) WHERE (?P<pred>.*)$")


def _op_name(plan: Any) -> str:
    return str(plan["operatorType"]).split("@", 1)[0]


def _details(plan: Any) -> str:
    return str((plan.get("args") or {}).get("Details", ""))


def _scan_var_label(op: str, details: str) -> tuple[str, str]:
    """The variable and label a node scan binds (label "" when the scan names none)."""
    m = _SEEK.match(details)
    if m:
        return m["var"], m["label"]
    head = details.split(" WHERE ", 1)[0].strip()
    var, _, label = head.partition(":")
    return var.strip(), label.strip()


def _scoped_seek(details: str, label: str) -> bool:
    """An index seek whose predicate pins the group: ``group_id = $group_id`` (or, on the
    Group label, ``id = $group_id``) as a top-level conjunct."""
    m = _SEEK.match(details)
    if not m:
        return False
    pred = re.split(r", cache\[", m["pred"], maxsplit=1)[0]
    wanted = {"group_id = $group_id"} | ({"id = $group_id"} if label == "Group" else set())
    return any(c in wanted for c in _top_conjuncts(pred))


def _scoped_filter(details: str, var: str, label: str) -> bool:
    wanted = {f"{var}.group_id = $group_id", f"cache[{var}.group_id] = $group_id"}
    if label == "Group":
        wanted |= {f"{var}.id = $group_id", f"cache[{var}.id] = $group_id"}
    return any(c in wanted for c in _top_conjuncts(details))


_NESTED_PLAN = re.compile(r"\b(COLLECT|COUNT|EXISTS)\s*\{")
"""A subquery expression the planner keeps inside an operator's expression (a sliced pattern
comprehension ``[(x:Message)--() | x.text][..3]`` became ``COLLECT { MATCH (x) ... }`` in a
Projection): the nested plan is no child operator, so :func:`check_read_plan` could not see its
label scan, and a key of one group read another group's messages."""


_RANGE_CALL = re.compile(r"\brange\s*\(", re.IGNORECASE)
"""``range()`` in an expression: ``reduce(s = '', i IN range(1, 100000000) | s + 'a')`` ran on in
the server long after its transaction timed out (the limit is checked between rows, and such
a loop allocates nothing the memory tracker counts), pinning a core for every group."""

_PLAIN_UNWIND_RANGE = re.compile(
    r"^range\(\s*[^(),\[\]]+\s*,\s*[^(),\[\]]+\s*(?:,\s*[^(),\[\]]+\s*)?\) AS \S+$", re.IGNORECASE)
"""``UNWIND range(a, b[, step]) AS x`` with plain arguments (literals, parameters, variables):
rows, which the server stops at the time limit."""

_REGEX_MATCH = re.compile(r"=~")
"""A regular-expression match (``x =~ 'pattern'``): Java's matcher backtracks inside one
expression, so ``'aaaa...a!' =~ '(.*a){20}'`` kept a core busy long after its transaction was
terminated at the time limit (an attacker trial: still running at 84 s past a 2 s limit; only a
restart of Neo4j ended it)."""

_EXPRESSION_LOOP = re.compile(
    r"\breduce\s*\(|\[\s*`?[\w]+`?\s+IN\b|\b(?:any|all|none|single)\s*\(\s*`?[\w]+`?\s+IN\b", re.IGNORECASE)
"""A loop inside one expression: ``reduce(...)``, a list comprehension ``[x IN list | ...]`` and
the quantifiers ``any/all/none/single(x IN list ...)``. Neo4j runs such a loop to its end
whatever the time limit, and nested or over a doubled list it is work without bound: a second
attacker trial ran ``reduce`` over ``reduce(s = [0], i IN [1, 1, ...] | s + s)`` 14 s past a 2 s
limit, each more ``1`` four times longer. UNWIND and aggregation do the same work as rows."""


_TOKEN = re.compile(
    r"""(?P<ws>\s+|//[^\n]*|/\*.*?\*/)|(?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|(?P<name>`[^`]*`|[^\W\d]\w*)"""
    r"""|(?P<num>\d[\w.]*)|(?P<param>\$\w+)|(?P<op><>|<=|>=|=~|\|\||\S)""", re.S)
#: Keywords and operators that end an additive chain (their precedence is below ``+``).
_CHAIN_ENDS = frozenset({"as", "where", "and", "or", "xor", "not", "in", "starts", "ends", "contains", "is",
                         "return", "with", "match", "optional", "order", "by", "skip", "limit", "unwind",
                         "when", "then", "else", "distinct", "asc", "desc", "ascending", "descending",
                         "union", "all", "call", "yield", "set", "merge", "create", "delete", "remove"})
_CHAIN_END_OPS = frozenset({"=", "<>", "<", ">", "<=", ">=", "=~", "|", ";", ":"})
#: Values that hold no data of the query (literals) and functions whose result is a number,
#: whatever their arguments: a term made of them cannot grow a value.
_CONSTANT_NAMES = frozenset({"true", "false", "null", "nan", "infinity"})
_NUMERIC_FUNCTIONS = frozenset({"count", "size", "length", "sum", "avg", "tointeger", "tofloat", "abs", "round",
                                "ceil", "floor", "sign", "id", "elementid", "stdev", "stdevp", "percentilecont",
                                "percentiledisc", "char_length", "character_length"})


#: Characters a read_cypher query holds at most (its literals are searches too).
READ_CYPHER_MAX_QUERY_CHARS = 20_000
#: Characters of text all read_cypher parameters hold together at most: a stored message text's
#: longest (limits.MAX_TEXT_CHARS). ``$a CONTAINS $b`` costs len(a) x len(b): 400,000 and 200,000
#: characters ran 3.7 s past a 2 s limit inside one expression (an attacker re-test).
READ_CYPHER_MAX_PARAM_CHARS = 100_000


def _text_chars(value: Any) -> int:
    """Characters of text in a parameter value (strings in lists and maps counted, keys too)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + _text_chars(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return sum(_text_chars(v) for v in value)
    return 0


def check_value_growth(query: str) -> None:
    """Refuse a query that can grow a value beyond any bound inside its expressions.

    ``WITH s + s AS s`` doubles a string (or a list) at every step: twenty steps from ``'a'``
    make a megabyte, and one ``replace()`` or ``CONTAINS`` over it then runs for minutes inside
    a single expression, which Neo4j does not stop at the time limit (an attacker re-test: 86 s
    past a 2 s limit). Growth needs a value joined with other data of the query, so these are
    refused: a ``+`` (or ``||``) chain with two or more terms that read the query's variables,
    a list or map literal with two or more such entries, and ``replace()`` unless its search
    and its replacement are literals and the replacement is no longer than the search.
    Literals, parameters and numeric functions (``count``, ``size``, ...) read nothing that
    grows, and ``-`` is arithmetic only (or a pattern's edge). Return such values as separate
    columns instead.

    Raises:
        InvalidInputError: naming the construct (field ``query``).
    """
    def refuse(what: str) -> InvalidInputError:
        return InvalidInputError(
            f"read_cypher refuses {what} that joins two values of the query: a value joined with itself at "
            "every step grows without bound, and one string operation over it then runs past the time "
            "limit; return the values as separate columns", field="query")

    def frame(open_: str, fn: str = "") -> dict[str, Any]:
        # the terms of the current + chain (whether each reads a variable), the current term's,
        # the entries of a list or map literal, the tokens of each argument (for replace()),
        # anything read inside
        return {"open": open_, "fn": fn, "terms": [], "ref": False, "entries": [], "any": False, "argtoks": [[]]}

    def check_replace(f: dict[str, Any]) -> None:
        # replace(s, search, replacement): both literals, the replacement no longer than the
        # search, so neither grows the string nor makes one search a long one
        args = f["argtoks"]
        lits = [a[0][1][1:-1] for a in args[1:3] if len(a) == 1 and a[0][0] == "str"]
        if len(args) != 3 or len(lits) != 2 or len(lits[1]) > len(lits[0]):
            raise InvalidInputError(
                "read_cypher allows replace() only with a literal search text and a literal replacement no "
                "longer than it (replace(m.text, '\\n', ' ')): a longer or computed one grows a string step "
                "by step, and a long search runs past the time limit", field="query")

    def end_chain(f: dict[str, Any]) -> bool:
        terms = [*f["terms"], f["ref"]]
        if len(terms) >= 2 and sum(terms) >= 2:
            raise refuse("a + chain")
        f["terms"], f["ref"] = [], False
        return any(terms)

    def end_entry(f: dict[str, Any]) -> None:
        f["entries"].append(end_chain(f))
        if f["open"] in ("[", "{") and sum(f["entries"]) >= 2:
            raise refuse("a list literal" if f["open"] == "[" else "a map literal")

    frames = [frame("")]
    operand = False  # the previous token ended an operand (a following + is binary)
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(query) if m.lastgroup != "ws"]
    for i, (kind, tok) in enumerate(tokens):
        low, f = tok.lower(), frames[-1]
        if f["fn"] == "replace" and not (kind == "op" and tok in (",", ")")):
            f["argtoks"][-1].append((kind if not (kind == "op" and tok in "([{") else "nested", tok))
        before = tokens[i - 1] if i else ("", "")
        after = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if kind == "name" and low == "case":
            frames.append(frame("case"))
            operand = False
        elif kind == "name" and low == "end" and f["open"] == "case":
            end_chain(f)
            inner = frames.pop()
            frames[-1]["ref"] |= inner["any"]
            operand = True
        elif kind == "op" and tok in "([{":
            frames.append(frame(tok, before[1].strip("`").lower() if tok == "(" and before[0] == "name" else ""))
            operand = False
        elif kind == "op" and tok in ")]}" and len(frames) > 1:
            end_entry(f)
            inner = frames.pop()
            if inner["fn"] == "replace":
                check_replace(inner)
            frames[-1]["ref"] |= inner["any"] and inner["fn"] not in _NUMERIC_FUNCTIONS
            operand = True
        elif kind == "op" and tok in ("+", "||"):  # || joins strings and lists as + does
            if operand:  # binary: the term ends, the chain goes on
                f["terms"].append(f["ref"])
                f["ref"] = False
            operand = False
        elif kind == "op" and tok == ",":
            end_entry(f)
            f["argtoks"].append([])
            operand = False
        elif (kind == "op" and (tok in _CHAIN_END_OPS or tok == "-")) or (kind == "name" and low in _CHAIN_ENDS):
            end_chain(f)
            operand = False
        elif kind == "name":
            operand = True
            if after == "(" or before[1] == "." or low in _CONSTANT_NAMES or (after == ":" and f["open"] == "{"):
                continue  # a function name, a property key, a literal, a map key
            f["ref"] = True
            for g in frames:
                g["any"] = True
        else:  # a literal, a parameter, or an operator that binds tighter than + ('.', '*', '/', ...)
            operand = kind in ("str", "num", "param")
    end_chain(frames[0])


def check_read_plan(plan: Any) -> None:
    """Refuse a plan that is not a read of one group's data.

    The rule (docs/security.md, "read_cypher"): every operator that reads nodes from the store
    (a label, index or id scan or seek) must be pinned to the caller's group, by the seek's
    own predicate or a Filter right above it, with the top-level conjunct
    ``x.group_id = $group_id`` (``g.id = $group_id`` for a Group node); other leaves may only
    be data-free (constants, parameters, the outer row); relationship scans, count-store
    reads, procedure calls, ``LOAD CSV``, ``SHOW``/``TERMINATE``, every writing or admin
    operator, every subquery the planner nests inside an expression (``COLLECT``/``COUNT``/
    ``EXISTS { ... }`` in an operator's details: its reads are not operators here), loops
    inside one expression (``reduce``, list comprehensions, ``any/all/none/single``),
    ``range()`` anywhere but as the plain source of an ``UNWIND`` and regular-expression
    matches (``=~``: backtracking) are refused (such loops outlive the time limit).
    Expansions from pinned nodes stay inside the group because graphmem never links nodes of
    two groups.

    Args:
        plan: the ``EXPLAIN`` plan (the driver's ``ResultSummary.plan`` dict).

    Raises:
        InvalidInputError: the first operator that breaks the rule, named (field ``query``).
    """

    def walk(node: Any, above: list[Any]) -> None:
        op = _op_name(node)
        details = _details(node)
        if _RANGE_CALL.search(details) and not (op == "Unwind" and _PLAIN_UNWIND_RANGE.match(details.strip())):
            raise InvalidInputError(
                f"read_cypher refuses range() inside an expression ({op}): a list built or folded in "
                "one expression is a loop the server does not stop at the time limit (it checks between "
                "rows); UNWIND range(a, b) AS i with plain bounds makes rows, which it can stop", field="query")
        loop = _EXPRESSION_LOOP.search(details)
        if loop is not None:
            raise InvalidInputError(
                f"read_cypher refuses a loop inside one expression ({loop.group().strip()} ... in {op}): "
                "the server runs it to its end whatever the time limit; UNWIND the list and use WHERE and "
                "aggregations (count, collect, sum) instead", field="query")
        if _REGEX_MATCH.search(details):
            raise InvalidInputError(
                f"read_cypher refuses a regular-expression match (=~ in {op}): a backtracking pattern "
                "runs in the server past the time limit; use STARTS WITH, ENDS WITH or CONTAINS "
                "(toLower() on both sides for a match in any case)", field="query")
        nested = _NESTED_PLAN.search(details)
        if nested is not None:
            raise InvalidInputError(
                f"read_cypher refuses a subquery planned inside an expression ({nested.group(1)} {{ ... }} in "
                f"{op}: its reads are not operators of the plan, so they cannot be checked to stay in "
                "the group); write the pattern as a MATCH or OPTIONAL MATCH and collect() it", field="query")
        if op.startswith(_REFUSED):
            name = details.split("(", 1)[0].strip()
            if op == "ProcedureCall" and name not in ALLOWED_PROCEDURES:
                raise InvalidInputError(f"read_cypher calls no procedures ({name or 'procedure'} refused)",
                                        field="query")
            if op != "ProcedureCall":
                raise InvalidInputError(f"read_cypher refuses {op} (only reads of one group's graph)",
                                        field="query")
        children = list(node.get("children") or [])
        if not children:
            details = _details(node)
            if op in _NODE_SCANS:
                var, label = _scan_var_label(op, details)
                pinned = _scoped_seek(details, label)
                for parent in reversed(above):  # the Filter chain right above the scan
                    if _op_name(parent) not in _FILTER_OPS:
                        break
                    pinned = pinned or _scoped_filter(_details(parent), var, label)
                if not pinned:
                    raise InvalidInputError(
                        f"read_cypher reads one group: {op} over {details or 'every node'!r} is not "
                        f"filtered by {var}.group_id = $group_id", field="query")
            elif op not in _DATA_FREE_LEAVES:
                raise InvalidInputError(f"read_cypher refuses {op} (it reads outside the group)", field="query")
        for child in children:
            walk(child, [*above, node])

    walk(plan, [])


def read_cypher(
    store: Store,
    group_id: str,
    query: str,
    params: dict[str, Any] | None = None,
    *,
    max_rows: int = 100,
    max_bytes: int = READ_CYPHER_MAX_BYTES,
    timeout_s: float = 10.0,
    cursor: str | None = None,
    max_value_chars: int | None = paging.LIST_TEXT_CHARS,
) -> CypherResult:
    """Run one analyst's Cypher query over one group's data, read-only, under limits.

    Decided by the query plan, never by the text: ``EXPLAIN`` must classify the statement as
    a read (query type ``r``) and :func:`check_read_plan` must accept every operator (no
    procedure, ``LOAD CSV``, ``SHOW``/``TERMINATE``, relationship or count-store scan; every
    node scan pinned by ``x.group_id = $group_id``). ``$group_id`` is bound to ``group_id``
    by graphmem; ``params`` may not set it. The statement runs once, in one explicit read
    transaction (no retry of a caller's query) cut off after ``timeout_s``; rows are streamed
    and reading stops at ``max_rows`` rows or ``max_bytes`` bytes of JSON, whichever comes
    first (``truncated`` then says so, and ``next_cursor`` reads on). A page holds at least one
    row. Strings longer than ``max_value_chars`` are cut (``values_clipped``; a message's whole
    text is :func:`graphmem.query.people.get_message`).

    Paging: an arbitrary query has no key graphmem knows, so the cursor carries the number of
    rows already returned (and a hash of the query and its parameters: another query's cursor
    is refused); the next page runs the query again and skips them. The pages are stable only
    for a query that orders its rows by a unique key (``ORDER BY m.turn_created, m.id``);
    without ``ORDER BY`` Neo4j may return rows in another order each time.

    Args:
        store: open store.
        group_id: the group the query reads (bound as ``$group_id``).
        query: one Cypher statement; values belong in ``params`` (``$name``).
        params: query parameters (not ``group_id``).
        max_rows: rows returned at most (1-10,000).
        max_bytes: bytes of JSON returned at most (1,000 - 10,000,000; default 64,000).
        timeout_s: transaction time limit in seconds (> 0).
        cursor: None, or ``next_cursor`` of the previous page (same query and params).
        max_value_chars: strings longer than this are cut (default 2,000; None: never).

    Returns:
        The column names and the rows read, JSON-ready.

    Raises:
        InvalidInputError: not a read of this group, a syntax error, past the time limit, or
            limits out of range (field ``query``, ``params``, ``max_rows``, ``max_bytes``,
            ``timeout_s`` or ``cursor``).
        StoreUnavailableError: Neo4j cannot be reached (not retried).
    """
    if not 1 <= max_rows <= 10_000:
        raise InvalidInputError("max_rows must be 1 to 10000", field="max_rows")
    if not 1_000 <= max_bytes <= READ_CYPHER_BYTES_LIMIT:
        raise InvalidInputError(f"max_bytes must be 1000 to {READ_CYPHER_BYTES_LIMIT}", field="max_bytes")
    if max_value_chars is not None and not 1 <= max_value_chars <= 1_000_000:
        raise InvalidInputError("max_value_chars must be 1 to 1000000", field="max_value_chars")
    if not timeout_s > 0:
        raise InvalidInputError("timeout_s must be > 0", field="timeout_s")
    text = query.strip().rstrip(";")
    if not text:
        raise InvalidInputError("empty query", field="query")
    if len(text) > READ_CYPHER_MAX_QUERY_CHARS:
        raise InvalidInputError(f"a query holds at most {READ_CYPHER_MAX_QUERY_CHARS} characters", field="query")
    params = dict(params or {})
    if "group_id" in params:
        raise InvalidInputError("group_id is bound by graphmem to the group asked for", field="params")
    if _text_chars(params) > READ_CYPHER_MAX_PARAM_CHARS:
        raise InvalidInputError(
            f"the parameters hold at most {READ_CYPHER_MAX_PARAM_CHARS} characters of text (a stored text's "
            "longest): one search of a long text for another runs past the time limit", field="params")
    scope = paging.list_scope("read_cypher", group_id, text, params)
    after = paging.decode_cursor(cursor, kind="read_cypher", scope=scope, size=1)
    skip = 0 if after is None else after[0]
    if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
        raise InvalidInputError("not a cursor of this read cypher list", field="cursor")
    params["group_id"] = group_id
    try:
        with store.session(read=True, fetch_size=50) as session:
            summary = session.run(f"EXPLAIN {text}", params).consume()
            kind = summary.query_type
            if kind != "r":
                raise InvalidInputError(
                    f"read_cypher runs read-only queries; the planner classifies this one as "
                    f"{_QUERY_TYPES.get(str(kind), str(kind))!r}", field="query",
                )
            if summary.plan is None:
                raise InvalidInputError("the planner gave no plan for this query", field="query")
            check_read_plan(summary.plan)
            check_value_growth(text)  # after the plan's own refusals, which name their rule
            with session.begin_transaction(timeout=timeout_s) as tx:  # once: no retry loop
                result = tx.run(text, params)
                columns = list(result.keys())
                rows: list[dict[str, Any]] = []
                clip = None if max_value_chars is None else [max_value_chars, 0]
                budget = paging.budget_of(CypherResult(columns=columns, rows=[], truncated=True,
                                                       values_clipped=10**9), max_bytes) or 0
                size = 0
                truncated = False
                seen = 0
                for record in result:
                    seen += 1
                    if seen <= skip:
                        continue
                    if len(rows) == max_rows:
                        truncated = True
                        break
                    clipped = clip[1] if clip else 0
                    row = _plain(dict(record.items()), clip)  # type: ignore[no-untyped-call]  # neo4j 6 leaves Record.items unannotated
                    size += len(json.dumps(row, ensure_ascii=False, default=str, separators=(",", ":")).encode("utf-8")) + 1
                    if rows and size > budget:
                        if clip:
                            clip[1] = clipped  # the row is left to the next page
                        truncated = True
                        break
                    rows.append(row)
                tx.rollback()  # stop the rest of the result on the server
            return CypherResult(
                columns=columns, rows=rows, truncated=truncated, values_clipped=clip[1] if clip else 0,
                next_cursor=paging.encode_cursor("read_cypher", scope, [skip + len(rows)]) if truncated else None)
    except ClientError as e:
        code = e.code or ""
        if "TransactionTimedOut" in code or "Transaction.Terminated" in code:
            raise InvalidInputError(f"query ran past the time limit of {timeout_s:g} s", field="query") from e
        raise InvalidInputError(f"query refused by Neo4j: {e.message}", field="query") from e
    except (ServiceUnavailable, SessionExpired) as e:
        logger.warning("Neo4j unavailable: %s", redact_text(str(e)))
        raise StoreUnavailableError(STORE_DOWN) from e
    except Neo4jError as e:
        if "TimedOut" in (e.code or "") or "Terminated" in (e.code or ""):
            raise InvalidInputError(f"query ran past the time limit of {timeout_s:g} s", field="query") from e
        raise StoreUnavailableError(f"Neo4j could not run the query: {e.message}") from e


_QUERY_TYPES = {"r": "read", "rw": "read-write", "w": "write", "s": "schema"}
