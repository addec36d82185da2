"""Opt-in OpenTelemetry spans, one per stage; nothing at all when off.

Off by default. :func:`configure` (called by the CLI and the API with
``GRAPHMEM_OTEL_ENABLED``) turns it on when the ``opentelemetry-api`` package is importable
(extra ``graphmem[otel]``). graphmem only *creates* spans through the OpenTelemetry API; where
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

Cost when off: :func:`span` is one check of a module flag and returns one shared no-op
object; the OpenTelemetry package is not even imported.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Iterable
from typing import Any, ParamSpec, TypeVar

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

_tracer: Any = None  # an opentelemetry Tracer while enabled, else None


class _NoSpan:
    """The one object :func:`span` returns when telemetry is off: a context manager and a span
    whose methods do nothing."""

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


def configure(enabled: bool, tracer_provider: Any = None) -> bool:
    """Turn span creation on or off.

    Args:
        enabled: make spans (True) or nothing at all (False).
        tracer_provider: an OpenTelemetry ``TracerProvider`` to take the tracer from; None = the
            globally configured one (``trace.set_tracer_provider`` / ``opentelemetry-instrument``).

    Returns:
        Whether telemetry is on afterwards (False when asked for but ``opentelemetry-api`` is
        not installed; a warning says so).
    """
    global _tracer
    if not enabled:
        _tracer = None
        return False
    try:
        from opentelemetry import trace
    except ImportError:
        logger.warning("GRAPHMEM_OTEL_ENABLED is set but opentelemetry-api is not installed "
                       "(pip install 'graphmem[otel]'); no spans are made")
        _tracer = None
        return False
    from graphmem import __version__

    _tracer = trace.get_tracer("graphmem", __version__, tracer_provider=tracer_provider)
    return True


def enabled() -> bool:
    """Whether spans are being made."""
    return _tracer is not None


def span(name: str, **attributes: Any) -> Any:
    """A context manager around one stage: an OpenTelemetry span made current, or the shared
    no-op when telemetry is off. ``attributes`` keys are prefixed with ``graphmem.``.

    Use as ``with span("graphmem.ask.project", group_id=g) as sp: ...; sp.set_attribute(...)``.
    """
    if _tracer is None:
        return NO_SPAN
    return _tracer.start_as_current_span(name, attributes={f"graphmem.{k}": v for k, v in attributes.items()})


def stage(name: str, **attributes: Any) -> Any:
    """Start a span for one stage as a child of the current span, without making it current
    (for straight-line code; close it with :func:`end`). The shared no-op when off. A stage
    that raises leaves its span unended, so it is not exported; the enclosing span records
    the error."""
    if _tracer is None:
        return NO_SPAN
    return _tracer.start_span(name, attributes={f"graphmem.{k}": v for k, v in attributes.items()})


def end(target: Any, usages: Iterable[Any] = (), **attributes: Any) -> None:
    """End a span from :func:`stage`, adding model usage (see :func:`add_usage`) and
    ``attributes`` (prefixed with ``graphmem.``); nothing when off."""
    if target is NO_SPAN:
        return
    add_usage(target, usages)
    if attributes:
        target.set_attributes({f"graphmem.{k}": v for k, v in attributes.items()})
    target.end()


def add_usage(target: Any, usages: Iterable[Any]) -> None:
    """Add model calls and token counts of ``usages`` (objects with ``prompt_tokens`` and
    ``completion_tokens``) to a span; nothing when telemetry is off."""
    if target is NO_SPAN:
        return
    items = list(usages)
    target.set_attributes({
        "graphmem.model_calls": len(items),
        "graphmem.prompt_tokens": sum(int(u.prompt_tokens) for u in items),
        "graphmem.completion_tokens": sum(int(u.completion_tokens) for u in items),
    })


def traced(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: run the function inside span ``name``, made current so that the stages it
    opens become its children, with the function's ``group_id`` argument as
    ``graphmem.group_id``. When telemetry is off the call costs one flag check."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if _tracer is None:
                return fn(*args, **kwargs)
            group_id = signature.bind_partial(*args, **kwargs).arguments.get("group_id", "")
            with span(name, group_id=str(group_id)):
                return fn(*args, **kwargs)

        return wrapper

    return decorate
