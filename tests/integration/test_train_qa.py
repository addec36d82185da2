"""Terminal QA gain (eq. 8, 22) through the real ask pipeline, judge and Neo4j, with the
scripted answerer of tests/train_qa_script.py on the scripted OpenAI-compatible server.

The scripted answerer gives the gold answer only when its evidence holds what the question
needs (a record line of the memory slice for the networks' System 2 questions, a raw excerpt
for the greeting question), so every expected value below is counted by hand from the states.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphmem.core.config import get_settings
import pytest

from graphmem.query.prompts import MARKERS
from graphmem.train.grpo import GrpoConfig, rollout_network
from graphmem.train.qa import QAGain, load_questions, state_hash
from graphmem.train.rewards import group_advantages
from graphmem.train.state import MemoryState, canonical_completion
from graphmem.train.trajectories import networks, read_steps
from tests.train_qa_script import make_handler

pytestmark = pytest.mark.neo4j
NETS = Path(__file__).resolve().parents[2] / "examples" / "train"
NOOP = [{"action": "NOOP"}]


@pytest.fixture(scope="module")
def nets():
    return networks(read_steps(NETS / "teacher.jsonl"))


@pytest.fixture
def qa(store, embedder, schema, scripted_llm):
    scripted_llm.handler = make_handler()
    model = scripted_llm.chat_model()
    return QAGain(store, embedder, model, model, load_questions(NETS / "questions.jsonl"), settings=get_settings())


def _state(steps, answers):
    """The memory after applying ``answers[t]`` (action lists) at each position."""
    first = steps[0]
    state = MemoryState(first.group_id, first.make_roster(), first.pre_state, segments_done=first.index - 1)
    for step, actions in zip(steps, answers):
        state.segments_done = step.index - 1
        state.apply(step.segment(), actions)
    return list(state.records.values())


def _answer_requests(scripted_llm):
    return [r for r in scripted_llm.chat_requests
            if any(MARKERS["answer"] in m["content"] for m in r["messages"] if m["role"] == "system")]


def _scratch_groups(driver) -> int:
    with driver.session() as s:
        return s.run("MATCH (g:Group) WHERE g.id STARTS WITH 'qa-scratch-' RETURN count(g) AS n").single()["n"]


def test_gain_is_positive_exactly_when_the_state_holds_the_records(qa, nets, scripted_llm, driver):
    launch = nets["r1-launch"]
    teacher = [s.actions for s in launch]

    full = qa(launch, _state(launch, teacher))
    # 3 questions; every needed record is in the teacher's final state: 3/3 vs 0/3
    assert (full.with_s2, full.s1_only, full.gain) == (1.0, 0.0, 1.0)
    assert [q["correct_s1_s2"] for q in full.questions] == [True, True, True]

    # the last session writes only its first UPDATE ("Beta released on April 27"): 1 of 3
    partial = qa(launch, _state(launch, [*teacher[:2], teacher[2][:1]]))
    assert partial.with_s2 == pytest.approx(1 / 3) and partial.s1_only == 0.0
    assert partial.gain == pytest.approx(1 / 3)
    assert [q["correct_s1_s2"] for q in partial.questions] == [True, False, False]

    # nothing written: both arms abstain on every question
    empty = qa(launch, _state(launch, [NOOP] * 3))
    assert (empty.with_s2, empty.s1_only, empty.gain) == (0.0, 0.0, 0.0)

    # a question System 1 answers alone earns the Writer nothing: both arms right
    hello = nets["r1-hello"]
    greet = qa(hello, _state(hello, [s.actions for s in hello]))
    assert (greet.with_s2, greet.s1_only, greet.gain) == (1.0, 1.0, 0.0)

    # both arms saw the same System 1 evidence; the S1-only arm has no memory slice rows
    answers = _answer_requests(scripted_llm)
    assert len(answers) == 2 * (3 + 3 + 3 + 1)
    for both, alone in zip(answers[0::2], answers[1::2]):
        b, a = both["messages"][1]["content"], alone["messages"][1]["content"]
        assert b.split("[MEMORY SLICE]")[0] == a.split("[MEMORY SLICE]")[0]
        assert "(no rows)" in a.split("[MEMORY SLICE]")[1]
    assert _scratch_groups(driver) == 0  # every scratch group was erased

    # cached per (network, state hash): the same state again costs no call
    calls, evaluations = len(scripted_llm.chat_requests), qa.evaluations
    again = qa(launch, _state(launch, teacher))
    assert again is full and qa.evaluations == evaluations == 4
    assert len(scripted_llm.chat_requests) == calls
    assert state_hash(_state(launch, teacher)) != state_hash(_state(launch, [NOOP] * 3))


@dataclass
class _Gen:
    text: str
    finish_reason: str = "stop"
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)


def test_gain_flows_into_the_grpo_returns(qa, nets):
    """G = 3 on r1-launch: trajectories 0 and 1 write the teacher's answers, trajectory 2
    answers NOOP everywhere. Per position t (T = 3), eq. 9:
    teacher: 0.20·1 + 0.45·1 + 0 + 0.35·0.95^(2-t)·1 = 0.965875, 0.9825, 1.0
    NOOP:    0.20·1 + 0.45·R_mem + 0 + 0.35·0.95^(2-t)·0 with R_mem = 0.2 at t = 0 (no chain on
             either side yet) and 0 after: 0.29, 0.20, 0.20."""
    launch = nets["r1-launch"]
    by_session = {s.session: canonical_completion(s.actions) for s in launch}

    def sample(prompt, n):
        user = prompt[1]["content"]
        session = user.split("SESSION: ", 1)[1].split("\n", 1)[0]
        if session == "s1":  # all three states are empty: one shared call
            assert n == 3
            return [_Gen(by_session["s1"]), _Gen(by_session["s1"]), _Gen(json.dumps({"actions": NOOP}))]
        noop_state = "(empty - nothing recorded yet)" in user
        return [_Gen(json.dumps({"actions": NOOP}) if noop_state else by_session[session]) for _ in range(n)]

    samples = rollout_network(None, None, launch, GrpoConfig(group_size=3), qa_fn=qa, sample_fn=sample)
    returns = np.array([[s.ret for s in row] for row in samples])
    assert [row[0].r_qa for row in samples] == [1.0, 1.0, 0.0]
    np.testing.assert_allclose(returns[0], [0.965875, 0.9825, 1.0], atol=1e-9)
    np.testing.assert_allclose(returns[1], returns[0], atol=0)
    np.testing.assert_allclose(returns[2], [0.29, 0.20, 0.20], atol=1e-9)
    assert qa.evaluations == 2  # two distinct final states, G = 3 trajectories
    # eq. 24 on [a, a, b]: (a - μ)/σ = 1/√2 and (b - μ)/σ = -√2 at every position
    adv = group_advantages(returns)
    np.testing.assert_allclose(adv[0], [2 ** -0.5] * 3, atol=1e-9)
    np.testing.assert_allclose(adv[2], [-(2 ** 0.5)] * 3, atol=1e-9)
    # without the QA term the teacher's returns are 0.35·γ^(T-1-t) lower
    plain = rollout_network(None, None, launch, GrpoConfig(group_size=3), sample_fn=sample)
    np.testing.assert_allclose([s.ret for s in plain[0]], [0.65, 0.65, 0.65], atol=1e-9)


def test_cli_eval_reports_the_gain_per_network_and_mean(nets, tmp_path, scripted_llm, monkeypatch, schema):
    """`graphmem train eval --endpoint --questions`: the Writer endpoint (scripted to return the
    teacher's actions) writes r1-dinner and r1-hello; the answerer and judge are the scripted QA
    script. Gains: dinner 3/3 - 0/3 = +1, hello 1/1 - 1/1 = 0, mean +0.5."""
    from typer.testing import CliRunner

    from graphmem.cli import app
    from graphmem.core.config import get_settings
    from graphmem.derived.writer import WRITER_SYSTEM_PROMPT

    chosen = [s for gid in ("r1-dinner", "r1-hello") for s in nets[gid]]
    ref = tmp_path / "ref.jsonl"
    ref.write_text("".join(s.model_dump_json() + "\n" for s in chosen))
    for s in chosen:
        first_text = s.messages[0].text

        def pred(body, first_text=first_text, session=s.session):
            msgs = body.get("messages") or []
            return (bool(msgs) and msgs[0]["content"] == WRITER_SYSTEM_PROMPT
                    and f"SESSION: {session}\n" in msgs[1]["content"] and first_text in msgs[1]["content"])

        scripted_llm.route(pred, canonical_completion(s.actions))
    scripted_llm.handler = make_handler()
    runner = CliRunner()
    try:
        for prefix in ("GRAPHMEM_WRITER", "GRAPHMEM_LLM"):
            for key, value in scripted_llm.settings_env(prefix).items():
                monkeypatch.setenv(key, value)
        get_settings.cache_clear()
        args = ["train", "eval", str(ref), "--endpoint"]
        result = runner.invoke(app, [*args, "--questions", str(NETS / "questions.jsonl")])
        assert result.exit_code == 0, result.output
        assert "r1-dinner: Φ_SL 1.0000  R_chain 1.0000  R_QA +1.0000 (S1+S2 1.00, S1 0.00, 3 q)" in result.output
        assert "r1-hello: Φ_SL 1.0000  R_chain 1.0000  R_QA +0.0000 (S1+S2 1.00, S1 1.00, 1 q)" in result.output
        assert "R_QA (eq. 8): mean +0.5000 over 2 network(s) (QA S1+S2 1.0000, S1 only 0.5000)" in result.output

        no_questions = runner.invoke(app, args)
        assert no_questions.exit_code == 0 and "no --questions file given" in no_questions.output
        monkeypatch.setenv("GRAPHMEM_LLM_BASE_URL", "")
        get_settings.cache_clear()
        no_model = runner.invoke(app, [*args, "--questions", str(NETS / "questions.jsonl")])
        assert no_model.exit_code == 0 and "no answerer/judge configured" in no_model.output
        assert "GRAPHMEM_LLM_BASE_URL" in no_model.output
    finally:
        get_settings.cache_clear()


def test_cli_grpo_takes_the_gain_into_its_returns(nets, tmp_path, scripted_llm, monkeypatch, schema):
    """`graphmem train grpo --questions` with a tiny random policy (it writes no JSON, so every
    trajectory ends in the empty state): one QA evaluation per network for the 2 × G = 4
    trajectories, R_QA = 0 on both (r1-dinner 0/3 vs 0/3, r1-hello 1/1 vs 1/1), and grpo.json
    says the term was included."""
    pytest.importorskip("trl")
    pytest.importorskip("peft")
    from typer.testing import CliRunner

    from graphmem.cli import app
    from graphmem.core.config import get_settings
    from graphmem.train.models import build_tiny_model

    chosen = [s for gid in ("r1-dinner", "r1-hello") for s in nets[gid]]
    ref = tmp_path / "ref.jsonl"
    ref.write_text("".join(s.model_dump_json() + "\n" for s in chosen))
    texts = [m["content"] for s in chosen for m in s.prompt] + [s.completion for s in chosen]
    tiny = build_tiny_model(tmp_path / "tiny", texts, vocab_size=512, hidden_size=32, layers=1)
    scripted_llm.handler = make_handler()
    for key, value in scripted_llm.settings_env("GRAPHMEM_LLM").items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, [
            "train", "grpo", str(ref), "-m", str(tiny), "-o", str(tmp_path / "grpo"), "-G", "2", "--rounds", "1",
            "--ppo-epochs", "1", "--max-new-tokens", "4", "--lora-r", "2", "--questions", str(NETS / "questions.jsonl")])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert "R_QA +0.000 (4 trajectories, 2 states evaluated so far)" in result.output
    saved = json.loads((tmp_path / "grpo" / "grpo.json").read_text())
    (r,) = saved["rounds"]
    assert (r["mean_qa_gain"], r["qa_trajectories"], r["qa_evaluations"]) == (0.0, 4, 2)
    assert saved["qa_note"] == "terminal QA gain included (eq. 8, 22)"
