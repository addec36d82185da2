"""SFT, GRPO and eval on a tiny random causal LM (CPU, no downloads, no Neo4j).

The model is built from a config in the test (Llama architecture, about 70 k parameters) with a
byte-level BPE tokenizer trained on the shipped teacher trajectories
(examples/train/teacher.jsonl, recorded by ``graphmem train collect`` from the hand-written
networks). It learns nothing useful; the tests check the training machinery.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

import torch  # noqa: E402

from graphmem.train.evaluate import evaluate_writer  # noqa: E402
from graphmem.train.grpo import GrpoConfig, grpo_loss, run_grpo  # noqa: E402
from graphmem.train.models import build_tiny_model, generate, load_policy  # noqa: E402
from graphmem.train.sft import SftConfig, run_sft  # noqa: E402
from graphmem.train.trajectories import networks, read_steps  # noqa: E402

TEACHER = Path(__file__).resolve().parents[2] / "examples" / "train" / "teacher.jsonl"


@pytest.fixture(scope="module")
def steps():
    return read_steps(TEACHER)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, steps):
    torch.set_num_threads(1)
    texts = [m["content"] for s in steps for m in s.prompt] + [s.completion for s in steps]
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), texts, vocab_size=2048, hidden_size=32, layers=1)


@pytest.fixture(scope="module")
def noop_sft(tmp_path_factory, tiny, steps):
    """Full SFT on the NOOP-only network's two segments, repeated (the same batch every step)."""
    noop = networks(steps)["r1-hello"]
    out = tmp_path_factory.mktemp("sft-full")
    result = run_sft(noop, str(tiny), out, SftConfig(lora=False, max_steps=12, lr=1e-2, grad_accum=1))
    return result


def test_sft_loss_is_finite_and_falls_on_a_repeated_batch(noop_sft):
    losses = noop_sft["losses"]
    assert len(losses) == 12 and all(math.isfinite(x) for x in losses)
    assert np.mean(losses[-3:]) < 0.5 * np.mean(losses[:3])
    assert Path(noop_sft["merged"], "config.json").exists() and noop_sft["adapter"] is None


def test_lora_adapter_saves_loads_and_generates(tmp_path, tiny, steps):
    result = run_sft(steps[:2], str(tiny), tmp_path, SftConfig(lora=True, max_steps=2, lr=1e-3, grad_accum=1,
                                                               lora_r=4))
    assert all(math.isfinite(x) for x in result["losses"])
    assert Path(result["adapter"], "adapter_config.json").exists()
    model, tokenizer = load_policy(result["adapter"])
    gens = generate(model, tokenizer, steps[0].prompt, n=2, max_new_tokens=5)
    assert len(gens) == 2 and all(g.finish_reason in ("stop", "length") and 1 <= len(g.completion_ids) <= 5
                                  for g in gens)
    merged, _tok = load_policy(result["merged"])  # the vLLM-facing folder is a plain model
    assert type(merged).__name__ == "LlamaForCausalLM"


def test_grpo_steps_on_position_wise_groups(tmp_path, noop_sft, steps):
    noop = networks(steps)["r1-hello"]
    # sampling hot enough that the G answers differ, so some positions have σ ≥ 0.02
    cfg = GrpoConfig(group_size=4, rounds=1, ppo_epochs=2, lr=1e-3, temperature=1.5, top_p=1.0, max_new_tokens=16,
                     lora=True, lora_r=4, kl_skip=10.0)
    result = run_grpo(noop, noop_sft["merged"], tmp_path, cfg)
    (r,) = result["rounds"]
    assert r["samples"] == 8 and r["positions"] == 2
    assert r["completions_in_update"] > 0 and r["positions_updated"] >= 1
    assert len(r["losses"]) == 2 and all(math.isfinite(x) for x in r["losses"])
    assert r["mean_kl"] >= 0.0
    assert "skipped" in result["qa_note"]
    assert Path(result["adapter"], "adapter_config.json").exists()
    saved = json.loads((tmp_path / "grpo.json").read_text())
    assert saved["config"]["group_size"] == 4 and saved["config"]["weights"]["valid"] == 0.20


def test_grpo_loss_eq25_27_on_made_up_numbers():
    lp = torch.log(torch.tensor([0.5, 0.25]))
    # π_θ = π_old = π_ref: ratio 1, KL 0 -> loss = -mean(Â)
    loss, kl = grpo_loss([lp, lp], [lp, lp], [lp, lp], [1.0, -3.0])
    assert float(loss) == pytest.approx(1.0) and float(kl) == 0.0
    # ratio 2 on every token, Â = 1: clipped at 1.2; δ = log π_ref - log π_θ = -log 2
    old = lp - math.log(2.0)
    loss, kl = grpo_loss([lp], [old], [old], [1.0], clip_eps=0.2, beta=0.1)
    d = math.exp(-math.log(2.0)) + math.log(2.0) - 1.0
    assert float(kl) == pytest.approx(d)
    assert float(loss) == pytest.approx(-(1.2 - 0.1 * d))
    # Â < 0 with ratio 2: min(2·(-1), 1.2·(-1)) = -2 (the pessimistic bound is kept)
    loss, _ = grpo_loss([lp], [old], [lp], [-1.0])
    assert float(loss) == pytest.approx(2.0)


def test_eval_scores_the_teacher_perfectly_and_runs_a_model(steps, noop_sft):
    by_prompt = {s.prompt[1]["content"]: s.completion for s in steps}

    def teacher(prompt):
        return by_prompt[prompt[1]["content"]], "stop"

    result = evaluate_writer(steps, writer=teacher)
    s = result["summary"]
    assert s["networks"] == 4 and s["positions"] == 9
    assert s["final_phi_sl"] == 1.0 and s["final_chain"] == 1.0 and s["parse_failures"] == 0
    assert s["validity"] == 1.0 and s["penalty"] == 0.0

    model_result = evaluate_writer(networks(steps)["r1-hello"], model=noop_sft["merged"], max_new_tokens=16)
    assert model_result["summary"]["positions"] == 2 and "skipped" in model_result["qa_note"]
