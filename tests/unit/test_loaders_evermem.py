"""EverMemBench loader on hand-written fixtures in the Hugging Face layout (no database)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import loaders
from graphmem.core.errors import InvalidInputError
from loaders import evermem

FIXTURES = Path(__file__).parents[1] / "fixtures" / "evermem"
DIALOGUES = FIXTURES / "dialogues.jsonl"
QARS = FIXTURES / "qars.jsonl"


def named(source: object, record: str, field: str) -> str:
    return f"file {re.escape(str(source))}, record {re.escape(record)}, field '{re.escape(field)}'"


def test_one_conversation_per_topic() -> None:
    convs = evermem.load_conversations(DIALOGUES)
    assert [(c.group_id, len(c.messages)) for c in convs] == [("evermem-01", 12), ("evermem-02", 1)]
    assert evermem.load_conversations(FIXTURES) == convs  # folder form
    assert convs[0].name == "EverMemBench topic 01"


def test_channels_sessions_ids() -> None:
    c = evermem.load_conversations(DIALOGUES)[0]
    assert list(dict.fromkeys(m.channel for m in c.messages)) == ["Group 1", "Group 2", "Group 3"]
    g1 = [m for m in c.messages if m.channel == "Group 1"]
    assert [m.id for m in g1] == [
        "2025-01-09|Group 1|1",
        "2025-01-09|Group 1|2",
        "2025-01-09|Group 1|3",
        "2025-01-10|Group 1|1",
        "2025-01-10|Group 1|2",
        "2025-01-10|Group 1|3",
        "2025-01-10|Group 1|4",
        "2025-01-10|Group 1|5",
        "2025-01-10|Group 1|6",
    ]  # "2025-01-10 00:00:00" row date normalised; int message_index written in decimal
    assert [(m.session, m.session_index, m.turn) for m in g1[2:5]] == [
        ("Group 1/2025-01-09", 1, 2),
        ("Group 1/2025-01-10", 2, 0),
        ("Group 1/2025-01-10", 2, 1),
    ]
    m = g1[0]
    assert (m.speaker, m.speaker_id, m.ts, m.reply_to) == ("Weihua Zhang", "", "2025-01-09T09:32:15", "")
    assert m.session_ts == "2025-01-09T09:32:15"
    assert g1[1].text == "收到，我下午看一下 👍"
    g2 = [m for m in c.messages if m.channel == "Group 2"]
    assert [(m.session, m.session_index, m.turn) for m in g2] == [
        ("Group 2/2025-01-09", 1, 0),
        ("Group 2/2025-01-09", 1, 1),
    ]


def test_time_order_within_channel(tmp_path: Path) -> None:
    row = {
        "topic_id": "07",
        "date": "2025-03-01",
        "dialogues": {
            "Group 1": [
                {"speaker": "A B", "time": "2025-03-01 10:00:00", "dialogue": "second", "message_index": "2"},
                {"speaker": "C D", "time": "2025-03-01 09:00:00", "dialogue": "first", "message_index": "1"},
            ]
        },
    }
    p = tmp_path / "dialogues.jsonl"
    p.write_text(json.dumps(row) + "\n", encoding="utf-8")
    [c] = evermem.load_conversations(p)
    assert [(m.text, m.turn) for m in c.messages] == [("first", 0), ("second", 1)]


def test_questions() -> None:
    qs = loaders.load_questions(QARS, "evermem")
    assert loaders.load_questions(FIXTURES, "evermem") == qs
    by_id = {q.id: q for q in qs}
    assert list(by_id) == [
        "evermem-01/F_SH_Top01_001",
        "evermem-01/MA_C_Top01_002",
        "evermem-01/F_SH_Top01_003",
        "evermem-02/P_G_Top02_001",
    ]
    q1 = by_id["evermem-01/F_SH_Top01_001"]
    assert (q1.answer, q1.category, q1.options, q1.correct_option) == ("65%", "open_ended", {}, "")
    assert q1.evidence_ids == ["2025-01-09|Group 1|1"]  # R date "2025-01-09 00:00:00"
    assert (q1.extra["qa_id"], q1.extra["task_code"]) == ("F_SH_Top01_001", "F_SH")
    mc = by_id["evermem-01/MA_C_Top01_002"]
    assert (mc.category, mc.correct_option, mc.answer) == ("multiple_choice", "D", "Friday")
    assert loaders.question_with_options(mc)[1] == "D. Friday"
    assert mc.evidence_ids == ["2025-01-09|Group 1|1", "2025-01-09|Group 1|2", "2025-01-09|Group 1|3"]  # "1-3"
    q3 = by_id["evermem-01/F_SH_Top01_003"]
    assert q3.evidence_ids == ["2025-01-10|Group 1|2", "2025-01-10|Group 1|3", "2025-01-10|Group 1|6"]  # "2-3, 6-7"
    assert q3.extra["evidence_dropped"] == ["2025-01-10|Group 1|7", "2025-01-10|Group 2|1"]
    assert q3.extra["evidence_raw"][0]["message_index"] == "2-3, 6-7"
    q4 = by_id["evermem-02/P_G_Top02_001"]
    assert (q4.group_id, q4.answer, q4.evidence_ids) == ("evermem-02", "42", [])
    ids = {c.group_id: {m.id for m in c.messages} for c in evermem.load_conversations(DIALOGUES)}
    assert all(set(q.evidence_ids) <= ids[q.group_id] for q in qs)


def test_group_filter() -> None:
    assert [q.id for q in evermem.load_questions(QARS, group="02")] == ["evermem-02/P_G_Top02_001"]
    assert len(evermem.load_questions(QARS, group="evermem-01")) == 3
    with pytest.raises(InvalidInputError, match=named(QARS, "evermem-09", "group")):
        evermem.load_questions(QARS, group="evermem-09")
    with pytest.raises(InvalidInputError, match=named(DIALOGUES, "09", "group")):
        evermem.load_conversations(DIALOGUES, group="09")


@pytest.mark.parametrize(
    ("value", "available", "matched", "missing"),
    [
        ("4", ["1", "2", "3", "4"], ["4"], []),
        (4, ["1", "4"], ["4"], []),
        ("04", ["1", "4"], ["4"], []),
        ("1-6", ["1", "2", "3", "4", "5", "6", "7"], ["1", "2", "3", "4", "5", "6"], []),
        ("2-3, 6-7", ["1", "2", "3", "4", "5", "6"], ["2", "3", "6"], ["7"]),
        ("3-1", ["1", "2", "3"], ["1", "2", "3"], []),
        ("9", ["1"], [], ["9"]),
        ("8-9", ["1"], [], ["8-9"]),
        ("1-999999999", ["1", "2"], ["1", "2"], ["1-999999999"]),
        ("x", ["1"], [], ["x"]),
    ],
)
def test_expand_message_index(value: Any, available: list[str], matched: list[str], missing: list[str] | None) -> None:
    got_matched, got_missing = evermem.expand_message_index(value, available)
    assert got_matched == matched
    if missing is not None:
        assert got_missing == missing


def test_questions_need_dialogues(tmp_path: Path) -> None:
    q = tmp_path / "qars.jsonl"
    shutil.copy(QARS, q)
    with pytest.raises(InvalidInputError, match=f"file {re.escape(str(q))}, field 'dialogues'"):
        evermem.load_questions(q)
    assert len(evermem.load_questions(q, dialogues=DIALOGUES)) == 4


def write(tmp_path: Path, name: str, *rows: Any) -> Path:
    p = tmp_path / name
    p.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8"
    )
    return p


def day(**msg: Any) -> dict[str, Any]:
    m = {"speaker": "A B", "time": "2025-01-09 09:00:00", "dialogue": "x", "message_index": "1"}
    m.update(msg)
    return {
        "topic_id": "01",
        "date": "2025-01-09",
        "dialogues": {"Group 1": [{k: v for k, v in m.items() if v is not ...}]},
    }


@pytest.mark.parametrize(
    ("row", "record", "field"),
    [
        (day(speaker=...), "line 2 Group 1[0]", "dialogues.Group 1.0.speaker"),
        (day(dialogue=...), "line 2 Group 1[0]", "dialogues.Group 1.0.dialogue"),
        (day(dialogue=None), "line 2 Group 1[0]", "dialogues.Group 1.0.dialogue"),
        (day(time="9am"), "line 2 Group 1[0]", "dialogues.Group 1.0.time"),
        (day(message_index=[1]), "line 2 Group 1[0]", "dialogues.Group 1.0.message_index"),
        (day(message_index="2"), "line 2", "id"),
        ({"topic_id": "01", "dialogues": {}}, "line 2", "date"),
        ({"topic_id": "01", "date": "Jan 9", "dialogues": {}}, "line 2", "date"),
        ({"date": "2025-01-09", "dialogues": {}}, "line 2", "topic_id"),
        ({"topic_id": "01", "date": "2025-01-09", "dialogues": []}, "line 2", "dialogues"),
        ("{not json", "line 2", "json"),
    ],
)
def test_bad_dialogue_input(tmp_path: Path, row: Any, record: str, field: str) -> None:
    p = write(tmp_path, "dialogues.jsonl", day(message_index="2", dialogue="first row"), row)
    with pytest.raises(InvalidInputError, match=named(p, record, field)) as e:
        evermem.load_conversations(p)
    assert (e.value.source, e.value.record, e.value.field) == (str(p), record, field)


def qa(**kw: Any) -> dict[str, Any]:
    q: dict[str, Any] = {"topic_id": "01", "id": "F_SH_Top01_009", "Q": "q?", "A": "a", "R": [], "options": None}
    q.update(kw)
    return {k: v for k, v in q.items() if v is not ...}


@pytest.mark.parametrize(
    ("row", "field"),
    [
        (qa(Q=...), "Q"),
        (qa(A=...), "A"),
        (qa(A=None), "A"),
        (qa(id=...), "id"),
        (qa(options={"A": "x", "B": "y"}, A="C"), "A"),
        (qa(options=["x"]), "options"),
        (qa(options=["A. x", "A. y"]), "options"),
        (qa(options={"A": 3}), "options"),
        (qa(options=5), "options"),
        (qa(R=[{"date": "2025-01-09", "group": "Group 1"}]), "R.0.message_index"),
        (qa(R=[{"date": "soon", "group": "Group 1", "message_index": "1"}]), "R.0.date"),
        (qa(id="F_SH_Top01_001"), "id"),
    ],
)
def test_bad_question_input(tmp_path: Path, row: Any, field: str) -> None:
    shutil.copy(DIALOGUES, tmp_path / "dialogues.jsonl")
    p = write(tmp_path, "qars.jsonl", json.loads(QARS.read_text(encoding="utf-8").splitlines()[0]), row)
    with pytest.raises(InvalidInputError, match=named(p, "line 2", field)):
        evermem.load_questions(p)


def test_mc_letter_variants(tmp_path: Path) -> None:
    shutil.copy(DIALOGUES, tmp_path / "dialogues.jsonl")
    opts = {"A": "Monday", "B": "Tuesday"}
    p = write(
        tmp_path,
        "qars.jsonl",
        qa(id="x_Top01_1", A="B. Tuesday", options=opts),
        qa(id="x_Top01_2", A="(a)", options=opts),
    )
    assert [(q.correct_option, q.answer) for q in evermem.load_questions(p)] == [("B", "Tuesday"), ("A", "Monday")]


def test_options_as_lettered_list_or_json_string(tmp_path: Path) -> None:
    shutil.copy(DIALOGUES, tmp_path / "dialogues.jsonl")
    p = write(
        tmp_path,
        "qars.jsonl",
        qa(id="x_Top01_1", A="B", options=["A. Monday", "B. Tuesday"]),  # legacy question files
        qa(id="x_Top01_2", A="A", options=json.dumps({"A": "Monday", "B": "Tuesday"})),
        qa(id="x_Top01_3", A="open", options=[]),
    )
    got = [(q.category, q.options, q.correct_option, q.answer) for q in evermem.load_questions(p)]
    assert got == [
        ("multiple_choice", {"A": "Monday", "B": "Tuesday"}, "B", "Tuesday"),
        ("multiple_choice", {"A": "Monday", "B": "Tuesday"}, "A", "Monday"),
        ("open_ended", {}, "", "open"),
    ]


# ----------------------------------------------------------------------------- GitHub evaluation layout

BATCH_DIALOGUE = {"dialogues": {
    "2025-01-09": {
        "Group 1": [{"speaker": "Wei Zhang", "time": "2025-01-09 09:32:15", "dialogue": "Standup at ten."},
                    {"speaker": "Li Na", "time": "2025-01-09 09:33:00", "text": "OK, see you."}],
        "Group 2": [{"speaker": "Li Na", "time": "2025-01-09 11:00:00", "dialogue": "Budget is 65%.",
                     "message_index": "7"}],
    },
    "2025-01-10": {"Group 1": [{"speaker": "Wei Zhang", "time": "2025-01-10 08:00:00", "dialogue": "Friday release."}]},
}}
QARS_FORM = {"qars": [
    {"id": "F_SH_Top004_001", "Q": "When is the release?", "A": "B", "task_id": "T1",
     "options": {"A": "Monday", "B": "Friday"}},
    {"id": "F_SH_Top004_002", "Q": "What is the budget?", "A": "65%", "task_id": "T2", "options": None},
]}
LEGACY_FORM = {"questions": [
    {"question_id": "004_mc_001", "question": "When is the release?", "options": ["A. Monday", "B. Friday"],
     "correct_option": "B", "answer": "Friday"},
    {"question_id": "004_mc_002", "question": "When is standup?", "options": ["A. At ten", "B. At noon"],
     "answer": "At ten"},
    {"question_id": "004_oe_001", "question": "What is the budget?", "answer": "65%"},
]}


def batch(tmp_path: Path, dialogue: Any = BATCH_DIALOGUE, qa: Any = QARS_FORM, name: str = "dialogue_en.json") -> Path:
    folder = tmp_path / "dataset" / "004"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(dialogue, ensure_ascii=False), encoding="utf-8")
    (folder / "qa_004.json").write_text(json.dumps(qa, ensure_ascii=False), encoding="utf-8")
    return folder


def test_evaluation_layout_conversations(tmp_path: Path) -> None:
    from graphmem.verbatim.ingest import validate

    folder = batch(tmp_path)
    for path in (folder, folder.parent, folder / "dialogue_en.json"):
        (conv,) = loaders.load_conversations(path, "evermem")
        assert conv.group_id == "evermem-004"
        got = [(m.id, m.channel, m.session, m.turn, m.text) for m in conv.messages]
        assert got == [
            ("2025-01-09|Group 1|1", "Group 1", "Group 1/2025-01-09", 0, "Standup at ten."),
            ("2025-01-09|Group 1|2", "Group 1", "Group 1/2025-01-09", 1, "OK, see you."),
            ("2025-01-10|Group 1|1", "Group 1", "Group 1/2025-01-10", 0, "Friday release."),
            ("2025-01-09|Group 2|7", "Group 2", "Group 2/2025-01-09", 0, "Budget is 65%."),
        ]
        validate(conv)  # the library's input rules hold for what the loader produced
    assert loaders.load_conversations(folder.parent, "evermem", group="004")[0].group_id == "evermem-004"
    with pytest.raises(InvalidInputError, match="field 'group'"):
        loaders.load_conversations(folder.parent, "evermem", group="005")


@pytest.mark.parametrize("qa", [QARS_FORM, LEGACY_FORM, LEGACY_FORM["questions"]], ids=["qars", "legacy", "bare-list"])
def test_evaluation_layout_questions(tmp_path: Path, qa: Any) -> None:
    folder = batch(tmp_path, qa=qa)
    questions = loaders.load_questions(folder, "evermem")
    assert questions == loaders.load_questions(folder / "qa_004.json", "evermem")
    mc = questions[0]
    assert (mc.group_id, mc.category, mc.options, mc.correct_option, mc.answer) == (
        "evermem-004", "multiple_choice", {"A": "Monday", "B": "Friday"}, "B", "Friday")
    assert loaders.question_with_options(mc)[1] == "B. Friday"
    opens = [q for q in questions if q.category == "open_ended"]
    assert [(q.answer, q.options, q.evidence_ids) for q in opens] == [("65%", {}, [])]
    if qa is not QARS_FORM:
        assert (questions[1].correct_option, questions[1].answer) == ("A", "At ten")  # answer given as text


@pytest.mark.parametrize(
    ("dialogue", "qa", "record", "field"),
    [
        ({"days": {}}, QARS_FORM, "top level", "dialogues"),
        ({"dialogues": {"2025-01-09": {"Group 1": [{"time": "2025-01-09 09:00:00", "dialogue": "x"}]}}}, QARS_FORM,
         "dialogues.2025-01-09.Group 1[0]", "dialogues.2025-01-09.Group 1.0.speaker"),
        ({"dialogues": {"2025-01-09": {"Group 1": [{"speaker": "A", "time": "2025-01-09 09:00:00"}]}}}, QARS_FORM,
         "dialogues.2025-01-09.Group 1[0]", "dialogues.2025-01-09.Group 1.0.dialogue"),
        ({"dialogues": {"2025-01-09": {"Group 1": [{"speaker": "A", "time": "soon", "dialogue": "x"}]}}}, QARS_FORM,
         "dialogues.2025-01-09.Group 1[0]", "dialogues.2025-01-09.Group 1.0.time"),
        ({"dialogues": {"someday": {}}}, QARS_FORM, "dialogues.someday", "dialogues"),
    ],
)
def test_evaluation_layout_bad_dialogue(tmp_path: Path, dialogue: Any, qa: Any, record: str, field: str) -> None:
    folder = batch(tmp_path, dialogue=dialogue, qa=qa)
    with pytest.raises(InvalidInputError) as e:
        loaders.load_conversations(folder, "evermem")
    assert (e.value.record, e.value.field) == (record, field)


@pytest.mark.parametrize(
    ("qa", "record", "field"),
    [
        ({"items": []}, "top level", "qars"),
        ({"qars": [{"id": "x", "A": "B"}]}, "qars[0]", "Q"),
        ({"qars": [{"id": "x", "Q": "q?", "A": "C", "options": {"A": "a", "B": "b"}}]}, "qars[0]", "A"),
        ({"qars": [{"id": "x", "Q": "q?", "A": "A", "options": ["a", "b"]}]}, "qars[0]", "options"),
        ({"questions": [{"question_id": "x", "question": "q?", "answer": "zz", "options": ["A. a"]}]},
         "questions[0]", "correct_option"),
        ({"questions": [{"question_id": "x", "question": "q?", "answer": "a"},
                        {"question_id": "x", "question": "q2?", "answer": "b"}]}, "questions[1]", "question_id"),
    ],
)
def test_evaluation_layout_bad_questions(tmp_path: Path, qa: Any, record: str, field: str) -> None:
    folder = batch(tmp_path, qa=qa)
    with pytest.raises(InvalidInputError) as e:
        loaders.load_questions(folder, "evermem")
    assert (e.value.record, e.value.field) == (record, field)
