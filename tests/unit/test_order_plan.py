"""The placement planner of System 1 (graphmem.verbatim.order.plan_order), no database."""

from __future__ import annotations

from graphmem.verbatim.order import plan_order


def row(id, session="s1", channel="", turn_created=None, turn=None, speaker="A", text=None, search_text=None, next=None):
    return {"id": id, "session": session, "channel": channel, "turn_created": turn_created, "turn": turn,
            "speaker": speaker, "text": text or f"text {id}", "search_text": search_text, "next": next}


def test_late_message_in_the_middle_moves_what_follows_and_rethreads_next():
    # stored a1(0) -> a3(1); b2 arrives with a time between them: region = b2, a3
    region = [row("b2", speaker="Ben", text="Monday?"),
              row("a3", turn_created=1, turn=1, speaker="Ada", text="Wednesday",
                  search_text="Ada: boiler\nAda: Wednesday")]
    plan = plan_order(region, base=1,
                      channel_before={"": {"id": "a1", "next": "a3"}},
                      session_before={"s1": {"id": "a1", "turn": 0, "speaker": "Ada", "text": "boiler"}})
    assert plan.positions == [
        {"id": "b2", "turn_created": 1, "turn": 1, "search_text": "Ada: boiler\nBen: Monday?", "search_grams": None},
        {"id": "a3", "turn_created": 2, "turn": 2, "search_text": "Ben: Monday?\nAda: Wednesday", "search_grams": None},
    ]
    assert sorted(plan.links, key=lambda link: link["from"]) == [
        {"from": "a1", "to": "b2"}, {"from": "b2", "to": "a3"}]  # a3 stays the tail: no change
    assert plan.moves == {"1": 2}
    assert plan.rank_channels == []


def test_an_on_time_region_changes_nothing():
    region = [row("x", turn_created=5, turn=0, search_text="A: text x", next="y"),
              row("y", turn_created=6, turn=1, search_text="A: text x\nA: text y")]
    plan = plan_order(region, base=5, channel_before={"": {"id": "w", "next": "x"}},
                      session_before={"s1": {"id": None}})
    assert (plan.positions, plan.links, plan.moves, plan.rank_channels) == ([], [], {}, [])


def test_channels_chain_apart_and_a_new_first_turn_renumbers_sessions():
    region = [row("c1", session="c/s", channel="c"), row("d1", session="d/s", channel="d"),
              row("c2", session="c/s", channel="c", turn_created=0, turn=0, next=None)]
    plan = plan_order(region, base=0, channel_before={"c": {"id": None}, "d": {"id": None}},
                      session_before={"c/s": {"id": None}, "d/s": {"id": None}})
    assert {(p["id"], p["turn_created"], p["turn"]) for p in plan.positions} == {
        ("c1", 0, 0), ("d1", 1, 0), ("c2", 2, 1)}
    assert plan.links == [{"from": "c1", "to": "c2"}]  # d1 alone on its channel, c2 the tail
    assert plan.rank_channels == ["c", "d"]
    assert plan.moves == {"0": 2}


def test_erased_gap_closes_up():
    # a1 -> (erased b2) -> a3: after deletion a1 has no NEXT; a3 moves from 2 to 1
    region = [row("a3", turn_created=2, turn=2, speaker="Ada", text="Wednesday",
                  search_text="Ben: Monday?\nAda: Wednesday")]
    plan = plan_order(region, base=1, channel_before={"": {"id": "a1", "next": None}},
                      session_before={"s1": {"id": "a1", "turn": 0, "speaker": "Ada", "text": "boiler"}})
    assert plan.positions == [{"id": "a3", "turn_created": 1, "turn": 1, "search_text": "Ada: boiler\nAda: Wednesday", "search_grams": None}]
    assert plan.links == [{"from": "a1", "to": "a3"}]
    assert plan.moves == {"2": 1}


def test_an_exported_order_key_is_kept_and_must_not_precede_its_time():
    """A group export gives each message the order key it was stored with (its place when it
    arrived late or its input's order raised it); without one, input order raises it."""
    import pytest

    from graphmem.core.errors import InvalidInputError
    from graphmem.core.times import instant
    from graphmem.verbatim.ingest import collapse, validate
    from tests.factories import conversation

    rows = [{"id": "m2", "speaker": "A", "text": "second", "ts": "2026-01-01T10:00:00+00:00"},
            {"id": "m1", "speaker": "B", "text": "first", "ts": "2026-01-01T09:00:00+00:00"}]
    conv = conversation("g", rows)
    assert [d.order_instant for d in collapse(conv)] == [instant(rows[0]["ts"])] * 2  # raised by m2
    kept = conv.model_copy(update={"messages": [
        m.model_copy(update={"order_instant": instant(m.ts)}) for m in conv.messages]})
    validate(kept)
    assert [d.order_instant for d in collapse(kept)] == [instant(r["ts"]) for r in rows]
    for bad in (instant(rows[1]["ts"]) - 1, float("nan"), float("inf")):
        early = conv.model_copy(update={"messages": [conv.messages[1].model_copy(update={"order_instant": bad})]})
        with pytest.raises(InvalidInputError) as e:
            validate(early)
        assert e.value.field == "order_instant"
