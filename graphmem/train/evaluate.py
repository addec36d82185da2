"""``graphmem train eval``: run a Writer over reference networks and score it like the rewards do.

For every network of a reference trajectory file the Writer (a local model, greedy decoding,
or the configured Writer endpoint) writes one trajectory from the network's first pre-state
through :class:`graphmem.train.state.MemoryState` (derive's prompt, validation and write
rules, in memory). Per position: ``R_valid`` (eq. 19), ``P`` (eq. 21), ``Φ_SL`` (eq. 7) and
``R_chain`` (eq. 17) against the teacher's state and chain at that position; per network the
final-state values; with a :class:`graphmem.train.qa.QAGain` (questions, answerer and judge
configured) also the terminal QA gain of the network's final memory (eq. 8, 22), per network
and as the mean over networks with questions; otherwise the report says why it was skipped.

Source: SpeakerMem-R1 App. E ("Controlled results": SFT vs R1 vs LLM Writer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphmem.train.grpo import QA_NOTE_SKIPPED
from graphmem.train.rewards import DEFAULT_WEIGHTS, chain_agreement, state_agreement, structural_penalty, validity_reward
from graphmem.train.state import MemoryState
from graphmem.train.trajectories import WriterStep, networks

__all__ = ["evaluate_writer", "score_trajectory"]

#: A Writer for evaluation: prompt messages -> (answer text, finish reason).
WriterFn = Callable[[list[dict[str, str]]], tuple[str, str]]


def score_trajectory(steps: Sequence[WriterStep], writer: WriterFn,
                     state: MemoryState | None = None) -> list[dict[str, Any]]:
    """Let ``writer`` write one network (its steps, in order) and score every position.

    Args:
        steps: the network's reference steps.
        writer: prompt -> (answer text, finish reason).
        state: the state to write into (default: a new one from the first pre-state); it holds
            the final memory afterwards.

    Returns:
        One dict per position: t, session, validity parts, penalty, r_mem, phi_sl, per_owner
        (F_p by owner id), r_chain,
        parsed, accepted/rejected counts, the answer text.
    """
    first = steps[0]
    roster = first.make_roster()
    if state is None:
        state = MemoryState(first.group_id, roster, first.pre_state, segments_done=first.index - 1)
    rows = []
    for t, step in enumerate(steps):
        segment = step.segment()
        state.segments_done = step.index - 1  # a blank segment derive skipped used up its index
        prompt, _budget = state.prompt_for(segment)
        text, finish = writer(prompt)
        outcome = state.apply(segment, text)
        v = validity_reward(outcome.actions, outcome.rejections, heads=outcome.pre_state, roster=roster)
        p = structural_penalty(outcome.actions, outcome.rejections, max_actions=outcome.max_actions,
                               finish_reason=finish)
        sl = state_agreement(state.heads(), step.post_state)
        chain = chain_agreement(state.edges, step.chain)
        phi = sl.phi
        r_mem = DEFAULT_WEIGHTS.sl * phi + DEFAULT_WEIGHTS.chain * chain
        rows.append({"t": t, "session": step.session, "validity": v.to_dict(), "penalty": p.value,
                     "r_mem": r_mem, "phi_sl": phi, "per_owner": sl.per_owner, "r_chain": chain, "parsed": outcome.actions is not None,
                     "accepted": outcome.report.accepted, "rejected": outcome.report.rejected,
                     "finish_reason": finish, "answer": text[:2000]})
    return rows


def _local_writer(model_path: str, max_new_tokens: int) -> tuple[WriterFn, str]:
    from graphmem.train.models import generate, load_policy

    model, tokenizer = load_policy(model_path)

    def write(prompt: list[dict[str, str]]) -> tuple[str, str]:
        gen = generate(model, tokenizer, prompt, n=1, max_new_tokens=max_new_tokens, do_sample=False)[0]
        return gen.text, gen.finish_reason

    return write, model_path


def _endpoint_writer(max_new_tokens: int) -> tuple[WriterFn, str]:
    from graphmem.core.config import get_settings
    from graphmem.core.errors import LLMError
    from graphmem.llm import writer_model
    from graphmem.derived.writer import STAGE

    chat = writer_model(get_settings())
    if chat is None:
        raise LLMError("no Writer endpoint configured: set GRAPHMEM_WRITER_BASE_URL and GRAPHMEM_WRITER_MODEL")

    def write(prompt: list[dict[str, str]]) -> tuple[str, str]:
        text, _usage = chat.complete_text(prompt, stage=STAGE, max_tokens=max_new_tokens)
        return text, "stop"

    return write, chat.model


def evaluate_writer(
    steps: Sequence[WriterStep],
    *,
    model: str | None = None,
    endpoint: bool = False,
    max_new_tokens: int = 2048,
    writer: WriterFn | None = None,
    qa: Callable[[Sequence[WriterStep], list[Any]], Any] | None = None,
    qa_note: str = "",
) -> dict[str, Any]:
    """Evaluate a Writer on reference networks.

    Args:
        steps: reference (teacher) trajectories; networks are grouped by group id.
        model: a local Writer folder (model or adapter), decoded greedily; or
        endpoint: use the configured Writer endpoint (``GRAPHMEM_WRITER_*``); or
        writer: any callable prompt -> (text, finish_reason).
        max_new_tokens: answer length limit.
        qa: terminal QA gain of each network's final memory (:class:`graphmem.train.qa.QAGain`),
            or None: skipped, and ``qa_note`` says why.
        qa_note: the skip note (default: no answerer/judge configured).

    Returns:
        ``{"writer", "networks": {gid: {"positions": [...], "final": {...}, "qa": {...} | None}},
        "summary": {...}, "qa_note"}``; summary values are means over positions (validity,
        penalty, phi_sl, chain) and over networks (final_*; ``qa_gain`` / ``qa_s1_s2`` /
        ``qa_s1`` over the networks with questions, None when there is none).
    """
    if writer is not None:
        name = getattr(writer, "__name__", "writer")
    elif endpoint:
        writer, name = _endpoint_writer(max_new_tokens)
    else:
        if model is None:
            raise ValueError("evaluate_writer needs model, endpoint or writer")
        writer, name = _local_writer(model, max_new_tokens)
    per_net: dict[str, Any] = {}
    for gid, net_steps in networks(steps).items():
        first = net_steps[0]
        state = MemoryState(first.group_id, first.make_roster(), first.pre_state, segments_done=first.index - 1)
        rows = score_trajectory(net_steps, writer, state)
        last = rows[-1]
        result = qa(net_steps, list(state.records.values())) if qa is not None else None
        per_net[gid] = {"positions": rows,
                        "final": {"phi_sl": last["phi_sl"], "r_chain": last["r_chain"], "r_mem": last["r_mem"]},
                        "qa": result.to_dict() if result is not None else None}
    rows_all = [r for n in per_net.values() for r in n["positions"]]
    finals = [n["final"] for n in per_net.values()]
    summary: dict[str, Any] = {
        "networks": len(per_net), "positions": len(rows_all),
        "validity": float(np.mean([r["validity"]["value"] for r in rows_all])),
        "penalty": float(np.mean([r["penalty"] for r in rows_all])),
        "parse_failures": sum(1 for r in rows_all if not r["parsed"]),
        "phi_sl": float(np.mean([r["phi_sl"] for r in rows_all])),
        "chain": float(np.mean([r["r_chain"] for r in rows_all])),
        "final_phi_sl": float(np.mean([f["phi_sl"] for f in finals])),
        "final_chain": float(np.mean([f["r_chain"] for f in finals])),
        "final_r_mem": float(np.mean([f["r_mem"] for f in finals])),
    }
    judged = [n["qa"] for n in per_net.values() if n["qa"] is not None]
    summary["qa_networks"] = len(judged)
    for key, field in (("qa_gain", "gain"), ("qa_s1_s2", "with_s2"), ("qa_s1", "s1_only")):
        summary[key] = float(np.mean([q[field] for q in judged])) if judged else None
    if qa is not None:
        note = "terminal QA gain (eq. 8, 22) included" + ("" if judged else ": no network has questions")
    else:
        note = (qa_note or QA_NOTE_SKIPPED).replace("; returns use R_valid, R_mem and P only", "")
    return {"writer": name, "networks": per_net, "summary": summary, "qa_note": note}
