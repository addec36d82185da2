"""The single homes of time, text and roster: graphmem.core.times, graphmem.core.text, graphmem.verbatim.roster (no DB)."""

from __future__ import annotations

import pytest

from graphmem.core.errors import InvalidInputError
from graphmem.derived.memory import GROUP
from graphmem.query.project import parse_projection
from graphmem.verbatim.roster import Roster, RosterMember, resolve_person
from graphmem.core.text import lucene_query, normalise_content, short_repr, strip_think
from graphmem.core.times import date_of, instant, minute, parse_as_of, parse_ts, short_ts, to_instant


def test_time_readers_agree_on_one_instant():
    ts = "2026-03-05T10:02:00+01:00"
    assert instant(ts) == to_instant(ts) == parse_ts(ts, source="s", record="r").instant  # epoch seconds
    assert instant("1970-01-01T00:01:00") == 60.0  # naive is UTC
    assert parse_as_of("1970-01-01T00:01:00") == ("1970-01-01T00:01:00", 60.0)
    assert parse_as_of(None) == ("", None)
    with pytest.raises(InvalidInputError) as e:
        parse_as_of("last week")
    assert e.value.field == "as_of"
    with pytest.raises(ValueError):
        instant("last week")


def test_out_of_range_offset_is_named_in_the_users_terms():
    # +24:00 and beyond are no UTC offsets; the error says so in ISO terms, not in Python's
    # timedelta repr, and names the record and field like every other bad timestamp.
    for ts in ("2026-01-01T10:10:00+24:00", "2026-01-01T16:00:00-25:00"):
        with pytest.raises(InvalidInputError) as e:
            parse_ts(ts, source="api", record="request message 0", field="ts")
        assert (e.value.record, e.value.field) == ("request message 0", "ts")
        assert str(e.value).startswith("record request message 0, field 'ts': ")  # a request, not "file api"
        assert "between -24:00 and +24:00" in str(e.value)
        assert "timedelta" not in str(e.value)
    assert parse_ts("2026-01-01T10:10:00+23:59", source="s", record="r").text.endswith("+23:59")
    with pytest.raises(InvalidInputError) as e:  # a file source is still named as a file
        parse_ts("2026-01-01T10:10:00+24:00", source="chat.jsonl", record="line 3", field="ts")
    assert str(e.value).startswith("file chat.jsonl, record line 3, field 'ts': ")


def test_time_printers():
    assert short_ts("2026-03-05T10:02:59+01:00") == "2026-03-05 10:02"
    assert short_ts("") == "?" and short_ts("soon") == "soon"
    assert minute("2026-03-05T10:02:59") == "2026-03-05 10:02"
    assert date_of("2026-03-05T23:30:00-05:00") == "2026-03-05"  # in its own offset


def test_text_helpers():
    assert normalise_content("  The Ridge,  has VIEWS! ") == "the ridge has views"
    assert lucene_query("Ana AND (Ben)?") == "ana and ben"
    assert strip_think("<THINK>x\ny</think>  Yes ") == "Yes"
    assert strip_think(None) == ""
    assert short_repr("x" * 100, 10) == "'xxxxxx..."


def test_one_resolver_reports_ambiguity_for_writer_and_project():
    members = [
        RosterMember(id="u1", name="Alex"),
        RosterMember(id="u2", name="Alex"),
        RosterMember(id="u3", name="Bo", aliases=["Bobo"]),
    ]
    roster = Roster(members)  # built from the same members Project gets
    assert [e.label for e in roster.entries] == ["Alex (u1)", "Alex (u2)", "Bo"]
    pid, why = roster.resolve("alex")
    assert pid is None and "ambiguous" in why
    assert roster.resolve("bobo") == ("u3", "")
    assert roster.resolve("group") == (GROUP, "")
    assert resolve_person("Alex", members) is None
    assert resolve_person("Alex (u2)", members) == "u2"
    assert resolve_person("group", members) is None  # GROUP is not a person
    # Project drops the ambiguous row instead of taking the first Alex
    p = parse_projection({"rows": ["Alex", "Bobo"], "issue": "x", "tense": "head"}, "q", members)
    assert p.rows == ["u3"]
    with pytest.raises(ValueError):
        parse_projection({"rows": ["Alex"], "issue": "x"}, "q", members)
