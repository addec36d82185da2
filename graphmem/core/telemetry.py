"""Opt-in OpenTelemetry spans, one per stage; nothing at all when off.

Off by default. :func:`configure` (called when a :class:`graphmem.runtime.Runtime` is opened,
with ``GRAPHMEM_OTEL_ENABLED``) returns a :class:`Tracer` that makes spans when the
``opentelemetry-api`` package is importable (extra ``graphmem[otel]``); the Runtime holds it and
hands it to what it runs. There is no process-wide tracer in graphmem itself. graphmem only *creates* spans through the OpenTelemetry API; where
they go (OTLP collector, console, Jaeger ...) is set up the usual OpenTelemetry way by the
application, e.g. ``opentelemetry-instrument graphmem serve`` or an SDK ``TracerProvider``.

Spans (names are stable):

- ``graphmem.ask`` around one question, with children ``graphmem.ask.project``,
  ``graphmem.ask.system1``, ``graphmem.ask.system2``, ``graphmem.ask.compose`` and
  ``graphmem.ask.answer`` (SpeakerMem-R1 §3.3 stages);
- ``graphmem.writer.segment`` around one Writer segment (SpeakerMem-R1 §3.2), as a child of
  whatever span is current (a CLI run, an API request, a background job);
- ``chat <model>`` around each model call (a CLIENT span, :class:`graphmem.llm.ChatModel`) on
  the OpenTelemetry GenAI semantic conventions, so Langfuse, Phoenix and OpenLLMetry read it:
  ``gen_ai.operation.name`` ("chat"), ``gen_ai.provider.name`` and its older spelling
  ``gen_ai.system`` ("openai": the API flavour every endpoint speaks), ``gen_ai.request.model``,
  ``gen_ai.request.temperature`` / ``gen_ai.request.max_tokens`` (when set),
  ``gen_ai.response.model``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens``
  / ``gen_ai.usage.output_tokens``, ``server.address`` / ``server.port`` (host only, never
  credentials), ``error.type`` on failure; graphmem's own beside them: ``graphmem.stage``,
  ``graphmem.model_calls`` (1), ``graphmem.prompt_tokens``, ``graphmem.completion_tokens``,
  ``graphmem.tokens_estimated``, ``graphmem.attempts``;
- ``graphmem.search`` around one System 1 search (``graphmem search``, the API and MCP search,
  :meth:`graphmem.Memory.search`): ``graphmem.group_id``, ``graphmem.mode``,
  ``graphmem.mode_used``, ``graphmem.k``, ``graphmem.hits``;
- ``graphmem.embedder.load`` around the one load of the embedding model, wherever it happens
  (``Runtime.warm`` before a server reports ready, or the first encode of a command or of the
  first ask): ``graphmem.model``, ``graphmem.backend``.

Stage attributes: ``graphmem.group_id``; on stages that call a model ``graphmem.model_calls``,
``graphmem.prompt_tokens``, ``graphmem.completion_tokens``; on Writer segments also
``graphmem.segment.index``, ``graphmem.segment.session``, ``graphmem.segment.messages``,
``graphmem.records_added``, ``graphmem.records_updated``, ``graphmem.actions_rejected``.
Never message text, questions, prompts or answers (they are personal data), never keys.

Standard environment: when ``GRAPHMEM_OTEL_ENABLED`` is on and nothing has set a global tracer
provider (no ``opentelemetry-instrument``), :func:`configure` builds one with the
``opentelemetry-sdk`` when it is installed: its resource reads ``OTEL_SERVICE_NAME`` (default
``graphmem``) and ``OTEL_RESOURCE_ATTRIBUTES``; spans go to OTLP when
``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set and an OTLP
exporter package is installed (``opentelemetry-exporter-otlp-proto-http`` or ``-grpc``, as
``OTEL_EXPORTER_OTLP_PROTOCOL`` says; the exporter reads its own ``OTEL_EXPORTER_OTLP_*``
headers and timeouts), and to the console with ``OTEL_TRACES_EXPORTER=console``.
``OTEL_SDK_DISABLED=true`` turns every span off.

Cost when off: :meth:`Tracer.span` is one attribute check and returns one shared no-op
object; the OpenTelemetry package is not even imported. :class:`Stages` records the wall time,
the span and the model usage of each stage of one operation in one ``with``.
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

__all__ = ["NO_SPAN", "NO_TRACER", "StageRecord", "Stages", "Tracer", "configure", "provider_from_env"]

logger = logging.getLogger(__name__)


class _NoSpan:
    """The one object a :class:`Tracer` that is off returns: a context manager and a span whose
    methods do nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set_attribute(self, key: str, value: Any) -> None:
        return None

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        return None

    def end(self) -> None:
        return None


NO_SPAN = _NoSpan()


def _prefixed(attributes: dict[str, Any]) -> dict[str, Any]:
    return {f"graphmem.{k}": v for k, v in attributes.items()}


class Tracer:
    """graphmem's spans: an OpenTelemetry tracer, or nothing at all (``Tracer()``).

    Args:
        otel: an ``opentelemetry.trace.Tracer``, or None for a tracer that makes no spans.
    """

    __slots__ = ("_otel",)

    def __init__(self, otel: Any = None) -> None:
        self._otel = otel

    @property
    def enabled(self) -> bool:
        """Whether spans are being made."""
        return self._otel is not None

    def span(self, name: str, **attributes: Any) -> Any:
        """A context manager around one stage: a span made current, or the shared no-op when off.
        ``attributes`` keys are prefixed with ``graphmem.``.

        Use as ``with tracer.span("graphmem.ask", group_id=g) as sp: ...; sp.set_attribute(...)``.
        """
        if self._otel is None:
            return NO_SPAN
        return self._otel.start_as_current_span(name, attributes=_prefixed(attributes))

    def client_span(self, name: str, attributes: dict[str, Any]) -> Any:
        """A CLIENT span made current around one call to another service (a model endpoint),
        with ``attributes`` under their own names (``gen_ai.*``, ``server.*`` and ``graphmem.*``
        as given, nothing prefixed). An exception is not recorded as an event (its text could
        quote a prompt); the caller sets ``error.type``. The shared no-op when off."""
        if self._otel is None:
            return NO_SPAN
        from opentelemetry.trace import SpanKind

        return self._otel.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes,
                                                record_exception=False)

    def start(self, name: str, **attributes: Any) -> Any:
        """Start a span as a child of the current span without making it current (for stages
        that overlap, e.g. System 1 and System 2); close it with :meth:`end`. A stage that
        raises leaves its span unended, so it is not exported; the enclosing span records the
        error."""
        if self._otel is None:
            return NO_SPAN
        return self._otel.start_span(name, attributes=_prefixed(attributes))

    def end(self, target: Any, usages: Iterable[Any] = (), **attributes: Any) -> None:
        """End a span from :meth:`start`, adding model usage (:meth:`add_usage`) and
        ``attributes`` (prefixed with ``graphmem.``); nothing when off."""
        if target is NO_SPAN:
            return
        self.add_usage(target, usages)
        if attributes:
            target.set_attributes(_prefixed(attributes))
        target.end()

    @staticmethod
    def add_usage(target: Any, usages: Iterable[Any]) -> None:
        """Add model calls and token counts of ``usages`` (objects with ``prompt_tokens`` and
        ``completion_tokens``) to a span; nothing when off."""
        if target is NO_SPAN:
            return
        items = list(usages)
        target.set_attributes({
            "graphmem.model_calls": len(items),
            "graphmem.prompt_tokens": sum(int(u.prompt_tokens) for u in items),
            "graphmem.completion_tokens": sum(int(u.completion_tokens) for u in items),
        })


NO_TRACER = Tracer()
"""A tracer that makes no spans (immutable; the default wherever no Runtime hands one down)."""


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _otlp_exporter(environ: Mapping[str, str]) -> Any:
    """The OTLP span exporter ``OTEL_EXPORTER_OTLP_PROTOCOL`` names (http/protobuf by default),
    or None when its package is not installed (a warning says which one)."""
    protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    grpc = protocol.strip().lower() == "grpc"
    try:
        if grpc:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        package = "opentelemetry-exporter-otlp-proto-" + ("grpc" if grpc else "http")
        logger.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set but %s is not installed; spans are not exported", package)
        return None
    return OTLPSpanExporter()


def provider_from_env(environ: Mapping[str, str]) -> Any:
    """An SDK ``TracerProvider`` set up from the standard ``OTEL_*`` variables (module
    docstring), or None when ``opentelemetry-sdk`` is not installed.

    Args:
        environ: the environment (``os.environ``).
    """
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        return None
    attributes: dict[str, Any] = {}
    for pair in (environ.get("OTEL_RESOURCE_ATTRIBUTES") or "").split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            attributes[key.strip()] = unquote(value.strip())
    attributes["service.name"] = environ.get("OTEL_SERVICE_NAME") or attributes.get("service.name") or "graphmem"
    provider = TracerProvider(resource=Resource.create(attributes))
    names = {n.strip().lower() for n in (environ.get("OTEL_TRACES_EXPORTER") or "otlp").split(",")}
    if "otlp" in names and (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        exporter = _otlp_exporter(environ)
        if exporter is not None:
            provider.add_span_processor(BatchSpanProcessor(exporter))
    if "console" in names:
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    return provider


def configure(enabled: bool, tracer_provider: Any = None, environ: Mapping[str, str] | None = None) -> Tracer:
    """A :class:`Tracer` for these settings.

    Args:
        enabled: make spans (True) or nothing at all (False).
        tracer_provider: an OpenTelemetry ``TracerProvider`` to take the tracer from; None = the
            globally configured one (``trace.set_tracer_provider`` / ``opentelemetry-instrument``),
            else one built from the ``OTEL_*`` variables (:func:`provider_from_env`), which then
            becomes the global one.
        environ: the environment to read ``OTEL_*`` from (default ``os.environ``).

    Returns:
        A tracer; one that is off when ``enabled`` is False, ``OTEL_SDK_DISABLED`` is true, or
        ``opentelemetry-api`` is not installed (a warning then says so).
    """
    env = os.environ if environ is None else environ
    if not enabled or _true(env.get("OTEL_SDK_DISABLED")):
        return NO_TRACER
    try:
        from opentelemetry import trace
    except ImportError:
        logger.warning("GRAPHMEM_OTEL_ENABLED is set but opentelemetry-api is not installed "
                       "(pip install 'graphmem[otel]'); no spans are made")
        return NO_TRACER
    from graphmem import __version__

    if tracer_provider is None and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        built = provider_from_env(env)  # nothing configured the SDK: the standard variables do
        if built is not None:
            trace.set_tracer_provider(built)
    return Tracer(trace.get_tracer("graphmem", __version__, tracer_provider=tracer_provider))


@dataclass
class StageRecord:
    """One stage of an operation as :meth:`Stages.stage` recorded it.

    Attributes:
        name: the stage (``"project"``, ``"system1"`` ...).
        wall_s: wall-clock seconds inside the ``with`` (set when it ends).
        usages: model usages the stage added (:class:`graphmem.llm.Usage`), in call order.
    """

    name: str
    wall_s: float = 0.0
    usages: list[Any] = field(default_factory=list)


class Stages:
    """Wall time, span and model usage of each stage of one operation, recorded in one ``with``.

    ``with stages.stage("project") as st: ...; st.usages += used`` times the block into
    :attr:`timings_s`, makes the span ``<prefix>.project`` (a child of the current span, with
    the operation's attributes and the usage's calls and tokens), and adds the usages to
    :attr:`usages`. Made by :meth:`graphmem.runtime.Runtime.stages`.

    Args:
        tracer: where spans go.
        prefix: span name prefix (``"graphmem.ask"``).
        attributes: attributes of every stage span (``group_id=...``).
    """

    def __init__(self, tracer: Tracer, prefix: str, **attributes: Any) -> None:
        self.tracer = tracer
        self.prefix = prefix
        self.attributes = attributes
        self.timings_s: dict[str, float] = {}
        self.usages: list[Any] = []

    @contextmanager
    def stage(self, name: str, *, timing: str | None = None) -> Iterator[StageRecord]:
        """Record one stage (``timing``: the key in :attr:`timings_s`, default ``name``; the
        span is ``<prefix>.<name>``). A stage that raises records nothing and leaves its span
        unended (not exported)."""
        record = StageRecord(name)
        span = self.tracer.start(f"{self.prefix}.{name}", **self.attributes)
        t0 = time.perf_counter()
        yield record
        record.wall_s = time.perf_counter() - t0
        self.timings_s[timing or name] = record.wall_s
        self.usages += record.usages
        self.tracer.end(span, record.usages)
