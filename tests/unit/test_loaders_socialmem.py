"""SocialMemBench network loader on the 10 staged networks and on hand-made variants (no database)."""

from __future__ import annotations

import collections
import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

import loaders
from graphmem.core.errors import InvalidInputError
from loaders import socialmem

DATA = Path(os.environ.get("GRAPHMEM_TEST_DATA", "/work/shared/data"))
NETWORKS = DATA / "socialmembench" / "networks"
pytestmark = pytest.mark.skipif(not NETWORKS.is_dir(), reason=f"SocialMemBench networks not staged at {NETWORKS}")

EXPECTED = {  # network: (turns, questions), from SOURCE.md
    "grp_0d1e2f3a": (50, 6),
    "grp_1a2b3c4d": (101, 12),
    "grp_2b3c4d5e": (67, 10),
    "grp_3c4d5e6f": (61, 8),
    "grp_4d5e6f7a": (53, 9),
    "grp_5e6f7a8b": (50, 8),
    "grp_6f7a8b9c": (50, 7),
    "grp_7a8b9c0d": (50, 5),
    "grp_8b9c0d1e": (50, 6),
    "grp_9c0d1e2f": (50, 6),
}


def named(source: object, record: str, field: str) -> str:
    return f"file {re.escape(str(source))}, record {re.escape(record)}, field '{re.escape(field)}'"


@pytest.fixture(scope="module")
def convs() -> list[loaders.Conversation]:
    return loaders.load_conversations(NETWORKS, "socialmem")


@pytest.fixture(scope="module")
def questions() -> list[loaders.Question]:
    return loaders.load_questions(NETWORKS, "socialmem")


def raw_network(nid: str) -> dict[str, Any]:
    return json.loads((NETWORKS / f"social_{nid}.json").read_text(encoding="utf-8"))


def test_exact_counts(convs: list[loaders.Conversation], questions: list[loaders.Question]) -> None:
    assert {c.group_id: len(c.messages) for c in convs} == {k: v[0] for k, v in EXPECTED.items()}
    assert sum(len(c.messages) for c in convs) == 582
    assert len(questions) == 77
    assert dict(collections.Counter(q.group_id for q in questions)) == {k: v[1] for k, v in EXPECTED.items()}
    assert collections.Counter(q.category for q in questions) == {
        "Q8": 16,
        "Q1": 15,
        "Q5": 10,
        "Q7": 10,
        "Q4": 8,
        "Q6": 8,
        "Q3": 5,
        "Q2": 5,
    }
    assert collections.Counter(q.extra["answer_format"] for q in questions) == {
        "long_form": 46,
        "multiple_choice": 21,
        "short_answer": 10,
    }
    assert all(len({m.session for m in c.messages}) == 5 for c in convs)
    assert convs[0].name == "[socialmembench:grp_0d1e2f3a] real benchmark conversation"


def test_file_order_not_time_order(convs: list[loaders.Conversation]) -> None:
    conv = next(c for c in convs if c.group_id == "grp_7a8b9c0d")
    s02 = [m for m in conv.messages if m.session == "grp_7a8b9c0d_s02"]
    ids = [m.id for m in s02]
    t3, t4 = ids.index("grp_7a8b9c0d_s02_t003"), ids.index("grp_7a8b9c0d_s02_t004")
    assert t4 == t3 + 1
    assert s02[t3].ts == "2025-07-14T23:53:00" and s02[t4].ts == "2025-07-14T20:44:00"  # later ts first
    assert [m.turn for m in s02] == list(range(len(s02)))
    assert {m.session_index for m in s02} == {2}
    assert {m.session_ts for m in s02} == {raw_network("grp_7a8b9c0d")["sessions"][1]["ts"]}


def test_whole_order_matches_file(convs: list[loaders.Conversation]) -> None:
    for conv in convs:
        raw = raw_network(conv.group_id)
        expected = [(s["session_id"], t["turn"]) for s in raw["sessions"] for t in s["turns"]]
        assert [(m.session, m.id) for m in conv.messages] == expected
        turns = {t["turn"]: t for s in raw["sessions"] for t in s["turns"]}
        for m in conv.messages:
            t = turns[m.id]
            assert m.text == t["content"]  # exact, emoji ZWJ sequences included
            assert (m.speaker, m.speaker_id, m.reply_to) == (t["speaker"], t["speaker_id"], t["reply_to"])
            assert m.ts == t["ts"]


def test_odd_turn_id_kept(convs: list[loaders.Conversation]) -> None:
    conv = next(c for c in convs if c.group_id == "grp_2b3c4d5e")
    ids = [m.id for m in conv.messages]
    assert "grp_2b3c4d5e_s04_t009b" in ids
    assert ids[ids.index("grp_2b3c4d5e_s04_t009b") - 1] == "grp_2b3c4d5e_s04_t009"


def test_zwj_emoji_survive(convs: list[loaders.Conversation]) -> None:
    zwj = [m.text for c in convs for m in c.messages if "\u200d" in m.text]
    assert zwj, "the staged networks contain ZWJ emoji sequences"
    assert any("👨\u200d⚖️" in t or "🙋\u200d♀️" in t for t in zwj)


def test_reply_tree_and_roots(convs: list[loaders.Conversation]) -> None:
    for conv in convs:
        ids = {m.id for m in conv.messages}
        roots = [m for m in conv.messages if m.reply_to == ""]
        assert roots and conv.messages[0].reply_to == ""
        assert all(m.reply_to in ids for m in conv.messages if m.reply_to)


def test_same_first_name_in_separate_groups(convs: list[loaders.Conversation]) -> None:
    people: dict[str, set[tuple[str, str]]] = collections.defaultdict(set)
    for c in convs:
        for m in c.messages:
            people[m.speaker].add((c.group_id, m.speaker_id))
    priya = people["Priya"]
    assert {g for g, _ in priya} == {"grp_0d1e2f3a", "grp_1a2b3c4d"}
    assert len({pid for _, pid in priya}) == 2  # different persona ids
    for name in ("Marcus", "Jordan"):
        assert len({g for g, _ in people[name]}) == 2
    # within one network a display name maps to one speaker id
    for c in convs:
        by_name: dict[str, set[str]] = collections.defaultdict(set)
        for m in c.messages:
            by_name[m.speaker].add(m.speaker_id)
        assert all(len(v) == 1 for v in by_name.values())


def test_questions_mapping(questions: list[loaders.Question], convs: list[loaders.Conversation]) -> None:
    by_id = {q.id: q for q in questions}
    mc = by_id["grp_0d1e2f3a/Q4_c0s2c2"]
    assert mc.options == {"A": "Josh", "B": "Leon", "C": "Mei", "D": "Priya"}
    assert (mc.correct_option, mc.answer, mc.category) == ("C", "Mei", "Q4")
    assert "Options" not in mc.question
    prompt, gold = loaders.question_with_options(mc)
    assert prompt == mc.question + "\nOptions:\nA. Josh\nB. Leon\nC. Mei\nD. Priya"
    assert gold == "C. Mei"
    assert isinstance(mc.extra["rationale"], str) and mc.extra["rationale"]
    short = by_id["grp_6f7a8b9c/Q7_cf6s5c1"]
    assert (short.options, short.correct_option) == ({}, "")
    assert short.extra["canonical_answer"] == "Kwame and Dev have a deeper"
    assert short.answer.startswith("Kwame and Dev have a deeper bond than the other group pairings")
    long = by_id["grp_0d1e2f3a/Q1_c0s3c1"]
    assert (long.options, long.correct_option, long.extra["answer_format"]) == ({}, "", "long_form")
    assert long.evidence_ids == ["grp_0d1e2f3a_s03_t002", "grp_0d1e2f3a_s05_t001"]
    assert long.extra["qa_id"] == "Q1_c0s3c1"
    assert long.extra["difficulty"] == "medium"
    ids = {c.group_id: {m.id for m in c.messages} for c in convs}
    for q in questions:
        assert q.evidence_ids and set(q.evidence_ids) <= ids[q.group_id]
        assert "evidence_dropped" not in q.extra
        assert isinstance(q.extra["temporal_anchors"], list)
        if q.options:
            assert q.correct_option in q.options and q.answer == q.options[q.correct_option]
    assert sum(1 for q in questions if q.options) == 21


def test_single_file_and_group(tmp_path: Path) -> None:
    f = NETWORKS / "social_grp_3c4d5e6f.json"
    [c] = loaders.load_conversations(f, "socialmem")
    assert c.group_id == "grp_3c4d5e6f" and len(c.messages) == 61
    [c2] = loaders.load_conversations(NETWORKS, "socialmem", group="grp_3c4d5e6f")
    assert c2 == c
    assert len(loaders.load_questions(NETWORKS, "socialmem", group="grp_3c4d5e6f")) == 8
    with pytest.raises(InvalidInputError, match=named(NETWORKS, "grp_nope", "group")):
        loaders.load_conversations(NETWORKS, "socialmem", group="grp_nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidInputError, match=f"file {re.escape(str(empty))}, field 'path'"):
        loaders.load_conversations(empty, "socialmem")


# ---------------------------------------------------------------- bad input (hand-made variants)


def variant(tmp_path: Path, edit: Any, name: str = "social_grp_0d1e2f3a.json") -> Path:
    data = copy.deepcopy(raw_network("grp_0d1e2f3a"))
    edit(data)
    p = tmp_path / name
    p.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return p


def _turn(d: dict[str, Any], s: int = 0, t: int = 2) -> dict[str, Any]:
    return d["sessions"][s]["turns"][t]


@pytest.mark.parametrize(
    ("edit", "record", "field"),
    [
        (lambda d: _turn(d).pop("content"), "grp_0d1e2f3a_s01_t002", "content"),
        (lambda d: _turn(d).update(content=None), "grp_0d1e2f3a_s01_t002", "content"),
        (lambda d: _turn(d).pop("speaker"), "grp_0d1e2f3a_s01_t002", "speaker"),
        (lambda d: _turn(d).update(speaker=""), "grp_0d1e2f3a_s01_t002", "speaker"),
        (lambda d: _turn(d).update(ts="2025-10-06 late"), "grp_0d1e2f3a_s01_t002", "ts"),
        (lambda d: _turn(d).update(speaker_id=7), "grp_0d1e2f3a_s01_t002", "speaker_id"),
        # "" was read as "no id": a second person keyed by the display name
        (lambda d: _turn(d).update(speaker_id=""), "grp_0d1e2f3a_s01_t002", "speaker_id"),
        (lambda d: _turn(d).pop("turn"), "grp_0d1e2f3a_s01[2]", "turn"),
        (lambda d: _turn(d).update(turn="grp_0d1e2f3a_s01_t001"), "grp_0d1e2f3a_s01_t001", "id"),
        (lambda d: d["sessions"][1].update(session_index="2"), "grp_0d1e2f3a_s02", "session_index"),
        (lambda d: d["sessions"][1].update(ts="Monday"), "grp_0d1e2f3a_s02", "ts"),
        (lambda d: d["sessions"][1].pop("turns"), "grp_0d1e2f3a_s02", "turns"),
        (lambda d: d.update(sessions={}), "top level", "sessions"),
        (lambda d: (d.pop("meta"), d.update(scenario="no id here")), "meta", "meta.network_id"),
        (lambda d: d["meta"].update(network_id="grp_other"), "meta", "meta.network_id"),
    ],
)
def test_bad_network_input(tmp_path: Path, edit: Any, record: str, field: str) -> None:
    p = variant(tmp_path, edit)
    with pytest.raises(InvalidInputError, match=named(p, record, field)) as e:
        socialmem.load_conversations(p)
    assert (e.value.source, e.value.record, e.value.field) == (str(p), record, field)


@pytest.mark.parametrize(
    ("edit", "record", "field"),
    [
        (lambda d: d["qa_pairs"][0].pop("question"), "Q1_c0s3c1", "question"),
        (lambda d: d["qa_pairs"][0].update(answer=3), "Q1_c0s3c1", "answer"),
        (lambda d: d["qa_pairs"][0].pop("id"), "qa_pairs[0]", "id"),
        (lambda d: d["qa_pairs"][0].update(options=["no letter here"]), "Q1_c0s3c1", "options"),
        (lambda d: d["qa_pairs"][0].update(options=["A. x", "a) y"]), "Q1_c0s3c1", "options"),
        (lambda d: d["qa_pairs"][0].update(options=[{"A": "x"}]), "Q1_c0s3c1", "options"),
        (lambda d: d["qa_pairs"][0].update(options={"A": 1}), "Q1_c0s3c1", "options"),
        (lambda d: d["qa_pairs"][0].update(options=7), "Q1_c0s3c1", "options"),
        (lambda d: d["qa_pairs"][0].update(options="A. x"), "Q1_c0s3c1", "options"),
        (
            lambda d: d["qa_pairs"][0].update(evidence_anchors=[{"session_index": 1}]),
            "Q1_c0s3c1",
            "evidence_anchors.0.turn_id",
        ),
        (
            lambda d: next(q for q in d["qa_pairs"] if q["id"] == "Q4_c0s2c2").update(correct_option="E"),
            "Q4_c0s2c2",
            "correct_option",
        ),
        (lambda d: d["qa_pairs"].append(dict(d["qa_pairs"][0])), "Q1_c0s3c1", "id"),
    ],
)
def test_bad_question_input(tmp_path: Path, edit: Any, record: str, field: str) -> None:
    p = variant(tmp_path, edit)
    with pytest.raises(InvalidInputError, match=named(p, record, field)):
        socialmem.load_questions(p)


def test_network_id_from_scenario_and_duplicates(tmp_path: Path) -> None:
    p = variant(tmp_path, lambda d: d.pop("meta"))
    assert socialmem.load_conversations(p)[0].group_id == "grp_0d1e2f3a"
    variant(tmp_path, lambda d: None, name="social_copy.json")
    with pytest.raises(InvalidInputError, match="meta.network_id.*also in"):
        socialmem.load_conversations(tmp_path)


def test_dangling_evidence_dropped(tmp_path: Path) -> None:
    p = variant(tmp_path, lambda d: d["qa_pairs"][0]["evidence_anchors"].append({"turn_id": "grp_0d1e2f3a_s09_t000"}))
    q = socialmem.load_questions(p)[0]
    assert q.evidence_ids == ["grp_0d1e2f3a_s03_t002", "grp_0d1e2f3a_s05_t001"]
    assert q.extra["evidence_dropped"] == ["grp_0d1e2f3a_s09_t000"]


def _mc(d: dict[str, Any]) -> dict[str, Any]:
    return next(q for q in d["qa_pairs"] if q["id"] == "Q4_c0s2c2")


@pytest.mark.parametrize(
    "options",
    [
        ["A. Josh", "B. Leon", "C. Mei", "D. Priya"],  # lettered strings, as other networks give them
        ["(A) Josh", "B) Leon", "c: Mei", "D.Priya"],
        json.dumps({"A": "Josh", "B": "Leon", "C": "Mei", "D": "Priya"}),  # HF options_json column
        json.dumps(["A. Josh", "B. Leon", "C. Mei", "D. Priya"]),
    ],
)
def test_every_published_options_form_gives_the_same_question(tmp_path: Path, options: Any) -> None:
    (tmp_path / "other").mkdir()
    plain = {q.id: q for q in socialmem.load_questions(variant(tmp_path, lambda d: None))}
    edited = variant(tmp_path / "other", lambda d: _mc(d).update(options=options))
    other = {q.id: q for q in socialmem.load_questions(edited)}
    assert other == plain  # every question, the multiple-choice one included
    mc = other["grp_0d1e2f3a/Q4_c0s2c2"]
    assert loaders.question_with_options(mc)[1] == "C. Mei"
