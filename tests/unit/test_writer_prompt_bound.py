"""The Writer prompt of a very large group stays bounded (issue 27, item 10): 5,000 members and
5,000 current records give a prompt of the size a 200-member group gives, and what it lists is
what the segment needs: its speakers, the people it names, their records and the group's own.
(The integration twin, tests/integration/test_large_group.py, sends the prompt to a scripted
Writer through derive.)"""

from __future__ import annotations

from graphmem.derived.memory import GROUP, DerivedRecord
from graphmem.derived.writer import build_writer_messages, plan_segments
from graphmem.derived.writer.prompt import WRITER_MAX_MEMORY_RECORDS, WRITER_MAX_PARTICIPANTS, prompt_selection
from graphmem.derived.writer.segments import SegmentMessage, WriterSegment
from graphmem.verbatim.roster import Roster

N = 5000
#: Bytes (UTF-8) the user message of one Writer call may take for the 5,000-member group.
PROMPT_BOUND_BYTES = 64_000


def member(i: int) -> dict[str, object]:
    return {"id": f"u{i:04d}", "name": f"Member{i:04d}", "aliases": [f"Member{i:04d}"]}


def record(i: int, owner: str, source: str, turn: int) -> DerivedRecord:
    kind = "group" if owner == GROUP else "person"
    return DerivedRecord(
        id=f"e{i}", group_id="big", layer="group_interaction" if owner == GROUP else "per_speaker_core",
        utype="fact", content=f"record number {i} about {owner}: likes hiking on weekends", ts="2026-03-05T10:00:00",
        turn_created=turn, owner=owner, owner_kind=kind, source=source,
        source_kind="group" if source == GROUP else "person", from_ids=[f"m{i}"])


def big_group() -> tuple[Roster, list[DerivedRecord]]:
    roster = Roster([member(i) for i in range(N)])
    heads = [record(i, f"u{i:04d}", f"u{i:04d}", turn=i) for i in range(N - 10)]
    heads += [record(i, GROUP, f"u{i:04d}", turn=i) for i in range(N - 10, N)]
    return roster, heads


def segment() -> WriterSegment:
    msgs = [
        SegmentMessage(id="n1", session="s9", turn=0, ts="2026-06-01T10:00:00", turn_created=N + 1,
                       text="Has anyone asked Member0042 about the trip?", speaker="Member0007", person_id="u0007"),
        SegmentMessage(id="n2", session="s9", turn=1, ts="2026-06-01T10:01:00", turn_created=N + 2,
                       text="I will, and u0099 wants to come too.", speaker="Member0013", person_id="u0013"),
    ]
    return plan_segments(msgs)[0]


def test_prompt_of_a_5000_member_group_with_5000_records_is_bounded():
    roster, heads = big_group()
    system, user = build_writer_messages(roster, segment(), heads, max_actions=8)
    size = len(user["content"].encode("utf-8"))
    assert size < PROMPT_BOUND_BYTES, size
    # unbounded (every member and every record, as before), the same call is over 300 KB
    _, whole = build_writer_messages(roster, segment(), heads, max_actions=8, max_participants=10**6,
                                     max_records=10**6, max_memory_chars=10**9)
    assert len(whole["content"].encode("utf-8")) > 300_000

    text = user["content"]
    participants = text.split("\n", 1)[0]
    # the speakers and the people the messages name (by display name or by id) come first
    assert participants.startswith("PARTICIPANTS: Member0007, Member0013, Member0042, Member0099, ")
    assert f"({WRITER_MAX_PARTICIPANTS} of {N} members" in participants
    assert f"CURRENT MEMORY ({WRITER_MAX_MEMORY_RECORDS} of the group's {N} current records" in text
    # their records are listed, and the group's own; the rest is the most recent
    for rid in ("e7", "e13", "e42", "e99", f"e{N - 1}", f"e{N - 10}"):
        assert f"\n{rid} [" in text, rid
    assert "\ne1000 [" not in text  # old and about no one in the segment


def test_selection_keeps_record_lines_within_the_character_bound():
    roster, heads = big_group()
    pick = prompt_selection(roster, segment(), heads, max_participants=50, max_records=10_000, max_chars=5_000)
    assert len(pick.participants) == 50 and pick.members == N and pick.heads == N
    assert 0 < len(pick.records) < 100  # ~70 characters a line
    assert [r.turn_created for r in pick.records] == sorted(r.turn_created for r in pick.records)


def test_a_small_group_is_listed_whole_in_roster_order():
    roster = Roster([member(i) for i in range(5)])
    heads = [record(i, f"u{i:04d}", f"u{i:04d}", turn=i) for i in range(5)]
    seg = plan_segments([SegmentMessage(id="n1", session="s", turn=0, ts="2026-06-01T10:00:00", turn_created=9,
                                        text="hi", speaker="Member0003", person_id="u0003")])[0]
    _, user = build_writer_messages(roster, seg, heads, max_actions=8)
    assert "PARTICIPANTS: Member0000, Member0001, Member0002, Member0003, Member0004 (and GROUP" in user["content"]
    assert "CURRENT MEMORY (latest state of every record of this group;" in user["content"]
    assert all(f"\ne{i} [" in user["content"] for i in range(5))
