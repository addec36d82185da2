"""Evidence token accounting without a model (issue 29, item 2): the composed evidence of an
ask is counted per part with the offline WordPiece tokenizer."""

from __future__ import annotations

from graphmem.core.tokens import TOKENIZER, count_tokens
from graphmem.query.compose import compose_evidence, evidence_tokens
from graphmem.query.types import Excerpt, Projection


def test_counts_are_wordpiece_pieces_without_markers():
    assert count_tokens(["", "hello world", "押金"]) == [0, 2, 2]
    assert "WordPiece" in TOKENIZER


def test_evidence_tokens_per_part_add_up_under_the_total():
    excerpts = [Excerpt(id=f"m{i}", speaker="Ana", ts="2026-03-05T10:00:00", session="s1", turn=i,
                        text=f"We agreed to meet at the ridge trailhead number {i} at nine.")
                for i in range(5)]
    projection = Projection(rows=["ALL"], issue="where to meet", tense="head")
    composed = compose_evidence("Where do we meet?", projection, excerpts, [])
    tokens = evidence_tokens(composed)
    assert set(tokens) == {"verbatim", "structured", "question", "total"}
    assert tokens["question"] == count_tokens(["Where do we meet?"])[0] == 5
    assert tokens["verbatim"] > 5 * 12  # five excerpts with their labels
    assert tokens["verbatim"] + tokens["structured"] + tokens["question"] < tokens["total"]
    fewer = evidence_tokens(compose_evidence("Where do we meet?", projection, excerpts[:2], []))
    assert fewer["verbatim"] < tokens["verbatim"] and fewer["question"] == tokens["question"]


def _excerpts(n: int) -> list[Excerpt]:
    return [Excerpt(id=f"m{i}", speaker="Ana", ts="2026-03-05T10:00:00", session="s1", turn=i,
                    text=f"We agreed to meet at the ridge trailhead number {i} at nine" + " and walk" * i)
            for i in range(n)]


def test_excerpt_tokens_add_up_to_the_verbatim_part_of_the_first_k():
    """What the recall-vs-tokens curve charges for k excerpts is what composing them costs."""
    from graphmem.query.compose import excerpt_tokens

    excerpts = _excerpts(6)
    projection = Projection(rows=["ALL"], issue="where to meet", tense="head")
    costs = excerpt_tokens("Where do we meet?", projection, excerpts)
    assert len(costs) == 6 and costs == sorted(costs) and costs[0] < costs[-1]  # longer texts cost more
    for k in (1, 3, 6):
        composed = compose_evidence("Where do we meet?", projection, excerpts[:k], [])
        assert sum(costs[:k]) == evidence_tokens(composed)["verbatim"]


def test_excerpt_tokens_clip_long_messages_as_compose_does():
    from graphmem.query.compose import excerpt_tokens

    long = [Excerpt(id="m1", speaker="Ana", ts="2026-03-05T10:00:00", session="s1", turn=1,
                    text="filler words here " * 300 + "the ridge trailhead at nine")]
    projection = Projection(rows=["ALL"], issue="ridge trailhead", tense="head")
    clipped = excerpt_tokens("Where is the ridge trailhead?", projection, long, max_message_chars=200)
    composed = compose_evidence("Where is the ridge trailhead?", projection, long, [], max_message_chars=200)
    assert clipped == [evidence_tokens(composed)["verbatim"]]
    assert clipped[0] < excerpt_tokens("Where is the ridge trailhead?", projection, long)[0] / 5


def test_recall_at_budget_takes_the_longest_prefix_that_fits():
    from graphmem.eval.metrics import recall_at_budget

    ranked = ["a", "b", "c", "d"]
    costs = [10, 20, 30, 40]
    assert recall_at_budget(ranked, ["b", "d"], costs, 5, 35) == (0.5, 2)  # 5 + 10 + 20 = 35 fits exactly
    assert recall_at_budget(ranked, ["b", "d"], costs, 5, 34) == (0.0, 1)
    assert recall_at_budget(ranked, ["b", "d"], costs, 50, 49) == (0.0, 0)  # not even the fixed part fits
    assert recall_at_budget(ranked, ["b", "d"], costs, 0, 10**6) == (1.0, 4)
    assert recall_at_budget(ranked, ["d"], costs[:2], 0, 10**6) == (0.0, 2)  # only ids with a cost are shown
    assert recall_at_budget(ranked, [], costs, 0, 99) == (None, 3)


def test_token_curve_of_records():
    from graphmem.eval.report import token_curve
    from graphmem.eval.runner import QuestionRecord

    def rec(qid: str, gold: list[str], costs: list[int], total: int, verbatim: int) -> QuestionRecord:
        return QuestionRecord(id=qid, unit="u", group_id="g", bench="locomo", system="speakermem", question="q?",
                              gold="x", evidence_ids=["a", "b", "c"], gold_evidence=gold, recall_scored=True,
                              evidence_costs=costs, evidence_tokens={"total": total, "verbatim": verbatim})

    records = [rec("1", ["c"], [100, 100, 100], 400, 300), rec("2", ["a", "b"], [300, 300, 300], 1000, 900)]
    curve = token_curve(records, budgets=(250, 450, 2000))
    # fixed parts: 100 and 100; at 250 q1 shows a (+b? 100+100+100 = 300 > 250: no), q2 nothing
    assert curve["250"] == {"recall": 0.0, "excerpts": 0.5, "n": 2.0}
    assert curve["450"] == {"recall": (1.0 + 0.5) / 2, "excerpts": 2.0, "n": 2.0}
    assert curve["2000"] == {"recall": 1.0, "excerpts": 3.0, "n": 2.0}
    assert token_curve([r.model_copy(update={"evidence_costs": []}) for r in records]) == {}


def test_raw_fallback_messages_shown_above_are_one_short_line():
    """A row's raw fallback messages that are excerpts already cost one line of excerpt numbers
    (their ids are on the excerpt lines), not a line with the id each (issue 29: roster rows)."""
    from graphmem.query.types import Row

    excerpts = _excerpts(3)
    rows = [Row(kind="person", id="ana", name="Ana", status="raw", raw=[excerpts[2], excerpts[0]]),
            Row(kind="person", id="bo", name="Bo", status="raw",
                raw=[excerpts[2], Excerpt(id="m9", speaker="Bo", ts="2026-03-05T11:00:00", session="s1", turn=9,
                                          text="I would rather meet at the lake.")])]
    projection = Projection(rows=["ALL"], issue="where to meet", tense="head")
    text = compose_evidence("Where do we meet?", projection, excerpts, rows).text
    assert "Ana (no derived record on this matter; own messages closest to it:)\n" \
           "  raw fallback: shown above (excerpt 3; excerpt 1)\nBo" in text
    assert "  raw fallback: shown above (excerpt 3)\n  raw fallback: (Bo @ 2026-03-05T11:00:00, msg m9) I would" in text
    assert text.count("msg m2") == 1 and text.count("msg m9") == 1  # each message's id once
