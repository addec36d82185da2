"""System 1 recall pool, pure parts: analyzer, group-local BM25, anchors, budgets (issue 11)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from graphmem.recall.anchors import find_anchors, time_windows
from graphmem.recall.lexical import GroupStats, analyze, rescore, smooth
from graphmem.recall.anchors import Anchors
from graphmem.recall.pool import (
    RecallInputs,
    context_ranking,
    context_rows,
    fuse_recall,
    reserve,
)
from graphmem.recall.recipe import SPEAKERMEM_POOL, RecallRecipe
from graphmem.verbatim.roster import RosterMember


def _day(y: int, m: int, d: int) -> tuple[float, float]:
    start = datetime(y, m, d, tzinfo=timezone.utc).timestamp()
    return start, start + 86_400.0


def test_analyze_follows_the_english_analyzer():
    assert analyze("Caroline's dogs were RUNNING to the park") == ["carolin", "dog", "were", "run", "park"]
    assert analyze("") == []


def test_rescore_uses_only_the_given_statistics():
    docs = {"a": "Ana: tomatoes in the garden", "b": "Bo: the garden gate", "c": "Cy: nothing here"}
    # "garden" is in every document of this group, "tomato" in one: tomato decides the order
    stats = GroupStats("g", n_docs=3, avgdl=3.0, df={"garden": 3, "tomato": 1, "gate": 1})
    ranked = rescore("garden tomatoes", docs, stats)
    assert [i for i, _ in ranked] == ["a", "b"]
    # the same documents under other statistics score otherwise: scores depend on them alone
    rare_garden = GroupStats("g", n_docs=1000, avgdl=3.0, df={"garden": 1, "tomato": 900, "gate": 1})
    assert rescore("garden tomatoes", docs, rare_garden)[0][1] != ranked[0][1]


def test_the_issue_weighs_the_questions_topic_words_over_its_names():
    docs = {"a": "Ana: did Bo go", "b": "Cy: pottery class lovely"}  # 4 terms each
    stats = GroupStats("g", n_docs=2, avgdl=4.0, df={"did": 1, "bo": 1, "go": 1, "potteri": 1, "class": 1})
    q = "When did Bo go to the pottery class?"
    plain = rescore(q, docs, stats)
    assert [i for i, _ in plain] == ["a", "b"]  # three name/function words beat two topic words
    weighted = rescore(q, docs, stats, issue="pottery class", issue_weight=1.0)
    assert [i for i, _ in weighted] == ["b", "a"]
    assert dict(weighted)["a"] == dict(plain)["a"]  # a turn without the issue's words keeps its score
    assert dict(weighted)["b"] == 2 * dict(plain)["b"]
    assert rescore(q, docs, stats, issue="pottery class", issue_weight=0.0) == plain


def test_smoothing_gives_a_neighbour_part_of_a_strong_hits_score():
    scores = [("m2", 4.0), ("m5", 1.0)]
    neighbours = {"m2": ("m1", "m3"), "m5": ("m4", None)}
    out = dict(smooth(scores, neighbours, 0.5))
    # the turns around the hit enter with half its score; a turn keeps its own plus the share
    assert out == {"m2": 4.0, "m1": 2.0, "m3": 2.0, "m5": 1.0, "m4": 0.5}
    both = dict(smooth([("a", 2.0), ("b", 3.0)], {"a": (None, "b"), "b": ("a", None)}, 0.5))
    assert both == {"a": 3.5, "b": 4.0}  # mutual neighbours each gain from the other
    assert smooth(scores, neighbours, 0.0) == sorted(scores, key=lambda x: -x[1])


def test_reserved_turns_replace_the_tail_of_the_pool():
    assert reserve(list("abcdefgh"), ["g", "x"], 5) == ["a", "b", "c", "g", "x"]
    assert reserve(list("abcdefgh"), ["b"], 3) == ["a", "b", "c"]  # already inside: no change
    assert reserve(list("abc"), [], 5) == ["a", "b", "c"]


def test_a_turn_near_the_top_of_one_ranking_outranks_the_middle_of_both():
    # "x" is second by fulltext and 30th by dense; "m" is 12th in both (fusion 40 deep)
    filler = [f"f{i:02d}" for i in range(40)]
    ft = filler[:1] + ["x"] + filler[1:10] + ["m"] + filler[10:]
    dense = filler[20:31] + ["m"] + filler[31:38] + filler[:10] + ["x"] + filler[10:20]
    assert ft.index("x") + 1 == 2 and dense.index("x") + 1 == 30
    assert ft.index("m") + 1 == 12 and dense.index("m") + 1 == 12
    inputs = RecallInputs(anchors=Anchors(), fulltext=[(i, 1.0) for i in ft], vector=dense)

    def ranks(recipe: RecallRecipe) -> dict[str, int]:
        order = [i for i, _ in fuse_recall(inputs, 40, recipe=recipe)]
        return {i: order.index(i) for i in ("x", "m")}

    assert SPEAKERMEM_POOL.fusion.rrf_k == 20
    equal = SPEAKERMEM_POOL.evolve(fusion={"w_fulltext": 1.0})  # equal weights: this is about the constant
    assert ranks(equal)["x"] < ranks(equal)["m"]  # 1/22 + 1/50 > 2/32
    flat = equal.evolve(fusion={"rrf_k": 60})  # the usual constant favours agreement: 1/62 + 1/90 < 2/72
    assert ranks(flat)["x"] > ranks(flat)["m"]


def test_the_pools_head_is_fused_sharply_and_its_tail_broadly():
    ft = ["a", "b", "c", "d", "e", "t"]
    context = ["x", "y", "a", "z", "w", "v"]  # dense over the context window
    own = ["t", "a", "b", "x", "c", "d"]  # dense by each turn's own cosine
    inputs = RecallInputs(anchors=Anchors(), fulltext=[(i, 1.0) for i in ft], vector=context, vector_plain=own)
    split = [i for i, _ in fuse_recall(inputs, 5, recipe=_head(2))]
    one = [i for i, _ in fuse_recall(inputs, 5, recipe=_head(0))]
    # the first two are the sharp fusion's (x: first over the context window only) ...
    assert split[:2] == one[:2] == ["a", "x"]
    # ... the rest follows the broad fusion with the own cosine: t (first by its own cosine,
    # last by fulltext) takes the place of y (second over the context window only)
    assert split == ["a", "x", "b", "t", "c"]
    assert one == ["a", "x", "b", "y", "c"]
    # without a context window there is one fusion
    plain = RecallInputs(anchors=Anchors(), fulltext=inputs.fulltext, vector=own)
    assert fuse_recall(plain, 5, recipe=_head(2)) == fuse_recall(plain, 5, recipe=_head(0))


def _head(n: int) -> RecallRecipe:
    """The product's recipe with a fused head of ``n`` places (no learned head: 0 places) and
    the rankings weighed equally (the cases are about the two fusions' constants)."""
    return SPEAKERMEM_POOL.evolve(fusion={"head_n": n, "w_fulltext": 1.0},
                                  learned={"head": n > 0, "head_sentences": n > 0, "tail_places": 10 if n else 0})


def test_context_ranking_adds_a_share_of_the_neighbours_mean_cosine():
    # Neo4j's scores are (1 + cos) / 2: 1.0 is cos 1, 0.5 is cos 0, 0.75 is cos 0.5
    rows = [
        {"id": "a", "own": 0.5, "around": [1.0, 0.75]},  # 0 + 0.5 * 0.75
        {"id": "b", "own": 0.75, "around": []},  # 0.5, no neighbour
        {"id": "c", "own": 0.6, "around": [0.5]},  # 0.2 + 0.5 * 0
        {"id": "d", "own": None, "around": [1.0]},  # no vector of its own: not ranked
    ]
    out = context_ranking(rows, 0.5)
    assert [i for i, _ in out] == ["b", "a", "c"]
    assert dict(out) == {"a": 0.375, "b": 0.5, "c": pytest.approx(0.2)}
    assert [i for i, _ in context_ranking(rows, 0.0)] == ["b", "c", "a"]


def test_context_rows_give_each_ring_message_its_neighbours_scores_from_one_read():
    # chain x - a - b - y; ring = candidates a, b and their neighbours x, y; z (a neighbour of
    # x outside the ring) has a score, w (a neighbour of y) has no vector
    read = {
        "ring": ["a", "b", "x", "y"],
        "edges": [["a", "x"], ["a", "b"], ["b", "a"], ["b", "y"], ["x", "z"], ["x", "a"],
                  ["y", "b"], ["y", "w"], ["q", None]],
        "cosines": [["a", 0.5], ["b", 0.75], ["x", 1.0], ["y", 0.6], ["z", 0.9]],
    }
    rows = context_rows(read)
    assert rows == [
        {"id": "a", "own": 0.5, "around": [1.0, 0.75]},
        {"id": "b", "own": 0.75, "around": [0.5, 0.6]},
        {"id": "x", "own": 1.0, "around": [0.9, 0.5]},
        {"id": "y", "own": 0.6, "around": [0.75]},  # w has no vector: not counted
    ]
    # a ring message without a vector is not ranked (as the per-row read left it out)
    assert [r["id"] for r in context_rows({**read, "cosines": read["cosines"][1:]})] == ["b", "x", "y"]


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
