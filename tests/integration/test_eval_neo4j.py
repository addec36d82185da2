"""graphmem under evaluation: units ingested/derived once per group, ablations - real Neo4j.

Every run uses a fresh group-id prefix, so the natural benchmark groups (conv-26,
grp_0d1e2f3a, ...) are never touched; the test's groups are deleted afterwards.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from graphmem.core.config import Settings
from graphmem.eval import prompts as eval_prompts
from graphmem.eval.benchmarks import Unit
from graphmem.eval.report import summarize
from graphmem.eval.runner import RunOptions, read_records, read_run_state, run_eval
from graphmem.eval.systems import SpeakerMem
from graphmem.query.prompts import MARKERS
from tests.conftest import delete_group
from tests.scripted_llm import Reply
from tests.test_query_fixtures import build_family, family_conversation

pytestmark = pytest.mark.neo4j

FIX = Path(__file__).parents[1] / "fixtures" / "eval"
WRITER_MARKER = "You keep the long-term memory of a group chat"


@pytest.fixture
def prefix(store, schema):
    """A fresh group-id prefix; every group created under it is deleted afterwards."""
    p = f"test-{uuid.uuid4().hex[:10]}-"
    yield p
    rows = store.read_text("MATCH (g:Group) WHERE g.id STARTS WITH $p RETURN g.id AS id", p=p)
    for r in rows:
        delete_group(store, r["id"])


def system_text(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def user_text(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")


def writer_reply(body: dict) -> Reply:
    """One ADD per participant who spoke in the segment (a plausible Writer)."""
    text = user_text(body)
    speakers = list(dict.fromkeys(re.findall(r"^\[[^\]]*\] ([^:]+):", text, re.MULTILINE)))
    return Reply.json({"actions": [
        {"action": "ADD", "owner": s, "source": s, "layer": "per_speaker_core", "utype": "fact",
         "content": f"{s} took part in the discussion"} for s in speakers
    ]})


def script_all(server) -> None:
    server.route(server.system_contains(WRITER_MARKER), writer_reply)
    server.route(server.system_contains(MARKERS["project"]),
                 Reply.json({"issue": "discussion", "rows": ["ALL", "GROUP"], "tense": "head"}))
    server.route(server.system_contains(MARKERS["select"]), Reply.json({"ranked": [2, 1], "expand": []}))
    server.route(server.system_contains(MARKERS["sufficiency"]), Reply.json({"enough": True, "ask": ""}))
    server.route(server.system_contains(MARKERS["answer"]), Reply.text("A. Lena"))
    server.route(server.system_contains(eval_prompts.MARKERS["judge"]), Reply.text("ok\nFinal: Correct"))
    server.route(server.system_contains(eval_prompts.MARKERS["rubric"]), Reply.json({"score": 0.5, "rationale": "r"}))


def count(server, marker: str) -> int:
    return sum(1 for b in server.chat_requests if marker in system_text(b))


def test_units_are_ingested_and_derived_once_and_reused(store, embedder, prefix, scripted_llm, tmp_path):
    script_all(scripted_llm)
    model = scripted_llm.chat_model()
    s = Settings(home=tmp_path / "home", eval_bootstrap_resamples=500)
    opts = RunOptions(bench="socialmem", data=FIX / "socialmem", system="speakermem", out=tmp_path / "run1",
                      group_prefix=prefix)
    first = run_eval(opts, settings=s, store=store, embedder=embedder, answer=model, judge=model, writer=model)
    assert (first.done, first.failed) == (4, 0)
    units = first.units
    assert {u.group_id for u in units.values()} == {f"{prefix}grp_aaaa0001", f"{prefix}grp_bbbb0002"}
    assert units["grp_aaaa0001"].written == 7 and units["grp_aaaa0001"].segments == 2  # whole sessions
    # session 2 repeats session 1's three records word for word: rejected as duplicates
    assert units["grp_aaaa0001"].records == 3 and units["grp_aaaa0001"].writer_calls == 2
    assert units["grp_aaaa0001"].writer_prompt_tokens > 0
    writer_calls = count(scripted_llm, WRITER_MARKER)
    assert writer_calls == 3  # 2 sessions + 1 session
    # natural groups untouched
    assert store.read_text("MATCH (g:Group {id: 'grp_aaaa0001'}) RETURN count(g) AS n")[0]["n"] == 0

    recs = {r.id: r for r in read_records(tmp_path / "run1")}
    r = recs["grp_aaaa0001/Q4_a2"]
    assert r.group_id == f"{prefix}grp_aaaa0001" and r.answer == "A. Lena" and r.verdict is True
    assert r.rubric_method == "option" and r.rubric_score == 1.0
    assert set(r.tokens) >= {"project", "select", "sufficiency", "answer"}
    assert r.s1_ids and r.evidence_ids[: len(r.s1_ids)] == r.s1_ids and r.record_ids
    assert r.judge_tokens["judge"]["calls"] == 1
    summary = summarize(tmp_path / "run1")
    assert summary.costs.writer_calls == 3 and summary.costs.ingest_in > 0
    assert summary.costs.total == (summary.costs.ingest_in + summary.costs.ingest_out
                                   + summary.costs.qa_input + summary.costs.answer_out)
    assert summary.costs.by_stage["answer"]["calls"] == 4

    # a later run (other system settings, other folder) reuses the groups: nothing ingested or derived
    opts2 = RunOptions(bench="socialmem", data=FIX / "socialmem", system="speakermem", out=tmp_path / "run2",
                       group_prefix=prefix, ask_enabled=False, concurrency=2)
    second = run_eval(opts2, settings=s, store=store, embedder=embedder, answer=model, judge=model, writer=model)
    assert second.done == 4
    assert count(scripted_llm, WRITER_MARKER) == writer_calls
    assert all(u.written == 0 and u.derived_now == 0 and u.segments > 0 for u in second.units.values())
    state = read_run_state(tmp_path / "run2")
    assert state["config"]["ask_enabled"] is False and state["config"]["budgets"]["ask_enabled"] is False
    assert all("sufficiency" not in x.tokens for x in read_records(tmp_path / "run2"))


def test_retrieval_only_run_records_system1_evidence_and_says_so(store, embedder, prefix, tmp_path):
    s = Settings(home=tmp_path / "home")
    out = run_eval(RunOptions(bench="locomo", data=FIX / "locomo_mini.json", system="speakermem",
                              out=tmp_path / "run", group_prefix=prefix, s1_k=3),
                   settings=s, store=store, embedder=embedder, answer=None, judge=None, writer=None)
    assert out.done == 5
    assert any("no answer model" in n for n in out.notes)
    assert any("System 2 is empty" in n for n in out.notes)
    assert "System 2 is empty" in out.units["conv-mini"].note
    # the report says it once, naming the unit (the run's count of empty units said it twice)
    said = [n for n in summarize(tmp_path / "run").notes if "System 2 is empty" in n]
    assert len(said) == 1 and "conv-mini" in said[0] and "no Writer is configured" in said[0], said
    recs = {r.id: r for r in read_records(tmp_path / "run")}
    r = recs["conv-mini/q0"]  # "What did Ana make at the pottery workshop?" gold D1:1
    assert r.answer is None and len(r.s1_ids) == 3 and r.evidence_ids[:3] == r.s1_ids
    assert r.recall["10"] is not None and r.recall["1"] == (1.0 if r.s1_ids[0] == "D1:1" else 0.0)
    assert "D1:1" in r.s1_ids


def test_a_group_stored_with_deferred_vectors_is_embedded_before_it_is_scored(store, embedder, prefix, tmp_path):
    """A benchmark group already in the store with its vectors deferred (``embed="later"``, as an
    API bench or the importer leaves it) is scored with every vector: the run's ingest skips
    the stored messages, so the run embeds them first; a second run embeds nothing."""
    from graphmem.eval.benchmarks import load_bench
    from graphmem.verbatim.ingest import ingest_conversations

    unit = load_bench("locomo", FIX / "locomo_mini.json", group_prefix=prefix).units[0]
    ingest_conversations(store, [unit.conversation], None, embed="later")
    vectors = "MATCH (m:Message {group_id: $g}) RETURN count(m) AS n, count(m.embedding) AS e"
    before = store.read_text(vectors, g=unit.group_id)[0]
    assert before["n"] > 0 and before["e"] == 0
    s = Settings(home=tmp_path / "home")
    logs: list[str] = []
    out = run_eval(RunOptions(bench="locomo", data=FIX / "locomo_mini.json", system="speakermem",
                              out=tmp_path / "run", group_prefix=prefix, s1_k=3),
                   settings=s, store=store, embedder=embedder, answer=None, judge=None, writer=None,
                   log=logs.append)
    assert out.units["conv-mini"].written == 0 and out.units["conv-mini"].embedded_now == before["n"]
    assert any("had no vector; embedded now" in line for line in logs), logs
    assert store.read_text(vectors, g=unit.group_id)[0] == {"n": before["n"], "e": before["n"]}
    again = run_eval(RunOptions(bench="locomo", data=FIX / "locomo_mini.json", system="speakermem",
                                out=tmp_path / "run2", group_prefix=prefix, s1_k=3),
                     settings=s, store=store, embedder=embedder, answer=None, judge=None, writer=None)
    assert again.units["conv-mini"].embedded_now == 0


def test_ablations_take_one_path_away(store, embedder, group_id, scripted_llm):
    build_family(store, embedder, group_id)
    unit = Unit("family", group_id, family_conversation(group_id), [])
    scripted_llm.route(scripted_llm.system_contains(MARKERS["project"]),
                       Reply.json({"issue": "hiking trail", "rows": ["ALL", "GROUP"], "tense": "head"}))
    scripted_llm.route(scripted_llm.system_contains(MARKERS["select"]), Reply.json({"ranked": [], "expand": []}))
    scripted_llm.route(scripted_llm.system_contains(MARKERS["answer"]), Reply.text("the easy lake trail"))
    model = scripted_llm.chat_model()
    s = Settings()
    question = "Which trail did the family choose?"

    def evidence(ablate):
        n = len(scripted_llm.chat_requests)
        out = SpeakerMem(store, embedder, model=model, settings=s, ask_enabled=False, ablate=ablate).answer(unit, question)
        new = scripted_llm.chat_requests[n:]
        (answer_req,) = [b for b in new if MARKERS["answer"] in system_text(b)]
        return out, user_text(answer_req), new

    full, text, _ = evidence(None)
    raw, sl = text.split("[MEMORY SLICE]")
    assert "(none)" not in raw.split("[RAW EXCERPTS]")[1][:10] and "\nGROUP\n" in sl and "\nBen\n" in sl
    assert full.s1_ids and "r-group-trail" in full.record_ids

    out, text, new = evidence("s1")
    raw, sl = text.split("[MEMORY SLICE]")
    assert "[RAW EXCERPTS]\n(none)" in raw and "raw fallback" not in sl and not out.s1_ids
    assert not any(MARKERS["select"] in system_text(b) for b in new)  # no System 1 path at all
    assert "\nGROUP\n" in sl

    out, text, _ = evidence("s2")
    assert text.split("[MEMORY SLICE]")[1].strip().splitlines()[1] == "(no rows)" and not out.record_ids

    out, text, _ = evidence("s2-group")
    sl = text.split("[MEMORY SLICE]")[1]
    assert "\nGROUP" not in sl and "\nBen\n" in sl and "r-group-trail" not in out.record_ids

    out, text, _ = evidence("s2-person")
    sl = text.split("[MEMORY SLICE]")[1]
    assert "\nGROUP\n" in sl and "\nBen" not in sl and "\nCara" not in sl
    assert out.record_ids == ["r-group-trail"]


def test_grid_command_runs_every_cell_and_draws_the_grid(store, embedder, prefix, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from graphmem.cli import app
    from graphmem.core.config import get_settings

    for var in ("GRAPHMEM_LLM_BASE_URL", "GRAPHMEM_LLM_MODEL", "GRAPHMEM_WRITER_BASE_URL", "GRAPHMEM_WRITER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    # the eval home moves, the test server and its password (kept in the server's home) stay
    monkeypatch.setenv("GRAPHMEM_NEO4J_PASSWORD", get_settings().neo4j_password.get_secret_value())
    monkeypatch.setenv("GRAPHMEM_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    try:
        res = CliRunner().invoke(app, ["eval", "grid", "--bench", "locomo", "--data", str(FIX / "locomo_mini.json"),
                                       "--s1-k", "1,3", "--s2-k", "1,2", "--group-prefix", prefix,
                                       "--out", str(tmp_path / "grid")])
    finally:
        get_settings.cache_clear()
    assert res.exit_code == 0, res.output
    cells = sorted(p.name for p in (tmp_path / "grid").iterdir() if p.is_dir())
    assert cells == ["s1-1_s2-1", "s1-1_s2-2", "s1-3_s2-1", "s1-3_s2-2"]
    state = read_run_state(tmp_path / "grid" / "s1-3_s2-2")
    b = state["config"]["budgets"]
    assert (b["top_k"], b["recall_n"], b["s2_k"], b["ask_enabled"]) == (3, 3, 2, False)
    assert all(len(r.s1_ids) == 1 for r in read_records(tmp_path / "grid" / "s1-1_s2-1"))
    assert (tmp_path / "grid" / "grid.png").read_bytes()[:4] == b"\x89PNG"
    assert "## S1 top-k × S2 k grid (App. H)" in (tmp_path / "grid" / "report.md").read_text()


def test_the_cli_names_a_recipe_run_as_its_label_says(prefix, tmp_path, monkeypatch):
    """``graphmem eval run --recipe X`` prints the run's label ``speakermem [recipe X]`` as written:
    the square brackets are not rich markup (they were swallowed: ``speakermem  on locomo``)."""
    from typer.testing import CliRunner

    from graphmem.cli import app
    from graphmem.core.config import get_settings

    for var in ("GRAPHMEM_LLM_BASE_URL", "GRAPHMEM_LLM_MODEL", "GRAPHMEM_WRITER_BASE_URL", "GRAPHMEM_WRITER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    get_settings.cache_clear()
    try:
        res = CliRunner().invoke(app, ["eval", "run", "--bench", "locomo", "--data", str(FIX / "locomo_mini.json"),
                                       "--system", "speakermem", "--recipe", "no-learned", "--limit", "1",
                                       "--group-prefix", prefix, "--out", str(tmp_path / "run")])
        assert res.exit_code == 0, res.output
        assert "speakermem [recipe no-learned] on locomo: 1 question(s)" in res.output, res.output
    finally:
        get_settings.cache_clear()
