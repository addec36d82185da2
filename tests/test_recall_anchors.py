"""System 1 recall pool: group-local BM25, person anchors, time anchors (issue 11)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from graphmem.ingest import ingest_conversations
from graphmem.query.anchors import find_anchors, time_windows
from graphmem.query.local_bm25 import GroupStats, analyze, forget_stats, rescore
from graphmem.query.people import read_roster
from graphmem.query.project import fallback_projection
from graphmem.query.system1 import DEFAULT_RECALL, RecallConfig, recall_pool
from graphmem.roster import RosterMember
from tests.factories import conversation


def _day(y: int, m: int, d: int) -> tuple[float, float]:
    start = datetime(y, m, d, tzinfo=timezone.utc).timestamp()
    return start, start + 86_400.0


# --- pure parts -------------------------------------------------------------------------------


def test_analyze_follows_the_english_analyzer():
    assert analyze("Caroline's dogs were RUNNING to the park") == ["carolin", "dog", "were", "run", "park"]
    assert analyze("") == []


def test_rescore_uses_only_the_given_statistics():
    docs = {"a": "Ana: tomatoes in the garden", "b": "Bo: the garden gate", "c": "Cy: nothing here"}
    # "garden" is in every document of this group, "tomato" in one: tomato decides the order
    stats = GroupStats("g", n_docs=3, avgdl=3.0, df={"garden": 3, "tomato": 1, "gate": 1})
    ranked = rescore("garden tomatoes", docs, stats)
    assert [i for i, _ in ranked] == ["a", "b"]
    # the same documents under other statistics give the other order: scores depend on them alone
    rare_garden = GroupStats("g", n_docs=1000, avgdl=3.0, df={"garden": 1, "tomato": 900, "gate": 1})
    assert rescore("garden tomatoes", docs, rare_garden)[0][1] != ranked[0][1]


def test_reserved_turns_replace_the_tail_of_the_pool():
    from graphmem.query.system1 import _reserve

    assert _reserve(list("abcdefgh"), ["g", "x"], 5) == ["a", "b", "c", "g", "x"]
    assert _reserve(list("abcdefgh"), ["b"], 3) == ["a", "b", "c"]  # already inside: no change
    assert _reserve(list("abc"), [], 5) == ["a", "b", "c"]


def test_time_windows_read_dates_months_and_years():
    assert time_windows("What happened on 8 May 2023?") == [_day(2023, 5, 8)]
    assert time_windows("What did Ana say on May 8th, 2023?") == [_day(2023, 5, 8)]
    assert time_windows("Anything on 2024-02-29?") == [_day(2024, 2, 29)]
    assert time_windows("What happened on March 3?", years=[2025, 2026]) == [_day(2025, 3, 3), _day(2026, 3, 3)]
    start = datetime(2023, 3, 1, tzinfo=timezone.utc).timestamp()
    end = datetime(2023, 4, 1, tzinfo=timezone.utc).timestamp()
    assert time_windows("What did they plan in March 2023?") == [(start, end)]
    assert time_windows("May I ask what Bo thinks?") == []  # "May" the verb is no month
    assert time_windows("Who will march on?") == []


def test_find_anchors_names_people_sessions_and_change():
    roster = [RosterMember(id="u1", name="Ana"), RosterMember(id="u2", name="Bo", aliases=["Bobby"])]
    a = find_anchors("How did Bobby's view change after session 2?", roster)
    assert a.persons == ["u2"] and a.sessions == [2] and a.change and not a.every_member
    b = find_anchors("What does each member think about the trip?", roster)
    assert b.persons == [] and b.every_member


# --- against the real Neo4j ---------------------------------------------------------------------


GARDEN = [
    ("Ana", "Cy asked if we could grow tomatoes in the garden beds this spring."),
    ("Bo", "I can bring compost so Cy and we can grow more in the garden."),
    ("Ana", "Cy said the garden fence needs fixing before we grow anything."),
    ("Bo", "Let's grow beans in the garden again, Cy liked them last year."),
    ("Ana", "Should we grow pumpkins in the garden for Cy's kids?"),
    ("Bo", "Cy wants the garden watered every evening so things grow."),
    ("Ana", "Cy left the garden shed key under the pot."),
    ("Bo", "We could grow sunflowers along the garden path, Cy would agree."),
    ("Cy", "honestly I'd rather we planted herbs, basil and mint mostly"),
    ("Ana", "The garden hose leaks, Cy noticed it first."),
    ("Bo", "Garden party on Sunday, Cy is bringing lemonade."),
]


@pytest.mark.neo4j
def test_a_rare_speakers_only_turn_is_found_for_a_question_naming_them(store, embedder, group_id):
    # Cy's turn opens a later session: no previous turn lends it the question's words
    rows = [{"speaker": s, "text": t, "session": "s2" if s == "Cy" else "s1"} for s, t in GARDEN]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    roster = read_roster(store, group_id)
    q = "What would Cy like to grow in the garden?"
    proj = fallback_projection(q, roster)
    cy_turn = "m0008"
    pool = recall_pool(store, embedder, group_id, q, 5, roster=roster, projection=proj)
    assert cy_turn in [h.id for h in pool]
    # the person anchor (Cy's own turns, on their own budget) is what brings it in: without it
    # the others' turns about Cy and the garden fill the pool
    plain = recall_pool(
        store, embedder, group_id, q, 5, roster=roster, projection=proj,
        config=RecallConfig(w_person=0.0, person_budget=0, member_budget=0),
    )
    assert cy_turn not in [h.id for h in plain]


DATED = [
    ("Ana", "Team lunch today was at the noodle place.", "2026-03-02T12:00:00+00:00"),
    ("Bo", "Team lunch today was at the taco stand.", "2026-03-03T12:00:00+00:00"),
    ("Cy", "Team lunch today was at the pizza corner.", "2026-03-04T12:00:00+00:00"),
    ("Ana", "Team lunch today was at the salad bar.", "2026-03-05T12:00:00+00:00"),
    ("Bo", "Team lunch today was at the burger joint.", "2026-03-06T12:00:00+00:00"),
]


@pytest.mark.neo4j
def test_a_dated_question_finds_the_turn_of_that_day(store, embedder, group_id):
    rows = [{"speaker": s, "text": t, "ts": ts, "session": ts[:10]} for s, t, ts in DATED]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    roster = read_roster(store, group_id)
    for q, want in (
        ("Where was the team lunch on 4 March 2026?", "m0002"),
        ("Where did the team have lunch on March 5?", "m0003"),  # no year: the group's years
    ):
        pool = recall_pool(store, embedder, group_id, q, 5, roster=roster, projection=fallback_projection(q, roster))
        assert pool[0].id == want, q


CHAT = [
    ("Ana", "Kickoff for the solar panel project is on Monday."),
    ("Bo", "I will order the solar panels from the supplier."),
    ("Ana", "The roof inspection is booked for Tuesday."),
    ("Cy", "Inverter specs are attached, please review."),
    ("Bo", "Budget for panels and inverter is approved."),
    ("Cy", "Electrician confirmed wiring for Thursday."),
    ("Ana", "Neighbours asked about noise during installation."),
    ("Bo", "Installation crew arrives at eight."),
    ("Cy", "Grid connection paperwork is filed."),
    ("Ana", "Party on the roof once the panels are live!"),
]
QUERIES = [
    "when is the solar project kickoff",
    "who orders the panels",
    "inverter specs review",
    "grid paperwork and electrician wiring",
    "noise from the installation crew",
]


@pytest.mark.neo4j
def test_loading_other_groups_changes_nothing_in_a_groups_results(store, embedder, make_group):
    mine = make_group()
    ingest_conversations(store, [conversation(mine, [{"speaker": s, "text": t} for s, t in CHAT])], embedder)
    roster = read_roster(store, mine)
    forget_stats()

    def results() -> list[list[tuple[str, float]]]:
        return [
            [(h.id, round(h.score, 12)) for h in recall_pool(
                store, embedder, mine, q, 10, roster=roster, projection=fallback_projection(q, roster)
            )]
            for q in QUERIES
        ]

    before = results()
    # other tenants with a skewed vocabulary: "solar", "panels", "inverter" everywhere, "noise" never
    for n in range(3):
        noisy = [
            {"speaker": f"X{i % 4}", "text": f"solar panels inverter grid {'installation ' * (i % 3)}status {i}"}
            for i in range(120)
        ]
        ingest_conversations(store, [conversation(make_group(), noisy)], embedder)
    forget_stats()  # nothing cached may carry the answer: the statistics are read again
    assert results() == before
    assert DEFAULT_RECALL.local_bm25
