"""The parallel JSON-lines path to the first-load CSV files (graphmem.verbatim.bulk_jsonl), no database.

It must write what the reference path (loaders + graphmem.verbatim.bulk_import.write_csv) writes: byte
for byte with one part, the same rows up to node ids with several; and it must never accept an
input the reference refuses (the same error, naming line and field).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from graphmem.verbatim.bulk_import import HEADERS, NODE_FILES, write_csv
from graphmem.verbatim import bulk_jsonl
from graphmem.verbatim.bulk_jsonl import write_csv_jsonl
from graphmem.core.errors import InvalidInputError
from loaders import jsonl_reference, load_conversations


def write_lines(path: Path, lines: list[object], bom: bool = False) -> Path:
    text = "\n".join(x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in lines) + "\n"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def corpus() -> list[object]:
    """Valid input with every feature the loader handles: groups spread over the file,
    channels, explicit and generated ids, redeliveries, out-of-order and non-normal timestamps,
    speaker ids with renames, replies (also to missing ids), quotes, newlines, non-ASCII."""
    lines: list[object] = []
    for i in range(120):
        g = f"g{i % 4}"
        row: dict[str, object] = {
            "group": g, "session": f"s{i // 25}", "speaker": ["Ann", "Bo", "Cy \"C\"", "Dé"][i % 4],
            "text": f"message {i} about {'lunch' if i % 3 else 'the plan'}" + ("\nsecond line" if i % 7 == 0 else ""),
            "ts": f"2025-03-{1 + i // 40:02d}T10:{(i * 7) % 60:02d}:{i % 60:02d}" + ("Z" if i % 5 == 0 else "+02:00"),
        }
        if i % 2:
            row["id"] = f"m{i}"
        if i % 3 == 0:
            row["channel"] = "ops"
        if i % 4 == 1:
            row["speaker_id"] = "u1"
            row["speaker"] = "Ann" if i < 60 else "Ann B."
        if i % 6 == 5:
            row["reply_to"] = f"m{i - 2}" if i % 12 == 5 else "nowhere"
        if i % 10 == 9:
            row["extra"] = {"ignored": [1, 2]}
        lines.append(row)
        if i % 17 == 3 and "id" in row:
            lines.append(dict(row))  # a redelivery
        if i % 31 == 0:
            lines.append("   ")  # blank
    lines.append({"group": "g1", "session": "s1", "speaker": "Eve", "text": "late", "ts": "2025-02-27 08:00",
                  "id": "early", "speaker_id": None, "channel": None})
    return lines


def reference(path: Path, folder: Path, group: str | None = None) -> dict[str, bytes]:
    write_csv(load_conversations(path, "jsonl", group=group), folder)
    return {k: (folder / f"{k}.csv").read_bytes() for k in HEADERS}


def joined(files: dict[str, list[Path]]) -> dict[str, bytes]:
    return {k: b"".join(p.read_bytes() for p in paths) for k, paths in files.items()}


def by_rank(data: dict[str, bytes]) -> dict[str, list[list[str]]]:
    """The rows of every file with node ids replaced by their rank among all node ids."""
    rows = {k: list(csv.reader(v.decode("utf-8").splitlines(keepends=True))) for k, v in data.items()}
    ids = sorted(int(r[0]) for k in NODE_FILES for r in rows[k][1:])
    rank = {str(n): str(i) for i, n in enumerate(ids)}
    out = {k: [rows[k][0]] + [[rank[r[0]], *r[1:]] for r in rows[k][1:]] for k in NODE_FILES}
    out["rels"] = [rows["rels"][0]] + [[rank[a], rank[b], t] for a, b, t in rows["rels"][1:]]
    return out


@pytest.mark.parametrize("bom", [False, True])
def test_one_part_is_byte_for_byte_the_reference(tmp_path, bom) -> None:
    src = write_lines(tmp_path / "chat.jsonl", corpus(), bom=bom)
    want = reference(src, tmp_path / "ref")
    got = write_csv_jsonl(src, tmp_path / "fast", reference=jsonl_reference, workers=1)
    assert got.path == "parallel"
    assert joined(got.files) == want
    ref_summary = write_csv(load_conversations(src, "jsonl"), tmp_path / "ref2")
    assert got.summary.as_dict() == ref_summary.as_dict()
    assert got.summary.messages_skipped > 0  # the redeliveries were seen


@pytest.mark.parametrize("workers", [2, 3])
def test_parts_hold_the_reference_rows_in_the_reference_order(tmp_path, workers) -> None:
    src = write_lines(tmp_path / "chat.jsonl", corpus())
    want = reference(src, tmp_path / "ref")
    got = write_csv_jsonl(src, tmp_path / "fast", reference=jsonl_reference, workers=workers)
    assert got.path == "parallel" and got.parts > 1
    assert all(len(paths) == got.parts + 1 for paths in got.files.values())  # header, then parts
    assert by_rank(joined(got.files)) == by_rank(want)
    ref_summary = write_csv(load_conversations(src, "jsonl"), tmp_path / "ref2")
    assert got.summary.as_dict() == ref_summary.as_dict()


def test_group_override(tmp_path) -> None:
    src = write_lines(tmp_path / "chat.jsonl", corpus())
    want = reference(src, tmp_path / "ref", group="all")
    got = write_csv_jsonl(src, tmp_path / "fast", reference=jsonl_reference, group="all", workers=2)
    assert got.summary.group_ids == ["all"]
    assert by_rank(joined(got.files)) == by_rank(want)


BAD: list[tuple[str, object]] = [
    ("malformed json", '{"group": "g", "session": "s1"'),
    ("not an object", "[1, 2]"),
    ("missing speaker", {"group": "g", "session": "s1", "text": "x", "ts": "2025-01-01T00:00:00"}),
    ("blank speaker", {"group": "g", "session": "s1", "speaker": " ", "text": "x", "ts": "2025-01-01T00:00:00"}),
    ("number text", {"group": "g", "session": "s1", "speaker": "A", "text": 5, "ts": "2025-01-01T00:00:00"}),
    ("invisible id", {"group": "g", "session": "s1", "speaker": "A", "text": "x", "ts": "2025-01-01T00:00:00",
                      "id": "\u3164"}),
    ("empty speaker_id", {"group": "g", "session": "s1", "speaker": "A", "text": "x", "ts": "2025-01-01T00:00:00",
                          "speaker_id": ""}),
    ("text over the limit", {"group": "g", "session": "s1", "speaker": "A", "text": "x" * 100_001,
                             "ts": "2025-01-01T00:00:00"}),
    ("lone surrogate", '{"group": "g", "session": "s1", "speaker": "A", "text": "x\\ud83d", "ts": "2025-01-01T00:00:00"}'),
    ("bad ts", {"group": "g", "session": "s1", "speaker": "A", "text": "x", "ts": "yesterday"}),
    ("ts out of range", {"group": "g", "session": "s1", "speaker": "A", "text": "x", "ts": "2025-02-30T00:00:00"}),
    ("control char in id", {"group": "g", "session": "s1", "speaker": "A", "text": "x", "ts": "2025-01-01T00:00:00",
                            "id": "a\tb"}),
    ("blank id", {"group": "g", "session": "s1", "speaker": "A", "text": "x", "ts": "2025-01-01T00:00:00", "id": " "}),
    ("slash in group", {"group": "a/b", "session": "s1", "speaker": "A", "text": "x", "ts": "2025-01-01T00:00:00"}),
    ("blank group", {"group": " ", "session": "s1", "speaker": "A", "text": "x", "ts": "2025-01-01T00:00:00"}),
    ("slash in channel", {"group": "g", "session": "s1", "speaker": "A", "text": "x", "ts": "2025-01-01T00:00:00",
                          "channel": "a/b"}),
    ("slash in a session without channel", {"group": "g", "session": "a/b", "speaker": "A", "text": "x",
                                            "ts": "2025-01-01T00:00:00"}),
    ("long qualified session", {"group": "g", "session": "s" * 195, "speaker": "A", "text": "x",
                                "ts": "2025-01-01T00:00:00", "channel": "chan"}),
    ("long speaker", {"group": "g", "session": "s1", "speaker": "A" * 201, "text": "x", "ts": "2025-01-01T00:00:00"}),
    ("numeric reply_to", {"group": "g", "session": "s1", "speaker": "A", "text": "x", "ts": "2025-01-01T00:00:00",
                          "reply_to": 3}),
    ("reply to itself", {"group": "g", "session": "s1", "speaker": "A", "text": "x", "ts": "2025-01-01T00:00:00",
                         "id": "self1", "reply_to": "self1"}),
    ("reply to itself, id generated", {"group": "g", "session": "s9", "speaker": "A", "text": "x",
                                       "ts": "2025-01-01T00:00:00", "reply_to": "s9:0"}),
    # a copy of line 4 (group g0, session s0, no id: "s0:0") that gives that id: the reference
    # refuses it (two messages, one id), the fast path must not take it for a redelivery
    ("explicit id equal to a generated one", {"group": "g0", "session": "s0", "speaker": "Ann",
                                              "text": "message 4 about lunch", "ts": "2025-03-01T10:28:04+02:00",
                                              "id": "s0:0"}),
    ("repeat, other speaker", {"group": "g1", "session": "s0", "speaker": "Zed", "speaker_id": "u1",
                               "text": "message 1 about lunch", "ts": "2025-03-01T10:07:01+02:00", "id": "m1"}),
    ("an edit", {"group": "g1", "session": "s0", "speaker": "Ann", "speaker_id": "u1", "text": "edited",
                 "ts": "2025-03-01T10:07:01+02:00", "id": "m1"}),
]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("case,bad", BAD, ids=[c for c, _ in BAD])
def test_bad_input_gets_the_reference_error(tmp_path, case, bad, workers) -> None:
    lines = corpus()
    lines.insert(len(lines) - 3, bad)  # in the second half: the last range's worker meets it
    src = write_lines(tmp_path / "chat.jsonl", lines)
    with pytest.raises(InvalidInputError) as want:
        reference(src, tmp_path / "ref")
    with pytest.raises(InvalidInputError) as got:
        write_csv_jsonl(src, tmp_path / "fast", reference=jsonl_reference, workers=workers)
    assert str(got.value) == str(want.value)
    assert (got.value.record, got.value.field) == (want.value.record, want.value.field)
    assert not list((tmp_path / "fast").glob("*.part*.csv"))


TEXT_LESS = [("empty text", ""), ("whitespace-only text", " \t\n "), ("zero-width text", "\u200b\u2800"),
             ("tab in the speaker's name", None)]


@pytest.mark.parametrize("case,text", TEXT_LESS, ids=[c for c, _ in TEXT_LESS])
def test_text_less_messages_and_names_as_written_load_as_the_reference_loads_them(tmp_path, case, text) -> None:
    # issue 26: refused before; now stored (flagged no_text) by ingest, so by both CSV paths alike
    lines = corpus()
    row = {"group": "g0", "session": "s9", "speaker": "A\tB" if text is None else "A",
           "text": "x" if text is None else text, "ts": "2025-01-01T00:00:00"}
    lines.insert(10, json.dumps(row))
    src = write_lines(tmp_path / "chat.jsonl", lines)
    want = reference(src, tmp_path / "ref")
    got = write_csv_jsonl(src, tmp_path / "fast", reference=jsonl_reference, workers=2)
    assert joined(got.files) == want
    msgs = list(csv.reader(want["messages"].decode("utf-8").splitlines(keepends=True)))
    head, row9 = msgs[0], next(r for r in msgs[1:] if r[msgs[0].index("session")] == "s9")
    assert row9[head.index("text")] == row["text"] and row9[head.index("speaker")] == row["speaker"]
    assert row9[head.index("no_text:boolean")] == ("false" if text is None else "true")


def test_valid_input_outside_the_fast_path_goes_the_reference_way(tmp_path) -> None:
    # NaN in an ignored field: Python's json reads it, orjson does not; the file is still valid
    lines = corpus()
    lines.insert(10, '{"group": "g0", "session": "s9", "speaker": "A", "text": "x", "ts": "2025-01-01T00:00:00", '
                     '"score": NaN}')
    src = write_lines(tmp_path / "chat.jsonl", lines)
    want = reference(src, tmp_path / "ref")
    got = write_csv_jsonl(src, tmp_path / "fast", reference=jsonl_reference, workers=2)
    # orjson refuses NaN, so the file goes the reference way; the standard parser (the fallback
    # when orjson is not installed) reads it like the loader, and the fast path may keep it
    assert got.path == ("reference" if bulk_jsonl._loads is not json.loads else "parallel")
    if got.path == "parallel":
        assert by_rank(joined(got.files)) == by_rank(want)
    else:
        assert joined(got.files) == want
        assert not list((tmp_path / "fast").glob("*.part*.csv"))


def test_missing_file_and_blank_override(tmp_path) -> None:
    with pytest.raises(InvalidInputError, match="field 'path'"):
        write_csv_jsonl(tmp_path / "nope.jsonl", tmp_path / "out", reference=jsonl_reference)
    src = write_lines(tmp_path / "chat.jsonl", corpus())
    with pytest.raises(InvalidInputError, match="field 'group'"):
        write_csv_jsonl(src, tmp_path / "out", reference=jsonl_reference, group=" ")


@pytest.mark.parametrize("fmt", ["jsonl", "locomo"])
def test_an_unusable_csv_dir_is_a_clear_error_before_anything_runs(tmp_path, fmt) -> None:
    """`graphmem neo4j import --csv-dir X` where X is a file: one line naming the folder and
    the field, exit 1, no traceback (before: FileExistsError's traceback, after the input was
    read). The home here has no server and no database, so nothing else stands in the way."""
    import os
    import subprocess
    import sys

    src = tmp_path / "chat.jsonl"
    src.write_text('{"group": "g", "session": "s1", "speaker": "A", "text": "x", "ts": "2025-01-01T00:00:00"}\n')
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    env = {**os.environ, "GRAPHMEM_HOME": str(tmp_path / "gm"), "COLUMNS": "1000"}
    res = subprocess.run([sys.executable, "-m", "graphmem", "neo4j", "import", str(src), "--format", fmt,
                          "--csv-dir", str(blocker)], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"cannot write the CSV files into {str(blocker)!r}" in res.stderr and "field 'csv_dir'" in res.stderr, \
        res.stderr


@pytest.mark.parametrize("field", ["speaker_id", "id", "reply_to", "session"])
def test_fast_path_refuses_invisible_characters_in_ids_as_the_reference(tmp_path, field):
    """Issue 24: ``"dad\\u200b"`` beside ``"dad"`` would be two people nobody tells apart; the
    fast path takes it to the reference path, which names line and field; nothing is written."""
    good = {"group": "g", "session": "s", "speaker": "Dad", "speaker_id": "dad", "text": "hi",
            "ts": "2026-03-01T10:00:00", "id": "m0"}
    bad = {**good, "id": "m1", field: "m0\u200b" if field == "reply_to" else good.get(field, "x") + "\u200b"}
    path = write_lines(tmp_path / "in.jsonl", [good, bad])
    out = tmp_path / "csv"
    with pytest.raises(InvalidInputError) as e:
        write_csv_jsonl(path, out, reference=jsonl_reference, workers=2)
    assert (e.value.record, e.value.field) == ("line 2", field) and "U+200B" in str(e.value)
    assert not list(out.glob("*.csv"))
