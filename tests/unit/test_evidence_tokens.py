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
