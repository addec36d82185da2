"""Supervised fine-tuning of the Writer on teacher trajectories (TRL ``SFTTrainer``, PEFT LoRA).

Each :class:`graphmem.train.trajectories.WriterStep` becomes one conversational
prompt-completion example: the prompt is the Writer's chat messages exactly as ``derive``
sends them, the completion is the teacher's ``{"actions": [...]}`` answer as the assistant
turn. TRL renders both through the model's chat template and masks the prompt, so the loss is
on the Writer's output only (``completion_only_loss``). The output folder holds

- ``checkpoints/`` (TRL/transformers checkpoints),
- ``adapter/`` (the LoRA adapter and tokenizer, with ``--lora``),
- ``merged/`` (the full model with the adapter merged in, safetensors + tokenizer with its
  chat template): what ``docker/compose.yaml``'s vLLM Writer service loads as ``--model``,
- ``sft.json`` (the losses and settings of the run).

Source: SpeakerMem-R1 App. E ("After SFT, we start from the epoch-10 checkpoint").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from graphmem.llm.timing import Stopwatch
from graphmem.train.trajectories import WriterStep

__all__ = ["SftConfig", "run_sft", "sft_examples"]


@dataclass
class SftConfig:
    """SFT settings.

    Attributes:
        lora: train a LoRA adapter (else all weights).
        epochs / max_steps: training length (``max_steps > 0`` wins).
        lr: learning rate; batch_size / grad_accum: per-step batch and accumulation.
        lora_r / lora_alpha / lora_dropout: adapter shape (on every linear layer).
        max_length: longest tokenised prompt + completion (longer examples are refused).
        seed: data order and initialisation.
        save_steps: checkpoint every this many steps (0 = at the end only).
    """

    lora: bool = True
    epochs: float = 10.0
    max_steps: int = -1
    lr: float = 1e-4
    batch_size: int = 1
    grad_accum: int = 8
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    max_length: int = 8192
    seed: int = 0
    save_steps: int = 0


def sft_examples(steps: Sequence[WriterStep]) -> list[dict[str, Any]]:
    """Conversational prompt-completion rows: ``{"prompt": [system, user], "completion": [assistant]}``."""
    return [{"prompt": list(s.prompt), "completion": [{"role": "assistant", "content": s.completion}]}
            for s in steps]


def run_sft(steps: Sequence[WriterStep], model_name: str, out_dir: str | Path, cfg: SftConfig) -> dict[str, Any]:
    """Fine-tune ``model_name`` on the trajectories and save checkpoints, adapter and merged model.

    Args:
        steps: teacher trajectory steps (at least one).
        model_name: base causal LM (folder, or a hub id available offline).
        out_dir: output folder (created).
        cfg: :class:`SftConfig`.

    Returns:
        ``{"examples", "steps", "losses", "first_loss", "last_loss", "wall_s", "checkpoints",
        "adapter", "merged", "config"}`` (also written to ``out_dir/sft.json``).

    Raises:
        InvalidInputError: no steps, or an example longer than ``cfg.max_length`` tokens.
    """
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import SFTConfig, SFTTrainer  # type: ignore[attr-defined]  # trl exports its classes through a lazy module (_LazyModule) that mypy cannot see into

    from graphmem.core.errors import InvalidInputError
    from graphmem.train.models import render_prompt, save_policy

    if not steps:
        raise InvalidInputError("SFT needs at least one trajectory step", field="trajectories")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(model_name)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    rows = sft_examples(steps)
    for s, row in zip(steps, rows):
        n = len(tokenizer(render_prompt(tokenizer, row["prompt"]) + s.completion, add_special_tokens=False)["input_ids"])
        if n > cfg.max_length:
            raise InvalidInputError(f"example of {n} tokens exceeds --max-length {cfg.max_length}",
                                    record=f"{s.group_id} position {s.position}", field="prompt")
    model = AutoModelForCausalLM.from_pretrained(model_name)
    peft_config = None
    if cfg.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                 target_modules="all-linear", task_type="CAUSAL_LM")
    losses: list[float] = []

    class _Losses(TrainerCallback):  # type: ignore[misc]  # transformers is not followed (pyproject: follow_imports = "skip"), so TrainerCallback is Any
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))

    args = SFTConfig(
        output_dir=str(out / "checkpoints"), num_train_epochs=cfg.epochs, max_steps=cfg.max_steps,
        learning_rate=cfg.lr, per_device_train_batch_size=cfg.batch_size, gradient_accumulation_steps=cfg.grad_accum,
        logging_steps=1, save_strategy="steps" if cfg.save_steps else "no", save_steps=cfg.save_steps or 500,
        report_to=[], seed=cfg.seed, max_length=cfg.max_length, completion_only_loss=True,
        use_cpu=not _cuda(), bf16=_cuda(), disable_tqdm=True, lr_scheduler_type="constant",
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                         peft_config=peft_config, callbacks=[_Losses()])
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # losses go to sft.json and the summary, not raw dicts
    started = Stopwatch()
    trainer.train()
    wall = started.elapsed_s
    trainer.save_model(str(out / "checkpoints" / "final"))
    merged, adapter = save_policy(trainer.model, tokenizer, out, lora=cfg.lora)
    result = {
        "examples": len(rows), "steps": int(trainer.state.global_step), "losses": losses,
        "first_loss": losses[0] if losses else float("nan"), "last_loss": losses[-1] if losses else float("nan"),
        "wall_s": wall, "checkpoints": str(out / "checkpoints"), "adapter": str(adapter) if adapter else None,
        "merged": str(merged), "base_model": model_name, "config": asdict(cfg),
    }
    (out / "sft.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def _cuda() -> bool:
    import torch

    available: bool = torch.cuda.is_available()
    return available
