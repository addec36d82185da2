"""Language-model access through any OpenAI-compatible chat endpoint.

One :class:`ChatModel` per endpoint and model. It sends chat completions with the ``openai``
client, retries transient failures (timeouts, connection errors, HTTP 408/409/429/5xx) with
exponential backoff through tenacity, parses JSON answers defensively and records the token
usage of every call in a :class:`TokenLedger`.

Token accounting lives in :mod:`graphmem.llm.usage`, stage timing in :mod:`graphmem.llm.timing`.

Three factories build the models the pipeline uses from :class:`graphmem.core.config.Settings`:
:func:`writer_model` (the System 2 Writer), :func:`answer_model` (query and answer modules) and
:func:`judge_model` (evaluation judge). Each returns ``None`` when no endpoint is configured.

Nothing here opens a connection at construction time; the first request does.

Size (over 500 lines on purpose): one protocol - ChatModel's request, retry, JSON-mode
fallback and usage paths plus the defensive JSON extraction they rely on; usage and timing
already live in :mod:`graphmem.llm.usage` and :mod:`graphmem.llm.timing`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from graphmem.core.config import Settings
from graphmem.core.errors import LLMError
from graphmem.llm.timing import Stopwatch
from graphmem.llm.usage import TokenLedger, Usage, estimate_tokens
from graphmem.core.text import strip_think
from graphmem.core.redact import redact_text, redact_url
from graphmem.core.telemetry import NO_SPAN, NO_TRACER, Tracer

if TYPE_CHECKING:
    import openai


def _openai() -> Any:
    """The ``openai`` package, imported on first use (0.6 s: a command that calls no model never pays it)."""
    import openai

    return openai

logger = logging.getLogger(__name__)

__all__ = [
    "ChatModel",
    "LLMOutputError",
    "Message",
    "answer_model",
    "extract_json",
    "judge_model",
    "writer_model",
]

#: One chat message as the OpenAI API takes it: ``{"role": "system"|"user"|"assistant", "content": str}``.
Message = Mapping[str, Any]

#: API key sent when none is configured; local servers (vLLM, llama.cpp, Ollama) ignore it.
PLACEHOLDER_API_KEY = "not-needed"

#: HTTP statuses worth retrying (the same set the openai client itself retries).
TRANSIENT_STATUSES = frozenset({408, 409, 429})

_ERROR_TEXT_LIMIT = 500
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)```", re.DOTALL)


class LLMOutputError(LLMError):
    """The endpoint answered, but the answer is not usable (no JSON value could be parsed).

    Attributes:
        stage: pipeline stage that made the call (e.g. ``"writer"``).
        model: model name.
        text: the raw answer text (first 2,000 characters).
        finish_reason: the server's finish reason (``"length"`` means the answer was cut off).
    """

    def __init__(
        self, message: str, *, stage: str = "", model: str = "", text: str = "", finish_reason: str = ""
    ) -> None:
        self.stage = stage
        self.model = model
        self.text = text[:2000]
        self.finish_reason = finish_reason
        super().__init__(message)


# --------------------------------------------------------------------------------------------
# token accounting
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# JSON parsing
# --------------------------------------------------------------------------------------------


def _json_candidates(text: str) -> list[tuple[int, int, Any]]:
    """Every top-level JSON object/array found by scanning ``text`` left to right.

    Returns ``(start, end, value)`` triples; a value nested inside an earlier found one is
    not listed again.
    """
    decoder = json.JSONDecoder()
    found: list[tuple[int, int, Any]] = []
    pos = 0
    while True:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            return found
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        found.append((start, end, value))
        pos = end


def extract_json(text: str) -> dict[str, Any] | list[Any]:
    """Parse the JSON object or array in a model's answer.

    Tolerates what models wrap around JSON: ``<think>…</think>`` blocks, Markdown code fences
    (```` ```json … ``` ````) and prose before or after. Order of attempts: the whole text; the
    content of each code fence; then the outermost JSON object/array embedded in the text (the
    longest one that parses; on a tie, the last).

    Args:
        text: the model's answer.

    Returns:
        The parsed object (dict) or array (list).

    Raises:
        ValueError: no JSON object or array could be parsed (a bare number or string does not
            count). :class:`ChatModel` turns this into :class:`LLMOutputError`.
    """
    cleaned = strip_think(text)
    if not cleaned:
        raise ValueError("empty answer")
    try:
        value = json.loads(cleaned)
    except json.JSONDecodeError:
        pass
    else:
        if isinstance(value, (dict, list)):
            return value
    for match in _FENCE.finditer(cleaned):
        body = match.group(2).strip()
        try:
            value = json.loads(body)
        except json.JSONDecodeError:
            continue
        if isinstance(value, (dict, list)):
            return value
    candidates = _json_candidates(cleaned)
    if not candidates:
        raise ValueError(f"no JSON object or array in the answer: {cleaned[:200]!r}")
    best = max(enumerate(candidates), key=lambda item: (item[1][1] - item[1][0], item[0]))
    found: dict[str, Any] | list[Any] = best[1][2]  # a candidate is an object or an array
    return found


# --------------------------------------------------------------------------------------------
# the client
# --------------------------------------------------------------------------------------------


class _NoChoices(Exception):
    """A 200 answer whose ``choices`` list is empty (a proxy's filter, an overloaded server):
    no answer at all, retried like a 5xx, never read as an empty answer."""


def _is_transient(exc: BaseException) -> bool:
    """True for failures worth retrying: timeouts, connection errors, 408/409/429, 5xx, and
    an answer without choices."""
    if isinstance(exc, _NoChoices):
        return True
    openai = _openai()
    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError is a subclass
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in TRANSIENT_STATUSES or exc.status_code >= 500
    return False


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= _ERROR_TEXT_LIMIT else text[: _ERROR_TEXT_LIMIT - 3] + "..."


def _rejects_response_format(exc: openai.APIStatusError) -> bool:
    """True when a 400/422 answer names the ``response_format`` parameter."""
    if exc.status_code not in (400, 422):
        return False
    body = exc.body if isinstance(exc.body, str) else json.dumps(exc.body, default=str)
    return "response_format" in f"{exc} {body}"


def _retry_after_s(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait (``Retry-After`` header), when it did."""
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class ChatModel:
    """One model on one OpenAI-compatible chat-completions endpoint.

    The openai client's own retries are disabled (``max_retries=0``); this class is the only
    retry layer. ``max_retries`` retries follow the first attempt, so a call makes at most
    ``max_retries + 1`` HTTP requests. The wait before retry ``n`` (1-based) is
    ``min(backoff_max_s, backoff_initial_s * 2 ** (n - 1))`` seconds, or the server's
    ``Retry-After`` when that is longer (still capped at ``backoff_max_s``). Transient:
    timeouts, connection errors, HTTP 408/409/429 and 5xx, and a 200 answer whose ``choices``
    list is empty (never read as an empty answer).

    JSON mode: :meth:`complete_json` asks for ``response_format={"type": "json_object"}``.
    When the server rejects that parameter (HTTP 400/422 naming ``response_format``) the
    model remembers it and sends every later request without it; the current call is resent
    at once (this does not count as a retry). Answers are parsed with :func:`extract_json`
    either way.

    Args:
        base_url: endpoint root including the API version, e.g. ``http://127.0.0.1:8000/v1``.
        model: model name sent in each request.
        api_key: API key; empty means none (a placeholder is sent; local servers ignore it).
        timeout_s: per-request timeout in seconds.
        max_retries: retries after the first attempt on transient failures (>= 0).
        temperature: sampling temperature sent with every request.
        ledger: where usage is recorded; a fresh :class:`TokenLedger` when omitted.
        backoff_initial_s: wait before the first retry, seconds.
        backoff_max_s: cap on any single wait, seconds.
        tracer: where each call's ``chat <model>`` span goes (GenAI conventions,
            :mod:`graphmem.core.telemetry`); a :class:`graphmem.runtime.Runtime` sets its own.

    Raises:
        ValueError: empty ``base_url`` or ``model``, negative ``max_retries`` or non-positive
            ``timeout_s``.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout_s: float = 120.0,
        max_retries: int = 3,
        temperature: float = 0.0,
        ledger: TokenLedger | None = None,
        backoff_initial_s: float = 1.0,
        backoff_max_s: float = 30.0,
        tracer: Tracer | None = None,
    ) -> None:
        if not base_url or not model:
            raise ValueError("ChatModel needs both base_url and model")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.base_url = base_url.rstrip("/")
        # what messages, logs and spans show: the endpoint without credentials (graphmem.core.redact)
        self.shown_url = redact_url(self.base_url)
        self.model = model
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.temperature = float(temperature)
        self.ledger = ledger if ledger is not None else TokenLedger()
        self.backoff_initial_s = float(backoff_initial_s)
        self.backoff_max_s = float(backoff_max_s)
        self._json_mode_supported = True
        self.tracer = tracer if tracer is not None else NO_TRACER
        self._client = _openai().OpenAI(
            base_url=self.base_url,
            api_key=api_key or PLACEHOLDER_API_KEY,
            timeout=self.timeout_s,
            max_retries=0,
        )

    def __repr__(self) -> str:
        return f"ChatModel(base_url={self.shown_url!r}, model={self.model!r})"

    @property
    def json_mode_supported(self) -> bool:
        """False once the server has rejected ``response_format``."""
        return self._json_mode_supported

    def close(self) -> None:
        """Close the underlying HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> ChatModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- public calls ----------------------------------------------------------------------

    def complete_text(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> tuple[str, Usage]:
        """Send one chat completion and return the answer text.

        Args:
            messages: chat messages, ``[{"role": ..., "content": ...}, ...]``.
            stage: pipeline stage name, recorded in the ledger and named in errors.
            max_tokens: cap on output tokens (server default when None).
            temperature: overrides the model's temperature for this call.

        Returns:
            ``(text, usage)``: the first choice's content ("" when the server sent none) and
            the call's :class:`Usage` (also recorded in :attr:`ledger`).

        Raises:
            LLMError: the endpoint failed (after retries for transient failures, at once for
                others such as 401/404 or a malformed response).
        """
        text, _finish, usage = self._complete(
            messages, stage=stage, max_tokens=max_tokens, temperature=temperature, json_mode=False
        )
        return text, usage

    def complete_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> tuple[dict[str, Any] | list[Any], Usage]:
        """Send one chat completion in JSON mode and parse the answer.

        Args: as :meth:`complete_text`.

        Returns:
            ``(value, usage)``: the parsed JSON object (dict) or array (list), and the usage.

        Raises:
            LLMOutputError: the answer holds no parseable JSON object/array (the usage is
                recorded anyway; the error carries the raw text and finish reason).
            LLMError: the endpoint failed, as in :meth:`complete_text`.
        """
        text, finish_reason, usage = self._complete(
            messages, stage=stage, max_tokens=max_tokens, temperature=temperature, json_mode=True
        )
        try:
            return extract_json(text), usage
        except ValueError as e:
            cut = " (answer cut off: finish_reason=length)" if finish_reason == "length" else ""
            raise LLMOutputError(
                f"stage '{stage}': model '{self.model}' at {self.shown_url} returned no parseable "
                f"JSON{cut}: {e}",
                stage=stage,
                model=self.model,
                text=text,
                finish_reason=finish_reason,
            ) from e

    # -- internals -------------------------------------------------------------------------

    def _wait_s(self, state: RetryCallState) -> float:
        exponential: float = self.backoff_initial_s * 2 ** max(0, state.attempt_number - 1)
        wait = exponential
        if state.outcome is not None and state.outcome.failed:
            asked = _retry_after_s(state.outcome.exception())
            if asked is not None:
                wait = max(wait, asked)
        return min(self.backoff_max_s, wait)

    def _log_retry(self, state: RetryCallState, stage: str) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        logger.warning(
            "LLM stage %r (model %s at %s): attempt %d failed (%s); retrying in %.2f s",
            stage,
            self.model,
            self.shown_url,
            state.attempt_number,
            redact_text(_error_text(exc)) if exc else "?",
            state.next_action.sleep if state.next_action else 0.0,
        )

    def _request(self, kwargs: dict[str, Any], json_mode: bool) -> Any:
        """One HTTP request; on a ``response_format`` rejection, resend once without it."""
        if json_mode and self._json_mode_supported:
            try:
                return self._client.chat.completions.create(
                    **kwargs, response_format={"type": "json_object"}
                )
            except _openai().APIStatusError as e:
                if not _rejects_response_format(e):
                    raise
                if "must contain the word" not in str(e).lower():
                    # The server does not know the parameter: stop sending it.
                    self._json_mode_supported = False
                    logger.info(
                        "%s (model %s) rejected response_format; sending JSON requests without it",
                        self.shown_url,
                        self.model,
                    )
        return self._client.chat.completions.create(**kwargs)

    def _complete(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        max_tokens: int | None,
        temperature: float | None,
        json_mode: bool,
    ) -> tuple[str, str, Usage]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature if temperature is None else float(temperature),
        }
        if max_tokens is not None:
            kwargs["max_tokens"] = int(max_tokens)
        attempts = 0

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            response = self._request(kwargs, json_mode)
            if not getattr(response, "choices", None):
                raise _NoChoices(f"{self.shown_url} (model '{self.model}') returned no choices")
            return response

        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait_s,
            retry=retry_if_exception(_is_transient),
            before_sleep=lambda state: self._log_retry(state, stage),
            reraise=True,
        )
        with self.tracer.client_span(f"chat {self.model}", self._span_attributes(kwargs, stage)) as span:
            watch = Stopwatch()
            try:
                response = retrying(attempt)
            except _NoChoices as e:
                span.set_attributes({"error.type": "no_choices", "graphmem.attempts": attempts})
                raise LLMError(f"stage '{stage}': {e} in {attempts} attempt(s)") from e
            except (_openai().OpenAIError, ValueError) as e:
                # ValueError: a body that is not JSON, or not the shape of a chat completion.
                span.set_attributes({"error.type": type(e).__name__, "graphmem.attempts": attempts})
                raise LLMError(
                    f"stage '{stage}': chat completion failed at {self.shown_url} (model "
                    f"'{self.model}') after {attempts} attempt(s): {redact_text(_error_text(e))}"
                ) from e
            latency_s = watch.elapsed_s

            choices = response.choices  # never empty (attempt() retries such an answer)
            text = choices[0].message.content or ""
            finish_reason = choices[0].finish_reason or ""
            usage = self._usage(response, kwargs["messages"], text, stage, latency_s, attempts)
            self.ledger.record(usage)
            if span is not NO_SPAN:
                span.set_attributes(_response_attributes(response, usage, finish_reason))
        return text, finish_reason, usage

    def _span_attributes(self, kwargs: Mapping[str, Any], stage: str) -> dict[str, Any]:
        """The request side of a ``chat <model>`` span: GenAI names plus graphmem's (no prompt
        text, no key; the endpoint as host and port only)."""
        if not self.tracer.enabled:
            return {}
        parsed = urlsplit(self.base_url)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": GEN_AI_PROVIDER,
            "gen_ai.system": GEN_AI_PROVIDER,
            "gen_ai.request.model": self.model,
            "gen_ai.request.temperature": float(kwargs["temperature"]),
            "server.address": parsed.hostname or "",
            "graphmem.stage": stage,
        }
        if parsed.port is not None:
            attributes["server.port"] = parsed.port
        if "max_tokens" in kwargs:
            attributes["gen_ai.request.max_tokens"] = int(kwargs["max_tokens"])
        return attributes

    def _usage(
        self,
        response: Any,
        messages: Sequence[Mapping[str, Any]],
        text: str,
        stage: str,
        latency_s: float,
        attempts: int,
    ) -> Usage:
        reported = getattr(response, "usage", None)
        prompt = getattr(reported, "prompt_tokens", None)
        completion = getattr(reported, "completion_tokens", None)
        if isinstance(prompt, int) and isinstance(completion, int):
            return Usage(stage, self.model, prompt, completion, latency_s, False, attempts)
        prompt_text = "\n".join(str(m.get("content") or "") for m in messages)
        return Usage(
            stage,
            self.model,
            estimate_tokens(prompt_text),
            estimate_tokens(text),
            latency_s,
            True,
            attempts,
        )


#: ``gen_ai.provider.name`` of every call: the OpenAI chat-completions API that every endpoint
#: graphmem talks to speaks (vLLM, llama.cpp, Ollama, OpenAI), the convention's "openai" flavour
GEN_AI_PROVIDER = "openai"


def _response_attributes(response: Any, usage: Usage, finish_reason: str) -> dict[str, Any]:
    """The response side of a ``chat <model>`` span (token counts, the model that answered)."""
    answered = getattr(response, "model", None)
    attributes: dict[str, Any] = {
        "gen_ai.response.model": answered if isinstance(answered, str) and answered else usage.model,
        "gen_ai.usage.input_tokens": int(usage.prompt_tokens),
        "gen_ai.usage.output_tokens": int(usage.completion_tokens),
        "graphmem.model_calls": 1,
        "graphmem.prompt_tokens": int(usage.prompt_tokens),
        "graphmem.completion_tokens": int(usage.completion_tokens),
        "graphmem.tokens_estimated": bool(usage.estimated),
        "graphmem.attempts": int(usage.attempts),
    }
    if finish_reason:
        attributes["gen_ai.response.finish_reasons"] = [finish_reason]
    return attributes


# --------------------------------------------------------------------------------------------
# factories
# --------------------------------------------------------------------------------------------


def _build(
    settings: Settings,
    *,
    base_url: str,
    model: str,
    api_key: str,
    ledger: TokenLedger | None,
) -> ChatModel | None:
    if not base_url or not model:
        return None
    return ChatModel(
        base_url=base_url,
        model=model,
        api_key=api_key,
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
        temperature=settings.llm_temperature,
        ledger=ledger,
    )


def writer_model(settings: Settings, *, ledger: TokenLedger | None = None) -> ChatModel | None:
    """The System 2 Writer: ``GRAPHMEM_WRITER_*``, each field falling back to ``GRAPHMEM_LLM_*``.

    Returns:
        A :class:`ChatModel`, or None when no base URL or model is configured after fallback.
    """
    return _build(
        settings,
        base_url=settings.writer_base_url or settings.llm_base_url,
        model=settings.writer_model or settings.llm_model,
        api_key=settings.writer_api_key.get_secret_value() or settings.llm_api_key.get_secret_value(),
        ledger=ledger,
    )


def answer_model(settings: Settings, *, ledger: TokenLedger | None = None) -> ChatModel | None:
    """Query organisation and answering modules: ``GRAPHMEM_LLM_*``.

    Returns:
        A :class:`ChatModel`, or None when ``llm_base_url`` or ``llm_model`` is empty.
    """
    return _build(
        settings,
        base_url=settings.llm_base_url,
        model=settings.llm_model,
        api_key=settings.llm_api_key.get_secret_value(),
        ledger=ledger,
    )


def judge_model(settings: Settings, *, ledger: TokenLedger | None = None) -> ChatModel | None:
    """The evaluation judge: ``GRAPHMEM_JUDGE_*``, each field falling back to ``GRAPHMEM_LLM_*``.

    Returns:
        A :class:`ChatModel`, or None when no base URL or model is configured after fallback.
    """
    return _build(
        settings,
        base_url=settings.judge_base_url or settings.llm_base_url,
        model=settings.judge_model or settings.llm_model,
        api_key=settings.judge_api_key.get_secret_value() or settings.llm_api_key.get_secret_value(),
        ledger=ledger,
    )
