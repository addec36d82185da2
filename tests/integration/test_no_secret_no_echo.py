"""No secret, no echo (issue 24, point 10), against the real Neo4j and a real HTTP API.

Attacks: read a credential back from what graphmem prints (a model URL ``user:pass@host`` or
``?api_key=`` in a 503 body, a log line, a telemetry span; the Neo4j URI from the open
``/health``), and make an error body echo a value the caller sent. Every answer names the field
and the rule; none holds the secret or the value.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core import telemetry
from graphmem.core.config import Settings
from graphmem.verbatim.ingest import ingest_conversations
from tests.factories import conversation
from tests.processes import free_port
from tests.factories import runtime_of

pytestmark = pytest.mark.neo4j

SECRETS = ("s3cret-pass", "k3y-in-query")
PROBE = "PROBE-VALUE-7f3a"  # what the caller sent; no body may hold it


@pytest.fixture
def chat(store, embedder, group_id) -> str:
    rows = [{"speaker": "Ana", "text": "we take the ridge trail"}, {"speaker": "Ben", "text": "fine by me"}]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    return group_id


def _dead_model_url() -> tuple[str, int]:
    port = free_port()  # nothing listens there: the model call fails
    return f"http://alice:s3cret-pass@127.0.0.1:{port}/v1?api_key=k3y-in-query", port


def test_model_credentials_stay_out_of_503_bodies_and_logs(store, chat, caplog):
    url, port = _dead_model_url()
    settings = Settings(_env_file=None, llm_base_url=url, llm_model="m", llm_max_retries=1)
    with caplog.at_level(logging.DEBUG), TestClient(create_app(settings)) as c:
        r = c.post(f"/groups/{chat}/ask", json={"question": "which trail?"})
    assert r.status_code == 503 and r.json()["error"] == "LLMError", r.text
    assert f"127.0.0.1:{port}" in r.json()["detail"]  # the host is named
    assert not any(s in r.text for s in SECRETS), r.text
    logged = "\n".join(rec.getMessage() for rec in caplog.records)
    assert "retrying" in logged and "-> 503" in logged and not any(s in logged for s in SECRETS), logged


def test_model_credentials_stay_out_of_spans(store, embedder, chat):
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    from graphmem.core.errors import LLMError
    from graphmem.llm.client import ChatModel
    from graphmem.query import ask

    spans = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(spans))
    url, _ = _dead_model_url()
    tracer = telemetry.configure(True, tracer_provider=provider)
    assert tracer.enabled
    rt = runtime_of(store, embedder, model=ChatModel(base_url=url, model="m", max_retries=0))
    rt.tracer = tracer
    with pytest.raises(LLMError):
        ask(rt, chat, "which trail?")
    finished = spans.get_finished_spans()
    assert any(ev.name == "exception" for s in finished for ev in s.events)  # the error is recorded
    for span in finished:
        text = str(dict(span.attributes or {})) + "".join(str(ev.attributes) for ev in span.events)
        text += str(span.status.description or "")
        assert not any(s in text for s in SECRETS), span.name


def test_open_health_does_not_show_the_neo4j_uri(store):
    port = free_port()
    for uri in (f"bolt://127.0.0.1:{port}", f"bolt://neo4j:s3cret-pass@127.0.0.1:{port}"):
        with TestClient(create_app(Settings(_env_file=None, neo4j_uri=uri))) as c:
            r = c.get("/health")
        assert r.status_code == 503 and r.json()["error"] == "StoreUnavailableError"
        assert "bolt" not in r.text and str(port) not in r.text and "127.0.0.1" not in r.text, r.text
        assert "s3cret-pass" not in r.text
    with TestClient(create_app(Settings(_env_file=None))) as c:
        r = c.get("/health")
    assert r.status_code == 200 and "bolt" not in r.text and "7687" not in r.text


def test_error_bodies_name_field_and_rule_never_the_value(store, chat):
    with TestClient(create_app(Settings(_env_file=None))) as c:
        answers = {
            "as_of (ask)": c.post(f"/groups/{chat}/ask", json={"question": "which trail?", "as_of": PROBE}),
            "as_of (memory)": c.get(f"/groups/{chat}/persons/Ana/memory", params={"as_of": PROBE}),
            "layer": c.get(f"/groups/{chat}/graph", params={"layer": PROBE}),
            "from": c.get(f"/groups/{chat}/graph", params={"from": PROBE}),
            "session": c.get(f"/groups/{chat}/graph", params={"session": PROBE}),
            "ts": c.post(f"/groups/{chat}/messages", json={"messages": [
                {"id": "x1", "speaker": "Ana", "text": "hi", "ts": PROBE}]}),
            "mode": c.get(f"/groups/{chat}/search", params={"q": "trail", "mode": PROBE}),
            "k": c.get(f"/groups/{chat}/search", params={"q": "trail", "k": 10**9}),
        }
    for what, r in answers.items():
        assert r.status_code in (404, 422), (what, r.status_code, r.text)
        assert PROBE not in r.text and "1000000000" not in r.text, (what, r.text)
        if r.status_code == 422:
            assert r.json()["field"], what


def test_the_command_line_still_shows_the_user_their_own_value(store, chat):
    res = subprocess.run([str(Path(sys.executable).parent / "graphmem"), "ask", "--group", chat, "which trail?",
                          "--as-of", PROBE], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": "1000"})
    assert res.returncode == 1 and "field 'as_of'" in res.stderr and PROBE in res.stderr, res.stderr
