"""Store.read rows: plain rows are built directly, anything else as the driver's Record.data()."""

from __future__ import annotations

from graphmem.store.db import record_dict


def test_plain_rows_equal_the_drivers_data_and_graph_values_fall_back(driver, store):
    query = (
        "RETURN 1 AS i, 0.5 AS f, 'x' AS s, null AS n, true AS b, [1.0, 0.25, null] AS floats, "
        "[[\'a\', 0.5], [\'b\', null]] AS pairs, {k: [1, {z: 'q'}]} AS nested, "
        "date('2024-01-02') AS day, {node_like: {p: 1}} AS m"
    )
    records, _, _ = driver.execute_query(query)
    (record,) = records
    # a temporal value is not plain data: the whole row goes through data() unchanged
    assert record_dict(record) == record.data()
    records, _, _ = driver.execute_query(query.replace("date('2024-01-02') AS day, ", ""))
    (record,) = records
    row = record_dict(record)
    assert row == record.data()
    assert list(row) == ["i", "f", "s", "n", "b", "floats", "pairs", "nested", "m"]
    # a node (top level or inside a list) is turned into its properties, as data() does
    driver.execute_query("CREATE (:DbReadProbe {p: 1, q: [2, 3]})")
    try:
        rows = store.read_text("MATCH (t:DbReadProbe) RETURN t AS node, [t] AS nodes, t.p AS p")
        assert rows == [{"node": {"p": 1, "q": [2, 3]}, "nodes": [{"p": 1, "q": [2, 3]}], "p": 1}]
    finally:
        driver.execute_query("MATCH (t:DbReadProbe) DELETE t")
