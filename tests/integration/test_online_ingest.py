"""The online ingest path (``ingest --embed later``, the API and MCP appends) written faster keeps
its graph: groups written at the same time equal groups written one by one, a group's first
batch (created in its own transaction, nothing read back) equals a batch into a stored group,
concurrent appends into one group equal a serial load, and a second run writes nothing."""

from __future__ import annotations

import threading

import pytest

from graphmem.core.errors import ConflictError
from graphmem.verbatim.ingest import ingest_conversations
from tests.factories import conversation
from tests.integration.test_integrity import chain, snapshot
from tests.integration.test_placement_orders import corpus, cut

pytestmark = pytest.mark.neo4j


def graph(store, gid: str) -> tuple[list, list]:
    """Every node of the group with every property (its id, fulltext token and cache nonce
    aside), every relationship by its ends' ids: what two loads under two group ids compare by."""
    nodes = store.read_text(
        "MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) "
        "RETURN labels(n) AS labels, properties(n) AS props", g=gid)
    rels = store.read_text(
        "MATCH (a)-[r]->(b) WHERE a.group_id = $g "
        "RETURN labels(a)[0] AS al, a.id AS a, type(r) AS t, labels(b)[0] AS bl, b.id AS b", g=gid)
    out = []
    for n in nodes:
        props = {k: v for k, v in n["props"].items() if k not in ("group_id", "group_key", "vector_rev")}
        if "Group" in n["labels"]:
            props.pop("id")
            props.pop("name")
        props.pop("edited_at", None)  # write times
        out.append(repr((sorted(n["labels"]), sorted(props.items()))))
    ends = [{**r, "b": "GROUP" if r["bl"] == "Group" else r["b"]} for r in rels]
    return sorted(out), sorted(repr(sorted(r.items())) for r in ends)


def inputs(seed: int) -> list[dict]:
    """A two-channel conversation with replies (some to later messages: the parent arrives
    after), equal timestamps and an input that edits one of its own messages."""
    rows = corpus(seed)
    rows[8] = {**rows[8], "reply_to": rows[30]["id"]}  # a reply stored before its parent
    return rows + [{**rows[12], "text": rows[12]["text"] + " (fixed)"}]


def test_groups_written_at_the_same_time_equal_groups_written_one_by_one(store, make_group) -> None:
    serial = [make_group("serial") for _ in range(4)]
    together = [make_group("together") for _ in range(4)]
    rows = [inputs(seed) for seed in (1, 2, 3, 4)]
    s1 = ingest_conversations(store, [conversation(g, r) for g, r in zip(serial, rows)], None,
                              embed="later", batch_size=40, workers=1)
    s2 = ingest_conversations(store, [conversation(g, r) for g, r in zip(together, rows)], None,
                              embed="later", batch_size=40, workers=3)
    assert s2.group_ids == together  # input order, whichever group finished first
    assert {k: v for k, v in s2.as_dict().items() if k != "group_ids"} == \
        {k: v for k, v in s1.as_dict().items() if k != "group_ids"}
    assert s1.messages_written == sum(len({r["id"] for r in x}) for x in rows) and s1.messages_edited == 4
    for a, b in zip(serial, together):
        assert graph(store, b) == graph(store, a)
    before = [graph(store, g) for g in together]
    again = ingest_conversations(store, [conversation(g, r) for g, r in zip(together, rows)], None,
                                 embed="later", batch_size=40, workers=3)
    assert (again.messages_written, again.messages_edited) == (0, 0)
    assert again.messages_skipped == sum(len(x) for x in rows)
    assert [graph(store, g) for g in together] == before


def test_a_new_groups_first_batch_equals_a_batch_into_a_stored_group(store, make_group) -> None:
    """The first batch of a group its own transaction created reads nothing back (no stored
    region, context or late replies can exist); it must write what a batch into an existing
    (empty) group writes, and later appends (late messages, an edit) must land alike."""
    rows = inputs(6)
    new, existing = make_group("new"), make_group("existing")
    store.write("ingest/merge_group", group_id=existing, group_name=existing, embed_model=None,
                embed_backend=None, embed_dimension=None)  # stored, no message
    calls = cut(rows[:-1], 40)
    for gid in (new, existing):
        first = ingest_conversations(store, [conversation(gid, calls[1])], None, embed="later", batch_size=1000)
        assert first.groups_created == int(gid == new)
        for part in [calls[0], *calls[2:], [rows[-1]]]:  # the earlier call arrives late, then an edit
            ingest_conversations(store, [conversation(gid, part)], None, embed="later", batch_size=9)
    assert graph(store, new) == graph(store, existing)
    ref = make_group("ref")
    ingest_conversations(store, [conversation(ref, rows)], None, embed="later")
    assert snapshot(store, new) == snapshot(store, ref)
    assert len(chain(store, new)) == 2  # one NEXT chain per channel


def test_concurrent_appends_into_one_group_equal_a_serial_load(store, make_group) -> None:
    rows = corpus(8)
    calls = cut(rows, 6)
    ref, raced = make_group("ref"), make_group("raced")
    ingest_conversations(store, [conversation(ref, rows)], None, embed="later")
    errors: list[BaseException] = []

    def load(part: list[list[dict]]) -> None:
        try:
            for c in part:  # each thread's calls in time order; the two interleave
                ingest_conversations(store, [conversation(raced, c)], None, embed="later", batch_size=4)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=load, args=(calls[i::2],)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    # arrival order differs from the reference where the threads' calls overlap in time, and
    # equal instants are ordered by arrival: compare what the order guarantees by instant
    got, want = snapshot(store, raced), snapshot(store, ref)
    assert [m["id"] for m in got["messages"]] == [m["id"] for m in want["messages"]]
    assert got == want
    assert chain(store, raced) == chain(store, ref)


def test_a_group_that_fails_names_itself_and_no_group_is_half_written(store, make_group) -> None:
    gids = [make_group("ok"), make_group("bad"), make_group("ok")]
    rows = [inputs(seed) for seed in (1, 2, 3)]
    clash = rows[1][0]
    ingest_conversations(store, [conversation(gids[1], [{**clash, "speaker": "Somebody Else"}])], None,
                         embed="later")
    with pytest.raises(ConflictError, match=gids[1]):
        ingest_conversations(store, [conversation(g, r) for g, r in zip(gids, rows)], None,
                             embed="later", batch_size=1000, workers=2)
    stored = [store.read_text("MATCH (m:Message {group_id: $g}) RETURN count(m) AS n", g=g)[0]["n"] for g in gids]
    assert stored[1] == 1  # the clashing group: as it was
    for n, r in ((stored[0], rows[0]), (stored[2], rows[2])):
        assert n in (0, len({x["id"] for x in r}))  # one batch each: all or nothing
