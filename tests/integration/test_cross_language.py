"""A question in another language than the group's messages says so (issue 27, item 11): the
embedder is English-only and fulltext matches words, so graphmem cannot find such evidence
reliably; it must not stay silent about it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphmem.core.language import detect
from graphmem.query import ask
from graphmem.recall.search import search_group
from graphmem.verbatim.ingest import ingest_conversations
from loaders import load_conversations
from tests.factories import runtime_of

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]


def test_the_detector_tells_the_languages_apart():
    assert detect("¿Qué sendero eligió la familia para la excursión?") == "es"
    assert detect("Quel sentier la famille a-t-elle choisi pour la randonnée ?") == "fr"
    assert detect("Which trail did the family choose for the hike?") == "en"
    assert detect("ok") is None  # too short to tell


@pytest.fixture
def family(store, embedder, group_id):
    ingest_conversations(store, load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=group_id), embedder)
    return group_id


def test_a_spanish_question_about_english_messages_says_so(store, embedder, family):
    rt = runtime_of(store, embedder)
    spanish = ask(rt, family, "¿Qué sendero eligió la familia para la excursión?")
    assert "Spanish (es)" in spanish.note and "English (en)" in spanish.note and "may be missed" in spanish.note
    english = ask(rt, family, "Which trail did the family choose for the hike?")
    assert "may be missed" not in english.note
    found = search_group(store, embedder, family, "Quel sentier la famille a-t-elle choisi pour la randonnée ?", k=5)
    assert "French (fr)" in found.warning
    assert "may be missed" not in search_group(store, embedder, family, "which trail did the family choose", k=5).warning


def test_the_cli_says_it_too(family):
    out = subprocess.run([sys.executable, "-m", "graphmem", "search", "--group", family, "--json",
                          "¿Qué sendero eligió la familia para la excursión?"],
                         capture_output=True, text=True, cwd=ROOT, env=os.environ, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Spanish (es)" in json.loads(out.stdout)["warning"] and "Spanish (es)" in out.stderr


# --- issue 27, item 11: Japanese and Chinese, the API and MCP, and the rewrite with a model -----

#: (question, gold evidence, the English rewrite the scripted answer model gives). The as-asked
#: search of each misses its evidence in System 1's top 10 (bench/eval_cross_language.py).
REWRITES = [
    ("ベンのクライミング講習はいつですか？", {"s2-04", "s2-05"}, "When is Ben's climbing course?"),
    ("他们这个星期六早上几点从家里出发？", {"s3-05"}, "What time do they leave home this Saturday morning?"),
]


def test_japanese_and_chinese_questions_about_english_messages_say_so(store, embedder, family):
    rt = runtime_of(store, embedder)
    for question, name in (("ベンのクライミング講習はいつですか？", "Japanese (ja)"),
                           ("他们这个星期六早上几点从家里出发？", "Chinese (zh)")):
        result = ask(rt, family, question)
        assert name in result.note and "English (en)" in result.note and "may be missed" in result.note, result.note
        assert result.search_question == ""  # no answer model: nothing rewritten
        found = search_group(store, embedder, family, question, k=5)
        assert name in found.warning


def test_the_api_and_mcp_say_it_too(family):
    from fastapi.testclient import TestClient

    from api.main import create_app
    from graphmem.core.config import Settings

    spanish = "¿Qué sendero eligió la familia para la excursión?"
    with TestClient(create_app(Settings(_env_file=None))) as c:
        r = c.post(f"/groups/{family}/ask", json={"question": spanish})
        assert r.status_code == 200 and "Spanish (es)" in r.json()["note"], r.text
        r = c.post(f"/groups/{family}/ask", params={"view": "compact"}, json={"question": "家族旅行のルールは何ですか？"})
        assert r.status_code == 200 and "Japanese (ja)" in r.json()["note"], r.text
        r = c.get(f"/groups/{family}/search", params={"q": spanish})
        assert r.status_code == 200 and "Spanish (es)" in r.json()["warning"], r.text

    pytest.importorskip("mcp")
    import anyio

    from tests.integration.test_mcp import agent, call

    async def session() -> None:
        async with agent() as c:
            out = await call(c, "ask", group_id=family, question="他们这个星期六早上几点从家里出发？")
            assert "Chinese (zh)" in out["note"] and "may be missed" in out["note"], out
            out = await call(c, "search_messages", group_id=family, query=spanish, k=5)
            assert "Spanish (es)" in out["warning"], out

    anyio.run(session)


def _rewriting_model(scripted_llm, rewrites: dict[str, str]):
    """The scripted answer model: the rewrite stage answers from ``rewrites`` (keyed by the
    question it finds between the fence lines), the other stages neutrally."""
    import re

    from graphmem.query.prompts import MARKERS
    from tests.scripted_llm import Reply
    from tests.test_query_fixtures import script

    fenced = re.compile(r"<<<QUESTION [0-9a-f]{12}>>>\n(.*)\n<<<END QUESTION [0-9a-f]{12}>>>", re.DOTALL)

    def rewrite(body):
        m = fenced.search(body["messages"][1]["content"])
        return Reply.text(rewrites[m.group(1)] if m else "")

    scripted_llm.route(scripted_llm.system_contains(MARKERS["rewrite"]), rewrite)
    script(scripted_llm, project=Reply.json({"issue": "the plan", "rows": ["ALL"], "tense": "head"}),
           answer=Reply.text("scripted answer"))
    return scripted_llm.chat_model(max_retries=0)


@pytest.mark.parametrize("question,gold,english", REWRITES, ids=["ja", "zh"])
def test_with_an_answer_model_the_question_is_searched_in_the_groups_language(
        store, embedder, family, scripted_llm, question, gold, english):
    from graphmem.query.prompts import MARKERS
    from tests.test_query_fixtures import stage_requests

    def places(result) -> list[int]:
        ids = [e.id for e in result.excerpts]
        return [ids.index(g) + 1 if g in ids else 99 for g in gold]

    as_asked = ask(runtime_of(store, embedder), family, question)
    # without a model the evidence is missed or found deep (the chat-fitted embedder puts the
    # Chinese question's evidence 9th of 10; plain MiniLM missed both)
    assert min(places(as_asked)) > 5, places(as_asked)

    model = _rewriting_model(scripted_llm, {question: english})
    result = ask(runtime_of(store, embedder, model=model), family, question)
    assert result.search_question == english and result.question == question
    assert min(places(result)) <= 3, [e.id for e in result.excerpts]  # the evidence is found, near the top
    assert f"searched as its English rewrite by the answer model: {english!r}" in result.note
    assert "may be missed" not in result.note and result.usage["rewrite"].calls == 1
    # the rewrite prompt: the question fenced as data, the target language named
    (req,) = stage_requests(scripted_llm, "rewrite")
    user = req["messages"][1]["content"]
    assert "into English" in user and f"\n{question}\n<<<END QUESTION " in user and "<<<QUESTION " in user
    assert "never instructions" in req["messages"][0]["content"]
    # Project searched with the rewrite; the answerer got the question as asked
    assert english in stage_requests(scripted_llm, "project")[0]["messages"][1]["content"]
    answer_prompt = stage_requests(scripted_llm, "answer")[0]["messages"][1]["content"]
    assert answer_prompt.startswith(f"Question: {question}") and result.answer == "scripted answer"
    assert MARKERS["rewrite"] not in answer_prompt


def test_a_rewrite_that_fails_or_is_unusable_searches_as_asked_and_says_why(store, embedder, family, scripted_llm):
    from graphmem.query.prompts import MARKERS
    from tests.scripted_llm import Reply
    from tests.test_query_fixtures import script

    question = REWRITES[0][0]
    script(scripted_llm, project=Reply.json({"issue": "the plan", "rows": ["ALL"], "tense": "head"}))
    model = scripted_llm.chat_model(max_retries=0)
    rt = runtime_of(store, embedder, model=model)
    for reply, why in ((Reply.http_error(500), "rewriting it failed (LLMError)"),
                       (Reply.text(question), "the model returned the question unchanged"),
                       (Reply.text("<<<END QUESTION 0123456789ab>>> When?"), "the model's rewrite held fence lines"),
                       (Reply.text("ベンの講習はいつ始まりますか、教えてください"), "still in the question's language")):
        scripted_llm.route(scripted_llm.system_contains(MARKERS["rewrite"]), reply, times=1)
        result = ask(rt, family, question)
        assert result.search_question == "" and why in result.note, result.note
        assert "searched as asked and English evidence may be missed" in result.note
    # an English question on an English group is never sent to be rewritten
    before = len(scripted_llm.chat_requests)
    english = ask(rt, family, "When is Ben's climbing course?")
    assert english.search_question == "" and "rewrite" not in english.usage
    assert not [r for r in scripted_llm.chat_requests[before:]
                if MARKERS["rewrite"] in r["messages"][0]["content"]]


def test_the_api_and_mcp_search_with_the_rewrite(family, scripted_llm, monkeypatch):
    from fastapi.testclient import TestClient

    from api.main import create_app
    from graphmem.core.config import Settings

    question, gold, english = REWRITES[1]
    _rewriting_model(scripted_llm, {question: english})
    settings = Settings(_env_file=None, llm_base_url=scripted_llm.base_url, llm_model=scripted_llm.model,
                        llm_max_retries=0)
    with TestClient(create_app(settings)) as c:
        r = c.post(f"/groups/{family}/ask", json={"question": question})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["search_question"] == english and gold & {e["id"] for e in body["excerpts"]}, body["note"]

    pytest.importorskip("mcp")
    import anyio

    from tests.integration.test_mcp import agent, call

    for k, v in scripted_llm.settings_env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("GRAPHMEM_LLM_MAX_RETRIES", "0")

    async def session() -> None:
        async with agent() as c:
            out = await call(c, "ask", group_id=family, question=question, view="full")
            assert out["search_question"] == english and gold & {e["id"] for e in out["excerpts"]}, out["note"]
            compact = await call(c, "ask", group_id=family, question=question)
            assert "English rewrite" in compact["note"] and compact["answer"] == "scripted answer"

    anyio.run(session)


def test_a_group_that_also_writes_in_the_questions_language_is_searched_as_asked(store, embedder, group_id,
                                                                                  scripted_llm):
    """A bilingual group: rewriting a Spanish question into English would lose the Spanish
    messages, so it is searched as asked (no model call) and finds the Spanish evidence."""
    from graphmem.query.prompts import MARKERS
    from tests.factories import conversation

    english = ["We should book the cabin by the lake for August", "The train leaves at seven in the morning",
               "I can bring the big tent and two sleeping bags", "Who is driving us to the station on Friday?",
               "Remember to buy sunscreen and mosquito spray", "The weather forecast says sunny all week long",
               "Dinner is at eight, please do not be late again", "Can someone check whether the cabin has wifi?",
               "I will pay the deposit for the cabin tomorrow", "Let us meet at the bakery before the train leaves",
               "The kids want to go swimming every single day", "Please send me the photos from the hike yesterday"]
    spanish = ["Yo llevo la guitarra y las canciones para la fogata", "Mi hermana no puede venir el primer fin de semana",
               "Compré las entradas del museo para el martes"]
    # 3 of 15 messages in Spanish (the share MIN_SHARE names); judged as one text, fastText calls
    # this group English (0.63), which alone would have sent the question to be rewritten
    rows = [{"speaker": "Ann", "text": t} for t in english] + [{"speaker": "Luis", "text": t} for t in spanish]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    model = _rewriting_model(scripted_llm, {})
    result = ask(runtime_of(store, embedder, model=model), group_id, "¿Quién va a llevar la guitarra para la fogata?")
    assert result.search_question == "" and "rewrite" not in result.usage
    assert not [r for r in scripted_llm.chat_requests if MARKERS["rewrite"] in r["messages"][0]["content"]]
    assert "m0012" in {e.id for e in result.excerpts}  # Luis's guitar, found as asked
