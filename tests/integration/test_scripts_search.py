"""Every script searchable (issue 26 part 4): a word inside unspaced Chinese, Japanese, Korean
or Thai text is found by the library, the CLI, the HTTP API and the MCP tool, because the
fulltext index (``search_grams``) and the group-local BM25 cut such runs into the same character
bigrams; Latin, Cyrillic, Arabic and Hebrew analysis does not move; a store written before the
field existed gets it from ``schema apply``; NFD and NFC spellings of a name are one person."""

from __future__ import annotations

import json
import re
import unicodedata

import anyio
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.main import create_app
from graphmem.cli import app as cli
from graphmem.core.config import Settings
from graphmem.core.text import gram_field, gram_terms
from graphmem.recall import lexical
from graphmem.recall.search import search_group, search_terms
from graphmem.store.schema import apply_schema
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.verbatim.roster import find_persons, read_roster
from tests.factories import conversation

pytestmark = pytest.mark.neo4j

# one session per message: each fulltext document is then the message alone
CHAT = [
    ("zh", "Li", "我们的押金什么时候退"),
    ("zh2", "Wang", "下周一之前会退还给你"),
    ("ja", "Aoi", "明日は会議室を予約しました"),
    ("kana", "Ken", "毎朝コーヒーを飲みます"),
    ("ko", "Min", "보증금은언제돌려받나요"),
    ("th", "Som", "พรุ่งนี้เราจะไปตลาดน้ำกัน"),
    ("en", "Ann", "The deposit comes back on Monday"),
    ("ru", "Igor", "Залог вернут в понедельник"),
    ("ar", "Omar", "سنعيد التأمين يوم الاثنين"),
    ("he", "Dana", "הפיקדון יחזור ביום שני"),
]
#: query -> the one message that holds it (inside an unspaced sentence for the CJK and Thai ones)
FINDS = {"押金": "zh", "会議室": "ja", "コーヒー": "kana", "보증금": "ko", "ตลาดน้ำ": "th",
         "deposits": "en", "Залог": "ru", "التأمين": "ar", "הפיקדון": "he"}


def _ingest(store, embedder, gid: str) -> None:
    rows = [{"id": mid, "session": f"s{i}", "speaker": who, "text": text,
             "ts": f"2026-02-01T10:{i:02d}:00"} for i, (mid, who, text) in enumerate(CHAT)]
    ingest_conversations(store, [conversation(gid, rows)], embedder)


def _old_analyze(text: str) -> list[str]:
    """The analysis before grams existed (word tokens only): Latin, Cyrillic, Arabic and Hebrew
    must give exactly these terms still."""
    return [t for w in lexical._WORD.findall(text) for t in lexical._terms(w)]


def test_bigrams_are_the_same_on_both_sides() -> None:
    assert gram_terms("我们的押金") == ["我们", "们的", "的押", "押金"]
    assert gram_terms("ｺｰﾋｰ") == gram_terms("コーヒー")  # half-width katakana folded (NFKC)
    assert set(gram_terms("押金")) <= set(gram_terms("我们的押金什么时候退"))
    assert set(gram_terms("ตลาดน้ำ")) <= set(gram_terms("พรุ่งนี้เราจะไปตลาดน้ำกัน"))
    for text in ("The deposit comes back on Monday, Caroline's dogs", "Залог вернут в понедельник",
                 "سنعيد التأمين يوم الاثنين", "הפיקדון יחזור ביום שני"):
        assert lexical.analyze(text) == _old_analyze(text) and gram_field(text) is None
        assert "search_grams" not in search_terms(text)
    # the query's grams are spelt as the index holds them
    assert search_terms("押金 deposit") == "search_text:(deposit) search_grams:(g25276x37329)"
    assert lexical.analyze("押金 deposit") == ["deposit", "押金"]


def test_a_word_inside_unspaced_text_is_found_everywhere(store, embedder, group_id) -> None:
    _ingest(store, embedder, group_id)
    for q, want in FINDS.items():
        for mode in ("fulltext", "hybrid"):
            hits = search_group(store, embedder, group_id, q, k=3, mode=mode).hits
            assert hits and hits[0].id == want, (q, mode, [h.id for h in hits])
        ft = [h.id for h in search_group(store, embedder, group_id, q, k=10, mode="fulltext").hits]
        assert ft == [want], (q, ft)  # no other message shares the word's terms
    # a Chinese word that is in no message finds nothing by fulltext
    assert search_group(store, embedder, group_id, "咖啡馆", k=5, mode="fulltext").hits == []

    # the CLI and the HTTP API give the same hits
    runner = CliRunner()
    with TestClient(create_app(Settings(_env_file=None))) as client:
        for q, want in FINDS.items():
            res = runner.invoke(cli, ["search", "--group", group_id, q, "--mode", "fulltext", "--json"])
            assert res.exit_code == 0, res.output
            assert [h["id"] for h in json.loads(res.stdout)["hits"]] == [want], q
            r = client.get(f"/groups/{group_id}/search", params={"q": q, "mode": "fulltext"})
            assert r.status_code == 200, r.text
            assert [h["id"] for h in r.json()["hits"]] == [want], q

    # and the MCP tool
    pytest.importorskip("mcp")
    from tests.integration.test_mcp import agent, call

    async def session() -> None:
        async with agent() as c:
            for q, want in FINDS.items():
                out = await call(c, "search_messages", group_id=group_id, query=q, k=3)
                assert out["hits"][0]["id"] == want, (q, out["hits"])

    anyio.run(session)


def test_schema_apply_gives_older_messages_their_grams(store, embedder, group_id) -> None:
    _ingest(store, embedder, group_id)
    # a store written before search_grams existed (or by neo4j-admin import): no grams
    store.write_tx(lambda tx: tx.run(
        "MATCH (m:Message {group_id: $g}) REMOVE m.search_grams", g=group_id).consume())
    assert [h.id for h in search_group(store, embedder, group_id, "押金", k=5, mode="fulltext").hits] == []
    apply_schema(store, embedder.dimension)
    rows = store.read("recall/group_documents", group_id=group_id)
    assert len(rows) == len(CHAT)
    grams = {r["id"]: r["g"] for r in store.write_tx(lambda tx: tx.run(
        "MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.search_grams AS g", g=group_id).data())}
    assert grams["zh"] == gram_field("Li: 我们的押金什么时候退") and grams["en"] is None
    assert [h.id for h in search_group(store, embedder, group_id, "押金", k=5, mode="fulltext").hits] == ["zh"]


def test_nfd_and_nfc_spellings_of_a_name_are_one_person(store, embedder, group_id) -> None:
    nfc, nfd = "Jos\u00e9", "Jose\u0301"
    assert unicodedata.normalize("NFC", nfd) == nfc and nfc != nfd
    rows = [{"id": "a", "speaker": nfc, "text": "I will bring the map"},
            {"id": "b", "speaker": nfd, "text": "And the compass too"},
            {"id": "c", "speaker": "Ana", "text": "Thanks José"}]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    roster = read_roster(store, group_id)
    joses = [p for p in roster if p.id != "Ana"]
    assert len(joses) == 1, roster
    jose = joses[0]
    assert jose.id == nfc and set(jose.aliases) == {nfc, nfd} and jose.messages == 2
    # the stored texts keep their bytes as written
    got = {r["id"]: r["speaker"] for r in store.write_tx(lambda tx: tx.run(
        "MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.speaker AS speaker", g=group_id).data())}
    assert got == {"a": nfc, "b": nfd, "c": "Ana"}
    assert got["b"].encode() == b"Jose\xcc\x81"
    # a question written in NFD names the same person
    assert [pid for _, pid in find_persons(f"What did {nfd} bring?", roster)] == [nfc]
    assert re.search("José", "Thanks José")  # sanity of the literal above (NFC in this file)


def test_derived_records_in_unspaced_text_are_found(store, embedder, group_id, tmp_path) -> None:
    from graphmem.core.config import get_settings
    from graphmem.derived.writer import ReplayWriter, derive_group
    from graphmem.recall.search import record_terms

    rows = [{"id": "z1", "session": "s1", "speaker": "Li", "text": "我们的押金什么时候退"},
            {"id": "z2", "session": "s1", "speaker": "Wang", "text": "下周一之前会退还给你"}]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    actions = tmp_path / "actions.jsonl"
    actions.write_text(json.dumps({"session": "s1", "actions": [
        {"action": "ADD", "owner": "Li", "source": "Li", "layer": "per_speaker_core", "utype": "fact",
         "content": "李想知道押金什么时候退"},
        {"action": "ADD", "owner": "Wang", "source": "Wang", "layer": "per_speaker_core", "utype": "fact",
         "content": "王说下周一之前会退还"}]}, ensure_ascii=False) + "\n", encoding="utf-8")
    derive_group(store, group_id, model=ReplayWriter(actions), embedder=embedder, settings=get_settings())
    ids = ["e1.1", "e1.2"]
    assert record_terms("deposit back") == "deposit back"  # Latin: the query System 2 sent before
    assert record_terms("押金 deposit") == "deposit content_grams:(g25276x37329)"

    def found(q: str) -> list[str]:
        rows = store.read("query/fulltext_derived", query=record_terms(q), group_id=group_id, ids=ids, fetch=50, k=10)
        return [h["id"] for h in rows[0]["hits"]]

    assert found("押金") == ["e1.1"] and found("下周一") == ["e1.2"]
    # a store written before content_grams existed gets them from schema apply
    store.write_tx(lambda tx: tx.run("MATCH (d:Derived {group_id: $g}) REMOVE d.content_grams", g=group_id).consume())
    assert found("押金") == []
    apply_schema(store, embedder.dimension)
    assert found("押金") == ["e1.1"]


def test_schema_apply_migrates_the_old_fulltext_indexes(store, embedder, group_id) -> None:
    _ingest(store, embedder, group_id)
    old = {"message_text": "FOR (m:Message) ON EACH [m.search_text, m.group_key]",
           "derived_content": "FOR (d:Derived) ON EACH [d.content]"}
    for name, schema in old.items():  # the definitions before grams existed
        store.write("meta/drop_index", name=name)
        store.write_tx(lambda tx, n=name, s=schema: tx.run(
            f"CREATE FULLTEXT INDEX {n} {s} OPTIONS {{indexConfig: {{`fulltext.analyzer`: 'english'}}}}").consume())
    apply_schema(store, embedder.dimension)
    props = {r["name"]: list(r["properties"]) for r in store.read("meta/list_indexes") if r["name"] in old}
    assert props["message_text"] == ["search_text", "group_key", "search_grams"]
    assert props["derived_content"] == ["content", "content_grams"]
    assert [h.id for h in search_group(store, embedder, group_id, "押金", k=5, mode="fulltext").hits] == ["zh"]
    assert [h.id for h in search_group(store, embedder, group_id, "deposits", k=5, mode="fulltext").hits] == ["en"]
