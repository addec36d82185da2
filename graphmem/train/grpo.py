"""Speaker-conditioned GRPO for the Writer (SpeakerMem-R1 §4, App. E eq. 9, 23-27).

One round, per training network (the steps of one group in a trajectory file):

1. **Rollouts.** G independent trajectories start from the network's first pre-state; at each
   writing position t every trajectory's Writer input is built from *its own* memory state
   (:class:`graphmem.train.state.MemoryState`: the derive prompt, validator and write rules in
   memory), one answer is sampled (temperature 0.8, top-p 0.95) and applied.
2. **Returns** (eq. 9) per (g, t): ``0.20 R_valid + 0.45 R_mem + P + 0.35 γ^{T-1-t} R_QA``
   with ``R_mem`` against the teacher's state and update chain at t
   (:mod:`graphmem.train.rewards`). ``R_QA`` is the terminal QA gain of trajectory g's final
   memory (:class:`graphmem.train.qa.QAGain`: S1+S2 vs S1 only through ``ask`` and the judge,
   cached per network and state); without questions or without an answerer and judge it is
   left out and the run says so.
3. **Advantages** position-wise over the G trajectories (eq. 23-24): σ_t < 0.02 -> no update,
   else ``clip((r - μ_t)/σ_t, ±3)``.
4. **Update** (eq. 25-27), ``ppo_epochs`` passes: per completion token the ratio to the rollout
   policy, the clipped surrogate with ε = 0.2, minus β = 0.1 times the KL estimate
   ``exp(δ) - δ - 1`` to the frozen SFT policy (δ = log π_ref - log π_θ); averaged over the
   tokens of each completion, then over completions with a nonzero advantage. When the mean
   KL exceeds 0.02 the step is skipped.

Why not TRL's ``GRPOTrainer``: it groups the completions of one *identical* prompt and
normalises their rewards per prompt, which matches a teacher-forced variant (every sample at
position t sees the teacher's pre-state) but not the paper's, where the G trajectories evolve
their own states, so position t's prompts differ across the group; it also has no σ < 0.02
skip with ±3 clipping, no discounted terminal credit, and no mean-KL skip. The loop below is
the paper's variant; the policy, LoRA and generation come from transformers/PEFT.
"""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphmem.llm.timing import Stopwatch
from graphmem.derived.memory import DerivedRecord
from graphmem.train.rewards import (
    ADV_CLIP,
    SIGMA_MIN,
    RewardWeights,
    group_advantages,
    memory_agreement,
    position_return,
    structural_penalty,
    validity_reward,
)
from graphmem.train.state import MemoryState
from graphmem.train.trajectories import WriterStep, networks

__all__ = ["GrpoConfig", "QAFn", "Sample", "SampleFn", "grpo_loss", "rollout_network", "run_grpo",
           "QA_NOTE_SKIPPED"]

QA_NOTE_SKIPPED = ("terminal QA gain (eq. 8, 22) skipped: no answerer/judge configured for training; "
                   "returns use R_valid, R_mem and P only")

#: Terminal QA gain of a final memory: (the network's steps, every record of the state) ->
#: a :class:`graphmem.train.qa.QAResult` (or a bare float gain), or None (no QA term).
QAFn = Callable[[Sequence[WriterStep], list[DerivedRecord]], Any]
#: Sampler: (prompt messages, n) -> n generations (``text``, ``finish_reason``, ``prompt_ids``,
#: ``completion_ids``); default :func:`graphmem.train.models.generate` on the policy.
SampleFn = Callable[[list[dict[str, str]], int], Sequence[Any]]


def _gain(value: Any) -> float | None:
    if value is None:
        return None
    return float(getattr(value, "gain", value))


@dataclass
class GrpoConfig:
    """GRPO settings; defaults are the paper's (App. E, Table 8) except where noted.

    Attributes:
        group_size: G trajectories per network (8).
        rounds: rollout rounds (30).
        ppo_epochs: policy passes per round (2).
        lr: learning rate (1e-6); grad_clip: gradient-norm cap (1.0).
        temperature / top_p: sampling (0.8 / 0.95); max_new_tokens: length limit (2048).
        clip_eps: ratio clip ε (0.20); beta: KL coefficient β (0.10); kl_skip: mean-KL
            threshold above which a step is skipped (0.02).
        sigma_min / adv_clip: advantage rule (0.02 / 3).
        lora / lora_r / lora_alpha: train a LoRA adapter on the SFT policy (the reference is
            the same model with the adapter disabled), or all weights (reference: a frozen copy).
        seed: sampling and data order.
        weights: reward weights (:class:`graphmem.train.rewards.RewardWeights`).
    """

    group_size: int = 8
    rounds: int = 30
    ppo_epochs: int = 2
    lr: float = 1e-6
    grad_clip: float = 1.0
    temperature: float = 0.8
    top_p: float = 0.95
    max_new_tokens: int = 2048
    clip_eps: float = 0.20
    beta: float = 0.10
    kl_skip: float = 0.02
    sigma_min: float = SIGMA_MIN
    adv_clip: float = ADV_CLIP
    lora: bool = True
    lora_r: int = 16
    lora_alpha: int = 32
    seed: int = 0
    weights: RewardWeights = field(default_factory=RewardWeights)


@dataclass
class Sample:
    """One sampled Writer answer at (trajectory g, position t), with its reward terms."""

    g: int
    t: int
    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    finish_reason: str
    r_valid: float
    penalty: float
    r_mem: float
    phi_sl: float
    r_chain: float
    parsed: bool
    r_qa: float | None = None
    ret: float = 0.0
    advantage: float = 0.0
    old_logps: Any = None


def rollout_network(
    policy: Any,
    tokenizer: Any,
    steps: Sequence[WriterStep],
    cfg: GrpoConfig,
    *,
    qa_fn: QAFn | None = None,
    sample_fn: SampleFn | None = None,
) -> list[list[Sample]]:
    """Sample G trajectories over one network and score every position (eq. 9).

    Args:
        policy / tokenizer: the current policy (unused when ``sample_fn`` is given).
        steps: the network's teacher steps (positions 0..T-1): segments and reference states.
        cfg: group size, sampling, weights.
        qa_fn: terminal QA gain of a trajectory's final memory (eq. 8), e.g. a
            :class:`graphmem.train.qa.QAGain`; None (or a None result) leaves the term out.
            Every sample of trajectory g gets ``0.35 γ^{T-1-t} R_QA_g``.
        sample_fn: draws the answers instead of the policy (tests, external samplers).

    Returns:
        ``samples[g][t]`` with ``r_qa`` and ``ret`` set (advantages are set by :func:`run_grpo`).
    """
    from graphmem.train.models import generate

    if sample_fn is None:
        def sample_fn(prompt: list[dict[str, str]], n: int) -> Sequence[Any]:
            return generate(policy, tokenizer, prompt, n=n, max_new_tokens=cfg.max_new_tokens,
                            temperature=cfg.temperature, top_p=cfg.top_p)

    first = steps[0]
    roster = first.make_roster()
    states = [MemoryState(first.group_id, roster, first.pre_state, segments_done=first.index - 1)
              for _ in range(cfg.group_size)]
    samples: list[list[Sample]] = [[] for _ in range(cfg.group_size)]
    T = len(steps)
    for t, step in enumerate(steps):
        segment = step.segment()
        for state in states:  # a blank segment derive skipped still used up its index
            state.segments_done = step.index - 1
        # trajectories whose states (hence prompts) are equal share one batched generation
        buckets: dict[str, list[int]] = {}
        prompts = {}
        for g, state in enumerate(states):
            prompt, _budget = state.prompt_for(segment)
            key = json.dumps(prompt, ensure_ascii=False)
            buckets.setdefault(key, []).append(g)
            prompts[key] = prompt
        for key, members in buckets.items():
            gens = sample_fn(prompts[key], len(members))
            for g, gen in zip(members, gens):
                outcome = states[g].apply(segment, gen.text)
                validity = validity_reward(outcome.actions, outcome.rejections, heads=outcome.pre_state,
                                           roster=roster, weights=cfg.weights)
                pen = structural_penalty(outcome.actions, outcome.rejections, max_actions=outcome.max_actions,
                                         finish_reason=gen.finish_reason, weights=cfg.weights)
                r_mem, phi, chain = memory_agreement(states[g].heads(), step.post_state, states[g].edges, step.chain,
                                                     weights=cfg.weights)
                samples[g].append(Sample(g, t, gen.prompt_ids, gen.completion_ids, gen.text, gen.finish_reason,
                                         validity.value, pen.value, r_mem, phi, chain, outcome.actions is not None))
    for g in range(cfg.group_size):
        r_qa = _gain(qa_fn(steps, list(states[g].records.values()))) if qa_fn is not None else None
        for s in samples[g]:
            s.r_qa = r_qa
            s.ret = position_return(r_valid=s.r_valid, r_mem=s.r_mem, penalty=s.penalty, r_qa=r_qa, t=s.t,
                                    n_positions=T, weights=cfg.weights)
    return samples


def completion_logps(model: Any, prompt_ids: Sequence[int], completion_ids: Sequence[int]) -> Any:
    """Per-token log-probabilities (float32 tensor, shape (len(completion),)) of a completion."""
    import torch

    ids = torch.tensor([list(prompt_ids) + list(completion_ids)], device=model.device)
    logits = model(input_ids=ids).logits[0, len(prompt_ids) - 1 : -1].float()
    return torch.log_softmax(logits, dim=-1).gather(1, ids[0, len(prompt_ids):].unsqueeze(1)).squeeze(1)


def grpo_loss(
    logps: Sequence[Any], old_logps: Sequence[Any], ref_logps: Sequence[Any], advantages: Sequence[float],
    *, clip_eps: float = 0.20, beta: float = 0.10,
) -> tuple[Any, Any]:
    """Clipped GRPO loss with the KL penalty to the reference policy (eq. 25-27).

    For completion i with tokens k: ``ρ = exp(logπ_θ - logπ_old)``, ``d = exp(δ) - δ - 1`` with
    ``δ = logπ_ref - logπ_θ``, per-token objective ``min(ρ Â_i, clip(ρ, 1-ε, 1+ε) Â_i) - β d``,
    averaged over the tokens of each completion and then over the completions (callers pass
    only completions with a nonzero advantage).

    Args:
        logps / old_logps / ref_logps: one 1-D tensor per completion (current policy with
            gradient; rollout policy and reference without).
        advantages: Â per completion.
        clip_eps / beta: ε and β.

    Returns:
        ``(loss, mean_kl)``: loss = minus the objective (scalar tensor); mean_kl the KL estimate
        averaged the same way (tensor, detached).

    Source: SpeakerMem-R1 App. E, eq. 25-27.
    """
    import torch

    objectives, kls = [], []
    for lp, old, ref, adv in zip(logps, old_logps, ref_logps, advantages):
        ratio = torch.exp(lp - old)
        surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
        delta = ref - lp
        kl = torch.exp(delta) - delta - 1
        objectives.append((surrogate - beta * kl).mean())
        kls.append(kl.detach().mean())
    if not objectives:
        zero = torch.zeros(())
        return zero, zero
    return -torch.stack(objectives).mean(), torch.stack(kls).mean()


def _ref_context(model: Any, ref_model: Any) -> Any:
    return model.disable_adapter() if ref_model is None else nullcontext()


def run_grpo(
    steps: Sequence[WriterStep],
    model_name: str,
    out_dir: str | Path,
    cfg: GrpoConfig,
    *,
    qa_fn: QAFn | None = None,
    qa_note: str = QA_NOTE_SKIPPED,
) -> dict[str, Any]:
    """Run GRPO rounds from the SFT policy and save the trained Writer.

    Args:
        steps: teacher trajectories (reference states) of the training networks.
        model_name: the SFT policy folder (a merged model); also the frozen reference π_ref.
        out_dir: output folder: ``adapter/`` (with LoRA), ``merged/`` (vLLM-loadable),
            ``grpo.json`` (per-round log).
        cfg: :class:`GrpoConfig`.
        qa_fn: terminal QA gain of a final memory state (:class:`graphmem.train.qa.QAGain`),
            or None: the QA term is left out and ``qa_note`` says why.
        qa_note: the note reported when ``qa_fn`` is None.

    Returns:
        ``{"rounds": [...], "wall_s", "merged", "adapter", "qa_note", "config"}``.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from graphmem.train.models import save_policy

    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(model_name)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_name).to(device)
    ref_model = None
    if cfg.lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0,
                                                 target_modules="all-linear", task_type="CAUSAL_LM"))
    else:
        ref_model = copy.deepcopy(model).eval()
        for p in ref_model.parameters():
            p.requires_grad_(False)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.lr)
    nets = networks(steps)
    log: list[dict[str, Any]] = []
    started = Stopwatch()
    for round_no in range(1, cfg.rounds + 1):
        model.eval()
        batch: list[Sample] = []
        returns_all, positions, updated = [], 0, 0
        validity_all, phi_all, qa_all = [], [], []
        for _gid, net_steps in nets.items():
            samples = rollout_network(model, tokenizer, net_steps, cfg, qa_fn=qa_fn)
            returns = np.array([[s.ret for s in row] for row in samples])
            adv = group_advantages(returns, sigma_min=cfg.sigma_min, clip=cfg.adv_clip)
            positions += returns.shape[1]
            updated += int((np.abs(adv) > 0).any(axis=0).sum())
            for g, row in enumerate(samples):
                if row and row[0].r_qa is not None:
                    qa_all.append(row[0].r_qa)
                for t, s in enumerate(row):
                    s.advantage = float(adv[g, t])
                    returns_all.append(s.ret)
                    validity_all.append(s.r_valid)
                    phi_all.append(s.phi_sl)
                    if s.advantage != 0.0 and s.completion_ids:
                        batch.append(s)
        losses, kls, skipped = [], [], []
        if batch:
            with torch.no_grad():
                for s in batch:
                    s.old_logps = completion_logps(model, s.prompt_ids, s.completion_ids).detach()
                with _ref_context(model, ref_model):
                    ref_lps = [completion_logps(ref_model or model, s.prompt_ids, s.completion_ids).detach()
                               for s in batch]
            model.train()
            for epoch in range(cfg.ppo_epochs):
                lps = [completion_logps(model, s.prompt_ids, s.completion_ids) for s in batch]
                loss, mean_kl = grpo_loss(lps, [s.old_logps for s in batch], ref_lps, [s.advantage for s in batch],
                                          clip_eps=cfg.clip_eps, beta=cfg.beta)
                kls.append(float(mean_kl))
                losses.append(float(loss.detach()))
                if not math.isfinite(losses[-1]):
                    raise FloatingPointError(f"GRPO loss is not finite in round {round_no}, epoch {epoch + 1}")
                if float(mean_kl) > cfg.kl_skip:
                    skipped.append(f"epoch {epoch + 1}: mean KL {float(mean_kl):.4f} > {cfg.kl_skip}")
                    continue
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                optimizer.step()
        elif positions:
            skipped.append(f"no position with σ ≥ {cfg.sigma_min}: nothing to update")
        log.append({
            "round": round_no, "samples": len(returns_all), "positions": positions, "positions_updated": updated,
            "completions_in_update": len(batch), "mean_return": float(np.mean(returns_all)) if returns_all else 0.0,
            "mean_validity": float(np.mean(validity_all)) if validity_all else 0.0,
            "mean_phi_sl": float(np.mean(phi_all)) if phi_all else 0.0,
            "mean_qa_gain": float(np.mean(qa_all)) if qa_all else None, "qa_trajectories": len(qa_all),
            "qa_evaluations": getattr(qa_fn, "evaluations", None),
            "loss": losses[-1] if losses else None, "losses": losses, "mean_kl": kls[-1] if kls else 0.0,
            "skipped": skipped,
        })
    wall = started.elapsed_s
    model.eval()
    merged, adapter = save_policy(model, tokenizer, out, lora=cfg.lora)
    cfg_dict = asdict(cfg)
    result = {"rounds": log, "wall_s": wall, "merged": str(merged), "adapter": str(adapter) if adapter else None,
              "qa_note": qa_note if qa_fn is None else "terminal QA gain included (eq. 8, 22)",
              "reference_policy": model_name, "config": cfg_dict}
    (out / "grpo.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return result
