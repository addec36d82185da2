"""Erasure that erases (issue 24, point 9): a person's words leave records others are the source
of, and the first-load importer's CSV copy of their messages goes too.

Through the library (:func:`graphmem.groups.forget_person`) and the HTTP API (``DELETE
/groups/{g}/persons/{p}``), against the real Neo4j; the importer test runs the real
``neo4j-admin`` import into a server home of its own (never the test server).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.derived import memory
from graphmem.core.config import Settings
from graphmem.groups.service import forget_person, quoting_records
from graphmem.verbatim.ingest import ingest_conversations
from tests.test_query_fixtures import MemoryWriter, family_conversation, rec
from graphmem.core.config import get_settings

pytestmark = pytest.mark.neo4j

# Ben's messages in tests/test_query_fixtures.FAMILY: m01 "The ridge trail has far better views
# than the lake path.", m06 "I still prefer the ridge, honestly.", m14 "Okay, easy trail then,
# but I think the ridge is better."
BEN = {"m01", "m06", "m14"}


def write_records(store, embedder, gid: str) -> None:
    """Records about and by others that hold Ben's words, and some that do not."""
    ingest_conversations(store, [family_conversation(gid)], embedder)
    w = MemoryWriter(store, embedder, gid)
    G = memory.GROUP
    w.segment(
        ["m00", "m01", "m02", "m03", "m04", "m05"],
        # Cara's record quoting Ben word for word (its FROM is Cara's own message)
        rec("c-quote", "Cara", "Cara repeats that the ridge trail has far better views", ["m02"], utype="stance"),
        rec("m-knee", "Mom", "Mom's knee hurts, so she needs an easy walk", ["m00"]),
        rec("d-plan", "Dad", "Dad plans a barbecue after the walk", ["m03"]),
    )
    w.segment(
        ["m06", "m07", "m08", "m09", "m10", "m11"],
        # Dad's group decision written FROM Dad's and Ben's messages
        rec("g-trail", G, "The group takes the easy lake trail", ["m07", "m06"], source="Dad", utype="decision"),
        # a state of Dad's chain written partly from Ben's words, then a later state
        rec("d-plan-2", "Dad", "Dad plans a barbecue and a ridge detour", ["m03", "m06"], supersedes="d-plan"),
    )
    w.segment(
        ["m12", "m13", "m14", "m15"],
        rec("d-plan-3", "Dad", "Dad will grill burgers for everyone", ["m15"], supersedes="d-plan-2"),
        rec("m-picnic", "Mom", "Mom wants a picnic in the park", ["m13"]),
    )


def assert_no_word_of_ben(store, gid: str) -> None:
    left = {r["id"]: r["content"] for r in store.read_text(
        "MATCH (d:Derived {group_id: $g}) RETURN d.id AS id, d.content AS content", g=gid)}
    assert set(left) == {"m-knee", "d-plan", "m-picnic"}
    assert store.read_text(
        "MATCH (d:Derived {group_id: $g})-[:FROM]->(m:Message) WHERE m.id IN $ben RETURN d.id AS id",
        g=gid, ben=sorted(BEN)) == []
    for word in ("views", "ridge"):
        hits = store.read_text(
            "CALL db.index.fulltext.queryNodes('derived_content', $q) YIELD node WHERE node.group_id = $g "
            "RETURN collect(node.id) AS ids", q=word, g=gid)[0]["ids"]
        assert hits == [], word
    # Dad's chain lost the states carrying Ben's words and has its head back
    heads = {h.id: h for h in memory.current_heads(store, gid)}
    assert heads["d-plan"].state == "head"
    # no segment report still quotes an action written from Ben's words
    for s in memory.list_segments(store, gid):
        assert "ridge" not in str(s.report).lower(), s.id


def test_quoting_records_needs_a_run_of_their_words():
    texts = ["The ridge trail has far better views than the lake path.", "ok", "I still prefer the ridge, honestly."]
    records = [
        ("a", "Cara repeats that the RIDGE trail has far better views"),   # five words in a row
        ("b", "the ridge trail is steep"),                                   # three words only
        ("c", "Ben says: I still prefer the ridge, honestly"),              # a whole short message
        ("d", "and I want to go"),                                           # nothing of theirs
    ]
    assert quoting_records(texts, records) == ["a", "c"]
    # a run of function words is nobody's words
    assert quoting_records(["and then we were there, you know"], [("x", "so and then we were there")]) == []


def test_library_forget_removes_their_words_from_records_others_are_the_source_of(store, embedder, group_id):
    write_records(store, embedder, group_id)
    out = forget_person(store, group_id, "Ben", settings=get_settings())
    assert out.messages_deleted == 3 and out.person_deleted
    # g-trail (Dad's, FROM Ben's m06), d-plan-2 (FROM m06) and its later state d-plan-3, c-quote (quotes m01)
    assert out.record_ids == ["c-quote", "d-plan-2", "d-plan-3", "g-trail"]
    assert (out.records_deleted, out.records_with_their_words, out.chains_repaired) == (4, 4, 1)
    assert out.segments_redacted == 3 and out.import_files_removed == []
    assert_no_word_of_ben(store, group_id)

    again = forget_person(store, group_id, "Ben", settings=get_settings())  # idempotent: nothing left to touch
    assert (again.messages_deleted, again.records_deleted, again.records_with_their_words, again.record_ids,
            again.segments_redacted, again.import_files_removed, again.person_deleted) == (0, 0, 0, [], 0, [], False)
    assert_no_word_of_ben(store, group_id)


def imported_settings(tmp_path: Path) -> Settings:
    """Settings of a home of its own for the importer (the test server's jars, when assembled),
    still reaching the test server (whose password lives in its own home)."""
    from graphmem.store.local_server import LocalServer

    server = Settings(_env_file=None)
    settings = Settings(_env_file=None, home=tmp_path / "gm", neo4j_heap_mb=256, neo4j_pagecache_mb=64,
                        neo4j_password=server.neo4j_password)
    assembled = LocalServer(Settings(_env_file=None))
    if assembled.assembled():
        settings.neo4j_home.mkdir(parents=True)
        (settings.neo4j_home / "lib").symlink_to(assembled.lib, target_is_directory=True)
    return settings


def test_api_forget_clears_the_importers_csv_copy_and_lists_what_it_touched(store, embedder, group_id, tmp_path):
    from graphmem.verbatim.bulk_import import import_conversations
    from graphmem.verbatim.import_files import CSV_MANIFEST

    settings = imported_settings(tmp_path)
    folder = tmp_path / "csv"
    report = import_conversations(settings, [family_conversation(group_id)], folder)  # the real neo4j-admin run
    assert "IMPORT DONE" in report.tool_output
    written = sorted(str(p.resolve()) for p in folder.glob("*.csv"))
    with open(folder / "messages.csv", newline="", encoding="utf-8") as f:
        assert any("The ridge trail has far better views" in cell for row in csv.reader(f) for cell in row)
    manifest = settings.home / CSV_MANIFEST
    assert manifest.exists() and (manifest.stat().st_mode & 0o777) == 0o600
    write_records(store, embedder, group_id)  # the same group, in the test server

    with TestClient(create_app(settings)) as c:
        r = c.delete(f"/groups/{group_id}/persons/Ben")
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["record_ids"] == ["c-quote", "d-plan-2", "d-plan-3", "g-trail"]
        assert body["records_with_their_words"] == 4 and body["messages_deleted"] == 3
        # the five CSV files and neo4j-admin's report beside them
        assert body["import_files_removed"] == sorted([*written, str((folder / "import.report").resolve())])
        assert len(written) == 5 and not folder.exists()  # nothing else was in it
        assert_no_word_of_ben(store, group_id)
        again = c.delete(f"/groups/{group_id}/persons/Ben").json()
        assert (again["record_ids"], again["import_files_removed"], again["messages_deleted"]) == ([], [], 0)


def test_forget_leaves_another_groups_importer_files(store, embedder, make_group, tmp_path):
    from graphmem.verbatim.bulk_import import write_csv
    from graphmem.verbatim.import_files import record_csv_files

    mine, other = make_group(), make_group()
    settings = Settings(_env_file=None, home=tmp_path / "gm", neo4j_password=Settings(_env_file=None).neo4j_password)
    folder = tmp_path / "other-csv"
    write_csv([family_conversation(other)], folder)  # the importer's files of another group
    files = {k: [folder / f"{k}.csv"] for k in ("groups", "persons", "sessions", "messages", "rels")}
    record_csv_files(settings, folder, [other], files)
    ingest_conversations(store, [family_conversation(mine)], embedder)
    out = forget_person(store, mine, "Ben", settings=settings)
    assert out.messages_deleted == 3 and out.import_files_removed == []
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{k}.csv" for k in files)
