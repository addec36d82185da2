"""Platform chat exports into the real store (issue 26 parts 1-3): Slack, Discord, Telegram and
WhatsApp fixture exports in the platforms' own layouts (tests/fixtures/exports/), each read back
from Neo4j field by field; re-import idempotence and a later export appending only what is new;
text-less messages through library, CLI, API and MCP; bot/system/text-less messages left out of
search documents and of the Writer's evidence; ``--on-bad-record skip --rejects``."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.verbatim.ingest import ingest_conversations
from loaders import load_conversations
from tests.integration.test_input_rules import cli

pytestmark = pytest.mark.neo4j
EXPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "exports"
DISCORD = next((EXPORTS / "discord").glob("*.json"))

FIELDS = ("m.id AS id, m.channel AS channel, m.session AS session, m.turn AS turn, m.ts AS ts, "
          "m.speaker AS speaker, p.id AS person, m.text AS text, m.kind AS kind, m.no_text AS no_text, "
          "m.reply_to AS reply_to, [(m)-[:REPLY_TO]->(r) | r.id][0] AS reply_link, "
          "m.attachment_names AS files, m.attachment_types AS types, m.mentions AS mentions, "
          "m.edited_ts AS edited_ts, m.edited AS edited, m.search_text AS search_text, m.turn_created AS pos, "
          "m.embedding IS NOT NULL AS vector, m:PendingEmbedding AS pending, m.text_history AS history")


def rows(store, gid: str) -> dict[str, dict]:
    got = store.read_text(f"MATCH (m:Message {{group_id: $g}})-[:SOURCE]->(p:Person) RETURN {FIELDS} "
                          "ORDER BY m.turn_created", g=gid)
    return {r["id"]: r for r in got}


def ingest_cli(path: Path, gid: str, *extra: str) -> dict:
    res = cli("ingest", str(path), "--format", "auto", "--group", gid, "--json", "--no-progress", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def later_discord(path: Path, ts: str, content: str, change: Callable[[dict], object]) -> Path:
    """A later export of the Discord fixture at ``path``: ``change`` applied to its JSON, and one
    new message (id ``1000000000000000009``) at ``ts`` saying ``content``."""
    data = json.loads(DISCORD.read_text(encoding="utf-8"))
    change(data)
    data["messages"].append(dict(data["messages"][-1], id="1000000000000000009", timestamp=ts, content=content))
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_slack_export_stored_field_by_field_and_reimport_changes_nothing(store, group_id, tmp_path):
    src = EXPORTS / "slack" / "acme-export"
    res = cli("ingest", str(src), "--format", "auto", "--group", group_id, "--json", "--no-progress")
    assert res.returncode == 0, res.stderr
    assert "detected format: slack" in res.stderr
    assert json.loads(res.stdout)["messages_written"] == 10
    got = rows(store, group_id)
    assert len(got) == 10
    join = got["C01GEN:1751360000.000100"]
    assert (join["kind"], join["person"], join["speaker"], join["mentions"]) == ("system", "system", "system", ["U04LI"])
    root = got["C01GEN:1751360100.000200"]
    assert root["text"] == "Deposit is due <Friday> & @Benny pays, ok @Ben? :tada:"  # as Slack shows it
    assert root["mentions"] == ["U02BEN", "U03BEN"]  # the two people shown as @Benny / @Ben
    assert (root["person"], root["speaker"], root["channel"], root["session"]) == (
        "U01MEI", "Mei", "general", "general/2025-07-01")
    assert (root["ts"], root["edited_ts"], root["edited"], root["kind"]) == (
        "2025-07-01T08:55:00.000200+00:00", "2025-07-01T08:56:40+00:00", True, "")
    reply = got["C01GEN:1751360400.000400"]
    assert (reply["person"], reply["speaker"], reply["reply_to"], reply["reply_link"]) == (
        "U03BEN", "Ben", "C01GEN:1751360100.000200", "C01GEN:1751360100.000200")
    # two people, one shown as "Ben" and one as "Benny", never merged
    assert got["C01GEN:1751360300.000300"]["person"] == "U02BEN"
    bot = got["C01GEN:1751360500.000500"]
    assert (bot["kind"], bot["person"], bot["speaker"]) == ("bot", "B01REM", "reminder")
    file_only = got["C01GEN:1751360600.000600"]
    assert (file_only["text"], file_only["no_text"], file_only["files"], file_only["types"], file_only["search_text"]) == (
        "", True, ["收据.png"], ["image/png"], None)
    assert (file_only["vector"], file_only["pending"], root["vector"], root["pending"]) == (False, False, True, False)
    late = got["C01GEN:1751414399.000700"]
    assert (late["speaker"], late["text"], late["session"]) == ("Mei\tT.", "我们的押金什么时候退\nsecond line",
                                                               "general/2025-07-01")  # a tab in the name, kept
    assert late["search_text"] == "Mei\tT.: 我们的押金什么时候退\nsecond line"  # the file-only turn before: no context
    after = got["C01GEN:1751414401.000800"]
    assert (after["session"], after["turn"], after["person"], after["speaker"]) == (
        "general/2025-07-02", 0, "U01MEI", "Mei (away)")  # midnight splits the day; the rename keeps the person
    zw = got["C01GEN:1751414500.000900"]
    assert (zw["text"], zw["no_text"], zw["search_text"]) == ("\u200b", True, None)
    trip = got["C02TRIP:1751360100.000200"]  # the same ts in another channel is another message
    assert (trip["channel"], trip["text"]) == ("trip", "see #general and the doc, @here")
    persons = store.read_text("MATCH (p:Person {group_id: $g}) RETURN p.id AS id, p.aliases AS aliases ORDER BY id",
                              g=group_id)
    mei = next(p for p in persons if p["id"] == "U01MEI")
    assert set(mei["aliases"]) == {"Mei", "Mei\tT.", "Mei (away)"}
    # the same export again (as a zip this time): nothing changes
    shutil.make_archive(str(tmp_path / "acme"), "zip", src.parent, src.name)
    again = ingest_cli(tmp_path / "acme.zip", group_id)
    assert (again["messages_written"], again["messages_edited"], again["messages_skipped"]) == (0, 0, 10)
    assert rows(store, group_id) == got


def test_discord_export_fields_and_a_later_export_appends_only_what_is_new(store, group_id, tmp_path):
    first = ingest_cli(DISCORD, group_id)
    assert first["messages_written"] == 8
    got = rows(store, group_id)
    join = got["1000000000000000001"]
    assert (join["kind"], join["person"], join["mentions"], join["no_text"]) == (
        "system", "system", ["333333333333333333"], True)
    root = got["1000000000000000002"]
    assert (root["person"], root["speaker"], root["ts"], root["session"], root["edited_ts"]) == (
        "111111111111111111", "Mei", "2025-07-01T23:59:30.123000+02:00", "general/2025-07-01",
        "2025-07-02T00:05:00+02:00")
    assert root["mentions"] == ["222222222222222222", "333333333333333333"]
    r1, r2 = got["1000000000000000003"], got["1000000000000000004"]
    assert (r1["person"], r1["speaker"], r1["reply_link"], r1["session"]) == (
        "222222222222222222", "Ben", "1000000000000000002", "general/2025-07-02")
    assert (r2["person"], r2["speaker"], r2["files"], r2["types"], r2["no_text"]) == (
        "333333333333333333", "Ben", ["receipt.jpg"], ["image/jpeg"], True)
    assert got["1000000000000000005"]["kind"] == "bot"
    sticker = got["1000000000000000006"]
    assert (sticker["person"], sticker["speaker"], sticker["types"]) == ("111111111111111111", "Mei 🌸", ["sticker"])
    assert got["1000000000000000008"]["text"] == "押金什么时候退？\n第二行"
    # a later export: one message edited, one new; the rest unchanged
    def edit(data: dict) -> None:
        data["messages"][2]["content"] = "ok 👍 (paid)"
        data["messages"][2]["timestampEdited"] = "2025-07-02T10:00:00.000+02:00"

    later = later_discord(tmp_path / "later.json", "2025-07-03T00:00:00.000+02:00", "new day", edit)
    second = ingest_cli(later, group_id)
    assert (second["messages_written"], second["messages_edited"], second["messages_skipped"]) == (1, 1, 7)
    now = rows(store, group_id)
    assert now["1000000000000000003"]["text"] == "ok 👍 (paid)"
    hist = store.read_text("MATCH (m:Message {group_id: $g, id: '1000000000000000003'}) "
                           "RETURN m.text_history AS h, m.edited_at AS at", g=group_id)[0]
    assert hist["h"] == ["ok 👍"] and hist["at"] == ["2025-07-02T10:00:00+02:00"]
    assert now["1000000000000000009"]["session"] == "general/2025-07-03"
    assert {k: v for k, v in now.items() if k not in ("1000000000000000003", "1000000000000000009")} == {
        k: v for k, v in got.items() if k != "1000000000000000003"}


def test_a_renamed_channel_keeps_its_stored_name_in_later_exports(store, group_id, tmp_path):
    """A later export of a channel renamed since (Discord, Slack): its message ids are the same,
    so it is the same channel. Nothing stored changes, and its new messages join the channel
    and sessions under the name it was stored with (before, the load was refused: "stored with
    another channel")."""
    first = ingest_cli(DISCORD, group_id)
    before = rows(store, group_id)
    later = later_discord(tmp_path / "Trip Crew - trip-planning.json", "2025-07-02T09:00:00.000+02:00",
                          "same day, new name", lambda data: data["channel"].update(name="trip-planning"))
    second = ingest_cli(later, group_id)
    assert (second["messages_written"], second["messages_skipped"]) == (1, first["messages_written"])
    assert second["channels_renamed"] == [f"{group_id}: trip-planning -> general"]
    human = cli("ingest", str(later), "--format", "discord", "--group", group_id, "--no-progress")
    assert "kept under its stored name: " + f"{group_id}: trip-planning -> general" in human.stdout + human.stderr
    now = rows(store, group_id)
    assert {k: v for k, v in now.items() if k != "1000000000000000009"} == before
    added = now["1000000000000000009"]
    assert (added["channel"], added["session"]) == ("general", "general/2025-07-02")
    assert added["turn"] == max(r["turn"] for r in before.values() if r["session"] == "general/2025-07-02") + 1
    sessions = store.read_text("MATCH (s:Session {group_id: $g}) RETURN collect(s.id) AS ids", g=group_id)[0]["ids"]
    assert not [s for s in sessions if s.startswith("trip-planning")]

    # Slack: the channel's folder and channels.json entry carry the new name
    slack_gid = group_id + "-slack"
    src = EXPORTS / "slack" / "acme-export"
    ingest_cli(src, slack_gid)
    stored = rows(store, slack_gid)
    copy = tmp_path / "acme-renamed"
    shutil.copytree(src, copy)
    (copy / "general").rename(copy / "announcements")
    channels = json.loads((copy / "channels.json").read_text(encoding="utf-8"))
    channels[0]["name"] = "announcements"
    (copy / "channels.json").write_text(json.dumps(channels), encoding="utf-8")
    day = json.loads((copy / "announcements" / "2025-07-02.json").read_text(encoding="utf-8"))
    day.append({"type": "message", "ts": "1751450000.000100", "user": "U02BEN", "text": "renamed, still here"})
    (copy / "announcements" / "2025-07-02.json").write_text(json.dumps(day), encoding="utf-8")
    again = ingest_cli(copy, slack_gid)
    assert (again["messages_written"], again["messages_skipped"]) == (1, len(stored))
    after = rows(store, slack_gid)
    assert {k: v for k, v in after.items() if k != "C01GEN:1751450000.000100"} == stored
    assert (after["C01GEN:1751450000.000100"]["channel"], after["C01GEN:1751450000.000100"]["session"]) == (
        "general", "general/2025-07-02")
    assert after["C02TRIP:1751360100.000200"]["channel"] == "trip"  # the other channel is untouched


def test_telegram_export_fields(store, group_id):
    ingest_cli(EXPORTS / "telegram" / "result.json", group_id)
    got = rows(store, group_id)
    assert [r["id"] for r in got.values()] == [str(i) for i in range(1, 9)]
    assert (got["1"]["kind"], got["1"]["person"], got["1"]["mentions"]) == ("system", "system", ["user111"])
    m2 = got["2"]
    assert (m2["text"], m2["mentions"], m2["ts"], m2["edited_ts"], m2["person"]) == (
        "Deposit due Friday, Ben ok? 押金", ["user222"], "2025-07-01T10:01:00+03:00", "2025-07-01T10:05:00+03:00",
        "user111")
    # two people named "Ben" stay two
    assert (got["3"]["person"], got["4"]["person"], got["3"]["speaker"], got["4"]["speaker"]) == (
        "user222", "user333", "Ben", "Ben")
    assert (got["4"]["reply_link"], got["4"]["files"], got["4"]["no_text"]) == (
        "2", ["photos/photo_1@01-07-2025_10-03-00.jpg"], True)
    assert got["5"]["text"] == "line one\nline two 🎉" and got["5"]["session"] == "2025-07-01"
    assert (got["6"]["session"], got["6"]["person"], got["6"]["speaker"], got["6"]["types"]) == (
        "2025-07-02", "user111", "Mei T.", ["sticker"])
    assert (got["8"]["text"], got["8"]["no_text"], got["8"]["search_text"]) == ("   ", True, None)


def test_an_older_telegram_export_without_offsets_then_a_newer_one_is_a_redelivery(store, group_id, tmp_path):
    """Telegram Desktop wrote no ``date_unixtime`` before 2021, so its times carry no offset; a
    newer export of the same chat writes it, and every message was refused as "stored with
    another ts". A local time without offset is the same time as that local time with one."""
    src = EXPORTS / "telegram" / "result.json"
    data = json.loads(src.read_text(encoding="utf-8"))
    for m in data["messages"]:
        m.pop("date_unixtime", None)
        m.pop("edited_unixtime", None)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    first = ingest_cli(old, group_id)
    before = rows(store, group_id)
    assert all(not r["ts"].endswith(("+03:00", "Z")) and "+" not in r["ts"][19:] for r in before.values())
    again = ingest_cli(src, group_id)
    assert (again["messages_written"], again["messages_edited"], again["messages_skipped"]) == (
        0, 0, first["messages_written"])
    assert rows(store, group_id) == before  # kept as stored
    moved = json.loads(src.read_text(encoding="utf-8"))
    moved["messages"][1]["date"] = "2025-07-02T10:01:00"  # another local time is another ts: still refused
    bad = tmp_path / "moved.json"
    bad.write_text(json.dumps(moved, ensure_ascii=False), encoding="utf-8")
    res = cli("ingest", str(bad), "--format", "auto", "--group", group_id, "--json", "--no-progress")
    assert res.returncode != 0 and "another ts" in res.stderr


def test_a_reply_link_a_later_load_no_longer_gives_is_kept_not_refused(store, group_id, tmp_path):
    """Loaders that stopped reading a forward (Discord) or another chat's message (Telegram) as
    a reply re-send those messages without ``reply_to``; every later export of a chat loaded
    before was refused ("stored with another reply_to"). The stored link is kept; a different
    link is still refused."""
    def jsonl(name: str, reply: str) -> Path:
        path = tmp_path / name
        rows_ = [{"id": "p1", "speaker": "Mei", "speaker_id": "u1", "text": "deal: Rome 49 EUR",
                  "session": "s1", "ts": "2025-07-01T10:00:00+00:00"},
                 {"id": "p2", "speaker": "Ben", "speaker_id": "u2", "text": "fwd", "session": "s1",
                  "ts": "2025-07-01T10:01:00+00:00",
                  "reply_to": reply},
                 {"id": "p3", "speaker": "Li", "speaker_id": "u3", "text": "nice", "session": "s1",
                  "ts": "2025-07-01T10:02:00+00:00"}]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows_), encoding="utf-8")
        return path

    assert ingest_cli(jsonl("old.jsonl", "p1"), group_id)["messages_written"] == 3
    before = rows(store, group_id)
    again = ingest_cli(jsonl("new.jsonl", ""), group_id)
    assert (again["messages_written"], again["messages_edited"], again["messages_skipped"]) == (0, 0, 3)
    assert rows(store, group_id) == before and before["p2"]["reply_link"] == "p1"
    res = cli("ingest", str(jsonl("other.jsonl", "p3")), "--format", "jsonl", "--group", group_id, "--json",
              "--no-progress")
    assert res.returncode != 0 and "another reply_to" in res.stderr


def test_telegram_full_export_keeps_each_chat_apart_and_replies_to_a_photo(store, group_id, tmp_path):
    """A full Telegram export (``chats.list`` and ``left_chats``): each chat a channel, ids
    ``<chat id>:<id>`` (two chats both have a message 2), replies resolved inside their own chat
    (also to a photo without text), one person across chats by ``from_id``."""
    one = json.loads((EXPORTS / "telegram" / "result.json").read_text(encoding="utf-8"))
    other = {"name": "Ops/Room", "type": "private_supergroup", "id": 5000000002, "messages": [
        {"id": 2, "type": "message", "date": "2025-07-03T09:00:00", "date_unixtime": "1751522400",
         "from": "Mei", "from_id": "user111", "photo": "photos/map.jpg", "text": "", "text_entities": []},
        {"id": 3, "type": "message", "date": "2025-07-03T09:01:00", "date_unixtime": "1751522460",
         "from": "Li", "from_id": "user444", "reply_to_message_id": 2, "text": "that map is old",
         "text_entities": []},
    ]}
    left = {"name": "Old chat", "type": "private_group", "id": 6000000003, "messages": [
        {"id": 1, "type": "message", "date": "2025-06-01T08:00:00", "date_unixtime": "1748757600",
         "from": "Ben", "from_id": "user222", "text": "bye all", "text_entities": []}]}
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"about": "full export", "chats": {"about": "", "list": [one, other]},
                                "left_chats": {"about": "", "list": [left]}}, ensure_ascii=False),
                    encoding="utf-8")
    summary = ingest_cli(path, group_id)
    got = rows(store, group_id)
    assert summary["messages_written"] == len(one["messages"]) + 3 == len(got)
    assert {r["channel"] for r in got.values()} == {"Trip 🌴 2025", "Ops-Room", "Old chat"}  # "/" is not id-safe
    first, second = got["4000000001:2"], got["5000000002:2"]
    assert first["channel"] != second["channel"] and first["text"].startswith("Deposit due Friday")
    assert (second["no_text"], second["files"], second["person"]) == (True, ["photos/map.jpg"], "user111")
    reply = got["5000000002:3"]
    assert (reply["reply_to"], reply["reply_link"]) == ("5000000002:2", "5000000002:2")  # its own chat's 2
    assert got["4000000001:3"]["reply_link"] == "4000000001:2"
    assert got["6000000003:1"]["person"] == "user222" == got["4000000001:3"]["person"]
    assert (ingest_cli(path, group_id)["messages_written"]) == 0


@pytest.mark.parametrize("name", ["android.txt", "ios.txt"])
def test_whatsapp_export_fields_and_stable_ids(store, group_id, name):
    path = EXPORTS / "whatsapp" / name
    ingest_cli(path, group_id)
    got = list(rows(store, group_id).values())
    assert len(got) == 8
    assert got[0]["kind"] == "system" and got[0]["person"] == "system"
    assert got[1 if name == "ios.txt" else 2]["text"].startswith("Deposit due Friday\nwho pays?")
    edited = next(r for r in got if r["edited"])
    assert edited["text"] in ("me", "ok") and edited["speaker"] == "Ben"
    media = [r for r in got if r["no_text"] and r["kind"] == ""]
    assert media and all(r["search_text"] is None and r["types"] for r in media)
    if name == "ios.txt":  # month first (1/13/25), 12-hour with U+202F, a U+200E-led system line
        assert got[-1]["ts"] == "2025-01-14T00:00:01" and got[-1]["kind"] == "system"
        assert got[-1]["text"] == "Mei added Li"
        assert [r["session"] for r in got[-3:]] == ["2025-01-13", "2025-01-14", "2025-01-14"]
    else:
        assert got[-1]["ts"] == "2025-07-14T00:00:00" and got[-2]["session"] == "2025-07-13"
        assert got[5]["speaker"] == "+49 151 2345678" and got[5]["files"] == ["IMG-20250701-WA0003.jpg"]
    again = ingest_cli(path, group_id)
    assert (again["messages_written"], again["messages_skipped"]) == (0, 8)


def test_whatsapp_later_exports_edit_the_right_message_and_shift_no_other(store, embedder, group_id, tmp_path):
    """WhatsApp has no message ids. A later export where Ben edited "me" again: the edited line
    has a new derived id, and the ingest joins it to the one stored message of its minute and
    speaker that the export no longer holds (an edit with history, not a second message). A
    later export without a line of a busy minute (deleted for you): nothing shifts, nothing is
    rewritten (b used to become an edit of a, and c of b)."""
    src = (EXPORTS / "whatsapp" / "android.txt").read_text(encoding="utf-8")
    busy = "".join(f"01/07/2025, 10:02 - Ben: {t}\n" for t in ("a", "b", "c"))
    first = tmp_path / "first.txt"
    first.write_text(src + busy, encoding="utf-8")
    assert ingest_cli(first, group_id)["messages_written"] == 11
    before = rows(store, group_id)
    later = tmp_path / "later.txt"
    later.write_text(src.replace("me <This message was edited>", "me, edited again <This message was edited>")
                     + busy.replace("01/07/2025, 10:02 - Ben: a\n", ""), encoding="utf-8")
    got = ingest_cli(later, group_id)
    assert (got["messages_written"], got["messages_edited"], got["messages_skipped"]) == (0, 1, 9), got
    after = rows(store, group_id)
    assert set(after) == set(before)  # the same messages, no second "me", "a" kept
    changed = {mid: (after[mid]["text"], after[mid]["history"]) for mid in after
               if after[mid]["text"] != before[mid]["text"]}
    assert list(changed.values()) == [("me, edited again", ["me"])], changed
    assert sorted(r["text"] for r in after.values() if r["ts"] == "2025-07-01T10:02:00") == ["a", "b", "c"]
    assert ingest_cli(later, group_id)["messages_written"] == 0  # and again: nothing
    # "b" edited in a later export, then an export that starts after "a" (the window slid): two
    # stored messages of that minute are missing from it, and the edit came again as a new
    # message. The stored message that holds the edited text is the one.
    edit_b = tmp_path / "edit_b.txt"
    edit_b.write_text(src.replace("me <This message was edited>", "me, edited again <This message was edited>")
                      + busy.replace("Ben: b\n", "Ben: b2 <This message was edited>\n"), encoding="utf-8")
    got = ingest_cli(edit_b, group_id)
    assert (got["messages_written"], got["messages_edited"]) == (0, 1), got
    slid = tmp_path / "slid.txt"
    slid.write_text("01/07/2025, 10:02 - Ben: b2 <This message was edited>\n01/07/2025, 10:02 - Ben: c\n",
                    encoding="utf-8")
    now = rows(store, group_id)
    got = ingest_cli(slid, group_id)
    assert (got["messages_written"], got["messages_edited"], got["messages_skipped"]) == (0, 0, 2), got
    assert rows(store, group_id) == now
    assert sorted(r["text"] for r in now.values() if r["ts"] == "2025-07-01T10:02:00") == ["a", "b2", "c"]


def test_flagged_messages_are_not_writer_evidence_nor_search_documents(store, group_id):
    from graphmem.derived.writer.prompt import build_writer_messages
    from graphmem.derived.writer.segments import load_messages, load_roster, plan_segments

    ingest_conversations(store, load_conversations(EXPORTS / "slack" / "acme-export", "slack", group=group_id),
                         None, embed="later")
    segments = plan_segments(load_messages(store, group_id))
    every = {m.id for sg in segments for m in sg.messages}
    evidence = {m.id for sg in segments for m in sg.evidence}
    assert len(every) == 10  # all covered by a segment (none stays pending forever)
    assert evidence == {"C01GEN:1751360100.000200", "C01GEN:1751360300.000300", "C01GEN:1751360400.000400",
                        "C01GEN:1751414399.000700", "C01GEN:1751414401.000800", "C02TRIP:1751360100.000200"}
    _, roster, _ = load_roster(store, group_id)
    general = next(sg for sg in segments if sg.session == "general/2025-07-01")
    prompt = build_writer_messages(roster, general, [], 8)[1]["content"]
    assert "Reminder: pay the deposit" not in prompt and "has joined" not in prompt
    docs = store.read("recall/group_documents", group_id=group_id)
    assert len(docs) == 8  # the two text-less messages have no document


def test_text_less_messages_stored_through_library_cli_api_and_mcp(store, embedder, group_id, tmp_path):
    from graphmem.groups.service import append_messages

    blanks = ["", "   ", "\n\t", "\u200b"]
    base = [{"id": "t0", "speaker": "Ana", "text": "see the file", "ts": "2026-03-01T10:00:00"}]
    lib = [{"id": f"lib{i}", "speaker": "Ana\tB", "text": t, "ts": f"2026-03-01T10:01:0{i}", "reply_to": "t0",
            "attachments": [{"name": "a.png", "media_type": "image/png"}] if i == 0 else []}
           for i, t in enumerate(blanks)]
    s = append_messages(store, embedder, group_id, base + lib)
    assert s.messages_written == 5
    path = tmp_path / "blank.jsonl"
    path.write_text("".join(json.dumps({"group": group_id, "session": "main", "id": f"cli{i}", "speaker": "Ana",
                                        "text": t, "ts": f"2026-03-01T10:02:0{i}"}) + "\n"
                            for i, t in enumerate(blanks)), encoding="utf-8")
    res = cli("ingest", str(path), "--format", "jsonl", "--json", "--no-progress")
    assert res.returncode == 0 and json.loads(res.stdout)["messages_written"] == 4, res.stderr
    with TestClient(create_app(Settings(_env_file=None))) as c:
        r = c.post(f"/groups/{group_id}/messages", json={"messages": [
            {"id": f"api{i}", "speaker": "Ana", "text": t, "ts": f"2026-03-01T10:03:0{i}", "kind": "bot" if i else ""}
            for i, t in enumerate(blanks)]})
        assert r.status_code == 200 and r.json()["messages_written"] == 4, r.text
    from tests.integration.test_mcp import agent, call

    async def mcp() -> dict:
        async with agent("--tools", "all") as client:
            return await call(client, "append_messages", group_id=group_id, messages=[
                {"id": f"mcp{i}", "speaker": "Ana", "text": t, "ts": f"2026-03-01T10:04:0{i}"}
                for i, t in enumerate(blanks)])

    assert asyncio.run(mcp())["messages_written"] == 4
    got = rows(store, group_id)
    assert len(got) == 17
    for mid, r in got.items():
        if mid == "t0":
            continue
        prefix = mid.rstrip("0123456789")
        assert r["text"] == blanks[int(mid[len(prefix):])] and r["no_text"] is True and r["search_text"] is None, r
        assert (r["vector"], r["pending"]) == (False, False), r  # not in dense search, never waiting for a vector
    assert [r["id"] for r in sorted(got.values(), key=lambda r: r["pos"])] == list(got)  # in time order
    assert got["lib1"]["reply_link"] == "t0" and got["lib0"]["files"] == ["a.png"]
    assert got["lib0"]["speaker"] == "Ana\tB" and got["api1"]["kind"] == "bot"


def test_skip_bad_records_into_a_rejects_file(store, group_id, tmp_path):
    path = tmp_path / "mixed.jsonl"
    lines = [
        json.dumps({"session": "s", "id": "g1", "speaker": "Ana", "text": "one", "ts": "2026-03-01T10:00:00"}),
        "{not json",
        json.dumps({"session": "s", "id": "g2", "speaker": "Ana", "text": "two", "ts": "not a time"}),
        json.dumps({"session": "s", "id": "bad\u200bid", "speaker": "Ana", "text": "three", "ts": "2026-03-01T10:00:02"}),
        json.dumps({"session": "s", "id": "g3", "speaker": "Ana", "text": "four", "ts": "2026-03-01T10:00:03"}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # the default stays all-or-nothing, naming file, record and field
    res = cli("ingest", str(path), "--group", group_id, "--no-progress")
    assert res.returncode == 1 and "record line 2" in res.stderr and "field 'json'" in res.stderr, res.stderr
    assert rows(store, group_id) == {}
    rejects = tmp_path / "rejects.jsonl"
    summary = ingest_cli(path, group_id, "--on-bad-record", "skip", "--rejects", str(rejects))
    assert (summary["messages_written"], summary["messages_rejected"]) == (2, 3)
    assert set(rows(store, group_id)) == {"g1", "g3"}
    bad = [json.loads(x) for x in rejects.read_text(encoding="utf-8").splitlines()]
    assert [(b["record"], b["field"]) for b in bad] == [("line 2", "json"), ("line 3", "ts"), ("line 4", "id")]
    assert all(b["source"] == str(path) and b["rule"] for b in bad)
    assert bad[0]["raw"] == "{not json" and bad[1]["raw"]["ts"] == "not a time" and bad[2]["raw"]["text"] == "three"
    # skip without a rejects file is refused before anything is read
    res = cli("ingest", str(path), "--group", group_id, "--on-bad-record", "skip", "--no-progress")
    assert res.returncode != 0 and "--rejects" in res.stderr


def test_skip_takes_a_repeated_id_and_a_bad_group_line_to_the_rejects_file(store, group_id, tmp_path):
    """--on-bad-record skip stopped the load for a repeated id with another speaker (with a
    misleading "--format" hint) and for a line whose group id breaks the grammar (an error
    naming no line). Now both are rejects; without skip the error names the line. Found by a
    messy-input trial."""
    def row(**kw: str) -> str:
        return json.dumps({"group": group_id, "session": "s", "speaker": "Ana", "text": "one",
                           "ts": "2026-03-01T10:00:00", **kw})

    repeated = tmp_path / "repeated.jsonl"
    repeated.write_text("\n".join([row(id="m1"), row(id="m1", speaker="Ben")]) + "\n", encoding="utf-8")
    res = cli("ingest", str(repeated), "--no-progress")
    assert res.returncode == 1 and "record line 2, field 'speaker'" in res.stderr, res.stderr
    assert "--format" not in res.stderr  # a file that reads as JSON Lines: no hint about the format
    grouped = tmp_path / "grouped.jsonl"
    grouped.write_text("\n".join([row(id="m1"), row(id="m2", group="g/r")]) + "\n", encoding="utf-8")
    res = cli("ingest", str(grouped), "--no-progress")
    assert res.returncode == 1 and "record line 2, field 'group'" in res.stderr, res.stderr
    assert rows(store, group_id) == {}

    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join([row(id="m1"), row(id="m1", speaker="Ben"), row(id="m2", group="g/r"),
                                row(id="m3", group="g" * 201), row(id="m4", text="four")]) + "\n", encoding="utf-8")
    rejects = tmp_path / "rejects.jsonl"
    res = cli("ingest", str(mixed), "--json", "--no-progress", "--on-bad-record", "skip", "--rejects", str(rejects))
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert (summary["messages_written"], summary["messages_rejected"]) == (2, 3)
    assert set(rows(store, group_id)) == {"m1", "m4"} and rows(store, group_id)["m1"]["speaker"] == "Ana"
    bad = [json.loads(x) for x in rejects.read_text(encoding="utf-8").splitlines()]
    assert sorted((b["record"], b["field"]) for b in bad) == [("line 2", "speaker"), ("line 3", "group"),
                                                             ("line 4", "group")]
    assert all(b["source"] == str(mixed) and b["raw"]["group"] for b in bad)


def test_skip_in_a_platform_export_and_for_the_first_load_importer(group_id, tmp_path):
    from graphmem.cli.ingest import load_input
    from graphmem.verbatim.bulk_import import write_csv

    data = json.loads(DISCORD.read_text(encoding="utf-8"))
    data["messages"][3]["timestamp"] = "yesterday"
    data["messages"][4]["author"] = {"name": "no id"}
    bad_file = tmp_path / "bad.json"
    bad_file.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(InvalidInputError) as e:
        load_conversations(bad_file, "discord", group=group_id)
    assert (e.value.source, e.value.record, e.value.field) == (str(bad_file), "message 1000000000000000004", "timestamp")
    rejects = tmp_path / "rejects.jsonl"
    convs, n = load_input(bad_file, "auto", group_id, "skip", rejects)
    assert n == 2 and len(convs[0].messages) == 6
    bad = [json.loads(x) for x in rejects.read_text(encoding="utf-8").splitlines()]
    assert [(b["record"], b["field"]) for b in bad] == [("message 1000000000000000004", "timestamp"),
                                                       ("message 1000000000000000005", "author.id")]
    summary = write_csv(convs, tmp_path / "csv")  # what `graphmem neo4j import --on-bad-record skip` writes
    assert summary.messages_written == 6
    header = (tmp_path / "csv" / "messages.csv").read_text(encoding="utf-8").splitlines()[0]
    assert '"no_text:boolean"' in header and '"kind"' in header



def test_an_export_loaded_without_format_says_it_was_read_as_jsonl(store, group_id):
    """``graphmem ingest chat.txt`` (no --format) read the WhatsApp file as JSON Lines and said
    only "malformed JSON line"; the error now names the default and the way out."""
    res = cli("ingest", str(EXPORTS / "whatsapp" / "android.txt"), "--group", group_id, "--no-progress")
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "field 'json'" in res.stderr and "read as JSON Lines, the default --format" in res.stderr, res.stderr
    assert "--format auto" in res.stderr
    assert store.read_text("MATCH (m:Message {group_id: $g}) RETURN count(m) AS n", g=group_id)[0]["n"] == 0
    given = cli("ingest", str(EXPORTS / "whatsapp" / "android.txt"), "--format", "jsonl", "--group", group_id)
    assert given.returncode == 1 and "the default --format" not in given.stderr  # asked for: no hint
