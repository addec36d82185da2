"""System 1 recall pool against the real Neo4j: person anchor, time anchor, tenant independence."""

from __future__ import annotations

import pytest

from graphmem.ingest import ingest_conversations
from graphmem.query.local_bm25 import forget_stats
from graphmem.roster import read_roster
from graphmem.query.project import fallback_projection
from graphmem.query.recall import DEFAULT_RECALL, RecallConfig, recall_pool
from tests.factories import conversation

pytestmark = pytest.mark.neo4j



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
