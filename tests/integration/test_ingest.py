"""System 1 ingestion against the real Neo4j server."""

from __future__ import annotations

import pytest

from graphmem.core.errors import InvalidInputError
from graphmem.verbatim.ingest import ingest_conversations
from tests.factories import conversation
from graphmem.core.config import get_settings

pytestmark = pytest.mark.neo4j


def counts(store, gid: str) -> dict[str, int]:
    nodes = {r["label"]: r["count"] for r in store.read("stats/count_nodes", group_id=gid)}
    rels = {r["type"]: r["count"] for r in store.read("stats/count_relationships", group_id=gid)}
    return {**nodes, **rels}


ROWS = [
    {"speaker": "Ana", "text": "We meet at the harbour at nine.", "session": "s1"},
    {"speaker": "Bo", "text": "I'll bring the boat keys.", "session": "s1", "reply_to": "m0000"},
    {"speaker": "Cy", "text": "Count me out, I'm sick.", "session": "s1"},
    {"speaker": "Ana", "text": "Next week then: same place.", "session": "s2"},
    {"speaker": "Bo", "text": "Fine by me.", "session": "s2", "reply_to": "m0003"},
]


def test_ingest_writes_graph_and_second_run_changes_nothing(store, embedder, group_id):
    conv = conversation(group_id, ROWS)
    first = ingest_conversations(store, [conv], embedder)
    assert (first.messages_written, first.messages_skipped) == (5, 0)
    assert (first.persons_created, first.sessions_created, first.groups_created) == (3, 2, 1)
    before = counts(store, group_id)
    assert before["Message"] == 5 and before["Person"] == 3 and before["Session"] == 2
    assert before["Group"] == 1
    assert before["SOURCE"] == 5 and before["IN_SESSION"] == 5
    assert before["MEMBER_OF"] == 3 and before["IN_GROUP"] == 2
    assert before["NEXT"] == 4 and before["REPLY_TO"] == 2

    second = ingest_conversations(store, [conv], embedder)
    assert (second.messages_written, second.messages_skipped) == (0, 5)
    assert (second.persons_created, second.sessions_created, second.groups_created) == (0, 0, 0)
    assert counts(store, group_id) == before


def test_next_follows_conversation_order_and_append_extends_chain(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, ROWS[:3])], embedder)
    ingest_conversations(store, [conversation(group_id, ROWS)], embedder)  # 2 new messages
    chain = store.read_text(
        "MATCH p = (a:Message {group_id: $g})-[:NEXT*]->(b:Message {group_id: $g}) "
        "WHERE NOT ()-[:NEXT]->(a) AND NOT (b)-[:NEXT]->() "
        "RETURN [n IN nodes(p) | n.id] AS ids",
        g=group_id,
    )
    assert chain == [{"ids": ["m0000", "m0001", "m0002", "m0003", "m0004"]}]
    orders = store.read_text(
        "MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.turn_created AS t ORDER BY t", g=group_id
    )
    assert [r["t"] for r in orders] == [0, 1, 2, 3, 4]


def test_identity_follows_speaker_id(store, embedder, group_id):
    rows = [
        {"speaker": "Alex", "speaker_id": "u1", "text": "I'm Alex from sales."},
        {"speaker": "Alex", "speaker_id": "u2", "text": "I'm the other Alex, from legal."},
        {"speaker": "Sam", "speaker_id": "u3", "text": "Hi, Sam here."},
        {"speaker": "Samantha", "speaker_id": "u3", "text": "Changed my display name."},
    ]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    persons = store.read_text(
        "MATCH (p:Person {group_id: $g}) RETURN p.id AS id, p.name AS name, p.aliases AS aliases "
        "ORDER BY id",
        g=group_id,
    )
    assert persons == [
        {"id": "u1", "name": "Alex", "aliases": ["Alex"]},
        {"id": "u2", "name": "Alex", "aliases": ["Alex"]},
        {"id": "u3", "name": "Samantha", "aliases": ["Sam", "Samantha"]},
    ]
    sources = store.read_text(
        "MATCH (m:Message {group_id: $g})-[:SOURCE]->(p:Person) RETURN m.id AS m, p.id AS p ORDER BY m",
        g=group_id,
    )
    assert [r["p"] for r in sources] == ["u1", "u2", "u3", "u3"]


def test_same_name_in_two_groups_is_two_persons(store, embedder, make_group):
    g1, g2 = make_group(), make_group()
    ingest_conversations(store, [conversation(g1, [{"speaker": "Priya", "text": "hello"}])], embedder)
    ingest_conversations(store, [conversation(g2, [{"speaker": "Priya", "text": "hello"}])], embedder)
    rows = store.read_text(
        "MATCH (p:Person {name: 'Priya'})-[:MEMBER_OF]->(g:Group) WHERE g.id IN [$a, $b] "
        "RETURN g.id AS g ORDER BY g",
        a=g1, b=g2,
    )
    assert sorted(r["g"] for r in rows) == sorted([g1, g2])


TRICKY_TEXTS = [
    "👨‍⚖️🙋‍♀️ family: 👨‍👩‍👧‍👦 and flags 🇯🇵",
    "日本語のテキスト、中文文本、한국어 텍스트",
    "مرحبا بالعالم — עברית",
    "  leading and trailing spaces  ",
    "line one\nline two\r\nline three\ttab",
    "e\u0301 (combining) vs \u00e9 (precomposed)",
    "x" * 100_000,
]


def test_text_round_trip_is_byte_exact(store, embedder, group_id):
    rows = [{"speaker": "Zoë", "text": t} for t in TRICKY_TEXTS]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    stored = store.read_text(
        "MATCH (m:Message {group_id: $g}) RETURN m.text AS text ORDER BY m.turn_created", g=group_id
    )
    assert [r["text"].encode("utf-8") for r in stored] == [t.encode("utf-8") for t in TRICKY_TEXTS]


def test_timestamps_keep_timezone_and_order_by_instant(store, embedder, group_id, tmp_path):
    from loaders import load_conversations

    lines = [
        '{"group": "%s", "session": "s", "speaker": "A", "text": "second", "ts": "2026-03-01T09:30:00+00:00", "id": "b"}' % group_id,
        '{"group": "%s", "session": "s", "speaker": "B", "text": "first", "ts": "2026-03-01T10:00:00+02:00", "id": "a"}' % group_id,
        '{"group": "%s", "session": "s", "speaker": "C", "text": "third", "ts": "2026-03-01T05:00:00-05:00", "id": "c"}' % group_id,
    ]
    path = tmp_path / "tz.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    convs = load_conversations(path, "jsonl")
    ingest_conversations(store, convs, embedder)
    rows = store.read_text(
        "MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.ts AS ts ORDER BY m.turn_created",
        g=group_id,
    )
    assert [r["id"] for r in rows] == ["a", "b", "c"]
    assert rows[0]["ts"] == "2026-03-01T10:00:00+02:00"
    assert rows[2]["ts"] == "2026-03-01T05:00:00-05:00"


def test_bad_record_names_field_and_writes_nothing(store, embedder, group_id):
    good = conversation(group_id, ROWS[:2])
    ingest_conversations(store, [good], embedder)
    before = counts(store, group_id)
    bad_rows = ROWS + [{"speaker": "  ", "text": "who am I?", "id": "bad-1"}]
    with pytest.raises(InvalidInputError) as e:
        ingest_conversations(store, [conversation(group_id, bad_rows)], embedder)
    assert "record row 5" in str(e.value) and "field 'speaker'" in str(e.value)
    assert e.value.field == "speaker"
    assert counts(store, group_id) == before  # nothing from the bad input was written

    bad_ts = conversation(group_id, [{"speaker": "A", "text": "t", "ts": "yesterday-ish"}])
    with pytest.raises(InvalidInputError, match="field 'ts'"):
        ingest_conversations(store, [bad_ts], embedder)
    assert counts(store, group_id) == before


def test_repeated_id_in_one_input_is_a_redelivery_an_edit_or_an_error(store, embedder, group_id):
    ts = "2026-01-01T10:00:00"
    rows = [
        {"speaker": "A", "text": "one", "id": "same", "ts": ts},
        {"speaker": "A", "text": "one", "id": "same", "ts": ts},  # identical: skipped
        {"speaker": "A", "text": "two", "id": "same", "ts": ts},  # new text: an edit
    ]
    s = ingest_conversations(store, [conversation(group_id, rows)], embedder)
    assert (s.messages_written, s.messages_edited, s.messages_skipped) == (1, 1, 1)
    assert store.read_text("MATCH (m:Message {group_id: $g}) RETURN m.text AS t, m.text_history AS h",
                           g=group_id) == [{"t": "two", "h": ["one"]}]
    before = counts(store, group_id)
    bad = [{"speaker": "A", "text": "x", "id": "other", "ts": ts},
           {"speaker": "B", "text": "x", "id": "other", "ts": ts}]
    with pytest.raises(InvalidInputError, match="'other' appears again with another speaker") as e:
        ingest_conversations(store, [conversation(group_id, bad)], embedder)
    assert (e.value.record, e.value.field) == ("row 1", "speaker")
    assert counts(store, group_id) == before


def test_cypher_injection_shaped_values_are_plain_data(store, embedder, make_group):
    gid = make_group("q'uote`s \"MATCH (n) DETACH DELETE n\" --")  # no '/': the id grammar
    nasty = [
        {"speaker": "O'Brien `DROP` \"x\"", "speaker_id": "MATCH (n) DETACH DELETE n", "text": "'); MATCH (n) DETACH DELETE n; //"},
        {"speaker": "RETURN", "text": "`backticks` and ${dollar} and \\ backslash", "id": "WHERE 1=1 OR '1'='1"},
    ]
    ingest_conversations(store, [conversation(gid, nasty)], embedder)
    rows = store.read_text(
        "MATCH (m:Message {group_id: $g})-[:SOURCE]->(p:Person) "
        "RETURN m.id AS id, m.text AS text, p.id AS pid, p.name AS name ORDER BY m.turn_created",
        g=gid,
    )
    assert rows == [
        {"id": "m0000", "text": nasty[0]["text"], "pid": nasty[0]["speaker_id"], "name": nasty[0]["speaker"]},
        {"id": nasty[1]["id"], "text": nasty[1]["text"], "pid": "RETURN", "name": "RETURN"},
    ]


def test_search_text_holds_previous_turn_even_across_appends(store, embedder, group_id):
    ingest_conversations(store, [conversation(group_id, ROWS[:2])], embedder)
    ingest_conversations(store, [conversation(group_id, ROWS)], embedder)
    rows = store.read_text(
        "MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.search_text AS d ORDER BY m.turn_created",
        g=group_id,
    )
    doc = {r["id"]: r["d"] for r in rows}
    assert doc["m0000"] == "Ana: We meet at the harbour at nine."  # a session's first turn
    assert doc["m0001"] == "Ana: We meet at the harbour at nine.\nBo: I'll bring the boat keys."
    # the previous turn of m0002 was stored by the first ingest
    assert doc["m0002"] == "Bo: I'll bring the boat keys.\nCy: Count me out, I'm sick."
    assert doc["m0003"] == "Ana: Next week then: same place."  # new session


def test_forget_group_erases_one_group_only_and_twice_is_a_no_op(store, embedder, make_group):
    from graphmem.groups.service import forget_group

    gone, kept = make_group(), make_group()
    ingest_conversations(store, [conversation(gone, ROWS)], embedder)
    ingest_conversations(store, [conversation(kept, ROWS)], embedder)
    before = counts(store, kept)
    assert forget_group(store, gone) == 1 + 3 + 2 + 5  # Group, persons, sessions, messages
    assert counts(store, gone) == {}
    assert counts(store, kept) == before
    assert forget_group(store, gone) == 0


def test_forget_person_in_an_unknown_group_is_not_found_and_writes_nothing(store, embedder, make_group):
    """The library refuses an unknown group itself (as the CLI, API and MCP answer 404 /
    NotFoundError), checked inside the erasing transaction, instead of reporting zero counts."""
    from graphmem.core.errors import NotFoundError
    from graphmem.groups.service import forget_person

    kept, missing = make_group(), make_group()
    ingest_conversations(store, [conversation(kept, ROWS)], embedder)
    before = counts(store, kept)
    with pytest.raises(NotFoundError, match=missing):
        forget_person(store, missing, "Ana", settings=get_settings())
    assert counts(store, missing) == {}
    assert counts(store, kept) == before


def test_a_later_export_of_a_renamed_user_is_a_redelivery_not_another_speaker(store, embedder, group_id):
    """Slack, Discord and Telegram write the name of the export's day: a user renamed between two
    exports re-sends every old message under the new name. With a platform id the person is the
    id, so that is a redelivery (skipped; the message keeps the name it was stored with, the
    person takes the new one); the whole later export was refused before. Without an id the
    name is the identity, and another name is still another speaker."""
    from graphmem.core.errors import ConflictError

    first = [{"id": "t1", "speaker": "Zoë Ødegård", "speaker_id": "U04ZOE", "text": "I'll book the cabin"},
             {"id": "t2", "speaker": "Ben", "speaker_id": "U01BEN", "text": "great"}]
    ingest_conversations(store, [conversation(group_id, first)], embedder)
    later = [{**first[0], "speaker": "Zoë 🌸"}, first[1],
             {"id": "t3", "speaker": "Zoë 🌸", "speaker_id": "U04ZOE", "text": "booked!"}]
    s = ingest_conversations(store, [conversation(group_id, later)], embedder)
    assert (s.messages_written, s.messages_edited, s.messages_skipped) == (1, 0, 2)
    rows = store.read_text("MATCH (m:Message {group_id: $g})-[:SOURCE]->(p:Person) "
                           "RETURN m.id AS id, m.speaker AS speaker, p.id AS person, p.name AS name ORDER BY id",
                           g=group_id)
    assert rows == [{"id": "t1", "speaker": "Zoë Ødegård", "person": "U04ZOE", "name": "Zoë 🌸"},
                    {"id": "t2", "speaker": "Ben", "person": "U01BEN", "name": "Ben"},
                    {"id": "t3", "speaker": "Zoë 🌸", "person": "U04ZOE", "name": "Zoë 🌸"}]
    before = counts(store, group_id)
    by_name = [{"id": "t2", "speaker": "Benjamin", "text": "great"}]  # no id: the name is the person
    with pytest.raises(ConflictError, match="another speaker"):
        ingest_conversations(store, [conversation(group_id, by_name)], embedder)
    assert counts(store, group_id) == before


def test_an_export_written_in_another_utc_offset_is_the_same_message_on_its_stored_day(store, embedder, group_id):
    """Discord and Telegram Desktop write the exporting computer's local time, and the session
    is the local day: the same instant exported in New York falls on the day before. Same
    instant, another offset: a redelivery (skipped, or an edit when the text changed), kept in
    the session it was stored in, with no empty Session made for the other day; it was refused
    as 'stored with another session'. Another instant is still another message's time."""
    from graphmem.core.errors import ConflictError

    first = [{"id": "d1", "speaker": "Mei", "speaker_id": "u1", "text": "early bird",
              "ts": "2025-07-02T02:00:00+02:00", "session": "2025-07-02"},
             {"id": "d2", "speaker": "Ben", "speaker_id": "u2", "text": "morning",
              "ts": "2025-07-02T09:00:00+02:00", "session": "2025-07-02"}]
    ingest_conversations(store, [conversation(group_id, first)], embedder)
    before = counts(store, group_id)
    new_york = [{**first[0], "ts": "2025-07-01T20:00:00-04:00", "session": "2025-07-01"},
                {**first[1], "ts": "2025-07-02T03:00:00-04:00", "text": "morning all"}]
    s = ingest_conversations(store, [conversation(group_id, new_york)], embedder)
    assert (s.messages_written, s.messages_edited, s.messages_skipped) == (0, 1, 1)
    assert counts(store, group_id)["Session"] == before["Session"] == 1
    rows = store.read_text("MATCH (m:Message {group_id: $g})-[:IN_SESSION]->(s:Session) "
                           "RETURN m.id AS id, m.ts AS ts, s.id AS session, m.text AS text ORDER BY id", g=group_id)
    assert rows == [{"id": "d1", "ts": "2025-07-02T02:00:00+02:00", "session": "2025-07-02", "text": "early bird"},
                    {"id": "d2", "ts": "2025-07-02T09:00:00+02:00", "session": "2025-07-02", "text": "morning all"}]
    moved = [{**first[0], "ts": "2025-07-01T21:00:00-04:00", "session": "2025-07-01"}]  # an hour later
    with pytest.raises(ConflictError, match="another ts"):
        ingest_conversations(store, [conversation(group_id, moved)], embedder)
    same_offset = [{**first[0], "session": "2025-07-03"}]  # same time as written, another day: an error
    with pytest.raises(ConflictError, match="another session"):
        ingest_conversations(store, [conversation(group_id, same_offset)], embedder)


def test_the_same_message_twice_in_one_file_follows_the_rule_of_a_stored_message(store, embedder, make_group,
                                                                                  tmp_path):
    """The same id twice in one file with ts "2026-07-01T09:00:00" and "...T09:00:00+05:00" was
    refused ("appears again with another ts") while the two lines in two files, one after the
    other, are a redelivery (a time without offset and the same local time with one are one
    message); so was the same instant in another offset and its other day's session. One file
    now loads as the two files do. Found by a messy-input trial."""
    import json

    from loaders import load_conversations

    def load(gid: str, name: str, *lines: dict) -> object:
        path = tmp_path / name
        path.write_text("".join(json.dumps({"group": gid, "speaker": "Ok", "id": "m1", "text": "same", **x}) + "\n"
                                for x in lines), encoding="utf-8")
        return ingest_conversations(store, load_conversations(path, "jsonl"), embedder)

    twins = [({"session": "s", "ts": "2026-07-01T09:00:00"}, {"session": "s", "ts": "2026-07-01T09:00:00+05:00"}),
             ({"session": "2025-07-02", "ts": "2025-07-02T02:00:00+02:00"},
              {"session": "2025-07-01", "ts": "2025-07-01T20:00:00-04:00"})]
    for a, b in twins:
        one, two = make_group("one"), make_group("two")
        s = load(one, "one.jsonl", a, b)
        assert (s.messages_written, s.messages_edited, s.messages_skipped) == (1, 0, 1), (a, b)
        first, second = load(two, "a.jsonl", a), load(two, "b.jsonl", b)
        assert (first.messages_written, second.messages_skipped) == (1, 1)
        assert counts(store, one)["Message"] == counts(store, two)["Message"] == 1
        assert counts(store, one)["Session"] == counts(store, two)["Session"] == 1
    other = make_group("other")  # another instant is another ts, in one file as across files
    with pytest.raises(InvalidInputError, match="another ts") as e:
        load(other, "moved.jsonl", {"session": "s", "ts": "2026-07-01T09:00:00"},
             {"session": "s", "ts": "2026-07-01T10:00:00+05:00"})
    assert (e.value.record, e.value.field) == ("line 2", "ts")


def test_a_new_message_already_edited_never_takes_the_id_of_another_on_a_platform_with_ids(store, embedder, group_id):
    """The join of an edited message to the stored one it replaces is for formats without ids
    (WhatsApp, ``id_from_content``). On a platform with ids (Telegram: an album's messages share
    a second), a message first seen already edited is a new message, never an edit of another."""
    first = conversation(group_id, [{"id": "10", "speaker": "Mei", "speaker_id": "u1", "text": "photo 1",
                                     "ts": "2025-07-01T10:00:00+00:00"}])
    ingest_conversations(store, [first], embedder)
    later = conversation(group_id, [{"id": "11", "speaker": "Mei", "speaker_id": "u1", "text": "photo 2, fixed caption",
                                     "ts": "2025-07-01T10:00:00+00:00"}])
    later = later.model_copy(update={"messages": [later.messages[0].model_copy(update={"edited": True})]})
    s = ingest_conversations(store, [later], embedder)
    assert (s.messages_written, s.messages_edited) == (1, 0)
    rows = store.read_text("MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.text AS t ORDER BY id", g=group_id)
    assert rows == [{"id": "10", "t": "photo 1"}, {"id": "11", "t": "photo 2, fixed caption"}]
