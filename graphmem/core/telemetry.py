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
  whatever span is current (a CLI run, an API request, a background job).

Attributes: ``graphmem.group_id``; on stages that call a model ``graphmem.model_calls``,
``graphmem.prompt_tokens``, ``graphmem.completion_tokens``; on Writer segments also
``graphmem.segment.index``, ``graphmem.segment.session``, ``graphmem.segment.messages``,
``graphmem.records_added``, ``graphmem.records_updated``, ``graphmem.actions_rejected``.
Never message text, questions or answers (they are personal data).

Cost when off: :meth:`Tracer.span` is one attribute check and returns one shared no-op
object; the OpenTelemetry package is not even imported. :class:`Stages` records the wall time,
the span and the model usage of each stage of one operation in one ``with``.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NO_SPAN", "NO_TRACER", "StageRecord", "Stages", "Tracer", "configure"]

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


def configure(enabled: bool, tracer_provider: Any = None) -> Tracer:
    """A :class:`Tracer` for these settings.

    Args:
        enabled: make spans (True) or nothing at all (False).
        tracer_provider: an OpenTelemetry ``TracerProvider`` to take the tracer from; None = the
            globally configured one (``trace.set_tracer_provider`` / ``opentelemetry-instrument``).

    Returns:
        A tracer; one that is off when ``enabled`` is False or ``opentelemetry-api`` is not
        installed (a warning then says so).
    """
    if not enabled:
        return NO_TRACER
    try:
        from opentelemetry import trace
    except ImportError:
        logger.warning("GRAPHMEM_OTEL_ENABLED is set but opentelemetry-api is not installed "
                       "(pip install 'graphmem[otel]'); no spans are made")
        return NO_TRACER
    from graphmem import __version__

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
