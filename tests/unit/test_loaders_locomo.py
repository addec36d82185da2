"""LoCoMo loader on the real ``locomo10.json`` and on small hand-written variants (no database)."""

from __future__ import annotations

import collections
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

import loaders
from graphmem.core.errors import InvalidInputError
from loaders import locomo

DATA = Path(os.environ.get("GRAPHMEM_TEST_DATA", "/work/shared/data"))
LOCOMO = DATA / "locomo" / "locomo10.json"
real = pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo data not staged at {LOCOMO}")


def named(source: object, record: str, field: str) -> str:
    return f"file {re.escape(str(source))}, record {re.escape(record)}, field '{re.escape(field)}'"


@pytest.fixture(scope="module")
def raw() -> list[dict[str, Any]]:
    return json.loads(LOCOMO.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def convs() -> list[loaders.Conversation]:
    return loaders.load_conversations(LOCOMO, "locomo")


@pytest.fixture(scope="module")
def questions() -> list[loaders.Question]:
    return loaders.load_questions(LOCOMO, "locomo")


@real
def test_exact_counts(convs: list[loaders.Conversation], questions: list[loaders.Question]) -> None:
    assert len(convs) == 10
    assert [c.group_id for c in convs] == [f"conv-{n}" for n in (26, 30, 41, 42, 43, 44, 47, 48, 49, 50)]
    assert sum(len(c.messages) for c in convs) == 5882
    assert sum(len({m.session for m in c.messages}) for c in convs) == 272
    assert len(questions) == 1986
    assert collections.Counter(q.category for q in questions) == {"1": 282, "2": 321, "3": 96, "4": 841, "5": 446}
    assert convs[0].name == "Caroline & Melanie"


@real
def test_sessions_sorted_numerically_dangling_dates_ignored(
    raw: list[dict[str, Any]], convs: list[loaders.Conversation]
) -> None:
    conv26 = convs[0]
    dt_keys = [k for k in raw[0]["conversation"] if k.endswith("_date_time")]
    assert len(dt_keys) == 35  # 16 dangling keys (sessions 20-35 have no list)
    sessions = list(dict.fromkeys(m.session for m in conv26.messages))
    assert sessions == [f"session_{n}" for n in range(1, 20)]
    assert sessions.index("session_10") == sessions.index("session_9") + 1
    first = {m.session: m for m in conv26.messages if m.turn == 0}
    assert first["session_1"].ts == "2023-05-08T13:56:00"  # "1:56 pm on 8 May, 2023"
    assert first["session_10"].session_index == 10
    assert first["session_10"].id == "D10:1"
    # turns within a session are file order and every turn carries its session's time
    for c in convs:
        for m in c.messages:
            assert m.ts == m.session_ts
            assert m.id.startswith(f"D{m.session_index}:")


@real
def test_text_exact_and_captions_appended(raw: list[dict[str, Any]], convs: list[loaders.Conversation]) -> None:
    n_captions = 0
    for sample, conv in zip(raw, convs, strict=True):
        turns = {}
        for value in sample["conversation"].values():
            if isinstance(value, list):
                for t in value:
                    turns[t["dia_id"]] = t
        assert [m.id for m in conv.messages] == sorted(turns, key=lambda d: tuple(int(x) for x in d[1:].split(":")))
        for m in conv.messages:
            t = turns[m.id]
            assert m.speaker == t["speaker"]
            if "blip_caption" in t:
                n_captions += 1
                assert m.text == f"{t['text']} [shares a photo: {t['blip_caption']}]"
            else:
                assert m.text == t["text"]  # byte-exact, trailing spaces included
    assert n_captions == 1226


@real
def test_int_answers_cast_to_str(raw: list[dict[str, Any]], questions: list[loaders.Question]) -> None:
    by_id = {q.id: q for q in questions}
    int_ids = [
        f"{s['sample_id']}/q{i}" for s in raw for i, qa in enumerate(s["qa"]) if isinstance(qa.get("answer"), int)
    ]
    assert len(int_ids) == 6
    assert by_id["conv-26/q1"].answer == "2022"
    assert by_id["conv-26/q40"].answer == "2"
    assert all(isinstance(by_id[i].answer, str) for i in int_ids)


@real
def test_adversarial_gold(questions: list[loaders.Question]) -> None:
    cat5 = [q for q in questions if q.category == "5"]
    assert len(cat5) == 446
    assert {q.answer for q in cat5} == {locomo.ABSTENTION_ANSWER}
    assert all(isinstance(q.extra["adversarial_answer"], str) for q in cat5)
    both = [q for q in cat5 if "original_answer" in q.extra]
    assert [q.id for q in both] == ["conv-26/q167", "conv-26/q178"]


@real
def test_evidence_cleaning(convs: list[loaders.Conversation], questions: list[loaders.Question]) -> None:
    by_id = {q.id: q for q in questions}
    q = by_id["conv-26/q37"]
    assert q.evidence_ids == ["D8:6", "D9:17"]
    assert q.extra["evidence_raw"] == ["D8:6; D9:17"]
    assert by_id["conv-49/q31"].evidence_ids == ["D9:1", "D4:4", "D4:6"]  # space-separated list
    assert by_id["conv-42/q88"].evidence_ids == ["D1:18", "D1:20"]
    assert by_id["conv-42/q88"].extra["evidence_dropped"] == ["D"]
    assert by_id["conv-43/q18"].extra["evidence_dropped"] == ["D:11:26"]
    assert "D10:19" not in by_id["conv-42/q58"].evidence_ids  # points to no turn
    assert by_id["conv-50/q69"].evidence_ids == []
    assert by_id["conv-50/q69"].extra["evidence_raw"] == ["D30:05"]
    assert by_id["conv-50/q5"].evidence_ids == ["D4:5", "D5:5"]  # duplicate collapsed
    ids = {c.group_id: {m.id for m in c.messages} for c in convs}
    for q in questions:
        assert set(q.evidence_ids) <= ids[q.group_id]
    dropped = [p for q in questions for p in q.extra.get("evidence_dropped", [])]
    assert sorted(dropped) == sorted(["D", "D:11:26", "D10:19", "D4:36", "D30:05"])
    assert sum(1 for q in questions if not q.extra["evidence_raw"]) == 4


@real
def test_group_selects_one_sample() -> None:
    [c] = loaders.load_conversations(LOCOMO, "locomo", group="conv-43")
    assert c.group_id == "conv-43" and {m.group_id for m in c.messages} == {"conv-43"}
    qs = loaders.load_questions(LOCOMO, "locomo", group="conv-43")
    assert qs and {q.group_id for q in qs} == {"conv-43"}
    with pytest.raises(InvalidInputError, match=named(LOCOMO, "conv-99", "group")):
        loaders.load_conversations(LOCOMO, "locomo", group="conv-99")


# ---------------------------------------------------------------- small hand-written files


def sample(**conv_over: Any) -> dict[str, Any]:
    conv: dict[str, Any] = {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_2_date_time": "12:05 am on 1 January, 2024",
        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "second"}],
        "session_10_date_time": "12:30 pm on 29 February, 2024",
        "session_10": [
            {"speaker": "Ann", "dia_id": "D10:1", "text": "tenth", "img_url": [], "blip_caption": "a photo of a cat"},
            {"speaker": "Bo", "dia_id": "D10:2", "text": "🐈\u200d⬛ ok "},
        ],
        "session_9_date_time": "9:00 AM on 5 Dec, 2023",
        "session_9": [{"speaker": "Ann", "dia_id": "D9:1", "text": "ninth"}],
        "session_11_date_time": "1:00 pm on 1 March, 2024",  # dangling
        "session_3": "not a list",  # ignored
    }
    conv.update(conv_over)
    return {
        "sample_id": "conv-x",
        "conversation": {k: v for k, v in conv.items() if v is not ...},
        "qa": [
            {"question": "When?", "answer": 2024, "evidence": ["D9:1; D10:2", "D10:3"], "category": 2},
            {"question": "Adv?", "adversarial_answer": "cats", "evidence": [], "category": 5},
        ],
    }


def dump(tmp_path: Path, data: Any, name: str = "locomo.json") -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return p


def test_small_file_order_times_and_captions(tmp_path: Path) -> None:
    p = dump(tmp_path, [sample()])
    [c] = locomo.load_conversations(p)
    assert [(m.id, m.session, m.session_index, m.turn) for m in c.messages] == [
        ("D2:1", "session_2", 1, 0),
        ("D9:1", "session_9", 2, 0),
        ("D10:1", "session_10", 3, 0),
        ("D10:2", "session_10", 3, 1),
    ]
    assert [m.ts for m in c.messages] == [
        "2024-01-01T00:05:00",
        "2023-12-05T09:00:00",
        "2024-02-29T12:30:00",
        "2024-02-29T12:30:00",
    ]
    assert c.messages[2].text == "tenth [shares a photo: a photo of a cat]"
    assert c.messages[3].text == "🐈\u200d⬛ ok "
    [q1, q2] = locomo.load_questions(p)
    assert (q1.id, q1.answer, q1.category, q1.evidence_ids) == ("conv-x/q0", "2024", "2", ["D9:1", "D10:2"])
    assert q1.extra["evidence_dropped"] == ["D10:3"]
    assert (q2.answer, q2.extra["adversarial_answer"]) == (locomo.ABSTENTION_ANSWER, "cats")


@pytest.mark.parametrize(
    ("data", "record", "field"),
    [
        ([sample(session_2=[{"dia_id": "D2:1", "text": "x"}])], "conv-x/D2:1", "speaker"),
        ([sample(session_2=[{"speaker": "Bo", "dia_id": "D2:1"}])], "conv-x/D2:1", "text"),
        ([sample(session_2=[{"speaker": "Bo", "dia_id": "D2:1", "text": None}])], "conv-x/D2:1", "text"),
        ([sample(session_2=[{"speaker": "Bo", "text": "x"}])], "conv-x/session_2[0]", "dia_id"),
        ([sample(session_2=["just text"])], "conv-x/session_2[0]", "json"),
        ([sample(session_9_date_time="sometime in May")], "conv-x", "session_9_date_time"),
        ([sample(session_9_date_time="13:00 pm on 5 May, 2023")], "conv-x", "session_9_date_time"),
        ([sample(session_9_date_time=...)], "conv-x", "session_9_date_time"),
        ([sample(session_10=[{"speaker": "A", "dia_id": "D2:1", "text": "dup"}])], "conv-x/session_10[0]", "id"),
        ([{"conversation": {}}], "sample 0", "sample_id"),
        ([{"sample_id": "conv-x", "conversation": []}], "conv-x", "conversation"),
        ({"sample_id": "conv-x"}, "top level", "json"),
    ],
)
def test_bad_conversation_input(tmp_path: Path, data: Any, record: str, field: str) -> None:
    p = dump(tmp_path, data)
    with pytest.raises(InvalidInputError, match=named(p, record, field)) as e:
        locomo.load_conversations(p)
    assert (e.value.source, e.value.record, e.value.field) == (str(p), record, field)


def test_malformed_json(tmp_path: Path) -> None:
    p = dump(tmp_path, '[{"sample_id": "conv-x",\n "conversation": {,}}]')
    with pytest.raises(InvalidInputError, match=named(p, "line 2 col 19", "json")):
        locomo.load_conversations(p)


@pytest.mark.parametrize(
    ("qa", "field"),
    [
        ({"answer": "x", "evidence": [], "category": 1}, "question"),
        ({"question": "q?", "evidence": [], "category": 1}, "answer"),
        ({"question": "q?", "answer": "x", "evidence": [], "category": "one"}, "category"),
        ({"question": "q?", "answer": "x", "evidence": "D1:1", "category": 1}, "evidence"),
        ({"question": "q?", "answer": ["x"], "evidence": [], "category": 1}, "answer"),
    ],
)
def test_bad_question_input(tmp_path: Path, qa: dict[str, Any], field: str) -> None:
    s = sample()
    s["qa"].append(qa)
    p = dump(tmp_path, [s])
    with pytest.raises(InvalidInputError, match=named(p, "conv-x/q2", field)):
        locomo.load_questions(p)


def test_parse_locomo_datetime() -> None:
    assert locomo.parse_locomo_datetime("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00"
    assert locomo.parse_locomo_datetime("12:00 pm on 1 June, 2023") == "2023-06-01T12:00:00"
    assert locomo.parse_locomo_datetime("12:59 am on 31 December, 2022") == "2022-12-31T00:59:00"
    with pytest.raises(InvalidInputError, match=named("f.json", "conv-1", "session_1_date_time")):
        locomo.parse_locomo_datetime(
            "1:56 pm on 31 June, 2023", source="f.json", record="conv-1", field="session_1_date_time"
        )
