"""The platform export parsers (issue 26) without a database: detection, the details of each
layout, stable ids, and errors or rejects naming file, record and field."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from graphmem.core.errors import InvalidInputError
from graphmem.verbatim.ingest import split_invalid, validate
from loaders import Reject, detect_format, load_conversations
from loaders.slack import render

EXPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "exports"
DISCORD = next((EXPORTS / "discord").glob("*.json"))


@pytest.mark.parametrize(("path", "fmt"), [
    (EXPORTS / "slack" / "acme-export", "slack"), (DISCORD, "discord"),
    (EXPORTS / "telegram" / "result.json", "telegram"), (EXPORTS / "telegram", "telegram"),
    (EXPORTS / "whatsapp" / "android.txt", "whatsapp"), (EXPORTS / "whatsapp" / "ios.txt", "whatsapp"),
])
def test_auto_detects_each_layout_and_every_record_passes_ingest_validation(path, fmt):
    assert detect_format(path) == fmt
    convs = load_conversations(path, "auto", group="g")
    assert len(convs) == 1 and convs[0].group_id == "g"
    validate(convs[0])


def test_auto_names_the_problem_for_an_unknown_layout(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("just some notes\n", encoding="utf-8")
    with pytest.raises(InvalidInputError) as e:
        load_conversations(p, "auto")
    assert e.value.field == "format" and "--format" in str(e.value)


def test_slack_zip_with_a_top_folder_reads_as_the_folder(tmp_path):
    src = EXPORTS / "slack" / "acme-export"
    shutil.make_archive(str(tmp_path / "acme"), "zip", src.parent, src.name)
    assert zipfile.is_zipfile(tmp_path / "acme.zip")
    assert detect_format(tmp_path / "acme.zip") == "slack"
    a = load_conversations(src, "slack", group="g")[0].messages
    b = load_conversations(tmp_path / "acme.zip", "slack", group="g")[0].messages
    assert [m.model_dump(exclude={"source_ref"}) for m in a] == [m.model_dump(exclude={"source_ref"}) for m in b]


def test_slack_text_is_rendered_as_shown_with_mentions_in_a_field():
    text, mentions = render("hi <@U1> and <@U2|bee>, see <#C1|general> <https://x.org/?a=1&amp;b=2|doc> "
                            "<https://y.org> <!channel> 1 &lt; 2 &amp;&amp; <@U1>", {"U1": "Mei"}, {})
    assert text == "hi @Mei and @bee, see #general doc https://y.org @channel 1 < 2 && @Mei"
    assert mentions == ["U1", "U2"]


def test_whatsapp_ids_are_stable_when_a_later_export_adds_lines(tmp_path):
    src = (EXPORTS / "whatsapp" / "android.txt").read_text(encoding="utf-8")
    first = load_conversations(EXPORTS / "whatsapp" / "android.txt", "whatsapp", group="g")[0].messages
    later = tmp_path / "later.txt"
    later.write_text(src.replace("me <This message was edited>", "me, edited again <This message was edited>")
                     + "14/07/2025, 00:00 - Mei: same minute, second message\n", encoding="utf-8")
    second = load_conversations(later, "whatsapp", group="g")[0].messages
    # the ids are keyed by the text: every message but the edited one keeps its id (the ingest
    # joins the edited one to the stored message it replaces: tests/integration/test_chat_import.py)
    edited = next(m for m in second if m.speaker == "Ben" and m.edited)
    assert edited.text == "me, edited again"
    assert [m.id for m in second if m is not edited][: len(first) - 1] == [
        m.id for m in first if not (m.speaker == "Ben" and m.edited)]
    assert edited.id not in {m.id for m in first}
    assert len({m.id for m in second}) == len(second) == len(first) + 1


def test_whatsapp_ids_do_not_shift_when_a_later_export_lacks_a_line_of_the_minute(tmp_path):
    """Three messages of one minute by one person, then a later export without the first
    (deleted for you, or an export that starts mid-minute): b and c keep their ids. With ids
    counted per minute and speaker, b took a's id and c b's (two false edits, a lost, c twice)."""
    first, later = tmp_path / "first.txt", tmp_path / "later.txt"
    lines = ["01/07/2025, 10:02 - Ben 🚐: a\n", "01/07/2025, 10:02 - Ben 🚐: b\n", "01/07/2025, 10:02 - Ben 🚐: c\n"]
    first.write_text("".join(lines), encoding="utf-8")
    later.write_text("".join(lines[1:]), encoding="utf-8")
    ids = {m.text: m.id for m in load_conversations(first, "whatsapp", group="g")[0].messages}
    again = {m.text: m.id for m in load_conversations(later, "whatsapp", group="g")[0].messages}
    assert again == {"b": ids["b"], "c": ids["c"]}
    twice = tmp_path / "twice.txt"  # the same text twice in a minute: two messages, two ids
    twice.write_text(lines[0] + lines[0], encoding="utf-8")
    assert len({m.id for m in load_conversations(twice, "whatsapp", group="g")[0].messages}) == 2


def test_whatsapp_day_month_order_twelve_hour_and_multi_line(tmp_path):
    p = tmp_path / "chat.txt"
    p.write_text("3/4/25, 9:05 PM - Ana: first\nsecond line\n\nfourth line\n"
                 "3/4/25, 12:10 AM - Bo: after midnight?\n"
                 '3/4/25, 11:00 PM - Ana changed the subject from "Trip" to "Trip: day 1"\n', encoding="utf-8")
    *ms, subject = load_conversations(p, "whatsapp", group="g")[0].messages
    assert (subject.kind, subject.speaker, subject.text) == (
        "system", "system", 'Ana changed the subject from "Trip" to "Trip: day 1"')
    # no number above 12, written without leading zeros (the US format): month first (4 March);
    # 12:10 AM is 00:10
    assert [m.ts for m in ms] == ["2025-03-04T00:10:00", "2025-03-04T21:05:00"]
    assert ms[1].text == "first\nsecond line\n\nfourth line"


def test_platform_errors_name_file_record_and_field_and_skip_collects_them(tmp_path):
    data = json.loads((EXPORTS / "telegram" / "result.json").read_text(encoding="utf-8"))
    data["messages"][2]["from_id"] = None
    data["messages"][4]["date"] = "31/12/2025"
    p = tmp_path / "result.json"
    p.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(InvalidInputError) as e:
        load_conversations(p, "telegram", group="g")
    assert (e.value.source, e.value.record, e.value.field) == (str(p), "message 3", "from_id")
    rejects: list[Reject] = []
    conv = load_conversations(p, "telegram", group="g", rejects=rejects)[0]
    assert [(r.record, r.field) for r in rejects] == [("message 3", "from_id"), ("message 5", "date")]
    assert rejects[0].raw == data["messages"][2]
    assert [m.id for m in conv.messages] == ["1", "2", "4", "6", "7", "8"]


def test_skip_rejects_a_repeated_id_with_another_author(tmp_path):
    """Two exports of one Discord channel in one folder where a message id comes back with
    another author: --on-bad-record skip stopped the whole load (the repeated-id check ran
    outside the rejects handling); now the later one is a reject. Found by a messy-input trial."""
    early = _dce(("9", "Trip"), ("42", "general"), "8001", "2025-07-01T10:00:00+02:00")
    late = json.loads(json.dumps(early))
    late["messages"][0]["author"] = {"id": "8", "name": "ben", "nickname": "Ben", "isBot": False}
    late["messages"].append(dict(early["messages"][0], id="8002", timestamp="2025-07-01T10:05:00+02:00"))
    (tmp_path / "a-early.json").write_text(json.dumps(early), encoding="utf-8")
    (tmp_path / "b-late.json").write_text(json.dumps(late), encoding="utf-8")
    with pytest.raises(InvalidInputError) as e:
        load_conversations(tmp_path, "discord", group="g")
    assert e.value.field == "speaker_id"  # the person is the author id (graphmem.core.redelivery)
    rejects: list[Reject] = []
    (conv,) = load_conversations(tmp_path, "discord", group="g", rejects=rejects)
    assert [(m.id, m.speaker_id) for m in conv.messages] == [("8001", "7"), ("8002", "7")]
    assert [(r.field, r.raw) for r in rejects] == [("speaker_id", late["messages"][0])]


def test_discord_a_reply_to_itself_is_refused_not_dropped(tmp_path):
    """A message whose reference.messageId is its own id lost its link without a word, where
    docs/reliability.md says every loader refuses a reply to itself (field reply_to); with
    --on-bad-record skip it is a reject. Found by a messy-input trial."""
    data = _dce(("9", "Trip"), ("42", "general"), "8001", "2025-07-01T10:00:00+02:00")
    data["messages"].append(dict(data["messages"][0], id="8002", type="Reply", timestamp="2025-07-01T10:01:00+02:00",
                                 reference={"messageId": "8002", "channelId": "42", "guildId": "9"}))
    path = tmp_path / "self.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InvalidInputError) as e:
        load_conversations(path, "discord", group="g")
    assert (e.value.record, e.value.field) == ("message 8002", "reply_to") and "itself" in str(e.value)
    rejects: list[Reject] = []
    (conv,) = load_conversations(path, "discord", group="g", rejects=rejects)
    assert [m.id for m in conv.messages] == ["8001"]
    assert [(r.record, r.field, r.raw) for r in rejects] == [("message 8002", "reply_to", data["messages"][1])]


def test_skipping_is_refused_for_benchmark_formats():
    with pytest.raises(InvalidInputError) as e:
        load_conversations(EXPORTS / "telegram" / "result.json", "locomo", rejects=[])
    assert e.value.field == "on_bad_record"


def test_split_invalid_keeps_the_good_and_names_the_bad():
    conv = load_conversations(DISCORD, "discord", group="g")[0]
    bad = conv.messages[2].model_copy(update={"id": "x\u200by"})
    twice = conv.messages[3].model_copy(update={"speaker_id": "someone-else", "source_ref": "again"})
    mixed = conv.model_copy(update={"messages": [*conv.messages[:2], bad, *conv.messages[3:], twice]})
    kept, refused = split_invalid(mixed)
    validate(kept)
    assert [m.id for m in kept.messages] == [m.id for m in conv.messages if m.id != conv.messages[2].id]
    assert [(e.field, m.id) for m, e in refused] == [("id", "x\u200by"), ("speaker_id", conv.messages[3].id)]


def test_telegram_forwards_are_marked_polls_kept_and_numeric_from_ids_read(tmp_path):
    """A forwarded advert was stored as Ben's own words (``forwarded_from`` dropped); a poll was
    an empty message; an older export's numeric ``from_id`` refused the whole file."""
    chat = {"name": "TG", "type": "private_group", "id": 7, "messages": [
        {"id": 1, "type": "message", "date": "2025-07-01T10:00:00", "from": "Ben", "from_id": "user222",
         "forwarded_from": "Cheap Flights", "text": "Flights to Oslo from 49 EUR", "text_entities": []},
        {"id": 2, "type": "message", "date": "2025-07-01T10:01:00", "from": "Ben", "from_id": "user222",
         "forwarded_from": None, "text": "", "text_entities": []},
        {"id": 3, "type": "message", "date": "2025-07-01T10:02:00", "from": "Mei", "from_id": 111,
         "poll": {"question": "Oslo or Bergen?", "answers": [{"text": "Oslo"}]}, "text": "", "text_entities": []},
    ]}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(chat), encoding="utf-8")
    ms = load_conversations(path, "telegram", group="g")[0].messages
    assert [(m.speaker_id, m.text) for m in ms] == [
        ("user222", "[forwarded from Cheap Flights] Flights to Oslo from 49 EUR"),
        ("user222", "[forwarded]"),
        ("user111", "[poll: Oslo or Bergen?]"),
    ]


def test_whatsapp_deleted_message_placeholders_are_system_lines_on_both_phones(tmp_path):
    """Android wrote "This message was deleted" as Mei's own words, iOS (U+200E-led) as a system
    line: both are the platform's placeholder now."""
    android, ios = tmp_path / "a.txt", tmp_path / "i.txt"
    android.write_text("01/07/2025, 10:00 - Mei: This message was deleted\n"
                       "01/07/2025, 10:01 - Ben: You deleted this message\n"
                       "01/07/2025, 10:02 - Ben: This message was deleted by accident, I mean\n", encoding="utf-8")
    ios.write_text("[01/07/2025, 10:00:00] Mei: \u200eThis message was deleted.\n", encoding="utf-8")
    a = load_conversations(android, "whatsapp", group="g")[0].messages
    i = load_conversations(ios, "whatsapp", group="g")[0].messages
    assert [m.kind for m in a] == ["system", "system", ""] and a[2].speaker == "Ben"
    assert [m.kind for m in i] == ["system"] and a[0].speaker == i[0].speaker


def test_slack_messages_of_a_bot_user_are_bot_messages(tmp_path):
    """An app posting as its bot user (``user`` and ``bot_id``, the user ``is_bot`` in
    users.json) was filed as a person's words (kind "")."""
    root = tmp_path / "acme"
    (root / "general").mkdir(parents=True)
    (root / "users.json").write_text(json.dumps([
        {"id": "U01MEI", "name": "mei", "profile": {"display_name": "Mei"}, "is_bot": False},
        {"id": "U06BOT", "name": "deploybot", "profile": {"display_name": "Deploy Bot"}, "is_bot": True}]))
    (root / "channels.json").write_text(json.dumps([{"id": "C01", "name": "general"}]))
    (root / "general" / "2025-07-01.json").write_text(json.dumps([
        {"type": "message", "user": "U06BOT", "bot_id": "B01DEPLOY", "text": "deployed v2", "ts": "1751360000.000100"},
        {"type": "message", "user": "U01MEI", "text": "thanks", "ts": "1751360060.000200"},
        # Slackbot, which users.json lists with "is_bot": false, was a person saying its reminders
        {"type": "message", "user": "USLACKBOT", "text": "Reminder: pay the deposit.", "ts": "1751360120.000300"}]))
    users = json.loads((root / "users.json").read_text())
    (root / "users.json").write_text(json.dumps(users + [
        {"id": "USLACKBOT", "name": "slackbot", "profile": {"display_name": "Slackbot"}, "is_bot": False}]))
    ms = load_conversations(root, "slack", group="g")[0].messages
    assert [(m.speaker_id, m.kind) for m in ms] == [("U06BOT", "bot"), ("U01MEI", ""), ("USLACKBOT", "bot")]


def test_whatsapp_date_order_does_not_flip_between_two_exports_of_a_us_chat(tmp_path):
    """An iOS US export whose dates all read both ways was read day first (7/1/25 = 7 January),
    and a later export holding 7/13/25 month first: the same messages came again under other
    dates. Dates without leading zeros now read month first; zero-padded ones day first."""
    first, later, uk = tmp_path / "first.txt", tmp_path / "later.txt", tmp_path / "uk.txt"
    first.write_text("[7/1/25, 9:59:10 AM] Mei: hello\n", encoding="utf-8")
    later.write_text("[7/1/25, 9:59:10 AM] Mei: hello\n[7/13/25, 8:00:00 PM] Ben: later\n", encoding="utf-8")
    uk.write_text("01/07/2025, 09:59 - Mei: hello\n", encoding="utf-8")
    a = load_conversations(first, "whatsapp", group="g")[0].messages
    b = load_conversations(later, "whatsapp", group="g")[0].messages
    assert a[0].ts == b[0].ts == "2025-07-01T09:59:10" and a[0].id == b[0].id
    assert load_conversations(uk, "whatsapp", group="g")[0].messages[0].ts == "2025-07-01T09:59:00"


def test_whatsapp_spanish_dates_and_a_quoted_contact_name(tmp_path):
    """A second new-user trial: Spanish exports write d/M/yy without zero padding on a 24-hour
    clock, and were read month first (and flipped when a 13/7/25 came); a contact saved as
    Tom "Tommy" Berg made his message a system line."""
    first, later = tmp_path / "first.txt", tmp_path / "later.txt"
    base = "1/7/25, 21:41 - Ana: \u00bfquedamos el s\u00e1bado?\n5/7/25, 10:00 - Ana: llevo la tortilla\n"
    first.write_text(base, encoding="utf-8")
    later.write_text(base + "13/7/25, 18:00 - Luis: qu\u00e9 buen finde\n", encoding="utf-8")
    a = load_conversations(first, "whatsapp", group="g")[0].messages
    b = load_conversations(later, "whatsapp", group="g")[0].messages
    assert [m.ts for m in a] == [m.ts for m in b[:2]] == ["2025-07-01T21:41:00", "2025-07-05T10:00:00"]
    quoted = tmp_path / "q.txt"
    quoted.write_text('01/07/2025, 10:00 - Tom "Tommy" Berg: I booked the cabin\n'
                      '01/07/2025, 10:01 - Mei changed the subject to "plan: day 1"\n', encoding="utf-8")
    tom, subject = load_conversations(quoted, "whatsapp", group="g")[0].messages
    assert (tom.kind, tom.speaker, tom.text) == ("", 'Tom "Tommy" Berg', "I booked the cabin")
    assert (subject.kind, subject.text) == ("system", 'Mei changed the subject to "plan: day 1"')


def test_whatsapp_dates_that_read_both_ways_follow_the_chats_own_order(tmp_path):
    """A third trial, by an attacker of the importers: day-first dates without leading zeros on
    a 12-hour clock (``1/7/25, 10:00 am``) were read month first (1 July as 7 January, 2 July as
    7 February) and a later export with a 13/7/25 day first, so every message came again; a US
    iOS export on a 24-hour clock flipped the other way. The chat's dates are in time order and
    close together only when read the right way round."""
    cases = {
        "au": ("1/7/25, 10:00 am - Mei: deposit due\n2/7/25, 8:15 pm - Ben: booked\n4/7/25, 9:00 am - Li: ok\n",
               "13/7/25, 9:00 am - Ben: trip\n"),
        "us24": ("[7/1/25, 21:41:05] Mei: hi\n[7/2/25, 08:00:00] Ben: morning\n[7/5/25, 08:00:00] Li: yo\n",
                 "[7/13/25, 09:00:00] Mei: back\n"),
        "eu": ("01/07/2025, 10:00 - Mei: hi\n05/07/2025, 10:00 - Ben: yo\n", "13/07/2025, 10:00 - Mei: later\n"),
        # two dates: too little for the order to say; the form decides. Australian phones write
        # "am"/"pm" (US ones "AM"/"PM"): day first, as a later 13th confirms
        "au-two-days": ("1/7/25, 10:00 am - Mei: deposit due\n2/7/25, 8:15 pm - Ben: booked\n",
                        "13/7/25, 9:00 am - Ben: trip\n"),
        # two dates a month apart day first, a day apart month first: too little to say, so the
        # form decides (padded, 24-hour: day first), as it will when a 13th comes
        "uk-rent": ("01/07/2025, 21:41 - Anna: July rent paid\n01/08/2025, 09:00 - Anna: August rent paid\n",
                    "13/08/2025, 10:00 - Ben: thanks\n"),
    }
    for name, (base, more) in cases.items():
        first, later = tmp_path / f"{name}1.txt", tmp_path / f"{name}2.txt"
        first.write_text(base, encoding="utf-8")
        later.write_text(base + more, encoding="utf-8")
        a = load_conversations(first, "whatsapp", group="g")[0].messages
        b = load_conversations(later, "whatsapp", group="g")[0].messages
        assert a[0].ts[:10] == "2025-07-01", name
        assert [(m.id, m.ts) for m in a] == [(m.id, m.ts) for m in b[:len(a)]], name
    # a reading that puts a later line on an earlier day is refused: 3/1 then 2/2 read month
    # first (the old rule for unpadded 12-hour dates) is 1 March then 2 February
    order = tmp_path / "order.txt"
    order.write_text("3/1/25, 10:00 am - Mei: a\n2/2/25, 10:00 am - Ben: b\n", encoding="utf-8")
    assert [m.ts[:10] for m in load_conversations(order, "whatsapp", group="g")[0].messages] == [
        "2025-01-03", "2025-02-02"]


def test_whatsapp_body_lines_that_read_as_a_header_of_another_form_stay_text(tmp_path):
    """A body line starting with a year-first date or a dotted time read as a message of its own
    once those forms were read, and a year-first line flipped every date of a US chat. An
    export writes one header form: a line of another form is text."""
    us = tmp_path / "us.txt"
    us.write_text("7/1/25, 9:59 PM - Anna: agenda for the offsite:\n2025-07-14 09:00 - kickoff\n"
                  "7/2/25, 8:01 AM - Ben: looks good\n7/3/25, 10:00 AM - Anna: see you\n7/13/25, 10:00 AM - Li: hi\n",
                  encoding="utf-8")
    ms = load_conversations(us, "whatsapp", group="g")[0].messages
    assert [(m.speaker, m.ts[:10]) for m in ms] == [
        ("Anna", "2025-07-01"), ("Ben", "2025-07-02"), ("Anna", "2025-07-03"), ("Li", "2025-07-13")]
    assert ms[0].text == "agenda for the offsite:\n2025-07-14 09:00 - kickoff"
    de = tmp_path / "de.txt"
    de.write_text("13.07.25, 14:00 - Mei: Plan:\n13.07.25 14.30 - Abfahrt Bahnhof\n13.07.25, 14:05 - Ben: ok\n",
                  encoding="utf-8")
    ms = load_conversations(de, "whatsapp", group="g")[0].messages
    assert [(m.speaker, m.text) for m in ms] == [("Mei", "Plan:\n13.07.25 14.30 - Abfahrt Bahnhof"), ("Ben", "ok")]


def test_whatsapp_ios_group_names_with_a_colon_and_marked_person_content(tmp_path):
    """iOS writes a system line as "<group name>: \u200e<text>": with a group named "Trip: Rome
    2025" the split at the first ": " made "Trip" a person saying "Rome 2025: Mei added Ben". And
    a shared document, a poll or a location (also led by U+200E) became system lines, losing
    their sender."""
    chat = tmp_path / "_chat.txt"
    chat.write_text(
        "\u200e[13/07/2025, 10:00:01] Trip: Rome 2025: \u200eMei added Ben\n"
        "[13/07/2025, 10:01:00] Mei: hi: see you\n"
        "[13/07/2025, 10:01:30] Anna: Plan: \u200eColosseum first\n"  # a mark inside a plain message
        "\u200e[13/07/2025, 10:02:00] Mei: \u200eTrip plan.pdf \u2022 \u200e3 pages \u200e<attached: 00000013-Trip plan.pdf>\n"
        "\u200e[13/07/2025, 10:03:00] Ben: \u200ePOLL:\n\u200eWhere to eat?\n"
        "[13/07/2025, 10:04:00] Mei: \u200eLocation: https://maps.google.com/?q=1,2\n"
        "\u200e[13/07/2025, 10:05:00] Ben: \u200eVideo note omitted\n", encoding="utf-8")
    got = [(m.kind, m.speaker, m.text, [a.name for a in m.attachments])
           for m in load_conversations(chat, "whatsapp", group="g")[0].messages]
    assert got == [
        ("system", "system", "Mei added Ben", []),
        ("", "Mei", "hi: see you", []),
        ("", "Anna", "Plan: \u200eColosseum first", []),
        ("", "Mei", "", ["00000013-Trip plan.pdf"]),
        ("", "Ben", "POLL:\n\u200eWhere to eat?", []),
        ("", "Mei", "Location: https://maps.google.com/?q=1,2", []),
        ("", "Ben", "", [""]),
    ]


def test_whatsapp_export_with_media_reads_the_chat_not_a_shared_text_file(tmp_path):
    """An export "with media" holds the documents shared in the chat; a shared ``packing.txt``
    sorted before ``_chat.txt`` and was read as the chat (an error, or a forwarded chat export
    imported in its place). The unzipped folder was a traceback."""
    chat = "[13/07/2025, 10:01:00] Mei: hi\n"
    for shared in ("00000013-packing.txt", "DOC-20250701-WA0003.txt"):
        z = tmp_path / f"{shared}.zip"
        with zipfile.ZipFile(z, "w") as f:
            f.writestr(shared, "[13/07/2025, 09:00:00] Eve: a forwarded chat\n")  # reads as a chat too
            f.writestr("_chat.txt", chat)
        assert [m.speaker for m in load_conversations(z, "whatsapp", group="g")[0].messages] == ["Mei"]
    folder = tmp_path / "unzipped"
    folder.mkdir()
    (folder / "WhatsApp Chat with Trip.txt").write_text(chat, encoding="utf-8")
    (folder / "notes.txt").write_text("packing list\n", encoding="utf-8")
    assert detect_format(folder) == "whatsapp"
    assert [m.text for m in load_conversations(folder, "whatsapp", group="g")[0].messages] == ["hi"]
    two = tmp_path / "two.zip"
    with zipfile.ZipFile(two, "w") as f:
        f.writestr("a.txt", chat)
        f.writestr("b.txt", chat)
    with pytest.raises(InvalidInputError, match="cannot tell which .txt is the chat") as e:
        load_conversations(two, "whatsapp", group="g")
    assert e.value.field == "path"


def _dce(guild: tuple[str, str], channel: tuple[str, str], mid: str, ts: str) -> dict:
    return {"guild": {"id": guild[0], "name": guild[1]}, "channel": {"id": channel[0], "name": channel[1]},
            "messages": [{"id": mid, "type": "Default", "timestamp": ts, "content": "hi",
                          "author": {"id": "7", "name": "mei", "nickname": "Mei", "isBot": False}}]}


def test_discord_exports_of_two_servers_are_two_groups_and_a_channel_name_is_stable(tmp_path):
    """A new-user trial: a folder with exports of two servers and of direct messages became one
    group. Now one group per server (with --group: refused, naming them). A channel keeps its
    name whatever other files are loaded with it (a second trial found a name made unique from
    the files present changed with them)."""
    folder = tmp_path / "exports"
    folder.mkdir()
    files = {"crew.json": _dce(("9", "Trip Crew"), ("42", "general"), "1001", "2025-07-01T10:00:00+02:00"),
             "archive.json": _dce(("9", "Trip Crew"), ("88", "general"), "1002", "2025-07-01T11:00:00+02:00"),
             "games.json": _dce(("5", "Board Games"), ("77", "general"), "1003", "2025-07-01T12:00:00+02:00"),
             "dm.json": _dce(("0", "Direct Messages"), ("66", "mei"), "1004", "2025-07-01T13:00:00+02:00")}
    for name, data in files.items():
        (folder / name).write_text(json.dumps(data), encoding="utf-8")
    convs = load_conversations(folder, "discord")
    assert sorted((c.name, sorted(m.id for m in c.messages)) for c in convs) == [
        ("Board Games", ["1003"]), ("Direct Messages", ["1004"]), ("Trip Crew", ["1001", "1002"])]
    assert len({c.group_id for c in convs}) == 3
    with pytest.raises(InvalidInputError) as e:
        load_conversations(folder, "discord", group="mix")
    assert e.value.field == "guild" and "Board Games" in str(e.value) and "Direct Messages" in str(e.value)
    alone = tmp_path / "archive-alone.json"
    alone.write_text(json.dumps(files["archive.json"]), encoding="utf-8")
    together = next(c for c in convs if c.name == "Trip Crew")
    assert {m.id: m.channel for m in together.messages}["1002"] == load_conversations(alone, "discord")[0].messages[0].channel


def test_discord_forward_is_no_reply_and_two_exports_in_one_folder_may_rename_an_author(tmp_path):
    """A forward carries a reference into another channel; it was stored as a reply across
    channels (the check read a per-message channelId the exporter never writes). Two exports of
    one channel in one folder, an author renamed between them, were refused ("appears again with
    another speaker"), where loading them one after the other works."""
    deals = _dce(("9", "Trip"), ("55", "deals"), "5001", "2025-07-01T09:00:00+02:00")
    general = _dce(("9", "Trip"), ("42", "general"), "6001", "2025-07-01T10:00:00+02:00")
    general["messages"][0]["reference"] = {"messageId": "5001", "channelId": "55", "guildId": "9"}
    reply = dict(general["messages"][0], id="6002", type="Reply", timestamp="2025-07-01T10:01:00+02:00",
                 reference={"messageId": "6001", "channelId": "42", "guildId": "9"})
    general["messages"].append(reply)
    thread = _dce(("9", "Trip"), ("77", "plans"), "7001", "2025-07-01T10:02:00+02:00")
    thread["messages"][0].update(type="ThreadStarterMessage",
                                 reference={"messageId": "6001", "channelId": "42", "guildId": "9"})
    for name, data in (("deals", deals), ("general", general), ("plans", thread)):
        (tmp_path / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    got = {m.id: m.reply_to for m in load_conversations(tmp_path, "discord", group="g")[0].messages}
    assert got == {"5001": "", "6001": "", "6002": "6001", "7001": "6001"}

    two = tmp_path / "two"
    two.mkdir()
    early = _dce(("9", "Trip"), ("42", "general"), "8001", "2025-07-01T10:00:00+02:00")
    late = json.loads(json.dumps(early))
    late["messages"][0]["author"]["nickname"] = "Mei (away)"
    (two / "early.json").write_text(json.dumps(early), encoding="utf-8")
    (two / "late.json").write_text(json.dumps(late), encoding="utf-8")
    ms = load_conversations(two, "discord", group="g")[0].messages
    assert {(m.id, m.speaker_id) for m in ms} == {("8001", "7")}
    validate(load_conversations(two, "discord", group="g")[0])  # ingest's own check agrees


def test_telegram_cross_chat_replies_group_titles_and_files_not_included(tmp_path):
    """A reply to another chat's message (``reply_to_peer_id``) pointed at this chat's message of
    the same number; a group's new title was dropped from its service line; an export without
    media stored its placeholder "(File not included. …)" as the file's name."""
    chat = {"name": "TG", "type": "private_group", "id": 7, "messages": [
        {"id": 1, "type": "service", "date": "2025-07-01T10:00:00", "actor": "Mei", "actor_id": "user111",
         "action": "edit_group_title", "title": "Trip 2025", "text": "", "text_entities": []},
        {"id": 2, "type": "message", "date": "2025-07-01T10:01:00", "from": "Ben", "from_id": "user222",
         "text": "same here", "reply_to_message_id": 1},
        {"id": 3, "type": "message", "date": "2025-07-01T10:02:00", "from": "Ben", "from_id": "user222",
         "text": "quoting the other chat", "reply_to_message_id": 1, "reply_to_peer_id": "channel1234"},
        {"id": 4, "type": "message", "date": "2025-07-01T10:03:00", "from": "Mei", "from_id": "user111",
         "file": "(File not included. Change data exporting settings to download.)", "mime_type": "application/pdf",
         "text": ""},
    ]}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(chat), encoding="utf-8")
    ms = load_conversations(path, "telegram", group="g")[0].messages
    assert ms[0].text == 'Mei edit_group_title "Trip 2025"'
    assert [m.reply_to for m in ms] == ["", "1", "", ""]
    assert [(a.name, a.media_type) for a in ms[3].attachments] == [("", "application/pdf")]


def test_slack_words_held_only_in_blocks_or_attachments_are_kept(tmp_path):
    """A message with an empty ``text`` whose words sit in ``blocks`` (rich text, a section) or
    in legacy ``attachments`` (an integration's post) was stored text-less: its words lost."""
    root = tmp_path / "acme"
    (root / "general").mkdir(parents=True)
    (root / "users.json").write_text(json.dumps([
        {"id": "U01MEI", "name": "mei", "profile": {"display_name": "Mei"}},
        {"id": "U02BEN", "name": "ben", "profile": {"display_name": "Ben"}}]))
    (root / "channels.json").write_text(json.dumps([{"id": "C01", "name": "general"}]))
    deep: dict = {"type": "rich_text", "elements": []}
    cur = deep
    for _ in range(300):
        cur["elements"].append({"type": "rich_text_section", "elements": []})
        cur = cur["elements"][0]
    cur["elements"].append({"type": "text", "text": "too deep to be a real message"})
    rich = {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
        {"type": "text", "text": "see you at the airport, "}, {"type": "user", "user_id": "U02BEN"},
        {"type": "text", "text": " "}, {"type": "link", "url": "https://example.org/plan", "text": "plan"}]}]}
    (root / "general" / "2025-07-01.json").write_text(json.dumps([
        {"type": "message", "user": "U01MEI", "text": "", "blocks": [rich], "ts": "1751360000.000100"},
        {"type": "message", "subtype": "bot_message", "bot_id": "B01", "username": "jira", "text": "",
         "attachments": [{"fallback": "PROJ-1 created: Book hotel", "title": "PROJ-1 Book hotel",
                          "text": "Assignee: Ben"}], "ts": "1751360060.000200"},
        {"type": "message", "subtype": "bot_message", "bot_id": "B02", "username": "weather", "text": "",
         "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "*Sunny* 30C"}}],
         "ts": "1751360120.000300"},
        {"type": "message", "user": "U02BEN", "text": "", "files": [{"name": "a.png"}], "ts": "1751360180.000400"},
        # malformed parts (a number where a list goes, rich text nested 300 deep) are passed over:
        # a text-less message, not a traceback
        {"type": "message", "user": "U02BEN", "text": "", "ts": "1751360240.000500",
         "blocks": [{"type": "rich_text", "elements": 7}, {"fields": 3}, {"type": "context", "elements": 1}, 5],
         "attachments": 9},
        {"type": "message", "user": "U02BEN", "text": "", "ts": "1751360300.000600", "blocks": [deep]}]))
    ms = load_conversations(root, "slack", group="g")[0].messages
    assert [(m.text, m.mentions) for m in ms] == [
        ("see you at the airport, @Ben plan", ("U02BEN",)),
        ("PROJ-1 Book hotel\nAssignee: Ben", ()),
        ("*Sunny* 30C", ()),
        ("", ()),
        ("", ()),
        ("", ()),
    ]


def test_whatsapp_dates_and_placeholders_of_other_languages(tmp_path):
    """Valid exports were refused as "not a WhatsApp export" (year-first dates, a "." in the time,
    French "à", Finnish "klo"), the deleted-message and media placeholders of other languages
    were a person's words, and a German subject change („…“) was split inside its quotation."""
    forms = {
        "2025-07-13 21:41 - Mei: hej\n": "2025-07-13T21:41:00",  # Swedish
        "2025/07/13 21:41 - Mei: hi\n": "2025-07-13T21:41:00",  # Japanese
        "[2025/7/13 21:41:05] Mei: hi\n": "2025-07-13T21:41:05",  # Chinese iOS
        "13.07.2025 21.41 - Mei: hej\n": "2025-07-13T21:41:00",  # Danish
        "[13.7.2025 klo 21.41.05] Mei: moi\n": "2025-07-13T21:41:05",  # Finnish iOS
        "13/07/2025 à 21:41 - Mei: salut\n": "2025-07-13T21:41:00",  # French
    }
    for i, (line, ts) in enumerate(forms.items()):
        path = tmp_path / f"{i}.txt"
        path.write_text(line, encoding="utf-8")
        assert detect_format(path) == "whatsapp", line
        (m,) = load_conversations(path, "whatsapp", group="g")[0].messages
        assert (m.ts, m.speaker) == (ts, "Mei"), line
    de = tmp_path / "de.txt"
    de.write_text("13.07.25, 21:41 - Mei: <Medien ausgeschlossen>\n"
                  "13.07.25, 21:43 - Ben: Diese Nachricht wurde gelöscht.\n"
                  "13.07.25, 21:44 - Mei hat die Gruppe „Reise: 2025“ erstellt\n"
                  "13.07.25, 21:45 - Ana: „Zitat“ sagt sie: ja\n"
                  "13.07.25, 21:46 - Luis: Se eliminó este mensaje.\n", encoding="utf-8")
    got = [(m.kind, m.speaker, m.text, len(m.attachments)) for m in load_conversations(de, "whatsapp", group="g")[0].messages]
    assert got == [("", "Mei", "", 1), ("system", "system", "Ben: Diese Nachricht wurde gelöscht.", 0),
                   ("system", "system", "Mei hat die Gruppe „Reise: 2025“ erstellt", 0),
                   ("", "Ana", "„Zitat“ sagt sie: ja", 0), ("system", "system", "Luis: Se eliminó este mensaje.", 0)]


def test_slack_a_shared_message_is_not_the_sharers_words_and_a_thread_starter_numbered_21_keeps_its_link(tmp_path):
    """A shared message without comment carries the original author's words in an attachment;
    taking them as the text made the sharer say them. DiscordChatExporter writes a thread
    starter whose kind it has no name for as "21": its link to the parent channel stays."""
    root = tmp_path / "acme"
    (root / "general").mkdir(parents=True)
    (root / "users.json").write_text(json.dumps([{"id": "U01MEI", "name": "mei"}, {"id": "U02BEN", "name": "ben"}]))
    (root / "channels.json").write_text(json.dumps([{"id": "C01", "name": "general"}]))
    (root / "general" / "2025-07-01.json").write_text(json.dumps([
        {"type": "message", "user": "U02BEN", "text": "", "ts": "1751360000.000100",
         "attachments": [{"is_share": True, "is_msg_unfurl": True, "author_id": "U01MEI",
                          "text": "I will resign on Friday", "fallback": "[July 1st] Mei: I will resign on Friday"}]},
        {"type": "message", "user": "U01MEI", "text": "", "ts": "1751360060.000200", "blocks": [
            {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
                {"type": "broadcast", "range": "here"}, {"type": "text", "text": " lunch?"}]}]}]}]))
    ms = load_conversations(root, "slack", group="g")[0].messages
    assert [(m.speaker_id, m.text) for m in ms] == [("U02BEN", ""), ("U01MEI", "@here lunch?")]
    thread = _dce(("9", "Trip"), ("77", "plans"), "7001", "2025-07-01T10:02:00+02:00")
    thread["messages"][0].update(type="21", reference={"messageId": "6001", "channelId": "42", "guildId": "9"})
    (tmp_path / "t.json").write_text(json.dumps(thread), encoding="utf-8")
    (m,) = load_conversations(tmp_path / "t.json", "discord", group="g")[0].messages
    assert m.reply_to == "6001"


def test_a_zip_of_two_slack_exports_is_refused_not_half_read(tmp_path):
    """A zip holding two exports was read from the first one found, the other dropped without a
    word (the same two as folders were refused)."""
    z = tmp_path / "two.zip"
    with zipfile.ZipFile(z, "w") as f:
        for top in ("r1", "acme"):
            f.writestr(f"{top}/users.json", json.dumps([{"id": "U01", "name": "mei"}]))
            f.writestr(f"{top}/channels.json", json.dumps([{"id": "C01", "name": "general"}]))
            f.writestr(f"{top}/general/2025-07-01.json", json.dumps(
                [{"type": "message", "user": "U01", "text": top, "ts": "1751360000.000100"}]))
    assert detect_format(z) == "slack"  # so the load names the cause
    with pytest.raises(InvalidInputError, match="holds 2 Slack exports") as e:
        load_conversations(z, "slack", group="g")
    assert e.value.field == "path"


def test_a_chat_export_loaded_as_another_platform_says_which_it_is(tmp_path):
    """A new user gave --format slack to a WhatsApp .txt ("not a zip file nor a folder") and
    --format whatsapp to a Slack folder ("the export holds no .txt chat"): neither said what to
    do. A refusal of the whole input now names the format the input reads as."""
    wa = tmp_path / "chat.txt"
    wa.write_text("01/07/2025, 10:00 - Mei: hi\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="reads as a whatsapp export: load it as whatsapp") as e:
        load_conversations(wa, "slack", group="g")
    assert e.value.field == "path"
    slack_dir = tmp_path / "acme"
    (slack_dir / "general").mkdir(parents=True)
    (slack_dir / "channels.json").write_text(json.dumps([{"id": "C01", "name": "general"}]))
    with pytest.raises(InvalidInputError, match="reads as a slack export"):
        load_conversations(slack_dir, "whatsapp", group="g")
    discord_file = tmp_path / "d.json"
    discord_file.write_text(json.dumps(_dce(("9", "Trip"), ("42", "general"), "1", "2025-07-01T10:00:00+02:00")))
    with pytest.raises(InvalidInputError, match="reads as a discord export"):
        load_conversations(discord_file, "whatsapp", group="g")
    with pytest.raises(InvalidInputError, match="reads as a discord export"):
        load_conversations(discord_file, "telegram", group="g")
    bad = tmp_path / "bad.txt"  # nothing else either: the error as it was
    bad.write_text("hello\n", encoding="utf-8")
    with pytest.raises(InvalidInputError) as e:
        load_conversations(bad, "whatsapp", group="g")
    assert "reads as" not in str(e.value)
