"""The Neo4j Browser guide: every query in ``cypher/browser/`` runs on the sample chat with its
derived memory and returns the expected rows; the guide and the style file match the queries."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from graphmem.store.db import all_templates, cypher
from tests.conftest import delete_group
from tests.test_graphview_fixtures import HEADS, LINES, PEOPLE, RECORDS, build_trail, expected_talk, text_of

ROOT = Path(__file__).resolve().parents[2]
BROWSER = sorted(n for n in all_templates() if n.startswith("browser/"))


@pytest.fixture(scope="module")
def trail(store, embedder, schema):
    gid = f"test-browser-{uuid.uuid4().hex[:12]}"
    build_trail(store, embedder, gid)
    yield gid
    delete_group(store, gid)


# ------------------------------------------------------------------------------ no database
def test_every_browser_query_says_how_to_set_its_parameters():
    assert len(BROWSER) >= 8
    for name in BROWSER:
        text = cypher(name)
        head = "\n".join(line for line in text.splitlines() if line.startswith("//"))
        params = set(re.findall(r"\$(\w+)", text))
        assert "group_id" in params, name
        assert ":param" in head, f"{name}: no Browser :param line in its header"
        for p in params:  # every parameter is set by the :param/:params line of the header
            assert re.search(rf"(:param {p} =>|:params \{{[^}}]*\b{p}:)", head), f"{name}: ${p} has no :param usage"
        assert "Returns" in head, name


def test_guide_shows_every_query_and_the_style_file_captions():
    guide = (ROOT / "docs" / "browser.md").read_text(encoding="utf-8")
    for name in BROWSER:
        assert f"cypher/{name}.cypher" in guide, f"docs/browser.md does not show {name}"
        body = "\n".join(line for line in cypher(name).splitlines() if not line.startswith("//")).strip()
        assert body in guide, f"docs/browser.md shows an outdated copy of {name}"
    rules = parse_grass((ROOT / "docs" / "graphmem.grass").read_text(encoding="utf-8"))
    assert ":style" in guide and "graphmem.grass" in guide
    assert set(rules) >= {"node", "relationship", "node.Person", "node.Message", "node.Derived", "node.Group"}
    for selector, caption in (("node.Person", "'{name}'"), ("node.Message", "'{text}'"),
                              ("node.Derived", "'{content}'"), ("node.Group", "'{name}'")):
        assert rules[selector]["caption"] == caption, selector
    colours = {rules[f"node.{label}"]["color"] for label in ("Core", "Profile", "Interaction", "Insight")}
    assert len(colours) == 4 and all(re.fullmatch(r"#[0-9A-F]{6}", c) for c in colours)  # one per layer
    for label in ("Core", "Profile", "Interaction", "Insight"):
        assert f"`{label}`" in guide and rules[f"node.{label}"]["color"] in guide


def parse_grass(text: str) -> dict[str, dict[str, str]]:
    """Parse GraSS the way Neo4j Browser does: ``selector { key: value; ... }``, braces inside
    quotes are text, whitespace outside a rule is dropped (so a stray comment would corrupt the
    next selector, which the assertions above would catch)."""
    rules: dict[str, dict[str, str]] = {}
    keyword, props, in_props, in_string = "", "", False, False
    for c in text:
        if c in "'\"":
            in_string = not in_string
        elif c == "{" and not in_string:
            in_props = True
            continue
        elif c == "}" and not in_string:
            rules[keyword] = {
                k.strip(): v.strip() for k, _, v in (p.partition(":") for p in props.split(";")) if k.strip()
            }
            keyword, props, in_props = "", "", False
            continue
        if in_props:
            props += c
        elif not c.isspace():
            keyword += c
    assert not in_props and not in_string, "unbalanced GraSS"
    return rules


# ------------------------------------------------------------------------------ Neo4j
@pytest.mark.neo4j
def test_roster(store, trail):
    rows = store.read("browser/roster", group_id=trail)
    assert [r["name"] for r in rows] == ["Ben", "Cara", "Dad", "Mom"]
    by_id = {r["id"]: r for r in rows}
    sent = {pid: sum(1 for line in LINES if line["speaker_id"] == pid) for pid in PEOPLE}
    assert {pid: r["messages"] for pid, r in by_id.items()} == sent == {"ben": 6, "cara": 4, "dad": 5, "mom": 3}
    owned = {pid: sum(1 for h in HEADS if RECORDS[h][3] == pid) for pid in PEOPLE}
    sourced = {pid: sum(1 for h in HEADS if RECORDS[h][4] == pid) for pid in PEOPLE}
    assert {pid: r["records_owned"] for pid, r in by_id.items()} == owned == {"ben": 3, "cara": 3, "dad": 0, "mom": 3}
    assert {pid: r["records_sourced"] for pid, r in by_id.items()} == sourced
    assert by_id["cara"]["records_sourced"] == 4
    assert rows[0]["group"]["id"] == trail and rows[0]["person"]["name"] == "Ben"


@pytest.mark.neo4j
def test_who_talks_to_whom_and_talk_links_agree_with_the_file(store, trail):
    rows = store.read("browser/who_talks_to_whom", group_id=trail)
    got = {(r["from_id"], r["to_id"]): {"replies": r["replies"], "next": r["next"]} for r in rows}
    assert got == expected_talk()
    assert rows[0]["from_name"] == "Ben" and rows[0]["to_name"] == "Dad" and rows[0]["total"] == 4
    assert got[("cara", "mom")] == {"replies": 1, "next": 2}
    assert all(r["total"] == r["replies"] + r["next"] for r in rows)
    assert [r["total"] for r in rows] == sorted((r["total"] for r in rows), reverse=True)

    links = store.read("browser/talk_links", group_id=trail)
    assert len(links) == sum(v["replies"] + v["next"] for v in got.values()) == 19
    reply = [r for r in links if r["kind"] == "reply"]
    assert [(r["message_id"], r["from_id"], r["to_id"], r["target_id"]) for r in reply] == [
        ("s1-02", "cara", "mom", "s1-01"), ("s1-05", "ben", "cara", "s1-02"), ("s1-06", "cara", "ben", "s1-05"),
    ]
    cross = [r for r in links if r["message_id"] == "s2-01"]  # NEXT crosses the session boundary
    assert [(r["kind"], r["from_id"], r["to_id"], r["session"]) for r in cross] == [("next", "dad", "cara", "s2")]


@pytest.mark.neo4j
def test_person_records(store, trail):
    rows = store.read("browser/person_records", group_id=trail, person_id="ben")
    expected = [eid for eid, spec in RECORDS.items() if spec[3] == "ben"]
    assert [r["id"] for r in rows] == expected == ["e1.3", "e2.1", "e2.3", "e2.4", "e3.2"]
    by_id = {r["id"]: r for r in rows}
    assert [by_id[i]["state"] for i in expected] == ["superseded", "superseded", "head", "head", "head"]
    assert (by_id["e2.3"]["source_id"], by_id["e2.3"]["source_name"]) == ("cara", "Cara")
    assert by_id["e2.3"]["from_ids"] == ["s2-04"]
    assert [m["text"] for m in by_id["e2.3"]["messages"]] == [text_of("s2-04")]
    assert by_id["e1.3"]["owner"]["id"] == "ben" and by_id["e1.3"]["record"]["content"] == RECORDS["e1.3"][5]
    assert store.read("browser/person_records", group_id=trail, person_id="nobody") == []


@pytest.mark.neo4j
def test_cross_person_records(store, trail):
    rows = store.read("browser/cross_person_records", group_id=trail)
    assert [(r["id"], r["source_id"], r["owner_id"]) for r in rows] == [
        ("e1.2", "cara", "mom"), ("e1.5", "ben", "cara"), ("e2.3", "cara", "ben"),
    ]
    assert rows[1]["content"] == "Cara plans around everyone else and never says what she wants"
    assert rows[1]["from_ids"] == ["s1-05"] and rows[1]["messages"][0]["speaker"] == "Ben"
    assert all(r["layer"] == "per_speaker_profile" and r["state"] == "head" for r in rows)


@pytest.mark.neo4j
def test_group_decisions_and_norms(store, trail):
    rows = store.read("browser/group_decisions_norms", group_id=trail)
    assert [(r["id"], r["label"], r["utype"], r["source_name"], r["earlier_states"]) for r in rows] == [
        ("e2.5", "Insight", "fact", "Dad", 0),
        ("e3.1", "Interaction", "decision", "Dad", 1),
    ]
    assert rows[1]["from_ids"] == ["s3-01", "s3-05"] and rows[1]["group"]["id"] == trail
    assert "lake loop on Saturday" in rows[1]["content"]


@pytest.mark.neo4j
def test_record_chain_from_any_state(store, trail):
    for asked in ("e1.3", "e2.1", "e3.2"):
        rows = store.read("browser/record_chain", group_id=trail, record_id=asked)
        assert [(r["position"], r["id"], r["state"]) for r in rows] == [
            (0, "e1.3", "superseded"), (1, "e2.1", "superseded"), (2, "e3.2", "head"),
        ], asked
    assert [r["from_ids"] for r in rows] == [["s1-03"], ["s2-02"], ["s3-02"]]
    assert rows[2]["said"] == [f"Ben (2026-05-02T08:20:00+02:00): {text_of('s3-02')}"]
    assert all(r["owner_id"] == r["source_id"] == "ben" for r in rows)
    decision = store.read("browser/record_chain", group_id=trail, record_id="e3.1")
    assert [r["id"] for r in decision] == ["e1.4", "e3.1"] and decision[0]["owner_id"] == "GROUP"
    assert store.read("browser/record_chain", group_id=trail, record_id="nope") == []


@pytest.mark.neo4j
def test_session_messages_in_order(store, trail):
    rows = store.read("browser/session_messages", group_id=trail, session="s1")
    s1 = [line for line in LINES if line["session"] == "s1"]
    assert [r["id"] for r in rows] == [line["id"] for line in s1]
    assert [r["turn"] for r in rows] == list(range(len(s1)))
    assert [r["text"] for r in rows] == [line["text"] for line in s1]  # verbatim, emoji included
    assert [r["reply_to"] for r in rows] == ["", "s1-01", "", "", "s1-02", "s1-05"]
    assert rows[1]["person_id"] == "cara" and rows[1]["speaker_node"]["name"] == "Cara"


@pytest.mark.neo4j
def test_who_said_what_about_whom(store, trail):
    rows = store.read("browser/who_said_what_about_whom", group_id=trail)
    assert sorted(r["id"] for r in rows) == HEADS
    by_id = {r["id"]: r for r in rows}
    assert (by_id["e1.5"]["source_name"], by_id["e1.5"]["owner_name"]) == ("Ben", "Cara")
    assert by_id["e3.1"]["owner"]["id"] == trail  # GROUP records point at the Group node
