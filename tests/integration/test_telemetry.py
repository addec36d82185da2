"""Opt-in OpenTelemetry spans: one per ask stage and per Writer segment, nothing when off."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.core import telemetry
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.query import ask
from graphmem.derived.writer import ReplayWriter, derive_group
from loaders import load_conversations
from tests.factories import runtime_of
from graphmem.core.config import get_settings

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Which trail did the family choose, and does Ben agree?"


@pytest.fixture
def exporter():
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    spans = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(spans))
    tracer = telemetry.configure(True, tracer_provider=provider)
    assert tracer.enabled
    spans.tracer = tracer
    yield spans


@pytest.fixture
def sample(store, embedder, group_id):
    convs = load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=group_id)
    ingest_conversations(store, convs, embedder)
    return group_id


def test_off_by_default_costs_one_shared_no_op():
    tracer = telemetry.configure(False)
    assert tracer is telemetry.NO_TRACER and not tracer.enabled
    assert tracer.span("graphmem.ask", group_id="g") is telemetry.NO_SPAN
    assert tracer.start("graphmem.ask.project") is telemetry.NO_SPAN


def test_a_runtime_opened_from_the_settings_makes_no_spans_unless_enabled(store, embedder):
    from graphmem.runtime import Runtime

    assert Runtime(get_settings(), store=store, embedder=embedder).tracer is telemetry.NO_TRACER


def test_ask_makes_one_span_per_stage_under_the_ask_span(store, embedder, sample, exporter):
    rt = runtime_of(store, embedder).with_models()
    rt.tracer = exporter.tracer
    ask(rt, sample, QUESTION)  # no answer model: evidence only, no answer stage
    spans = {s.name: s for s in exporter.get_finished_spans()}
    stages = ["graphmem.ask.project", "graphmem.ask.embed", "graphmem.ask.system1", "graphmem.ask.system2",
              "graphmem.ask.compose"]
    assert set(spans) == {"graphmem.ask", *stages}
    root = spans["graphmem.ask"]
    assert root.parent is None and root.attributes["graphmem.group_id"] == sample
    for name in stages:
        assert spans[name].parent.span_id == root.context.span_id, name
        assert spans[name].attributes["graphmem.group_id"] == sample
    assert spans["graphmem.ask.project"].attributes["graphmem.model_calls"] == 0
    # personal data never goes into a span
    for s in spans.values():
        assert not any(QUESTION in str(v) or "trail" in str(v) for v in s.attributes.values())


def test_each_writer_segment_is_a_span_with_its_outcome(store, embedder, sample, exporter):
    summary = derive_group(store, sample, model=ReplayWriter(ROOT / "examples" / "sample_writer_actions.jsonl"),
                           embedder=embedder, settings=get_settings(), tracer=exporter.tracer)
    segments = [s for s in exporter.get_finished_spans() if s.name == "graphmem.writer.segment"]
    assert len(segments) == summary.segments_written == 3
    assert [s.attributes["graphmem.segment.index"] for s in segments] == [1, 2, 3]
    assert sum(s.attributes["graphmem.records_added"] for s in segments) == summary.records_added
    assert sum(s.attributes["graphmem.records_updated"] for s in segments) == summary.records_updated
    assert all(s.attributes["graphmem.group_id"] == sample for s in segments)


def test_first_ask_load_model_calls_and_search_make_named_spans(store, sample, exporter, scripted_llm):
    """A fresh Runtime (its embedder not loaded yet) with a scripted answer model: the model's
    load sits under the ask's embed stage, every model call is a GenAI ``chat <model>`` span in
    the ask's trace, and a search is a ``graphmem.search`` span."""
    from graphmem.core.embed import Embedder
    from graphmem.facade import Memory
    from graphmem.runtime import Runtime
    from tests.scripted_llm import Reply

    scripted_llm.handler = lambda request: Reply.text("Ben prefers the ridge.")
    rt = Runtime(get_settings(), store=store, embedder=Embedder.from_settings(get_settings()),
                 answer=scripted_llm.chat_model(), tracer=exporter.tracer)
    assert rt.answer.tracer is exporter.tracer and not rt.embedder.loaded
    ask(rt, sample, QUESTION)
    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    root = next(s for s in spans if s.name == "graphmem.ask")
    (load,) = [s for s in spans if s.name == "graphmem.embedder.load"]
    assert by_id[load.parent.span_id].name == "graphmem.ask.embed"
    calls = [s for s in spans if s.name == f"chat {scripted_llm.model}"]
    assert len(calls) == len(scripted_llm.chat_requests) >= 1
    for c in calls:
        assert c.context.trace_id == root.context.trace_id
        assert c.attributes["gen_ai.operation.name"] == "chat"
        assert c.attributes["gen_ai.request.model"] == scripted_llm.model
        assert c.attributes["gen_ai.usage.input_tokens"] > 0 and c.attributes["gen_ai.usage.output_tokens"] > 0
    assert {c.attributes["graphmem.stage"] for c in calls} >= {"answer"}

    exporter.clear()
    hits = Memory(rt).search(sample, "ridge trail", k=3)
    (search,) = [s for s in exporter.get_finished_spans() if s.name == "graphmem.search"]
    assert search.attributes["graphmem.group_id"] == sample
    assert (search.attributes["graphmem.hits"], search.attributes["graphmem.mode_used"]) == (len(hits.hits), hits.mode_used)
    for s in [*spans, search]:  # personal data never goes into a span
        assert not any(QUESTION in str(v) or "ridge" in str(v) or "trail" in str(v) for v in s.attributes.values())
