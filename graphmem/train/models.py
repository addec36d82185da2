"""Loading a Writer policy (a causal LM, optionally with a LoRA adapter) and generating with it.

Also builds a *tiny random* Writer from a config, with a byte-level BPE tokenizer trained on
the fly on trajectory text (``graphmem train tiny``): no weights are downloaded, so the whole
SFT -> GRPO -> eval path runs on a CPU in minutes. It learns nothing useful; it exists to
exercise the training code.

Needs the optional extra ``graphmem[train]`` (transformers, peft).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Generation", "build_tiny_model", "generate", "load_policy", "render_prompt"]

#: Chat template of the tiny tokenizer: role tags, ``<|end|>`` closes every turn (and is EOS).
TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
_SPECIALS = ["<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]


def _require() -> None:
    try:
        import peft  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the install
        from graphmem.core.errors import GraphMemError

        raise GraphMemError("graphmem train needs the optional extra: pip install 'graphmem[train]'") from e


def build_tiny_model(
    out_dir: str | Path,
    texts: Iterable[str],
    *,
    vocab_size: int = 1024,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 4,
    max_positions: int = 8192,
    seed: int = 0,
) -> Path:
    """Build and save a random Llama-architecture causal LM and a BPE tokenizer trained on ``texts``.

    Args:
        out_dir: where ``config.json``, the weights and the tokenizer are saved.
        texts: training text for the tokenizer (e.g. every prompt and completion of a
            trajectory file).
        vocab_size: BPE vocabulary size (byte-level, so any text encodes).
        hidden_size / layers / heads: model size (defaults: about 0.15 M parameters with a 1024-token vocabulary).
        max_positions: longest sequence the model accepts (tokens).
        seed: weight initialisation seed.

    Returns:
        ``out_dir``, loadable by :func:`load_policy` and by ``AutoModelForCausalLM``.
    """
    _require()
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=_SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|pad|>", eos_token="<|end|>",
                                   bos_token=None, unk_token=None)
    fast.chat_template = TINY_CHAT_TEMPLATE
    fast.model_max_length = max_positions
    fast.save_pretrained(out)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(fast), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=max(1, heads // 2),
        max_position_embeddings=max_positions, tie_word_embeddings=True,
        pad_token_id=fast.pad_token_id, eos_token_id=fast.eos_token_id, bos_token_id=None,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = fast.pad_token_id
    model.generation_config.eos_token_id = fast.eos_token_id
    model.save_pretrained(out)
    return out


def load_policy(path: str | Path, *, trainable: bool = False, dtype: Any = None) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` from a model folder, or a LoRA adapter folder over its base.

    Args:
        path: a folder with ``config.json`` (full model) or ``adapter_config.json`` (PEFT
            adapter; the base named in it is loaded first).
        trainable: keep adapter weights trainable (else eval mode).
        dtype: torch dtype of the weights (default float32).

    Raises:
        InvalidInputError: the folder holds neither a model nor an adapter.
    """
    _require()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from graphmem.core.errors import InvalidInputError

    p = Path(path)
    dtype = dtype or torch.float32
    if (p / "adapter_config.json").exists():
        from peft import PeftModel

        base_name = json.loads((p / "adapter_config.json").read_text())["base_model_name_or_path"]
        base = AutoModelForCausalLM.from_pretrained(base_name, dtype=dtype)
        model = PeftModel.from_pretrained(base, p, is_trainable=trainable)
        tokenizer = AutoTokenizer.from_pretrained(p if (p / "tokenizer_config.json").exists() else base_name)
    elif (p / "config.json").exists():
        model = AutoModelForCausalLM.from_pretrained(p, dtype=dtype)
        tokenizer = AutoTokenizer.from_pretrained(p)
    else:
        raise InvalidInputError(f"{p} holds neither a model (config.json) nor a LoRA adapter "
                                "(adapter_config.json)", source=str(p))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not trainable:
        model.eval()
    return model, tokenizer


def save_policy(model: Any, tokenizer: Any, out: Path, *, lora: bool) -> tuple[Path, Path | None]:
    """Save a trained policy for serving: the LoRA adapter (when ``lora``) and a merged model.

    Writes ``out/adapter`` (adapter weights + tokenizer; LoRA only) and ``out/merged``
    (safetensors + tokenizer, the folder vLLM's Writer service loads).

    Returns:
        (merged folder, adapter folder or None).
    """
    adapter = None
    if lora:
        adapter = out / "adapter"
        model.save_pretrained(adapter)
        tokenizer.save_pretrained(adapter)
        model = model.merge_and_unload()
    merged = out / "merged"
    model.save_pretrained(merged, safe_serialization=True)
    tokenizer.save_pretrained(merged)
    return merged, adapter


def render_prompt(tokenizer: Any, prompt: Sequence[dict[str, str]]) -> str:
    """The Writer's chat messages as model input text (chat template + generation prompt)."""
    text: str = tokenizer.apply_chat_template(list(prompt), tokenize=False, add_generation_prompt=True)
    return text


@dataclass
class Generation:
    """One sampled Writer answer.

    Attributes:
        text: the decoded completion (special tokens removed).
        prompt_ids / completion_ids: token ids (completion includes the EOS when emitted).
        finish_reason: ``"stop"`` (EOS emitted) or ``"length"`` (hit ``max_new_tokens``).
    """

    text: str
    prompt_ids: list[int]
    completion_ids: list[int]
    finish_reason: str


def generate(
    model: Any,
    tokenizer: Any,
    prompt: Sequence[dict[str, str]],
    *,
    n: int = 1,
    max_new_tokens: int = 256,
    temperature: float = 0.8,
    top_p: float = 0.95,
    do_sample: bool = True,
) -> list[Generation]:
    """Sample ``n`` completions of one Writer prompt.

    Args:
        model / tokenizer: from :func:`load_policy`.
        prompt: the Writer's chat messages.
        n: samples (one batch).
        max_new_tokens: length limit (tokens); reaching it sets ``finish_reason="length"``.
        temperature / top_p: sampling (paper: 0.8 / 0.95); ``do_sample=False`` is greedy.

    Returns:
        ``n`` :class:`Generation`.
    """
    import torch

    text = render_prompt(tokenizer, prompt)
    ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    ids = ids.to(model.device)
    kwargs: dict[str, Any] = {"max_new_tokens": max_new_tokens, "pad_token_id": tokenizer.pad_token_id,
                              "eos_token_id": tokenizer.eos_token_id, "num_return_sequences": n}
    if do_sample:
        kwargs.update(do_sample=True, temperature=temperature, top_p=top_p)
    else:
        kwargs.update(do_sample=False)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **kwargs)
    prompt_ids = ids[0].tolist()
    gens = []
    for row in out[:, ids.shape[1]:].tolist():
        completion: list[int] = []
        finish = "length"
        for tid in row:
            completion.append(tid)
            if tid == tokenizer.eos_token_id:
                finish = "stop"
                break
        content = [t for t in completion if t not in (tokenizer.eos_token_id, tokenizer.pad_token_id)]
        gens.append(Generation(tokenizer.decode(content, skip_special_tokens=True), prompt_ids, completion, finish))
    return gens
