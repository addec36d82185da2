"""A message without a visible character is stored verbatim in every input format (issue 26:
an attachment-only message, a sticker, a blank line are real chat), flagged ``no_text``
(graphmem.core.model.MessageRecord.no_text; no database: what validation accepts)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from graphmem.core.errors import InvalidInputError
from graphmem.verbatim.ingest import validate
from loaders import load_conversations

FIX = Path(__file__).resolve().parents[1] / "fixtures"
BLANKS = ["", "   ", "\n\t ", "\u3000\u00a0", "\u200b", " \u3000\u200b\u200f ", "\u0301\u0301\ufe0f\u034f",
          "\u3164\u2800"]
# empty, spaces, newline+tab, ideographic + no-break space, a zero-width space, spaces with
# zero-width and direction marks, combining marks alone (accents, a variation selector, the
# grapheme joiner), a Hangul filler and the blank braille pattern: nothing a reader could see


def blank_jsonl(tmp: Path, text: str) -> tuple[Path, str]:
    lines = (FIX / "jsonl" / "chat.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[1])
    row["text"] = text
    lines[1] = json.dumps(row, ensure_ascii=False)
    path = tmp / "chat.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, "line 2"


def blank_locomo(tmp: Path, text: str) -> tuple[Path, str]:
    data = json.loads((FIX / "eval" / "locomo_mini.json").read_text(encoding="utf-8"))
    turn = data[0]["conversation"]["session_1"][1]
    turn["text"] = text
    path = tmp / "locomo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path, "session_1[1]"


def blank_socialmem(tmp: Path, text: str) -> tuple[Path, str]:
    folder = tmp / "networks"
    folder.mkdir()
    src = FIX / "eval" / "socialmem" / "fixture_net_aaaa0001.json"
    data = json.loads(src.read_text(encoding="utf-8"))
    turn = data["sessions"][0]["turns"][1]
    turn["content"] = text
    (folder / src.name).write_text(json.dumps(data), encoding="utf-8")
    return folder / src.name, turn["turn"]


def blank_groupmem(tmp: Path, text: str) -> tuple[Path, str]:
    src = next((FIX / "groupmem").glob("*.json"))
    data = json.loads(src.read_text(encoding="utf-8"))
    channel = next(iter(data))
    data[channel][1]["content"] = text
    path = tmp / src.name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path, data[channel][1]["msg_node"]


def blank_evermem(tmp: Path, text: str) -> tuple[Path, str]:
    folder = tmp / "evermem"
    shutil.copytree(FIX / "evermem", folder)
    lines = (folder / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    topic = json.loads(lines[0])
    group = next(iter(topic["dialogues"]))
    topic["dialogues"][group][1]["dialogue"] = text
    lines[0] = json.dumps(topic, ensure_ascii=False)
    (folder / "dialogues.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / "dialogues.jsonl", ""


FORMATS = {"jsonl": blank_jsonl, "locomo": blank_locomo, "socialmem": blank_socialmem,
           "groupmem": blank_groupmem, "evermem": blank_evermem}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("text", BLANKS, ids=["empty", "spaces", "newline-tab", "unicode-spaces", "zero-width",
                                              "invisible-marks", "combining-alone", "blank-letters"])
def test_blank_text_is_kept_verbatim_and_flagged_in_every_format(tmp_path: Path, fmt: str, text: str) -> None:
    path, record = FORMATS[fmt](tmp_path, text)
    convs = load_conversations(path, fmt)
    for conv in convs:
        validate(conv)  # accepted
    blank = [m for c in convs for m in c.messages if m.no_text]
    assert [m.text for m in blank] == [text], [m.text for m in blank]
    if record:  # the record that was made blank, at its place
        where = record.replace("line ", ":") if record.startswith("line ") else record
        assert blank[0].source_ref.endswith(where) or where in blank[0].id or where in blank[0].source_ref, blank[0]


def test_visible_means_a_character_a_reader_sees():
    from graphmem.core.limits import has_visible

    assert not any(has_visible(t) for t in BLANKS)
    # a family emoji is joined by zero-width joiners (format characters): still visible
    assert all(has_visible(t) for t in (".", "a\u200b", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u0627",
                                        "e\u0301", "\u2764\ufe0f", "\ud55c"))


@pytest.mark.parametrize("value", ["\u200b", "\u3164", "\u0301"])
@pytest.mark.parametrize("field", ["id", "speaker_id", "group"])
def test_an_id_needs_a_visible_character(value: str, field: str) -> None:
    from graphmem.core.limits import check_id

    with pytest.raises(InvalidInputError, match="no visible character") as e:
        check_id(value, field=field)
    assert e.value.field == field


def test_text_with_one_visible_character_is_kept_exactly(tmp_path: Path) -> None:
    path, _ = blank_jsonl(tmp_path, "  .\n")
    convs = load_conversations(path, "jsonl")
    for conv in convs:
        validate(conv)
    assert "  .\n" in [m.text for c in convs for m in c.messages]
