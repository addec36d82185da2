"""The fast paths of the online ingest's per-message checks give the answers of the full checks."""

from __future__ import annotations

import unicodedata

from graphmem.core import limits, times


def test_ascii_ids_are_refused_exactly_for_their_control_characters() -> None:
    for code in range(128):
        ch = chr(code)
        value = f"a{ch}b"
        slow = next((limits._refused_at(value, i) for i in range(len(value))
                     if limits._refused_at(value, i) is not None), None)
        found = limits.invisible_in_id(value)
        assert (found is not None) == (unicodedata.category(ch) == "Cc"), repr(ch)
        assert (found[1] if found else None) == slow, repr(ch)
    assert limits.invisible_in_id("D1:1 session_1/x y") is None
    assert limits.invisible_in_id("a\u200bb") == (1, limits._refused_at("a\u200bb", 1))  # not ASCII: full check


def test_a_remembered_timestamp_parses_as_the_general_reader_does() -> None:
    for value in ("2023-05-08T13:56:00", "2023-05-08T13:56:00+05:30", "2023-05-08T13:56:00.123456",
                  "2023-05-08T13:56:00.123456-07:00", "0001-01-01T00:00:00+14:00"):
        general = times.parse_ts(f" {value} ")  # surrounding space: not the normal form, the pattern reads it
        assert times._normal_form(f" {value} ") is None
        for _ in range(2):  # the second read comes from the cache
            assert times.parse_ts(value) == general
    assert times.parse_ts("2023-05-08T13:56:00Z").text == "2023-05-08T13:56:00+00:00"
