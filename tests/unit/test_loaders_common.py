"""Shared loader pieces: timestamp parsing, the dispatcher, question rendering (no database)."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

import loaders
from graphmem.core.errors import InvalidInputError
from loaders._common import parse_ts
from loaders.records import Question

FIXTURES = Path(__file__).parents[1] / "fixtures"


def named(source: object, record: str, field: str) -> str:
    """Regex matching an InvalidInputError message that names file, record and field."""
    parts = [f"file {re.escape(str(source))}"]
    if record:
        parts.append(f"record {re.escape(record)}")
    parts.append(f"field '{re.escape(field)}'")
    return ", ".join(parts)


@pytest.mark.parametrize(
    ("raw", "text", "utc"),
    [
        ("2025-07-01T10:00:00+02:00", "2025-07-01T10:00:00+02:00", "2025-07-01T08:00:00+00:00"),
        ("2025-07-01T10:00:00+05:30", "2025-07-01T10:00:00+05:30", "2025-07-01T04:30:00+00:00"),
        ("2025-07-01T10:00:00+0530", "2025-07-01T10:00:00+05:30", "2025-07-01T04:30:00+00:00"),
        ("2025-07-01T10:00:00-03", "2025-07-01T10:00:00-03:00", "2025-07-01T13:00:00+00:00"),
        ("2025-07-01T10:00:00Z", "2025-07-01T10:00:00+00:00", "2025-07-01T10:00:00+00:00"),
        ("2025-07-01 10:00:00", "2025-07-01T10:00:00", "2025-07-01T10:00:00+00:00"),
        ("2025-07-01T10:00", "2025-07-01T10:00:00", "2025-07-01T10:00:00+00:00"),
        ("2025-07-01T10:00:00.25Z", "2025-07-01T10:00:00.250000+00:00", "2025-07-01T10:00:00.250000+00:00"),
        ("2025-07-01", "2025-07-01T00:00:00", "2025-07-01T00:00:00+00:00"),
        (" 2025-07-01T10:00:00 ", "2025-07-01T10:00:00", "2025-07-01T10:00:00+00:00"),
    ],
)
def test_parse_ts_normalises_and_keeps_offset(raw: str, text: str, utc: str) -> None:
    parsed = parse_ts(raw, source="f", record="1")
    assert parsed.text == text
    assert parsed.instant == datetime.fromisoformat(utc).timestamp()  # epoch seconds


@pytest.mark.parametrize(
    "raw",
    [
        "yesterday",
        "2025-13-01T00:00:00",
        "2025-02-30",
        "2025-07-01T25:00:00",
        "2025-07-01T10:00:00+24:00",
        "07/01/2025",
        "",
    ],
)
def test_parse_ts_rejects_unparsable(raw: str) -> None:
    with pytest.raises(InvalidInputError, match=named("chat.jsonl", "line 4", "ts")) as e:
        parse_ts(raw, source="chat.jsonl", record="line 4")
    assert (e.value.source, e.value.record, e.value.field) == ("chat.jsonl", "line 4", "ts")


def test_parse_ts_rejects_non_string() -> None:
    with pytest.raises(InvalidInputError, match=named("x.jsonl", "line 1", "ts") + ".*must be a string"):
        parse_ts(1720000000, source="x.jsonl", record="line 1")


def test_unknown_format_names_file_and_field() -> None:
    path = FIXTURES / "jsonl" / "chat.jsonl"
    with pytest.raises(
        InvalidInputError, match=f"file {re.escape(str(path))}, field 'format'.*unknown format 'xml'"
    ) as e:
        loaders.load_conversations(path, "xml")
    assert e.value.field == "format"
    with pytest.raises(InvalidInputError, match="field 'format'"):
        loaders.load_questions(path, "xml")


def test_jsonl_has_no_questions() -> None:
    with pytest.raises(InvalidInputError, match="field 'format'.*has no questions"):
        loaders.load_questions(FIXTURES / "jsonl" / "chat.jsonl", "jsonl")


def test_missing_path_names_field_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    for fmt in loaders.FORMATS:
        with pytest.raises(InvalidInputError, match=f"file {re.escape(str(missing))}, field 'path'"):
            loaders.load_conversations(missing, fmt)


def test_dispatcher_routes_every_format() -> None:
    assert [c.group_id for c in loaders.load_conversations(FIXTURES / "jsonl" / "chat.jsonl", "jsonl")] == [
        "team-a",
        "team-b",
    ]
    assert [c.group_id for c in loaders.load_conversations(FIXTURES / "groupmem", "groupmem")] == ["Finance"]
    assert [c.group_id for c in loaders.load_conversations(FIXTURES / "evermem", "evermem")] == [
        "evermem-01",
        "evermem-02",
    ]
    assert [c.group_id for c in loaders.load_conversations(FIXTURES / "evermem", "evermem", group="02")] == [
        "evermem-02"
    ]
    assert len(loaders.load_questions(FIXTURES / "evermem", "evermem", group="evermem-01")) == 3


def test_existing_exports_kept() -> None:
    assert loaders.Conversation is loaders.records.Conversation
    assert loaders.MessageRecord is loaders.records.MessageRecord
    assert loaders.Question is loaders.records.Question
    assert loaders.FORMATS == ("jsonl", "locomo", "socialmem", "groupmem", "evermem",  # issue 26 adds the chats
                               "slack", "discord", "telegram", "whatsapp", "auto")


def test_question_with_options_renders_letters_and_gold() -> None:
    q = Question(
        id="g/q1",
        group_id="g",
        question="Who keeps a hard stop?",
        answer="Mei",
        options={"B": "Leon", "A": "Josh", "D": "Priya", "C": "Mei"},
        correct_option="C",
    )
    prompt, gold = loaders.question_with_options(q)
    assert prompt == "Who keeps a hard stop?\nOptions:\nA. Josh\nB. Leon\nC. Mei\nD. Priya"
    assert gold == "C. Mei"
    open_q = Question(id="g/q2", group_id="g", question="Why?", answer="Because.")
    assert loaders.question_with_options(open_q) == ("Why?", "Because.")
    bad = q.model_copy(update={"correct_option": "E"})
    with pytest.raises(InvalidInputError, match="record g/q1, field 'correct_option'"):
        loaders.question_with_options(bad)


def test_no_loader_makes_a_session_with_slash_without_channel(tmp_path: Path) -> None:
    """Every shipped loader gives sessions in the normal form: "<channel>/<name>" with a
    channel, a name without '/' without one (a '/' there would be another channel's session).
    A benchmark file whose channel is named "" gave the session "/<date>" without a channel.
    Found by a messy-input trial."""
    import json

    from graphmem.verbatim.ingest import validate

    group = json.loads((FIXTURES / "groupmem" / "synthetic_domain_channels_rolevariants_Finance.json").read_text())
    first = next(iter(group))
    (tmp_path / "gm").mkdir()
    (tmp_path / "gm" / "synthetic_domain_channels_rolevariants_Finance.json").write_text(
        json.dumps({"": group.pop(first), **group}), encoding="utf-8")
    day = json.loads((FIXTURES / "evermem" / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()[0])
    day["dialogues"] = {"": next(iter(day["dialogues"].values()))}
    (tmp_path / "em").mkdir()
    (tmp_path / "em" / "dialogues.jsonl").write_text(json.dumps(day) + "\n", encoding="utf-8")
    batch = tmp_path / "dataset" / "004"
    batch.mkdir(parents=True)
    (batch / "dialogue.json").write_text(json.dumps({"dialogues": {"2025-01-09": {"": [
        {"speaker": "Li", "time": "2025-01-09 09:00:00", "dialogue": "Standup at ten."}]}}}), encoding="utf-8")
    inputs = [
        ("jsonl", FIXTURES / "jsonl" / "chat.jsonl"), ("locomo", FIXTURES / "eval" / "locomo_mini.json"),
        ("socialmem", FIXTURES / "eval" / "socialmem"), ("groupmem", FIXTURES / "groupmem"),
        ("evermem", FIXTURES / "evermem"), ("slack", FIXTURES / "exports" / "slack" / "acme-export"),
        ("discord", FIXTURES / "exports" / "discord"), ("telegram", FIXTURES / "exports" / "telegram" / "result.json"),
        ("whatsapp", FIXTURES / "exports" / "whatsapp" / "android.txt"),
        ("groupmem", tmp_path / "gm"), ("evermem", tmp_path / "em"), ("evermem", batch),
    ]
    for fmt, path in inputs:
        convs = loaders.load_conversations(path, fmt)
        assert convs and all(c.messages for c in convs), (fmt, path)
        for conv in convs:
            for m in conv.messages:
                assert m.session.startswith(m.channel + "/") if m.channel else "/" not in m.session, (fmt, path, m)
            validate(conv)  # the library's input rules hold for what the loader produced
