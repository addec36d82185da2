"""Evaluation runs, judge, baselines, reports and comparisons - no database.

The baselines read the benchmark files directly, so these runs need no Neo4j; every model
call goes to the scripted OpenAI-compatible server (tests/scripted_llm.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from graphmem.core.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.eval import prompts
from graphmem.eval.baselines import BM25Retriever, EmbedRetriever
from graphmem.eval.benchmarks import evermem_behaviour, load_bench
from graphmem.eval.compare import compare_run
from graphmem.eval.judge import judge_answer, option_choice, rubric_score
from graphmem.eval.metrics import bootstrap_mean_n_ci
from graphmem.eval.published import load_published
from graphmem.eval.report import summarize, write_report
from graphmem.eval.runner import RunConfig, RunOptions, read_records, run_eval
from graphmem.eval.systems import SystemOutput
from tests.scripted_llm import Reply

FIX = Path(__file__).parents[1] / "fixtures" / "eval"
SOCIAL = FIX / "socialmem"
LOCOMO = FIX / "locomo_mini.json"


def settings(tmp_path: Path, **kw) -> Settings:
    return Settings(home=tmp_path / "home", eval_bootstrap_resamples=2000, **kw)


def user_text(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")


def stage(body: dict) -> str:
    system = "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")
    for name, marker in prompts.MARKERS.items():
        if marker in system:
            return name
    return "?"


# --------------------------------------------------------------------------------------------
# judge and rubric
# --------------------------------------------------------------------------------------------


def test_judge_prompt_and_strict_final_line(scripted_llm):
    scripted_llm.enqueue(
        Reply.text("Same person, same dish.\nFinal: Correct"),
        Reply.text("Close enough.\n**Final: Correct**"),  # Markdown around the line: not a verdict
        Reply.text("Wrong person.\nFinal: Incorrect\n"),
    )
    model = scripted_llm.chat_model()
    v = judge_answer(model, question="Who brings cake?\nOptions:\nA. Lena", gold="A. Lena", answer="Lena")
    assert v.correct is True and v.usage.stage == "judge"
    body = scripted_llm.chat_requests[0]
    assert stage(body) == "judge"
    assert user_text(body) == "Question: Who brings cake?\nOptions:\nA. Lena\nGold Answer: A. Lena\nAgent Answer: Lena"
    assert "Final: Correct\nFinal: Incorrect" in body["messages"][0]["content"]
    assert judge_answer(model, question="q", gold="g", answer="a").correct is None
    assert judge_answer(model, question="q", gold="g", answer="a").correct is False


def test_rubric_reads_a_score_in_range_and_scores_multiple_choice_by_option(scripted_llm):
    scripted_llm.enqueue(
        Reply.json({"score": 0.7, "rationale": "one part missing"}),
        Reply.json({"score": 1.5, "rationale": "too generous"}),
        Reply.text("I would give it a 1"),
    )
    model = scripted_llm.chat_model()
    g = rubric_score(model, question="How did it change?", gold="old, new, trigger", answer="old and new", category="Q8")
    assert (g.score, g.method, g.rationale) == (0.7, "rubric", "one part missing")
    assert "Question type: Q8" in user_text(scripted_llm.chat_requests[0])
    assert rubric_score(model, question="q", gold="g", answer="a", category="Q1").score is None
    bad = rubric_score(model, question="q", gold="g", answer="a", category="Q1")
    assert bad.score is None and "no JSON" in bad.error
    n = len(scripted_llm.chat_requests)
    opts = {"A": "Lena", "B": "Mei", "C": "Raj", "D": "Sam"}
    assert rubric_score(None, question="q", gold="A. Lena", answer="A. Lena", category="Q4",
                        options=opts, correct_option="A").score == 1.0
    assert rubric_score(None, question="q", gold="A. Lena", answer="Lena or Mei", category="Q4",
                        options=opts, correct_option="A").score == 0.0
    assert len(scripted_llm.chat_requests) == n  # option matching makes no model call


@pytest.mark.parametrize("answer, letter", [
    ("C. Mei", "C"), ("(C)", "C"), ("**C.** Mei", "C"), ("The answer is C.", "C"), ("Mei", "C"),
    ("Mei and Leon", None), ("A person who...", None), ("Answer: B", "B"),
])
def test_option_choice(answer, letter):
    assert option_choice(answer, {"A": "Josh", "B": "Leon", "C": "Mei", "D": "Priya"}) == letter


def test_evermem_behaviour_from_the_id_prefix():
    assert evermem_behaviour("F_SH_Top01_001") == "Single"
    assert evermem_behaviour("MA_U_Top004_031") == "Update"
    assert evermem_behaviour("P_Skill_Top004_001") == "Skill"
    assert evermem_behaviour("MA_C_Top01_002") == "Const"
    assert evermem_behaviour("P_Style2_Top01_002") == "Style"
    assert evermem_behaviour("X_Q_Top01_002") == "other:X_Q"


# --------------------------------------------------------------------------------------------
# baselines
# --------------------------------------------------------------------------------------------


def test_bm25_ranks_single_messages_by_their_text():
    conv = load_bench("locomo", LOCOMO).units[0].conversation
    r = BM25Retriever(conv.messages)
    top = [m.id for m in r.rank("Pottery BOWL?", 3)]
    assert top[0] == "D1:1" and set(top[1:]) == {"D2:2", "D2:3"}  # case and punctuation do not matter
    assert {m.id for m in r.rank("marathon", 2)} == {"D1:2", "D2:4"}
    assert len(r.rank("marathon", 10)) == 8  # top-k of every message, as the paper's runner does
    assert r.rank("???", 5) == []


class CountingEmbedder:
    def __init__(self, inner):
        self.inner, self.model_name, self.calls = inner, inner.model_name, []

    def encode(self, texts, show_progress=False):
        self.calls.append(len(texts))
        return self.inner.encode(texts)


def test_embed_ranks_by_cosine_and_caches_the_message_matrix(embedder, tmp_path):
    conv = load_bench("locomo", LOCOMO).units[0].conversation
    counting = CountingEmbedder(embedder)
    r = EmbedRetriever(conv.messages, counting, tmp_path)
    assert counting.calls == [8]
    assert r.matrix.shape == (8, 384) and np.allclose(np.linalg.norm(r.matrix, axis=1), 1.0, atol=1e-4)
    top = [m.id for m in r.rank("Which pet did Ben adopt?", 2)]
    assert top[0] == "D1:4"
    again = CountingEmbedder(embedder)
    r2 = EmbedRetriever(conv.messages, again, tmp_path)
    assert again.calls == [] and np.array_equal(r2.matrix, r.matrix)  # loaded from the cache
    assert len(list(tmp_path.glob("embed-*.npy"))) == 1


# --------------------------------------------------------------------------------------------
# the runner
# --------------------------------------------------------------------------------------------


class FixedSystem:
    """A system that returns given evidence ids per question (for hand-computed recall)."""

    name = "bm25"

    def __init__(self, evidence: dict[str, list[str]]):
        self.evidence = evidence

    def answer(self, unit, question):
        for key, ids in self.evidence.items():
            if key in question:
                return SystemOutput(answer=None, evidence_ids=ids)
        return SystemOutput(answer=None)


def test_recall_at_k_on_a_hand_made_case_through_the_runner(tmp_path):
    system = FixedSystem({
        "Who visited Ana": ["D2:1", "D1:1", "D2:2", "D2:3", "D1:2", "D1:3"],  # gold D1:3, D2:1
        "pottery workshop": ["D2:3", "D1:1"],                                  # gold D1:1
        "adopt Pixel": ["D1:1", "D1:1", "D1:2"],                               # gold D1:4: missed
        "colour is Ana's cat": ["D1:4"],                                      # adversarial: not scored
    })
    out = run_eval(RunOptions(bench="locomo", data=LOCOMO, system="bm25", out=tmp_path / "run"),
                   settings=settings(tmp_path), store=None, embedder=None, answer=None, judge=None, system=system)
    assert (out.total, out.done) == (5, 5)
    recs = {r.id.split("/")[1]: r for r in read_records(tmp_path / "run")}
    assert recs["q1"].recall == {"1": 0.5, "5": 0.5, "10": 1.0, "40": 1.0} and recs["q1"].hit["1"] == 1.0
    assert recs["q0"].recall == {"1": 0.0, "5": 1.0, "10": 1.0, "40": 1.0}
    assert recs["q2"].recall["10"] == 0.0  # a repeated id takes no second slot, gold never reached
    assert not recs["q3"].recall_scored and recs["q3"].recall["10"] is None  # no evidence
    assert not recs["q4"].recall_scored  # adversarial excluded
    s = summarize(tmp_path / "run")
    assert s.recall_scored == 3
    assert s.recall["5"]["recall"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert s.recall["1"]["hit"] == pytest.approx(1 / 3)
    assert [c.category for c in s.categories] == ["single-hop", "multi-hop", "temporal", "open-domain", "adversarial"]


def script_qa(server, *, answers: dict[str, str], verdicts: dict[str, str], scores: dict[str, float]):
    """Answer, judge and rubric replies chosen by a key found in the request."""

    def pick(table: dict, text: str, default):
        for key, value in table.items():
            if key in text:
                return value
        return default

    server.route(server.system_contains(prompts.MARKERS["baseline_answer"]),
                 lambda body: Reply.text(pick(answers, user_text(body).splitlines()[0], "I do not know")))
    server.route(server.system_contains(prompts.MARKERS["judge"]),
                 lambda body: Reply.text("Reasoning.\nFinal: " + pick(verdicts, user_text(body), "Incorrect")))
    server.route(server.system_contains(prompts.MARKERS["rubric"]),
                 lambda body: Reply.json({"score": pick(scores, user_text(body), 0.0), "rationale": "scripted"}))


SOCIAL_ANSWERS = {"food restriction": "Raj cannot eat spicy food.", "birthday cake": "A. Lena",
                  "hiking plan": "They switched to the lake loop.", "book club": "Dune over two months."}


def test_meanq_and_meann_by_hand_end_to_end_through_the_report(scripted_llm, tmp_path):
    # network A (3 questions): rubric 1.0, option match 1.0 (multiple choice), rubric 0.5 -> mean 5/6
    # network B (1 question):  rubric 0.25 -> mean 0.25
    # MeanQ = (1 + 1 + 0.5 + 0.25) / 4 = 0.6875; MeanN = (5/6 + 0.25) / 2 = 0.541666...
    script_qa(scripted_llm, answers=SOCIAL_ANSWERS,
              verdicts={"spicy": "Correct", "Lena": "Correct", "lake loop": "Incorrect", "Dune": "Incorrect"},
              scores={"spicy": 1.0, "lake loop": 0.5, "Dune": 0.25})
    s = settings(tmp_path)
    model = scripted_llm.chat_model()
    run_eval(RunOptions(bench="socialmem", data=SOCIAL, system="bm25", out=tmp_path / "run"),
             settings=s, store=None, embedder=None, answer=model, judge=model)
    rubric_calls = [b for b in scripted_llm.chat_requests if stage(b) == "rubric"]
    assert len(rubric_calls) == 3  # the multiple-choice item is scored without the model
    report, (summary,) = write_report(tmp_path / "run", n_resamples=10_000, seed=7)
    sm = summary.socialmem
    assert sm.mean_q == pytest.approx(0.6875)
    assert sm.mean_n == pytest.approx((5 / 6 + 0.25) / 2)
    assert (sm.n_networks, sm.n_questions, sm.n_resamples, sm.seed) == (2, 4, 10_000, 7)
    expected = bootstrap_mean_n_ci({"a": [1.0, 1.0, 0.5], "b": [0.25]}, n_resamples=10_000, seed=7)
    assert (sm.ci_low, sm.ci_high) == pytest.approx(expected)
    assert (sm.ci_low, sm.ci_high) == pytest.approx((0.25, 5 / 6))
    assert summary.accuracy.correct == 2 and summary.accuracy.total == 4
    text = report.read_text()
    assert "| 0.688 | 0.542 | [0.250, 0.833] |" in text
    # the same records and seed give the same interval again
    _, (again,) = write_report(tmp_path / "run", n_resamples=10_000, seed=7)
    assert (again.socialmem.ci_low, again.socialmem.ci_high) == (sm.ci_low, sm.ci_high)
    data = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert data["runs"][0]["socialmem"]["mean_q"] == pytest.approx(0.6875)


def test_bootstrap_ci_in_the_report_depends_only_on_records_and_seed(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    cfg = RunConfig(bench="socialmem", system="bm25", data="x", answer_model="m", judge_model="m")
    (run / "run.json").write_text(json.dumps({"config": cfg.model_dump(mode="json"), "units": {}, "invocations": []}))
    scores = {"n1": [1.0, 0.0], "n2": [0.5], "n3": [0.2, 0.4, 0.9], "n4": [0.0], "n5": [1.0], "n6": [0.33, 0.71]}
    with (run / "records.jsonl").open("w") as f:
        for net, values in scores.items():
            for i, v in enumerate(values):
                f.write(json.dumps({"id": f"{net}/{i}", "unit": net, "group_id": net, "bench": "socialmem",
                                    "system": "bm25", "question": "q", "gold": "g", "answer": "a",
                                    "rubric_score": v, "rubric_method": "rubric", "judge_text": "Final: Correct",
                                    "verdict": True}) + "\n")
    a = summarize(run, n_resamples=3000, seed=11).socialmem
    b = summarize(run, n_resamples=3000, seed=11).socialmem
    c = summarize(run, n_resamples=3000, seed=12).socialmem
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert (a.ci_low, a.ci_high) == bootstrap_mean_n_ci(scores, n_resamples=3000, seed=11)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)


def test_resume_skips_done_questions_and_retries_failed_ones(scripted_llm, tmp_path):
    failing = {"on": True}
    scripted_llm.route(  # registered first: routes are tried in order
        lambda body: failing["on"] and stage(body) == "baseline_answer" and "hiking plan" in user_text(body),
        Reply.http_error(400, "scripted failure"),
    )
    script_qa(scripted_llm, answers=SOCIAL_ANSWERS, verdicts={"spicy": "Correct"}, scores={"spicy": 1.0})
    s = settings(tmp_path)
    model = scripted_llm.chat_model()
    opts = RunOptions(bench="socialmem", data=SOCIAL, system="bm25", out=tmp_path / "run", limit=2)
    first = run_eval(opts, settings=s, store=None, embedder=None, answer=model, judge=model)
    assert (first.total, first.done, first.failed) == (2, 2, 0)
    n_first = len(scripted_llm.chat_requests)
    assert n_first == 2 + 2 + 1  # 2 answers, 2 judgments, 1 rubric (the other item is multiple choice)

    opts.limit = None
    second = run_eval(opts, settings=s, store=None, embedder=None, answer=model, judge=model)
    assert (second.total, second.skipped, second.done, second.failed) == (4, 2, 1, 1)
    new = scripted_llm.chat_requests[n_first:]
    asked = [user_text(b).splitlines()[0] for b in new]
    assert not any("food restriction" in q or "birthday cake" in q for q in asked)
    assert len(new) == 1 + (1 + 1 + 1)  # the failing answer call, then answer+judge+rubric of the book club
    errors = (tmp_path / "run" / "errors.jsonl").read_text().splitlines()
    assert len(errors) == 1 and json.loads(errors[0])["id"] == "grp_aaaa0001/Q8_a3"

    failing["on"] = False
    n = len(scripted_llm.chat_requests)
    third = run_eval(opts, settings=s, store=None, embedder=None, answer=model, judge=model)
    assert (third.skipped, third.done, third.failed) == (3, 1, 0)
    assert len(scripted_llm.chat_requests) - n == 3  # only the failed question runs again
    assert sorted(r.id for r in read_records(tmp_path / "run")) == sorted(q.id for q in load_bench("socialmem", SOCIAL).questions)

    with pytest.raises(InvalidInputError, match="another configuration"):
        run_eval(RunOptions(bench="socialmem", data=SOCIAL, system="bm25", out=tmp_path / "run"),
                 settings=s, store=None, embedder=None, answer=None, judge=None)


def test_full_context_is_not_applicable_over_the_window(scripted_llm, tmp_path):
    script_qa(scripted_llm, answers={}, verdicts={}, scores={})
    model = scripted_llm.chat_model()
    small = settings(tmp_path, eval_full_context_window_tokens=800)  # ~348 + 512 answer tokens: A does not fit; ~244 + 512: B does
    out = run_eval(RunOptions(bench="socialmem", data=SOCIAL, system="full-context", out=tmp_path / "fc"),
                   settings=small, store=None, embedder=None, answer=model, judge=model)
    assert (out.done, out.not_applicable) == (4, 3)
    recs = {r.unit: r for r in read_records(tmp_path / "fc")}
    assert not recs["grp_aaaa0001"].applicable and "not applicable" in recs["grp_aaaa0001"].note
    assert recs["grp_bbbb0002"].applicable and recs["grp_bbbb0002"].answer == "I do not know"
    (answer_req,) = [b for b in scripted_llm.chat_requests if stage(b) == "baseline_answer"]
    assert user_text(answer_req).count("grp_bbbb0002_s01_t") == 3  # the whole conversation
    s = summarize(tmp_path / "fc")
    assert (s.answered, s.not_applicable) == (1, 3) and not s.recall


def test_groupmem_and_evermem_runs_without_a_model(tmp_path):
    s = settings(tmp_path)
    gm = run_eval(RunOptions(bench="groupmem", data=FIX / "groupmem", system="bm25", out=tmp_path / "gm"),
                  settings=s, store=None, embedder=None, answer=None, judge=None)
    assert gm.done == 2 and any("no answer model" in n for n in gm.notes)
    recs = read_records(tmp_path / "gm")
    assert {r.category for r in recs} == {"multi_hop", "user_implicit"}
    assert any(r.question.startswith("[asked by User_2] What am I focusing") for r in recs)
    assert all(not r.recall_scored for r in recs)  # GroupMemBench has no evidence ids
    em = run_eval(RunOptions(bench="evermem", data=FIX / "evermem", system="bm25", out=tmp_path / "em"),
                  settings=s, store=None, embedder=None, answer=None, judge=None)
    assert em.done == 3
    recs = {r.category: r for r in read_records(tmp_path / "em")}
    assert set(recs) == {"Single", "Update", "Skill"}
    assert recs["Update"].format == "multiple_choice" and "Options:\nA. 65%" in recs["Update"].question
    assert recs["Single"].evidence_ids[0] == "2025-01-09|Group 1|1" and recs["Single"].recall["1"] == 1.0


# --------------------------------------------------------------------------------------------
# reports, grid, comparison, CLI
# --------------------------------------------------------------------------------------------


def _fake_run(path: Path, *, s1: int, s2: int, correct: int, n: int = 4) -> None:
    path.mkdir(parents=True)
    cfg = RunConfig(bench="socialmem", system="speakermem", data="x", ask_enabled=False, s1_k=s1, s2_k=s2,
                    recall_n=s1, answer_model="m", judge_model="m", budgets={"top_k": s1, "s2_k": s2, "recall_n": s1})
    (path / "run.json").write_text(json.dumps({"config": cfg.model_dump(mode="json"), "units": {}, "invocations": []}))
    with (path / "records.jsonl").open("w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"n/{i}", "unit": "n", "group_id": "n", "bench": "socialmem", "system": "speakermem",
                                "category": f"Q{1 + i % 2}", "question": "q", "gold": "g", "answer": "a", "token_f1": 0.5,
                                "judge_text": "x", "verdict": i < correct, "recall_scored": True,
                                "recall": {"10": i < correct}, "hit": {"10": i < correct}}) + "\n")


def test_report_writes_markdown_pngs_and_the_top_k_grid(tmp_path):
    for s1, s2, correct in [(5, 2, 1), (10, 2, 2), (5, 4, 2), (10, 4, 3)]:
        _fake_run(tmp_path / "grid" / f"s1-{s1}_s2-{s2}", s1=s1, s2=s2, correct=correct)
    report, summaries = write_report(tmp_path / "grid")
    assert len(summaries) == 4
    for name in ("categories.png", "recall.png", "grid.png"):
        assert (tmp_path / "grid" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = report.read_text()
    for section in ("## Main results", "## Categories — socialmem", "## Evidence recall@k", "## Token costs (App. D",
                    "## S1 top-k × S2 k grid (App. H)", "## Side by side with the published figures", "![S1 top-k"):
        assert section in text
    assert "| 4 | 50.0 / 50.0 | 75.0 / 50.0 |" in text  # S2 k=4 row: (5,4) and (10,4), Acc. / token-F1
    assert "published by the SpeakerMem-R1 authors" in text
    assert "73.11 / 26.53" in text  # the paper's best grid cell, labelled as theirs
    assert "different question sets" not in text  # the four runs scored the same questions


def test_report_warns_when_runs_scored_different_question_sets(tmp_path):
    """A run cut short (``--limit``, an interrupted run) beside a whole one: their figures are
    not comparable, and the report says so instead of ranking them."""
    _fake_run(tmp_path / "two" / "whole", s1=5, s2=2, correct=2, n=4)
    _fake_run(tmp_path / "two" / "cut", s1=10, s2=2, correct=2, n=2)
    report, summaries = write_report(tmp_path / "two")
    assert len({s.question_set for s in summaries}) == 2
    text = report.read_text()
    assert "**socialmem**: these runs scored different question sets" in text, text[:3000]
    assert ": 4" in text.split("different question sets")[1].split("\n")[0]


def test_published_figures_are_internally_consistent():
    t = load_published()["tables"]
    for name, (correct, total, acc) in t["table23"]["rows"].items():
        assert round(100 * correct / total, 2) == pytest.approx(acc, abs=0.01), name
    for table in ("table9", "table10", "table11", "table12"):
        for name, (_, ing_in, ing_out, qa_in, ans_out, total, _avg) in t[table]["rows"].items():
            assert ing_in + ing_out + qa_in + ans_out == total, (table, name)
    grid = t["figure6"]["rows"]
    assert grid["20,4"][2:] == [73.11, 26.53] and max(v[2] for v in grid.values()) == 73.11
    for table in t.values():
        assert all(len(v) == len(table["columns"]) for v in table["rows"].values())


def test_compare_with_published_per_question_records(scripted_llm, tmp_path):
    script_qa(scripted_llm, answers=SOCIAL_ANSWERS,
              verdicts={"spicy": "Correct", "Lena": "Correct", "lake loop": "Incorrect", "Dune": "Incorrect"},
              scores={})
    model = scripted_llm.chat_model()
    run_eval(RunOptions(bench="socialmem", data=SOCIAL, system="bm25", out=tmp_path / "run"),
             settings=settings(tmp_path), store=None, embedder=None, answer=model, judge=model)
    cmp = compare_run(tmp_path / "run", FIX / "published" / "socialmem")
    assert (cmp.matched, cmp.only_in_theirs, cmp.only_in_ours, cmp.unjudged) == (4, 1, 0, 0)
    assert cmp.match_kinds == {"unit+id": 4}
    o = cmp.overall
    assert (o.n, o.agree, o.both_correct, o.only_ours, o.only_theirs, o.both_wrong) == (4, 2, 1, 1, 1, 1)
    assert o.agreement == 50.0 and o.ours_acc == 50.0 and o.theirs_acc == 50.0
    assert (cmp.by_category["Q4"].only_ours, cmp.by_category["Q2"].only_theirs) == (1, 1)

    from graphmem.cli import app

    res = CliRunner().invoke(app, ["eval", "compare", str(tmp_path / "run"), str(FIX / "published" / "socialmem"),
                                   "--map", "verdict=judge_answer", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["unjudged"] == 1  # grp_bbbb0002 has no judge_answer
    assert data["overall"]["n"] == 3 and data["overall"]["both_wrong"] == 1
    assert (tmp_path / "run" / "compare.md").read_text().startswith("# Verdict comparison")


def test_cli_eval_forms_and_report(tmp_path, monkeypatch):
    from graphmem.cli import app
    from graphmem.core.config import get_settings

    for var in ("GRAPHMEM_LLM_BASE_URL", "GRAPHMEM_LLM_MODEL", "GRAPHMEM_JUDGE_BASE_URL", "GRAPHMEM_JUDGE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GRAPHMEM_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        res = runner.invoke(app, ["eval", "--bench", "locomo", "--data", str(LOCOMO), "--system", "bm25",
                                  "--out", str(tmp_path / "a")])
        assert res.exit_code == 0, res.output
        assert "5 recorded now" in res.output and "recall@10" in res.output and "no answer model" in res.output
        res = runner.invoke(app, ["eval", "run", "--bench", "locomo", "--data", str(LOCOMO), "--system", "bm25",
                                  "--out", str(tmp_path / "a")])
        assert res.exit_code == 0 and "5 already done, 0 recorded now" in res.output
        res = runner.invoke(app, ["eval", "report", str(tmp_path / "a"), "--no-plots"])
        assert res.exit_code == 0 and (tmp_path / "a" / "report.md").is_file()
        res = runner.invoke(app, ["eval", "run", "--bench", "locomo", "--system", "bm25"])
        assert res.exit_code != 0
        assert re.search(r"--bench and --data are required", str(res.exception))
    finally:
        get_settings.cache_clear()


def test_recipe_option_is_checked_and_named(tmp_path):
    """``--recipe`` names a recall recipe variant of graphmem's (issue 29, item 3): refused for a
    baseline or an unknown name before anything runs, and part of the run's label and identity."""
    from graphmem.eval.runner import IDENTITY_FIELDS

    s = settings(tmp_path)
    with pytest.raises(InvalidInputError, match="--recipe applies to --system speakermem only"):
        run_eval(RunOptions(bench="socialmem", data=SOCIAL, system="bm25", out=tmp_path / "a", recipe="no-learned"),
                 settings=s, store=None, embedder=None, answer=None, judge=None)
    with pytest.raises(InvalidInputError, match="unknown recall recipe 'nope'"):
        run_eval(RunOptions(bench="socialmem", data=SOCIAL, system="speakermem", out=tmp_path / "b", recipe="nope"),
                 settings=s, store=None, embedder=None, answer=None, judge=None)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    assert "recipe" in IDENTITY_FIELDS
    cfg = RunConfig(bench="locomo", system="speakermem", data="x", recipe="no-learned-tail")
    assert cfg.label == "speakermem [recipe no-learned-tail]"
    assert RunConfig(bench="locomo", system="speakermem", data="x", recipe="speakermem").label == "speakermem"


def test_resume_takes_no_recipe_as_the_products_recipe(tmp_path):
    """A run started with ``--recipe speakermem`` resumes without ``--recipe`` and the reverse (both
    are the product's recipe); another recipe is still refused, naming the field."""
    from graphmem.eval.runner import _check_identity

    def cfg(recipe: str | None) -> RunConfig:
        return RunConfig(bench="locomo", system="speakermem", data="x", recipe=recipe)

    _check_identity(cfg("speakermem"), cfg(None), tmp_path)
    _check_identity(cfg(None), cfg("speakermem"), tmp_path)
    with pytest.raises(InvalidInputError, match="recipe: None in the folder, 'no-learned' now"):
        _check_identity(cfg(None), cfg("no-learned"), tmp_path)


def test_a_folder_of_another_recipe_or_embedder_is_not_resumed(tmp_path):
    """A recipe keeps its name when the product's recipe changes (the thirteenth round moved
    fusion.w_fulltext): records written before the change must not pass for this run's."""
    from graphmem.eval.runner import RunConfig, _check_identity
    from graphmem.recall.recipe import named_recipe

    now = named_recipe("speakermem").model_dump()
    before = named_recipe("fulltext-weight-1").model_dump()
    base = dict(bench="locomo", system="speakermem", data="d", embed_model="m")
    _check_identity(RunConfig(**base, recipe_settings=now), RunConfig(**base, recipe_settings=now), tmp_path)
    with pytest.raises(InvalidInputError, match=r"fusion\.w_fulltext 1\.0 in the folder, 0\.7 now"):
        _check_identity(RunConfig(**base, recipe_settings=before), RunConfig(**base, recipe_settings=now), tmp_path)
    with pytest.raises(InvalidInputError, match="made before runs recorded their recipe"):
        _check_identity(RunConfig(**base), RunConfig(**base, recipe_settings=now), tmp_path)
    with pytest.raises(InvalidInputError, match="embed_model: 'old' in the folder, 'm' now"):
        _check_identity(RunConfig(**{**base, "embed_model": "old"}, recipe_settings=now),
                        RunConfig(**base, recipe_settings=now), tmp_path)
