"""``graphmem train collect|sft|grpo|eval|tiny``: Writer-R1 training (optional extra ``train``).

``app`` is the ``train`` command group; :mod:`graphmem.cli` adds it with one line.
Source: SpeakerMem-R1 §4 and App. E.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from graphmem.cli.common import emit_json, open_store, out

app = typer.Typer(help="Train the Writer: trajectories, SFT, GRPO, evaluation (needs the optional extra 'train').",
                  no_args_is_help=True)


QA_HELP = ("Fixed QA pairs per network (JSONL: group, id, question, answer; e.g. examples/train/questions.jsonl) "
           "for the terminal QA gain (eq. 8, 22): S1+S2 vs S1 only on the same System 1 evidence, answered by "
           "GRAPHMEM_LLM_* (the model of `graphmem ask`) and judged by GRAPHMEM_JUDGE_* (falling back to "
           "GRAPHMEM_LLM_*); needs Neo4j (scratch groups). Without the file or the models the QA term is "
           "skipped with a note.")


@contextmanager
def _terminal_qa(questions: Path | None) -> Iterator[tuple[Any, str]]:
    """(QA gain evaluator or None, skip note); opens the store only when the gain is computed."""
    from graphmem.core.config import get_settings
    from graphmem.cli.common import command_embedder
    from graphmem.train.qa import terminal_qa_from_settings

    qa, note = terminal_qa_from_settings(questions, None, command_embedder(), get_settings())  # validates the file, checks the models
    if qa is None:
        yield None, note
        return
    with open_store() as store:
        qa.store = store
        yield qa, ""


def _print(data: dict[str, Any], as_json: bool, lines: list[str]) -> None:
    if as_json:
        emit_json(data)
        return
    for line in lines:
        out.print(line, highlight=False, soft_wrap=True, markup=False)


@app.command("collect")
def collect(
    group: Annotated[list[str], typer.Option("--group", "-g", help="Group(s) to run the teacher Writer over.")],
    output: Annotated[Path, typer.Option("--out", "-o", help="Trajectory JSONL to write.")],
    replay: Annotated[
        Optional[list[Path]],
        typer.Option("--replay", help="Recorded/hand-written actions (JSONL per session), one per --group, "
                     "instead of the teacher endpoint (GRAPHMEM_WRITER_*)."),
    ] = None,
    replay_dir: Annotated[
        Optional[Path],
        typer.Option("--replay-dir", help="Folder with one <group>.jsonl of recorded actions per --group."),
    ] = None,
    append: Annotated[bool, typer.Option("--append", help="Append to --out instead of replacing it.")] = False,
    max_segments: Annotated[Optional[int], typer.Option("--max-segments")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Run the teacher Writer over a group's pending segments (as derive) and record each step."""
    from graphmem.core.config import get_settings
    from graphmem.cli.common import command_embedder
    from graphmem.core.errors import InvalidInputError, LLMError
    from graphmem.llm import writer_model
    from graphmem.train.trajectories import collect_group, write_steps
    from graphmem.derived.writer import ReplayWriter

    if replay_dir is not None:
        if replay:
            raise InvalidInputError("give --replay or --replay-dir, not both", field="replay")
        replay = [replay_dir / f"{gid}.jsonl" for gid in group]
    if replay and len(replay) != len(group):
        raise InvalidInputError(f"give one --replay per --group ({len(replay)} for {len(group)})", field="replay")
    settings = get_settings()
    rows = []
    first = not append
    with open_store() as store:
        embedder = command_embedder()
        for k, gid in enumerate(group):
            model = ReplayWriter(replay[k]) if replay else writer_model(settings)
            if model is None:
                raise LLMError("no teacher Writer: set GRAPHMEM_WRITER_BASE_URL/GRAPHMEM_WRITER_MODEL or pass --replay")
            try:
                steps = collect_group(store, gid, model=model, embedder=embedder, settings=settings,
                                      max_segments=max_segments)
            finally:
                model.close()
            n = write_steps(output, steps, append=not first)
            first = False
            rows.append({"group": gid, "steps": n, "teacher": model.model,
                         "actions": sum(len(s.actions) for s in steps),
                         "updates": sum(1 for s in steps for a in s.actions
                                        if isinstance(a, dict) and str(a.get("action", "")).upper() == "UPDATE")})
    _print({"out": str(output), "groups": rows}, as_json,
           [f"{r['group']}: {r['steps']} step(s), {r['actions']} actions ({r['updates']} UPDATE) from {r['teacher']}"
            for r in rows] + [f"-> {output}"])


@app.command("tiny")
def tiny(
    trajectories: Annotated[list[Path], typer.Argument(help="Trajectory JSONL (tokenizer training text).")],
    output: Annotated[Path, typer.Option("--out", "-o", help="Folder for the tiny model.")],
    vocab_size: Annotated[int, typer.Option("--vocab-size")] = 1024,
    hidden_size: Annotated[int, typer.Option("--hidden-size")] = 64,
    layers: Annotated[int, typer.Option("--layers")] = 2,
) -> None:
    """Build a tiny random causal LM (tokenizer trained on the trajectories) for CPU smoke runs."""
    from graphmem.train.models import build_tiny_model
    from graphmem.train.trajectories import read_steps

    steps = read_steps(trajectories)
    texts = [m["content"] for s in steps for m in s.prompt] + [s.completion for s in steps]
    path = build_tiny_model(output, texts, vocab_size=vocab_size, hidden_size=hidden_size, layers=layers)
    out.print(f"tiny random Writer -> {path}", highlight=False)


@app.command("sft")
def sft(
    trajectories: Annotated[list[Path], typer.Argument(help="Teacher trajectory JSONL file(s).")],
    model: Annotated[str, typer.Option("--model", "-m", help="Base causal LM: folder or hub id (offline cache).")],
    output: Annotated[Path, typer.Option("--out", "-o", help="Output folder (checkpoints/, adapter/, merged/).")],
    lora: Annotated[bool, typer.Option("--lora/--full", help="LoRA adapter (default) or full fine-tuning.")] = True,
    epochs: Annotated[float, typer.Option("--epochs")] = 10.0,
    max_steps: Annotated[int, typer.Option("--max-steps", help="Stop after this many steps (-1 = epochs).")] = -1,
    lr: Annotated[float, typer.Option("--lr")] = 1e-4,
    batch_size: Annotated[int, typer.Option("--batch-size")] = 1,
    grad_accum: Annotated[int, typer.Option("--grad-accum")] = 8,
    lora_r: Annotated[int, typer.Option("--lora-r")] = 16,
    max_length: Annotated[int, typer.Option("--max-length", help="Longest prompt+completion (tokens).")] = 8192,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    any_version: Annotated[bool, typer.Option("--any-version", help="Accept trajectories of another prompt.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Supervised fine-tuning on teacher trajectories (loss on the Writer's output only)."""
    from graphmem.train.sft import SftConfig, run_sft
    from graphmem.train.trajectories import read_steps

    steps = read_steps(trajectories, any_version=any_version)
    cfg = SftConfig(lora=lora, epochs=epochs, max_steps=max_steps, lr=lr, batch_size=batch_size,
                    grad_accum=grad_accum, lora_r=lora_r, max_length=max_length, seed=seed)
    result = run_sft(steps, model, output, cfg)
    _print(result, as_json, [
        f"SFT {'LoRA' if lora else 'full'} on {result['examples']} segment(s): {result['steps']} steps, "
        f"loss {result['first_loss']:.4f} -> {result['last_loss']:.4f}, {result['wall_s']:.1f} s",
        f"checkpoints: {result['checkpoints']}",
        *( [f"adapter: {result['adapter']}"] if result.get("adapter") else [] ),
        f"merged model (vLLM-loadable): {result['merged']}",
    ])


@app.command("grpo")
def grpo(
    trajectories: Annotated[list[Path], typer.Argument(help="Teacher trajectory JSONL file(s) (reference states).")],
    model: Annotated[str, typer.Option("--model", "-m", help="The SFT policy (merged folder) = frozen reference.")],
    output: Annotated[Path, typer.Option("--out", "-o", help="Output folder (adapter/, merged/, log.jsonl).")],
    group_size: Annotated[int, typer.Option("--group-size", "-G", help="Trajectories per network (paper: 8).")] = 8,
    rounds: Annotated[int, typer.Option("--rounds", help="Rollout rounds (paper: 30).")] = 30,
    ppo_epochs: Annotated[int, typer.Option("--ppo-epochs", help="Policy epochs per round (paper: 2).")] = 2,
    lr: Annotated[float, typer.Option("--lr", help="Paper: 1e-6.")] = 1e-6,
    temperature: Annotated[float, typer.Option("--temperature")] = 0.8,
    top_p: Annotated[float, typer.Option("--top-p")] = 0.95,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", help="Paper: 2048.")] = 2048,
    lora: Annotated[bool, typer.Option("--lora/--full")] = True,
    lora_r: Annotated[int, typer.Option("--lora-r")] = 16,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    questions: Annotated[Optional[Path], typer.Option("--questions", "-q", help=QA_HELP)] = None,
    any_version: Annotated[bool, typer.Option("--any-version")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Speaker-conditioned GRPO: G trajectories per network, position-wise advantages (eq. 23-27),
    returns of eq. 9 with the terminal QA gain when --questions and an answerer/judge are given."""
    from graphmem.train.grpo import GrpoConfig, run_grpo
    from graphmem.train.trajectories import read_steps

    steps = read_steps(trajectories, any_version=any_version)
    cfg = GrpoConfig(group_size=group_size, rounds=rounds, ppo_epochs=ppo_epochs, lr=lr, temperature=temperature,
                     top_p=top_p, max_new_tokens=max_new_tokens, lora=lora, lora_r=lora_r, seed=seed)
    with _terminal_qa(questions) as (qa, note):
        result = run_grpo(steps, model, output, cfg, qa_fn=qa, qa_note=note or "")
    lines = [f"GRPO: {len(result['rounds'])} round(s), G={group_size}, {result['wall_s']:.1f} s; {result['qa_note']}"]
    for r in result["rounds"]:
        qa_part = ("" if r.get("mean_qa_gain") is None else
                   f"R_QA {r['mean_qa_gain']:+.3f} ({r['qa_trajectories']} trajectories, "
                   f"{r['qa_evaluations']} states evaluated so far), ")
        lines.append(
            f"round {r['round']}: mean return {r['mean_return']:.4f}, validity {r['mean_validity']:.3f}, "
            f"Φ_SL {r['mean_phi_sl']:.3f}, {qa_part}positions updated {r['positions_updated']}/{r['positions']}, "
            f"loss {r['loss'] if r['loss'] is None else round(r['loss'], 5)}, mean KL {r['mean_kl']:.5f}"
            + (f", skipped: {r['skipped']}" if r["skipped"] else ""))
    lines.append(f"policy: {result['merged']}")
    _print(result, as_json, lines)


@app.command("eval")
def evaluate(
    trajectories: Annotated[list[Path], typer.Argument(help="Reference trajectory JSONL of held-apart networks.")],
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Writer folder (model or adapter).")] = None,
    endpoint: Annotated[bool, typer.Option("--endpoint", help="Evaluate the configured Writer endpoint "
                                           "(GRAPHMEM_WRITER_*) instead of a local model.")] = False,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens")] = 2048,
    questions: Annotated[Optional[Path], typer.Option("--questions", "-q", help=QA_HELP)] = None,
    any_version: Annotated[bool, typer.Option("--any-version")] = False,
    output: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the per-position JSON here.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Run a Writer over reference networks: validity, Φ_SL and chain agreement (and QA gain)."""
    from graphmem.core.errors import InvalidInputError
    from graphmem.train.evaluate import evaluate_writer
    from graphmem.train.trajectories import read_steps

    if (model is None) == (not endpoint):
        raise InvalidInputError("give exactly one of --model DIR or --endpoint", field="model")
    steps = read_steps(trajectories, any_version=any_version)
    with _terminal_qa(questions) as (qa, note):
        result = evaluate_writer(steps, model=model, endpoint=endpoint, max_new_tokens=max_new_tokens, qa=qa,
                                 qa_note=note)
    if output is not None:
        output.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    s = result["summary"]
    lines = [
        f"Writer {result['writer']} on {s['networks']} network(s), {s['positions']} position(s):",
        f"  validity R_valid {s['validity']:.4f}  penalty P {s['penalty']:.4f}  parse failures {s['parse_failures']}",
        f"  final state Φ_SL {s['final_phi_sl']:.4f}  R_chain {s['final_chain']:.4f}  R_mem {s['final_r_mem']:.4f}",
        f"  mean over positions: Φ_SL {s['phi_sl']:.4f}  R_chain {s['chain']:.4f}",
    ]
    for gid, net in result["networks"].items():
        f, q = net["final"], net["qa"]
        qa_text = ("R_QA -" if q is None else
                   f"R_QA {q['gain']:+.4f} (S1+S2 {q['with_s2']:.2f}, S1 {q['s1_only']:.2f}, {len(q['questions'])} q)")
        lines.append(f"  {gid}: Φ_SL {f['phi_sl']:.4f}  R_chain {f['r_chain']:.4f}  {qa_text}")
    if s["qa_gain"] is not None:
        lines.append(f"  terminal QA gain R_QA (eq. 8): mean {s['qa_gain']:+.4f} over {s['qa_networks']} network(s) "
                     f"(QA S1+S2 {s['qa_s1_s2']:.4f}, S1 only {s['qa_s1']:.4f})")
    lines.append(f"  {result['qa_note']}")
    _print(result, as_json, lines)
