"""The identity rule, NFC text matching and the MCP stdio refusal as pure functions (issue 27,
item 6); the integration tests are tests/integration/test_identity_spelling.py."""

from __future__ import annotations

import json

import pytest

from graphmem.core.limits import did_you_mean, identity_form, same_identity, speaker_key
from graphmem.core.model import MessageRecord
from graphmem.core.text import lucene_query, normalise_content, search_form
from graphmem.recall.lexical import analyze
from graphmem.verbatim.ingest import person_ids

NFC, NFD = "Zo\u00eb", "Zoe\u0308"


def test_identity_form_folds_unicode_form_case_and_spaces_but_not_invisible_characters():
    assert {identity_form(s) for s in (NFC, NFD, "zo\u00eb", " ZO\u00cb ", "Zoe\u0308\u00a0")} == {"zo\u00eb"}
    assert identity_form("Mary  Ann") == identity_form("mary ann")
    assert identity_form("Dad\u200b") != identity_form("Dad")  # an unseen character is another identity
    assert identity_form("Stra\u00dfe") == identity_form("STRASSE")  # full case folding


def test_speaker_key_keeps_case_and_the_first_spelling_names_the_person():
    assert speaker_key(" Zoe\u0308  Li ") == "Zo\u00eb Li"
    assert same_identity("zoe\u0308 ", [NFC, "Zed"]) == [NFC]
    assert same_identity(NFD, [NFC, NFD, "x"]) == [NFD, NFC]  # the exact id first
    assert same_identity("Dad", ["Dad\u200b"]) == []


def _m(speaker: str, speaker_id: str = "") -> MessageRecord:
    return MessageRecord(id="m", group_id="g", session="s", session_index=1, turn=0, speaker=speaker,
                         speaker_id=speaker_id, text="t",
                         ts="2026-01-01T00:00:00")


def test_person_ids_join_stored_persons_then_the_first_spelling():
    msgs = [_m("zo\u00eb "), _m(NFD), _m("Ana"), _m("ANA"), _m("Dad\u200b")]
    assert person_ids(msgs) == {"zo\u00eb": "zo\u00eb", NFC: "zo\u00eb", "Ana": "Ana", "ANA": "Ana",
                                "Dad\u200b": "Dad\u200b"}
    assert person_ids(msgs, stored=["Zo\u00eb ", "ana"])[NFC] == "Zo\u00eb "  # an older store's spelling
    assert person_ids(msgs, stored=["Zo\u00eb ", "ana"])["Ana"] == "ana"
    # a speaker_id of the input is a person a display name may join; the key itself wins when taken
    assert person_ids([_m("ben"), _m("Ben", speaker_id="ben")]) == {"ben": "ben"}
    assert person_ids([_m("Ben"), _m("x", speaker_id="ben")]) == {"Ben": "ben"}
    assert person_ids([_m(NFC)], stored=[NFC, NFD]) == {NFC: NFC}


def test_did_you_mean_leaves_accents_out():
    assert did_you_mean("Zoe", [(NFC, NFC), ("Ann", "Ann")]) == f"; did you mean {NFC!r}?"
    assert did_you_mean("Quentin", [(NFC, NFC)]) == ""


def test_text_is_searched_in_nfc():
    assert search_form("cafe\u0301") == "caf\u00e9"
    assert lucene_query("Zu\u0308rich cafe\u0301") == lucene_query("Z\u00fcrich caf\u00e9") == "z\u00fcrich caf\u00e9"
    assert analyze("Zu\u0308rich") == analyze("Z\u00fcrich") == ["z\u00fcrich"]
    assert normalise_content("the cafe\u0301 in Zu\u0308rich") == normalise_content("The caf\u00e9 in Z\u00fcrich")


def test_the_stdio_refusal_names_the_argument():
    pytest.importorskip("mcp")
    from graphmem.mcp_stdio import refusal

    line = ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"append_messages","arguments":'
            '{"group_id":"g","messages":[{"text":"ok"},{"text":"a\\ud83d"}]}}}')
    out = refusal(line)
    assert out is not None and out.id == 7
    text = out.result["content"][0]["text"]  # type: ignore[union-attr]
    assert text.startswith("argument 'messages.1.text': lone UTF-16 surrogate U+D83D at character 1")
    assert refusal(line.replace("\\ud83d", "\\ud83d\\ude00")) is None  # a whole pair is text
    assert refusal('{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"\\ud800"}}') is None  # no id
    bad = refusal("not json \\ud800")  # no JSON: a parse error with id null (the SDK only logged it)
    assert bad is not None and bad.id is None and bad.error.code == -32700  # type: ignore[union-attr]
    err = refusal('{"jsonrpc":"2.0","id":"r1","method":"prompts/get","params":{"name":"\\udc00"}}')
    assert err is not None and err.error.code == -32602 and "params.name" in err.error.message  # type: ignore[union-attr]
    raw = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "ask", "arguments": {"question": "x"}}}).replace('"x"', '"x\udcff"')
    text = refusal(raw).result["content"][0]["text"]  # type: ignore[union-attr]
    assert text.startswith("argument 'question': byte 0xFF that is not UTF-8")


def test_confusable_form_puts_lookalikes_together_and_shown_id_tells_them_apart():
    """TR39 lookalikes share a confusable form (Cyrillic a, Greek capital Mu, fullwidth letters),
    other names keep theirs (accents are not lookalikes of the bare letter); shown_id escapes the
    lookalike characters only."""
    from graphmem.core.limits import confusable_form, display_form, shown_id

    assert confusable_form("D\u0430d") == confusable_form("Dad") == confusable_form(" DAD\u200b") == "dad"
    assert confusable_form("\u039com") == confusable_form("mom")
    assert confusable_form("Zo\u00eb") != confusable_form("Zoe") and confusable_form("Zoe\u0308") == "zo\u00eb"
    assert display_form("D\u0430d") != display_form("Dad")  # lookups stay apart
    assert shown_id("D\u0430d") == "D\\u0430d" and shown_id("Dad") == "Dad" and shown_id("Zo\u00eb") == "Zo\u00eb"
    assert shown_id("dad\u200b") == "dad\\u200b"
