"""Project: the deterministic fallback, validation of model output, and prompt contracts (no DB)."""

from __future__ import annotations

import pytest

from graphmem.query import prompts
from graphmem.query.compose import slice_text
from graphmem.query.project import (
    detect_views,
    fallback_issue,
    fallback_projection,
    issue_focus,
    parse_projection,
    project,
)
from graphmem.query.types import Cell, Projection, RecordVersion, RosterMember, Row
from tests.scripted_llm import Reply

ROSTER = [
    RosterMember(id="Ana", name="Ana"),
    RosterMember(id="Ben", name="Ben"),
    RosterMember(id="u7", name="Cara", speaker_id="u7", aliases=["Cara", "Cee"]),
    RosterMember(id="Will", name="Will"),
]


@pytest.mark.parametrize(
    ("question", "rows", "tense"),
    [
        ("What does each person think about the trail?", ["ALL"], "head"),
        ("Who never brought snacks?", ["ALL"], "head"),
        ("Does everyone follow the no-phones rule?", ["ALL"], "head"),
        ("Who violates the norm of no phones at dinner?", ["ALL"], "head"),
        ("What was decided about the venue?", ["GROUP"], "head"),
        ("What did the group finally decide about the trail, and did Ben agree?", ["Ben", "GROUP"], "head"),
        ("How did Ben's view on the ridge change?", ["Ben"], "full"),
        ("What did cee say on March 18 about dinner?", ["u7"], "full"),  # alias, lower case
        ("What did Cara originally want?", ["u7"], "full"),
        ("What did Ana say in session 2?", ["Ana"], "full"),
        ("What do Ana and Ben each think about the budget?", ["Ana", "Ben"], "head"),
        ("Where is the party?", ["ALL"], "head"),  # nothing found: the whole roster
        ("Who will bring the cake?", ["ALL"], "head"),  # "will" is not Will
    ],
)
def test_fallback_rows_and_tense(question, rows, tense):
    p = fallback_projection(question, ROSTER)
    assert p.rows == rows
    assert p.tense == tense
    assert p.method == "fallback" and p.fallback_reason


def test_fallback_names_use_word_boundaries():
    roster = [RosterMember(id="Al", name="Al"), RosterMember(id="Ann", name="Ann")]
    assert fallback_projection("What did Alice and Anna say?", roster).rows == ["ALL"]
    assert fallback_projection("Did Al bring Ann's cake?", roster).rows == ["Al", "Ann"]
    assert fallback_projection("What did Al say about Ann's plan?", roster).rows == ["Ann"]  # a view


def test_fallback_view_reads_the_owners_row():
    p = fallback_projection("What does Ana think of Ben?", ROSTER)
    assert p.rows == ["Ben"]
    assert [(v.source_id, v.owner_id) for v in p.views] == [("Ana", "Ben")]
    assert p.names == {"Ben": "Ben", "Ana": "Ana"}
    assert detect_views("What do Ana and Ben think about lunch?", ROSTER) == []


def test_fallback_issue_drops_names_question_words_and_dates():
    assert fallback_issue("What did Cee say on March 18 about the dinner budget?", ROSTER) == "dinner budget"
    assert fallback_issue("How does Ben feel about the ridge trail?", ROSTER) == "ridge trail"


def test_fallback_issue_without_a_topic_keeps_what_kind_of_record_is_asked_about():
    # "opinion" is a stop word, but with only "change" left the issue would lose its sense.
    assert fallback_issue("How did Ben's opinion change?", ROSTER) == "opinion change"
    assert fallback_issue("How did Ben's view on the ridge change?", ROSTER) == "ridge change"
    assert fallback_issue("What decisions were made?", ROSTER) == "decisions made"
    assert issue_focus("opinion change") == (False, ["stance"])
    assert issue_focus("decisions made") == (False, ["decision"])
    assert issue_focus("decided") == (False, ["decision"])
    assert issue_focus("What does think of") == (False, ["stance"])
    assert issue_focus("happened") == (False, [])
    # A topic word keeps the issue a constraint (what "who never ..." questions rely on).
    assert issue_focus("family decide") == (True, ["decision"])
    assert issue_focus("offered bring food") == (True, [])
    assert issue_focus("ridge change") == (True, [])


def test_full_slice_header_says_current_first_then_history():
    v1 = RecordVersion(id="e1", content="Ben prefers the ridge", ts="2026-03-05T10:00:00")
    v2 = RecordVersion(id="e2", content="Ben accepts the lake loop", ts="2026-05-02T09:00:00")
    cell = Cell(head_id="e2", owner_kind="person", owner_id="Ben", owner_name="Ben", current=v2,
                history=[v1], via="owner", score=1.0)
    row = Row(kind="person", id="Ben", name="Ben", status="records", cells=[cell])
    text = slice_text(Projection(issue="opinion change", rows=["Ben"], tense="full"), [row])
    header, _ben, current, history = text.splitlines()
    assert header == "issue: opinion change | full history (current state first, then earlier states oldest first)"
    assert current.startswith("  * current: Ben accepts the lake loop")
    assert history.startswith("  - history: Ben prefers the ridge @ 2026-03-05T10:00:00")


def test_parse_projection_validates_against_the_roster():
    p = parse_projection({"issue": " trail choice ", "rows": ["cara", "GROUP", "Zed"], "tense": "later"},
                         "q", ROSTER)
    assert (p.issue, p.rows, p.tense, p.method) == ("trail choice", ["u7", "GROUP"], "full", "model")
    assert parse_projection({"issue": "", "rows": "all", "tense": "head"}, "Who is Ana's friend?",
                            ROSTER).rows == ["ALL"]
    for bad in ([], {"rows": ["Zed"]}, {"rows": 3}, "x"):
        with pytest.raises(ValueError):
            parse_projection(bad, "q", ROSTER)


def test_project_without_model_uses_the_fallback():
    p, usages = project("Who never brought snacks?", ROSTER, None)
    assert p.method == "fallback" and p.rows == ["ALL"] and usages == []


def test_project_with_model_and_unusable_output_falls_back(scripted_llm):
    model = scripted_llm.chat_model()
    scripted_llm.enqueue(Reply.json({"issue": "snack duty", "rows": ["Ana", "GROUP"], "tense": "head"}))
    p, usages = project("Who never brought snacks?", ROSTER, model)
    assert (p.method, p.rows, p.issue) == ("model", ["Ana", "GROUP"], "snack duty")
    assert len(usages) == 1 and usages[0].stage == "project"
    body = scripted_llm.chat_requests[-1]
    assert "Ana, Ben, Cara (also: Cee), Will" in body["messages"][1]["content"]
    assert prompts.MARKERS["project"] in body["messages"][0]["content"]

    scripted_llm.enqueue(Reply.json({"issue": "x", "rows": ["Nobody Known"], "tense": "head"}))
    p, usages = project("Who never brought snacks?", ROSTER, model)
    assert p.method == "fallback" and p.rows == ["ALL"] and "unusable" in p.fallback_reason
    assert len(usages) == 1

    scripted_llm.enqueue(Reply.text("I think rows should be everyone"))  # no JSON at all
    p, usages = project("How did Ben's view change?", ROSTER, model)
    assert p.method == "fallback" and p.rows == ["Ben"] and p.tense == "full"
    assert usages and usages[0].estimated


def test_prompts_are_our_own_words_and_keep_the_abstention_sentence():
    assert prompts.ABSTAIN == "There is no information available in the conversation to answer this question."
    assert prompts.ABSTAIN in prompts.ANSWER_SYSTEM
    for marker, text in zip(prompts.MARKERS.values(), (
        prompts.PROJECT_SYSTEM, prompts.SELECT_SYSTEM, prompts.SUFFICIENCY_SYSTEM, prompts.ANSWER_SYSTEM,
        prompts.REWRITE_SYSTEM,
    ), strict=True):
        assert text.count(marker) == 1
    # A few distinctive sentences of the paper's prompts must not appear verbatim.
    for paper in (
        "Decide what SHAPE of slice to take",
        "You are selecting RAW DIALOGUE EXCERPTS",
        "This is the material that will be used to answer the question",
        "Answer a question about a MULTI-PARTY group conversation using ONLY the memory",
    ):
        joined = prompts.PROJECT_SYSTEM + prompts.SELECT_SYSTEM + prompts.SUFFICIENCY_SYSTEM + prompts.ANSWER_SYSTEM
        assert paper.lower() not in joined.lower()


def test_fallback_finds_decorated_names_bare():
    from graphmem.query.project import find_persons

    roster = [RosterMember(id="u1", name="Игорь 🚀"), RosterMember(id="u2", name="**Mei**")]
    assert find_persons("What does Игорь think of the plan?", roster) == [(10, "u1")]
    assert find_persons("Did Игорь🚀 agree?", roster) == [(4, "u1")]
    assert find_persons("and mei?", roster) == [(4, "u2")]
    assert find_persons("What about Игорьевич?", roster) == []  # still whole words only
