"""Write a BERT encoder (all-MiniLM-L6-v2's shape) as an ONNX graph from its safetensors weights.

Used once, where the weights are: by the wheel build (``hatch_build.py`` ships the graph in the
wheel, so a plain install needs neither torch nor this module's ``onnx`` dependency) and by
``graphmem embed --build-onnx`` to rebuild a missing or corrupt graph into the project home.
Only numpy and ``onnx`` are imported (no graphmem module, no torch), so the build hook can load
this file by path.

The graph computes the ``last_hidden_state`` of a Hugging Face ``BertModel`` in float32:

    h0 = LayerNorm(E_word[ids] + E_pos[0..T-1] + E_type[type_ids])
    per layer l: a = LayerNorm(h + W_o(softmax(Q K^T / sqrt(d_head) + m) V))
                 h = LayerNorm(a + W_2 gelu(W_1 a))        (gelu: exact, 0.5 x (1 + erf(x / sqrt 2)))

with ``m = (1 - attention_mask) * float32.min`` on the keys, as ``transformers`` does. Inputs
``input_ids``, ``attention_mask``, ``token_type_ids``: int64 [batch, tokens]; output
``last_hidden_state``: float32 [batch, tokens, hidden]. Mean pooling and L2 normalisation (the
sentence-transformers modules after the encoder) are done by the caller
(:class:`graphmem.core.embed.OnnxBackend`).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17  # LayerNormalization is an ONNX operator from opset 17
GRAPH_FILE = "model.onnx"
MANIFEST_FILE = "manifest.json"
COPIED_FILES = ("tokenizer.json", "config.json", "sentence_bert_config.json")

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Tensors of a ``.safetensors`` file (8-byte little-endian header length, JSON header of
    ``{name: {dtype, shape, data_offsets}}``, then the raw bytes), read with numpy alone.

    Raises:
        ValueError: the file is not a safetensors file or holds a dtype other than F32/F16/I64/I32.
    """
    raw = path.read_bytes()
    if len(raw) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its header)")
    (n,) = struct.unpack("<Q", raw[:8])
    try:
        header = json.loads(raw[8 : 8 + n])
    except ValueError as exc:
        raise ValueError(f"{path}: not a safetensors file ({exc})") from None
    body = memoryview(raw)[8 + n :]
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name!r} has dtype {info['dtype']}, not supported")
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(body[a:b], dtype=dtype).reshape(info["shape"]).copy()
    return out


def read_delta(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The low-rank weight update in ``path`` (an ``.npz`` of ``<weight name>.B`` (out x r) and
    ``<weight name>.A`` (r x in) pairs): ``{weight name: (B, A)}``.

    Raises:
        ValueError: the file is not such an archive (an unpaired or misshapen factor).
    """
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for key in arrays:
        if not key.endswith(".B"):
            continue
        name = key[:-2]
        b, a = arrays[key], arrays.get(name + ".A")
        if a is None or b.ndim != 2 or a.ndim != 2 or b.shape[1] != a.shape[0]:
            raise ValueError(f"{path}: {name!r} has no matching low-rank factors B (out x r) and A (r x in)")
        out[name] = (b, a)
    unpaired = sorted(k for k in arrays if k[:-2] not in out)
    if unpaired:
        raise ValueError(f"{path}: {', '.join(unpaired[:3])} without a partner (each weight needs .B and .A)")
    return out


def apply_delta(weights: dict[str, np.ndarray], delta: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
    """``weights`` with every named matrix updated in float32: ``W + B @ A`` (a merged LoRA update).

    Raises:
        ValueError: the delta names a weight that is missing or of another shape.
    """
    out = dict(weights)
    for name, (b, a) in delta.items():
        w = out.get(name)
        if w is None or w.shape != (b.shape[0], a.shape[1]):
            raise ValueError(f"the weight update names {name!r}, which the model does not have in that shape")
        out[name] = (w.astype(np.float32) + b.astype(np.float32) @ a.astype(np.float32)).astype(np.float32)
    return out


def build_graph(weights: dict[str, np.ndarray], config: dict[str, Any]) -> Any:
    """The ONNX ``ModelProto`` of the encoder described by ``config`` (a BERT ``config.json``:
    hidden_size, num_hidden_layers, num_attention_heads, layer_norm_eps, hidden_act "gelu").

    Raises:
        ValueError: the config is not a BERT with absolute positions and exact gelu, or a weight
            the graph needs is missing.
    """
    from onnx import TensorProto, helper, numpy_helper

    if config.get("hidden_act", "gelu") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("only BERT encoders with exact gelu and absolute positions are supported")
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    d_head = hidden // heads
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

    inits: list[Any] = []
    nodes: list[Any] = []

    def w(name: str) -> str:
        key = prefix + name
        if key not in weights:
            raise ValueError(f"weight {key!r} is missing")
        return const(key, weights[key].astype(np.float32))

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    counter = [0]

    def node(op: str, inputs: list[str], **attrs: Any) -> str:
        counter[0] += 1
        out = f"{op.lower()}_{counter[0]}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def linear(x: str, name: str) -> str:
        key = prefix + name + ".weight"
        if key not in weights:
            raise ValueError(f"weight {key!r} is missing")
        wt = const(key + ".T", np.ascontiguousarray(weights[key].astype(np.float32).T))
        return node("Add", [node("MatMul", [x, wt]), w(name + ".bias")])

    def layer_norm(x: str, name: str) -> str:
        return node("LayerNormalization", [x, w(name + ".weight"), w(name + ".bias")], axis=-1, epsilon=eps)

    # embeddings
    ids_shape = node("Shape", ["input_ids"])
    seq_len = node("Gather", [ids_shape, const("one_idx", np.array(1, dtype=np.int64))], axis=0)
    positions = node("Range", [const("zero_i64", np.array(0, dtype=np.int64)), seq_len,
                               const("one_i64", np.array(1, dtype=np.int64))])
    emb = node("Add", [
        node("Add", [
            node("Gather", [w("embeddings.word_embeddings.weight"), "input_ids"]),
            node("Gather", [w("embeddings.token_type_embeddings.weight"), "token_type_ids"]),
        ]),
        node("Gather", [w("embeddings.position_embeddings.weight"), positions]),
    ])
    h = layer_norm(emb, "embeddings.LayerNorm")

    # additive attention mask [batch, 1, 1, tokens]
    mask_f = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    inv = node("Sub", [const("one_f", np.array(1.0, dtype=np.float32)), mask_f])
    neg = node("Mul", [inv, const("min_f", np.array(np.finfo(np.float32).min, dtype=np.float32))])
    mask = node("Unsqueeze", [neg, const("mask_axes", np.array([1, 2], dtype=np.int64))])

    split_shape = const("split_shape", np.array([0, 0, heads, d_head], dtype=np.int64))
    merge_shape = const("merge_shape", np.array([0, 0, hidden], dtype=np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(d_head), dtype=np.float32))
    half = const("half", np.array(0.5, dtype=np.float32))
    one = "one_f"
    sqrt2 = const("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))

    for i in range(layers):
        p = f"encoder.layer.{i}."

        def heads_of(x: str) -> str:
            return node("Transpose", [node("Reshape", [x, split_shape])], perm=[0, 2, 1, 3])

        q = heads_of(linear(h, p + "attention.self.query"))
        k = heads_of(linear(h, p + "attention.self.key"))
        v = heads_of(linear(h, p + "attention.self.value"))
        kt = node("Transpose", [k], perm=[0, 1, 3, 2])
        scores = node("Add", [node("Mul", [node("MatMul", [q, kt]), scale]), mask])
        probs = node("Softmax", [scores], axis=-1)
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_shape])
        attn = layer_norm(node("Add", [linear(ctx, p + "attention.output.dense"), h]), p + "attention.output.LayerNorm")
        inner = linear(attn, p + "intermediate.dense")
        gelu = node("Mul", [node("Mul", [inner, half]), node("Add", [node("Erf", [node("Div", [inner, sqrt2])]), one])])
        h = layer_norm(node("Add", [linear(gelu, p + "output.dense"), attn]), p + "output.LayerNorm")

    nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"]))
    int_input = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
                 for n in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", hidden])
    graph = helper.make_graph(nodes, "bert_encoder", int_input, [output], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="graphmem")
    model.ir_version = 8  # readable by every onnxruntime release that has opset 17
    return model


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 4 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(4 << 20):
            h.update(block)
    return h.hexdigest()


def export(source: Path, target: Path, model_name: str = "sentence-transformers/all-MiniLM-L6-v2",
           delta: Path | None = None) -> dict[str, Any]:
    """Write ``target/model.onnx``, the tokenizer and configs, and ``manifest.json`` (model name,
    files with their SHA-256) from a sentence-transformers folder ``source`` (``model.safetensors``,
    ``config.json``, ``tokenizer.json``), its weights updated by the low-rank ``delta``
    (:func:`read_delta`, :func:`apply_delta`) when one is given. Files are written under temporary names and renamed, the
    manifest last, so an interrupted export leaves no graph that looks complete.

    Returns:
        The manifest written.

    Raises:
        FileNotFoundError: a source file is missing. ValueError: see :func:`build_graph`.
    """
    import onnx

    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        if not (source / name).is_file():
            raise FileNotFoundError(f"{source / name}: missing (needed to build the ONNX graph)")
    config = json.loads((source / "config.json").read_text())
    weights = read_safetensors(source / "model.safetensors")
    if delta is not None:
        weights = apply_delta(weights, read_delta(delta))
    model = build_graph(weights, config)
    onnx.checker.check_model(model)
    target.mkdir(parents=True, exist_ok=True)
    (target / MANIFEST_FILE).unlink(missing_ok=True)
    files: dict[str, str] = {}

    def put(name: str, data: bytes) -> None:
        tmp = target / f".{name}.tmp{os.getpid()}"
        tmp.write_bytes(data)
        os.replace(tmp, target / name)
        files[name] = sha256_of(target / name)

    put(GRAPH_FILE, model.SerializeToString())
    for name in COPIED_FILES:
        if (source / name).is_file():
            put(name, (source / name).read_bytes())
    st_config = {}
    if (source / "sentence_bert_config.json").is_file():
        st_config = json.loads((source / "sentence_bert_config.json").read_text())
    manifest = {
        "model": model_name,
        "hidden_size": int(config["hidden_size"]),
        "max_seq_length": int(st_config.get("max_seq_length", 256)),
        "opset": OPSET,
        "files": files,
    }
    if delta is not None:
        manifest["delta"] = {"file": delta.name, "sha256": sha256_of(delta)}
    tmp = target / f".{MANIFEST_FILE}.tmp{os.getpid()}"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, target / MANIFEST_FILE)
    return manifest
