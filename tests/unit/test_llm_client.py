"""graphmem.llm through the real openai client against the scripted local server."""

from __future__ import annotations

import json
import time

import openai
import pytest

from graphmem.core.config import Settings
from graphmem.core.errors import LLMError
from graphmem.llm import (
    ChatModel,
    LLMOutputError,
    TokenLedger,
    answer_model,
    extract_json,
    judge_model,
    writer_model,
)
from tests.scripted_llm import Reply, ScriptedLLM

MESSAGES = [
    {"role": "system", "content": "You are the Writer. Output JSON only."},
    {"role": "user", "content": "Alice: I moved to Lyon last week."},
]


def test_json_mode_is_requested_and_parsed(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue(Reply.json({"actions": [{"action": "NOOP"}]}))
    model = scripted_llm.chat_model(temperature=0.0)

    value, usage = model.complete_json(MESSAGES, stage="writer", max_tokens=64)

    assert value == {"actions": [{"action": "NOOP"}]}
    [sent] = scripted_llm.chat_requests
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["model"] == scripted_llm.model
    assert sent["messages"] == MESSAGES
    assert sent["max_tokens"] == 64
    assert sent["temperature"] == 0.0
    assert usage.attempts == 1 and not usage.estimated


def test_text_mode_does_not_request_json(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue("Lyon.")
    text, _ = scripted_llm.chat_model().complete_text(MESSAGES, stage="answer")
    assert text == "Lyon."
    assert "response_format" not in scripted_llm.chat_requests[0]


def _rejects_response_format(request: dict) -> Reply:
    if "response_format" in request:
        return Reply.http_error(400, "Unrecognized request argument supplied: response_format")
    return Reply.text('{"ok": true}')


def test_rejected_response_format_falls_back_and_is_remembered(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = _rejects_response_format
    model = scripted_llm.chat_model()

    first, usage = model.complete_json(MESSAGES, stage="writer")
    assert first == {"ok": True}
    assert model.json_mode_supported is False
    assert usage.attempts == 1  # the resend without the parameter is not a retry
    second, _ = model.complete_json(MESSAGES, stage="writer")
    assert second == {"ok": True}

    sent = scripted_llm.chat_requests
    # call 1: with the parameter (rejected), then without; call 2: without from the start
    assert ["response_format" in r for r in sent] == [True, False, False]


def test_json_word_rejection_is_not_remembered(scripted_llm: ScriptedLLM) -> None:
    # OpenAI's own 400 when no message says "json": the parameter itself is supported.
    scripted_llm.enqueue(
        Reply.http_error(
            400, "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
        ),
        Reply.json([1, 2]),
    )
    model = scripted_llm.chat_model()
    value, _ = model.complete_json([{"role": "user", "content": "list two numbers"}], stage="x")
    assert value == [1, 2]
    assert model.json_mode_supported is True


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('```json\n{"owner": "Alice", "layer": "core"}\n```', {"owner": "Alice", "layer": "core"}),
        (
            'Sure! Here is the result:\n{"rows": ["ALL"], "tense": "head"}\nHope this helps.',
            {"rows": ["ALL"], "tense": "head"},
        ),
        ('<think>maybe {"wrong": 1}</think>\n{"enough": false, "ask": "Lyon"}', {"enough": False, "ask": "Lyon"}),
        ("Ranked [see note 1]: [3, 1, 2]", [3, 1, 2]),
        ('Step [1] done. {"ranked": [2, 1], "expand": []}', {"ranked": [2, 1], "expand": []}),
    ],
)
def test_fenced_and_prosy_json_is_parsed(scripted_llm: ScriptedLLM, content: str, expected: object) -> None:
    scripted_llm.enqueue(Reply.text(content))
    value, _ = scripted_llm.chat_model().complete_json(MESSAGES, stage="writer")
    assert value == expected


def test_extract_json_rejects_scalars_and_prose() -> None:
    with pytest.raises(ValueError):
        extract_json("42")
    with pytest.raises(ValueError):
        extract_json("I cannot answer that.")
    with pytest.raises(ValueError):
        extract_json("")


def test_malformed_json_raises_typed_error(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue(Reply.malformed_json(finish_reason="length"))
    model = scripted_llm.chat_model()

    with pytest.raises(LLMOutputError) as info:
        model.complete_json(MESSAGES, stage="writer")

    err = info.value
    assert isinstance(err, LLMError)
    assert err.stage == "writer" and err.finish_reason == "length"
    assert err.text.startswith('{"actions"')
    assert "cut off" in str(err)
    assert len(scripted_llm.chat_requests) == 1  # not retried
    assert len(model.ledger) == 1  # the tokens were spent anyway


def test_server_error_then_success_is_retried(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue(Reply.http_error(500), Reply.json({"ok": 1}))
    value, usage = scripted_llm.chat_model(max_retries=3).complete_json(MESSAGES, stage="writer")
    assert value == {"ok": 1}
    assert usage.attempts == 2
    assert len(scripted_llm.chat_requests) == 2


def test_rate_limit_is_retried(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue(Reply.http_error(429, "slow down", headers={"Retry-After": "0"}), "fine")
    text, usage = scripted_llm.chat_model().complete_text(MESSAGES, stage="answer")
    assert (text, usage.attempts) == ("fine", 2)


def test_persistent_server_error_raises_after_all_attempts(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = lambda request: Reply.http_error(503, "overloaded")
    model = scripted_llm.chat_model(max_retries=3)

    with pytest.raises(LLMError) as info:
        model.complete_text(MESSAGES, stage="judge")

    assert len(scripted_llm.chat_requests) == 4  # 1 attempt + 3 retries
    message = str(info.value)
    for part in ("judge", scripted_llm.base_url, scripted_llm.model, "4 attempt(s)", "503", "overloaded"):
        assert part in message
    assert isinstance(info.value.__cause__, openai.InternalServerError)
    assert len(model.ledger) == 0


def test_client_error_is_not_retried(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = lambda request: Reply.http_error(401, "bad key")
    with pytest.raises(LLMError, match="1 attempt"):
        scripted_llm.chat_model(max_retries=3).complete_text(MESSAGES, stage="answer")
    assert len(scripted_llm.chat_requests) == 1


def test_timeout_is_retried_then_raises(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.handler = lambda request: Reply.slow(10.0, "too late")
    model = scripted_llm.chat_model(timeout_s=0.3, max_retries=1)

    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        model.complete_text(MESSAGES, stage="writer")

    assert time.monotonic() - started < 8.0  # two 0.3 s timeouts, not two 10 s delays
    assert len(scripted_llm.chat_requests) == 2
    assert "timed out" in str(info.value).lower()
    assert isinstance(info.value.__cause__, openai.APITimeoutError)


def test_timeout_then_success(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue(Reply.slow(3.0, "late"), "on time")
    text, usage = scripted_llm.chat_model(timeout_s=0.3).complete_text(MESSAGES, stage="writer")
    assert (text, usage.attempts) == ("on time", 2)


def test_broken_response_body_is_an_llm_error(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue(Reply.broken_body())
    with pytest.raises(LLMError):
        scripted_llm.chat_model().complete_text(MESSAGES, stage="answer")


def test_unscripted_request_fails_fast(scripted_llm: ScriptedLLM) -> None:
    with pytest.raises(LLMError, match="no reply scripted"):
        scripted_llm.chat_model(max_retries=3).complete_text(MESSAGES, stage="answer")
    assert len(scripted_llm.chat_requests) == 1


def test_usage_is_recorded_per_stage(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.route(
        ScriptedLLM.system_contains("You are the Writer"),
        Reply.json({"actions": []}, prompt_tokens=100, completion_tokens=7),
    )
    scripted_llm.route(ScriptedLLM.system_contains("strict judge"), "Reasoning.\nFinal: Correct")
    ledger = TokenLedger()
    model = scripted_llm.chat_model(ledger=ledger)
    judge_messages = [
        {"role": "system", "content": "You are a strict judge."},
        {"role": "user", "content": "Question: where? Gold: Lyon Agent: Lyon"},
    ]

    model.complete_json(MESSAGES, stage="writer")
    _, judge_usage = model.complete_text(judge_messages, stage="judge")
    model.complete_json(MESSAGES, stage="writer")

    # judge: prompt words 5 + 6 = 11; answer "Reasoning.\nFinal: Correct" = 3 words
    assert (judge_usage.prompt_tokens, judge_usage.completion_tokens) == (11, 3)
    totals = ledger.totals()
    assert totals["writer"].calls == 2
    assert totals["writer"].prompt_tokens == 200 and totals["writer"].completion_tokens == 14
    assert totals["judge"].total_tokens == 14
    summary = json.loads(json.dumps(ledger.summary()))
    assert summary["calls"] == 3 and summary["total_tokens"] == 228
    assert summary["by_stage"]["writer"]["total_tokens"] == 214
    assert summary["estimated_calls"] == 0


def test_missing_usage_is_estimated_and_marked(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue(Reply.text("x" * 40, include_usage=False))
    model = scripted_llm.chat_model()
    _, usage = model.complete_text([{"role": "user", "content": "y" * 80}], stage="answer")
    assert usage.estimated is True
    assert (usage.prompt_tokens, usage.completion_tokens) == (20, 10)  # ~4 characters per token
    assert model.ledger.summary()["estimated_calls"] == 1


def test_models_endpoint(scripted_llm: ScriptedLLM) -> None:
    client = openai.OpenAI(base_url=scripted_llm.base_url, api_key="x", max_retries=0)
    assert [m.id for m in client.models.list()] == [scripted_llm.model]


def test_scripted_server_works_outside_pytest_fixture() -> None:
    with ScriptedLLM(model="bench-model") as server:
        server.handler = lambda request: Reply.text("ok")
        model = ChatModel(base_url=server.base_url, model="bench-model")
        assert model.complete_text(MESSAGES, stage="s")[0] == "ok"
        assert server.settings_env()["GRAPHMEM_LLM_BASE_URL"] == server.base_url
    with pytest.raises(RuntimeError):
        _ = server.base_url


# --- factories ------------------------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("GRAPHMEM_"):
            monkeypatch.delenv(name)


def _settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_factories_return_none_when_unconfigured(clean_env: None) -> None:
    settings = _settings()
    assert writer_model(settings) is None
    assert answer_model(settings) is None
    assert judge_model(settings) is None
    # a URL without a model is not a configuration either
    assert answer_model(_settings(llm_base_url="http://127.0.0.1:1/v1")) is None


def test_factories_fall_back_to_llm_settings(clean_env: None) -> None:
    settings = _settings(
        llm_base_url="http://llm.local/v1",
        llm_model="answerer",
        writer_base_url="http://gpu.local:8000/v1",
        judge_model="judge-4o-mini",
        llm_timeout_s=7.5,
        llm_max_retries=5,
        llm_temperature=0.3,
    )
    writer, answer, judge = writer_model(settings), answer_model(settings), judge_model(settings)
    assert writer is not None and answer is not None and judge is not None
    assert (writer.base_url, writer.model) == ("http://gpu.local:8000/v1", "answerer")
    assert (answer.base_url, answer.model) == ("http://llm.local/v1", "answerer")
    assert (judge.base_url, judge.model) == ("http://llm.local/v1", "judge-4o-mini")
    assert (answer.timeout_s, answer.max_retries, answer.temperature) == (7.5, 5, 0.3)


def test_writer_key_falls_back_and_placeholder_is_sent(scripted_llm: ScriptedLLM, clean_env: None) -> None:
    scripted_llm.handler = lambda request: Reply.text("ok")
    shared = TokenLedger()
    with_key = _settings(llm_api_key="sk-shared", writer_base_url=scripted_llm.base_url, writer_model="w")
    writer = writer_model(with_key, ledger=shared)
    assert writer is not None
    writer.complete_text(MESSAGES, stage="writer")

    keyless = answer_model(_settings(llm_base_url=scripted_llm.base_url, llm_model="a"), ledger=shared)
    assert keyless is not None
    keyless.complete_text(MESSAGES, stage="answer")

    auth = [r.headers.get("authorization") for r in scripted_llm.requests]
    assert auth == ["Bearer sk-shared", "Bearer not-needed"]
    assert set(shared.totals()) == {"writer", "answer"}
