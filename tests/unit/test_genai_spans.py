"""Model call spans on the OpenTelemetry GenAI conventions, the embedder load span, and the
standard ``OTEL_*`` variables (in-memory exporter of ``opentelemetry-sdk``, the real
:class:`graphmem.llm.ChatModel` against the scripted local endpoint; no database)."""

from __future__ import annotations

import pytest

from graphmem.core import telemetry
from graphmem.core.errors import LLMError
from tests.scripted_llm import Reply

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
export = pytest.importorskip("opentelemetry.sdk.trace.export")
in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")

PROMPT = "What did Ben say about the ridge trail at dawn?"
ANSWER = "He said the ridge trail is steep but worth it."
KEY = "sk-test-very-secret-4711"


@pytest.fixture
def spans():
    exported = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exported))
    exported.tracer = telemetry.configure(True, tracer_provider=provider)
    yield exported


def _no_personal_data(span) -> None:
    for key, value in span.attributes.items():
        text = str(value)
        assert PROMPT not in text and ANSWER not in text and "ridge" not in text, (key, value)
        assert KEY not in text, key
    assert not span.events  # no exception event either (its text could quote a prompt)


def test_a_model_call_is_a_genai_client_span_with_usage_and_graphmem_attributes(scripted_llm, spans):
    scripted_llm.enqueue(Reply.text(ANSWER, prompt_tokens=31, completion_tokens=12))
    model = scripted_llm.chat_model(api_key=KEY, tracer=spans.tracer)
    text, usage = model.complete_text([{"role": "user", "content": PROMPT}], stage="answer", max_tokens=64)
    assert text == ANSWER
    (span,) = spans.get_finished_spans()
    assert span.name == f"chat {scripted_llm.model}"
    assert span.kind.name == "CLIENT"
    a = span.attributes
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == a["gen_ai.system"] == "openai"
    assert a["gen_ai.request.model"] == a["gen_ai.response.model"] == scripted_llm.model
    assert a["gen_ai.request.max_tokens"] == 64 and a["gen_ai.request.temperature"] == 0.0
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (31, 12)
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("stop",)
    assert a["server.address"] == "127.0.0.1" and isinstance(a["server.port"], int)
    # graphmem's own names beside the conventions
    assert (a["graphmem.stage"], a["graphmem.model_calls"]) == ("answer", 1)
    assert (a["graphmem.prompt_tokens"], a["graphmem.completion_tokens"]) == (usage.prompt_tokens, usage.completion_tokens)
    assert a["graphmem.tokens_estimated"] is False and a["graphmem.attempts"] == 1
    _no_personal_data(span)


def test_a_failed_call_ends_its_span_as_an_error_without_the_text(scripted_llm, spans):
    scripted_llm.enqueue(Reply.http_error(400, f"bad request: {PROMPT}"))
    model = scripted_llm.chat_model(api_key=KEY, tracer=spans.tracer, max_retries=0)
    with pytest.raises(LLMError):
        model.complete_text([{"role": "user", "content": PROMPT}], stage="project")
    (span,) = spans.get_finished_spans()
    assert span.status.status_code.name == "ERROR"
    assert span.attributes["error.type"] == "BadRequestError"
    assert "gen_ai.usage.input_tokens" not in span.attributes
    _no_personal_data(span)


def test_no_span_and_no_otel_import_cost_when_off(scripted_llm):
    scripted_llm.enqueue(Reply.text(ANSWER))
    model = scripted_llm.chat_model()
    assert model.tracer is telemetry.NO_TRACER
    model.complete_text([{"role": "user", "content": PROMPT}], stage="answer")  # nothing to export, no error


def test_the_embedder_load_is_one_span_whoever_encodes_first(spans):
    from graphmem.core.config import get_settings
    from graphmem.core.embed import Embedder

    emb = Embedder.from_settings(get_settings())
    emb.tracer = spans.tracer
    assert not emb.loaded
    emb.encode(["first text"])
    emb.encode(["second text"])
    loads = [s for s in spans.get_finished_spans() if s.name == "graphmem.embedder.load"]
    assert len(loads) == 1 and emb.loaded
    assert loads[0].attributes["graphmem.model"] == emb.model_name
    assert loads[0].attributes["graphmem.backend"] == emb.backend_name
    assert emb.warm() == 0.0 and len(spans.get_finished_spans()) == 1  # loaded: no second span


def test_the_standard_otel_variables_set_up_the_provider():
    provider = telemetry.provider_from_env({"OTEL_SERVICE_NAME": "memory-api",
                                            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test"})
    assert provider.resource.attributes["service.name"] == "memory-api"
    assert provider.resource.attributes["deployment.environment"] == "test"
    assert telemetry.provider_from_env({}).resource.attributes["service.name"] == "graphmem"
    # no endpoint: no exporter; console asked: one processor
    assert not provider._active_span_processor._span_processors  # noqa: SLF001
    console = telemetry.provider_from_env({"OTEL_TRACES_EXPORTER": "console"})
    assert len(console._active_span_processor._span_processors) == 1  # noqa: SLF001
    assert telemetry.configure(True, environ={"OTEL_SDK_DISABLED": "true"}) is telemetry.NO_TRACER
