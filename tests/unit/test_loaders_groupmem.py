"""GroupMemBench loader: conversations on a hand-written fixture, questions on the staged Finance set."""

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
from loaders import groupmem

FIXTURE = Path(__file__).parents[1] / "fixtures" / "groupmem" / "synthetic_domain_channels_rolevariants_Finance.json"
DATA = Path(os.environ.get("GRAPHMEM_TEST_DATA", "/work/shared/data"))
QUESTIONS = DATA / "groupmembench" / "questions"
real = pytest.mark.skipif(
    not (QUESTIONS / "Finance").is_dir(), reason=f"GroupMemBench questions not staged at {QUESTIONS}"
)


def named(source: object, record: str, field: str) -> str:
    return f"file {re.escape(str(source))}, record {re.escape(record)}, field '{re.escape(field)}'"


def test_one_conversation_per_domain() -> None:
    [c] = groupmem.load_conversations(FIXTURE)
    assert (c.group_id, c.name, c.source) == ("Finance", "Finance", str(FIXTURE))
    assert groupmem.load_conversations(FIXTURE.parent) == [c]  # folder form
    assert len(c.messages) == 6
    assert {m.group_id for m in c.messages} == {"Finance"}


def test_channels_order_sessions() -> None:
    [c] = groupmem.load_conversations(FIXTURE)
    assert [(m.channel, m.id, m.session, m.session_index, m.turn) for m in c.messages] == [
        ("#treasury-ops", "Msg_1", "#treasury-ops/2025-07-09", 1, 0),
        ("#treasury-ops", "Msg_2", "#treasury-ops/2025-07-09", 1, 1),
        ("#treasury-ops", "Msg_4", "#treasury-ops/2025-07-09", 1, 2),  # 23:59:59 listed after the 10th
        ("#treasury-ops", "Msg_5", "#treasury-ops/2025-07-10", 2, 0),
        ("#esg-reporting", "Msg_3", "#esg-reporting/2025-07-09", 1, 0),
        ("#esg-reporting", "Msg_6", "#esg-reporting/2025-07-09", 1, 1),  # same second: file order
    ]
    by_id = {m.id: m for m in c.messages}
    assert by_id["Msg_5"].session_ts == "2025-07-10T09:00:00"
    assert by_id["Msg_4"].session_ts == "2025-07-09T01:42:41"


def test_fields_and_html_unescape() -> None:
    [c] = groupmem.load_conversations(FIXTURE)
    by_id = {m.id: m for m in c.messages}
    m1 = by_id["Msg_1"]
    assert m1.text == "Kicking off Q3 close & cash forecast \u2014 owners please confirm"
    assert (m1.speaker, m1.speaker_id, m1.reply_to, m1.ts) == ("User_3", "User_3", "", "2025-07-09T01:42:41")
    assert by_id["Msg_2"].text == "Confirmed. I'll own the bank statement timing assumptions."
    assert by_id["Msg_2"].reply_to == "Msg_1"
    assert by_id["Msg_5"].text == "Decision: threshold moves to 2.5% <effective 2025-07-18> \u201cfinal\u201d"
    assert by_id["Msg_3"].text == "ESG draft is on http://sharepoint/esg/draft?v=2&lang=en"
    assert by_id["Msg_4"].text == "late-night follow-up 🌙"


def test_group_selects_domain(tmp_path: Path) -> None:
    assert [c.group_id for c in loaders.load_conversations(FIXTURE.parent, "groupmem", group="Finance")] == ["Finance"]
    with pytest.raises(InvalidInputError, match=named(FIXTURE.parent, "Healthcare", "group")):
        loaders.load_conversations(FIXTURE.parent, "groupmem", group="Healthcare")
    # upstream layout data/final/<Domain>/<file>.json, two domains
    for domain in ("Finance", "Technology"):
        (tmp_path / domain).mkdir()
        (tmp_path / domain / f"synthetic_domain_channels_rolevariants_{domain}.json").write_bytes(FIXTURE.read_bytes())
    assert [c.group_id for c in groupmem.load_conversations(tmp_path)] == ["Finance", "Technology"]
    assert [c.group_id for c in groupmem.load_conversations(tmp_path, group="Technology")] == ["Technology"]


def variant(tmp_path: Path, edit: Any) -> Path:
    data = copy.deepcopy(json.loads(FIXTURE.read_text(encoding="utf-8")))
    edit(data)
    p = tmp_path / FIXTURE.name
    p.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return p


def _msg(d: dict[str, Any], i: int = 1) -> dict[str, Any]:
    return d["#treasury-ops"][i]


@pytest.mark.parametrize(
    ("edit", "record", "field"),
    [
        (lambda d: _msg(d).pop("author"), "Msg_2", "author"),
        (lambda d: _msg(d).update(author=" "), "Msg_2", "author"),
        (lambda d: _msg(d).pop("content"), "Msg_2", "content"),
        (lambda d: _msg(d).update(content=12), "Msg_2", "content"),
        (lambda d: _msg(d).update(timestamp="09/07/2025 02:10"), "Msg_2", "timestamp"),
        (lambda d: _msg(d).pop("timestamp"), "Msg_2", "timestamp"),
        (lambda d: _msg(d).update(reply_to=1), "Msg_2", "reply_to"),
        (lambda d: _msg(d).pop("msg_node"), "#treasury-ops[1]", "msg_node"),
        (lambda d: _msg(d).update(msg_node="Msg_1"), "#treasury-ops/Msg_1", "id"),
        (lambda d: d.update({"#general": {"not": "a list"}}), "channel #general", "#general"),
        (lambda d: d["#treasury-ops"].append("text only"), "#treasury-ops[4]", "json"),
    ],
)
def test_bad_conversation_input(tmp_path: Path, edit: Any, record: str, field: str) -> None:
    p = variant(tmp_path, edit)
    with pytest.raises(InvalidInputError, match=named(p, record, field)) as e:
        groupmem.load_conversations(p)
    assert (e.value.source, e.value.record, e.value.field) == (str(p), record, field)


def test_not_an_object(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text("[]", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=named(p, "top level", "json")):
        groupmem.load_conversations(p)


# ---------------------------------------------------------------- questions


@real
def test_finance_questions() -> None:
    qs = loaders.load_questions(QUESTIONS / "Finance", "groupmem")
    assert len(qs) == 214
    assert collections.Counter(q.category for q in qs) == {
        "abstention": 29,
        "knowledge_update": 32,
        "multi_hop": 48,
        "temporal": 45,
        "term_ambiguity": 45,
        "user_implicit": 15,
    }
    assert len({q.id for q in qs}) == 214
    assert {q.group_id for q in qs} == {"Finance"}
    assert all(q.evidence_ids == [] and q.options == {} for q in qs)
    assert all(q.asker for q in qs)
    assert {q.asker for q in qs} == {f"User_{n}" for n in range(1, 14) if n != 8}
    by_id = {q.id: q for q in qs}
    ui = by_id["Finance/user_implicit/user_implicit_1"]
    assert ui.asker == "User_3" and ui.question.startswith("Which teams am I asking")
    assert ui.extra["qa_id"] == "user_implicit_1"
    assert {q.answer for q in qs if q.category == "abstention"} == {
        "There is no information available in the conversation to answer this question."
    }
    assert "Finance/abstention/abstention_1" not in by_id  # ids have gaps
    # the three path forms agree
    assert loaders.load_questions(QUESTIONS, "groupmem") == qs
    assert loaders.load_questions(QUESTIONS, "groupmem", group="Finance") == qs
    one = loaders.load_questions(QUESTIONS / "Finance" / "temporal.jsonl", "groupmem")
    assert one == [q for q in qs if q.category == "temporal"]


def write_q(tmp_path: Path, *lines: str) -> Path:
    d = tmp_path / "Finance"
    d.mkdir(exist_ok=True)
    p = d / "temporal.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_question_answer_types(tmp_path: Path) -> None:
    p = write_q(
        tmp_path,
        '{"id": "temporal_1", "question": "When?", "answer": "2025-07-18", "asking_user_id": "User_2"}',
        "",
        '{"id": "temporal_2", "question": "Is it?", "answer": true}',
        '{"id": "temporal_3", "question": "How many?", "answer": 3}',
    )
    qs = groupmem.load_questions(p)
    assert [(q.id, q.answer, q.asker) for q in qs] == [
        ("Finance/temporal/temporal_1", "2025-07-18", "User_2"),
        ("Finance/temporal/temporal_2", "true", ""),
        ("Finance/temporal/temporal_3", "3", ""),
    ]


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ('{"id": "t2", "question": "Q?"}', "answer"),
        ('{"id": "t2", "answer": "x"}', "question"),
        ('{"question": "Q?", "answer": "x"}', "id"),
        ('{"id": 2, "question": "Q?", "answer": "x"}', "id"),
        ('{"id": "t2", "question": "Q?", "answer": null}', "answer"),
        ('{"id": "t2", "question": "Q?", "answer": "x", "asking_user_id": 7}', "asking_user_id"),
        ('{"id": "t2", "question": "Q?", "answer": "x"', "json"),
        ('{"id": "t1", "question": "Q?", "answer": "x"}', "id"),
    ],
)
def test_bad_question_input(tmp_path: Path, bad: str, field: str) -> None:
    p = write_q(tmp_path, '{"id": "t1", "question": "Q?", "answer": "x"}', bad)
    with pytest.raises(InvalidInputError, match=named(p, "line 2", field)):
        groupmem.load_questions(p)
