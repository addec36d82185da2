"""Attacks on read_cypher (issue 24, point 4): each bypass of the old text filter, and reads of
another group's data, are refused from the query plan before the query runs."""

from __future__ import annotations

import pytest

from graphmem.analyst import read_cypher
from graphmem.core.errors import InvalidInputError
from tests.test_query_fixtures import build_family

pytestmark = pytest.mark.neo4j


@pytest.fixture
def two_groups(store, embedder, make_group):
    own, other = make_group("own"), make_group("other")
    build_family(store, embedder, own, derived=False)
    build_family(store, embedder, other, derived=False)
    store.write_tx(lambda tx: tx.run("MATCH (m:Message {group_id: $g, id: 'm01'}) SET m.text = 'SECRET-OTHER'",
                                     g=other).consume())
    return own, other


def refused(store, group_id: str, query: str, **kw) -> str:
    with pytest.raises(InvalidInputError) as e:
        read_cypher(store, group_id, query, **kw)
    assert e.value.field in ("query", "params"), e.value
    return str(e.value)


ESCAPES = [
    "LOAD/**/CSV FROM 'http://127.0.0.1:9/x' AS l RETURN l",
    "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l",
    "load\ncsv from 'http://127.0.0.1:9/x' as l return l",
    "SHOW TRANSACTIONS",
    "SHOW TRANSACTIONS YIELD currentQuery, parameters RETURN currentQuery, parameters",
    "TERMINATE TRANSACTIONS 'neo4j-transaction-1'",
    "SHOW SETTINGS",
    "SHOW PROCEDURES",
    "SHOW DATABASES",
    "CALL db.labels()",
    "CALL dbms.components()",
    "CALL dbms.listConfig()",
    "CALL db.schema.visualization()",
    "CALL apoc.load.json('http://127.0.0.1:9/x')",
    "CALL () { LOAD CSV FROM 'http://127.0.0.1:9/x' AS l RETURN l } RETURN l",
]


RANGE, LOOP, REGEX = "range() inside an expression", "loop inside one expression", "regular-expression match"
GROWTH = "joins two values of the query"
RUNAWAY = [  # an attacker trial: the first ran on for 740 s after its 10 s limit, a core pinned
    ("MATCH (m:Message {group_id: $group_id}) RETURN reduce(s = '', i IN range(1, 100000000) | s + 'aaaaaaaaaa') AS x",
     RANGE),
    ("RETURN size([i IN RANGE(1, 100000000) | toString(i)]) AS n", RANGE),
    ("MATCH (m:Message {group_id: $group_id}) WHERE size(range(0, 100000000)) > 0 RETURN m.id AS id", RANGE),
    # a second attacker trial: range() inside an UNWIND's own expression, and loops with no range()
    ("UNWIND [reduce(s = 0, i IN range(1, 600000000) | s + i)] AS x RETURN x", RANGE),
    ("UNWIND range(1, size([i IN range(1, 100000000) | i])) AS x RETURN x", RANGE),
    ("WITH reduce(s = [0], i IN [1,1,1,1,1,1,1,1,1,1,1,1,1,1] | s + s) AS l "
     "RETURN reduce(a = 0, x IN l | a + reduce(b = 0, y IN l | b + 1)) AS n", LOOP),
    # a third: a backtracking regex ran on at 84 s past a 2 s limit ('aaaa...a!' =~ '(.*a){20}');
    # these patterns are cheap, so the code before the rule answers them instead of refusing
    ("RETURN 'aaaa!' =~ '(.*a){2}' AS x", REGEX),
    ("MATCH (m:Message {group_id: $group_id}) WHERE m.text =~ '(?i).*trail.*' RETURN m.id AS id", REGEX),
    ("MATCH (m:Message {group_id: $group_id}) WITH m, '.*trail.*' AS p WHERE m.text =~ p RETURN m.id AS id", REGEX),
    # a re-attack: a string doubled by WITH s + s AS s, then one replace() or CONTAINS over it
    # (86 s past a 2 s limit; here 12 doublings, which the code before answers in time)
    ("WITH 'a' AS s" + " WITH s + s AS s" * 12 + " WITH s, left(s, size(s) / 2) + 'b' AS t "
     "RETURN size(replace(s, t, '')) AS c", GROWTH),
    ("WITH 'a' AS s WITH s, s AS t WITH s + '' + t AS s RETURN s CONTAINS 'b' AS c", GROWTH),
    ("WITH 'a' AS s WITH s || s AS s WITH s || s AS s RETURN size(s) AS n", GROWTH),
    ("WITH 'a' AS s WITH [s, s] AS s RETURN size(s) AS n", GROWTH),
    ("WITH 'a' AS s WITH {a: s, b: s} AS s RETURN s.a AS n", GROWTH),
    ("WITH 'aa' AS s WITH replace(s, 'a', s) AS s RETURN size(s) AS n", "replace() only with a literal"),
    # a second re-attack: a literal replacement longer than its search, a name of a non-ASCII letter
    ("WITH 'a' AS s WITH replace(s, 'a', 'aa') AS s WITH replace(s, 'a', 'aa') AS s RETURN size(s) AS n",
     "replace() only with a literal"),
    ("WITH 'a' AS \u00e9 WITH \u00e9 + \u00e9 AS \u00e9 RETURN size(\u00e9) AS n", GROWTH),
    ("UNWIND range(1, 20000) AS i WITH collect(i) AS l RETURN size([x IN l | [y IN l | x * y]]) AS n", LOOP),
    ("UNWIND range(1, 20000) AS i WITH collect(i) AS l RETURN any(x IN l WHERE all(y IN l WHERE y < x)) AS n", LOOP),
]


@pytest.mark.parametrize(("query", "why"), RUNAWAY)
def test_a_loop_inside_one_expression_is_refused_before_it_runs(store, two_groups, query, why):
    own, _ = two_groups
    assert why in refused(store, own, query)


def test_long_parameters_and_queries_are_refused(store, two_groups):
    # a second re-attack: $a CONTAINS $b costs len(a) x len(b) inside one expression (400,000 and
    # 200,000 characters: 3.7 s past a 2 s limit); parameters hold what one stored text may
    own, _ = two_groups
    why = refused(store, own, "RETURN $a CONTAINS $b AS c", params={"a": "a" * 80_000, "b": ["a" * 30_000]})
    assert "at most 100000 characters" in why
    assert "at most 20000 characters" in refused(store, own, "RETURN '" + "a" * 20_000 + "' AS s")
    assert read_cypher(store, own, "RETURN $a CONTAINS $b AS c", params={"a": "a" * 60_000, "b": "ab"}).rows == [
        {"c": False}]


def test_unwind_range_is_rows_the_server_can_stop(store, two_groups):
    own, _ = two_groups
    r = read_cypher(store, own, "UNWIND range(1, 100000000) AS i RETURN i", max_rows=5)
    assert [row["i"] for row in r.rows] == [1, 2, 3, 4, 5] and r.truncated


@pytest.mark.parametrize("query", ESCAPES)
def test_every_escape_of_the_text_filter_is_refused(store, two_groups, query):
    own, _ = two_groups
    refused(store, own, query)


OTHER_GROUP = [
    "MATCH (m:Message) RETURN m.text AS t",
    "MATCH (m) RETURN m.text AS t",
    "MATCH (m:Message) WHERE m.group_id = $group_id OR true RETURN m.text AS t",
    "MATCH (m:Message) WHERE m.group_id = $group_id OR m.group_id <> $group_id RETURN m.text AS t",
    "MATCH (m:Message) WHERE m.group_id STARTS WITH '' RETURN m.text AS t",
    "MATCH (m:Message) WHERE m.group_id IN [$group_id, $x] RETURN m.text AS t",
    "MATCH (m:Message {group_id: $group_id}) RETURN m.text AS t UNION MATCH (m:Message) RETURN m.text AS t",
    "MATCH (m:Message {group_id: $group_id}) CALL (m) { MATCH (x:Message) RETURN x } RETURN x.text AS t",
    "MATCH (m:Message {group_id: $group_id}) RETURN COUNT { MATCH (x:Message) } AS n",
    "MATCH (m:Message {group_id: $group_id}) WITH count(m) AS n MATCH (m:Message) RETURN m.text AS t",
    "MATCH ()-[r:NEXT]->() RETURN count(r) AS n",
    "MATCH (m:Message) RETURN count(m) AS n",
    "MATCH (m:Message) WHERE elementId(m) = $x RETURN m.text AS t",
    "MATCH (g:Group) RETURN g.id AS id",
    "MATCH (m:Message {group_id: $x}) RETURN m.text AS t",
    # a sliced pattern comprehension is planned as COLLECT { MATCH ... } inside a Projection:
    # its label scan was no operator of the plan, and it read the other group (an attacker trial)
    "MATCH (m:Message {group_id: $group_id}) RETURN [(x:Message)-[]-() | x.text][..3] AS t",
    "RETURN [(x:Message) WHERE x.group_id <> $group_id | x.text][..5] AS t",
    "MATCH (m:Message {group_id: $group_id}) RETURN COLLECT { MATCH (x:Message) RETURN x.text }[..2] AS t",
]


@pytest.mark.parametrize("query", OTHER_GROUP)
def test_another_groups_data_is_out_of_reach(store, two_groups, query):
    own, other = two_groups
    message = refused(store, own, query, params={"x": other})
    assert "SECRET-OTHER" not in message


def test_the_group_id_is_bound_by_graphmem_not_the_caller(store, two_groups):
    own, other = two_groups
    assert "bound by graphmem" in refused(store, own, "MATCH (m:Message {group_id: $group_id}) RETURN m.text AS t",
                                          params={"group_id": other})


def test_pinned_reads_of_the_own_group_work(store, two_groups):
    own, _ = two_groups
    r = read_cypher(store, own, "MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(p:Person) "
                               "RETURN p.id AS who, count(m) AS n ORDER BY who")
    assert r.columns == ["who", "n"] and {row["who"] for row in r.rows} == {"Ben", "Cara", "Dad", "Eli", "Mom"}
    assert not any("SECRET-OTHER" in str(row) for row in r.rows)
    g = read_cypher(store, own, "MATCH (g:Group {id: $group_id})<-[:IN_GROUP]-(s:Session) RETURN count(s) AS n")
    assert g.rows[0]["n"] > 0
    w = read_cypher(store, own, "MATCH (p:Person) WHERE p.group_id = $group_id AND p.name = $who "
                               "RETURN p.id AS id", params={"who": "Ben"})
    assert w.rows == [{"id": "Ben"}]
    assert read_cypher(store, own, "RETURN 1 AS one").rows == [{"one": 1}]
    # what the growth rule leaves: arithmetic, a literal or parameter joined to a value, patterns
    n = read_cypher(store, own, "MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(p:Person) "
                                "RETURN count(m) + size(collect(p.id)) + 1 AS n, 'x' + $tag + 'y' AS s",
                    params={"tag": "t"})
    assert n.rows[0]["s"] == "xty" and n.rows[0]["n"] > 1


def test_rows_and_bytes_are_capped(store, two_groups):
    own, _ = two_groups
    big = "x" * 90_000  # parameters hold at most 100,000 characters of text
    r = read_cypher(store, own, "UNWIND range(1, 20) AS i RETURN i, $big AS b", params={"big": big},
                    max_bytes=200_000, max_value_chars=None)
    assert r.truncated is True and len(r.rows) == 2  # 2 x 90 KB fit in 200 KB, the 3rd does not
    r = read_cypher(store, own, "UNWIND range(1, 20) AS i RETURN i", max_rows=5)
    assert r.truncated is True and [row["i"] for row in r.rows] == [1, 2, 3, 4, 5]
    r = read_cypher(store, own, "UNWIND range(1, 5) AS i RETURN i")
    assert r.truncated is False and len(r.rows) == 5
    with pytest.raises(InvalidInputError) as e:
        read_cypher(store, own, "RETURN 1 AS x", max_bytes=10)
    assert e.value.field == "max_bytes"


def test_writes_are_refused_and_nothing_is_written(store, two_groups):
    own, _ = two_groups
    for q in ("CREATE (x:Intruder {group_id: $group_id}) RETURN x",
              "MATCH (m:Message {group_id: $group_id}) SET m.text = 'x' RETURN m",
              "MATCH (m:Message {group_id: $group_id}) FOREACH (_ IN [1] | SET m.text = 'x')"):
        refused(store, own, q)
    assert store.read_text("MATCH (x:Intruder) RETURN count(x) AS n") == [{"n": 0}]
