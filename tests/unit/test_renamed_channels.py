"""A renamed channel in a later export (graphmem.verbatim.ingest.follow_renamed_channels): filed
under the stored name only when the stored messages say so without doubt."""

from __future__ import annotations

from graphmem.core.model import Conversation, MessageRecord
from graphmem.verbatim.ingest import follow_renamed_channels


def msg(mid: str, channel: str, day: str = "2025-07-01") -> MessageRecord:
    session = f"{channel}/{day}" if channel else day
    return MessageRecord(id=mid, group_id="g", channel=channel, session=session, speaker="Mei",
                         text="hi", ts=f"{day}T10:00:00+00:00", session_index=1, turn=0)


def conv(*messages: MessageRecord) -> Conversation:
    return Conversation(group_id="g", messages=list(messages))


def test_a_channel_whose_stored_messages_lie_in_one_other_channel_takes_its_name():
    c = conv(msg("1", "news"), msg("2", "news", "2025-07-02"), msg("3", "trip"))
    got = follow_renamed_channels(c, {"1": "general", "3": "trip"})
    assert [(m.id, m.channel, m.session) for m in got.messages] == [
        ("1", "general", "general/2025-07-01"), ("2", "general", "general/2025-07-02"), ("3", "trip", "trip/2025-07-01")]
    assert [m.channel for m in c.messages] == ["news", "news", "trip"]  # the input is not changed


def test_nothing_is_refiled_when_the_stored_channels_disagree_or_are_unnamed():
    two = conv(msg("1", "news"), msg("2", "news"))
    assert follow_renamed_channels(two, {"1": "general", "2": "random"}) is two  # the conflict check names it
    mixed = conv(msg("1", "news"), msg("2", "news"))
    assert follow_renamed_channels(mixed, {"1": "general", "2": "news"}) is mixed
    unnamed = conv(msg("1", "news"))
    assert follow_renamed_channels(unnamed, {"1": ""}) is unnamed  # no channel before: not a rename
    plain = conv(msg("1", ""))
    assert follow_renamed_channels(plain, {"1": "general"}) is plain  # an input without channels
    new = conv(msg("1", "news"))
    assert follow_renamed_channels(new, {}) is new


def test_the_old_name_given_to_a_new_channel_is_not_followed():
    """"general" renamed "archive", a new "general" made, both in one export: following the
    rename would merge two channels under "general"; the input is left as it is (refused)."""
    both = conv(msg("1", "archive"), msg("9", "general"))
    assert follow_renamed_channels(both, {"1": "general"}) is both
    # an old and a later export of the one renamed channel side by side are one channel
    old_and_new = conv(msg("1", "general"), msg("1", "archive"), msg("2", "archive"))
    got = follow_renamed_channels(old_and_new, {"1": "general"})
    assert {m.channel for m in got.messages} == {"general"}
