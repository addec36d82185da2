"""Generic chat format (``--format jsonl``) loader (no database)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import loaders
from graphmem.core.errors import InvalidInputError
from loaders import jsonl

CHAT = Path(__file__).parents[1] / "fixtures" / "jsonl" / "chat.jsonl"


def named(source: object, record: str, field: str) -> str:
    return f"file {re.escape(str(source))}, record {re.escape(record)}, field '{re.escape(field)}'"


def write_lines(path: Path, *objs: object) -> Path:
    path.write_text(
        "\n".join(o if isinstance(o, str) else json.dumps(o, ensure_ascii=False) for o in objs) + "\n",
        encoding="utf-8",
    )
    return path


def line(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "group": "g",
        "session": "s1",
        "speaker": "Ann",
        "text": "hi",
        "ts": "2025-01-01T10:00:00",
    }
    base.update(kw)
    return {k: v for k, v in base.items() if v is not ...}


def test_groups_split_and_in_first_line_order() -> None:
    convs = jsonl.load_conversations(CHAT)
    assert [c.group_id for c in convs] == ["team-a", "team-b"]
    assert [c.name for c in convs] == ["team-a", "team-b"]
    assert all(c.source == str(CHAT) for c in convs)
    assert sum(len(c.messages) for c in convs) == 7  # blank line skipped


def test_timezone_ordering_uses_the_real_instant() -> None:
    team_a = jsonl.load_conversations(CHAT)[0]
    # s0 at 18:00+05:30 (12:30Z, 30 June) first; then 10:00+02:00 (08:00Z) before 09:30+00:00,
    # then the naive 09:45 (read as UTC).
    assert [m.id for m in team_a.messages] == ["s0:0", "a2", "a1", "s1:2"]
    assert [(m.session, m.session_index, m.turn) for m in team_a.messages] == [
        ("s0", 1, 0),
        ("s1", 2, 0),
        ("s1", 2, 1),
        ("s1", 2, 2),
    ]
    assert {m.session_ts for m in team_a.messages if m.session == "s1"} == {"2025-07-01T10:00:00+02:00"}


def test_timestamps_normalised_offsets_kept() -> None:
    msgs = {m.id: m for c in jsonl.load_conversations(CHAT) for m in c.messages}
    assert msgs["s0:0"].ts == "2025-06-30T18:00:00+05:30"
    assert msgs["a2"].ts == "2025-07-01T10:00:00+02:00"
    assert msgs["s1:2"].ts == "2025-07-01T09:45:00"  # "YYYY-MM-DD HH:MM:SS" -> T, stays naive
    assert msgs["ops/d1:0"].ts == "2025-07-02T12:00:00+00:00"  # Z


def test_optional_fields_and_channels() -> None:
    team_a, team_b = jsonl.load_conversations(CHAT)
    by_id = {m.id: m for m in team_a.messages}
    assert by_id["a1"].speaker_id == "u1"
    assert by_id["s1:2"].speaker_id == ""
    assert by_id["s1:2"].reply_to == "a1"
    assert by_id["a1"].reply_to == ""
    assert by_id["a1"].source_ref == f"{CHAT}:1"
    assert by_id["s1:2"].source_ref == f"{CHAT}:4"  # line numbers count the blank line
    # channels contiguous, in order of first appearance; ties keep file order
    assert [(m.channel, m.id, m.turn) for m in team_b.messages] == [
        ("ops", "ops/d1:0", 0),
        ("ops", "ops/d1:1", 1),
        ("random", "random/d1:0", 0),
    ]
    assert team_b.messages[2].session_index == 1


def test_generated_ids_are_stable_across_runs_and_appends(tmp_path: Path) -> None:
    src = CHAT.read_text(encoding="utf-8")
    first = jsonl.load_conversations(CHAT)
    assert jsonl.load_conversations(CHAT) == first
    appended = tmp_path / "chat.jsonl"
    # a message appended later but stamped *earlier* than the rest of s1
    appended.write_text(
        src
        + json.dumps(
            {"group": "team-a", "session": "s1", "speaker": "Mei", "text": "late", "ts": "2025-07-01T05:00:00Z"}
        )
        + "\n",
        encoding="utf-8",
    )
    team_a = jsonl.load_conversations(appended)[0]
    assert [m.id for m in team_a.messages] == ["s0:0", "s1:3", "a2", "a1", "s1:2"]
    assert [m.turn for m in team_a.messages if m.session == "s1"] == [0, 1, 2, 3]


def test_text_round_trip_is_exact(tmp_path: Path) -> None:
    zwj = "family 👨\u200d👩\u200d👧\u200d👦 judge 👨\u200d⚖️ 🙋\u200d♀️ flag 🏳️\u200d🌈"
    texts = [
        zwj,
        "  leading and trailing spaces \t",
        "combining e\u0301 vs precomposed \u00e9 (not normalised)",
        "line\nbreaks\r\nand \u2028 separators \u2029 kept",
        "日本語テキスト、한국어, עברית, हिन्दी, ไทย",
        "x" * 99_990 + "🧑\u200d💻end!",
        "",
    ]
    assert len(texts[5]) > 100_000 - 10
    path = write_lines(
        tmp_path / "t.jsonl", *(line(text=t, id=f"m{i}", ts=f"2025-01-01T10:00:0{i}") for i, t in enumerate(texts))
    )
    # also an ASCII-escaped copy: the same text must come out
    escaped = tmp_path / "e.jsonl"
    escaped.write_text(
        "\n".join(
            json.dumps(line(text=t, id=f"m{i}", ts=f"2025-01-01T10:00:0{i}"), ensure_ascii=True)
            for i, t in enumerate(texts)
        ),
        encoding="utf-8",
    )
    for p in (path, escaped):
        msgs = jsonl.load_conversations(p)[0].messages
        assert [m.text for m in msgs] == texts
        assert [m.text.encode("utf-8") for m in msgs] == [t.encode("utf-8") for t in texts]
    assert "\u200d" in jsonl.load_conversations(CHAT)[0].messages[3].text


def test_group_override(tmp_path: Path) -> None:
    convs = loaders.load_conversations(CHAT, "jsonl", group="ops-room")
    assert [c.group_id for c in convs] == ["ops-room"]
    assert {m.group_id for m in convs[0].messages} == {"ops-room"}
    assert len(convs[0].messages) == 7
    no_group = write_lines(tmp_path / "ng.jsonl", line(group=...))
    assert loaders.load_conversations(no_group, "jsonl", group="x")[0].group_id == "x"
    with pytest.raises(InvalidInputError, match=named(no_group, "line 1", "group")):
        loaders.load_conversations(no_group, "jsonl")


@pytest.mark.parametrize(
    ("objs", "record", "field", "why"),
    [
        ([line(), '{"group": "g", "session": '], "line 2", "json", "malformed JSON"),
        ([line(), "[1, 2]"], "line 2", "json", "expected a JSON object"),
        ([line(), line(id="m2", speaker=...)], "line 2", "speaker", "Field required"),
        ([line(speaker="   ")], "line 1", "speaker", "must not be blank"),
        ([line(speaker=None)], "line 1", "speaker", "string"),
        ([line(), "", line(text=...)], "line 3", "text", "Field required"),
        ([line(text=None)], "line 1", "text", "string"),
        ([line(text=42)], "line 1", "text", "string"),
        ([line(ts="next tuesday")], "line 1", "ts", "unparsable timestamp"),
        ([line(ts="2025-02-30T10:00:00")], "line 1", "ts", "invalid timestamp"),
        ([line(ts=1735725600)], "line 1", "ts", "string"),
        ([line(session=3)], "line 1", "session", "string"),
        ([line(reply_to=7)], "line 1", "reply_to", "string"),
        ([line(channel=["a"])], "line 1", "channel", "string"),
        ([line(id="m1"), line(id="m1", ts="2025-01-01T09:00:00")], "line 2", "ts", "appears again with another ts"),
        ([line(id="m1"), line(id="m1", speaker="Zed")], "line 2", "speaker", "appears again with another speaker"),
        ([line(id="")], "line 1", "id", "blank"),
        # "" would key the speaker by display name: a second person beside the one with an id
        ([line(speaker_id="")], "line 1", "speaker_id", "at least 1 character"),
        ([line(group="")], "line 1", "group", "blank"),
        # a line's group outside the id grammar was refused by ingest naming no line
        ([line(), line(group="g/r")], "line 2", "group", "'/'"),
        ([line(), line(group="g" * 201)], "line 2", "group", "at most 200"),
    ],
)
def test_bad_input_names_file_record_field(
    tmp_path: Path, objs: list[object], record: str, field: str, why: str
) -> None:
    path = write_lines(tmp_path / "bad.jsonl", *objs)
    with pytest.raises(InvalidInputError, match=named(path, record, field) + ".*" + re.escape(why)) as e:
        loaders.load_conversations(path, "jsonl")
    assert (e.value.source, e.value.record, e.value.field) == (str(path), record, field)
    assert isinstance(e.value, ValueError)


def test_a_slash_in_a_session_without_channel_is_refused(tmp_path: Path) -> None:
    """A session name holding '/' given without a channel became the Session of a channel
    (stored channel sessions are "<channel>/<session>"): "a/b" without a channel and session
    "b" of channel "a" were one Session holding both channels. Found by a messy-input trial."""
    path = write_lines(
        tmp_path / "gs.jsonl",
        {"group": "gs", "session": "b", "channel": "a", "speaker": "Ok", "id": "m1", "text": "in channel a",
         "ts": "2026-07-01T09:00:00Z"},
        {"group": "gs", "session": "a/b", "speaker": "Ok", "id": "m2", "text": "no channel",
         "ts": "2026-07-01T09:01:00Z"},
    )
    with pytest.raises(InvalidInputError, match=named(path, "line 2", "session") + ".*'/'") as e:
        loaders.load_conversations(path, "jsonl")
    assert (e.value.source, e.value.record, e.value.field) == (str(path), "line 2", "session")
    rejects: list[loaders.Reject] = []
    (conv,) = loaders.load_conversations(path, "jsonl", rejects=rejects)
    assert [m.id for m in conv.messages] == ["m1"]
    assert [(r.record, r.field) for r in rejects] == [("line 2", "session")]
    # with a channel a '/' in the session name stays allowed (a name inside the channel)
    path = write_lines(tmp_path / "ok.jsonl", line(session="a/b", channel="c"))
    assert loaders.load_conversations(path, "jsonl")[0].messages[0].session == "c/a/b"


def test_a_positional_id_that_another_line_gives_is_refused_naming_both_lines(tmp_path: Path) -> None:
    """A line without "id" gets "<session>:<k>" from its place; a line giving that id as its
    own was taken as the same message, and its text stored as an edit of the other's (two
    messages merged into one text_history). Found by a messy-input trial."""
    made_first = write_lines(tmp_path / "a.jsonl", line(text="first"), line(text="second"),
                             line(text="explicit", id="s1:1"))
    # k counts every line of the session: the 4th line, id-less, is "s1:3"
    given_first = write_lines(tmp_path / "b.jsonl", line(text="given", id="s1:3"), line(text="a"),
                              line(text="b"), line(text="c"))
    same_text = write_lines(tmp_path / "c.jsonl", line(text="hi"), line(text="hi", id="s1:0"))
    cases = [(made_first, "line 3", ["line 2 has no id", "line 3 gives it"], ["s1:0", "s1:1"]),
             (given_first, "line 4", ["line 1 gives it", "line 4 has no id"], ["s1:3", "s1:1", "s1:2"]),
             (same_text, "line 2", ["line 1 has no id", "line 2 gives it"], ["s1:0"])]
    for path, record, said, kept in cases:
        with pytest.raises(InvalidInputError, match=named(path, record, "id")) as e:
            loaders.load_conversations(path, "jsonl")
        assert all(x in str(e.value) for x in said), str(e.value)
        rejects: list[loaders.Reject] = []
        (conv,) = loaders.load_conversations(path, "jsonl", rejects=rejects)
        assert sorted({m.id for m in conv.messages}) == sorted(kept)
        assert [(r.record, r.field) for r in rejects] == [(record, "id")]
        assert rejects[0].raw == json.loads(path.read_text(encoding="utf-8").splitlines()[int(record[5:]) - 1])
    # an id both lines give is still a redelivery or an edit
    both_given = write_lines(tmp_path / "d.jsonl", line(text="one", id="s1:0"), line(text="two", id="s1:0"))
    assert [m.text for m in loaders.load_conversations(both_given, "jsonl")[0].messages] == ["one", "two"]


def test_skip_rejects_repeated_ids_and_bad_groups_line_by_line(tmp_path: Path) -> None:
    """Under --on-bad-record skip a repeated id with another speaker stopped the whole load (the
    check ran outside the rejects handling), and so did a line whose group id breaks the id
    grammar (refused by ingest for the whole group, naming no line). Both are now bad lines like
    the others; the first occurrence of an id is kept. Found by a messy-input trial."""
    path = write_lines(
        tmp_path / "mixed.jsonl",
        line(id="m1"), line(id="m1", speaker="Zed"), line(id="m2", group="g/r"), line(id="m3", group="g" * 201),
        line(id="m1", text="edited"), line(id="m1", speaker="Yan"), line(id="m4"),
    )
    rejects: list[loaders.Reject] = []
    (conv,) = loaders.load_conversations(path, "jsonl", rejects=rejects)
    assert [(m.id, m.speaker, m.text) for m in conv.messages] == [("m1", "Ann", "hi"), ("m1", "Ann", "edited"),
                                                                   ("m4", "Ann", "hi")]
    assert sorted((r.record, r.field) for r in rejects) == [
        ("line 2", "speaker"), ("line 3", "group"), ("line 4", "group"), ("line 6", "speaker")]
    assert {r.record: r.raw for r in rejects}["line 6"] == line(id="m1", speaker="Yan")
    with pytest.raises(InvalidInputError) as e:  # an override outside the grammar is the whole input's
        loaders.load_conversations(path, "jsonl", group="a/b", rejects=[])
    assert (e.value.record, e.value.field) == ("", "group")


def test_a_repeated_id_in_one_file_is_compared_by_the_stored_message_rule(tmp_path: Path) -> None:
    """In one file a repeated id was compared field by field as written, so a time without
    offset and the same local time with one, or the same instant in another offset (another
    day's session), were refused as "another ts" where the same lines in two files are one
    message (graphmem.core.redelivery). Found by a messy-input trial."""
    same = [
        [line(id="m1", ts="2026-07-01T09:00:00"), line(id="m1", ts="2026-07-01T09:00:00+05:00")],
        [line(id="m1", ts="2025-07-02T02:00:00+02:00", session="2025-07-02"),
         line(id="m1", ts="2025-07-01T20:00:00-04:00", session="2025-07-01")],
        [line(id="m1", reply_to="m0"), line(id="m1")],  # a link on one side only
    ]
    for lines in same:
        path = write_lines(tmp_path / "same.jsonl", *lines)
        assert [m.id for m in loaders.load_conversations(path, "jsonl")[0].messages] == ["m1", "m1"], lines
    other = [
        ([line(id="m1", ts="2026-07-01T09:00:00"), line(id="m1", ts="2026-07-01T10:00:00+05:00")], "ts"),
        ([line(id="m1", ts="2025-07-02T02:00:00+02:00"), line(id="m1", ts="2025-07-02T02:00:00+02:00",
                                                                session="2025-07-01")], "session"),
        ([line(id="m1", speaker_id="u1"), line(id="m1", speaker_id="u2")], "speaker_id"),
        ([line(id="m1", reply_to="m0"), line(id="m1", reply_to="m9")], "reply_to"),
    ]
    for lines, field in other:
        path = write_lines(tmp_path / "other.jsonl", *lines)
        with pytest.raises(InvalidInputError, match=named(path, "line 2", field) + ".*appears again"):
            loaders.load_conversations(path, "jsonl")


def test_invalid_utf8_names_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(
        json.dumps(line()).encode()
        + b"\n"
        + '{"group":"g","session":"s","speaker":"Zoë","text":"x","ts":"2025-01-01"}'.encode("latin-1")
        + b"\n"
    )
    with pytest.raises(InvalidInputError, match=named(path, "line 2", "encoding")):
        jsonl.load_conversations(path)


def test_bom_and_crlf_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf"
        + json.dumps(line(text="a")).encode()
        + b"\r\n\r\n"
        + json.dumps(line(text="b", ts="2025-01-01T11:00:00")).encode()
        + b"\r\n"
    )
    assert [m.text for m in jsonl.load_conversations(path)[0].messages] == ["a", "b"]
