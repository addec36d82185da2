"""No secret in what graphmem prints (issue 24, point 10), without a database: the URL rule, and
a model endpoint with credentials that fails: its error, its log lines and its repr name the
host, never the user, password or key."""

from __future__ import annotations

import importlib
import inspect
import logging

import pytest

from graphmem.core.errors import LLMError
from graphmem.llm.client import ChatModel
from graphmem.core.redact import MASK, redact_text, redact_url
from tests.processes import free_port

SECRETS = ("s3cret-pass", "k3y-in-query", "alice")


@pytest.mark.parametrize(("url", "shown"), [
    ("https://alice:s3cret-pass@llm.example/v1", "https://***@llm.example/v1"),
    ("https://alice@llm.example/v1", "https://***@llm.example/v1"),
    ("https://llm.example/v1?api_key=k3y-in-query&model=m", "https://llm.example/v1?api_key=***&model=m"),
    ("https://llm.example/v1?Key=k3y-in-query", "https://llm.example/v1?Key=***"),
    ("neo4j+s://neo4j:s3cret-pass@x.databases.neo4j.io", "neo4j+s://***@x.databases.neo4j.io"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),  # nothing to hide: unchanged
    # found by an attacker trial: a key in the path, a token in the fragment
    ("https://llm.example/v1/sk-proj-k3y-in-path0123/chat", "https://llm.example/v1/***/chat"),
    ("https://llm.example/cb#access_token=k3y-in-query&state=x", "https://llm.example/cb#access_token=***&state=x"),
    ("https://h/groups/123e4567-e89b-12d3-a456-426614174000/roster",
     "https://h/groups/123e4567-e89b-12d3-a456-426614174000/roster"),  # a UUID is an id, kept
    ("https://h/groups/conv-26/messages/D1:3", "https://h/groups/conv-26/messages/D1:3"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown


def test_redact_text_cleans_every_url_in_a_message():
    text = ("failed at https://alice:s3cret-pass@a.example/v1 and then "
            "'http://b.example/x?token=k3y-in-query', giving up")
    out = redact_text(text)
    assert not any(s in out for s in SECRETS) and out.count(MASK) == 2
    assert "a.example/v1" in out and "b.example/x" in out and out.endswith("giving up")


def test_a_failing_model_endpoint_with_credentials_never_prints_them(caplog):
    port = free_port()  # nothing listens: connection refused, then one retry
    url = f"http://alice:s3cret-pass@127.0.0.1:{port}/v1?api_key=k3y-in-query"
    model = ChatModel(base_url=url, model="m", max_retries=1, timeout_s=5, backoff_initial_s=0.01)
    assert not any(s in repr(model) for s in SECRETS)
    with caplog.at_level(logging.DEBUG, logger="graphmem"), pytest.raises(LLMError) as e:
        model.complete_text([{"role": "user", "content": "hi"}], stage="answer")
    assert f"127.0.0.1:{port}" in str(e.value)  # where it failed is still said
    assert not any(s in str(e.value) for s in SECRETS), str(e.value)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "retrying" in logged and not any(s in logged for s in SECRETS), logged


def test_credentials_without_a_scheme_and_the_access_log_line_are_redacted():
    """``user:pass@host:port`` in a driver message (no scheme) was printed as is, and a key sent
    by mistake as ``?api_key=`` (refused with 401) was written to uvicorn's access log."""
    from graphmem.core.redact import AccessLogRedactor

    out = redact_text("cannot reach neo4j:s3cret-pass@db.local:7687 (alice:s3cret-pass@10.0.0.1)")
    assert not any(s in out for s in SECRETS) and out.count("***@") == 2, out
    assert redact_text("at 10:30, ratio 3:4, bob@example.com") == "at 10:30, ratio 3:4, bob@example.com"
    # an attacker re-test: ';' as a pair separator, and provider keys outside any URL
    assert redact_url("https://h/s?q=a;api_key=k3y-in-query") == "https://h/s?q=a&api_key=***"
    out = redact_text("key sk-proj-k3yinpath0123456789 and ghp_0123456789abcdefXYZ1 failed; task-runner ok")
    assert "k3yinpath" not in out and "ghp_0123" not in out and out.count("***") == 2 and "task-runner ok" in out
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5555", "GET", "/groups/g/roster?api_key=k3y-in-query", "1.1", 401), None)
    assert AccessLogRedactor().filter(record) is True
    assert "k3y-in-query" not in record.getMessage() and "api_key=***" in record.getMessage()


def test_serve_and_mcp_http_log_configs_redact_the_access_log():
    from graphmem.cli.serve import app_log_config
    from graphmem.core.redact import AccessLogRedactor

    config = app_log_config("info")  # not applied here: it would reroute the test run's own loggers
    assert config["handlers"]["access"]["filters"] == ["graphmem_redact"]
    factory = config["filters"]["graphmem_redact"]["()"]
    module, _, name = factory.rpartition(".")
    assert getattr(importlib.import_module(module), name) is AccessLogRedactor
    assert "log_config=app_log_config(log_level)" in inspect.getsource(importlib.import_module("graphmem.cli.mcp"))
